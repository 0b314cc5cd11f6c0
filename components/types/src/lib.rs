//! `types`: one tool per row of airlock's type table, each echoing what it
//! received as structured output, so the table is tested end to end (schema
//! advertised, arguments checked and coerced by the runtime, value decoded
//! by the SDK, result encoded and validated).

use airlock_sdk::{
    EmbeddedResource, Error, Output, ResourceBody, ResourceLink, Timestamp, ToolSchema, tool,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Echoes an unsigned 8-bit integer (0 to 255).
#[tool(read_only, idempotent)]
pub fn echo_u8(value: u8) -> u8 {
    value
}

/// Echoes an unsigned 32-bit integer.
#[tool(read_only, idempotent)]
pub fn echo_u32(value: u32) -> u32 {
    value
}

/// Echoes an unsigned 64-bit integer.
#[tool(read_only, idempotent)]
pub fn echo_u64(value: u64) -> u64 {
    value
}

/// Echoes a signed 32-bit integer.
#[tool(read_only, idempotent)]
pub fn echo_i32(value: i32) -> i32 {
    value
}

/// Echoes a signed 64-bit integer.
#[tool(read_only, idempotent)]
pub fn echo_i64(value: i64) -> i64 {
    value
}

/// Echoes a 32-bit float.
#[tool(read_only, idempotent)]
pub fn echo_f32(value: f32) -> f32 {
    value
}

/// Echoes a 64-bit float.
#[tool(read_only, idempotent)]
pub fn echo_f64(value: f64) -> f64 {
    value
}

/// Echoes a boolean.
#[tool(read_only, idempotent)]
pub fn echo_bool(value: bool) -> bool {
    value
}

/// Echoes a string.
#[tool(read_only, idempotent)]
pub fn echo_string(value: String) -> String {
    value
}

/// Echoes a string received as `&str`.
#[tool(read_only, idempotent)]
pub fn echo_str(value: &str) -> String {
    value.to_owned()
}

/// Echoes an RFC 3339 date-time, with the seconds since the Unix epoch it
/// stands for.
#[tool(read_only, idempotent)]
pub fn echo_timestamp(value: Timestamp) -> TimestampEcho {
    TimestampEcho {
        unix_seconds: value.unix_seconds(),
        value,
    }
}

/// What `echo_timestamp` returns.
#[derive(ToolSchema, Serialize)]
pub struct TimestampEcho {
    /// The date-time as received.
    pub value: Timestamp,
    /// Seconds since 1970-01-01T00:00:00Z.
    pub unix_seconds: i64,
}

/// A colour (a unit-only enum: a string with `enum`).
#[derive(ToolSchema, Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Colour {
    /// Red.
    Red,
    /// Green.
    Green,
    /// Sky blue.
    SkyBlue,
}

/// Echoes a colour from a fixed list.
#[tool(read_only, idempotent)]
pub fn echo_enum(value: Colour) -> Colour {
    value
}

/// Echoes any JSON value.
#[tool(read_only, idempotent)]
pub fn echo_json(value: Value) -> Value {
    value
}

/// A postal address (a struct: an object).
#[derive(ToolSchema, Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Address {
    /// Street and number.
    pub street: String,
    /// Postal code.
    pub postcode: String,
    /// City.
    pub city: String,
    /// ISO 3166 country code, when known.
    pub country: Option<String>,
    /// Delivery notes.
    pub notes: Vec<String>,
}

/// Echoes a structured address (the object is the result as it is).
#[tool(read_only, idempotent)]
pub fn echo_struct(value: Address) -> Address {
    value
}

/// Echoes a list of signed 32-bit integers.
#[tool(read_only, idempotent)]
pub fn echo_vec_i32(values: Vec<i32>) -> Vec<i32> {
    values
}

/// Echoes an optional string: the result is absent when the argument was.
#[tool(read_only, idempotent)]
pub fn echo_optional(value: Option<String>) -> Option<String> {
    value
}

/// Logs the message and returns nothing (advertised as `{"result": true}`).
#[tool(read_only, idempotent)]
pub fn echo_unit(message: String) {
    airlock_sdk::info!("echo_unit: {message}");
}

/// Echoes a float that is advertised as an integer (`schema_type`).
#[tool(read_only, idempotent)]
pub fn echo_integer_override(
    #[arg(schema_type = "integer", description = "A whole number")] value: f64,
) -> f64 {
    value
}

/// What `echo_defaults` received.
#[derive(ToolSchema, Serialize)]
pub struct Defaults {
    /// The count.
    pub count: u16,
    /// The ratio.
    pub ratio: f64,
    /// The label.
    pub label: String,
    /// The flag.
    pub flag: bool,
    /// The colour.
    pub colour: Colour,
}

