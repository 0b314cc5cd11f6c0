//! MCP tasks: a tool call that runs in the background while the client
//! polls for it — in the core protocol of 2025-11-25 (`task` in
//! `tools/call`, `tasks/get`, `tasks/result`, `tasks/cancel`, `tasks/list`
//! for authenticated callers, status notifications) and as the
//! `io.modelcontextprotocol/tasks` extension of 2026-07-28 (`tasks/get`
//! with the outcome inlined, `tasks/update`, `tasks/cancel`).
//!
//! [`store`] keeps the state; this module runs a task's call and answers
//! the methods. What a task sends while it runs (progress, logs, an
//! elicitation request) goes to a client waiting in `tasks/result`, else to
//! the session's standing stream, tagged with its task id. What a
//! 2026-07-28 task's guest asks once it runs as a task waits in the task
//! ([`super::inputs`]): `tasks/get` shows it (`input_required`,
//! `inputRequests`), `tasks/update` answers it.

mod shared;
pub mod store;
pub mod task;

use std::sync::Arc;
use std::sync::atomic::AtomicU8;
use std::time::Duration;

use serde_json::{Value, json};

pub use shared::Found;
pub use store::TaskStore;
use task::task_not_found;
pub use task::{Owner, RELATED_TASK, Snapshot, Status, Task, relate};

use super::asks::{InBand, OnWait};
use super::confirm;
use super::context::Ctx;
use super::inputs::Inputs;
use super::model::tasks::{TaskParams, UpdateParams};
use super::model::{EmptyResult, ListParams, Page, to_value};
use super::outcome::{Asking, Observer, outcome_of};
use super::request::{Answer, Client, cursor_after, invalid_cursor, read_cursor};
use super::revision::Revision;
use super::session::Session;
use crate::call::{CallError, PreparedCall};
use crate::protocol::jsonrpc::{self, ErrorObject};
use crate::protocol::outbox::{Inbox, Outbox};
use crate::sandbox::{CancelToken, RunError};
use crate::tool::Level;
use crate::tool::Output;

/// The `CreateTaskResult` in the request's revision.
fn created(ctx: &Ctx<'_>, task: &Task) -> Value {
    ctx.revision.wire().created_task(task.to_mcp(ctx.revision))
}

/// A task-augmented call refused before it ran (arguments, policy, busy):
/// a task that failed at once with the tool error `result`.
pub async fn refused(
    ctx: &Ctx<'_>,
    name: &str,
    ttl: Option<u64>,
    result: Value,
) -> Result<Value, ErrorObject> {
    let task = ctx
        .server()
        .tasks
        .open(ctx.owner(), name, ttl, CancelToken::new())
        .await?;
    tracing::info!(task = %task.id, tool = name, caller = %ctx.caller(), "task refused before it ran");
    task.finish(Ok(result));
    Ok(created(ctx, &task))
}

/// A task whose call already ended with `outcome` (a 2026-07-28 call that
/// gathered its input in rounds before its task was made): answers its
/// `CreateTaskResult`, the task already terminal.
pub async fn settled(
    ctx: &Ctx<'_>,
    name: &str,
    ttl: Option<u64>,
    run: Option<Result<Output, CallError>>,
) -> Result<Value, ErrorObject> {
    let outcome = task_outcome(name, ctx.revision, run);
    let task = ctx
        .server()
        .tasks
        .open(ctx.owner(), name, ttl, CancelToken::new())
        .await?;
    tracing::info!(task = %task.id, tool = name, caller = %ctx.caller(), "task made for a call that ran in rounds");
    task.finish(outcome);
    Ok(created(ctx, &task))
}

/// What a task's call ended with, as its task records it: as a call's
/// ([`outcome_of`]), except that in 2026-07-28 a guest the runtime stopped
/// for a fault (a panic, a crash, a limit) fails the task with a JSON-RPC
/// error — a protocol-level error in SEP-2663's terms — while the tool's
/// own error completes it with `isError`.
fn task_outcome(
    name: &str,
    revision: Revision,
    run: Option<Result<Output, CallError>>,
) -> Result<Value, ErrorObject> {
    if let Some(Err(CallError::Run(err))) = &run
        && revision.is_stateless()
        && !err.is_tool_report()
        && !matches!(err, RunError::Cancelled)
    {
        return Err(ErrorObject::new(jsonrpc::TOOL_FAILED, err.to_string())
            .with_data(json!({ "kind": err.kind() })));
    }
    outcome_of(name, run)
}

