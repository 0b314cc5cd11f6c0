//! One client's MCP session, independent of the transport: who it is
//! (caller, token), what `initialize` settled, its standing stream, the
//! requests it is running (for `notifications/cancelled`) and the requests
//! the server sent it and waits to hear back from.
//!
//! A session may have a standing stream ([`Session::set_standing`]: stdout,
//! or the HTTP GET stream) for what is not tied to a request:
//! `notifications/tools/list_changed`, `notifications/tasks/status`, a
//! background task's elicitation.
//!
//! Requests of revision 2026-07-28 stand alone: the session only carries
//! who the caller is (over HTTP each such request gets a throw-away one).
//! Requests are answered by [`super::dispatch`].

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::model::client::CancelledParams;
use super::request::Client;
use super::revision::Revision;
use crate::call::Caller;
use crate::policy::Token;
use crate::protocol::jsonrpc::{self, Id, Reply, Request};
use crate::protocol::outbox::Outbox;
use crate::sandbox::CancelToken;
use crate::sync::lock;

/// What `initialize` settled.
#[derive(Default)]
struct State {
    /// The negotiated revision, once `initialize` succeeded.
    revision: Option<Revision>,
    /// `notifications/initialized` arrived.
    ready: bool,
    client: Client,
}

/// One client's MCP session.
pub struct Session {
    /// Unique within the server; owns the tasks of unauthenticated sessions.
    key: u64,
    /// Who the audit log names for this session's calls.
    caller: Caller,
    /// The bearer token the session was opened with; it limits the tools.
    token: Option<Token>,
    /// Where messages not tied to a request go (stdout, the HTTP GET stream).
    standing: Mutex<Option<Outbox>>,
    state: Mutex<State>,
    /// Lowest level of guest log messages forwarded (index into `Level::ALL`).
    level: Arc<AtomicU8>,
    /// Running requests by request id key, for `notifications/cancelled`.
    running: Mutex<HashMap<String, CancelToken>>,
    /// Requests we sent, waiting for the client's reply.
    pending: Mutex<HashMap<String, oneshot::Sender<Result<Value, Value>>>>,
    next_request: AtomicU64,
    /// The resource URIs it subscribed to (`resources/subscribe`).
    subscribed: Mutex<BTreeSet<String>>,
    /// When it opened, when exporting telemetry (for
    /// `mcp.server.session.duration`, recorded when it is dropped).
    opened: Option<std::time::Instant>,
}

/// The most resources one session may subscribe to at once.
pub const MAX_SUBSCRIPTIONS: usize = 1000;

impl Session {
    /// A session numbered `key` (unique within the server), for `caller`,
    /// limited to `token`'s tools. [`super::Server::open_session`] makes
    /// one and keeps it for notifications to all.
    pub(super) fn new(key: u64, caller: Caller, token: Option<Token>) -> Session {
        Session {
            key,
            caller,
            token,
            standing: Mutex::new(None),
            state: Mutex::new(State::default()),
            level: Arc::new(AtomicU8::new(0)),
            running: Mutex::new(HashMap::new()),
            pending: Mutex::new(HashMap::new()),
            next_request: AtomicU64::new(1),
            subscribed: Mutex::new(BTreeSet::new()),
            opened: crate::telemetry::on().then(std::time::Instant::now),
        }
    }

    pub(super) fn key(&self) -> u64 {
        self.key
    }

    pub(super) fn caller(&self) -> &Caller {
        &self.caller
    }

    /// The token the session belongs to.
    pub fn token_name(&self) -> Option<&str> {
        self.token.as_ref().map(|t| t.name.as_str())
    }

    pub(super) fn allows(&self, tool: &str) -> bool {
        self.token.as_ref().is_none_or(|t| t.allows_tool(tool))
    }

    /// Whether the session may see and read the resource `uri` (or the
    /// resources of the template `template`, its text, that `uri` matched).
    pub(super) fn allows_resource(&self, uri: &str, template: Option<&str>) -> bool {
        self.token
            .as_ref()
            .is_none_or(|t| t.allows_resource(uri, template))
    }

    pub(super) fn allows_prompt(&self, prompt: &str) -> bool {
        self.token.as_ref().is_none_or(|t| t.allows_prompt(prompt))
    }

    /// Subscribes to `uri`'s updates; false when the session holds
    /// [`MAX_SUBSCRIPTIONS`] already.
    pub(super) fn subscribe(&self, uri: &str) -> bool {
        let mut subscribed = lock(&self.subscribed);
        if subscribed.len() >= MAX_SUBSCRIPTIONS && !subscribed.contains(uri) {
            return false;
        }
        subscribed.insert(uri.to_string());
        true
    }

    pub(super) fn unsubscribe(&self, uri: &str) {
        lock(&self.subscribed).remove(uri);
    }

    /// `notifications/resources/updated` for `uri`, when the session
    /// subscribed to it and has a standing stream.
    pub(super) fn tell_resource_updated(&self, uri: &str) -> bool {
        lock(&self.subscribed).contains(uri)
            && self.notify_standing(jsonrpc::notification(
                "notifications/resources/updated",
                json!({ "uri": uri }),
            ))
    }

    /// A list-changed notification (`method`) to an initialized session
    /// with a standing stream; false when it cannot be told.
    pub(super) fn tell_changed(&self, method: &str) -> bool {
        lock(&self.state).revision.is_some()
            && self.notify_standing(jsonrpc::notification(method, json!({})))
    }

