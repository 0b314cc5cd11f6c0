//! The revisions with sessions (2025-03-26, 2025-06-18, 2025-11-25): a
//! result is answered as it is, a destructive call is confirmed by an
//! elicitation request sent while it waits, a tool asks in band, and — in
//! 2025-11-25 — tasks are in the core protocol (`task` in `tools/call`,
//! the tool's `taskSupport` enforced both ways, status notifications).

use serde_json::{Map, Value, json};

use super::wire::{AskingBy, Confirming, Wire};
use crate::protocol::jsonrpc::{self, ErrorObject};
use crate::protocol::mcp::model::tools::TaskAsked;
use crate::tool::TaskSupport;

/// MCP's "Resource not found" of the revisions with sessions.
pub const RESOURCE_NOT_FOUND: i64 = -32002;

/// A revision with sessions.
pub struct Sessions {
    /// Tasks in the core protocol (2025-11-25).
    tasks: bool,
    /// Elicitation requests carry `mode` (2025-11-25).
    elicitation_mode: bool,
}

/// 2025-03-26 and 2025-06-18.
pub static BEFORE_TASKS: Sessions = Sessions {
    tasks: false,
    elicitation_mode: false,
};

/// 2025-11-25.
pub static WITH_TASKS: Sessions = Sessions {
    tasks: true,
    elicitation_mode: true,
};

/// The error of a call whose `task` disagrees with its tool's `taskSupport`.
fn task_support(message: String) -> ErrorObject {
    ErrorObject::new(jsonrpc::METHOD_NOT_FOUND, message)
}

impl Wire for Sessions {
    fn stateless(&self) -> bool {
        false
    }

    fn decorate(&self, result: Value) -> Value {
        result
    }

    fn cache_hints(&self, _: &mut Map<String, Value>, _: u64, _: bool) {}

    fn resource_not_found(&self) -> i64 {
        RESOURCE_NOT_FOUND
    }

    fn task_of_call(
        &self,
        tool: &str,
        support: TaskSupport,
        asked: Option<TaskAsked>,
        _client_tasks: bool,
    ) -> Result<Option<Option<u64>>, ErrorObject> {
        if !self.tasks {
            return Ok(None);
        }
        match (support, asked) {
            (TaskSupport::Required, None) => Err(task_support(format!(
                "{tool} must be called as a task (its execution.taskSupport is \
                 \"required\"): add \"task\": {{}} to the params"
            ))),
            (TaskSupport::Forbidden, Some(_)) => Err(task_support(format!(
                "{tool} cannot be called as a task (its execution.taskSupport is \
                 \"forbidden\"): call it without \"task\""
            ))),
            (_, Some(TaskAsked::Ttl(ttl))) => Ok(Some(ttl)),
            (_, Some(TaskAsked::Malformed)) => Err(ErrorObject::invalid_param(
                "task",
                "task must be an object with an optional ttl (milliseconds, a non-negative \
                 integer)",
            )),
            (_, None) => Ok(None),
        }
    }

    fn tasks_on(&self, _client_tasks: bool) -> bool {
        self.tasks
    }

    fn core_tasks(&self) -> bool {
        self.tasks
    }

    fn confirming(&self) -> Confirming {
        Confirming::ByElicitation
    }

    fn asking_by(&self) -> AskingBy {
        AskingBy::InBand
    }

    fn elicitation_has_mode(&self) -> bool {
        self.elicitation_mode
    }

    fn created_task(&self, task: Value) -> Value {
        json!({ "task": task })
    }

    fn cancelled_task(&self, task: Value) -> Value {
        task
    }

    fn cancelling_an_ended_task_fails(&self) -> bool {
        true
    }

    fn announce(&self, capabilities: &mut Map<String, Value>, reached: &dyn Fn(&str) -> bool) {
        if !self.tasks {
            return;
        }
        let mut tasks = json!({ "requests": { "tools": { "call": {} } } });
        for (method, key) in [("tasks/cancel", "cancel"), ("tasks/list", "list")] {
            if reached(method) {
                tasks[key] = json!({});
            }
        }
        capabilities.insert("tasks".into(), tasks);
    }
}
