//! One MCP task as the server keeps it: its status and the moves between
//! statuses ([`Snapshot`]), its owner, its lifetime, its outcome once it
//! ends, the streams waiting for its messages, and the errors and tags
//! every task method shares.
//!
//! Security: a task belongs to its [`Owner`] (the bearer token's name when
//! the caller authenticated, else the session that created it); a request
//! from anyone else finds no such task. Task ids are 128 bits from the
//! operating system's random number generator, so they cannot be guessed
//! even where there is no owner to bind them to (stateless, unauthenticated).

use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio::sync::watch;

use crate::protocol::jsonrpc::{self, ErrorObject};
use crate::protocol::mcp::inputs::Inputs;
use crate::protocol::mcp::model::tasks::{Lifetime, RelatedTask, TaskObject};
use crate::protocol::mcp::model::to_value;
use crate::protocol::mcp::model::tools::ToolError;
use crate::protocol::mcp::request;
use crate::protocol::mcp::revision::Revision;
use crate::protocol::outbox::Outbox;
use crate::sandbox::CancelToken;
use crate::sync::lock;

/// Lifetime of a task when the client asks for none (milliseconds).
pub const DEFAULT_TTL_MS: u64 = 10 * 60 * 1000;
/// Longest lifetime granted, whatever the client asks (milliseconds).
pub const MAX_TTL_MS: u64 = 60 * 60 * 1000;
/// Shortest lifetime granted, so a result can still be fetched (milliseconds).
pub const MIN_TTL_MS: u64 = 1000;
/// Suggested time between two `tasks/get` polls (milliseconds).
pub const POLL_INTERVAL_MS: u64 = 500;
/// Tasks one owner may hold at once (running or kept for their result).
pub const MAX_TASKS_PER_OWNER: usize = 100;
/// Tasks per `tasks/list` page.
pub const LIST_PAGE: usize = 50;
/// The `_meta` key tying a message to its task.
pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// Where a task is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Working,
    InputRequired,
    Completed,
    Failed,
    Cancelled,
}

impl Status {
    pub const ALL: [Status; 5] = [
        Status::Working,
        Status::InputRequired,
        Status::Completed,
        Status::Failed,
        Status::Cancelled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Working => "working",
            Status::InputRequired => "input_required",
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
        }
    }

    /// `completed`, `failed` and `cancelled` never change again.
    pub fn is_terminal(self) -> bool {
        matches!(self, Status::Completed | Status::Failed | Status::Cancelled)
    }
}

/// Who may see a task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    /// Callers presenting this bearer token (by its name in the policy).
    Token(String),
    /// The MCP session (2025-11-25) that created it, when unauthenticated.
    Session(u64),
    /// Anyone who knows the id: stateless requests without authentication.
    Anyone,
}

/// What a finished task answers: the result of the underlying request, or
/// the JSON-RPC error it would have returned.
pub type Outcome = Result<Value, ErrorObject>;

/// Where a task's changes go when the replicas share tasks: the shared
/// store ([`super::shared`]), seen from a task.
pub trait Mirror: Send + Sync {
    /// Sends `task` as it is now, owned by `owner`, on its way.
    fn mirror(&self, task: Snapshot, owner: &Owner);
}

/// One task.
pub struct Task {
    pub id: String,
    pub owner: Owner,
    /// The tool it calls (for logs).
    pub tool: String,
    pub(super) expires: Instant,
    cancel: CancelToken,
    /// What it is now; every change goes through [`Snapshot`]'s moves.
    state: Mutex<Snapshot>,
    /// Flips to true once the task is terminal.
    done: watch::Sender<bool>,
    /// Streams of clients waiting in `tasks/result`, where messages of the
    /// task (progress, an elicitation request) should go first.
    listeners: Mutex<Vec<Outbox>>,
    /// Where its changes go when replicas share tasks.
    shared: Option<Arc<dyn Mirror>>,
    /// What its guest asked as a running task of 2026-07-28, waiting for
    /// `tasks/update`.
    inputs: OnceLock<Arc<Inputs>>,
}

fn timestamp(at: SystemTime) -> String {
    humantime::format_rfc3339_millis(at).to_string()
}