/// A call already running (`run`, a 2026-07-28 call in rounds that has
/// not asked anything within its first moments) that becomes a task: its
/// `CreateTaskResult` now, its outcome the task's when it ends.
/// Cancelling the task stops it (`cancel` is the call's); what its guest
/// asks from now on waits in `inputs` for `tasks/update`.
pub async fn escalated(
    ctx: &Ctx<'_>,
    name: &str,
    ttl: Option<u64>,
    cancel: CancelToken,
    inputs: Arc<Inputs>,
    run: impl Future<Output = Option<Result<Output, CallError>>> + Send + 'static,
) -> Result<Value, ErrorObject> {
    let task = ctx
        .server()
        .tasks
        .open(ctx.owner(), name, ttl, cancel)
        .await?;
    tracing::info!(task = %task.id, tool = name, caller = %ctx.caller(), "call became a task");
    task.wait_for_input(inputs);
    let (finishing, name) = (task.clone(), name.to_string());
    tokio::spawn(async move {
        if finishing.finish(task_outcome(&name, Revision::V2026_07_28, run.await)) {
            tracing::info!(task = %finishing.id, tool = %name, "task ended");
        }
    });
    Ok(created(ctx, &task))
}

/// Starts a prepared call as a task: answers the `CreateTaskResult` at
/// once; the call runs in the background. Cancelling the task stops it.
pub async fn start(
    ctx: &Ctx<'_>,
    prepared: PreparedCall,
    progress: Option<Value>,
    ttl: Option<u64>,
) -> Result<Value, ErrorObject> {
    let name = prepared.tool().info.name.clone();
    let task = ctx
        .server()
        .tasks
        .open(ctx.owner(), &name, ttl, prepared.cancel_token().clone())
        .await?;
    tracing::info!(task = %task.id, tool = %name, caller = %ctx.caller(), "task created");
    // A task of the 2026-07-28 extension carries no messages.
    let messages = ctx.revision.wire().core_tasks();
    let run = Run {
        session: ctx.session.clone(),
        task: task.clone(),
        revision: ctx.revision,
        client: ctx.client,
        level: if messages {
            ctx.log_level.clone()
        } else {
            Arc::new(AtomicU8::new(Level::ALL.len() as u8))
        },
        progress: progress.filter(|_| messages),
    };
    tokio::spawn(run.run(prepared));
    Ok(created(ctx, &task))
}

/// What a task's background run needs of the request that started it.
struct Run {
    session: Arc<Session>,
    task: Arc<Task>,
    revision: Revision,
    client: Client,
    level: Arc<AtomicU8>,
    progress: Option<Value>,
}

impl Run {
    /// Runs the call to its end (asking for confirmation first, when the
    /// revision asks in-band) and records the outcome.
    async fn run(self, mut prepared: PreparedCall) {
        let task = &self.task;
        let (out, inbox) = Outbox::channel();
        let relay = tokio::spawn(relay(self.session.clone(), task.clone(), inbox));
        let name = task.tool.clone();
        if prepared.needs_confirmation() {
            let why = format!("{name} is destructive: confirm it (call tasks/result)");
            if task.set_status(Status::InputRequired, Some(why)) {
                self.status_changed();
            }
            let answer = confirm::ask(
                &self.session,
                self.revision,
                self.client,
                &name,
                prepared.arguments(),
                &out,
                Some(&task.id),
            )
            .await;
            prepared.confirm(answer);
            if task.set_status(Status::Working, None) {
                self.status_changed();
            }
        }
        if !task.cancel_token().is_cancelled() {
            let asking = self.in_band(&prepared, &out);
            let observer = Observer::new(
                &out,
                &self.level,
                name.clone(),
                self.progress.clone(),
                asking,
            );
            let run = prepared.run_on_lane(observer).await;
            let outcome = task_outcome(&name, self.revision, run);
            if task.finish(outcome) {
                tracing::info!(task = %task.id, tool = %name, status = task.status().as_str(), "task ended");
                self.status_changed();
            }
        }
        drop(out);
        let _ = relay.await;
    }

