//! What one request carries and answers, apart from where it runs: the
//! client's capabilities, the per-request `_meta` of 2026-07-28 (read and
//! checked once), the errors every handler shares, cursors and pages, and
//! the [`Answer`] a handler gives.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

use serde::Deserialize;

use super::model::lifecycle::{ClientCapabilities, WithStatelessMeta};
pub use super::revision::stateless::{
    META_CAPABILITIES, MISSING_CAPABILITY, TASKS_EXTENSION, missing_capability,
};
use super::revision::{META_VERSION, Revision};
use crate::protocol::jsonrpc::ErrorObject;
use crate::tool::Level;

/// The `_meta` key of the log level a request asks for (2026-07-28).
pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// The requested protocol version is not served.
pub const UNSUPPORTED_VERSION: i64 = -32022;
/// HTTP headers disagree with the body, or are missing (2026-07-28).
pub const HEADER_MISMATCH: i64 = -32020;

/// What the client can do, as the request (2026-07-28) or the session's
/// `initialize` declared it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Client {
    /// Form elicitation: the server may ask it to confirm.
    pub elicitation: bool,
    /// URL-mode elicitation.
    pub elicitation_url: bool,
    /// Sampling: a tool may ask the client's model.
    pub sampling: bool,
    /// Roots: a tool may ask for the client's roots.
    pub roots: bool,
    /// The 2026-07-28 tasks extension.
    pub tasks: bool,
}

impl Client {
    /// Reads declared capabilities (of `initialize`, or of `_meta`). An
    /// empty `elicitation` object means form mode (2025-06-18); later
    /// revisions may list the modes.
    pub fn from_capabilities(capabilities: &ClientCapabilities) -> Client {
        let modes = capabilities.elicitation.as_ref();
        Client {
            elicitation: modes.is_some_and(|m| m.is_empty() || m.contains_key("form")),
            elicitation_url: modes.is_some_and(|m| m.contains_key("url")),
            sampling: capabilities.sampling.is_some(),
            roots: capabilities.roots.is_some(),
            tasks: capabilities
                .extensions
                .as_ref()
                .is_some_and(|e| e.contains_key(TASKS_EXTENSION)),
        }
    }
}

/// The per-request fields of a 2026-07-28 request.
#[derive(Debug, Clone, Copy)]
pub struct Meta {
    pub client: Client,
    /// Guest logs at or above this level are sent; none when absent.
    pub log_level: Option<Level>,
}

/// Reads and checks the per-request `_meta` fields: -32602 when a required
/// one is missing or malformed, -32022 for a version not served.
pub fn read_meta(params: Option<&Value>) -> Result<Meta, ErrorObject> {
    // Read from the borrowed params: the rest (large arguments) is skipped.
    let meta = params
        .filter(|p| p.is_object())
        .map(WithStatelessMeta::deserialize)
        .and_then(Result::ok)
        .unwrap_or_default()
        .meta;
    let stateless = Revision::V2026_07_28.as_str();
    let missing = |what: &str| {
        ErrorObject::invalid_param(
            &format!("_meta.{what}"),
            format!(
                "params._meta[\"{what}\"] is required on every request of revision {stateless}"
            ),
        )
    };
    let version = meta.protocol_version.ok_or_else(|| missing(META_VERSION))?;
    if Revision::parse(&version).is_none_or(|r| !r.is_stateless()) {
        return Err(unsupported_version(&version));
    }
    let capabilities = meta
        .client_capabilities
        .ok_or_else(|| missing(META_CAPABILITIES))?;
    let log_level = match meta.log_level {
        None | Some(Value::Null) => None,
        Some(level) => Some(
            level
                .as_str()
                .and_then(Level::parse)
                .ok_or_else(|| bad_level(&format!("_meta.{META_LOG_LEVEL}")))?,
        ),
    };
    let capabilities =
        ClientCapabilities::deserialize(Value::Object(capabilities)).unwrap_or_default();
    Ok(Meta {
        client: Client::from_capabilities(&capabilities),
        log_level,
    })
}

/// `UnsupportedProtocolVersionError`.
pub fn unsupported_version(requested: &str) -> ErrorObject {
    ErrorObject::new(UNSUPPORTED_VERSION, "Unsupported protocol version").with_data(json!({
        "supported": super::revision::all_as_json(),
        "requested": crate::protocol::jsonrpc::shorten(requested, 100),
    }))
}

/// The error for a log level that is not one of [`Level::ALL`].
pub fn bad_level(parameter: &str) -> ErrorObject {
    let levels = Level::ALL.map(Level::as_str).join(", ");
    ErrorObject::invalid_param(parameter, format!("{parameter} must be one of {levels}"))
}

/// Where a page starts: after the item named in the `cursor` (made by
/// [`cursor_after`] with the same `kind`); `None` for the first page.
pub fn read_cursor(cursor: Option<&str>, kind: &str) -> Result<Option<String>, ErrorObject> {
    let Some(cursor) = cursor else {
        return Ok(None);
    };
    let bytes = URL_SAFE_NO_PAD
        .decode(cursor)
        .map_err(|_| invalid_cursor())?;
    let text = String::from_utf8(bytes).map_err(|_| invalid_cursor())?;
    let last = text
        .strip_prefix("after:")
        .and_then(|t| t.strip_prefix(kind));
    last.map(|last| Some(last.to_owned()))
        .ok_or_else(invalid_cursor)
}

