//! The JSON-RPC 2.0 envelope: parsing incoming messages (single or batch),
//! telling requests from notifications and responses, and building
//! responses and error objects.
//!
//! Everything here is about the envelope only; what a method means is the
//! business of [`super::mcp`] and [`super::rpc`]. Error messages built here
//! never carry internal details: callers log those with `tracing` and send
//! a generic text.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// Invalid JSON was received.
pub const PARSE_ERROR: i64 = -32700;
/// The JSON is not a valid request object.
pub const INVALID_REQUEST: i64 = -32600;
/// The method does not exist or is not available.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid method parameters.
pub const INVALID_PARAMS: i64 = -32602;
/// Internal JSON-RPC error.
pub const INTERNAL_ERROR: i64 = -32603;
/// The tool ran and failed (start of the server-error range).
pub const TOOL_FAILED: i64 = -32000;
/// The policy does not permit the call.
pub const NOT_PERMITTED: i64 = -32001;
/// The tool is at its concurrency limit.
pub const BUSY: i64 = -32002;

/// A request id: a string, a number or null (JSON-RPC 2.0 §4). Kept as the
/// JSON value so it is echoed back exactly as the client sent it.
#[derive(Debug, Clone, PartialEq)]
pub struct Id(Value);

impl Id {
    /// Accepts only the id types JSON-RPC allows.
    pub fn from_value(value: Value) -> Option<Id> {
        match value {
            Value::String(_) | Value::Number(_) | Value::Null => Some(Id(value)),
            _ => None,
        }
    }

    pub fn null() -> Id {
        Id(Value::Null)
    }

    pub fn as_value(&self) -> &Value {
        &self.0
    }

    /// A key that identifies the id in maps (`"7"` and `7` stay distinct).
    pub fn key(&self) -> String {
        self.0.to_string()
    }
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    pub code: i64,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        ErrorObject {
            code,
            message: message.into(),
            data: None,
        }
    }

    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    pub fn parse_error() -> Self {
        Self::new(PARSE_ERROR, "Parse error")
    }

    pub fn invalid_request(why: &str) -> Self {
        Self::new(INVALID_REQUEST, format!("Invalid Request: {why}"))
    }

    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            METHOD_NOT_FOUND,
            format!("Method not found: {}", shorten(method, 100)),
        )
    }

    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(INVALID_PARAMS, message)
    }

    /// Invalid params, naming the one at fault in `data.parameter`.
    pub fn invalid_param(parameter: &str, message: impl Into<String>) -> Self {
        Self::invalid_params(message).with_data(json!({ "parameter": parameter }))
    }

    /// An internal error; the cause must already be logged by the caller.
    pub fn internal() -> Self {
        Self::new(INTERNAL_ERROR, "Internal error")
    }

    pub fn to_json(&self) -> Value {
        json!(self)
    }
}

/// A request (with an id) or a notification (without one).
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// `None` for a notification.
    pub id: Option<Id>,
    pub method: String,
    /// `params` as sent; `None` when absent.
    pub params: Option<Value>,
}

/// A response from the other side to a request we sent (e.g. elicitation).
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub id: Id,
    pub result: Result<Value, Value>,
}

/// One element of what arrived.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    Request(Request),
    Reply(Reply),
    /// Not a valid message; answer with this error (id null, or the id if
    /// one could be read).
    Invalid(Id, ErrorObject),
}

/// What one body or line held.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    Single(Message),
    Batch(Vec<Message>),
    /// Unparseable JSON, or an empty batch: answer this error, id null.
    Error(ErrorObject),
}

/// Most elements accepted in one batch, so a batch cannot fan out without
/// bound.
pub const MAX_BATCH: usize = 100;

