//! Params of `tasks/get`, `tasks/cancel`, `tasks/result` (a task by id)
//! and `tasks/update` (2026-07-28: the responses to a task's
//! `inputRequests`); `tasks/list` takes a [`super::ListParams`].

use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use super::{Params, invalid};

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
