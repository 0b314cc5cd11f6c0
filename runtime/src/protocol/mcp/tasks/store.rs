//! MCP tasks: a tool call that runs in the background while the client
//! polls for it (revision 2025-11-25, and the `io.modelcontextprotocol/tasks`
//! extension of 2026-07-28).
//!
//! This module keeps the state only: the [`TaskStore`] shared by every
//! session of a server, each [`Task`]'s status, its result once it ends,
//! its lifetime (`ttl`) and its owner. Running the call and sending the
//! notifications is the business of [`super`].
//!
//! Security: a task belongs to its [`Owner`] (the bearer token's name when
//! the caller authenticated, else the session that created it); a request
//! from anyone else finds no such task. Task ids are 128 bits from the
//! operating system's random number generator, so they cannot be guessed
//! even where there is no owner to bind them to (stateless, unauthenticated).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::watch;

use super::shared::Shared;
use crate::protocol::jsonrpc::{self, ErrorObject};
use crate::protocol::mcp::{Revision, request};
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

/// One task.
pub struct Task {
    pub id: String,
    pub owner: Owner,
    /// The tool it calls (for logs).
    pub tool: String,
    expires: Instant,
    cancel: CancelToken,
    /// What it is now; every change goes through [`Snapshot`]'s moves.
    state: Mutex<Snapshot>,
    /// Flips to true once the task is terminal.
    done: watch::Sender<bool>,
    /// Streams of clients waiting in `tasks/result`, where messages of the
    /// task (progress, an elicitation request) should go first.
    listeners: Mutex<Vec<Outbox>>,
    /// Where its changes go when replicas share tasks.
    shared: Option<Shared>,
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
        let extension = revision.is_stateless();
        let status = match (self.status, &self.outcome) {
            (Status::Failed, Some(Ok(_))) if extension => Status::Completed,
            (status, _) => status,
        };
        let (ttl, poll) = match extension {
            true => ("ttlMs", "pollIntervalMs"),
            false => ("ttl", "pollInterval"),
        };
        let mut task = json!({
            "taskId": self.id,
            "status": status.as_str(),
            "createdAt": timestamp(self.created),
            "lastUpdatedAt": timestamp(self.updated),
            ttl: self.ttl_ms,
            poll: POLL_INTERVAL_MS,
        });
        if let Some(message) = &self.message {
            task["statusMessage"] = message.clone().into();
        }
        let ended = matches!(self.status, Status::Completed | Status::Failed);
        match &self.outcome {
            Some(Ok(result)) if extension && ended => task["result"] = result.clone(),
            Some(Err(error)) if extension && self.status == Status::Failed => {
                task["error"] = json!(error);
            }
            _ => {}
        }
        task
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
    json!({
        "content": [{ "type": "text", "text": format!("the task was cancelled: {why}") }],
        "isError": true,
    })
}

/// Ties a message's params, or a result, to task `id` in its `_meta`.
pub fn relate(value: &mut Value, id: &str) {
    if let Some(map) = value.as_object_mut() {
        let meta = map.entry("_meta").or_insert_with(|| json!({}));
        if meta.is_object() {
            meta[RELATED_TASK] = json!({ "taskId": id });
        }
    }
}

/// The refusal of a task over the owner's limit.
pub fn too_many_tasks() -> ErrorObject {
    ErrorObject::new(
        jsonrpc::BUSY,
        format!("too many tasks ({MAX_TASKS_PER_OWNER}); wait for some to expire or cancel them"),
    )
}

impl Task {
    pub fn status(&self) -> Status {
        lock(&self.state).status
    }

    pub fn cancel_token(&self) -> &CancelToken {
        &self.cancel
    }