/// Echoes parameters that all have defaults, so a call without arguments
/// shows the defaults reaching the tool.
#[tool(read_only, idempotent)]
pub fn echo_defaults(
    #[arg(default = 7)] count: u16,
    #[arg(default = 0.5)] ratio: f64,
    #[arg(default = "plain")] label: String,
    #[arg(default = false)] flag: bool,
    #[arg(default = Colour::Green)] colour: Colour,
) -> Defaults {
    Defaults {
        count,
        ratio,
        label,
        flag,
        colour,
    }
}

/// Returns one content block of each kind (text, image, audio, embedded
/// resource, resource link), without structured output.
#[tool(read_only, idempotent)]
pub fn content_blocks() -> Output {
    Output::text("one block of each kind")
        .with_image(b"\x89PNG\r\n\x1a\n".to_vec(), "image/png")
        .with_audio(b"RIFF\0\0\0\0WAVE".to_vec(), "audio/wav")
        .with_resource(EmbeddedResource {
            uri: "memo://types/note.txt".into(),
            mime_type: Some("text/plain".into()),
            body: ResourceBody::Text("an embedded note".into()),
        })
        .with_link(ResourceLink {
            title: Some("Example".into()),
            mime_type: Some("text/html".into()),
            ..ResourceLink::new("https://example.com/", "example")
        })
}

/// Which error `fail` returns.
#[derive(ToolSchema, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// `invalid-arguments`.
    InvalidArguments,
    /// `failed`.
    Failed,
}

/// Always fails, with the given kind of error and message.
#[tool(read_only, idempotent)]
pub fn fail(kind: ErrorKind, message: String) -> Result<bool, Error> {
    Err(match kind {
        ErrorKind::InvalidArguments => Error::InvalidArguments(message),
        ErrorKind::Failed => Error::Failed(message),
    })
}

airlock_sdk::export_tools!(
    echo_u8,
    echo_u32,
    echo_u64,
    echo_i32,
    echo_i64,
    echo_f32,
    echo_f64,
    echo_bool,
    echo_string,
    echo_str,
    echo_timestamp,
    echo_enum,
    echo_json,
    echo_struct,
    echo_vec_i32,
    echo_optional,
    echo_unit,
    echo_integer_override,
    echo_defaults,
    content_blocks,
    fail,
);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn structured(name: &str, args: Value) -> Value {
        TOOLS
            .call(name, &args.to_string())
            .unwrap()
            .structured
            .unwrap()
    }

    #[test]
    fn echoes_every_row() {
        assert_eq!(
            structured("echo_u8", json!({"value": 255})),
            json!({"result": 255})
        );
        assert_eq!(
            structured("echo_i64", json!({"value": i64::MIN})),
            json!({"result": i64::MIN})
        );
        assert_eq!(
            structured("echo_enum", json!({"value": "sky_blue"})),
            json!({"result": "sky_blue"})
        );
        assert_eq!(structured("echo_optional", json!({})), json!({}));
        assert_eq!(
            structured("echo_unit", json!({"message": "hi"})),
            json!({"result": true})
        );
        assert_eq!(
            structured("echo_timestamp", json!({"value": "1970-01-01T00:01:00Z"})),
            json!({"value": "1970-01-01T00:01:00Z", "unix_seconds": 60})
        );
        let address =
            json!({"street": "Main 1", "postcode": "1000", "city": "Brussels", "notes": []});
        assert_eq!(
            structured("echo_struct", json!({"value": address})),
            address
        );
        assert_eq!(
            structured("echo_defaults", json!({})),
            json!({"count": 7, "ratio": 0.5, "label": "plain", "flag": false, "colour": "green"})
        );
    }

    #[test]
    fn refuses_out_of_range_values() {
        let err = TOOLS.call("echo_u8", r#"{"value": 256}"#).unwrap_err();
        assert!(err.message().starts_with("parameter \"value\""), "{err}");
        let err = TOOLS
            .call("echo_timestamp", r#"{"value": "soon"}"#)
            .unwrap_err();
        assert!(err.message().contains("RFC 3339"), "{err}");
    }

    #[test]
    fn every_tool_has_an_object_output_schema_or_none() {
        for tool in TOOLS.describe() {
            match (&tool.output_schema, tool.name.as_str()) {
                (None, "content_blocks") => {}
                (Some(s), _) => assert_eq!(s["type"], "object", "{}", tool.name),
                (None, name) => panic!("{name} has no output schema"),
            }
        }
    }
}