/// Parses a body or line. Invalid UTF-8 and malformed JSON are a parse
/// error; a JSON value that is not a request is an invalid request.
pub fn parse(bytes: &[u8]) -> Incoming {
    let value: Value = match serde_json::from_slice(bytes) {
        Ok(value) => value,
        Err(err) => {
            tracing::debug!("unparseable JSON-RPC message: {err}");
            return Incoming::Error(ErrorObject::parse_error());
        }
    };
    match value {
        Value::Array(items) if items.is_empty() => {
            Incoming::Error(ErrorObject::invalid_request("empty batch"))
        }
        Value::Array(items) if items.len() > MAX_BATCH => Incoming::Error(
            ErrorObject::invalid_request(&format!("a batch holds at most {MAX_BATCH} calls")),
        ),
        Value::Array(items) => Incoming::Batch(items.into_iter().map(message).collect()),
        other => Incoming::Single(message(other)),
    }
}

/// Classifies one JSON value.
pub fn message(value: Value) -> Message {
    let Value::Object(mut map) = value else {
        return Message::Invalid(Id::null(), ErrorObject::invalid_request("not an object"));
    };
    // Read the id first so an error about the rest can still name it.
    let id = match map.remove("id") {
        None => None,
        Some(raw) => match Id::from_value(raw) {
            Some(id) => Some(id),
            None => {
                return Message::Invalid(
                    Id::null(),
                    ErrorObject::invalid_request("id must be a string, a number or null"),
                );
            }
        },
    };
    let bad = |id: Option<Id>, why: &str| {
        Message::Invalid(
            id.unwrap_or_else(Id::null),
            ErrorObject::invalid_request(why),
        )
    };
    if map.get("jsonrpc") != Some(&Value::String("2.0".into())) {
        return bad(id, "jsonrpc must be \"2.0\"");
    }
    if let Some(method) = map.remove("method") {
        let Value::String(method) = method else {
            return bad(id, "method must be a string");
        };
        let params = map.remove("params");
        if let Some(p) = &params
            && !(p.is_object() || p.is_array())
        {
            return bad(id, "params must be an object or an array");
        }
        return Message::Request(Request { id, method, params });
    }
    // No method: a response to one of our requests.
    let Some(id) = id else {
        return bad(None, "no method");
    };
    match (map.remove("result"), map.remove("error")) {
        (Some(result), None) => Message::Reply(Reply {
            id,
            result: Ok(result),
        }),
        (None, Some(error)) => Message::Reply(Reply {
            id,
            result: Err(error),
        }),
        _ => bad(Some(id), "no method"),
    }
}

/// A message of `fields` after `"jsonrpc": "2.0"`. The values are moved
/// in: `json!` would serialize each interpolated value again (a deep copy
/// of every result).
fn envelope<const N: usize>(fields: [(&str, Value); N]) -> Value {
    let mut map = Map::with_capacity(N + 1);
    map.insert("jsonrpc".into(), "2.0".into());
    map.extend(fields.map(|(key, value)| (key.to_owned(), value)));
    Value::Object(map)
}

/// A success response.
pub fn response(id: &Id, result: Value) -> Value {
    envelope([("id", id.0.clone()), ("result", result)])
}

/// An error response.
pub fn error_response(id: &Id, error: &ErrorObject) -> Value {
    envelope([("id", id.0.clone()), ("error", error.to_json())])
}

/// A notification we send.
pub fn notification(method: &str, params: Value) -> Value {
    envelope([("method", method.into()), ("params", params)])
}

/// A request we send.
pub fn request(id: &Id, method: &str, params: Value) -> Value {
    envelope([
        ("id", id.0.clone()),
        ("method", method.into()),
        ("params", params),
    ])
}