/// A task as it is at one moment, here or on another replica: what the
/// `Task` objects of both revisions are made of, and what the shared store
/// keeps of it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Snapshot {
    pub id: String,
    pub tool: String,
    pub created: SystemTime,
    pub ttl_ms: u64,
    pub status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    pub updated: SystemTime,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    /// What the task waits for while `input_required` in 2026-07-28: its
    /// pending requests by key (`inputRequests`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<Value>,
    /// The `traceparent` of the request that made it, when traced: the
    /// trace its later requests continue, on any replica.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
}

impl Snapshot {
    /// The `Task` object of `revision`: 2025-11-25's (`tasks/get`, the
    /// `CreateTaskResult`, `notifications/tasks/status`), or the 2026-07-28
    /// extension's (`ttlMs`, `pollIntervalMs`, and for a terminal task its
    /// `result` or `error`).
    ///
    /// The extension keeps `failed` for JSON-RPC errors: a tool error
    /// (`isError: true`) is a `completed` task whose result says so.
    pub fn to_mcp(&self, revision: Revision) -> Value {
        to_value(self.shown(revision))
    }

    /// The `Task` object of `revision` as a type ([`Snapshot::to_mcp`]).
    pub fn shown(&self, revision: Revision) -> TaskObject<'_> {
        let extension = revision.is_stateless();
        let status = match (self.status, &self.outcome) {
            (Status::Failed, Some(Ok(_))) if extension => Status::Completed,
            (status, _) => status,
        };
        let lifetime = match extension {
            true => Lifetime::Stateless {
                ttl_ms: self.ttl_ms,
                poll_interval_ms: POLL_INTERVAL_MS,
            },
            false => Lifetime::Sessions {
                ttl: self.ttl_ms,
                poll_interval: POLL_INTERVAL_MS,
            },
        };
        let waits = extension && self.status == Status::InputRequired;
        let ended = matches!(self.status, Status::Completed | Status::Failed);
        let (result, error) = match &self.outcome {
            Some(Ok(result)) if extension && ended => (Some(result), None),
            Some(Err(error)) if extension && self.status == Status::Failed => (None, Some(error)),
            _ => (None, None),
        };
        TaskObject {
            task_id: &self.id,
            status: status.as_str(),
            created_at: timestamp(self.created),
            last_updated_at: timestamp(self.updated),
            lifetime,
            status_message: self.message.as_deref(),
            input_requests: self.input_requests.as_ref().filter(|_| waits),
            result,
            error,
        }
    }

    /// Moves between `working` and `input_required`; false when the task
    /// is terminal or already there (nothing changes then).
    pub fn set_status(&mut self, status: Status, message: Option<String>) -> bool {
        debug_assert!(!status.is_terminal());
        if self.status.is_terminal() || self.status == status {
            return false;
        }
        self.status = status;
        self.message = message;
        self.updated = SystemTime::now();
        true
    }

    /// Shows `requests` pending (`input_required`), or none (`working`);
    /// false when the task is terminal.
    pub fn wait_for_input(&mut self, requests: Option<Value>) -> bool {
        if self.status.is_terminal() {
            return false;
        }
        let status = match requests {
            Some(_) => Status::InputRequired,
            None => Status::Working,
        };
        let message = requests
            .as_ref()
            .map(|_| "the tool waits for input (answer with tasks/update)".to_string());
        self.input_requests = requests;
        self.status = status;
        self.message = message;
        self.updated = SystemTime::now();
        true
    }

    /// Ends the task as `status`; false when it had ended already (a task
    /// ends once: a cancel made first stays).
    pub fn end(&mut self, status: Status, message: Option<String>, outcome: Outcome) -> bool {
        if self.status.is_terminal() {
            return false;
        }
        self.status = status;
        self.message = message;
        self.updated = SystemTime::now();
        self.outcome = Some(outcome);
        true
    }

    /// Ends the task with how its call ended: `completed`, or `failed` for
    /// a JSON-RPC error or a result with `isError: true`.
    pub fn finish(&mut self, outcome: Outcome) -> bool {
        let (status, message) = match &outcome {
            Ok(result) if result.get("isError") == Some(&Value::Bool(true)) => {
                let text = result
                    .pointer("/content/0/text")
                    .and_then(Value::as_str)
                    .unwrap_or("the tool failed");
                (Status::Failed, Some(jsonrpc::shorten(text, 500)))
            }
            Ok(_) => (Status::Completed, None),
            Err(error) => (Status::Failed, Some(error.message.clone())),
        };
        self.end(status, message, outcome)
    }

    /// Ends the task as `cancelled`, saying why.
    pub fn cancel(&mut self, why: &str) -> bool {
        let outcome = Ok(cancelled_result(why));
        self.end(Status::Cancelled, Some(why.to_string()), outcome)
    }
}

