//! `conformance`: the tools the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`) calls when it tests a server, plus a
//! few that airlock's own client tests use (a task that can be cancelled).
//!
//! Each tool returns exactly what the suite's scenario describes (content
//! blocks, log messages, progress reports, a tool error, a JSON Schema 2020-12
//! input schema), so `cargo xtask test` can run the suite against `airlock
//! serve target/test-components/conformance.wasm`. The tests in
//! `tests/clients/` assert the same calls more strictly than the suite does.
//! A test fixture, not an example: it lives with the test components, so
//! `cargo xtask serve` (the examples) does not show its `test_*` tools.

use std::time::Duration;

pub mod asks;
pub mod offers;

use airlock_sdk::serde_json::{Map, Value, json};
use airlock_sdk::{
    EmbeddedResource, Error, Hints, Level, Output, ResourceBody, TaskSupport, Tool, ToolInfo, tool,
};

/// A 1×1 red pixel.
pub const RED_PIXEL_PNG: &[u8] = include_bytes!("../data/red.png");
/// Ten milliseconds of 8 kHz mono silence.
pub const SILENCE_WAV: &[u8] = include_bytes!("../data/silence.wav");

/// The text of `test_simple_text`.
pub const SIMPLE_TEXT: &str = "This is a simple text response for testing.";
/// The message of `test_error_handling`.
pub const ERROR_TEXT: &str = "This tool intentionally returns an error for testing";

fn pause() {
    std::thread::sleep(Duration::from_millis(50));
}

/// Returns one text block: "This is a simple text response for testing."
#[tool(read_only, idempotent, title = "Simple text")]
pub fn test_simple_text() -> Output {
    Output::text(SIMPLE_TEXT)
}

/// Returns one image block: a 1×1 red PNG.
#[tool(read_only, idempotent, title = "Image content")]
pub fn test_image_content() -> Output {
    Output::new().with_image(RED_PIXEL_PNG.to_vec(), "image/png")
}

/// Returns one audio block: a short WAV of silence.
#[tool(read_only, idempotent, title = "Audio content")]
pub fn test_audio_content() -> Output {
    Output::new().with_audio(SILENCE_WAV.to_vec(), "audio/wav")
}

/// Returns one embedded text resource, `test://embedded-resource`.
#[tool(read_only, idempotent, title = "Embedded resource")]
pub fn test_embedded_resource() -> Output {
    Output::new().with_resource(EmbeddedResource {
        uri: "test://embedded-resource".into(),
        mime_type: Some("text/plain".into()),
        body: ResourceBody::Text("This is an embedded resource content.".into()),
    })
}

