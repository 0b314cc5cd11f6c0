//! MCP, independent of the transport: revisions 2025-03-26, 2025-06-18 and
//! 2025-11-25 (sessions) and 2026-07-28 (stateless), served side by side
//! by one core.
//!
//! - [`revision`]: the revisions and every way they differ, as predicates;
//! - [`request`]: the context of one request (revision, client
//!   capabilities, log level, outbox, caller, owner) and its answer;
//! - [`session`]: one client's session and the one dispatch over methods;
//! - [`lifecycle`]: `initialize`, `server/discover`, `logging/setLevel`;
//! - [`tools`]: `tools/list` and the one `tools/call`;
//! - [`confirm`]: confirming destructive calls (elicitation request, or a
//!   signed multi round-trip);
//! - [`tasks`]: background calls, their store and their methods;
//! - [`subscriptions`]: the `subscriptions/listen` streams.
//!
//! A call goes through [`crate::call`] on behalf of the request's caller,
//! so the audit log names it whatever the revision.

pub mod confirm;
pub mod lifecycle;
pub mod request;
pub mod revision;
pub mod session;
pub mod subscriptions;
pub mod tasks;
pub mod tools;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

pub use revision::Revision;
pub use session::{Door, Long, Session, long_kind, runs_long};

use crate::Runtime;
use crate::state::{SharedState, StateError};
use crate::sync::lock;

/// What the whole server shares: the runtime, every session (for
/// notifications to all), every task, the open subscriptions and the
/// confirmation states already answered.
pub struct Server {
    pub runtime: Arc<Runtime>,
    pub(crate) tasks: tasks::TaskStore,
    sessions: Mutex<Vec<Weak<Session>>>,
    next_session: AtomicU64,
    pub(crate) listeners: subscriptions::Listeners,
    pub(crate) used_states: confirm::UsedStates,
    /// What the replicas share (`--state`), when they do.
    pub(crate) shared: Option<Arc<SharedState>>,
}

impl Server {
    /// A server that keeps everything in its own memory.
    pub fn new(runtime: Arc<Runtime>) -> Arc<Server> {
        Self::build(runtime, None)
    }

    /// A server that shares its tasks, its request-state key and the states
    /// answered with the other replicas using `state`; keeps its lease
    /// alive while it runs.
    pub async fn sharing(
        runtime: Arc<Runtime>,
        state: Arc<SharedState>,
    ) -> Result<Arc<Server>, StateError> {
        let key = state.request_state_key(rand::random()).await?;
        confirm::share_key(key);
        state.keep_lease(key, confirm::share_key);
        Ok(Self::build(runtime, Some(state)))
    }

    fn build(runtime: Arc<Runtime>, shared: Option<Arc<SharedState>>) -> Arc<Server> {
        Arc::new(Server {
            runtime,
            tasks: match &shared {
                Some(state) => tasks::TaskStore::shared(state.clone()),
                None => tasks::TaskStore::new(),
            },
            sessions: Mutex::new(Vec::new()),
            next_session: AtomicU64::new(1),
            listeners: subscriptions::Listeners::default(),
            used_states: confirm::UsedStates::default(),
            shared,
        })
    }

    /// Whether the shared state lets this replica take traffic (true
    /// when there is none to reach): see [`crate::state::SharedState::is_ready`].
    pub fn state_ready(&self) -> bool {
        self.shared.as_ref().is_none_or(|s| s.is_ready())
    }

    /// Tells every client that can hear it that the tool set changed
    /// (`notifications/tools/list_changed`): initialized sessions with a
    /// standing stream, and open subscriptions; returns how many were told.
    pub fn tools_changed(&self) -> usize {
        let sessions: Vec<Arc<Session>> = {
            let mut sessions = lock(&self.sessions);
            sessions.retain(|s| s.strong_count() > 0);
            sessions.iter().filter_map(Weak::upgrade).collect()
        };
        sessions.iter().filter(|s| s.tell_tools_changed()).count() + self.listeners.tools_changed()
    }

    /// Waits (at most `bound`) until the shared store has every change of
    /// the tasks run here (at shutdown).
    pub async fn settle_tasks(&self, bound: std::time::Duration) {
        self.tasks.settle(bound).await;
    }

    /// Calls prepared and not yet finished, whatever the transport.
    pub fn running(&self) -> usize {
        self.runtime.running().count()
    }

    /// Stops every running call (at shutdown, after the grace period);
    /// each request still gets an answer saying the server is shutting down.
    pub fn shut_down_calls(&self) {
        self.runtime.running().shut_down_all();
    }

    fn next_session_key(&self) -> u64 {
        self.next_session.fetch_add(1, Ordering::Relaxed)
    }

    fn register(&self, session: &Arc<Session>) {
        let mut sessions = lock(&self.sessions);
        sessions.retain(|s| s.strong_count() > 0);
        sessions.push(Arc::downgrade(session));
    }
}

#[cfg(test)]
mod tests;
