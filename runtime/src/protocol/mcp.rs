//! MCP (revision 2025-11-25, negotiating down to 2025-06-18 and 2025-03-26):
//! one [`Session`] per connected client, independent of the transport.
//!
//! A transport feeds every parsed message to [`Session::handle`] together
//! with an [`Outbox`]: the channel for what the server sends on its own while
//! it answers (progress and log notifications, elicitation requests). The
//! returned value, if any, is the response. Over stdio the outbox is stdout;
//! over HTTP it is the SSE stream of the POST that carried the request.
//!
//! Calls run the guest on a lane (a thread for blocking work); the session
//! keeps each running call's [`CancelToken`] so `notifications/cancelled`
//! can stop it.
//!
//! Tasks (2025-11-25): a `tools/call` with a `task` parameter answers a
//! `CreateTaskResult` at once and runs in the background; `tasks/get`,
//! `tasks/result`, `tasks/cancel` and (for authenticated callers)
//! `tasks/list` reach it through the server's [`TaskStore`]. What a task
//! sends while it runs (progress, logs, an elicitation request) goes to a
//! client waiting in `tasks/result`, else to the session's standing stream
//! (stdout, or the HTTP GET stream), tagged with its task id.
//!
//! Each session may have a standing stream ([`Session::set_standing`]):
//! `notifications/tools/list_changed` and `notifications/tasks/status` go
//! there.
//!
//! Revision 2026-07-28 (stateless, per-request `_meta`) is served by the
//! same sessions next to these: see [`stateless`].

pub mod stateless;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use super::jsonrpc::{self, ErrorObject, Id, Incoming, Message, Reply, Request};
use super::run_blocking;
use super::tasks::{self, Owner, Status, Task, TaskStore};
use crate::Runtime;
use crate::call::{CallError, CallObserver, Confirmation, PreparedCall};
use crate::policy::Token;
use crate::sandbox::CancelToken;
use crate::tool::{Level, TaskSupport};

/// The newest revision this server speaks.
pub const LATEST: &str = "2025-11-25";
/// Every revision this server speaks, newest first.
pub const SUPPORTED: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];
/// Tools per `tools/list` page.
pub const PAGE_SIZE: usize = 50;
/// How long a call waits for the client to answer a confirmation request.
const CONFIRM_TIMEOUT: Duration = Duration::from_secs(300);

/// Messages the server sends while it handles a request.
pub type Outbox = mpsc::UnboundedSender<Value>;

/// What the whole server shares: the runtime and every running call, so a
/// shutdown can cancel the calls that outlive the grace period.
pub struct Server {
    pub runtime: Arc<Runtime>,
    calls: Mutex<HashMap<u64, CancelToken>>,
    next_call: AtomicU64,
    /// Every task of every session.
    pub tasks: TaskStore,
    /// Live sessions, for notifications to all (list_changed).
    sessions: Mutex<Vec<Weak<Session>>>,
    next_session: AtomicU64,
    /// Open `subscriptions/listen` streams (2026-07-28).
    pub listeners: stateless::Listeners,
    /// Confirmation `requestState`s already answered, until they expire.
    pub used_states: stateless::UsedStates,
}

impl Server {
    pub fn new(runtime: Arc<Runtime>) -> Arc<Server> {
        Arc::new(Server {
            runtime,
            calls: Mutex::new(HashMap::new()),
            next_call: AtomicU64::new(0),
            tasks: TaskStore::new(),
            sessions: Mutex::new(Vec::new()),
            next_session: AtomicU64::new(1),
            listeners: stateless::Listeners::default(),
            used_states: stateless::UsedStates::default(),
        })
    }

    /// Tells every initialized session with a standing stream that the
    /// tool set changed (`notifications/tools/list_changed`); returns how
    /// many were told.
    pub fn tools_changed(&self) -> usize {
        let sessions: Vec<Arc<Session>> = {
            let mut sessions = lock(&self.sessions);
            sessions.retain(|s| s.strong_count() > 0);
            sessions.iter().filter_map(Weak::upgrade).collect()
        };
        let message = jsonrpc::notification("notifications/tools/list_changed", json!({}));
        sessions
            .iter()
            .filter(|s| lock(&s.state).version.is_some())
            .filter(|s| s.send_standing(message.clone()))
            .count()
            + self.listeners.tools_changed()
    }

    /// Registers a running call until the guard is dropped.
    pub fn track(self: &Arc<Self>, token: CancelToken) -> Tracked {
        let key = self.next_call.fetch_add(1, Ordering::Relaxed);
        lock(&self.calls).insert(key, token);
        Tracked {
            server: self.clone(),
            key,
        }
    }

    /// Calls running now (any transport).
    pub fn running(&self) -> usize {
        lock(&self.calls).len()
    }

    /// Stops every running guest (at shutdown, after the grace period);
    /// each request still gets an answer saying the server is shutting down.
    pub fn cancel_all(&self) {
        for token in lock(&self.calls).values() {
            token.shut_down();
        }
    }
}

/// A running call's place in [`Server`]'s registry.
pub struct Tracked {
    server: Arc<Server>,
    key: u64,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        lock(&self.server.calls).remove(&self.key);
    }
}

/// Locks a mutex, ignoring poisoning: the maps stay consistent because no
/// code panics while holding them.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Per-session state set by the lifecycle methods.
#[derive(Default)]
struct State {
    /// The negotiated revision, once `initialize` succeeded.
    version: Option<String>,
    /// `notifications/initialized` arrived.
    ready: bool,
    /// The client declared form elicitation.
    elicitation: bool,
}