/// Cuts client-supplied text before it goes into a message.
pub fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn single(text: &str) -> Message {
        match parse(text.as_bytes()) {
            Incoming::Single(m) => m,
            other => panic!("expected one message, got {other:?}"),
        }
    }

    fn invalid_code(m: &Message) -> i64 {
        match m {
            Message::Invalid(_, e) => e.code,
            other => panic!("expected invalid, got {other:?}"),
        }
    }

    #[test]
    fn parse_errors() {
        for text in ["", "{", "{\"jsonrpc\":\"2.0\",", "nul", "[1,", "\u{feff}x"] {
            assert_eq!(
                parse(text.as_bytes()),
                Incoming::Error(ErrorObject::parse_error()),
                "{text:?}"
            );
        }
        assert_eq!(
            parse(b"{\"jsonrpc\":\"2.0\",\"method\":\"\xff\xfe\"}"),
            Incoming::Error(ErrorObject::parse_error())
        );
    }

    #[test]
    fn requests_and_notifications() {
        let m = single(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#);
        let Message::Request(r) = m else { panic!() };
        assert_eq!(r.id, Some(Id(json!(1))));
        assert!(r.id.is_some());
        let m = single(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        let Message::Request(r) = m else { panic!() };
        assert!(r.id.is_none(), "a notification");
        let m = single(r#"{"jsonrpc":"2.0","id":null,"method":"x","params":[1]}"#);
        let Message::Request(r) = m else { panic!() };
        assert_eq!(r.id, Some(Id::null()));
        assert_eq!(r.params, Some(json!([1])));
        let m = single(r#"{"jsonrpc":"2.0","id":"a","method":"x","params":{"k":1}}"#);
        assert!(matches!(m, Message::Request(Request { id: Some(_), .. })));
    }

    #[test]
    fn invalid_requests() {
        let cases = [
            r#"1"#,
            r#""x""#,
            r#"{"id":1,"method":"x"}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"x"}"#,
            r#"{"jsonrpc":2.0,"id":1,"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":{},"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":[1],"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":true,"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":5}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"x","params":3}"#,
            r#"{"jsonrpc":"2.0","id":1}"#,
            r#"{"jsonrpc":"2.0"}"#,
        ];
        for text in cases {
            assert_eq!(invalid_code(&single(text)), INVALID_REQUEST, "{text}");
        }
        // The id is echoed when it could be read.
        let Message::Invalid(id, _) = single(r#"{"jsonrpc":"1.0","id":"q","method":"x"}"#) else {
            panic!()
        };
        assert_eq!(id, Id(json!("q")));
    }

    #[test]
    fn batches() {
        assert_eq!(
            parse(b"[]"),
            Incoming::Error(ErrorObject::invalid_request("empty batch"))
        );
        let Incoming::Batch(items) =
            parse(br#"[1, {"jsonrpc":"2.0","method":"n"}, {"jsonrpc":"2.0","id":2,"method":"m"}]"#)
        else {
            panic!()
        };
        assert_eq!(items.len(), 3);
        assert_eq!(invalid_code(&items[0]), INVALID_REQUEST);
        let big = format!("[{}]", vec!["1"; MAX_BATCH + 1].join(","));
        assert!(matches!(parse(big.as_bytes()), Incoming::Error(e) if e.code == INVALID_REQUEST));
    }

    #[test]
    fn replies() {
        let m = single(r#"{"jsonrpc":"2.0","id":"e1","result":{"action":"accept"}}"#);
        assert!(matches!(m, Message::Reply(Reply { result: Ok(_), .. })));
        let m = single(r#"{"jsonrpc":"2.0","id":"e1","error":{"code":1,"message":"no"}}"#);
        assert!(matches!(m, Message::Reply(Reply { result: Err(_), .. })));
    }

    #[test]
    fn deep_nesting_is_refused_not_a_crash() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert_eq!(
            parse(deep.as_bytes()),
            Incoming::Error(ErrorObject::parse_error())
        );
    }

    #[test]
    fn building() {
        let id = Id(json!(7));
        assert_eq!(
            error_response(&id, &ErrorObject::method_not_found("nope")),
            json!({"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"Method not found: nope"}})
        );
        assert_eq!(
            response(&id, json!({})),
            json!({"jsonrpc":"2.0","id":7,"result":{}})
        );
        assert_eq!(Id(json!("7")).key(), "\"7\"");
        assert_eq!(Id(json!(7)).key(), "7");
    }
}
