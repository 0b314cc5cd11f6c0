//! The front door's checks, apart from the I/O: `Host` and `Origin`
//! (against DNS rebinding), bearer tokens, content type, body size, and the
//! headers a 2026-07-28 request must send in agreement with its body
//! (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`).

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use hyper::body::Incoming as IncomingBody;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Request, StatusCode};
use serde_json::Value;

use super::body::{BoxBody, plain};
use super::limits::{BODY_MIN_RATE, body_allowance};
use super::shared::HttpConfig;
pub use crate::args::decode_header_value;
use crate::policy::Token;
use crate::protocol::jsonrpc::{self, ErrorObject};
use crate::protocol::mcp::dispatch::name_field;
use crate::protocol::mcp::request::{HEADER_MISMATCH, MISSING_CAPABILITY, UNSUPPORTED_VERSION};

type Response = hyper::Response<BoxBody>;

/// The host part of `host[:port]` or `[v6]:port`, lower-cased.
fn host_name(authority: &str) -> &str {
    let authority = authority.trim();
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().unwrap_or("");
    }
    match authority.rsplit_once(':') {
        Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
        _ => authority,
    }
}

/// RFC 9112 §3.2: a request without a `Host` header, with more than one,
/// or with one that is not text, is a bad request (400) — before anyone
/// asks whether the host is allowed.
pub fn check_one_host(headers: &HeaderMap) -> Result<(), &'static str> {
    let mut hosts = headers.get_all(header::HOST).iter();
    match (hosts.next(), hosts.next()) {
        (None, _) => Err("no Host header"),
        (Some(_), Some(_)) => Err("more than one Host header"),
        (Some(host), None) if host.to_str().is_err() => Err("unreadable Host header"),
        (Some(_), None) => Ok(()),
    }
}

pub fn check_host_and_origin(config: &HttpConfig, headers: &HeaderMap) -> Result<(), String> {
    let allowed = |host: &str| {
        config
            .allowed_hosts
            .iter()
            .any(|a| a.eq_ignore_ascii_case(host))
    };
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .ok_or("no Host header")?;
    let name = host_name(host);
    if !allowed(name) {
        return Err(format!(
            "Host {:?} is not allowed",
            jsonrpc::shorten(name, 100)
        ));
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().map_err(|_| "unreadable Origin")?;
        let authority = origin
            .split_once("://")
            .map(|(_, rest)| rest.split('/').next().unwrap_or(""))
            .ok_or_else(|| format!("Origin {:?} is not allowed", jsonrpc::shorten(origin, 100)))?;
        if !allowed(host_name(authority)) {
            return Err(format!(
                "Origin {:?} is not allowed",
                jsonrpc::shorten(origin, 100)
            ));
        }
    }
    Ok(())
}

/// The bearer token of the request, if it sends one; 400 when it sends
/// two Authorization headers.
#[allow(clippy::result_large_err)]
pub fn bearer(headers: &HeaderMap) -> Result<Option<&str>, Response> {
    // Two credentials are one too many: which one counts would be a guess
    // (and a second valid token must not lend its rights to the first).
    if headers
        .get_all(header::AUTHORIZATION)
        .iter()
        .nth(1)
        .is_some()
    {
        return Err(plain(
            StatusCode::BAD_REQUEST,
            "bad request: more than one Authorization header; send one\n",
        ));
    }
    Ok(headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, rest) = v.trim().split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
        }))
}

/// The token of the request when the policy has tokens; `Ok(None)` when it
/// has none (everything is open).
#[allow(clippy::result_large_err)]
pub fn authenticate(tokens: &[Token], headers: &HeaderMap) -> Result<Option<Token>, Response> {
    let bearer = bearer(headers)?;
    if tokens.is_empty() {
        return Ok(None);
    }
    let challenge = match bearer {
        None => "Bearer realm=\"airlock\"",
        Some(bearer) => match tokens.iter().find(|t| t.accepts(bearer)) {
            Some(token) => return Ok(Some(token.clone())),
            None => "Bearer realm=\"airlock\", error=\"invalid_token\"",
        },
    };
    let mut response = plain(
        StatusCode::UNAUTHORIZED,
        "unauthorized: a valid bearer token is required\n",
    );
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static(challenge),
    );
    Err(closing(response))
}

