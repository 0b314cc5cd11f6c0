//! Params of `prompts/get` (`prompts/list` takes a
//! [`super::ListParams`]), and the string arguments that a prompt and a
//! completion's `context` carry.

use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::{Params, Retry, invalid};

/// `prompts/get`.
#[derive(Debug, Deserialize)]
pub struct GetParams {
    pub name: String,
    #[serde(default, deserialize_with = "arguments")]
    pub arguments: Vec<(String, String)>,
    #[serde(flatten)]
    pub retry: Retry,
}
impl Params for GetParams {
    const REQUIRED: &'static [(&'static str, &'static str)] = &[("name", "the prompt to get")];
}

/// Arguments that are all strings, in their order (absent or null: none).
pub fn arguments<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(String, String)>, D::Error> {
    string_arguments(Value::deserialize(d)?, "arguments")
        .map_err(|(key, message)| invalid(&key, message))
}

/// `value`'s strings by name, or the parameter (`key`) and what is wrong.
pub fn string_arguments(
    value: Value,
    key: &str,
) -> Result<Vec<(String, String)>, (String, String)> {
    match value {
        Value::Null => Ok(Vec::new()),
        Value::Object(map) => map
            .into_iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k, s)),
                _ => Err((key.to_string(), format!("argument {k:?} must be a string"))),
            })
            .collect(),
        _ => Err((
            key.to_string(),
            format!("{key} must be an object of strings"),
        )),
    }
}
