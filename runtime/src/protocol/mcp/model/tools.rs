//! `tools/call` params (`tools/list` takes a [`super::ListParams`]): the
//! tool, its arguments (moved, never copied), the 2025-11-25 `task` asked
//! for, the progress token, and a 2026-07-28 retry's state and responses.
//! Results: a tool as `tools/list` lists it ([`ListedTool`]) and a call
//! that failed as the model reads it ([`ToolError`]); a call's own result
//! is its [`crate::tool::Output`].

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use super::{Params, RequestMeta, Retry};
use crate::catalog::Tool;
use crate::tool::{Content, ToolInfo};

/// `tools/call`.
#[derive(Debug, Deserialize)]
pub struct CallParams {
    pub name: String,
    /// The tool's arguments; absent: none (`{}`).
    #[serde(default = "no_arguments")]
    pub arguments: Value,
    /// Task augmentation asked (2025-11-25), checked where the call decides
    /// whether it runs as a task (after the tool is known).
    #[serde(default, deserialize_with = "task")]
    pub task: Option<TaskAsked>,
    #[serde(rename = "_meta", default, deserialize_with = "super::request_meta")]
    pub meta: RequestMeta,
    #[serde(flatten)]
    pub retry: Retry,
}
impl Params for CallParams {
    const REQUIRED: &'static [(&'static str, &'static str)] = &[("name", "the tool to call")];
}

fn no_arguments() -> Value {
    Value::Object(Map::new())
}

impl CallParams {
    /// The progress token of `_meta`, if any.
    pub fn progress(&self) -> Option<Value> {
        self.meta.progress_token.clone()
    }
}

/// The `task` of a `tools/call`: its lifetime (`ttl` in milliseconds;
/// `None`: the default), or malformed (said so when it matters).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskAsked {
    Ttl(Option<u64>),
    Malformed,
}

impl TaskAsked {
    /// Reads a `task` object's `key` (a non-negative number of
    /// milliseconds; fractions and huge values are cut to fit).
    pub fn read(task: &Value, key: &str) -> TaskAsked {
        let Some(map) = task.as_object() else {
            return TaskAsked::Malformed;
        };
        match map.get(key) {
            None | Some(Value::Null) => TaskAsked::Ttl(None),
            Some(value) => match (value.as_u64(), value.as_f64()) {
                (Some(ms), _) => TaskAsked::Ttl(Some(ms)),
                (None, Some(ms)) if ms >= 0.0 => {
                    TaskAsked::Ttl(Some(ms.min(u64::MAX as f64) as u64))
                }
                _ => TaskAsked::Malformed,
            },
        }
    }
}

fn task<'de, D: Deserializer<'de>>(d: D) -> Result<Option<TaskAsked>, D::Error> {
    Ok(Some(TaskAsked::read(&Value::deserialize(d)?, "ttl")))
}

/// A tool as `tools/list` lists it: its MCP `Tool`, with the `_meta` its
/// component's `tool-meta` gives it (an MCP App's `ui.resourceUri`).
#[derive(Serialize)]
pub struct ListedTool<'a> {
    #[serde(flatten)]
    pub tool: &'a ToolInfo,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<&'a Map<String, Value>>,
}

impl<'a> ListedTool<'a> {
    /// `tool` as `tools/list` lists it.
    pub fn of(tool: &'a Tool) -> ListedTool<'a> {
        ListedTool {
            tool: &tool.info,
            meta: tool.component.offers().tool_meta.get(&tool.info.name),
        }
    }
}

/// A `CallToolResult` with `isError: true`: the message, for the model
/// to read and correct itself.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolError {
    content: [Content; 1],
    is_error: bool,
}

impl ToolError {
    pub fn new(message: String) -> ToolError {
        ToolError {
            content: [Content::Text(message)],
            is_error: true,
        }
    }
}