/// Returns a text block, an image block and an embedded JSON resource, in
/// that order.
#[tool(read_only, idempotent, title = "Multiple content types")]
pub fn test_multiple_content_types() -> Output {
    Output::text("Multiple content types test:")
        .with_image(RED_PIXEL_PNG.to_vec(), "image/png")
        .with_resource(EmbeddedResource {
            uri: "test://mixed-content-resource".into(),
            mime_type: Some("application/json".into()),
            body: ResourceBody::Text(r#"{"test":"data","value":123}"#.into()),
        })
}

/// Logs three messages at info level, 50 ms apart, then says it is done.
#[tool(read_only, idempotent, title = "Tool with logging")]
pub fn test_tool_with_logging() -> Output {
    airlock_sdk::log(Level::Info, "Tool execution started");
    pause();
    airlock_sdk::log(Level::Info, "Tool processing data");
    pause();
    airlock_sdk::log(Level::Info, "Tool execution completed");
    Output::text("Tool with logging executed successfully")
}

/// Logs one message at info level (for the stateless revision's check that
/// nothing is logged to a client that did not ask for a level).
#[tool(read_only, idempotent, title = "Logging tool")]
pub fn test_logging_tool() -> Output {
    airlock_sdk::log(Level::Info, "test_logging_tool ran");
    Output::text("Logged one message at info level")
}

/// Reports progress 0, 50 and 100 of 100, 50 ms apart.
#[tool(read_only, idempotent, title = "Tool with progress")]
pub fn test_tool_with_progress() -> Output {
    airlock_sdk::progress(0.0, Some(100.0), Some("started"));
    pause();
    airlock_sdk::progress(50.0, Some(100.0), Some("half way"));
    pause();
    airlock_sdk::progress(100.0, Some(100.0), Some("done"));
    Output::text("Tool with progress executed successfully")
}

/// Always fails with "This tool intentionally returns an error for testing".
#[tool(read_only, idempotent, title = "Error handling")]
pub fn test_error_handling() -> Result<Output, Error> {
    Err(Error::Failed(ERROR_TEXT.into()))
}

/// Counts the seconds it is given (reporting progress every 100 ms) and
/// stops early when cancelled. Must run as a task.
#[tool(read_only, idempotent, title = "Long task", task_support = "required")]
pub fn test_long_task(
    #[arg(default = 3, description = "How many seconds to count (1 to 60)")] seconds: u32,
) -> Result<String, Error> {
    if !(1..=60).contains(&seconds) {
        return Err(Error::invalid_arguments("seconds must be between 1 and 60"));
    }
    let ticks = seconds * 10;
    for tick in 0..ticks {
        if airlock_sdk::cancelled() {
            return Err(Error::Failed(format!("cancelled after {tick} ticks")));
        }
        airlock_sdk::progress(f64::from(tick), Some(f64::from(ticks)), None);
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(format!("counted {seconds} seconds"))
}

/// `json_schema_2020_12_tool`: a tool whose input schema uses the JSON
/// Schema 2020-12 vocabulary (`$schema`, `$defs` with `$anchor`, `$ref`,
/// `allOf`/`anyOf`, `if`/`then`/`else`, `additionalProperties`). The `#[tool]`
/// macro derives schemas from Rust types, so this one implements [`Tool`]
/// by hand to declare the schema as it is.
#[allow(non_camel_case_types)]
pub struct json_schema_2020_12_tool;

impl json_schema_2020_12_tool {
    /// The input schema as the conformance suite expects it, plus an
    /// `examples` annotation on each property (which the suite does not
    /// look at): with them airlock's OpenRPC document has an example call
    /// (by position, so every property up to `phone` needs a value; the
    /// empty call fails `anyOf`), which `@open-rpc/test-coverage` makes.
    pub fn input_schema() -> Value {
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {
                "address": {
                    "$anchor": "addressDef",
                    "type": "object",
                    "properties": {
                        "street": {"type": "string"},
                        "city": {"type": "string"}
                    }
                }
            },
            "properties": {
                "name": {"type": "string", "examples": ["Ada Lovelace"]},
                "address": {
                    "$ref": "#/$defs/address",
                    "examples": [{"street": "12 St James's Square", "city": "London"}]
                },
                "contactMethod": {"type": "string", "enum": ["phone", "email"], "examples": ["phone"]},
                "phone": {"type": "string", "examples": ["+44 20 7946 0958"]},
                "email": {"type": "string", "examples": ["ada@example.com"]}
            },
            "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
            "if": {
                "properties": {"contactMethod": {"const": "phone"}},
                "required": ["contactMethod"]
            },
            "then": {"required": ["phone"]},
            "else": {"required": ["email"]},
            "additionalProperties": false
        })
    }
}

impl Tool for json_schema_2020_12_tool {
    const NAME: &'static str = "json_schema_2020_12_tool";

    fn info() -> ToolInfo {
        ToolInfo {
            name: Self::NAME.into(),
            title: Some("JSON Schema 2020-12".into()),
            description: "Tool with JSON Schema 2020-12 features".into(),
            input_schema: Self::input_schema(),
            output_schema: None,
            hints: Hints {
                read_only: true,
                idempotent: true,
                ..Hints::default()
            },
            icons: Vec::new(),
            task_support: TaskSupport::Forbidden,
        }
    }

    fn call(arguments: &Map<String, Value>) -> Result<Output, Error> {
        Ok(Output::text(format!(
            "Received: {}",
            Value::Object(arguments.clone())
        )))
    }
}

