//! The params and results of every MCP method as types: params parsed
//! once at the boundary (the dispatch) with serde, so no handler reads a
//! known field out of a `serde_json::Value`, and results serialised with
//! serde, so no handler writes a known field by hand; one module per area:
//! [`lifecycle`] (`initialize`, `server/discover`, `logging/setLevel`, the
//! client's capabilities and the 2026-07-28 `_meta`), [`client`] (what the
//! client answers the server), [`tools`], [`tasks`], [`resources`],
//! [`prompts`], [`completion`], [`subscriptions`], [`skills`]. What both
//! revisions share lives here: pages ([`ListParams`], [`Page`]), a
//! request's `_meta` ([`RequestMeta`]), a multi round-trip's result
//! ([`InputRequired`]) and its retry ([`Retry`]), and the empty result
//! ([`EmptyResult`]).
//!
//! What a tool, a resource, a template or a prompt looks like in a list,
//! a call's result and what a read, a prompt or a completion answers are
//! the domain types' own `Serialize` ([`crate::tool`], [`crate::offer`]):
//! the call path below the protocol counts a result's bytes by them. A
//! result still passes through the revision's `Wire::decorate` (and a
//! list's cache hints) as JSON, where the revisions differ.
//!
//! The types are airlock's own, not rmcp's: a server of 2025-11-25 and
//! 2026-07-28 at once needs both revisions' fields in one type (`task`
//! beside `requestState`), where each rmcp release follows one revision.
//!
//! Unknown fields are ignored, as the schema's open `params` allow; a
//! field airlock does not read is never an error. A malformed field is
//! -32602 naming the parameter (`data.parameter`) and saying what to send,
//! the message each type gives; `params` that are not an object read as
//! `{}`.

pub mod client;
pub mod completion;
pub mod lifecycle;
pub mod prompts;
pub mod resources;
pub mod skills;
pub mod subscriptions;
pub mod tasks;
pub mod tools;

use serde::de::{self, DeserializeOwned, Deserializer};
use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::protocol::jsonrpc::ErrorObject;

/// Params of one method: their serde shape, and the string fields they
/// require (checked before serde, so a missing or non-string one is
/// named with what it is for).
pub trait Params: DeserializeOwned {
    /// `(field, what it is)`: `"name (the tool to call) is required"`.
    const REQUIRED: &'static [(&'static str, &'static str)] = &[];
}

/// Marks a serde error raised by [`invalid`]: `{MARK}parameter{MARK}message`.
const MARK: char = '\u{1f}';

/// A field's error, as the client is told it: -32602 naming `parameter`.
pub fn invalid<E: de::Error>(parameter: &str, message: impl std::fmt::Display) -> E {
    E::custom(format_args!("{MARK}{parameter}{MARK}{message}"))
}

/// `key (what) is required`, naming `key`.
pub fn required(key: &str, what: &str) -> ErrorObject {
    ErrorObject::invalid_param(key, format!("{key} ({what}) is required"))
}

/// Reads a method's params (absent: `{}`), or the -32602 to answer.
pub fn parse<P: Params>(params: Value) -> Result<P, ErrorObject> {
    let params = match params {
        Value::Object(map) => Value::Object(map),
        _ => Value::Object(Map::new()),
    };
    for (key, what) in P::REQUIRED {
        if !params.get(*key).is_some_and(Value::is_string) {
            return Err(required(key, what));
        }
    }
    serde_json::from_value(params).map_err(|e| error_of(&e.to_string()))
}

/// A serde error as -32602: one of [`invalid`]'s as it says, any other
/// (a type serde itself refused) with serde's words.
fn error_of(text: &str) -> ErrorObject {
    let marked = text
        .strip_prefix(MARK)
        .and_then(|rest| rest.split_once(MARK));
    match marked {
        Some((parameter, message)) => ErrorObject::invalid_param(parameter, message),
        None => ErrorObject::invalid_params(format!("invalid params: {text}")),
    }
}

/// Params of nothing but `_meta` (`ping`, `server/discover`).
#[derive(Debug, Default, Deserialize)]
pub struct NoParams {}
impl Params for NoParams {}

/// The `_meta` of a request, as far as airlock reads it: the progress
/// token (the 2026-07-28 keys are [`lifecycle::StatelessMeta`]'s).
#[derive(Debug, Default, Deserialize)]
pub struct RequestMeta {
    #[serde(rename = "progressToken")]
    pub progress_token: Option<Value>,
}

