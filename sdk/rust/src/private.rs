//! Helpers for the code that `#[tool]` generates. Not a public API: names
//! and signatures may change in any release.

use crate::{Error, Output, ToolSchema};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use std::fmt::Display;

pub use serde_json;

/// Reads parameter `name` from the arguments. A missing (or `null`)
/// parameter is `None` for an `Option`, and an error naming it otherwise.
pub fn arg<T: DeserializeOwned + ToolSchema>(
    arguments: &Map<String, Value>,
    name: &str,
) -> Result<T, Error> {
    match arguments.get(name) {
        Some(value) if !value.is_null() => convert(name, value.clone()),
        _ if T::OPTIONAL => convert(name, Value::Null),
        _ => {
            let received: Vec<&str> = arguments.keys().map(String::as_str).collect();
            Err(Error::InvalidArguments(format!(
                "missing required parameter {name:?} (received: {received:?})"
            )))
        }
    }
}

/// Reads parameter `name`, or converts `default` (a JSON value) when the
/// parameter is missing.
pub fn arg_or_json<T: DeserializeOwned>(
    arguments: &Map<String, Value>,
    name: &str,
    default: Value,
) -> Result<T, Error> {
    match arguments.get(name) {
        Some(value) if !value.is_null() => convert(name, value.clone()),
        _ => convert(name, default),
    }
}

/// Reads parameter `name`, or calls `default` when the parameter is missing.
pub fn arg_or_else<T: DeserializeOwned>(
    arguments: &Map<String, Value>,
    name: &str,
    default: impl FnOnce() -> T,
) -> Result<T, Error> {
    match arguments.get(name) {
        Some(value) if !value.is_null() => convert(name, value.clone()),
        _ => Ok(default()),
    }
}

fn convert<T: DeserializeOwned>(name: &str, value: Value) -> Result<T, Error> {
    serde_json::from_value(value)
        .map_err(|e| Error::InvalidArguments(format!("parameter {name:?}: {e}")))
}

/// The JSON form of a default or example value given as an expression.
pub fn default_json<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// One property of an input schema.
pub struct Param {
    pub name: &'static str,
    pub schema: Value,
    pub required: bool,
}

/// The schema of one parameter of type `T`.
pub fn param<T: ToolSchema>(
    name: &'static str,
    description: Option<&str>,
    default: Option<Value>,
    example: Option<Value>,
    schema_type: Option<&str>,
) -> Param {
    let mut schema = match schema_type {
        Some(ty) => json!({ "type": ty }),
        None => T::schema(),
    };
    if let Value::Object(map) = &mut schema {
        if let Some(description) = description {
            map.insert("description".into(), description.into());
        }
        if let Some(default) = &default {
            map.insert("default".into(), default.clone());
        }
        if let Some(example) = example {
            map.insert("examples".into(), Value::Array(vec![example]));
        }
    }
    Param {
        name,
        schema,
        required: default.is_none() && !T::OPTIONAL,
    }
}

/// The input schema of a tool: an object of its parameters, in order.
pub fn input_schema(params: Vec<Param>) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for p in params {
        if p.required {
            required.push(Value::String(p.name.into()));
        }
        properties.insert(p.name.into(), p.schema);
    }
    json!({"type": "object", "properties": properties, "required": required})
}

/// Parses an output schema that `#[tool]` already checked at compile time.
pub fn explicit_schema(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::Null)
}

/// What a tool function may return (besides `Result<T, E>` of it).
#[diagnostic::on_unimplemented(
    message = "a tool cannot return `{Self}`",
    label = "this return type has no JSON Schema",
    note = "return a type from airlock's type table (`ToolSchema` + `Serialize`), `()`, or `airlock_sdk::Output`, or a `Result` of one"
)]
pub trait IntoToolOutput {
    /// The output schema advertised for this return type.
    fn output_schema() -> Option<Value>;
    /// Converts the returned value. With `explicit_schema` (the author
    /// declared `output_schema`), the value is the structured result as is.
    fn into_output(self, explicit_schema: bool) -> Result<Output, Error>;
}

fn is_object_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("object")
}