/// Echoes its arguments. A client mirrors `region` and `priority` into the
/// `Mcp-Param-Region` and `Mcp-Param-Priority` HTTP headers (revision
/// 2026-07-28's `x-mcp-header`), which airlock checks against the body
/// (`http-custom-header-server-validation`).
#[tool(read_only, idempotent, title = "Echo mirrored headers")]
pub fn echo_region(
    #[arg(
        header = "Region",
        description = "A region, also sent as Mcp-Param-Region",
        example = "us-west1"
    )]
    region: String,
    #[arg(
        header = "Priority",
        description = "A priority, also sent as Mcp-Param-Priority"
    )]
    priority: Option<i64>,
    #[arg(description = "Not mirrored")] query: Option<String>,
) -> String {
    format!("region={region} priority={priority:?} query={query:?}")
}

airlock_sdk::export_tools!(
    test_simple_text,
    echo_region,
    test_image_content,
    test_audio_content,
    test_embedded_resource,
    test_multiple_content_types,
    test_tool_with_logging,
    test_logging_tool,
    test_tool_with_progress,
    test_error_handling,
    test_long_task,
    json_schema_2020_12_tool,
    offers::test_update_watched_resource,
    offers::static_text,
    offers::static_binary,
    offers::watched_resource,
    offers::template_data,
    offers::test_simple_prompt,
    offers::test_prompt_with_arguments,
    offers::test_prompt_with_embedded_resource,
    offers::test_prompt_with_image,
    offers::test_input_required_result_prompt,
    offers::complete_arg1,
    offers::complete_template_id,
    asks::test_sampling,
    asks::test_elicitation,
    asks::test_elicitation_sep1034_defaults,
    asks::test_elicitation_sep1330_enums,
    asks::test_input_required_result_elicitation,
    asks::test_input_required_result_sampling,
    asks::test_input_required_result_list_roots,
    asks::test_input_required_result_request_state,
    asks::test_input_required_result_multiple_inputs,
    asks::test_input_required_result_multi_round,
    asks::test_input_required_result_tampered_state,
    asks::test_input_required_result_capabilities,
    asks::test_missing_capability,
    asks::test_streaming_elicitation,
    asks::greet,
    asks::slow_compute,
    asks::failing_job,
    asks::protocol_error_job,
    asks::confirm_delete,
    asks::multi_input,
    asks::test_tool_with_task,
);

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_sdk::Content;

    #[test]
    fn media_are_what_they_claim() {
        assert!(RED_PIXEL_PNG.starts_with(b"\x89PNG\r\n\x1a\n"));
        assert!(SILENCE_WAV.starts_with(b"RIFF") && &SILENCE_WAV[8..12] == b"WAVE");
    }

    #[test]
    fn every_tool_is_listed_with_a_description() {
        let tools = TOOLS.describe();
        assert_eq!(tools.len(), 34);
        assert!(tools.iter().all(|t| !t.description.is_empty()));
        let tool = tools.iter().find(|t| t.name == "json_schema_2020_12_tool");
        let schema = tool.map(|t| &t.input_schema);
        assert_eq!(schema, Some(&json_schema_2020_12_tool::input_schema()));
    }

    #[test]
    fn contents_match_the_scenarios() {
        let out = TOOLS.call("test_simple_text", "{}").unwrap();
        assert_eq!(out.content, [Content::Text(SIMPLE_TEXT.into())]);
        let out = TOOLS.call("test_multiple_content_types", "{}").unwrap();
        assert!(matches!(
            out.content.as_slice(),
            [Content::Text(_), Content::Image(_), Content::Embedded(_)]
        ));
        let err = TOOLS.call("test_error_handling", "{}").unwrap_err();
        assert_eq!(err, Error::Failed(ERROR_TEXT.into()));
        let err = TOOLS
            .call("test_long_task", r#"{"seconds": 0}"#)
            .unwrap_err();
        assert!(matches!(err, Error::InvalidArguments(_)));
    }
}
