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
//! A replica that dies stops renewing its lease ([`crate::replicas::LEASE`]);
//! the first replica to read one of its unfinished tasks after that marks
//! it `failed`, saying the server running it stopped.
//!
//! Only tasks of a bearer token or of no one (2026-07-28 without
//! authentication) are shared: a 2025-11-25 session's own tasks live and
//! die with its session, on the replica the load balancer pins it to.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use super::task::{
    MAX_TASKS_PER_OWNER, Mirror, Owner, Snapshot, Status, Task, task_not_found, too_many_tasks,
};
use crate::protocol::jsonrpc::{self, ErrorObject};
use crate::replicas::{SharedState, StateError};
use crate::sync::lock;

/// How often a replica looks for its running tasks cancelled elsewhere.
const WATCH: Duration = Duration::from_millis(250);
/// How often a wait for another replica's task looks at its record.
const POLL: Duration = Duration::from_millis(100);

/// The key a shared task's owner is indexed by; `None` for owners whose
/// tasks are not shared.
pub(super) fn owner_key(owner: &Owner) -> Option<String> {
    match owner {
        Owner::Token(name) => Some(format!("token:{name}")),
        Owner::Anyone => Some("anyone".into()),
        Owner::Session(_) => None,
    }
}

/// Whether `task` is shared with the other replicas and still running.
pub(super) fn runs_shared(task: &Task) -> bool {
    owner_key(&task.owner).is_some() && !task.status().is_terminal()
}

/// A task as the shared store keeps it: what its `Task` objects show, its
/// owner, and the replica running it (whose lease says whether it still
/// does).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Record {
    owner: String,
    replica: String,
    #[serde(flatten)]
    pub task: Snapshot,
}

impl Record {
    fn json(&self) -> String {
        // A record is plain data: serializing it cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The record of a task whose replica stopped before it ended.
    fn orphaned(mut self) -> Self {
        let why = "the server running this task stopped before it ended; call the tool again";
        let error = ErrorObject::new(jsonrpc::INTERNAL_ERROR, why);
        self.task
            .end(Status::Failed, Some(why.to_string()), Err(error));
        self
    }
}

/// The shared half of a [`super::TaskStore`]; each shared task holds a
/// clone, its way to the store ([`Shared::mirror`]).
#[derive(Clone)]
pub struct Shared {
    state: Arc<SharedState>,
    /// Changes on their way to the store, serialized by the writer (off
    /// the task's lock, under which they are queued in order).
    queue: mpsc::UnboundedSender<Record>,
    /// Changes sent and not yet written.
    pub(super) pending: Arc<AtomicUsize>,
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
        let (queue, mut rx) = mpsc::unbounded_channel::<Record>();
        let pending = Arc::new(AtomicUsize::new(0));
        let writer = state.clone();
        let written = pending.clone();
        tokio::spawn(async move {
            while let Some(record) = rx.recv().await {
                let (id, is_final) = (&record.task.id, record.task.status.is_terminal());
                if let Err(err) = writer.update_task(id, &record.json(), is_final).await {
                    tracing::warn!(task = %id, "the shared task store missed a change: {err}");
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

    /// Queues a task's new state for the store; one writer writes the
    /// changes of every task in order.
    fn queue(&self, task: Snapshot, owner: &Owner) {
        let Some(owner) = owner_key(owner) else {
            return;
        };
        let record = Record {
            owner,
            replica: self.state.replica().to_string(),
            task,
        };
        self.pending.fetch_add(1, Ordering::SeqCst);
        if self.queue.send(record).is_err() {
            self.pending.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Refuses a new task when `owner` holds too many over every replica.
    pub async fn check_room(&self, owner: &str) -> Result<(), ErrorObject> {
        let held = self.state.count_tasks(owner).await.map_err(unreachable)?;
        match held >= MAX_TASKS_PER_OWNER {
            true => Err(too_many_tasks()),
            false => Ok(()),
        }
    }

    /// Stores a task just made here.
    pub async fn publish(&self, task: &Task, owner: &str) -> Result<(), ErrorObject> {
        let record = Record {
            owner: owner.to_string(),
            replica: self.state.replica().to_string(),
            task: task.summary(),
        };
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

    /// The `traceparent` kept with task `id`, whoever owns it (it only
    /// names the trace a later request of the task joins; what the request
    /// may see is decided by [`Self::find`]).
    pub async fn trace_of(&self, id: &str) -> Option<String> {
        self.read(id).await.ok().flatten()?.0.task.trace
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
        let mut cancelled = record;
        if !cancelled.task.cancel(why) {
            return Ok(Err(cancelled.task.status));
        }
        let id = cancelled.task.id.clone();
        if self
            .state
            .update_task(&id, &cancelled.json(), true)
            .await
            .map_err(unreachable)?
        {
            return Ok(Ok(cancelled));
        }
        match self.read(&id).await? {
            Some((now, _)) => Ok(Err(now.task.status)),
            None => Ok(Err(Status::Cancelled)),
        }
    }

    /// Waits until another replica's task is terminal.
    pub async fn wait(&self, mut record: Record) -> Result<Record, ErrorObject> {
        while !record.task.status.is_terminal() {
            tokio::time::sleep(POLL).await;
            let found = self.find(&record.task.id, &record.owner).await?;
            record = found.ok_or_else(task_not_found)?;
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
            .filter(|t| runs_shared(t))
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

impl Mirror for Shared {
    /// Queues a task's new state for the store; one writer writes the
    /// changes of every task in order.
    fn mirror(&self, task: Snapshot, owner: &Owner) {
        self.queue(task, owner);
    }
}

/// A task found by its id: running here, or another replica's.
pub enum Found<'a> {
    Here(Arc<Task>),
    Elsewhere(&'a Shared, Box<Record>),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::mcp::Revision;
    use serde_json::json;
    use std::time::{SystemTime, UNIX_EPOCH};

    fn at(ms: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(ms)
    }

    fn snapshot(status: Status, outcome: Option<super::super::task::Outcome>) -> Snapshot {
        Snapshot {
            id: "ab".repeat(16),
            tool: "t".into(),
            created: at(1_700_000_000_123),
            ttl_ms: 60_000,
            status,
            message: Some("why".into()),
            updated: at(1_700_000_001_456),
            outcome,
            input_requests: None,
            trace: None,
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
            let record = Record {
                owner: "anyone".into(),
                replica: "r1".into(),
                task: here.clone(),
            };
            let back: Record = serde_json::from_str(&record.json()).unwrap();
            assert_eq!(
                (back.owner.as_str(), back.replica.as_str()),
                ("anyone", "r1")
            );
            for revision in [Revision::V2025_11_25, Revision::V2026_07_28] {
                let shown = back.task.to_mcp(revision);
                assert_eq!(shown, here.to_mcp(revision), "{status:?} {revision:?}");
            }
        }
    }

    #[test]
    fn cancelled_and_orphaned_records_end_the_task() {
        let record = Record {
            owner: "anyone".into(),
            replica: "r1".into(),
            task: snapshot(Status::Working, None),
        };
        let mut cancelled = record.clone().task;
        assert!(cancelled.cancel("asked"));
        assert_eq!(cancelled.status, Status::Cancelled);
        assert!(!cancelled.cancel("again"), "a task ends once");
        assert!(
            !cancelled.finish(Ok(json!({}))),
            "a cancel made first stays"
        );
        assert_eq!(
            cancelled.to_mcp(Revision::V2025_11_25)["statusMessage"],
            "asked"
        );
        let orphaned = record.orphaned().task.to_mcp(Revision::V2026_07_28);
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
