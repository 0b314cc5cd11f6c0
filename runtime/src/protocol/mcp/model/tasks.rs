//! Params of `tasks/get`, `tasks/cancel`, `tasks/result` (a task by id)
//! and `tasks/update` (2026-07-28: the responses to a task's
//! `inputRequests`); `tasks/list` takes a [`super::ListParams`]. The
//! `Task` object both revisions answer ([`TaskObject`]); how a revision
//! wraps it when a task is made or cancelled is its `Wire`'s.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use super::{Params, invalid};
use crate::protocol::jsonrpc::ErrorObject;

/// A task by its id.
#[derive(Debug, Deserialize)]
pub struct TaskParams {
    #[serde(rename = "taskId")]
    pub task_id: String,
}
impl Params for TaskParams {
    const REQUIRED: &'static [(&'static str, &'static str)] = &[("taskId", "a string")];
}

/// `tasks/update`.
#[derive(Debug, Deserialize)]
pub struct UpdateParams {
    #[serde(rename = "taskId")]
    pub task_id: String,
    #[serde(rename = "inputResponses", default, deserialize_with = "responses")]
    pub input_responses: Option<Map<String, Value>>,
}
impl Params for UpdateParams {
    const REQUIRED: &'static [(&'static str, &'static str)] = &[("taskId", "a string")];
}

fn responses<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Map<String, Value>>, D::Error> {
    match Value::deserialize(d)? {
        Value::Null => Ok(None),
        Value::Object(map) => Ok(Some(map)),
        _ => Err(invalid(
            "inputResponses",
            "inputResponses must be an object: the responses by the keys of the task's \
             inputRequests",
        )),
    }
}

/// A task as MCP shows it (`Task`): 2025-11-25's, or the 2026-07-28
/// extension's (its lifetime named otherwise, what it waits for and, once
/// it ended, its result or error).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskObject<'a> {
    pub task_id: &'a str,
    pub status: &'static str,
    pub created_at: String,
    pub last_updated_at: String,
    #[serde(flatten)]
    pub lifetime: Lifetime,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_message: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<&'a ErrorObject>,
}

/// How long a task is kept and how often to poll it, in milliseconds, as
/// each revision names them.
#[derive(Debug, Serialize)]
#[serde(untagged, rename_all_fields = "camelCase")]
pub enum Lifetime {
    /// 2025-11-25: `ttl`, `pollInterval`.
    Sessions { ttl: u64, poll_interval: u64 },
    /// 2026-07-28: `ttlMs`, `pollIntervalMs`.
    Stateless { ttl_ms: u64, poll_interval_ms: u64 },
}

/// What ties a message or a result to its task, under `_meta`'s
/// `io.modelcontextprotocol/related-task`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RelatedTask<'a> {
    pub task_id: &'a str,
}
