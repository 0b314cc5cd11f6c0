//! Every task of a server: the [`TaskStore`] shared by every session,
//! holding the tasks running here and, with `--state`, the way to those of
//! the other replicas ([`super::shared`]). Running the call and sending the
//! notifications is the business of [`super`].

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::shared::{Found, Shared, owner_key, runs_shared};
use super::task::{
    DEFAULT_TTL_MS, MAX_TASKS_PER_OWNER, MAX_TTL_MS, MIN_TTL_MS, Mirror, Owner, Snapshot, Status,
    Task, page, too_many_tasks,
};
use crate::protocol::jsonrpc::ErrorObject;
use crate::replicas::SharedState;
use crate::sandbox::CancelToken;
use crate::sync::lock;

/// Every task of a server: those running here, and with `--state` the
/// way to those of the other replicas ([`super::shared`]).
#[derive(Default)]
pub struct TaskStore {
    pub(super) tasks: Arc<Mutex<HashMap<String, Arc<Task>>>>,
    pub(super) shared: Option<Shared>,
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
        shared: Option<Arc<dyn Mirror>>,
    ) -> Result<Arc<Task>, ErrorObject> {
        let ttl_ms = ttl_ms
            .unwrap_or(DEFAULT_TTL_MS)
            .clamp(MIN_TTL_MS, MAX_TTL_MS);
        let task = Arc::new(Task::new(owner, tool, ttl_ms, cancel, shared)?);
        let id = task.id.clone();
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

impl TaskStore {
    /// A store whose tasks the replicas sharing `state` see too.
    pub fn shared(state: Arc<SharedState>) -> Self {
        let tasks = Arc::default();
        let shared = Shared::start(state, &tasks);
        TaskStore {
            tasks,
            shared: Some(shared),
        }
    }

    /// Whether `owner` may open one more task over every replica, when
    /// they share state (what [`Self::open`] checks first): asked before a
    /// call that gathers its input in rounds runs, so that a call that
    /// could not become a task — the shared store unreachable, the owner's
    /// tasks at their limit — is refused before its guest runs.
    pub async fn check_room(&self, owner: &Owner) -> Result<(), ErrorObject> {
        match self.shared.as_ref().zip(owner_key(owner)) {
            Some((shared, key)) => shared.check_room(&key).await,
            None => Ok(()),
        }
    }

    /// Creates a `working` task (see `create`), and stores it for the
    /// other replicas when it is shared.
    pub async fn open(
        &self,
        owner: Owner,
        tool: &str,
        ttl_ms: Option<u64>,
        cancel: crate::sandbox::CancelToken,
    ) -> Result<Arc<Task>, ErrorObject> {
        let shared = self.shared.as_ref().zip(owner_key(&owner));
        let Some((shared, key)) = shared else {
            return self.create(owner, tool, ttl_ms, cancel, None);
        };
        shared.check_room(&key).await?;
        let task = self.create(owner, tool, ttl_ms, cancel, Some(Arc::new(shared.clone())))?;
        if let Err(error) = shared.publish(&task, &key).await {
            lock(&self.tasks).remove(&task.id);
            return Err(error);
        }
        Ok(task)
    }

    /// The task with this id, here or on another replica, if `owner` may
    /// see it.
    pub async fn find(&self, id: &str, owner: &Owner) -> Result<Option<Found<'_>>, ErrorObject> {
        if let Some(task) = self.get(id, owner) {
            return Ok(Some(Found::Here(task)));
        }
        match self.shared.as_ref().zip(owner_key(owner)) {
            Some((shared, key)) => Ok(shared
                .find(id, &key)
                .await?
                .map(|r| Found::Elsewhere(shared, Box::new(r)))),
            None => Ok(None),
        }
    }

    /// The `traceparent` kept with task `id`, here or on another replica,
    /// whoever owns it: the trace its later requests continue (when
    /// exporting; the request's own lookup decides what it may see).
    pub async fn trace_of(&self, id: &str) -> Option<String> {
        let here = lock(&self.tasks).get(id).map(|task| task.trace());
        match (here, &self.shared) {
            (Some(trace), _) => trace,
            (None, Some(shared)) => shared.trace_of(id).await,
            (None, None) => None,
        }
    }

    /// [`Self::list`] over every replica.
    pub async fn list_all(
        &self,
        owner: &Owner,
        after: Option<&str>,
    ) -> Result<Option<(Vec<Snapshot>, bool)>, ErrorObject> {
        let Some((shared, key)) = self.shared.as_ref().zip(owner_key(owner)) else {
            return Ok(page(self.list_here(owner), after));
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
            .filter(|r| !here.contains_key(&r.task.id))
            .map(|r| Snapshot {
                outcome: None,
                ..r.task
            })
            .collect();
        all.extend(here.into_values());
        Ok(page(all, after))
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
            let running = lock(&self.tasks).values().any(|t| runs_shared(t));
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
}

#[cfg(test)]
mod tests {
    use super::super::task::*;
    use super::*;
    use crate::protocol::jsonrpc;
    use crate::protocol::mcp::revision::Revision;
    use crate::protocol::outbox::Outbox;
    use serde_json::json;

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