/// A refusal answered before the request's body was read: the connection
/// cannot carry another request (the unread body is still on it), so the
/// answer says so, and a client that retries with a token opens a new one
/// instead of reusing this one as it closes ("server disconnected without
/// sending a response").
pub fn closing(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

#[allow(clippy::result_large_err)]
pub fn check_json_content_type(headers: &HeaderMap) -> Result<(), Response> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let essence = content_type.split(';').next().unwrap_or("").trim();
    if essence.eq_ignore_ascii_case("application/json") {
        Ok(())
    } else {
        Err(plain(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported media type: send Content-Type: application/json\n",
        ))
    }
}

/// Reads the body, refusing (413) one over `max` from its declared length
/// or as soon as the bytes read pass `max`, and (408) one that arrives
/// slower than its allowance (`limits::body_allowance` from `base`): a
/// client trickling its body does not hold its connection for long.
#[allow(clippy::result_large_err)]
pub async fn read_body(
    req: Request<IncomingBody>,
    max: usize,
    base: Duration,
) -> Result<Bytes, Response> {
    let too_large = || {
        plain(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!("request body over the {max}-byte limit\n"),
        )
    };
    let mut declared = 0;
    if let Some(length) = req.headers().get(header::CONTENT_LENGTH) {
        let length = length.to_str().ok().and_then(|v| v.parse::<u64>().ok());
        match length {
            Some(length) if length > max as u64 => return Err(too_large()),
            Some(length) => declared = length as usize,
            None => return Err(plain(StatusCode::BAD_REQUEST, "bad Content-Length\n")),
        }
    }
    let started = tokio::time::Instant::now();
    let mut body = req.into_body();
    let mut read = BytesMut::with_capacity(declared);
    loop {
        let deadline = started + body_allowance(base, read.len() as u64);
        let frame = match tokio::time::timeout_at(deadline, body.frame()).await {
            Ok(Some(Ok(frame))) => frame,
            Ok(None) => return Ok(read.freeze()),
            Ok(Some(Err(err))) => {
                tracing::debug!("reading a request body: {err}");
                return Err(plain(
                    StatusCode::BAD_REQUEST,
                    "could not read the request body\n",
                ));
            }
            Err(_) => {
                let mut response = plain(
                    StatusCode::REQUEST_TIMEOUT,
                    &format!(
                        "request body too slow: {} byte(s) in {:.0?}; send it within {:?} \
                         plus 1 s per {} KiB\n",
                        read.len(),
                        started.elapsed(),
                        base,
                        BODY_MIN_RATE / 1024
                    ),
                );
                response
                    .headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
                return Err(response);
            }
        };
        if let Ok(data) = frame.into_data() {
            if read.len() + data.len() > max {
                return Err(too_large());
            }
            read.extend_from_slice(&data);
        }
    }
}