/// The revision with tasks in the core protocol.
const TASKS_REVISION: &str = "2025-11-25";

/// One client's MCP session.
pub struct Session {
    server: Arc<Server>,
    /// Unique within the server; owns the tasks of unauthenticated sessions.
    key: u64,
    /// Where messages not tied to a request go (stdout, the HTTP GET stream).
    standing: Mutex<Option<Outbox>>,
    /// The bearer token the session was opened with; it limits the tools.
    token: Option<Token>,
    state: Mutex<State>,
    /// Lowest level of guest log messages forwarded (index into `Level::ALL`).
    level: Arc<AtomicU8>,
    /// Running calls by request id key, for `notifications/cancelled`.
    running: Mutex<HashMap<String, CancelToken>>,
    /// Requests we sent, waiting for the client's reply.
    pending: Mutex<HashMap<String, oneshot::Sender<Result<Value, Value>>>>,
    next_request: AtomicU64,
}

impl Session {
    pub fn new(server: Arc<Server>, token: Option<Token>) -> Arc<Session> {
        let key = server.next_session.fetch_add(1, Ordering::Relaxed);
        let session = Arc::new(Session {
            server: server.clone(),
            key,
            standing: Mutex::new(None),
            token,
            state: Mutex::new(State::default()),
            level: Arc::new(AtomicU8::new(0)),
            running: Mutex::new(HashMap::new()),
            pending: Mutex::new(HashMap::new()),
            next_request: AtomicU64::new(1),
        });
        let mut sessions = lock(&server.sessions);
        sessions.retain(|s| s.strong_count() > 0);
        sessions.push(Arc::downgrade(&session));
        session
    }

    /// Sets (or clears) the stream for messages not tied to a request.
    pub fn set_standing(&self, out: Option<Outbox>) {
        *lock(&self.standing) = out;
    }

    /// Whether a standing stream is open now.
    pub fn has_standing(&self) -> bool {
        lock(&self.standing)
            .as_ref()
            .is_some_and(|o| !o.is_closed())
    }

    /// Sends on the standing stream; false when there is none.
    fn send_standing(&self, message: Value) -> bool {
        let mut standing = lock(&self.standing);
        match standing.as_ref().map(|out| out.send(message)) {
            Some(Ok(())) => true,
            Some(Err(_)) => {
                *standing = None;
                false
            }
            None => false,
        }
    }

    /// Who owns the tasks this session creates and may see.
    fn owner(&self) -> Owner {
        match &self.token {
            Some(token) => Owner::Token(token.name.clone()),
            None => Owner::Session(self.key),
        }
    }

    /// Tasks are on when the session negotiated 2025-11-25.
    fn tasks_on(&self) -> bool {
        lock(&self.state).version.as_deref() == Some(TASKS_REVISION)
    }

    /// The revision negotiated at `initialize`, if any.
    pub fn version(&self) -> Option<String> {
        lock(&self.state).version.clone()
    }

    /// The token the session belongs to.
    pub fn token_name(&self) -> Option<&str> {
        self.token.as_ref().map(|t| t.name.as_str())
    }

    fn allows(&self, tool: &str) -> bool {
        self.token.as_ref().is_none_or(|t| t.allows_tool(tool))
    }

    /// Cancels every call of this session (the session ended), and its
    /// tasks unless they belong to a token (then another session of the
    /// same token may still fetch them).
    pub fn cancel_all(&self) {
        for token in lock(&self.running).values() {
            token.cancel();
        }
        self.end_tasks();
    }

    /// Stops every call of this session because the server is shutting
    /// down: each still answers, with an error saying so.
    pub fn shut_down_all(&self) {
        for token in lock(&self.running).values() {
            token.shut_down();
        }
        self.end_tasks();
    }

