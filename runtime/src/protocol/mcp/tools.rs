//! `tools/list` and `tools/call`: one path for every revision.
//!
//! A call is prepared by [`crate::call`] on behalf of the request's caller,
//! confirmed when its tool is destructive under `confirm` (through a
//! round-trip or an elicitation request, as the revision says), and run
//! either at once on a lane — its logs and progress going to the request's
//! outbox — or as a task ([`super::tasks`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use serde_json::{Value, json};

use super::confirm;
use super::request::{
    Answer, Ctx, TASKS_EXTENSION, cursor_after, missing_capability, page, read_cursor, required_str,
};
use super::tasks;
use crate::call::{CallError, PreparedCall};
use crate::observe::CallObserver;
use crate::protocol::jsonrpc::{self, ErrorObject};
use crate::protocol::outbox::Outbox;
use crate::tool::{Level, Output, TaskSupport};

/// Tools per `tools/list` page.
pub const PAGE_SIZE: usize = 50;

/// `tools/list`: the tools the caller may see, a page at a time.
pub fn list(ctx: &Ctx<'_>, params: &Value) -> Result<Value, ErrorObject> {
    let after = read_cursor(params, "")?;
    let catalog = ctx.server().runtime.catalog();
    let visible = catalog
        .tools()
        .filter(|t| ctx.allows(&t.info.name))
        .filter(|t| after.as_deref().is_none_or(|a| t.info.name.as_str() > a));
    let (tools, more) = page(visible, PAGE_SIZE);
    // Assigned, not interpolated into `json!`, which would copy it again.
    let mut result = json!({});
    result["tools"] = tools.iter().map(|t| t.info.to_mcp()).collect();
    if more && let Some(last) = tools.last() {
        result["nextCursor"] = cursor_after("", &last.info.name).into();
    }
    if ctx.revision.is_stateless() {
        result["ttlMs"] = super::lifecycle::LIST_TTL_MS.into();
        // A token sees only its tools: not for shared caches.
        let scope = if ctx.caller().token().is_some() {
            "private"
        } else {
            "public"
        };
        result["cacheScope"] = scope.into();
    }
    Ok(result)
}

/// `tools/call`.
pub async fn call(ctx: &Ctx<'_>, params: &mut Value) -> Answer {
    let arguments = take_arguments(params);
    let params = &*params;
    let name = match required_str(params, "name", "the tool to call") {
        Ok(name) => name,
        Err(error) => return Answer::Error(error),
    };
    let runtime = &ctx.server().runtime;
    let unknown = || Answer::Error(unknown_tool(name, runtime.still_loading()));
    // A tool the token may not see does not exist for this client.
    let support = runtime.catalog().tool(name).map(|t| t.info.task_support);
    let Some(support) = support.filter(|_| ctx.allows(name)) else {
        return unknown();
    };
    let task = match as_task(ctx, name, support, params.get("task")) {
        Ok(task) => task,
        Err(error) => return Answer::Error(error),
    };
    let progress = params.pointer("/_meta/progressToken").cloned();
    let mut prepared = match runtime.prepare(ctx.caller().clone(), name, arguments) {
        Ok(prepared) => prepared,
        Err(CallError::UnknownTool(_)) => return unknown(),
        Err(err) => {
            return match task {
                Some(ttl) if ctx.revision.refusals_become_tasks() => {
                    tasks::refused(ctx, name, ttl, tool_error(&err))
                        .await
                        .into()
                }
                _ => Answer::Result(tool_error(&err)),
            };
        }
    };
    if prepared.needs_confirmation() && ctx.revision.confirms_by_round_trip() {
        match confirm::by_round_trip(ctx, &prepared, params).await {
            Ok(answer) => prepared.confirm(answer),
            Err(answer) => return answer,
        }
    }
    match task {
        Some(ttl) => tasks::start(ctx, prepared, progress, ttl).await.into(),
        None => run(ctx, prepared, progress).await,
    }
}

/// Whether a call runs as a task, with the lifetime asked (`Some(None)`:
/// a task with the default lifetime). A tool's `taskSupport` is enforced
/// both ways.
fn as_task(
    ctx: &Ctx<'_>,
    name: &str,
    support: TaskSupport,
    task: Option<&Value>,
) -> Result<Option<Option<u64>>, ErrorObject> {
    if ctx.revision.has_core_tasks() {
        return match (support, task) {
            (TaskSupport::Required, None) => Err(ErrorObject::new(
                jsonrpc::METHOD_NOT_FOUND,
                format!(
                    "{name} must be called as a task (its execution.taskSupport is \
                     \"required\"): add \"task\": {{}} to the params"
                ),
            )),
            (TaskSupport::Forbidden, Some(_)) => Err(ErrorObject::new(
                jsonrpc::METHOD_NOT_FOUND,
                format!(
                    "{name} cannot be called as a task (its execution.taskSupport is \
                     \"forbidden\"): call it without \"task\""
                ),
            )),
            (_, Some(task)) => tasks::ttl(task, "ttl").map(Some),
            (_, None) => Ok(None),
        };
    }
    if ctx.revision.is_stateless() && support == TaskSupport::Required {
        if !ctx.client.tasks {
            return Err(missing_capability(
                format!(
                    "{name} runs only as a task: declare the {TASKS_EXTENSION} extension in \
                     _meta[\"{}\"].extensions",
                    super::request::META_CAPABILITIES
                ),
                json!({ "extensions": { TASKS_EXTENSION: {} } }),
            ));
        }
        return Ok(Some(None));
    }
    Ok(None)
}

