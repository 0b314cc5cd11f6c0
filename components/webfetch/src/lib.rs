//! `webfetch`: the open-world example. One tool, `fetch_url`, that makes a GET
//! request with `airlock_sdk::http` and returns what came back.
//!
//! It needs the network, so airlock runs it only with a grant: the operator
//! lists the hosts it may reach (and may have airlock add a credential to
//! the requests, which the tool never sees):
//!
//! ```toml
//! [components.webfetch.network."https://api.example.com"]
//! headers = { Authorization = { from = "EXAMPLE_TOKEN", format = "Bearer {}" } }
//! ```

use airlock_sdk::http;
use airlock_sdk::{ToolSchema, tool};
use serde::Serialize;

/// What came back from the server.
#[derive(Debug, Serialize, ToolSchema)]
pub struct Fetched {
    /// The HTTP status code.
    pub status: u16,
    /// The `content-type` header, if the server sent one.
    pub content_type: Option<String>,
    /// The body as text (invalid UTF-8 replaced), at most `max_bytes` of it.
    pub body: String,
    /// Whether the body was longer than `max_bytes` and was cut.
    pub truncated: bool,
}

/// Fetches a URL with GET and returns its status, content type and body
/// text. Needs the operator to list the host in the policy's `network`;
/// any other host is refused by airlock (`HTTP-request-denied`).
#[tool(read_only, open_world, title = "Fetch a URL")]
pub fn fetch_url(
    #[arg(
        description = "The http or https URL to fetch",
        example = "https://example.com/"
    )]
    url: String,
    #[arg(description = "Most bytes of the body to return", default = 65536)] max_bytes: u32,
) -> Result<Fetched, http::HttpError> {
    let response = http::get(&url)?;
    let limit = usize::try_from(max_bytes).unwrap_or(usize::MAX);
    let truncated = response.body.len() > limit;
    let kept = &response.body[..response.body.len().min(limit)];
    Ok(Fetched {
        status: response.status,
        content_type: response.header("content-type").map(str::to_string),
        body: String::from_utf8_lossy(kept).into_owned(),
        truncated,
    })
}

airlock_sdk::export_tools!(fetch_url);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn natively_there_is_no_network_and_the_error_says_so() {
        let err = TOOLS
            .call("fetch_url", r#"{"url": "https://example.com/"}"#)
            .expect_err("no network in a unit test");
        assert!(err.to_string().contains("no network"), "{err}");
    }
}