    fn end_tasks(&self) {
        lock(&self.pending).clear();
        if let owner @ Owner::Session(_) = self.owner() {
            self.server.tasks.cancel_owned_by(&owner);
            self.server.tasks.forget(&owner);
        }
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

    /// Answers a request; takes its params (no copy of large arguments).
    async fn request(self: &Arc<Self>, id: &Id, request: &mut Request, out: &Outbox) -> Answer {
        if stateless::is_modern(request) {
            return self.modern(id, request, out).await;
        }
        let mut params = request.params.take().unwrap_or(Value::Null);
        let initialized = lock(&self.state).version.is_some();
        match request.method.as_str() {
            "initialize" => self.initialize(&params).into(),
            "ping" => Answer::Result(json!({})),
            _ if !initialized => Answer::Error(ErrorObject::invalid_request(
                "the session is not initialized; send initialize first",
            )),
            "tools/list" => self.list_tools(&params).into(),
            "tools/call" => self.call_tool(id, &mut params, out).await,
            "logging/setLevel" => self.set_level(&params).into(),
            "tasks/get" if self.tasks_on() => {
                self.find_task(&params).map(|task| task.to_json()).into()
            }
            "tasks/result" if self.tasks_on() => self.task_result(&params, out).await,
            "tasks/cancel" if self.tasks_on() => self.cancel_task(&params).into(),
            "tasks/list" if self.tasks_on() && self.token.is_some() => {
                self.list_tasks(&params).into()
            }
            method => Answer::Error(ErrorObject::method_not_found(method)),
        }
    }

    fn initialize(&self, params: &Value) -> Result<Value, ErrorObject> {
        let mut state = lock(&self.state);
        if state.version.is_some() {
            return Err(ErrorObject::invalid_request(
                "the session is already initialized",
            ));
        }
        let asked = params
            .get("protocolVersion")
            .and_then(Value::as_str)
            .ok_or_else(|| ErrorObject::invalid_params("protocolVersion (a string) is required"))?;
        let version = negotiate(asked);
        let elicitation = params.pointer("/capabilities/elicitation");
        // An empty elicitation object means form mode (2025-06-18); later
        // revisions may list the modes.
        state.elicitation = elicitation.is_some_and(|e| {
            e.as_object()
                .is_some_and(|m| m.is_empty() || m.contains_key("form"))
        });
        state.version = Some(version.to_string());
        let mut capabilities = json!({
            "tools": { "listChanged": true },
            "logging": {},
        });
        if version == TASKS_REVISION {
            let mut tasks = json!({
                "cancel": {},
                "requests": { "tools": { "call": {} } },
            });
            // Listing needs an owner worth the name: a bearer token.
            if self.token.is_some() {
                tasks["list"] = json!({});
            }
            capabilities["tasks"] = tasks;
        }
        Ok(json!({
            "protocolVersion": version,
            "capabilities": capabilities,
            "serverInfo": {
                "name": "airlock",
                "title": "airlock",
                "version": env!("CARGO_PKG_VERSION"),
            },
            "instructions": "Tools run in a WebAssembly sandbox with only the capabilities \
                             the operator granted; a destructive tool may ask you to confirm.",
        }))
    }

    fn set_level(&self, params: &Value) -> Result<Value, ErrorObject> {
        let name = params.get("level").and_then(Value::as_str).unwrap_or("");
        let level = Level::parse(name).ok_or_else(|| {
            ErrorObject::invalid_params(format!(
                "level must be one of {}",
                Level::ALL.map(Level::as_str).join(", ")
            ))
            .with_data(json!({ "parameter": "level" }))
        })?;
        self.level.store(level as u8, Ordering::Relaxed);
        Ok(json!({}))
    }

    fn list_tools(&self, params: &Value) -> Result<Value, ErrorObject> {
        let after = match params.get("cursor") {
            None | Some(Value::Null) => None,
            Some(Value::String(cursor)) => Some(decode_cursor(cursor).ok_or_else(|| {
                ErrorObject::invalid_params("Invalid cursor")
                    .with_data(json!({ "parameter": "cursor" }))
            })?),
            Some(_) => {
                return Err(ErrorObject::invalid_params("Invalid cursor")
                    .with_data(json!({ "parameter": "cursor" })));
            }
        };
        let catalog = self.server.runtime.catalog();
        let visible = catalog
            .tools()
            .filter(|t| self.allows(&t.info.name))
            .filter(|t| after.as_deref().is_none_or(|a| t.info.name.as_str() > a));
        let mut tools = Vec::new();
        let mut last = None;
        let mut more = false;
        for tool in visible {
            if tools.len() == PAGE_SIZE {
                more = true;
                break;
            }
            tools.push(tool.info.to_mcp());
            last = Some(tool.info.name.clone());
        }
        let mut result = json!({ "tools": tools });
        if more && let Some(last) = last {
            result["nextCursor"] = encode_cursor(&last).into();
        }
        Ok(result)
    }

    async fn call_tool(self: &Arc<Self>, id: &Id, params: &mut Value, out: &Outbox) -> Answer {
        let arguments = take_arguments(params);
        let params = &*params;
        let Some(name) = params.get("name").and_then(Value::as_str) else {
            return Answer::Error(
                ErrorObject::invalid_params("name (the tool to call) is required")
                    .with_data(json!({ "parameter": "name" })),
            );
        };
        let progress = params.pointer("/_meta/progressToken").cloned();
        // A tool the token may not see does not exist for this client.
        if !self.allows(name) {
            return Answer::Error(unknown_tool(name));
        }
        if self.tasks_on() {
            let task = params.get("task");
            let Some(support) = self
                .server
                .runtime
                .catalog()
                .tool(name)
                .map(|t| t.info.task_support)
            else {
                return Answer::Error(unknown_tool(name));
            };
            match (support, task) {
                (TaskSupport::Required, None) => {
                    return Answer::Error(ErrorObject::new(
                        jsonrpc::METHOD_NOT_FOUND,
                        format!(
                            "{name} must be called as a task (its execution.taskSupport is \
                             \"required\"): add \"task\": {{}} to the params"
                        ),
                    ));
                }
                (TaskSupport::Forbidden, Some(_)) => {
                    return Answer::Error(ErrorObject::new(
                        jsonrpc::METHOD_NOT_FOUND,
                        format!(
                            "{name} cannot be called as a task (its execution.taskSupport is \
                             \"forbidden\"): call it without \"task\""
                        ),
                    ));
                }
                (_, Some(task)) => {
                    return self.start_task(name, arguments, progress, task).into();
                }
                (_, None) => {}
            }
        }
        let runtime = self.server.runtime.clone();
        let prepared = match runtime.prepare(name, arguments) {
            Ok(prepared) => prepared,
            Err(CallError::UnknownTool(_)) => return Answer::Error(unknown_tool(name)),
            Err(err) => return Answer::Result(tool_error(&err)),
        };
        let cancel = CancelToken::new();
        let _tracked = self.server.track(cancel.clone());
        let _registered = Registered::new(self, id, cancel.clone());
        // Dropping this future (the HTTP client went away) stops the guest.
        let mut stop_on_drop = CancelOnDrop(Some(cancel.clone()));

        let confirmation = if prepared.needs_confirmation() {
            self.confirm(name, prepared.arguments(), out, None).await
        } else {
            Confirmation::Unavailable
        };
        if cancel.is_cancelled() {
            stop_on_drop.0 = None;
            if cancel.is_shut_down() {
                return Answer::Error(shutting_down());
            }
            return Answer::Nothing;
        }
        let observer = Arc::new(Observer {
            out: out.clone(),
            level: self.level.clone(),
            tool: name.to_string(),
            progress,
        });
        run_to_answer(
            runtime,
            prepared,
            observer,
            cancel,
            confirmation,
            stop_on_drop,
            name,
        )
        .await
    }

    /// Starts a task-augmented `tools/call`: answers the `CreateTaskResult`
    /// at once; the call runs in the background.
    fn start_task(
        self: &Arc<Self>,
        name: &str,
        arguments: Value,
        progress: Option<Value>,
        task: &Value,
    ) -> Result<Value, ErrorObject> {
        let ttl = task_ttl(task, "ttl")?;
        let runtime = self.server.runtime.clone();
        let prepared = match runtime.prepare_as(self.token_name(), name, arguments) {
            Ok(prepared) => Ok(prepared),
            Err(CallError::UnknownTool(_)) => return Err(unknown_tool(name)),
            Err(err) => Err(tool_error(&err)),
        };
        let cancel = CancelToken::new();
        let task = self.server.tasks.create(self.owner(), name, ttl, cancel)?;
        tracing::info!(task = %task.id, tool = name, caller = ?self.token_name(), "task created");
        match prepared {
            // Refused before it ran (arguments, policy, busy): failed at once.
            Err(result) => {
                task.finish(Ok(result));
            }
            Ok(prepared) => {
                let session = self.clone();
                let task = task.clone();
                tokio::spawn(async move { session.run_task(task, prepared, progress).await });
            }
        }
        Ok(json!({ "task": task.to_json() }))
    }

    /// Runs a task's call to its end and records the outcome.
    async fn run_task(
        self: Arc<Self>,
        task: Arc<Task>,
        prepared: crate::call::PreparedCall,
        progress: Option<Value>,
    ) {
        let cancel = task.cancel_token().clone();
        let _tracked = self.server.track(cancel.clone());
        let (out, rx) = mpsc::unbounded_channel();
        let relay = tokio::spawn(relay(self.clone(), task.clone(), rx));
        let name = task.tool.clone();
        let confirmation = if prepared.needs_confirmation() {
            if task.set_status(
                Status::InputRequired,
                Some(format!(
                    "{name} is destructive: confirm it (call tasks/result)"
                )),
            ) {
                self.task_status_changed(&task);
            }
            let answer = self
                .confirm(&name, prepared.arguments(), &out, Some(&task.id))
                .await;
            if task.set_status(Status::Working, None) {
                self.task_status_changed(&task);
            }
            answer
        } else {
            Confirmation::Unavailable
        };
        if !cancel.is_cancelled() {
            let observer = Arc::new(Observer {
                out: out.clone(),
                level: self.level.clone(),
                tool: name.clone(),
                progress,
            });
            let runtime = self.server.runtime.clone();
            let run = run_blocking(runtime, prepared, observer, cancel.clone(), confirmation);
            let outcome = match run.await {
                Some(Ok(output)) => Ok(output.to_mcp()),
                Some(Err(err)) => Ok(tool_error(&err)),
                None => {
                    tracing::error!(tool = %name, "the task's thread failed");
                    Err(ErrorObject::internal())
                }
            };
            if task.finish(outcome) {
                tracing::info!(task = %task.id, tool = %name, status = task.status().as_str(), "task ended");
                self.task_status_changed(&task);
            }
        }
        drop(out);
        let _ = relay.await;
    }

    /// `notifications/tasks/status` on the standing stream, if any.
    fn task_status_changed(&self, task: &Task) {
        self.send_standing(jsonrpc::notification(
            "notifications/tasks/status",
            task.to_json(),
        ));
    }

    fn find_task(&self, params: &Value) -> Result<Arc<Task>, ErrorObject> {
        let id = params
            .get("taskId")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                ErrorObject::invalid_params("taskId (a string) is required")
                    .with_data(json!({ "parameter": "taskId" }))
            })?;
        self.server.tasks.get(id, &self.owner()).ok_or_else(|| {
            ErrorObject::invalid_params("Failed to retrieve task: Task not found")
                .with_data(json!({ "parameter": "taskId" }))
        })
    }

    /// `tasks/result`: waits until the task is terminal, relaying its
    /// messages (an elicitation request) meanwhile, then answers what the
    /// call would have answered.
    async fn task_result(&self, params: &Value, out: &Outbox) -> Answer {
        let task = match self.find_task(params) {
            Ok(task) => task,
            Err(error) => return Answer::Error(error),
        };
        task.listen(out.clone());
        task.wait().await;
        task.unlisten(out);
        match task.outcome() {
            Some(Ok(mut result)) => {
                if let Some(map) = result.as_object_mut() {
                    let meta = map.entry("_meta").or_insert_with(|| json!({}));
                    meta[tasks::RELATED_TASK] = json!({ "taskId": task.id });
                }
                Answer::Result(result)
            }
            Some(Err(error)) => Answer::Error(error),
            None => Answer::Error(ErrorObject::internal()),
        }
    }

    fn cancel_task(&self, params: &Value) -> Result<Value, ErrorObject> {
        let task = self.find_task(params)?;
        match task.cancel("The task was cancelled by request.") {
            Ok(()) => {
                tracing::info!(task = %task.id, tool = %task.tool, "task cancelled by the client");
                self.task_status_changed(&task);
                Ok(task.to_json())
            }
            Err(status) => Err(ErrorObject::invalid_params(format!(
                "Cannot cancel task: already in terminal status '{}'",
                status.as_str()
            ))),
        }
    }

    fn list_tasks(&self, params: &Value) -> Result<Value, ErrorObject> {
        let invalid = || {
            ErrorObject::invalid_params("Invalid cursor")
                .with_data(json!({ "parameter": "cursor" }))
        };
        let after = match params.get("cursor") {
            None | Some(Value::Null) => None,
            Some(Value::String(cursor)) => Some(
                decode_cursor(cursor)
                    .and_then(|c| c.strip_prefix("task:").map(str::to_owned))
                    .ok_or_else(invalid)?,
            ),
            Some(_) => return Err(invalid()),
        };
        let (page, more) = self
            .server
            .tasks
            .list(&self.owner(), after.as_deref())
            .ok_or_else(invalid)?;
        let mut result = json!({ "tasks": page.iter().map(|t| t.to_json()).collect::<Vec<_>>() });
        if more && let Some(last) = page.last() {
            result["nextCursor"] = encode_cursor(&format!("task:{}", last.id)).into();
        }
        Ok(result)
    }

    /// Asks the client to confirm a destructive call (form elicitation);
    /// for a task, the request names the task in its `_meta`.
    async fn confirm(
        &self,
        tool: &str,
        arguments: &Value,
        out: &Outbox,
        task: Option<&str>,
    ) -> Confirmation {
        let (elicitation, version) = {
            let state = lock(&self.state);
            (state.elicitation, state.version.clone())
        };
        if !elicitation {
            return Confirmation::Unavailable;
        }
        let n = self.next_request.fetch_add(1, Ordering::Relaxed);
        let id =
            Id::from_value(Value::String(format!("airlock-confirm-{n}"))).unwrap_or_else(Id::null);
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(id.key(), tx);
        let mut params = confirm_form(tool, arguments);
        // `mode` arrived with 2025-11-25; older clients do not know it.
        if version.as_deref() != Some("2025-11-25")
            && let Some(form) = params.as_object_mut()
        {
            form.remove("mode");
        }
        if let Some(task) = task {
            params["_meta"] = json!({ tasks::RELATED_TASK: { "taskId": task } });
        }
        if out
            .send(jsonrpc::request(&id, "elicitation/create", params))
            .is_err()
        {
            lock(&self.pending).remove(&id.key());
            return Confirmation::Unavailable;
        }
        let answer = tokio::time::timeout(CONFIRM_TIMEOUT, rx).await;
        lock(&self.pending).remove(&id.key());
        match answer {
            Ok(Ok(Ok(result))) => {
                let accepted = result.get("action").and_then(Value::as_str) == Some("accept")
                    && result.pointer("/content/confirm") == Some(&Value::Bool(true));
                if accepted {
                    Confirmation::Accepted
                } else {
                    Confirmation::Declined
                }
            }
            Ok(Ok(Err(error))) => {
                tracing::info!(tool, "the client refused to elicit a confirmation: {error}");
                Confirmation::Declined
            }
            Ok(Err(_)) | Err(_) => Confirmation::Declined,
        }
    }
}

