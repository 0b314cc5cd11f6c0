//! One client's MCP session, independent of the transport, and the one
//! dispatch over its requests.
//!
//! A transport feeds every parsed message to [`Session::handle`] together
//! with an [`Outbox`]: the stream for what the server sends while it
//! answers (progress and log notifications, an elicitation request). The
//! returned value, if any, is the response. Over stdio the outbox is
//! stdout; over HTTP it is the SSE stream of the POST that carried the
//! request.
//!
//! A session may have a standing stream ([`Session::set_standing`]: stdout,
//! or the HTTP GET stream) for what is not tied to a request:
//! `notifications/tools/list_changed`, `notifications/tasks/status`, a
//! background task's elicitation.
//!
//! Requests of revision 2026-07-28 stand alone: the session only carries
//! who the caller is (over HTTP each such request gets a throw-away one).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::request::{Answer, Client, Ctx, TASKS_EXTENSION, missing_capability, read_meta};
use super::revision::{self, Revision};
use super::tasks::Owner;
use super::{Server, lifecycle, subscriptions, tasks, tools};
use crate::call::Caller;
use crate::policy::Token;
use crate::protocol::jsonrpc::{self, ErrorObject, Id, Incoming, Message, Reply, Request};
use crate::protocol::outbox::Outbox;
use crate::sandbox::CancelToken;
use crate::sync::lock;
use crate::tool::Level;

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
    server: Arc<Server>,
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
}

/// Where a session's client is.
#[derive(Debug, Clone, Copy)]
pub enum Door {
    /// The process's stdin/stdout.
    Stdio,
    /// An MCP session over HTTP, opened by `initialize` from this address.
    HttpSession(SocketAddr),
    /// One request of revision 2026-07-28 over HTTP, from this address.
    HttpRequest(SocketAddr),
}

impl Session {
    pub fn new(server: Arc<Server>, token: Option<Token>, door: Door) -> Arc<Session> {
        let key = server.next_session_key();
        let caller = match (&token, door) {
            (Some(token), _) => Caller::Token(token.name.clone()),
            (None, Door::Stdio) => Caller::Stdio,
            (None, Door::HttpSession(peer)) => Caller::Session {
                key,
                peer: Some(peer),
            },
            (None, Door::HttpRequest(peer)) => Caller::Peer(peer),
        };
        let session = Arc::new(Session {
            server: server.clone(),
            key,
            caller,
            token,
            standing: Mutex::new(None),
            state: Mutex::new(State::default()),
            level: Arc::new(AtomicU8::new(0)),
            running: Mutex::new(HashMap::new()),
            pending: Mutex::new(HashMap::new()),
            next_request: AtomicU64::new(1),
        });
        server.register(&session);
        session
    }