/// A cursor that names no place in the list.
pub fn invalid_cursor() -> ErrorObject {
    ErrorObject::invalid_param("cursor", "Invalid cursor")
}

/// The `nextCursor` of a page of `kind` items whose last is `last`.
pub fn cursor_after(kind: &str, last: &str) -> String {
    URL_SAFE_NO_PAD.encode(format!("after:{kind}{last}"))
}

/// The first `size` items and whether more follow.
pub fn page<T>(items: impl Iterator<Item = T>, size: usize) -> (Vec<T>, bool) {
    let mut page: Vec<T> = items.take(size + 1).collect();
    let more = page.len() > size;
    page.truncate(size);
    (page, more)
}

/// What a request handler produced.
pub enum Answer {
    Result(Value),
    Error(ErrorObject),
    /// Send nothing (the request was cancelled).
    Nothing,
}

impl From<Result<Value, ErrorObject>> for Answer {
    fn from(result: Result<Value, ErrorObject>) -> Self {
        match result {
            Ok(value) => Answer::Result(value),
            Err(error) => Answer::Error(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_is_required_and_checked() {
        let err = read_meta(None).unwrap_err();
        assert_eq!(err.code, crate::protocol::jsonrpc::INVALID_PARAMS);
        let err = read_meta(Some(&json!({"_meta": {META_VERSION: "1900-01-01"}}))).unwrap_err();
        assert_eq!(err.code, UNSUPPORTED_VERSION);
        let data = err.to_json()["data"].clone();
        assert_eq!(data["requested"], "1900-01-01");
        assert_eq!(data["supported"][0], "2026-07-28");
        assert!(
            data["supported"]
                .as_array()
                .unwrap()
                .contains(&json!("2025-11-25"))
        );
        // A session revision in `_meta` is not a stateless request.
        let err = read_meta(Some(&json!({"_meta": {META_VERSION: "2025-11-25"}}))).unwrap_err();
        assert_eq!(err.code, UNSUPPORTED_VERSION);
        let err = read_meta(Some(&json!({"_meta": {META_VERSION: "2026-07-28"}}))).unwrap_err();
        assert_eq!(
            err.code,
            crate::protocol::jsonrpc::INVALID_PARAMS,
            "capabilities are required"
        );
        let err = read_meta(Some(&json!({"_meta": {
            META_VERSION: "2026-07-28", META_CAPABILITIES: {}, META_LOG_LEVEL: "loud"
        }})))
        .unwrap_err();
        assert_eq!(err.code, crate::protocol::jsonrpc::INVALID_PARAMS);
        let meta = read_meta(Some(&json!({"_meta": {
            META_VERSION: "2026-07-28",
            META_CAPABILITIES: {"elicitation": {}, "extensions": {TASKS_EXTENSION: {}}},
            META_LOG_LEVEL: "info"
        }})))
        .unwrap();
        assert_eq!(
            meta.client,
            Client {
                elicitation: true,
                tasks: true,
                ..Client::default()
            }
        );
        assert_eq!(meta.log_level, Some(Level::Info));
    }

    #[test]
    fn client_capabilities() {
        let read = |caps: Value| {
            let caps = ClientCapabilities::deserialize(caps).unwrap_or_default();
            Client::from_capabilities(&caps)
        };
        for (caps, elicitation) in [
            (json!({"elicitation": {}}), true),
            (json!({"elicitation": {"form": {}}}), true),
            (json!({"elicitation": {"url": {}}}), false),
            (json!({"elicitation": true}), false),
            (json!({}), false),
        ] {
            assert_eq!(read(caps.clone()).elicitation, elicitation, "{caps}");
        }
        assert_eq!(read(json!("none")), Client::default());
        let all = read(json!({
            "elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {"listChanged": true}
        }));
        assert!(all.elicitation && all.elicitation_url && all.sampling && all.roots);
        let url_only = read(json!({"elicitation": {"url": {}}}));
        assert!(url_only.elicitation_url && !url_only.elicitation);
        let not_objects = read(json!({"sampling": true, "roots": 1}));
        assert!(!not_objects.sampling && !not_objects.roots);
    }

    #[test]
    fn cursors_round_trip_within_their_kind() {
        let tools = cursor_after("", "b_tool");
        assert_eq!(
            read_cursor(Some(&tools), "").unwrap().as_deref(),
            Some("b_tool")
        );
        let tasks = cursor_after("task:", "ab12");
        assert_eq!(
            read_cursor(Some(&tasks), "task:").unwrap().as_deref(),
            Some("ab12")
        );
        assert!(
            read_cursor(Some(&tools), "task:").is_err(),
            "another kind's cursor"
        );
        for bad in ["bm9wZQ", "%%%"] {
            let err = read_cursor(Some(bad), "").unwrap_err();
            assert_eq!(err.data, Some(json!({"parameter": "cursor"})), "{bad}");
        }
        assert_eq!(read_cursor(None, "").unwrap(), None);
        assert_eq!(page(1..=5, 2), (vec![1, 2], true));
        assert_eq!(page(1..=2, 2), (vec![1, 2], false));
    }
}
