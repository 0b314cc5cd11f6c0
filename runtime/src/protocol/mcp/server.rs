//! What the whole MCP server shares across sessions and requests: the
//! runtime, every session (for notifications to all), every task, the open
//! subscriptions, the confirmation states already answered, and — with
//! replicas — the shared store.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use super::listeners::Listeners;
use super::request_state::{UsedStates, share_key};
use super::session::Session;
use super::tasks::store::TaskStore;
use super::tasks::task::Owner;
use crate::Runtime;
use crate::call::Caller;
use crate::call::UpdateSink;
use crate::catalog::Catalog;
use crate::policy::Token;
use crate::replicas::{SharedState, StateError};
use crate::sandbox::CancelToken;
use crate::sync::lock;

/// A fingerprint of the resources (and templates) and of the prompts
/// `catalog` lists, as MCP lists them.
fn offers_listed(catalog: &Catalog) -> (u64, u64) {
    use std::hash::{Hash, Hasher};
    let hash = |items: Vec<serde_json::Value>| {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        crate::json::to_string(&serde_json::Value::Array(items)).hash(&mut hasher);
        hasher.finish()
    };
    let resources = catalog
        .resources()
        .map(|(r, _)| r.to_mcp())
        .chain(catalog.templates().map(|(t, _)| t.info.to_mcp()))
        .collect();
    let prompts = catalog.prompts().map(|(p, _)| p.to_mcp()).collect();
    (hash(resources), hash(prompts))
}

/// What the whole server shares: the runtime, every session (for
/// notifications to all), every task, the open subscriptions and the
/// confirmation states already answered.
pub struct Server {
    pub runtime: Arc<Runtime>,
    pub(crate) tasks: TaskStore,
    sessions: Mutex<Vec<Weak<Session>>>,
    next_session: AtomicU64,
    pub(crate) listeners: Listeners,
    pub(crate) used_states: UsedStates,
    /// What the replicas share (`--state`), when they do.
    pub(crate) shared: Option<Arc<SharedState>>,
    /// Hears the components' `host.resource-updated` (kept alive here: the
    /// runtime holds it weakly).
    _updates: Arc<UpdateSink>,
    /// What the resources and prompts listed last were, to tell clients
    /// only of a list that changed.
    listed: Mutex<(u64, u64)>,
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
        share_key(key);
        state.keep_lease(key, share_key);
        Ok(Self::build(runtime, Some(state)))
    }

    fn build(runtime: Arc<Runtime>, shared: Option<Arc<SharedState>>) -> Arc<Server> {
        Arc::new_cyclic(|server: &Weak<Server>| {
            let server = server.clone();
            let updates: Arc<UpdateSink> = Arc::new(move |uri: &str| {
                if let Some(server) = server.upgrade() {
                    server.resource_updated(uri);
                }
            });
            runtime.resource_updates().listen(&updates);
            let listed = Mutex::new(offers_listed(&runtime.catalog()));
            Self::with_sink(runtime, shared, updates, listed)
        })
    }

    fn with_sink(
        runtime: Arc<Runtime>,
        shared: Option<Arc<SharedState>>,
        updates: Arc<UpdateSink>,
        listed: Mutex<(u64, u64)>,
    ) -> Server {
        {
            Server {
                runtime,
                tasks: match &shared {
                    Some(state) => TaskStore::shared(state.clone()),
                    None => TaskStore::new(),
                },
                sessions: Mutex::new(Vec::new()),
                next_session: AtomicU64::new(1),
                listeners: Listeners::default(),
                used_states: UsedStates::default(),
                shared,
                _updates: updates,
                listed,
            }
        }
    }

    /// Whether the shared state lets this replica take traffic (true
    /// when there is none to reach): see [`crate::replicas::SharedState::is_ready`].
    pub fn state_ready(&self) -> bool {
        self.shared.as_ref().is_none_or(|s| s.is_ready())
    }

    /// Tells every client that can hear it that the tool set changed
    /// (`notifications/tools/list_changed`): initialized sessions with a
    /// standing stream, and open subscriptions; returns how many were told.
    /// When the catalog's resources or prompts changed too, they hear of
    /// it (`notifications/resources/list_changed`, `prompts/list_changed`).
    pub fn tools_changed(&self) -> usize {
        let sessions = self.live_sessions();
        let told = sessions.iter().filter(|s| s.tell_tools_changed()).count()
            + self.listeners.tools_changed();
        let now = offers_listed(&self.runtime.catalog());
        let before = std::mem::replace(&mut *lock(&self.listed), now);
        if now.0 != before.0 {
            for session in &sessions {
                session.tell_changed("notifications/resources/list_changed");
            }
            self.listeners.resources_changed();
        }
        if now.1 != before.1 {
            for session in &sessions {
                session.tell_changed("notifications/prompts/list_changed");
            }
            self.listeners.prompts_changed();
        }
        told
    }

    fn live_sessions(&self) -> Vec<Arc<Session>> {
        let mut sessions = lock(&self.sessions);
        sessions.retain(|s| s.strong_count() > 0);
        sessions.iter().filter_map(Weak::upgrade).collect()
    }

    /// Tells the sessions and subscriptions subscribed to `uri` that it
    /// changed (`notifications/resources/updated`); returns how many.
    pub fn resource_updated(&self, uri: &str) -> usize {
        let sessions = self.live_sessions();
        sessions
            .iter()
            .filter(|s| s.tell_resource_updated(uri))
            .count()
            + self.listeners.resource_updated(uri)
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

    /// Opens a session for `caller`, limited to `token`'s tools, and keeps
    /// it for notifications to all.
    pub fn open_session(&self, token: Option<Token>, caller: Caller) -> Arc<Session> {
        let key = self.next_session.fetch_add(1, Ordering::Relaxed);
        let session = Arc::new(Session::new(key, caller, token));
        let mut sessions = lock(&self.sessions);
        sessions.retain(|s| s.strong_count() > 0);
        sessions.push(Arc::downgrade(&session));
        session
    }

    /// Cancels every call of `session` (it ended), and its tasks unless
    /// they belong to a token (then another session of the same token may
    /// still fetch them).
    pub fn cancel_session(&self, session: &Session) {
        self.stop_session(session, CancelToken::cancel);
    }

    /// Stops every call of `session` because the server is shutting down:
    /// each still answers, with an error saying so.
    pub fn shut_down_session(&self, session: &Session) {
        self.stop_session(session, CancelToken::shut_down);
    }

    fn stop_session(&self, session: &Session, stop: fn(&CancelToken)) {
        session.stop_requests(stop);
        if session.token_name().is_none() {
            let owner = Owner::Session(session.key());
            self.tasks.cancel_owned_by(&owner);
            self.tasks.forget(&owner);
        }
    }

    /// Ends `session`'s subscriptions (the stdio client closed stdin).
    pub fn end_subscriptions(&self, session: &Session) {
        self.listeners.end_session(session.key());
    }
}