/// The output schema of a non-object result, sent as `{"result": value}`;
/// `x-airlock-wrapped` tells the runtime (and `/rpc`) that the tool's own
/// value is the `result` member.
fn wrapped(schema: Value, required: bool) -> Value {
    let required: Vec<&str> = if required { vec!["result"] } else { vec![] };
    json!({
        "type": "object",
        "properties": {"result": schema},
        "required": required,
        "x-airlock-wrapped": true,
    })
}

/// Removes `null` members that the schema does not require (an `Option`
/// field that is `None`), so a result matches its own schema.
fn prune_nulls(schema: &Value, value: &mut Value) {
    match value {
        Value::Object(map) => {
            let Some(props) = schema.get("properties").and_then(Value::as_object) else {
                if let Some(s) = schema.get("additionalProperties") {
                    map.values_mut().for_each(|v| prune_nulls(s, v));
                }
                return;
            };
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            map.retain(|k, v| {
                !v.is_null() || !props.contains_key(k) || required.contains(&k.as_str())
            });
            for (k, v) in map.iter_mut() {
                if let Some(s) = props.get(k) {
                    prune_nulls(s, v);
                }
            }
        }
        Value::Array(items) => {
            if let Some(s) = schema.get("items") {
                items.iter_mut().for_each(|v| prune_nulls(s, v));
            }
        }
        _ => {}
    }
}

impl<T: ToolSchema + Serialize> IntoToolOutput for T {
    fn output_schema() -> Option<Value> {
        let schema = T::schema();
        Some(if is_object_schema(&schema) && !T::OPTIONAL {
            schema
        } else {
            wrapped(schema, !T::OPTIONAL)
        })
    }

    fn into_output(self, explicit_schema: bool) -> Result<Output, Error> {
        let mut value = serde_json::to_value(&self)
            .map_err(|e| Error::Failed(format!("the result cannot be serialized: {e}")))?;
        let schema = T::schema();
        if explicit_schema {
            return Ok(Output::structured(value));
        }
        prune_nulls(&schema, &mut value);
        if is_object_schema(&schema) && !T::OPTIONAL {
            return Ok(Output::structured(value));
        }
        let mut output = Output::new();
        if let Value::String(text) = &value {
            output = output.with_text(text.clone());
        }
        Ok(output.with_structured(if value.is_null() {
            json!({})
        } else {
            json!({ "result": value })
        }))
    }
}

impl IntoToolOutput for Output {
    fn output_schema() -> Option<Value> {
        None
    }

    fn into_output(self, _explicit_schema: bool) -> Result<Output, Error> {
        Ok(self)
    }
}

impl IntoToolOutput for () {
    fn output_schema() -> Option<Value> {
        Some(wrapped(json!({"type": "boolean"}), true))
    }

    fn into_output(self, _explicit_schema: bool) -> Result<Output, Error> {
        Ok(Output::structured(json!({"result": true})))
    }
}

/// Holds the error of a `Result` so that the generated code can pick how it
/// reaches the client ([`Error`] as it is, anything else as `failed`).
pub struct ErrorWrap<E>(pub E);

/// Picked for `airlock_sdk::Error`.
pub trait ViaToolError {
    fn to_tool_error(&self) -> Error;
}

impl ViaToolError for ErrorWrap<Error> {
    fn to_tool_error(&self) -> Error {
        self.0.clone()
    }
}

/// Picked for any other error that implements `Display`.
pub trait ViaDisplay {
    fn to_tool_error(&self) -> Error;
}

impl<E: Display> ViaDisplay for &ErrorWrap<E> {
    fn to_tool_error(&self) -> Error {
        Error::Failed(self.0.to_string())
    }
}

/// Adds `description` to a schema.
pub fn with_description(mut schema: Value, description: Option<&str>) -> Value {
    if let (Value::Object(map), Some(description)) = (&mut schema, description) {
        map.insert("description".into(), description.into());
    }
    schema
}

/// The property of a struct field of type `T` (for `#[derive(ToolSchema)]`).
pub fn field<T: ToolSchema>(
    name: &'static str,
    description: Option<&str>,
    has_default: bool,
) -> Param {
    Param {
        name,
        schema: with_description(T::schema(), description),
        required: !has_default && !T::OPTIONAL,
    }
}