/// The lifetime asked in a `task` parameter (`ttl` in 2025-11-25, `ttlMs`
/// in the 2026-07-28 extension); `task` must be an object.
fn task_ttl(task: &Value, key: &str) -> Result<Option<u64>, ErrorObject> {
    let invalid = || {
        ErrorObject::invalid_params(format!(
            "task must be an object with an optional {key} (milliseconds, a non-negative integer)"
        ))
        .with_data(json!({ "parameter": "task" }))
    };
    let map = task.as_object().ok_or_else(invalid)?;
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => match value.as_u64() {
            Some(ms) => Ok(Some(ms)),
            // Big or fractional numbers: take what fits.
            None => match value.as_f64() {
                Some(ms) if ms >= 0.0 => Ok(Some(ms.min(u64::MAX as f64) as u64)),
                _ => Err(invalid()),
            },
        },
    }
}

/// Carries what a task sends while it runs: to a client waiting in
/// `tasks/result` first, else to the session's standing stream. A request
/// (an elicitation) with no one to receive it waits until someone listens
/// or the task ends; a notification with no one to receive it is dropped.
async fn relay(session: Arc<Session>, task: Arc<Task>, mut rx: mpsc::UnboundedReceiver<Value>) {
    while let Some(mut message) = rx.recv().await {
        if let Some(params) = message.get_mut("params").and_then(Value::as_object_mut) {
            let meta = params.entry("_meta").or_insert_with(|| json!({}));
            if meta.is_object() {
                meta[tasks::RELATED_TASK] = json!({ "taskId": task.id });
            }
        }
        let is_request = message.get("id").is_some();
        loop {
            let back = match task.deliver(message) {
                Ok(()) => break,
                Err(back) => back,
            };
            if session.send_standing(back.clone()) {
                break;
            }
            if !is_request || task.status().is_terminal() {
                break;
            }
            message = back;
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// What a request handler produced.
enum Answer {
    Result(Value),
    Error(ErrorObject),
    /// Send nothing (the request was cancelled).
    Nothing,
}

impl From<Result<Value, ErrorObject>> for Answer {
    fn from(result: Result<Value, ErrorObject>) -> Self {
        match result {
            Ok(value) => Answer::Result(value),
            Err(error) => Answer::Error(error),
        }
    }
}

/// Whether handling `message` may take long (it runs a guest or waits for
/// the client), so a transport should not wait for it before reading on.
pub fn runs_long(message: &Message) -> bool {
    matches!(message, Message::Request(r)
        if matches!(r.method.as_str(), "tools/call" | "tasks/result" | "subscriptions/listen")
            && r.id.is_some())
}

/// Picks the revision to answer: the one asked when supported, else the newest.
pub fn negotiate(asked: &str) -> &'static str {
    SUPPORTED
        .into_iter()
        .find(|v| *v == asked)
        .unwrap_or(LATEST)
}

/// Moves `arguments` out of `tools/call` params (absent: no arguments).
fn take_arguments(params: &mut Value) -> Value {
    params
        .as_object_mut()
        .and_then(|params| params.remove("arguments"))
        .unwrap_or_else(|| json!({}))
}

fn unknown_tool(name: &str) -> ErrorObject {
    ErrorObject::invalid_params(format!("Unknown tool: {}", jsonrpc::shorten(name, 100)))
        .with_data(json!({ "tool": jsonrpc::shorten(name, 100) }))
}

/// A `CallToolResult` with `isError: true`: the model sees the message and
/// can correct itself.
fn tool_error(err: &CallError) -> Value {
    if let CallError::Refused(refusal) = err
        && !refusal.operator_hint.is_empty()
    {
        tracing::warn!("{refusal}; to allow it: {}", refusal.operator_hint);
    }
    json!({
        "content": [{ "type": "text", "text": err.to_string() }],
        "isError": true,
    })
}

fn encode_cursor(last: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("after:{last}"))
}

fn decode_cursor(cursor: &str) -> Option<String> {
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(cursor)
        .ok()?;
    let text = String::from_utf8(bytes).ok()?;
    text.strip_prefix("after:").map(str::to_owned)
}

/// Keeps a call's token findable by its request id while it runs.
struct Registered {
    session: Arc<Session>,
    key: String,
}

impl Registered {
    fn new(session: &Arc<Session>, id: &Id, token: CancelToken) -> Self {
        let key = id.key();
        lock(&session.running).insert(key.clone(), token);
        Registered {
            session: session.clone(),
            key,
        }
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        lock(&self.session.running).remove(&self.key);
    }
}

/// The yes/no elicitation form naming a destructive tool and its arguments.
fn confirm_form(tool: &str, arguments: &Value) -> Value {
    let args = jsonrpc::shorten(&arguments.to_string(), 2000);
    json!({
        "mode": "form",
        "message": format!(
            "The tool \"{tool}\" is destructive: it may modify or delete data. \
             Run it with these arguments?\n{args}"
        ),
        "requestedSchema": {
            "type": "object",
            "properties": {
                "confirm": {
                    "type": "boolean",
                    "title": format!("Run {tool}"),
                    "description": format!("Run the destructive tool {tool} with {args}"),
                    "default": false,
                }
            },
            "required": ["confirm"],
        },
    })
}

/// Cancels a call when the future waiting for it is dropped (the client
/// went away); disarmed by setting it to `None`.
pub(crate) struct CancelOnDrop(pub(crate) Option<CancelToken>);

/// Runs a prepared call on a lane ([`super::lanes`]) and turns its outcome into
/// the answer to `tools/call`. A call the client cancelled gets none: MCP
/// sends no response then. `stop_on_drop` cancels the guest if this future
/// is dropped first (the client went away).
async fn run_to_answer(
    runtime: Arc<Runtime>,
    prepared: PreparedCall,
    observer: Arc<Observer>,
    cancel: CancelToken,
    confirmation: Confirmation,
    mut stop_on_drop: CancelOnDrop,
    name: &str,
) -> Answer {
    let outcome = run_blocking(runtime, prepared, observer, cancel.clone(), confirmation).await;
    stop_on_drop.0 = None;
    if cancel.is_shut_down() {
        return Answer::Error(shutting_down());
    }
    if cancel.is_cancelled() {
        return Answer::Nothing;
    }
    match outcome {
        Some(Ok(output)) => Answer::Result(output.to_mcp()),
        Some(Err(err)) => Answer::Result(tool_error(&err)),
        None => {
            tracing::error!(tool = name, "the call's thread failed");
            Answer::Error(ErrorObject::internal())
        }
    }
}

/// The answer to a request whose call the shutdown stopped: every request
/// gets exactly one answer, even then.
pub(crate) fn shutting_down() -> ErrorObject {
    ErrorObject::new(
        jsonrpc::TOOL_FAILED,
        "the server is shutting down; the call was stopped before it finished",
    )
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(token) = &self.0 {
            token.cancel();
        }
    }
}