/// `_meta` read leniently: one that is not an object carries nothing.
pub fn request_meta<'de, D: Deserializer<'de>>(d: D) -> Result<RequestMeta, D::Error> {
    Ok(RequestMeta::deserialize(Value::deserialize(d)?).unwrap_or_default())
}

/// A page of a list: where it starts (`cursor`, made by the list itself).
#[derive(Debug, Default, Deserialize)]
pub struct ListParams {
    #[serde(default, deserialize_with = "cursor")]
    pub cursor: Option<String>,
}
impl Params for ListParams {}

/// A cursor is a string (or null: the first page).
fn cursor<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        Value::String(cursor) => Ok(Some(cursor)),
        _ => Err(invalid("cursor", "Invalid cursor")),
    }
}

/// What a retry of a 2026-07-28 multi round-trip brings back: the signed
/// `requestState` of the round and the client's `inputResponses`, read
/// leniently (a state that is not a string reads as `""`, which no round
/// verifies; responses that are not an object as none).
#[derive(Debug, Default, Deserialize)]
pub struct Retry {
    #[serde(rename = "requestState", default, deserialize_with = "state")]
    pub request_state: Option<String>,
    #[serde(rename = "inputResponses", default, deserialize_with = "object")]
    pub input_responses: Option<Map<String, Value>>,
}

/// What a 2026-07-28 request answers when its client must answer first
/// (`InputRequiredResult`): the requests by key, in the order asked, and
/// the signed state a retry brings back with the responses.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InputRequired {
    result_type: &'static str,
    #[serde(serialize_with = "in_order")]
    input_requests: Vec<(String, InputRequest)>,
    request_state: String,
}

impl InputRequired {
    pub fn new(input_requests: Vec<(String, InputRequest)>, request_state: String) -> Self {
        InputRequired {
            result_type: "input_required",
            input_requests,
            request_state,
        }
    }
}

/// One request of an [`InputRequired`]: the method the client answers,
/// and its params.
#[derive(Debug, Serialize)]
pub struct InputRequest {
    pub method: &'static str,
    pub params: Value,
}

/// Pairs as a JSON object, in their order.
fn in_order<S: Serializer>(pairs: &[(String, InputRequest)], s: S) -> Result<S::Ok, S::Error> {
    s.collect_map(pairs.iter().map(|(key, request)| (key, request)))
}

fn state<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(Some(match Value::deserialize(d)? {
        Value::String(state) => state,
        _ => String::new(),
    }))
}

/// A string field read leniently: anything else reads as absent (the
/// caller says what is wrong when it matters).
pub fn text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(text) => Some(text),
        _ => None,
    })
}

/// An object field read leniently: anything else reads as absent.
pub fn object<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Map<String, Value>>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::Object(map) => Some(map),
        _ => None,
    })
}

/// A flag that is on only when it is `true`.
pub fn flag<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    Ok(Value::deserialize(d)? == Value::Bool(true))
}

/// A page of a list result: its items under `key` (`tools`,
/// `resources`…), and the cursor of the next page when more follow. Typed
/// items (a [`tools::ListedTool`], a `&ResourceInfo`…) are serialised
/// once, into the result.
#[derive(Debug)]
pub struct Page<T = Value> {
    pub key: &'static str,
    pub items: Vec<T>,
    pub next_cursor: Option<String>,
}

impl<T: Serialize> Serialize for Page<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut page = serializer.serialize_map(None)?;
        page.serialize_entry(self.key, &self.items)?;
        if let Some(cursor) = &self.next_cursor {
            page.serialize_entry("nextCursor", cursor)?;
        }
        page.end()
    }
}

impl<T: Serialize> Page<T> {
    /// The page as a JSON object, for the revision's cache hints.
    pub fn into_map(self) -> Map<String, Value> {
        to_map(&self)
    }
}

/// The result of a method that answers nothing but success.
#[derive(Debug, Default, Serialize)]
pub struct EmptyResult {}

/// A result as JSON (every result type serializes).
pub fn to_value(result: impl Serialize) -> Value {
    serde_json::to_value(result).unwrap_or_else(|e| {
        tracing::error!("a result did not serialize: {e}");
        Value::Object(Map::new())
    })
}

/// A result as a JSON object, for what is added to it beside its type
/// (a list's cache hints, a revision's decoration).
pub fn to_map(result: impl Serialize) -> Map<String, Value> {
    match to_value(result) {
        Value::Object(map) => map,
        other => {
            tracing::error!("a result is not an object: {other}");
            Map::new()
        }
    }
}

#[cfg(test)]
mod tests;