/// What a cancelled task answers: a tool error saying why.
pub fn cancelled_result(why: &str) -> Value {
    to_value(ToolError::new(format!("the task was cancelled: {why}")))
}

/// Ties a message's params, or a result, to task `id` in its `_meta`.
pub fn relate(value: &mut Value, id: &str) {
    if let Some(map) = value.as_object_mut() {
        let meta = map
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert(RELATED_TASK.into(), to_value(RelatedTask { task_id: id }));
        }
    }
}

/// No task of the caller has the id asked.
pub fn task_not_found() -> ErrorObject {
    ErrorObject::invalid_param("taskId", "Failed to retrieve task: Task not found")
}

/// The refusal of a task over the owner's limit.
pub fn too_many_tasks() -> ErrorObject {
    ErrorObject::new(
        jsonrpc::BUSY,
        format!("too many tasks ({MAX_TASKS_PER_OWNER}); wait for some to expire or cancel them"),
    )
}

impl Task {
    /// A `working` task for `owner` calling `tool`, living `ttl_ms`,
    /// stopped through `cancel`, its changes sent to `shared` when the
    /// replicas share tasks.
    pub(super) fn new(
        owner: Owner,
        tool: &str,
        ttl_ms: u64,
        cancel: CancelToken,
        shared: Option<Arc<dyn Mirror>>,
    ) -> Result<Task, ErrorObject> {
        let id = new_task_id()?;
        let now = SystemTime::now();
        let (done, _) = watch::channel(false);
        Ok(Task {
            id: id.clone(),
            owner,
            tool: tool.to_string(),
            expires: Instant::now() + Duration::from_millis(ttl_ms),
            cancel,
            state: Mutex::new(Snapshot {
                id: id.clone(),
                tool: tool.to_string(),
                created: now,
                ttl_ms,
                status: Status::Working,
                message: None,
                updated: now,
                outcome: None,
                input_requests: None,
                trace: crate::telemetry::traceparent(),
            }),
            done,
            listeners: Mutex::new(Vec::new()),
            shared,
            inputs: OnceLock::new(),
        })
    }

    pub fn status(&self) -> Status {
        lock(&self.state).status
    }

    pub fn cancel_token(&self) -> &CancelToken {
        &self.cancel
    }

    pub fn ttl_ms(&self) -> u64 {
        lock(&self.state).ttl_ms
    }

    /// The `traceparent` of the request that made it, when traced.
    pub fn trace(&self) -> Option<String> {
        lock(&self.state).trace.clone()
    }

    /// The task as it is now.
    pub fn snapshot(&self) -> Snapshot {
        self.view(true)
    }

    /// The task as it is now, without its outcome (what lists and the
    /// 2025-11-25 `Task` object show).
    pub fn summary(&self) -> Snapshot {
        self.view(false)
    }

    fn view(&self, with_outcome: bool) -> Snapshot {
        let state = lock(&self.state);
        Snapshot {
            id: state.id.clone(),
            tool: state.tool.clone(),
            message: state.message.clone(),
            outcome: state.outcome.as_ref().filter(|_| with_outcome).cloned(),
            input_requests: state.input_requests.clone(),
            trace: state.trace.clone(),
            ..*state
        }
    }

    /// The `Task` object of `revision` ([`Snapshot::to_mcp`]); only the
    /// 2026-07-28 one shows the outcome, so only it copies it.
    pub fn to_mcp(&self, revision: Revision) -> Value {
        self.view(revision.is_stateless()).to_mcp(revision)
    }