/// Checks the Streamable HTTP headers of a modern request against its body
/// (`None` for a header absent or not visible ASCII): `MCP-Protocol-Version`,
/// `Mcp-Method` and, where the method names something, `Mcp-Name`.
/// `body_version` is the body's `_meta` revision, already read and checked.
pub fn check_headers(
    version: Option<&str>,
    method: Option<&str>,
    name: Option<&str>,
    request: &jsonrpc::Request,
    body_version: &str,
) -> Result<(), ErrorObject> {
    let mismatch = |message: String| ErrorObject::new(HEADER_MISMATCH, message);
    let clip = |s: &str| jsonrpc::shorten(s, 100);
    match version {
        None => {
            return Err(mismatch(
                "Header mismatch: the MCP-Protocol-Version header is required".into(),
            ));
        }
        Some(v) if v.trim() != body_version => {
            return Err(mismatch(format!(
                "Header mismatch: MCP-Protocol-Version header value '{}' does not match body value '{}'",
                clip(v),
                body_version
            )));
        }
        Some(_) => {}
    }
    match method {
        None => {
            return Err(mismatch(
                "Header mismatch: the Mcp-Method header is required".into(),
            ));
        }
        Some(m) if m != request.method => {
            return Err(mismatch(format!(
                "Header mismatch: Mcp-Method header value '{}' does not match body value '{}'",
                clip(m),
                clip(&request.method)
            )));
        }
        Some(_) => {}
    }
    let Some(field) = name_field(&request.method) else {
        return Ok(());
    };
    let body = request
        .params
        .as_ref()
        .and_then(|p| p.get(field))
        .and_then(Value::as_str);
    let Some(header) = name else {
        return Err(mismatch(format!(
            "Header mismatch: the Mcp-Name header is required for {} (the value of params.{field})",
            request.method
        )));
    };
    let decoded = decode_header_value(header).ok_or_else(|| {
        mismatch("Header mismatch: the Mcp-Name header is not valid =?base64?…?= text".into())
    })?;
    if Some(decoded.as_str()) != body {
        return Err(mismatch(format!(
            "Header mismatch: Mcp-Name header value '{}' does not match body value '{}'",
            clip(&decoded),
            clip(body.unwrap_or(""))
        )));
    }
    Ok(())
}