/// Turns the guest's log and progress reports into MCP notifications.
struct Observer {
    out: Outbox,
    level: Arc<AtomicU8>,
    tool: String,
    progress: Option<Value>,
}

impl CallObserver for Observer {
    fn log(&self, level: Level, message: &str) {
        if (level as u8) < self.level.load(Ordering::Relaxed) {
            return;
        }
        let _ = self.out.send(jsonrpc::notification(
            "notifications/message",
            json!({ "level": level.as_str(), "logger": self.tool, "data": message }),
        ));
    }

    fn progress(&self, done: f64, total: Option<f64>, message: Option<&str>) {
        let Some(token) = &self.progress else { return };
        let mut params = json!({ "progressToken": token, "progress": done });
        if let Some(total) = total {
            params["total"] = total.into();
        }
        if let Some(message) = message {
            params["message"] = message.into();
        }
        let _ = self
            .out
            .send(jsonrpc::notification("notifications/progress", params));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Policy;
    use crate::sandbox::{Sandbox, SandboxConfig};

    fn empty_runtime() -> Arc<Runtime> {
        let sandbox =
            Sandbox::new(&SandboxConfig::default().cache(None).instances(4)).expect("sandbox");
        Arc::new(Runtime::new(sandbox, Policy::default()))
    }

    async fn send(session: &Arc<Session>, text: &str) -> Option<Value> {
        let (tx, _rx) = mpsc::unbounded_channel();
        session
            .handle_incoming(jsonrpc::parse(text.as_bytes()), &tx)
            .await
    }

    fn init(version: &str) -> String {
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
            "protocolVersion": version, "capabilities": {}, "clientInfo": {"name":"t","version":"1"}}})
        .to_string()
    }

    #[tokio::test]
    async fn lifecycle_and_negotiation() {
        let server = Server::new(empty_runtime());
        let session = Session::new(server.clone(), None);
        // Before initialize: ping works, the rest does not.
        let r = send(&session, r#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#)
            .await
            .unwrap();
        assert_eq!(r["result"], json!({}));
        let r = send(
            &session,
            r#"{"jsonrpc":"2.0","id":0,"method":"tools/list"}"#,
        )
        .await
        .unwrap();
        assert_eq!(r["error"]["code"], -32600);

        let r = send(&session, &init("2025-06-18")).await.unwrap();
        assert_eq!(r["result"]["protocolVersion"], "2025-06-18");
        assert_eq!(r["result"]["capabilities"]["tools"]["listChanged"], true);
        assert!(r["result"]["capabilities"]["logging"].is_object());
        assert_eq!(r["result"]["serverInfo"]["name"], "airlock");
        // Twice is an error.
        let r = send(&session, &init("2025-06-18")).await.unwrap();
        assert_eq!(r["error"]["code"], -32600);
        assert!(
            send(
                &session,
                r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#
            )
            .await
            .is_none()
        );

        for (asked, answered) in [
            ("2025-11-25", "2025-11-25"),
            ("2025-03-26", "2025-03-26"),
            ("2024-11-05", LATEST),
            ("1999-01-01", LATEST),
        ] {
            let s = Session::new(server.clone(), None);
            let r = send(&s, &init(asked)).await.unwrap();
            assert_eq!(r["result"]["protocolVersion"], answered, "{asked}");
        }
    }

    #[tokio::test]
    async fn methods_and_errors() {
        let session = Session::new(Server::new(empty_runtime()), None);
        send(&session, &init(LATEST)).await;
        let r = send(
            &session,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
        )
        .await
        .unwrap();
        assert_eq!(r["result"]["tools"], json!([]));
        assert!(r["result"].get("nextCursor").is_none());
        let r = send(
            &session,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":"!!"}}"#,
        )
        .await
        .unwrap();
        assert_eq!(r["error"]["code"], -32602);
        let r = send(
            &session,
            r#"{"jsonrpc":"2.0","id":4,"method":"resources/list"}"#,
        )
        .await
        .unwrap();
        assert_eq!(r["error"]["code"], -32601);
        let r = send(
            &session,
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"nope"}}"#,
        )
        .await
        .unwrap();
        assert_eq!(r["error"]["code"], -32602);
        assert!(r["error"]["message"].as_str().unwrap().contains("nope"));
        let r = send(
            &session,
            r#"{"jsonrpc":"2.0","id":6,"method":"logging/setLevel","params":{"level":"warning"}}"#,
        )
        .await
        .unwrap();
        assert_eq!(r["result"], json!({}));
        assert_eq!(session.level.load(Ordering::Relaxed), Level::Warning as u8);
        let r = send(
            &session,
            r#"{"jsonrpc":"2.0","id":7,"method":"logging/setLevel","params":{"level":"loud"}}"#,
        )
        .await
        .unwrap();
        assert_eq!(r["error"]["code"], -32602);
        // Notifications, even unknown ones, get no response.
        assert!(
            send(
                &session,
                r#"{"jsonrpc":"2.0","method":"notifications/whatever"}"#
            )
            .await
            .is_none()
        );
        assert!(
            send(
                &session,
                r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}"#
            )
            .await
            .is_none()
        );
        // Replies to nothing are ignored.
        assert!(
            send(&session, r#"{"jsonrpc":"2.0","id":"x","result":{}}"#)
                .await
                .is_none()
        );
        // Batches: notifications omitted, errors kept.
        let r = send(
            &session,
            r#"[{"jsonrpc":"2.0","id":8,"method":"ping"},{"jsonrpc":"2.0","method":"n"},5]"#,
        )
        .await
        .unwrap();
        assert_eq!(r.as_array().unwrap().len(), 2);
        assert_eq!(r[1]["error"]["code"], -32600);
        let r = send(&session, "[]").await.unwrap();
        assert_eq!(r["error"]["code"], -32600);
        let r = send(&session, "{oops").await.unwrap();
        assert_eq!(r["error"]["code"], -32700);
        assert_eq!(r["id"], Value::Null);
    }

    #[tokio::test]
    async fn tasks_capability_and_methods_follow_the_revision_and_auth() {
        let server = Server::new(empty_runtime());
        // 2025-11-25 without a token: tasks, but no listing.
        let session = Session::new(server.clone(), None);
        let r = send(&session, &init("2025-11-25")).await.unwrap();
        let tasks = &r["result"]["capabilities"]["tasks"];
        assert_eq!(tasks["requests"]["tools"]["call"], json!({}));
        assert_eq!(tasks["cancel"], json!({}));
        assert!(tasks.get("list").is_none());
        let r = send(
            &session,
            r#"{"jsonrpc":"2.0","id":2,"method":"tasks/list"}"#,
        )
        .await
        .unwrap();
        assert_eq!(r["error"]["code"], -32601);
        for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
            let text = json!({"jsonrpc":"2.0","id":3,"method":method,
                "params":{"taskId":"0123456789abcdef0123456789abcdef"}})
            .to_string();
            let r = send(&session, &text).await.unwrap();
            assert_eq!(r["error"]["code"], -32602, "{method}");
            let text = json!({"jsonrpc":"2.0","id":3,"method":method,"params":{}}).to_string();
            let r = send(&session, &text).await.unwrap();
            assert_eq!(r["error"]["code"], -32602, "{method} without taskId");
        }
        // Unknown tool in a task-augmented call: still a JSON-RPC error.
        let r = send(
            &session,
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"nope","task":{}}}"#,
        )
        .await
        .unwrap();
        assert_eq!(r["error"]["code"], -32602);

        // With a token: tasks/list is advertised and answers (empty).
        use sha2::Digest as _;
        let token = Token {
            name: "ci".into(),
            sha256: sha2::Sha256::digest(b"s").into(),
            tools: None,
        };
        let session = Session::new(server.clone(), Some(token));
        let r = send(&session, &init("2025-11-25")).await.unwrap();
        assert_eq!(r["result"]["capabilities"]["tasks"]["list"], json!({}));
        let r = send(
            &session,
            r#"{"jsonrpc":"2.0","id":2,"method":"tasks/list"}"#,
        )
        .await
        .unwrap();
        assert_eq!(r["result"]["tasks"], json!([]));
        let r = send(
            &session,
            r#"{"jsonrpc":"2.0","id":2,"method":"tasks/list","params":{"cursor":"bm9wZQ"}}"#,
        )
        .await
        .unwrap();
        assert_eq!(r["error"]["code"], -32602);

        // Older revisions have no tasks at all.
        let session = Session::new(server, None);
        let r = send(&session, &init("2025-06-18")).await.unwrap();
        assert!(r["result"]["capabilities"].get("tasks").is_none());
        let r = send(
            &session,
            r#"{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"x"}}"#,
        )
        .await
        .unwrap();
        assert_eq!(r["error"]["code"], -32601);
    }

    #[test]
    fn task_params() {
        assert_eq!(task_ttl(&json!({}), "ttl").unwrap(), None);
        assert_eq!(task_ttl(&json!({"ttl": 5000}), "ttl").unwrap(), Some(5000));
        assert_eq!(
            task_ttl(&json!({"ttl": 1e30}), "ttl").unwrap(),
            Some(u64::MAX)
        );
        assert!(task_ttl(&json!({"ttl": -1}), "ttl").is_err());
        assert!(task_ttl(&json!({"ttl": "1"}), "ttl").is_err());
        assert!(task_ttl(&json!(true), "ttl").is_err());
    }

    #[tokio::test]
    async fn list_changed_reaches_initialized_sessions_with_a_stream() {
        let server = Server::new(empty_runtime());
        let (tx, mut rx) = mpsc::unbounded_channel();
        let ready = Session::new(server.clone(), None);
        ready.set_standing(Some(tx.clone()));
        send(&ready, &init(LATEST)).await;
        // Not initialized: not told.
        let fresh = Session::new(server.clone(), None);
        fresh.set_standing(Some(tx));
        // Initialized without a stream: cannot be told.
        let silent = Session::new(server.clone(), None);
        send(&silent, &init(LATEST)).await;
        assert_eq!(server.tools_changed(), 1);
        let message = rx.try_recv().expect("a notification");
        assert_eq!(message["method"], "notifications/tools/list_changed");
        assert!(rx.try_recv().is_err());
        drop((ready, fresh, silent));
        assert_eq!(server.tools_changed(), 0);
    }

    #[test]
    fn guest_logs_and_progress_become_notifications() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let level = Arc::new(AtomicU8::new(Level::Warning as u8));
        let observer = Observer {
            out: tx,
            level: level.clone(),
            tool: "t".into(),
            progress: Some(json!("tok")),
        };
        observer.log(Level::Info, "quiet");
        observer.log(Level::Error, "loud");
        observer.progress(1.0, Some(4.0), Some("a quarter"));
        let log = rx.try_recv().expect("a log notification");
        assert_eq!(log["method"], "notifications/message");
        assert_eq!(
            log["params"],
            json!({"level":"error","logger":"t","data":"loud"})
        );
        let progress = rx.try_recv().expect("a progress notification");
        assert_eq!(progress["method"], "notifications/progress");
        assert_eq!(
            progress["params"],
            json!({"progressToken":"tok","progress":1.0,"total":4.0,"message":"a quarter"})
        );
        assert!(rx.try_recv().is_err());
        // Without a progress token, progress is not reported.
        let (tx, mut rx) = mpsc::unbounded_channel();
        let observer = Observer {
            out: tx,
            level,
            tool: "t".into(),
            progress: None,
        };
        observer.progress(1.0, None, None);
        assert!(rx.try_recv().is_err());
    }

    #[test]
    fn tool_errors_are_results_with_is_error() {
        let err = CallError::Busy {
            tool: "t".into(),
            limit: 2,
        };
        let result = tool_error(&err);
        assert_eq!(result["isError"], true);
        assert!(
            result["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains("busy")
        );
    }

    #[test]
    fn cursors_round_trip() {
        assert_eq!(
            decode_cursor(&encode_cursor("b_tool")).as_deref(),
            Some("b_tool")
        );
        assert_eq!(decode_cursor("bm9wZQ"), None); // "nope": no prefix
        assert_eq!(decode_cursor("%%%"), None);
    }
}
