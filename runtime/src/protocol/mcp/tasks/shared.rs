//! Tasks shared by the replicas of a deployment (`serve --state`): a task
//! made on one replica is found, polled, waited for and cancelled through
//! any other.
//!
//! The replica running a task keeps it in its own store, as without
//! `--state`, and mirrors every change to a [`Record`] in Redis (in order,
//! through one writer). Another replica answers from the record. A cancel
//! there makes the record final; the running replica sees that within
//! [`WATCH`] and stops the guest. A record is final once terminal: no later
//! write of the running replica undoes a cancel made elsewhere.
//!
//! A replica that dies stops renewing its lease ([`crate::state::LEASE`]);
//! the first replica to read one of its unfinished tasks after that marks
//! it `failed`, saying the server running it stopped.
//!
//! Only tasks of a bearer token or of no one (2026-07-28 without
//! authentication) are shared: a 2025-11-25 session's own tasks live and
//! die with its session, on the replica the load balancer pins it to.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc;

use super::store::{Owner, Snapshot, Status, Task};
use crate::protocol::jsonrpc::{self, ErrorObject};
use crate::state::{SharedState, StateError};
use crate::sync::lock;

/// How often a replica looks for its running tasks cancelled elsewhere.
const WATCH: Duration = Duration::from_millis(250);
/// How often a wait for another replica's task looks at its record.
const POLL: Duration = Duration::from_millis(100);

/// The key a shared task's owner is indexed by; `None` for owners whose
/// tasks are not shared.
pub fn owner_key(owner: &Owner) -> Option<String> {
    match owner {
        Owner::Token(name) => Some(format!("token:{name}")),
        Owner::Anyone => Some("anyone".into()),
        Owner::Session(_) => None,
    }
}

fn ms(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn at(ms: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms)
}

/// A JSON-RPC error as a record keeps it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct StoredError {
    code: i64,
    message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    data: Option<Value>,
}

/// A task as the shared store keeps it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Record {
    id: String,
    owner: String,
    tool: String,
    /// The replica running it (whose lease says whether it still does).
    replica: String,
    created_ms: u64,
    updated_ms: u64,
    ttl_ms: u64,
    status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<StoredError>,
}

impl Record {
    fn of(task: &Snapshot, owner: String, replica: &str) -> Record {
        let (result, error) = match &task.outcome {
            Some(Ok(result)) => (Some(result.clone()), None),
            Some(Err(e)) => (
                None,
                Some(StoredError {
                    code: e.code,
                    message: e.message.clone(),
                    data: e.data.clone(),
                }),
            ),
            None => (None, None),
        };
        Record {
            id: task.id.clone(),
            owner,
            tool: task.tool.clone(),
            replica: replica.to_string(),
            created_ms: ms(task.created),
            updated_ms: ms(task.updated),
            ttl_ms: task.ttl_ms,
            status: task.status,
            message: task.message.clone(),
            result,
            error,
        }
    }

    fn json(&self) -> String {
        // A record is plain data: serializing it cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn tool(&self) -> &str {
        &self.tool
    }

    pub fn status(&self) -> Status {
        self.status
    }

    pub fn snapshot(&self) -> Snapshot {
        let outcome = match (&self.result, &self.error) {
            (Some(result), _) => Some(Ok(result.clone())),
            (None, Some(e)) => Some(Err(ErrorObject {
                code: e.code,
                message: e.message.clone(),
                data: e.data.clone(),
            })),
            (None, None) => None,
        };
        Snapshot {
            id: self.id.clone(),
            tool: self.tool.clone(),
            created: at(self.created_ms),
            ttl_ms: self.ttl_ms,
            status: self.status,
            message: self.message.clone(),
            updated: at(self.updated_ms),
            outcome,
        }
    }

    fn ended(
        mut self,
        status: Status,
        message: String,
        outcome: Result<Value, StoredError>,
    ) -> Self {
        self.status = status;
        self.message = Some(message);
        self.updated_ms = ms(SystemTime::now());
        match outcome {
            Ok(result) => self.result = Some(result),
            Err(error) => self.error = Some(error),
        }
        self
    }

    /// The record of a task cancelled by a client of another replica.
    fn cancelled(self, why: &str) -> Self {
        let text = format!("the task was cancelled: {why}");
        self.ended(
            Status::Cancelled,
            why.to_string(),
            Ok(serde_json::json!({ "content": [{ "type": "text", "text": text }], "isError": true })),
        )
    }