    /// How the task's guest asks the client, when its grant lets it: in
    /// band, through the client waiting in `tasks/result` (the task is
    /// `input_required` while it waits). A task of the 2026-07-28
    /// extension has no such channel: its requests are unavailable.
    fn in_band(&self, prepared: &PreparedCall, out: &Outbox) -> Option<Asking> {
        if !prepared.grant().asks.any() || !self.revision.wire().core_tasks() {
            return None;
        }
        let (session, task, revision) = (self.session.clone(), self.task.clone(), self.revision);
        let on_wait: OnWait = Arc::new(move |waiting| {
            let (status, why) = match waiting {
                true => (
                    Status::InputRequired,
                    Some("the tool asks for input (call tasks/result)".to_string()),
                ),
                false => (Status::Working, None),
            };
            if task.set_status(status, why) {
                status_changed(&session, revision, &task.summary());
            }
        });
        Some(Asking::InBand(InBand {
            session: self.session.clone(),
            out: out.clone(),
            revision: self.revision,
            client: self.client,
            cancel: prepared.cancel_token().clone(),
            handle: tokio::runtime::Handle::current(),
            on_wait: Some(on_wait),
        }))
    }

    fn status_changed(&self) {
        status_changed(&self.session, self.revision, &self.task.summary());
    }
}

/// `notifications/tasks/status` on the standing stream, in the revisions
/// that have it.
fn status_changed(session: &Session, revision: Revision, task: &Snapshot) {
    if revision.wire().core_tasks() {
        let status = task.to_mcp(revision);
        session.notify_standing(jsonrpc::notification("notifications/tasks/status", status));
    }
}