    pub fn ttl_ms(&self) -> u64 {
        lock(&self.state).ttl_ms
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

/// Every task of a server: those running here, and with `--state` the
/// way to those of the other replicas ([`super::shared`]).
#[derive(Default)]
pub struct TaskStore {
    pub(super) tasks: Arc<Mutex<HashMap<String, Arc<Task>>>>,
    pub(super) shared: Option<Shared>,
}

/// The tasks after the one with id `after`, oldest first, at most
/// [`LIST_PAGE`]; and whether more follow. `None` when `after` is not among
/// them (an invalid cursor).
pub(super) fn page(mut all: Vec<Snapshot>, after: Option<&str>) -> Option<(Vec<Snapshot>, bool)> {
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

impl TaskStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// Forgets expired tasks, cancelling those still running.
    fn purge(tasks: &mut HashMap<String, Arc<Task>>) {
        let now = Instant::now();
        tasks.retain(|_, task| {
            if task.expires > now {
                return true;
            }
            if task.cancel("its ttl expired").is_ok() {
                tracing::info!(task = %task.id, tool = %task.tool, "task expired while running; cancelled");
            }
            false
        });
    }

    /// Creates a `working` task for `owner`, with the lifetime asked
    /// (clamped to [`MIN_TTL_MS`]..=[`MAX_TTL_MS`]), whose changes go to
    /// `shared` when the replicas share tasks.
    pub(super) fn create(
        &self,
        owner: Owner,
        tool: &str,
        ttl_ms: Option<u64>,
        cancel: CancelToken,
        shared: Option<Shared>,
    ) -> Result<Arc<Task>, ErrorObject> {
        let ttl_ms = ttl_ms
            .unwrap_or(DEFAULT_TTL_MS)
            .clamp(MIN_TTL_MS, MAX_TTL_MS);
        let id = new_task_id()?;
        let now = SystemTime::now();
        let (done, _) = watch::channel(false);
        let task = Arc::new(Task {
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
            }),
            done,
            listeners: Mutex::new(Vec::new()),
            shared,
        });
        let mut tasks = lock(&self.tasks);
        Self::purge(&mut tasks);
        let held = tasks.values().filter(|t| t.owner == task.owner).count();
        if held >= MAX_TASKS_PER_OWNER {
            return Err(too_many_tasks());
        }
        tasks.insert(id, task.clone());
        Ok(task)
    }

    /// The task with this id, if it exists, has not expired and belongs to
    /// `owner`.
    pub fn get(&self, id: &str, owner: &Owner) -> Option<Arc<Task>> {
        let mut tasks = lock(&self.tasks);
        Self::purge(&mut tasks);
        tasks.get(id).filter(|t| &t.owner == owner).cloned()
    }

    /// The summaries of `owner`'s tasks held here.
    pub(super) fn list_here(&self, owner: &Owner) -> Vec<Snapshot> {
        let mut tasks = lock(&self.tasks);
        Self::purge(&mut tasks);
        tasks
            .values()
            .filter(|t| &t.owner == owner)
            .map(|t| t.summary())
            .collect()
    }

    /// How many tasks are held in each status (for metrics).
    pub fn count_by_status(&self) -> Vec<(&'static str, usize)> {
        let tasks = lock(&self.tasks);
        let held = |s| tasks.values().filter(|t| t.status() == s).count();
        Status::ALL.map(|s| (s.as_str(), held(s))).to_vec()
    }

    /// Cancels every unfinished task of `owner` (its session ended).
    pub fn cancel_owned_by(&self, owner: &Owner) {
        let tasks = lock(&self.tasks);
        for task in tasks.values().filter(|t| &t.owner == owner) {
            let _ = task.cancel("its session ended");
        }
    }

