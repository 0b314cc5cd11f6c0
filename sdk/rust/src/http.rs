//! HTTP requests from a tool: [`get`], or a [`Request`] with a method,
//! headers and a body, sent with `wasi:http/outgoing-handler` and read
//! whole into a [`Response`].
//!
//! Blocking, like the tool functions themselves. Inside airlock only an
//! open-world tool (`#[tool(open_world)]`) reaches the network, and only the
//! hosts the operator lists; everything else fails with
//! [`HttpError::Failed`] and the `wasi:http` error code that says why
//! (`HTTP-request-denied`, `destination-IP-prohibited`,
//! `TLS-certificate-error` …). A credential the operator has airlock inject
//! (an `Authorization` header, say) is added by the runtime on the way out:
//! the tool never sets it and never sees it.
//!
//! On native targets (unit tests) there is no network: every request fails
//! with [`HttpError::Unavailable`].
//!
//! ```no_run
//! use airlock_sdk::http;
//!
//! /// Returns the title of a GitHub repository's latest release.
//! #[airlock_sdk::tool(read_only, open_world)]
//! fn latest_release(repo: String) -> Result<String, http::HttpError> {
//!     let release: serde_json::Value =
//!         http::get(&format!("https://api.github.com/repos/{repo}/releases/latest"))?
//!             .error_for_status()?
//!             .json()?;
//!     Ok(release["name"].as_str().unwrap_or_default().to_string())
//! }
//! # fn main() {}
//! ```

use std::fmt;

/// Why a request produced no [`Response`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HttpError {
    /// The URL or a header cannot be sent (the text says why).
    Invalid(String),
    /// The request failed before a response: the `wasi:http` error code
    /// (e.g. `HTTP-request-denied`) and what it usually means.
    Failed { code: String, meaning: &'static str },
    /// Sending the body or reading the response failed.
    Io(String),
    /// [`Response::error_for_status`]: the server answered with this status.
    Status(u16),
    /// [`Response::json`]: the body is not the JSON expected.
    Json(String),
    /// Not running in a component (native unit tests): there is no network.
    Unavailable,
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HttpError::Invalid(why) => write!(f, "cannot send the request: {why}"),
            HttpError::Failed { code, meaning: "" } => write!(f, "request failed: {code}"),
            HttpError::Failed { code, meaning } => write!(f, "request failed: {code} ({meaning})"),
            HttpError::Io(why) => write!(f, "request failed while transferring data: {why}"),
            HttpError::Status(status) => write!(f, "the server answered with status {status}"),
            HttpError::Json(why) => write!(f, "the response is not the JSON expected: {why}"),
            HttpError::Unavailable => {
                f.write_str("no network outside a component (HTTP works only inside airlock)")
            }
        }
    }
}

impl std::error::Error for HttpError {}

/// An HTTP request; [`Request::send`] sends it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    method: String,
    url: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

/// A response, its body read whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    /// Names lower case, in the order the server sent them.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// `GET url`.
pub fn get(url: &str) -> Result<Response, HttpError> {
    Request::get(url).send()
}

impl Request {
    /// A request with any method (`"PATCH"`, …) to `url`.
    pub fn new(method: &str, url: &str) -> Request {
        Request {
            method: method.to_ascii_uppercase(),
            url: url.to_string(),
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    pub fn get(url: &str) -> Request {
        Request::new("GET", url)
    }

    pub fn post(url: &str) -> Request {
        Request::new("POST", url)
    }

    pub fn put(url: &str) -> Request {
        Request::new("PUT", url)
    }

    pub fn delete(url: &str) -> Request {
        Request::new("DELETE", url)
    }

    /// Adds a header (another of the same name adds a value).
    pub fn header(mut self, name: &str, value: &str) -> Request {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    /// The body, sent as it is.
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Request {
        self.body = body.into();
        self
    }

    /// `value` as a JSON body, with `content-type: application/json`.
    pub fn json<T: serde::Serialize + ?Sized>(self, value: &T) -> Request {
        let body = serde_json::to_vec(value).unwrap_or_default();
        self.header("content-type", "application/json").body(body)
    }

    /// Sends the request and reads the whole response.
    pub fn send(self) -> Result<Response, HttpError> {
        let url = Url::parse(&self.url)?;
        imp::send(&self, &url)
    }
}

impl Response {
    /// The first value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body parsed as JSON.
    pub fn json<T: serde::de::DeserializeOwned>(&self) -> Result<T, HttpError> {
        serde_json::from_slice(&self.body).map_err(|e| HttpError::Json(e.to_string()))
    }

    /// The response if its status is 2xx, else [`HttpError::Status`].
    pub fn error_for_status(self) -> Result<Response, HttpError> {
        if (200..300).contains(&self.status) {
            Ok(self)
        } else {
            Err(HttpError::Status(self.status))
        }
    }
}

/// The parts of a URL that `wasi:http` takes separately.
#[derive(Debug, PartialEq, Eq)]
struct Url<'a> {
    https: bool,
    authority: &'a str,
    path_and_query: &'a str,
}

impl<'a> Url<'a> {
    fn parse(url: &'a str) -> Result<Url<'a>, HttpError> {
        let invalid = |why: &str| HttpError::Invalid(format!("{url:?}: {why}"));
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| invalid("no scheme (write https://…)"))?;
        let https = match scheme.to_ascii_lowercase().as_str() {
            "https" => true,
            "http" => false,
            _ => return Err(invalid("the scheme must be http or https")),
        };
        // The fragment is the client's own; it never goes on the wire.
        let rest = rest.split('#').next().unwrap_or(rest);
        let split = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, path_and_query) = rest.split_at(split);
        if authority.is_empty() {
            return Err(invalid("no host"));
        }
        if authority.contains('@') {
            return Err(invalid("user information in a URL is not sent"));
        }
        Ok(Url {
            https,
            authority,
            path_and_query,
        })
    }

    /// The path and query as `wasi:http` takes them (`/` when empty).
    #[cfg_attr(
        not(target_family = "wasm"),
        allow(dead_code, reason = "only a component sends requests")
    )]
    fn path(&self) -> String {
        match self.path_and_query {
            "" => "/".to_string(),
            p if p.starts_with('?') => format!("/{p}"),
            p => p.to_string(),
        }
    }
}