/// Runs a call while the request waits, and answers its result. A call
/// the client cancelled gets no answer: MCP sends no response then.
async fn run(ctx: &Ctx<'_>, mut prepared: PreparedCall, progress: Option<Value>) -> Answer {
    let cancel = prepared.cancel_token().clone();
    let _registered = ctx.session.register(ctx.id, cancel.clone());
    let name = prepared.tool().info.name.clone();
    if prepared.needs_confirmation() {
        let answer = confirm::ask(
            ctx.session,
            ctx.revision,
            ctx.client,
            &name,
            prepared.arguments(),
            ctx.out,
            None,
        )
        .await;
        prepared.confirm(answer);
    }
    let observer = Arc::new(Observer {
        out: ctx.out.clone(),
        level: ctx.log_level.clone(),
        tool: name.clone(),
        progress,
    });
    let outcome = prepared.run_on_lane(observer).await;
    if cancel.is_shut_down() {
        return Answer::Error(shutting_down());
    }
    if cancel.is_cancelled() {
        return Answer::Nothing;
    }
    outcome_of(&name, outcome).into()
}

/// What a call's run answers: its result, a tool error the model can read
/// (`isError`), or an internal error when its thread failed.
pub fn outcome_of(
    tool: &str,
    run: Option<Result<Output, CallError>>,
) -> Result<Value, ErrorObject> {
    match run {
        Some(Ok(output)) => Ok(output.to_mcp()),
        Some(Err(err)) => Ok(tool_error(&err)),
        None => {
            tracing::error!(tool, "the call's thread failed");
            Err(ErrorObject::internal())
        }
    }
}

/// Moves `arguments` out of `tools/call` params (absent: no arguments).
fn take_arguments(params: &mut Value) -> Value {
    params
        .as_object_mut()
        .and_then(|params| params.remove("arguments"))
        .unwrap_or_else(|| json!({}))
}

/// The error for a tool that is not served; `loading` components are still
/// loading, and the tool may be one of theirs.
pub fn unknown_tool(name: &str, loading: usize) -> ErrorObject {
    let name = jsonrpc::shorten(name, 100);
    let message = match loading {
        0 => format!("Unknown tool: {name}"),
        n => format!(
            "Unknown tool: {name} ({n} component(s) still loading; \
             notifications/tools/list_changed follows when their tools are ready)"
        ),
    };
    ErrorObject::invalid_params(message).with_data(json!({ "tool": name }))
}

/// A `CallToolResult` with `isError: true`: the model sees the message and
/// can correct itself.
pub fn tool_error(err: &CallError) -> Value {
    json!({
        "content": [{ "type": "text", "text": err.to_string() }],
        "isError": true,
    })
}

/// The answer to a request whose call the shutdown stopped: every request
/// gets exactly one answer, even then.
pub fn shutting_down() -> ErrorObject {
    ErrorObject::new(
        jsonrpc::TOOL_FAILED,
        "the server is shutting down; the call was stopped before it finished",
    )
}

/// Turns the guest's log and progress reports into MCP notifications.
pub struct Observer {
    pub out: Outbox,
    /// Index into `Level::ALL` of the lowest level sent.
    pub level: Arc<AtomicU8>,
    pub tool: String,
    /// The request's `progressToken`; no progress is sent without one.
    pub progress: Option<Value>,
}

impl CallObserver for Observer {
    fn log(&self, level: Level, message: &str) {
        if (level as u8) < self.level.load(Ordering::Relaxed) {
            return;
        }
        self.out.notify(jsonrpc::notification(
            "notifications/message",
            json!({ "level": level.as_str(), "logger": self.tool, "data": message }),
        ));
    }

    fn progress(&self, done: f64, total: Option<f64>, message: Option<&str>) {
        let Some(token) = &self.progress else { return };
        let mut params = json!({ "progressToken": token, "progress": done });
        if let Some(total) = total {
            params["total"] = total.into();
        }
        if let Some(message) = message {
            params["message"] = message.into();
        }
        self.out
            .notify(jsonrpc::notification("notifications/progress", params));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn guest_logs_and_progress_become_notifications() {
        let (out, mut rx) = Outbox::channel();
        let level = Arc::new(AtomicU8::new(Level::Warning as u8));
        let observer = Observer {
            out,
            level: level.clone(),
            tool: "t".into(),
            progress: Some(json!("tok")),
        };
        observer.log(Level::Info, "quiet");
        observer.log(Level::Error, "loud");
        observer.progress(1.0, Some(4.0), Some("a quarter"));
        let log = rx.try_recv().expect("a log notification");
        assert_eq!(log["method"], "notifications/message");
        assert_eq!(
            log["params"],
            json!({"level":"error","logger":"t","data":"loud"})
        );
        let progress = rx.try_recv().expect("a progress notification");
        assert_eq!(progress["method"], "notifications/progress");
        assert_eq!(
            progress["params"],
            json!({"progressToken":"tok","progress":1.0,"total":4.0,"message":"a quarter"})
        );
        assert!(rx.try_recv().is_err());
        // Without a progress token, progress is not reported.
        let (out, mut rx) = Outbox::channel();
        let observer = Observer {
            out,
            level,
            tool: "t".into(),
            progress: None,
        };
        observer.progress(1.0, None, None);
        assert!(rx.try_recv().is_err());
    }

    #[test]
    fn tool_errors_are_results_with_is_error() {
        let err = CallError::Busy {
            tool: "t".into(),
            limit: 2,
            queue: 8,
        };
        let result = tool_error(&err);
        assert_eq!(result["isError"], true);
        assert!(
            result["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains("busy")
        );
    }
}