    pub(super) fn server(&self) -> &Arc<Server> {
        &self.server
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

    /// Cancels every call of this session (the session ended), and its
    /// tasks unless they belong to a token (then another session of the
    /// same token may still fetch them).
    pub fn cancel_all(&self) {
        self.stop_all(CancelToken::cancel);
    }

    /// Stops every call of this session because the server is shutting
    /// down: each still answers, with an error saying so.
    pub fn shut_down_all(&self) {
        self.stop_all(CancelToken::shut_down);
    }

    fn stop_all(&self, stop: fn(&CancelToken)) {
        lock(&self.running).values().for_each(stop);
        lock(&self.pending).clear();
        if self.token.is_none() {
            let owner = Owner::Session(self.key);
            self.server.tasks.cancel_owned_by(&owner);
            self.server.tasks.forget(&owner);
        }
    }

    /// Ends this session's subscriptions (the stdio client closed stdin).
    pub fn end_subscriptions(&self) {
        self.server.listeners.end_session(self.key);
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

    /// Handles a whole body or line; returns the response to send (a
    /// single response, an array for a batch, or nothing).
    pub async fn handle_incoming(
        self: &Arc<Self>,
        incoming: Incoming,
        out: &Outbox,
    ) -> Option<Value> {
        match incoming {
            Incoming::Error(error) => Some(jsonrpc::error_response(&Id::null(), &error)),
            Incoming::Single(message) => self.handle(message, out).await,
            Incoming::Batch(messages) => {
                let mut responses = Vec::new();
                for message in messages {
                    if let Some(response) = self.handle(message, out).await {
                        responses.push(response);
                    }
                }
                (!responses.is_empty()).then_some(Value::Array(responses))
            }
        }
    }

    /// Handles one message; returns the response, or `None` for
    /// notifications, replies and cancelled requests.
    pub async fn handle(self: &Arc<Self>, message: Message, out: &Outbox) -> Option<Value> {
        match message {
            Message::Invalid(id, error) => Some(jsonrpc::error_response(&id, &error)),
            Message::Reply(reply) => {
                self.reply(reply);
                None
            }
            Message::Request(mut request) => {
                let Some(id) = request.id.clone() else {
                    self.notification(&request);
                    return None;
                };
                match self.request(&id, &mut request, out).await {
                    Answer::Result(result) => Some(jsonrpc::response(&id, result)),
                    Answer::Error(error) => Some(jsonrpc::error_response(&id, &error)),
                    Answer::Nothing => None,
                }
            }
        }
    }

    fn reply(&self, reply: Reply) {
        match lock(&self.pending).remove(&reply.id.key()) {
            Some(waiting) => {
                let _ = waiting.send(reply.result);
            }
            None => tracing::debug!("reply to an unknown request {}", reply.id.key()),
        }
    }

    fn notification(&self, request: &Request) {
        match request.method.as_str() {
            "notifications/initialized" => lock(&self.state).ready = true,
            "notifications/cancelled" => {
                let Some(id) = request
                    .params
                    .as_ref()
                    .and_then(|p| p.get("requestId"))
                    .cloned()
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

    /// Builds the request's context and answers it; takes its params (no
    /// copy of large arguments).
    async fn request(self: &Arc<Self>, id: &Id, request: &mut Request, out: &Outbox) -> Answer {
        let declared = revision::declared(request);
        let params = request.params.take();
        let method = request.method.as_str();
        let (revision, client, log_level) = match declared {
            Some(revision) => match read_meta(params.as_ref()) {
                // No level asked: no logs at all.
                Ok(meta) => (
                    revision,
                    meta.client,
                    Arc::new(AtomicU8::new(
                        meta.log_level
                            .map_or(Level::ALL.len() as u8, |level| level as u8),
                    )),
                ),
                Err(error) => return Answer::Error(error),
            },
            None => match (method, self.revision()) {
                ("initialize", _) => {
                    let params = params.unwrap_or(Value::Null);
                    return lifecycle::initialize(self, &params).into();
                }
                ("ping", _) => return Answer::Result(json!({})),
                (_, None) => {
                    return Answer::Error(ErrorObject::invalid_request(
                        "the session is not initialized; send initialize first",
                    ));
                }
                (_, Some(revision)) => (revision, self.client(), self.level.clone()),
            },
        };
        let ctx = Ctx {
            session: self,
            id,
            revision,
            client,
            log_level,
            out,
        };
        match dispatch(&ctx, method, params.unwrap_or_else(|| json!({}))).await {
            Answer::Result(result) if revision.is_stateless() => {
                Answer::Result(lifecycle::decorate(result))
            }
            other => other,
        }
    }
}

/// The one dispatch over every method of every revision (a session's
/// `initialize` and `ping` are answered before, in any state).
async fn dispatch(ctx: &Ctx<'_>, method: &str, mut params: Value) -> Answer {
    let stateless = ctx.revision.is_stateless();
    // A task of the 2026-07-28 extension is reached only by requests that
    // declare it.
    if stateless
        && matches!(method, "tasks/get" | "tasks/update" | "tasks/cancel")
        && !ctx.client.tasks
    {
        return Answer::Error(missing_capability(
            format!(
                "{method} belongs to the {TASKS_EXTENSION} extension, which the request does not declare"
            ),
            json!({ "extensions": { TASKS_EXTENSION: {} } }),
        ));
    }
    let tasks = ctx.tasks_on();
    match method {
        "server/discover" if stateless => Answer::Result(lifecycle::discover()),
        "logging/setLevel" if !stateless => lifecycle::set_level(ctx, &params).into(),
        "tools/list" => tools::list(ctx, &params).into(),
        "tools/call" => tools::call(ctx, &mut params).await,
        "tasks/get" if tasks => tasks::get(ctx, &params).await.into(),
        "tasks/cancel" if tasks => tasks::cancel(ctx, &params).await.into(),
        "tasks/result" if tasks && !stateless => tasks::result(ctx, &params).await,
        "tasks/list" if tasks && !stateless && ctx.caller().token().is_some() => {
            tasks::list(ctx, &params).await.into()
        }
        "tasks/update" if tasks && stateless => tasks::update(ctx, &params).await.into(),
        "subscriptions/listen" if stateless => subscriptions::listen(ctx, &params).await,
        method => Answer::Error(ErrorObject::method_not_found(method)),
    }
}

/// What a request that may take long holds while it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Long {
    /// It runs a guest: one of the server's calls in flight.
    Call,
    /// It only waits (for a task, for notifications): a stream, no call.
    Wait,
}

/// Whether handling `message` may take long, and what it holds meanwhile,
/// so a transport does not wait for it before reading on and bounds it.
pub fn long_kind(message: &Message) -> Option<Long> {
    let Message::Request(r) = message else {
        return None;
    };
    r.id.as_ref()?;
    match r.method.as_str() {
        "tools/call" => Some(Long::Call),
        "tasks/result" | "subscriptions/listen" => Some(Long::Wait),
        _ => None,
    }
}

/// Whether handling `message` may take long (it runs a guest or waits for
/// the client), so a transport should not wait for it before reading on.
pub fn runs_long(message: &Message) -> bool {
    long_kind(message).is_some()
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