/// The meaning of a `wasi:http` error code, for a tool error a person reads.
#[cfg_attr(
    not(target_family = "wasm"),
    allow(dead_code, reason = "only a component gets error codes")
)]
fn meaning(code: &str) -> &'static str {
    match code {
        "HTTP-request-denied" => {
            "the operator's policy does not let this tool reach this URL: only open-world \
             tools, only listed hosts, scheme and port"
        }
        "destination-IP-prohibited" => {
            "the host resolves to an address that is not public and that the policy does not list"
        }
        "TLS-certificate-error" => "the server's certificate was not accepted",
        "TLS-protocol-error" | "TLS-alert-received" => "the TLS handshake failed",
        "DNS-error" => "the host name did not resolve",
        "connection-refused" => "nothing listens at that address and port",
        "connection-timeout" | "connection-read-timeout" | "HTTP-response-timeout" => {
            "the server did not answer in time"
        }
        "connection-limit-reached" => "the call holds too many connections and files at once",
        _ => "",
    }
}

#[cfg(target_family = "wasm")]
mod imp {
    use wasip2::http::outgoing_handler;
    use wasip2::http::types::{ErrorCode, Fields, Method, OutgoingBody, OutgoingRequest, Scheme};
    use wasip2::io::streams::StreamError;

    use super::{HttpError, Request, Response, Url, meaning};

    /// Most bytes `blocking-write-and-flush` takes at once.
    const CHUNK: usize = 4096;

    pub fn send(request: &Request, url: &Url) -> Result<Response, HttpError> {
        let headers = Fields::new();
        for (name, value) in &request.headers {
            headers
                .append(name, value.as_bytes())
                .map_err(|e| HttpError::Invalid(format!("header {name:?}: {e:?}")))?;
        }
        let outgoing = OutgoingRequest::new(headers);
        let method = match request.method.as_str() {
            "GET" => Method::Get,
            "HEAD" => Method::Head,
            "POST" => Method::Post,
            "PUT" => Method::Put,
            "DELETE" => Method::Delete,
            "CONNECT" => Method::Connect,
            "OPTIONS" => Method::Options,
            "TRACE" => Method::Trace,
            "PATCH" => Method::Patch,
            other => Method::Other(other.to_string()),
        };
        let invalid = |what: &str| HttpError::Invalid(format!("invalid {what}"));
        outgoing
            .set_method(&method)
            .map_err(|()| invalid("method"))?;
        let scheme = if url.https {
            Scheme::Https
        } else {
            Scheme::Http
        };
        outgoing
            .set_scheme(Some(&scheme))
            .map_err(|()| invalid("scheme"))?;
        outgoing
            .set_authority(Some(url.authority))
            .map_err(|()| invalid("host"))?;
        outgoing
            .set_path_with_query(Some(&url.path()))
            .map_err(|()| invalid("path"))?;
        let body = outgoing.body().map_err(|()| invalid("body"))?;
        // Sent first, so the body below streams to a request under way.
        let pending = outgoing_handler::handle(outgoing, None).map_err(failed)?;
        {
            let stream = body.write().map_err(|()| invalid("body stream"))?;
            for chunk in request.body.chunks(CHUNK) {
                stream
                    .blocking_write_and_flush(chunk)
                    .map_err(|e| HttpError::Io(format!("{e:?}")))?;
            }
        }
        OutgoingBody::finish(body, None).map_err(failed)?;
        pending.subscribe().block();
        let response = pending
            .get()
            .ok_or_else(|| HttpError::Io("no response after waiting for it".into()))?
            .map_err(|()| HttpError::Io("the response was taken twice".into()))?
            .map_err(failed)?;
        let status = response.status();
        let headers = response
            .headers()
            .entries()
            .into_iter()
            .map(|(n, v)| {
                (
                    n.to_ascii_lowercase(),
                    String::from_utf8_lossy(&v).into_owned(),
                )
            })
            .collect();
        let incoming = response
            .consume()
            .map_err(|()| HttpError::Io("no response body".into()))?;
        let mut data = Vec::new();
        {
            let stream = incoming
                .stream()
                .map_err(|()| HttpError::Io("no response body stream".into()))?;
            loop {
                match stream.blocking_read(64 * 1024) {
                    Ok(chunk) => data.extend(chunk),
                    Err(StreamError::Closed) => break,
                    Err(StreamError::LastOperationFailed(e)) => {
                        return Err(HttpError::Io(e.to_debug_string()));
                    }
                }
            }
        }
        Ok(Response {
            status,
            headers,
            body: data,
        })
    }