    /// Forgets every task of `owner` (nobody can reach them any more).
    pub fn forget(&self, owner: &Owner) {
        lock(&self.tasks).retain(|_, t| &t.owner != owner);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD: Revision = Revision::V2025_11_25;
    const NEW: Revision = Revision::V2026_07_28;

    fn list(
        store: &TaskStore,
        owner: &Owner,
        after: Option<&str>,
    ) -> Option<(Vec<Snapshot>, bool)> {
        page(store.list_here(owner), after)
    }

    fn store_with(owner: Owner) -> (TaskStore, Arc<Task>) {
        let store = TaskStore::new();
        let task = store
            .create(owner, "t", Some(60_000), CancelToken::new(), None)
            .expect("task");
        (store, task)
    }

    #[test]
    fn ids_are_long_random_hex() {
        let a = new_task_id().unwrap();
        let b = new_task_id().unwrap();
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    #[test]
    fn lifecycle_and_json() {
        let (_store, task) = store_with(Owner::Anyone);
        let json = task.to_mcp(OLD);
        assert_eq!(json["status"], "working");
        assert_eq!(json["ttl"], 60_000);
        assert_eq!(json["pollInterval"], POLL_INTERVAL_MS);
        assert!(json["createdAt"].as_str().unwrap().ends_with('Z'));
        assert!(task.set_status(Status::InputRequired, Some("confirm".into())));
        assert_eq!(task.to_mcp(OLD)["statusMessage"], "confirm");
        assert!(task.set_status(Status::Working, None));
        assert!(task.finish(Ok(json!({"content": [], "isError": false}))));
        assert_eq!(task.status(), Status::Completed);
        // Terminal: nothing changes any more.
        assert!(!task.finish(Err(ErrorObject::internal())));
        assert!(!task.set_status(Status::Working, None));
        assert_eq!(task.cancel("late"), Err(Status::Completed));
        let ext = task.to_mcp(NEW);
        assert_eq!(ext["ttlMs"], 60_000);
        assert_eq!(ext["result"]["isError"], false);
    }

    #[test]
    fn tool_errors_and_rpc_errors_fail_the_task() {
        let (_s, task) = store_with(Owner::Anyone);
        task.finish(Ok(
            json!({"content":[{"type":"text","text":"boom"}],"isError":true}),
        ));
        assert_eq!(task.status(), Status::Failed);
        assert_eq!(task.to_mcp(OLD)["statusMessage"], "boom");
        // The 2026-07-28 extension: a tool error completes with its result.
        let ext = task.to_mcp(NEW);
        assert_eq!(ext["status"], "completed");
        assert_eq!(ext["result"]["isError"], true);
        assert!(ext.get("error").is_none());
        let (_s, task) = store_with(Owner::Anyone);
        task.finish(Err(ErrorObject::internal()));
        assert_eq!(task.status(), Status::Failed);
        assert_eq!(task.to_mcp(NEW)["error"]["code"], -32603);
    }

    #[test]
    fn cancel_stops_the_guest_and_stays_cancelled() {
        let (_s, task) = store_with(Owner::Anyone);
        assert!(task.cancel("asked").is_ok());
        assert!(task.cancel_token().is_cancelled());
        assert_eq!(task.status(), Status::Cancelled);
        assert!(!task.finish(Ok(json!({"content": []}))));
        assert_eq!(task.status(), Status::Cancelled);
    }

    #[tokio::test]
    async fn wait_returns_once_terminal() {
        let (_s, task) = store_with(Owner::Anyone);
        let waiter = {
            let task = task.clone();
            tokio::spawn(async move { task.wait().await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished());
        task.finish(Ok(json!({})));
        tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .expect("wait ended")
            .unwrap();
        // Waiting on a finished task returns at once.
        task.wait().await;
    }

    #[test]
    fn owners_are_isolated() {
        let store = TaskStore::new();
        let alice = Owner::Token("alice".into());
        let task = store
            .create(alice.clone(), "t", None, CancelToken::new(), None)
            .unwrap();
        assert!(store.get(&task.id, &alice).is_some());
        assert!(store.get(&task.id, &Owner::Token("bob".into())).is_none());
        assert!(store.get(&task.id, &Owner::Anyone).is_none());
        assert!(store.get(&task.id, &Owner::Session(1)).is_none());
        assert!(store.get("nope", &alice).is_none());
        assert_eq!(list(&store, &alice, None).unwrap().0.len(), 1);
        assert!(
            list(&store, &Owner::Token("bob".into()), None)
                .unwrap()
                .0
                .is_empty()
        );
        // Another owner's task is no cursor for bob.
        assert!(list(&store, &Owner::Token("bob".into()), Some(&task.id)).is_none());
        store.cancel_owned_by(&alice);
        assert_eq!(task.status(), Status::Cancelled);
        store.forget(&alice);
        assert!(store.get(&task.id, &alice).is_none());
    }

    #[test]
    fn ttl_is_clamped_and_list_pages() {
        let store = TaskStore::new();
        let owner = Owner::Session(7);
        let short = store
            .create(owner.clone(), "t", Some(0), CancelToken::new(), None)
            .unwrap();
        assert_eq!(short.ttl_ms(), MIN_TTL_MS);
        let long = store
            .create(owner.clone(), "t", Some(u64::MAX), CancelToken::new(), None)
            .unwrap();
        assert_eq!(long.ttl_ms(), MAX_TTL_MS);
        for _ in 0..LIST_PAGE {
            store
                .create(owner.clone(), "t", None, CancelToken::new(), None)
                .unwrap();
        }
        let (page, more) = list(&store, &owner, None).unwrap();
        assert_eq!(page.len(), LIST_PAGE);
        assert!(more);
        let last = page.last().unwrap().id.clone();
        let (rest, more) = list(&store, &owner, Some(&last)).unwrap();
        assert_eq!(rest.len(), 2);
        assert!(!more);
    }

    #[test]
    fn per_owner_limit() {
        let store = TaskStore::new();
        for _ in 0..MAX_TASKS_PER_OWNER {
            store
                .create(Owner::Session(1), "t", None, CancelToken::new(), None)
                .unwrap();
        }
        let err = store
            .create(Owner::Session(1), "t", None, CancelToken::new(), None)
            .err()
            .expect("refused");
        assert_eq!(err.code, jsonrpc::BUSY);
        assert!(
            store
                .create(Owner::Session(2), "t", None, CancelToken::new(), None)
                .is_ok()
        );
    }

    #[test]
    fn delivery_prefers_live_listeners() {
        let (_s, task) = store_with(Owner::Anyone);
        assert!(task.deliver(json!(1)).is_err());
        let (tx, mut rx) = Outbox::channel();
        task.listen(tx.clone());
        assert!(task.deliver(json!(2)).is_ok());
        assert_eq!(rx.try_recv().unwrap(), json!(2));
        task.unlisten(&tx);
        assert!(task.deliver(json!(3)).is_err());
    }
}