/// The schema of a struct (for `#[derive(ToolSchema)]`).
pub fn object_schema(
    description: Option<&str>,
    fields: Vec<Param>,
    deny_unknown_fields: bool,
) -> Value {
    let mut schema = with_description(input_schema(fields), description);
    if let (true, Value::Object(map)) = (deny_unknown_fields, &mut schema) {
        map.insert("additionalProperties".into(), Value::Bool(false));
    }
    schema
}

/// The schema of a unit-only enum (for `#[derive(ToolSchema)]`).
pub fn enum_schema(description: Option<&str>, variants: &[&str]) -> Value {
    with_description(json!({"type": "string", "enum": variants}), description)
}

/// Checks, when the tool is described, that a parameter's default converts
/// to the parameter's type: a default that does not is a programming error
/// and stops `describe` with a message naming the parameter.
pub fn checked_default<T: DeserializeOwned>(name: &str, default: Value) -> Value {
    if let Err(e) = serde_json::from_value::<T>(default.clone()) {
        panic!("the default {default} of parameter {name:?} does not fit its type: {e}");
    }
    default
}

/// Checks, when the tool is described, that a parameter's example converts
/// to the parameter's type, like [`checked_default`].
pub fn checked_example<T: DeserializeOwned>(name: &str, example: Value) -> Value {
    if let Err(e) = serde_json::from_value::<T>(example.clone()) {
        panic!("the example {example} of parameter {name:?} does not fit its type: {e}");
    }
    example
}

/// A declaration's `_meta`: the JSON object `meta` (checked at compile time)
/// with `{"ui": {"resourceUri": ui}}` merged in.
pub fn meta(meta: Option<&str>, ui: Option<&str>) -> Value {
    let mut value = meta
        .and_then(|m| serde_json::from_str(m).ok())
        .unwrap_or_else(|| json!({}));
    if let (Some(uri), Value::Object(map)) = (ui, &mut value) {
        let entry = map.entry("ui").or_insert_with(|| json!({}));
        if let Value::Object(ui_map) = entry {
            ui_map.insert("resourceUri".into(), uri.into());
        }
    }
    value
}

/// Reads template variable `name` and converts it (`FromStr`); a value that
/// does not convert names no resource of the template.
pub fn template_var<T: std::str::FromStr>(
    variables: &[(String, String)],
    name: &str,
) -> Result<T, crate::ReadError>
where
    T::Err: Display,
{
    let value = variables
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
        .ok_or_else(|| crate::ReadError::NotFound(format!("no value for {{{name}}}")))?;
    value
        .parse()
        .map_err(|e| crate::ReadError::NotFound(format!("{{{name}}} = {value:?}: {e}")))
}

/// Reads prompt argument `name` (required) and converts it (`FromStr`).
pub fn prompt_arg<T: std::str::FromStr>(
    arguments: &[(String, String)],
    name: &str,
) -> Result<T, Error>
where
    T::Err: Display,
{
    prompt_arg_opt(arguments, name)?
        .ok_or_else(|| Error::InvalidArguments(format!("missing required argument {name:?}")))
}

/// Reads prompt argument `name` (optional) and converts it (`FromStr`).
pub fn prompt_arg_opt<T: std::str::FromStr>(
    arguments: &[(String, String)],
    name: &str,
) -> Result<Option<T>, Error>
where
    T::Err: Display,
{
    match arguments.iter().find(|(n, _)| n == name) {
        None => Ok(None),
        Some((_, value)) => value
            .parse()
            .map(Some)
            .map_err(|e| Error::InvalidArguments(format!("argument {name:?}: {e}"))),
    }
}

/// A parameter mirrored into the `Mcp-Param-{header}` HTTP header
/// (`#[arg(header = "...")]`, `x-mcp-header` in the schema).
pub fn mirrored(mut param: Param, header: &str) -> Param {
    if let Value::Object(map) = &mut param.schema {
        map.insert("x-mcp-header".into(), header.into());
    }
    param
}