    /// The record of a task whose replica stopped before it ended.
    fn orphaned(self) -> Self {
        let why = "the server running this task stopped before it ended; call the tool again";
        let error = StoredError {
            code: jsonrpc::INTERNAL_ERROR,
            message: why.to_string(),
            data: None,
        };
        self.ended(Status::Failed, why.to_string(), Err(error))
    }
}

/// One change of a task, on its way to the store.
struct Write {
    id: String,
    record: String,
    is_final: bool,
}

/// A task's way to the shared store: its changes, in order.
pub struct Mirror {
    queue: mpsc::UnboundedSender<Write>,
    /// Changes sent and not yet written.
    pending: Arc<AtomicUsize>,
    replica: String,
}

impl Mirror {
    pub(super) fn send(&self, task: Snapshot, owner: &Owner) {
        let Some(owner) = owner_key(owner) else {
            return;
        };
        let is_final = task.status.is_terminal();
        let record = Record::of(&task, owner, &self.replica);
        self.pending.fetch_add(1, Ordering::SeqCst);
        let sent = self.queue.send(Write {
            id: record.id.clone(),
            record: record.json(),
            is_final,
        });
        if sent.is_err() {
            self.pending.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// The shared half of a [`super::TaskStore`].
pub struct Shared {
    state: Arc<SharedState>,
    queue: mpsc::UnboundedSender<Write>,
    pending: Arc<AtomicUsize>,
}

/// What the store says to a failing Redis, for the client; the operator's
/// log gets the cause.
fn unreachable(err: StateError) -> ErrorObject {
    tracing::warn!("shared task store: {err}");
    ErrorObject::new(
        jsonrpc::INTERNAL_ERROR,
        "the shared task store is unreachable; try again shortly",
    )
}

impl Shared {
    /// Starts the writer of mirrored changes and the watcher of tasks
    /// cancelled elsewhere, for the tasks in `tasks` (on the async runtime).
    pub fn start(
        state: Arc<SharedState>,
        tasks: &Arc<Mutex<HashMap<String, Arc<Task>>>>,
    ) -> Shared {
        let (queue, mut rx) = mpsc::unbounded_channel::<Write>();
        let pending = Arc::new(AtomicUsize::new(0));
        let writer = state.clone();
        let written = pending.clone();
        tokio::spawn(async move {
            while let Some(write) = rx.recv().await {
                if let Err(err) = writer
                    .update_task(&write.id, &write.record, write.is_final)
                    .await
                {
                    tracing::warn!(task = %write.id, "the shared task store missed a change: {err}");
                }
                written.fetch_sub(1, Ordering::SeqCst);
            }
        });
        tokio::spawn(watch(state.clone(), Arc::downgrade(tasks)));
        Shared {
            state,
            queue,
            pending,
        }
    }

    pub fn mirror(&self) -> Mirror {
        Mirror {
            queue: self.queue.clone(),
            pending: self.pending.clone(),
            replica: self.state.replica().to_string(),
        }
    }

    /// Refuses a new task when `owner` holds too many over every replica.
    pub async fn check_room(&self, owner: &str, limit: usize) -> Result<(), ErrorObject> {
        let held = self.state.count_tasks(owner).await.map_err(unreachable)?;
        if held >= limit {
            return Err(ErrorObject::new(
                jsonrpc::BUSY,
                format!("too many tasks ({limit}); wait for some to expire or cancel them"),
            ));
        }
        Ok(())
    }

    /// Stores a task just made here.
    pub async fn publish(&self, task: &Task, owner: &str) -> Result<(), ErrorObject> {
        let record = Record::of(&task.summary(), owner.to_string(), self.state.replica());
        self.state
            .create_task(
                &task.id,
                owner,
                &record.json(),
                Duration::from_millis(task.ttl_ms()),
            )
            .await
            .map_err(unreachable)
    }

    /// Another replica's task `id`, if it belongs to `owner`; one whose
    /// replica stopped is failed on the way.
    pub async fn find(&self, id: &str, owner: &str) -> Result<Option<Record>, ErrorObject> {
        let Some((record, is_final)) = self.read(id).await? else {
            return Ok(None);
        };
        if record.owner != owner {
            return Ok(None);
        }
        if is_final
            || self
                .state
                .is_alive(&record.replica)
                .await
                .map_err(unreachable)?
        {
            return Ok(Some(record));
        }
        let orphaned = record.orphaned();
        if self
            .state
            .update_task(id, &orphaned.json(), true)
            .await
            .map_err(unreachable)?
        {
            tracing::info!(task = id, replica = %orphaned.replica, "task failed: its replica stopped");
            return Ok(Some(orphaned));
        }
        // Ended meanwhile: what it ended as.
        Ok(self.read(id).await?.map(|(r, _)| r))
    }

    async fn read(&self, id: &str) -> Result<Option<(Record, bool)>, ErrorObject> {
        let Some((json, is_final)) = self.state.task(id).await.map_err(unreachable)? else {
            return Ok(None);
        };
        match serde_json::from_str::<Record>(&json) {
            Ok(record) => Ok(Some((record, is_final))),
            Err(err) => {
                tracing::warn!(
                    task = id,
                    "an unreadable task record in the shared store: {err}"
                );
                Ok(None)
            }
        }
    }

    /// Cancels another replica's task; `Err` with its status when it had
    /// ended already.
    pub async fn cancel(
        &self,
        record: Record,
        why: &str,
    ) -> Result<Result<Record, Status>, ErrorObject> {
        if record.status.is_terminal() {
            return Ok(Err(record.status));
        }
        let id = record.id.clone();
        let cancelled = record.cancelled(why);
        if self
            .state
            .update_task(&id, &cancelled.json(), true)
            .await
            .map_err(unreachable)?
        {
            return Ok(Ok(cancelled));
        }
        match self.read(&id).await? {
            Some((now, _)) => Ok(Err(now.status)),
            None => Ok(Err(Status::Cancelled)),
        }
    }

    /// Waits until another replica's task is terminal.
    pub async fn wait(&self, record: Record, owner: &str) -> Result<Record, ErrorObject> {
        let mut record = record;
        while !record.status.is_terminal() {
            tokio::time::sleep(POLL).await;
            record = self.find(&record.id, owner).await?.ok_or_else(|| {
                ErrorObject::invalid_params("Failed to retrieve task: Task not found")
            })?;
        }
        Ok(record)
    }

    /// The records of `owner`'s tasks, over every replica.
    pub async fn owned(&self, owner: &str) -> Result<Vec<Record>, ErrorObject> {
        let records = self.state.owned_tasks(owner).await.map_err(unreachable)?;
        Ok(records
            .iter()
            .filter_map(|json| serde_json::from_str::<Record>(json).ok())
            .filter(|r| r.owner == owner)
            .collect())
    }
}

/// Stops the guests of tasks running here that were made final elsewhere
/// (cancelled by a client of another replica), until the store is dropped.
async fn watch(state: Arc<SharedState>, tasks: Weak<Mutex<HashMap<String, Arc<Task>>>>) {
    let mut tick = tokio::time::interval(WATCH);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(tasks) = tasks.upgrade() else {
            return;
        };
        let running: Vec<Arc<Task>> = lock(&tasks)
            .values()
            .filter(|t| owner_key(&t.owner).is_some() && !t.status().is_terminal())
            .cloned()
            .collect();
        drop(tasks);
        if running.is_empty() {
            continue;
        }
        let ids: Vec<String> = running.iter().map(|t| t.id.clone()).collect();
        let Ok(finals) = state.finals(&ids).await else {
            continue; // unreachable: the heartbeat says so
        };
        for (task, is_final) in running.iter().zip(finals) {
            if is_final && task.cancel("cancelled through another server").is_ok() {
                tracing::info!(task = %task.id, tool = %task.tool, "task cancelled through another replica; its guest stopped");
            }
        }
    }
}

/// A task found by its id: running here, or another replica's.
pub enum Found {
    Here(Arc<Task>),
    Elsewhere(Box<Record>),
}

impl super::TaskStore {
    /// A store whose tasks the replicas sharing `state` see too.
    pub fn shared(state: Arc<SharedState>) -> Self {
        let tasks = Arc::default();
        let shared = Shared::start(state, &tasks);
        super::TaskStore {
            tasks,
            shared: Some(shared),
        }
    }

    /// Creates a `working` task as [`Self::create`] does, and stores it
    /// for the other replicas when it is shared.
    pub async fn open(
        &self,
        owner: Owner,
        tool: &str,
        ttl_ms: Option<u64>,
        cancel: crate::sandbox::CancelToken,
    ) -> Result<Arc<Task>, ErrorObject> {
        let shared = self.shared.as_ref().zip(owner_key(&owner));
        let Some((shared, key)) = shared else {
            return self.create(owner, tool, ttl_ms, cancel);
        };
        shared
            .check_room(&key, super::store::MAX_TASKS_PER_OWNER)
            .await?;
        let task = self.create_here(owner, tool, ttl_ms, cancel, Some(shared.mirror()))?;
        if let Err(error) = shared.publish(&task, &key).await {
            lock(&self.tasks).remove(&task.id);
            return Err(error);
        }
        Ok(task)
    }

    /// The task with this id, here or on another replica, if `owner` may
    /// see it.
    pub async fn find(&self, id: &str, owner: &Owner) -> Result<Option<Found>, ErrorObject> {
        if let Some(task) = self.get(id, owner) {
            return Ok(Some(Found::Here(task)));
        }
        match self.shared.as_ref().zip(owner_key(owner)) {
            Some((shared, key)) => Ok(shared
                .find(id, &key)
                .await?
                .map(|r| Found::Elsewhere(Box::new(r)))),
            None => Ok(None),
        }
    }

    /// [`Self::list`] over every replica.
    pub async fn list_all(
        &self,
        owner: &Owner,
        after: Option<&str>,
    ) -> Result<Option<(Vec<Snapshot>, bool)>, ErrorObject> {
        let Some((shared, key)) = self.shared.as_ref().zip(owner_key(owner)) else {
            return Ok(self.list(owner, after));
        };
        let here: HashMap<String, Snapshot> = self
            .list_here(owner)
            .into_iter()
            .map(|t| (t.id.clone(), t))
            .collect();
        let mut all: Vec<Snapshot> = shared
            .owned(&key)
            .await?
            .into_iter()
            .filter(|r| !here.contains_key(&r.id))
            .map(|r| {
                let mut snapshot = r.snapshot();
                snapshot.outcome = None;
                snapshot
            })
            .collect();
        all.extend(here.into_values());
        Ok(super::store::page(all, after))
    }

    /// Waits, at most `bound`, until every shared task running here has
    /// ended and its last change is written (at shutdown: the other
    /// replicas then answer for those tasks with their real outcome).
    pub async fn settle(&self, bound: Duration) {
        let Some(shared) = &self.shared else {
            return;
        };
        let deadline = tokio::time::Instant::now() + bound;
        loop {
            let running = lock(&self.tasks)
                .values()
                .any(|t| owner_key(&t.owner).is_some() && !t.status().is_terminal());
            if !running && shared.pending.load(Ordering::SeqCst) == 0 {
                return;
            }
            if tokio::time::Instant::now() >= deadline {
                tracing::warn!("shutting down before every task change reached the shared store");
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// The shared half, when there is one.
    pub fn sharing(&self) -> Option<&Shared> {
        self.shared.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn snapshot(status: Status, outcome: Option<super::super::store::Outcome>) -> Snapshot {
        Snapshot {
            id: "ab".repeat(16),
            tool: "t".into(),
            created: at(1_700_000_000_123),
            ttl_ms: 60_000,
            status,
            message: Some("why".into()),
            updated: at(1_700_000_001_456),
            outcome,
        }
    }

    #[test]
    fn only_tokens_and_anyone_share_their_tasks() {
        assert_eq!(
            owner_key(&Owner::Token("ci".into())).as_deref(),
            Some("token:ci")
        );
        assert_eq!(owner_key(&Owner::Anyone).as_deref(), Some("anyone"));
        assert_eq!(owner_key(&Owner::Session(3)), None);
    }

    #[test]
    fn a_record_shows_what_the_task_showed() {
        let outcomes = [
            None,
            Some(Ok(json!({"content": [], "isError": false}))),
            Some(Err(
                ErrorObject::new(-32603, "boom").with_data(json!({"x": 1}))
            )),
        ];
        let statuses = [Status::Working, Status::Completed, Status::Failed];
        for (status, outcome) in statuses.into_iter().zip(outcomes) {
            let here = snapshot(status, outcome);
            let json = Record::of(&here, "anyone".into(), "r1").json();
            let back: Record = serde_json::from_str(&json).unwrap();
            let there = back.snapshot();
            assert_eq!(there.to_json(), here.to_json(), "{status:?}");
            assert_eq!(
                there.to_json_extension(),
                here.to_json_extension(),
                "{status:?}"
            );
        }
    }

    #[test]
    fn cancelled_and_orphaned_records_end_the_task() {
        let record = Record::of(&snapshot(Status::Working, None), "anyone".into(), "r1");
        let cancelled = record.clone().cancelled("asked").snapshot();
        assert_eq!(cancelled.status, Status::Cancelled);
        assert_eq!(cancelled.to_json()["statusMessage"], "asked");
        let orphaned = record.orphaned().snapshot().to_json_extension();
        assert_eq!(orphaned["status"], "failed");
        assert_eq!(orphaned["error"]["code"], -32603);
        assert!(
            orphaned["statusMessage"]
                .as_str()
                .unwrap()
                .contains("stopped before it ended")
        );
    }
}