/// The HTTP status for a 2026-07-28 answer: 400 for the errors a client
/// must fix before retrying, 404 for an unknown method, else 200.
pub fn stateless_status(error: Option<i64>) -> StatusCode {
    match error {
        Some(HEADER_MISMATCH | MISSING_CAPABILITY | UNSUPPORTED_VERSION) => StatusCode::BAD_REQUEST,
        Some(jsonrpc::METHOD_NOT_FOUND) => StatusCode::NOT_FOUND,
        _ => StatusCode::OK,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::mcp::request::read_meta;
    use base64::Engine as _;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(*k, HeaderValue::from_str(v).unwrap());
        }
        map
    }

    #[test]
    fn host_names() {
        assert_eq!(host_name("localhost:8414"), "localhost");
        assert_eq!(host_name("127.0.0.1"), "127.0.0.1");
        assert_eq!(host_name("[::1]:80"), "::1");
        assert_eq!(host_name("evil.example:1"), "evil.example");
    }

    #[test]
    fn exactly_one_host_header() {
        assert!(check_one_host(&headers(&[("host", "localhost")])).is_ok());
        assert!(check_one_host(&headers(&[])).is_err());
        let two = headers(&[("host", "localhost"), ("host", "localhost")]);
        assert_eq!(check_one_host(&two), Err("more than one Host header"));
    }

    #[test]
    fn host_and_origin() {
        let config = HttpConfig::default();
        let ok = |h: &[(&'static str, &str)]| check_host_and_origin(&config, &headers(h)).is_ok();
        assert!(ok(&[("host", "127.0.0.1:8414")]));
        assert!(ok(&[
            ("host", "localhost"),
            ("origin", "http://localhost:3000")
        ]));
        assert!(ok(&[("host", "[::1]:1"), ("origin", "http://[::1]:5")]));
        assert!(!ok(&[]));
        assert!(!ok(&[("host", "attacker.example:8414")]));
        assert!(!ok(&[
            ("host", "localhost"),
            ("origin", "http://attacker.example")
        ]));
        assert!(!ok(&[("host", "localhost"), ("origin", "null")]));
        assert!(!ok(&[("host", "localhost.attacker.example")]));
    }

    #[test]
    fn bearer_tokens() {
        use sha2::Digest as _;
        let token = Token::secret("ci", sha2::Sha256::digest(b"s3cret").into(), None);
        let tokens = [token];
        assert!(authenticate(&[], &headers(&[])).unwrap().is_none());
        assert!(authenticate(&tokens, &headers(&[])).is_err());
        assert!(authenticate(&tokens, &headers(&[("authorization", "Bearer wrong")])).is_err());
        let found = authenticate(&tokens, &headers(&[("authorization", "Bearer s3cret")])).unwrap();
        assert_eq!(found.map(|t| t.name), Some("ci".into()));
        let response = authenticate(&tokens, &headers(&[])).unwrap_err();
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        assert!(response.headers().contains_key(header::WWW_AUTHENTICATE));
        assert_eq!(response.headers()[header::CONNECTION], "close");
    }

    /// A limited token first and a valid all-tools token second: refused
    /// whole, not decided by either (with or without tokens in the policy).
    #[test]
    fn two_authorization_headers_are_refused() {
        use sha2::Digest as _;
        let token = |name: &str, secret: &[u8]| {
            Token::secret(
                name,
                sha2::Sha256::digest(secret).into(),
                Some(vec!["a".into()]),
            )
        };
        let tokens = [token("limited", b"one"), token("all", b"two")];
        let two = headers(&[
            ("authorization", "Bearer one"),
            ("authorization", "Bearer two"),
        ]);
        for tokens in [&tokens[..], &[]] {
            let response = authenticate(tokens, &two).unwrap_err();
            assert_eq!(response.status(), StatusCode::BAD_REQUEST);
        }
    }

    const MODERN: &str = "2026-07-28";
    const META: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

    fn request(text: &str) -> jsonrpc::Request {
        match jsonrpc::message(serde_json::from_str(text).expect("json")) {
            jsonrpc::Message::Request(r) => r,
            _ => panic!("not a request"),
        }
    }

    #[test]
    fn headers_must_match_the_body() {
        let call = request(&format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"café","_meta":{META}}}}}"#
        ));
        read_meta(call.params.as_ref()).unwrap();
        let meta = MODERN;
        let v = Some(MODERN);
        let encoded = format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode("café")
        );
        assert!(check_headers(v, Some("tools/call"), Some(&encoded), &call, meta).is_ok());
        for (version, method, name) in [
            (None, Some("tools/call"), Some(encoded.as_str())),
            (
                Some("2025-11-25"),
                Some("tools/call"),
                Some(encoded.as_str()),
            ),
            (v, None, Some(encoded.as_str())),
            (v, Some("tools/list"), Some(encoded.as_str())),
            (v, Some("tools/call"), None),
            (v, Some("tools/call"), Some("cafe")),
            (v, Some("tools/call"), Some("=?base64?!!?=")),
        ] {
            let err = check_headers(version, method, name, &call, meta).unwrap_err();
            assert_eq!(err.code, HEADER_MISMATCH, "{version:?} {method:?} {name:?}");
        }
        let get = request(&format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{{"taskId":"ab","_meta":{META}}}}}"#
        ));
        assert!(check_headers(v, Some("tasks/get"), Some("ab"), &get, meta).is_ok());
        assert!(check_headers(v, Some("tasks/get"), Some("cd"), &get, meta).is_err());
        let list = request(&format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{"_meta":{META}}}}}"#
        ));
        assert!(check_headers(v, Some("tools/list"), None, &list, meta).is_ok());
        assert_eq!(decode_header_value("plain").as_deref(), Some("plain"));
    }

    #[test]
    fn statuses_for_stateless_errors() {
        let e = Some;
        assert_eq!(
            stateless_status(e(HEADER_MISMATCH)),
            StatusCode::BAD_REQUEST
        );
        assert_eq!(
            stateless_status(e(MISSING_CAPABILITY)),
            StatusCode::BAD_REQUEST
        );
        assert_eq!(
            stateless_status(e(UNSUPPORTED_VERSION)),
            StatusCode::BAD_REQUEST
        );
        assert_eq!(
            stateless_status(e(jsonrpc::METHOD_NOT_FOUND)),
            StatusCode::NOT_FOUND
        );
        assert_eq!(stateless_status(None), StatusCode::OK);
    }
}
