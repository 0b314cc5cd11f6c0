//! Params of `completion/complete`: what is completed (a prompt's
//! argument or a resource template's variable), the argument and its value
//! so far, and the other arguments already given (`context`).

use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::prompts::string_arguments;
use super::{Params, Retry, invalid, required};
use crate::protocol::jsonrpc::ErrorObject;

/// `completion/complete`.
#[derive(Debug, Deserialize)]
pub struct CompleteParams {
    #[serde(rename = "ref", default, deserialize_with = "reference")]
    pub reference: Reference,
    #[serde(default, deserialize_with = "argument")]
    pub argument: Argument,
    #[serde(default, deserialize_with = "context")]
    pub context: Vec<(String, String)>,
    #[serde(flatten)]
    pub retry: Retry,
}
impl Params for CompleteParams {}

/// What is completed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub enum Reference {
    /// An argument of the prompt named so (`ref/prompt`).
    Prompt(String),
    /// A variable of the resource template (`ref/resource`).
    Template(String),
    /// Absent: said so when the params are checked.
    #[default]
    Missing,
}

/// The argument completed (`name` required; `value` so far, `""` absent).
#[derive(Debug, Default)]
pub struct Argument {
    pub name: Option<String>,
    pub value: String,
}

impl CompleteParams {
    /// The argument's name, or -32602 saying it is missing.
    pub fn argument_name(&self) -> Result<&str, ErrorObject> {
        self.argument
            .name
            .as_deref()
            .ok_or_else(|| required("name", "the argument to complete"))
    }
}

/// A `ref` that is neither kind, or absent.
pub fn bad_ref() -> ErrorObject {
    ErrorObject::invalid_param(
        "ref",
        "ref must be {\"type\": \"ref/prompt\", \"name\": …} or {\"type\": \"ref/resource\", \
         \"uri\": …}",
    )
}

fn reference<'de, D: Deserializer<'de>>(d: D) -> Result<Reference, D::Error> {
    let value = Value::deserialize(d)?;
    let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_string);
    match value.get("type").and_then(Value::as_str) {
        Some("ref/prompt") => text("name").map(Reference::Prompt).ok_or_else(|| {
            invalid(
                "name",
                "name (the prompt whose argument to complete) is required",
            )
        }),
        Some("ref/resource") => text("uri")
            .map(Reference::Template)
            .ok_or_else(|| invalid("uri", "uri (the resource template to complete) is required")),
        _ => Err(invalid("ref", bad_ref().message)),
    }
}

fn argument<'de, D: Deserializer<'de>>(d: D) -> Result<Argument, D::Error> {
    let value = Value::deserialize(d)?;
    let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_string);
    Ok(Argument {
        name: text("name"),
        value: text("value").unwrap_or_default(),
    })
}

fn context<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(String, String)>, D::Error> {
    let context = Value::deserialize(d)?;
    let arguments = match context {
        Value::Object(mut map) => map.remove("arguments").unwrap_or(Value::Null),
        _ => Value::Null,
    };
    string_arguments(arguments, "arguments").map_err(|(key, message)| invalid(&key, message))
}
