//! What a guest hands back, checked before anyone sees it: its captured
//! output goes to the operator's log (escaped, marked as the tool's), its
//! structured result must match the tool's own output schema.

use serde_json::Value;

use super::error::CallError;
use crate::catalog::Tool;
use crate::logtext::GuestText;
use crate::policy::Grant;
use crate::sandbox::{RawOutput, RunError, format_size};
use crate::tool::{Content, Output};

/// Logs what call `id` of `tool` printed and checks its result.
pub(super) fn check(
    tool: &Tool,
    id: u64,
    grant: &Grant,
    raw: RawOutput,
) -> Result<Output, CallError> {
    let (log, dropped) = &raw.guest_log;
    // One log line per line the guest printed, escaped and marked as the
    // tool's, so that no guest text reads as the runtime's own line.
    for line in log.trim_end().lines() {
        tracing::info!(tool = %tool.info.name, call = id, "guest: {}", GuestText(line));
    }
    if *dropped > 0 {
        tracing::info!(
            tool = %tool.info.name,
            call = id,
            "guest output: {} more dropped (log limit {})",
            format_size(*dropped),
            format_size(grant.limits.log)
        );
    }
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