/// Carries what a task sends while it runs: to a client waiting in
/// `tasks/result` first, else to the session's standing stream. A request
/// (an elicitation) with no one to receive it waits until someone listens
/// or the task ends; a notification with no one to receive it is dropped.
async fn relay(session: Arc<Session>, task: Arc<Task>, mut inbox: Inbox) {
    while let Some(mut message) = inbox.recv().await {
        if let Some(params) = message.get_mut("params") {
            relate(params, &task.id);
        }
        let is_request = message.get("id").is_some();
        loop {
            let back = match task.deliver(message) {
                Ok(()) => break,
                Err(back) => back,
            };
            if !is_request {
                session.notify_standing(back);
                break;
            }
            message = match session.try_send_standing(back) {
                Ok(()) => break,
                Err(back) => back,
            };
            if task.status().is_terminal() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// The task `params.taskId` names, here or on another replica, if the
/// caller owns it.
async fn find<'c>(ctx: &'c Ctx<'_>, id: &str) -> Result<Found<'c>, ErrorObject> {
    let owner = ctx.owner();
    ctx.server()
        .tasks
        .find(id, &owner)
        .await?
        .ok_or_else(task_not_found)
}

/// `tasks/get`.
pub async fn get(ctx: &Ctx<'_>, params: &TaskParams) -> Result<Value, ErrorObject> {
    Ok(match find(ctx, &params.task_id).await? {
        Found::Here(task) => task.to_mcp(ctx.revision),
        Found::Elsewhere(_, record) => record.task.to_mcp(ctx.revision),
    })
}

/// `tasks/update` (2026-07-28): `inputResponses` answer the requests the
/// task waits for, by key (some or all; keys not pending are ignored); the
/// ack is empty, the task's state is seen on the next `tasks/get`.
///
/// The answers reach a guest only on the replica that runs it: a task
/// waiting for input on another replica is refused, saying so.
pub async fn update(ctx: &Ctx<'_>, params: UpdateParams) -> Result<Value, ErrorObject> {
    let responses = params.input_responses.as_ref();
    match (find(ctx, &params.task_id).await?, responses) {
        (Found::Here(task), Some(responses)) => {
            if let Some(inputs) = task.inputs() {
                let answered = inputs.answer(responses);
                tracing::info!(task = %task.id, answered = answered.len(), "task given input");
            }
        }
        (Found::Elsewhere(_, record), Some(responses))
            if !responses.is_empty() && record.task.status == Status::InputRequired =>
        {
            return Err(ErrorObject::invalid_params(
                "this task runs on another replica, which alone can give its tool the answers: \
                 send tasks/update to the replica that runs it (route requests by their \
                 Mcp-Name header, the task id, to one replica)",
            ));
        }
        _ => {}
    }
    Ok(to_value(EmptyResult {}))
}

/// `tasks/cancel`: the task becomes `cancelled` and its guest stops (on
/// another replica: within a moment, once it sees the cancel). A task
/// already terminal is an error in 2025-11-25, a no-op in 2026-07-28.
pub async fn cancel(ctx: &Ctx<'_>, params: &TaskParams) -> Result<Value, ErrorObject> {
    const WHY: &str = "The task was cancelled by request.";
    let (cancelled, task) = match find(ctx, &params.task_id).await? {
        Found::Here(task) => (task.cancel(WHY), task.summary()),
        Found::Elsewhere(shared, record) => {
            let before = record.task.clone();
            match shared.cancel(*record, WHY).await? {
                Ok(cancelled) => (Ok(()), cancelled.task),
                Err(status) => (Err(status), before),
            }
        }
    };
    match cancelled {
        Ok(()) => {
            tracing::info!(task = %task.id, tool = %task.tool, "task cancelled by the client");
            status_changed(ctx.session, ctx.revision, &task);
        }
        Err(_) if !ctx.revision.wire().cancelling_an_ended_task_fails() => {}
        Err(status) => {
            return Err(ErrorObject::invalid_params(format!(
                "Cannot cancel task: already in terminal status '{}'",
                status.as_str()
            )));
        }
    }
    Ok(ctx
        .revision
        .wire()
        .cancelled_task(task.to_mcp(ctx.revision)))
}

/// `tasks/result` (2025-11-25): waits until the task is terminal, relaying
/// its messages (an elicitation request) meanwhile, then answers what the
/// call would have answered.
pub async fn result(ctx: &Ctx<'_>, params: &TaskParams) -> Answer {
    let (id, outcome) = match find(ctx, &params.task_id).await {
        Ok(Found::Here(task)) => {
            task.listen(ctx.out.clone());
            task.wait().await;
            task.unlisten(ctx.out);
            (task.id.clone(), task.outcome())
        }
        Ok(Found::Elsewhere(shared, record)) => match shared.wait(*record).await {
            Ok(done) => (done.task.id, done.task.outcome),
            Err(error) => return Answer::Error(error),
        },
        Err(error) => return Answer::Error(error),
    };
    match outcome {
        Some(Ok(mut result)) => {
            relate(&mut result, &id);
            Answer::Result(result)
        }
        Some(Err(error)) => Answer::Error(error),
        None => Answer::Error(ErrorObject::internal()),
    }
}

/// `tasks/list` (2025-11-25, authenticated callers): the caller's tasks,
/// oldest first, a page at a time.
pub async fn list(ctx: &Ctx<'_>, params: &ListParams) -> Result<Value, ErrorObject> {
    let after = read_cursor(params.cursor.as_deref(), "task:")?;
    let tasks = &ctx.server().tasks;
    let (page, more) =
        (tasks.list_all(&ctx.owner(), after.as_deref()).await?).ok_or_else(invalid_cursor)?;
    let result = Page {
        key: "tasks",
        items: page.iter().map(|t| t.shown(ctx.revision)).collect(),
        next_cursor: more
            .then(|| page.last().map(|last| cursor_after("task:", &last.id)))
            .flatten(),
    };
    Ok(Value::Object(result.into_map()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fault_fails_a_2026_task_and_a_tools_error_completes_it() {
        let panic = || Some(Err(CallError::Run(RunError::Panic("boom".into()))));
        let error = task_outcome("t", Revision::V2026_07_28, panic()).unwrap_err();
        assert_eq!(error.code, jsonrpc::TOOL_FAILED);
        assert_eq!(error.message, "the tool panicked: boom");
        assert_eq!(error.data, Some(json!({"kind": "panic"})));
        // The tool's own error is its result, with isError.
        let failed = Some(Err(CallError::Run(RunError::Failed("no".into()))));
        let result = task_outcome("t", Revision::V2026_07_28, failed).unwrap();
        assert_eq!(result["isError"], true);
        // Tasks of 2025-11-25 keep a call's answer (isError) for a fault.
        let result = task_outcome("t", Revision::V2025_11_25, panic()).unwrap();
        assert_eq!(result["isError"], true);
    }
}
