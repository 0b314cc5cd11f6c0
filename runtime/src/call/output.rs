//! What a tool's guest hands back, checked before anyone sees it: its
//! structured result must match the tool's own output schema.

use serde_json::Value;

use super::error::CallError;
use crate::catalog::Tool;
use crate::sandbox::{RawOutput, RunError};
use crate::tool::{Content, Output};

/// Checks the result of a call of `tool`.
pub(super) fn check(tool: &Tool, raw: RawOutput) -> Result<Output, CallError> {
    finish(tool, raw.content, raw.structured)
}

/// Checks structured output against the tool's own output schema and adds
/// the JSON as text when the tool gave no content.
fn finish(
    tool: &Tool,
    mut content: Vec<Content>,
    structured: Option<Value>,
) -> Result<Output, CallError> {
    if let Some(schema) = &tool.output {
        let Some(value) = &structured else {
            return Err(RunError::BadOutput(
                "the tool declares an output schema but returned no structured output".into(),
            )
            .into());
        };
        schema.check(value).map_err(|why| {
            RunError::BadOutput(format!("it does not match the tool's output schema: {why}"))
        })?;
    }
    if content.is_empty()
        && let Some(value) = &structured
    {
        content.push(Content::Text(crate::json::to_string(value)));
    }
    Ok(Output {
        content,
        structured,
    })
}