    /// A `wasi:http` error code in the spelling of the WIT (`HTTP-request-denied`).
    fn failed(code: ErrorCode) -> HttpError {
        let code = match code {
            ErrorCode::DnsTimeout => "DNS-timeout".to_string(),
            ErrorCode::DnsError(_) => "DNS-error".to_string(),
            ErrorCode::DestinationNotFound => "destination-not-found".to_string(),
            ErrorCode::DestinationUnavailable => "destination-unavailable".to_string(),
            ErrorCode::DestinationIpProhibited => "destination-IP-prohibited".to_string(),
            ErrorCode::DestinationIpUnroutable => "destination-IP-unroutable".to_string(),
            ErrorCode::ConnectionRefused => "connection-refused".to_string(),
            ErrorCode::ConnectionTerminated => "connection-terminated".to_string(),
            ErrorCode::ConnectionTimeout => "connection-timeout".to_string(),
            ErrorCode::ConnectionReadTimeout => "connection-read-timeout".to_string(),
            ErrorCode::ConnectionWriteTimeout => "connection-write-timeout".to_string(),
            ErrorCode::ConnectionLimitReached => "connection-limit-reached".to_string(),
            ErrorCode::TlsProtocolError => "TLS-protocol-error".to_string(),
            ErrorCode::TlsCertificateError => "TLS-certificate-error".to_string(),
            ErrorCode::TlsAlertReceived(_) => "TLS-alert-received".to_string(),
            ErrorCode::HttpRequestDenied => "HTTP-request-denied".to_string(),
            ErrorCode::HttpRequestUriInvalid => "HTTP-request-URI-invalid".to_string(),
            ErrorCode::HttpResponseTimeout => "HTTP-response-timeout".to_string(),
            ErrorCode::ConfigurationError => "configuration-error".to_string(),
            ErrorCode::InternalError(Some(why)) => format!("internal-error: {why}"),
            other => format!("{other:?}"),
        };
        let meaning = meaning(&code);
        HttpError::Failed { code, meaning }
    }
}

#[cfg(not(target_family = "wasm"))]
mod imp {
    use super::{HttpError, Request, Response, Url};

    pub fn send(_: &Request, _: &Url) -> Result<Response, HttpError> {
        Err(HttpError::Unavailable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_as_wasi_http_wants_them() {
        let u = Url::parse("https://api.example.com:8443/v1/items?q=1#top").expect("url");
        assert_eq!(
            u,
            Url {
                https: true,
                authority: "api.example.com:8443",
                path_and_query: "/v1/items?q=1",
            }
        );
        assert_eq!(Url::parse("http://x.test").expect("url").path(), "/");
        assert_eq!(
            Url::parse("http://x.test?a=b").expect("url").path(),
            "/?a=b"
        );
        for bad in [
            "x.test/a",
            "ftp://x.test/",
            "https:///path",
            "https://u:p@x.test/",
        ] {
            assert!(
                matches!(Url::parse(bad), Err(HttpError::Invalid(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn natively_there_is_no_network() {
        assert_eq!(get("https://example.com/"), Err(HttpError::Unavailable));
        assert!(matches!(
            get("example.com"),
            Err(HttpError::Invalid(why)) if why.contains("no scheme")
        ));
    }

    #[test]
    fn errors_say_what_the_code_means() {
        let denied = HttpError::Failed {
            code: "HTTP-request-denied".into(),
            meaning: meaning("HTTP-request-denied"),
        };
        assert!(denied.to_string().contains("only open-world tools"));
        let other = HttpError::Failed {
            code: "loop-detected".into(),
            meaning: meaning("loop-detected"),
        };
        assert_eq!(other.to_string(), "request failed: loop-detected");
        let response = Response {
            status: 404,
            headers: vec![("content-type".into(), "application/json".into())],
            body: b"{\"a\": 1}".to_vec(),
        };
        assert_eq!(response.header("Content-Type"), Some("application/json"));
        let value: serde_json::Value = response.json().expect("json");
        assert_eq!(value["a"], 1);
        assert_eq!(response.error_for_status(), Err(HttpError::Status(404)));
    }
}