    /// The revision negotiated at `initialize`, if any.
    pub fn revision(&self) -> Option<Revision> {
        lock(&self.state).revision
    }

    pub(super) fn client(&self) -> Client {
        lock(&self.state).client
    }

    pub(super) fn level(&self) -> &Arc<AtomicU8> {
        &self.level
    }

    /// Records what `initialize` negotiated; false when it already ran.
    pub(super) fn initialized(&self, revision: Revision, client: Client) -> bool {
        let mut state = lock(&self.state);
        if state.revision.is_some() {
            return false;
        }
        state.revision = Some(revision);
        state.client = client;
        true
    }

    /// Sets (or clears) the stream for messages not tied to a request.
    pub fn set_standing(&self, out: Option<Outbox>) {
        *lock(&self.standing) = out;
    }

    /// Sends a notification on the standing stream; false when there is
    /// none (or it is full: the notification is then dropped and counted).
    pub(super) fn notify_standing(&self, message: Value) -> bool {
        let mut standing = lock(&self.standing);
        match standing.as_ref() {
            Some(out) if out.is_closed() => {
                *standing = None;
                false
            }
            Some(out) => out.notify(message),
            None => false,
        }
    }

    /// Queues a request to the client on the standing stream if there is
    /// room; gives it back otherwise.
    pub(super) fn try_send_standing(&self, message: Value) -> Result<(), Value> {
        match lock(&self.standing).as_ref() {
            Some(out) => out.try_send(message),
            None => Err(message),
        }
    }

    /// `notifications/tools/list_changed` to an initialized session with a
    /// standing stream; false when it cannot be told.
    pub(super) fn tell_tools_changed(&self) -> bool {
        lock(&self.state).revision.is_some()
            && self.notify_standing(jsonrpc::notification(
                "notifications/tools/list_changed",
                json!({}),
            ))
    }

    /// Stops every running request of this session with `stop` and
    /// forgets the requests it sent and still waits for.
    pub(super) fn stop_requests(&self, stop: fn(&CancelToken)) {
        lock(&self.running).values().for_each(stop);
        lock(&self.pending).clear();
    }

    /// Keeps `token` findable by request id `id` (for
    /// `notifications/cancelled`) until the guard is dropped.
    pub(super) fn register(self: &Arc<Self>, id: &Id, token: CancelToken) -> Registered {
        let key = id.key();
        lock(&self.running).insert(key.clone(), token);
        Registered {
            session: self.clone(),
            key,
        }
    }

    /// Sends a request to the client and waits for its reply (`None` when
    /// it cannot be sent or the client never answers).
    pub(super) async fn ask(
        &self,
        out: &Outbox,
        method: &str,
        params: Value,
        timeout: std::time::Duration,
    ) -> Option<Result<Value, Value>> {
        let n = self.next_request.fetch_add(1, Ordering::Relaxed);
        let id = Id::from_value(Value::String(format!("airlock-{n}"))).unwrap_or_else(Id::null);
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(id.key(), tx);
        let answer = match out.send(jsonrpc::request(&id, method, params)).await {
            Ok(()) => tokio::time::timeout(timeout, rx)
                .await
                .ok()
                .and_then(Result::ok),
            Err(_) => None,
        };
        lock(&self.pending).remove(&id.key());
        answer
    }

    /// A reply of the client to a request the server sent.
    pub(super) fn reply(&self, reply: Reply) {
        match lock(&self.pending).remove(&reply.id.key()) {
            Some(waiting) => {
                let _ = waiting.send(reply.result);
            }
            None => tracing::debug!("reply to an unknown request {}", reply.id.key()),
        }
    }

    /// A notification of the client: `initialized`, or `cancelled` for a
    /// running request.
    pub(super) fn notification(&self, request: &Request) {
        match request.method.as_str() {
            "notifications/initialized" => lock(&self.state).ready = true,
            "notifications/cancelled" => {
                let Some(id) = CancelledParams::read(request.params.as_ref())
                    .request_id
                    .and_then(Id::from_value)
                else {
                    return;
                };
                if let Some(token) = lock(&self.running).get(&id.key()) {
                    tracing::debug!("client cancelled request {}", id.key());
                    token.cancel();
                }
            }
            // Other notifications (progress, roots changed…) need nothing.
            other => tracing::debug!("ignoring notification {other}"),
        }
    }
}

/// A session ends when its last holder lets go (deleted, expired, its
/// connection or stdin closed): its duration goes to
/// `mcp.server.session.duration`. A stateless request's session never
/// initialized (no revision) and is not one.
impl Drop for Session {
    fn drop(&mut self) {
        let Some(opened) = self.opened else {
            return;
        };
        let Some(revision) = lock(&self.state).revision else {
            return;
        };
        let transport = match self.caller {
            Caller::Stdio => "pipe",
            _ => "tcp",
        };
        crate::telemetry::session_ended(opened.elapsed(), Some(revision.as_str()), transport);
    }
}

/// A running request's place in its session's registry, for
/// `notifications/cancelled`.
pub(super) struct Registered {
    session: Arc<Session>,
    key: String,
}

impl Drop for Registered {
    fn drop(&mut self) {
        lock(&self.session.running).remove(&self.key);
    }
}
