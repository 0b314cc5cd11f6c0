//! Revision 2026-07-28, stateless: every result says what it is
//! (`resultType`) and who answered, lists carry caching hints, a
//! destructive call is confirmed and a tool asks its client through multi
//! round-trips (`input_required`, a signed `requestState`), an unknown
//! resource is -32602 (SEP-2164), tasks are an extension the request
//! declares (the server decides what runs as one), and a capability the
//! request did not declare is -32021.

use serde_json::{Map, Value, json};

use super::wire::{AskingBy, Confirming, Wire};
use crate::protocol::jsonrpc::{self, ErrorObject};
use crate::protocol::mcp::model::tools::TaskAsked;
use crate::tool::TaskSupport;

/// The `_meta` key of the client's capabilities.
pub const META_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// The tasks extension's identifier.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// The request needs a client capability it did not declare.
pub const MISSING_CAPABILITY: i64 = -32021;
/// The `_meta` key of the server's identity on every result.
const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// -32021: the request needs a capability (`required`) it did not declare.
pub fn missing_capability(message: String, required: Value) -> ErrorObject {
    ErrorObject::new(MISSING_CAPABILITY, message)
        .with_data(json!({ "requiredCapabilities": required }))
}

/// Revision 2026-07-28.
pub struct Stateless;

pub static STATELESS: Stateless = Stateless;

impl Wire for Stateless {
    fn stateless(&self) -> bool {
        true
    }

    fn decorate(&self, mut result: Value) -> Value {
        if let Some(map) = result.as_object_mut() {
            map.entry("resultType").or_insert_with(|| "complete".into());
            let meta = map.entry("_meta").or_insert_with(|| json!({}));
            if let Some(meta) = meta.as_object_mut() {
                meta.insert(
                    META_SERVER_INFO.into(),
                    json!({ "name": "airlock", "version": env!("CARGO_PKG_VERSION") }),
                );
            }
        }
        result
    }

    fn cache_hints(&self, result: &mut Map<String, Value>, ttl_ms: u64, private: bool) {
        result.insert("ttlMs".into(), ttl_ms.into());
        let scope = if private { "private" } else { "public" };
        result.insert("cacheScope".into(), scope.into());
    }

    fn resource_not_found(&self) -> i64 {
        jsonrpc::INVALID_PARAMS
    }

    /// The server decides: with the tasks extension a tool that supports
    /// tasks runs as one; without it, an optional one runs at once and a
    /// required one cannot run. `task` is not a param of this revision.
    fn task_of_call(
        &self,
        tool: &str,
        support: TaskSupport,
        _asked: Option<TaskAsked>,
        client_tasks: bool,
    ) -> Result<Option<Option<u64>>, ErrorObject> {
        match (support, client_tasks) {
            (TaskSupport::Required, false) => Err(missing_capability(
                format!(
                    "{tool} runs only as a task: declare the {TASKS_EXTENSION} extension in \
                     _meta[\"{META_CAPABILITIES}\"].extensions"
                ),
                json!({ "extensions": { TASKS_EXTENSION: {} } }),
            )),
            (TaskSupport::Required | TaskSupport::Optional, true) => Ok(Some(None)),
            _ => Ok(None),
        }
    }

    fn tasks_on(&self, client_tasks: bool) -> bool {
        client_tasks
    }

    fn core_tasks(&self) -> bool {
        false
    }

    fn confirming(&self) -> Confirming {
        Confirming::ByRoundTrip
    }

    fn asking_by(&self) -> AskingBy {
        AskingBy::Rounds
    }

    fn elicitation_has_mode(&self) -> bool {
        true
    }

    /// The task itself, as a result of type `task` (no outcome yet).
    fn created_task(&self, mut task: Value) -> Value {
        if let Some(map) = task.as_object_mut() {
            map.remove("result");
            map.remove("error");
            map.insert("resultType".into(), "task".into());
        }
        task
    }

    fn cancelled_task(&self, _task: Value) -> Value {
        json!({})
    }

    fn cancelling_an_ended_task_fails(&self) -> bool {
        false
    }

    /// Subscriptions go through `subscriptions/listen`; tasks are an
    /// extension.
    fn announce(&self, capabilities: &mut Map<String, Value>, _reached: &dyn Fn(&str) -> bool) {
        if let Some(resources) = capabilities
            .get_mut("resources")
            .and_then(Value::as_object_mut)
        {
            resources.insert("subscribe".into(), true.into());
        }
        capabilities.insert("extensions".into(), json!({ TASKS_EXTENSION: {} }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_are_decorated_with_their_type_and_server() {
        let r = STATELESS.decorate(json!({"tools": []}));
        assert_eq!(r["resultType"], "complete");
        assert_eq!(r["_meta"][META_SERVER_INFO]["name"], "airlock");
        let r = STATELESS.decorate(json!({"resultType": "task"}));
        assert_eq!(r["resultType"], "task");
    }
}