    /// Applies one of [`Snapshot`]'s moves; when it changed the task,
    /// sends the change to the shared store (if any) and, when the task
    /// ended, wakes its waiters.
    fn change(&self, change: impl FnOnce(&mut Snapshot) -> bool) -> bool {
        let mut state = lock(&self.state);
        if !change(&mut state) {
            return false;
        }
        let ended = state.status.is_terminal();
        if let Some(shared) = &self.shared {
            shared.mirror(state.clone(), &self.owner);
        }
        drop(state);
        if ended {
            self.done.send_replace(true);
        }
        true
    }

    /// Moves between `working` and `input_required`; false when the task
    /// is already terminal (nothing changes then).
    pub fn set_status(&self, status: Status, message: Option<String>) -> bool {
        self.change(|s| s.set_status(status, message))
    }

    /// Records how the call ended ([`Snapshot::finish`]). False when the
    /// task was already terminal (cancelled): a cancelled task stays
    /// cancelled.
    pub fn finish(&self, outcome: Outcome) -> bool {
        self.change(|s| s.finish(outcome))
    }

    /// Cancels the task: it becomes `cancelled` at once and its guest is
    /// stopped. `Err` with the status when the task is already terminal.
    pub fn cancel(&self, why: &str) -> Result<(), Status> {
        if !self.change(|s| s.cancel(why)) {
            return Err(self.status());
        }
        self.cancel.cancel();
        Ok(())
    }

    /// Lets the task wait for what its guest asks (`inputs`): while
    /// requests are pending it is `input_required` and shows them.
    pub fn wait_for_input(self: &Arc<Self>, inputs: Arc<Inputs>) {
        let task = Arc::downgrade(self);
        let _ = self.inputs.set(inputs.clone());
        inputs.watch(Box::new(move |requests| {
            if let Some(task) = task.upgrade() {
                task.change(|s| s.wait_for_input(requests));
            }
        }));
    }

    /// The input the task waits for, when its guest can ask as a task.
    pub fn inputs(&self) -> Option<&Arc<Inputs>> {
        self.inputs.get()
    }

    /// Waits until the task is terminal.
    pub async fn wait(&self) {
        let mut rx = self.done.subscribe();
        let _ = rx.wait_for(|done| *done).await;
    }

    /// The outcome of a terminal task.
    pub fn outcome(&self) -> Option<Outcome> {
        lock(&self.state).outcome.clone()
    }

    /// Adds a stream that wants the task's messages (a `tasks/result`
    /// waiter); closed streams are dropped on the way.
    pub fn listen(&self, out: Outbox) {
        let mut listeners = lock(&self.listeners);
        listeners.retain(|l| !l.is_closed());
        listeners.push(out);
    }

    pub fn unlisten(&self, out: &Outbox) {
        lock(&self.listeners).retain(|l| !l.is_closed() && !l.same_stream(out));
    }

    /// Queues `message` on the newest listener with room for it; gives it
    /// back when there is none.
    pub fn deliver(&self, message: Value) -> Result<(), Value> {
        let mut listeners = lock(&self.listeners);
        listeners.retain(|l| !l.is_closed());
        let mut message = message;
        for listener in listeners.iter().rev() {
            match listener.try_send(message) {
                Ok(()) => return Ok(()),
                Err(back) => message = back,
            }
        }
        Err(message)
    }
}

/// The tasks after the one with id `after`, oldest first, at most
/// [`LIST_PAGE`]; and whether more follow. `None` when `after` is not among
/// them (an invalid cursor).
pub fn page(mut all: Vec<Snapshot>, after: Option<&str>) -> Option<(Vec<Snapshot>, bool)> {
    all.sort_by(|a, b| a.created.cmp(&b.created).then_with(|| a.id.cmp(&b.id)));
    let start = match after {
        Some(after) => all.iter().position(|t| t.id == after)? + 1,
        None => 0,
    };
    Some(request::page(all.into_iter().skip(start), LIST_PAGE))
}

/// A task id: 128 bits from the OS random number generator, as hex.
pub fn new_task_id() -> Result<String, ErrorObject> {
    use rand::TryRng as _;
    let mut bytes = [0u8; 16];
    rand::rngs::SysRng
        .try_fill_bytes(&mut bytes)
        .map_err(|err| {
            tracing::error!("the OS random number generator failed: {err}");
            ErrorObject::internal()
        })?;
    Ok(hex::encode(bytes))
}
