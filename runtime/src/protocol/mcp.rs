//! MCP (revision 2025-11-25, negotiating down to 2025-06-18 and 2025-03-26):
//! one [`Session`] per connected client, independent of the transport.
//!
//! A transport feeds every parsed message to [`Session::handle`] together
//! with an [`Outbox`]: the channel for what the server sends on its own while
//! it answers (progress and log notifications, elicitation requests). The
//! returned value, if any, is the response. Over stdio the outbox is stdout;
//! over HTTP it is the SSE stream of the POST that carried the request.
//!
//! Calls run the guest on a blocking thread; the session keeps each running
//! call's [`CancelToken`] so `notifications/cancelled` can stop it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use super::jsonrpc::{self, ErrorObject, Id, Incoming, Message, Reply, Request};
use crate::Runtime;
use crate::call::{CallError, CallObserver, Confirmation};
use crate::policy::Token;
use crate::sandbox::CancelToken;
use crate::tool::Level;

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
}

impl Server {
    pub fn new(runtime: Arc<Runtime>) -> Arc<Server> {
        Arc::new(Server {
            runtime,
            calls: Mutex::new(HashMap::new()),
            next_call: AtomicU64::new(0),
        })
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

    /// Stops every running guest (at shutdown, after the grace period).
    pub fn cancel_all(&self) {
        for token in lock(&self.calls).values() {
            token.cancel();
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

/// One client's MCP session.
pub struct Session {
    server: Arc<Server>,
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
        Arc::new(Session {
            server,
            token,
            state: Mutex::new(State::default()),
            level: Arc::new(AtomicU8::new(0)),
            running: Mutex::new(HashMap::new()),
            pending: Mutex::new(HashMap::new()),
            next_request: AtomicU64::new(1),
        })
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

    /// Cancels every call of this session (the session ended).
    pub fn cancel_all(&self) {
        for token in lock(&self.running).values() {
            token.cancel();
        }
        lock(&self.pending).clear();
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
            Message::Request(request) => {
                let Some(id) = request.id.clone() else {
                    self.notification(&request);
                    return None;
                };
                match self.request(&id, &request, out).await {
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

    async fn request(self: &Arc<Self>, id: &Id, request: &Request, out: &Outbox) -> Answer {
        let params = request.params.clone().unwrap_or(Value::Null);
        let initialized = lock(&self.state).version.is_some();
        match request.method.as_str() {
            "initialize" => self.initialize(&params).into(),
            "ping" => Answer::Result(json!({})),
            _ if !initialized => Answer::Error(ErrorObject::invalid_request(
                "the session is not initialized; send initialize first",
            )),
            "tools/list" => self.list_tools(&params).into(),
            "tools/call" => self.call_tool(id, &params, out).await,
            "logging/setLevel" => self.set_level(&params).into(),
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
        Ok(json!({
            "protocolVersion": version,
            "capabilities": {
                "tools": { "listChanged": true },
                "logging": {},
            },
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

    async fn call_tool(self: &Arc<Self>, id: &Id, params: &Value, out: &Outbox) -> Answer {
        let Some(name) = params.get("name").and_then(Value::as_str) else {
            return Answer::Error(
                ErrorObject::invalid_params("name (the tool to call) is required")
                    .with_data(json!({ "parameter": "name" })),
            );
        };
        let arguments = params.get("arguments").cloned().unwrap_or(json!({}));
        let progress = params.pointer("/_meta/progressToken").cloned();
        // A tool the token may not see does not exist for this client.
        if !self.allows(name) {
            return Answer::Error(unknown_tool(name));
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
            self.confirm(name, prepared.arguments(), out).await
        } else {
            Confirmation::Unavailable
        };
        if cancel.is_cancelled() {
            stop_on_drop.0 = None;
            return Answer::Nothing;
        }
        let observer = Arc::new(Observer {
            out: out.clone(),
            level: self.level.clone(),
            tool: name.to_string(),
            progress,
        });
        let run_cancel = cancel.clone();
        let joined = tokio::task::spawn_blocking(move || {
            prepared.run(runtime.sandbox(), observer, run_cancel, confirmation)
        })
        .await;
        stop_on_drop.0 = None;
        if cancel.is_cancelled() {
            // The client cancelled it: MCP says no response is sent.
            return Answer::Nothing;
        }
        match joined {
            Ok(Ok(output)) => Answer::Result(output.to_mcp()),
            Ok(Err(err)) => Answer::Result(tool_error(&err)),
            Err(join) => {
                tracing::error!(tool = name, "the call's thread failed: {join}");
                Answer::Error(ErrorObject::internal())
            }
        }
    }

    /// Asks the client to confirm a destructive call (form elicitation).
    async fn confirm(&self, tool: &str, arguments: &Value, out: &Outbox) -> Confirmation {
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
        let args = jsonrpc::shorten(&arguments.to_string(), 2000);
        let mut params = json!({
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
        });
        if version.as_deref() == Some("2025-11-25") {
            params["mode"] = "form".into();
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
    matches!(message, Message::Request(r) if r.method == "tools/call" && r.id.is_some())
}

/// Picks the revision to answer: the one asked when supported, else the newest.
pub fn negotiate(asked: &str) -> &'static str {
    SUPPORTED
        .into_iter()
        .find(|v| *v == asked)
        .unwrap_or(LATEST)
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

/// Cancels a call when the future waiting for it is dropped (the client
/// went away); disarmed by setting it to `None`.
pub(crate) struct CancelOnDrop(pub(crate) Option<CancelToken>);

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
