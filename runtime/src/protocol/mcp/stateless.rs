//! MCP revision 2026-07-28 (stateless), served next to 2025-11-25.
//!
//! A request is "modern" when its `params._meta` carries
//! `io.modelcontextprotocol/protocolVersion` (or its method exists only in
//! this revision). Such a request stands alone: its protocol version, client
//! capabilities and log level come from its own `_meta`, never from an
//! earlier `initialize`, so the same [`Session`] (a stdio process, or a
//! throw-away one per HTTP POST) serves legacy and modern clients side by
//! side.
//!
//! What this revision asks and how airlock answers:
//! - `server/discover`: versions, capabilities, identity, caching hints;
//! - every result has `resultType` and `_meta.io.modelcontextprotocol/serverInfo`;
//!   `tools/list` has `ttlMs` and `cacheScope` (private when bearer tokens
//!   filter the list);
//! - -32022 for an unsupported version (with `supported`/`requested`),
//!   -32602 for missing per-request fields, -32021 for a missing client
//!   capability, -32020 for HTTP headers that disagree with the body
//!   ([`check_headers`]);
//! - logs only when the request sets `io.modelcontextprotocol/logLevel`;
//! - confirmation of destructive tools through multi round-trip requests:
//!   the first call answers `resultType: "input_required"` with an
//!   `elicitation/create` form and an HMAC-protected `requestState` bound
//!   to the caller, tool, arguments and a 5-minute expiry; the retry with
//!   `inputResponses` runs (accepted) or refuses (declined). A client
//!   without the elicitation capability gets -32021;
//! - the `io.modelcontextprotocol/tasks` extension: a tool whose
//!   `taskSupport` is `required` answers a task (`resultType: "task"`) to a
//!   client that declares the extension (-32021 otherwise); `tasks/get`
//!   (with `result`/`error` inlined), `tasks/update`, `tasks/cancel`. No
//!   `tasks/list` or `tasks/result` in this revision. Tasks belong to the
//!   bearer token, or to anyone knowing the 128-bit random id;
//! - `subscriptions/listen` (replacing the GET stream): acknowledges, then
//!   carries `notifications/tools/list_changed` tagged with the
//!   subscription id until the client cancels or the server ends it.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::sync::mpsc;

use super::{
    Answer, CancelOnDrop, Observer, Outbox, Registered, Session, lock, take_arguments, tool_error,
    unknown_tool,
};
use crate::call::{CallError, Confirmation, PreparedCall};
use crate::protocol::jsonrpc::{self, ErrorObject, Id, Request};
use crate::protocol::run_blocking;
use crate::protocol::tasks::{Owner, Task};
use crate::sandbox::CancelToken;
use crate::tool::{Level, TaskSupport};

/// The stateless revision.
pub const MODERN: &str = "2026-07-28";
/// Every revision the server speaks, newest first (`server/discover`, -32022).
pub const ALL_VERSIONS: [&str; 4] = [MODERN, "2025-11-25", "2025-06-18", "2025-03-26"];
/// HTTP headers disagree with the body, or are missing.
pub const HEADER_MISMATCH: i64 = -32020;
/// The request needs a client capability it did not declare.
pub const MISSING_CAPABILITY: i64 = -32021;
/// The requested protocol version is not served.
pub const UNSUPPORTED_VERSION: i64 = -32022;
/// The tasks extension's identifier.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const META_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
const META_SUBSCRIPTION: &str = "io.modelcontextprotocol/subscriptionId";
/// How long clients may cache `tools/list` and `server/discover`.
pub const LIST_TTL_MS: u64 = 60_000;
/// The key of the confirmation in `inputRequests`/`inputResponses`.
pub const CONFIRM_KEY: &str = "airlock-confirm";
/// How long a confirmation's `requestState` stays valid.
const STATE_TTL: Duration = Duration::from_secs(300);
/// Methods that exist only in this revision: modern even without `_meta`
/// (they then fail its validation).
const MODERN_ONLY: [&str; 3] = ["server/discover", "subscriptions/listen", "tasks/update"];

/// The per-request fields of a modern request.
#[derive(Debug, Clone)]
pub struct Meta {
    pub version: String,
    pub capabilities: Value,
    /// Guest logs at or above this level are sent; none when absent.
    pub log_level: Option<Level>,
}

impl Meta {
    fn elicitation(&self) -> bool {
        self.capabilities
            .get("elicitation")
            .and_then(Value::as_object)
            .is_some_and(|m| m.is_empty() || m.contains_key("form"))
    }

    fn tasks(&self) -> bool {
        self.capabilities
            .get("extensions")
            .and_then(|e| e.get(TASKS_EXTENSION))
            .is_some()
    }
}

/// Whether `request` follows the stateless revision.
pub fn is_modern(request: &Request) -> bool {
    if request.method == "initialize" {
        return false;
    }
    MODERN_ONLY.contains(&request.method.as_str())
        || request
            .params
            .as_ref()
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get(META_VERSION))
            .is_some()
}

/// Reads and checks the per-request `_meta` fields: -32602 when a required
/// one is missing or malformed, -32022 for a version not served.
pub fn read_meta(params: Option<&Value>) -> Result<Meta, ErrorObject> {
    let meta = params.and_then(|p| p.get("_meta"));
    let missing = |what: &str| {
        ErrorObject::invalid_params(format!(
            "params._meta[\"{what}\"] is required on every request of revision {MODERN}"
        ))
        .with_data(json!({ "parameter": format!("_meta.{what}") }))
    };
    let version = meta
        .and_then(|m| m.get(META_VERSION))
        .and_then(Value::as_str)
        .ok_or_else(|| missing(META_VERSION))?;
    if version != MODERN {
        return Err(unsupported_version(version));
    }
    let capabilities = meta
        .and_then(|m| m.get(META_CAPABILITIES))
        .filter(|c| c.is_object())
        .cloned()
        .ok_or_else(|| missing(META_CAPABILITIES))?;
    let log_level = match meta.and_then(|m| m.get(META_LOG_LEVEL)) {
        None | Some(Value::Null) => None,
        Some(level) => Some(level.as_str().and_then(Level::parse).ok_or_else(|| {
            ErrorObject::invalid_params(format!(
                "_meta[\"{META_LOG_LEVEL}\"] must be one of {}",
                Level::ALL.map(Level::as_str).join(", ")
            ))
            .with_data(json!({ "parameter": format!("_meta.{META_LOG_LEVEL}") }))
        })?),
    };
    Ok(Meta {
        version: version.to_string(),
        capabilities,
        log_level,
    })
}

/// `UnsupportedProtocolVersionError`.
pub fn unsupported_version(requested: &str) -> ErrorObject {
    ErrorObject::new(UNSUPPORTED_VERSION, "Unsupported protocol version").with_data(json!({
        "supported": ALL_VERSIONS,
        "requested": jsonrpc::shorten(requested, 100),
    }))
}

fn missing_capability(message: String, required: Value) -> ErrorObject {
    ErrorObject::new(MISSING_CAPABILITY, message)
        .with_data(json!({ "requiredCapabilities": required }))
}

/// The body field that `Mcp-Name` mirrors for `method`, if any.
fn name_field(method: &str) -> Option<&'static str> {
    match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        "tasks/get" | "tasks/update" | "tasks/cancel" => Some("taskId"),
        _ => None,
    }
}

/// Decodes a header value in the `=?base64?…?=` form; plain values as is.
pub fn decode_header_value(value: &str) -> Option<String> {
    match value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    {
        Some(encoded) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .ok()?;
            String::from_utf8(bytes).ok()
        }
        None => Some(value.to_string()),
    }
}

/// Checks the Streamable HTTP headers of a modern request against its body
/// (`None` for a header absent or not visible ASCII): `MCP-Protocol-Version`,
/// `Mcp-Method` and, where the method names something, `Mcp-Name`.
/// Run after [`read_meta`] succeeded.
pub fn check_headers(
    version: Option<&str>,
    method: Option<&str>,
    name: Option<&str>,
    request: &Request,
    meta: &Meta,
) -> Result<(), ErrorObject> {
    let mismatch = |message: String| ErrorObject::new(HEADER_MISMATCH, message);
    let clip = |s: &str| jsonrpc::shorten(s, 100);
    match version {
        None => {
            return Err(mismatch(
                "Header mismatch: the MCP-Protocol-Version header is required".into(),
            ));
        }
        Some(v) if v.trim() != meta.version => {
            return Err(mismatch(format!(
                "Header mismatch: MCP-Protocol-Version header value '{}' does not match body value '{}'",
                clip(v),
                meta.version
            )));
        }
        Some(_) => {}
    }
    match method {
        None => {
            return Err(mismatch(
                "Header mismatch: the Mcp-Method header is required".into(),
            ));
        }
        Some(m) if m != request.method => {
            return Err(mismatch(format!(
                "Header mismatch: Mcp-Method header value '{}' does not match body value '{}'",
                clip(m),
                clip(&request.method)
            )));
        }
        Some(_) => {}
    }
    let Some(field) = name_field(&request.method) else {
        return Ok(());
    };
    let body = request
        .params
        .as_ref()
        .and_then(|p| p.get(field))
        .and_then(Value::as_str);
    let Some(header) = name else {
        return Err(mismatch(format!(
            "Header mismatch: the Mcp-Name header is required for {} (the value of params.{field})",
            request.method
        )));
    };
    let decoded = decode_header_value(header).ok_or_else(|| {
        mismatch("Header mismatch: the Mcp-Name header is not valid =?base64?…?= text".into())
    })?;
    if Some(decoded.as_str()) != body {
        return Err(mismatch(format!(
            "Header mismatch: Mcp-Name header value '{}' does not match body value '{}'",
            clip(&decoded),
            clip(body.unwrap_or(""))
        )));
    }
    Ok(())
}

/// The HTTP status for a modern answer: 400 for the errors a client must
/// fix before retrying, 404 for an unknown method, else 200.
pub fn http_status(response: &Value) -> u16 {
    match response.pointer("/error/code").and_then(Value::as_i64) {
        Some(HEADER_MISMATCH | MISSING_CAPABILITY | UNSUPPORTED_VERSION) => 400,
        Some(jsonrpc::METHOD_NOT_FOUND) => 404,
        _ => 200,
    }
}

/// Adds `resultType` (when absent) and the server's identity to a result.
fn complete(mut result: Value) -> Value {
    if let Some(map) = result.as_object_mut() {
        map.entry("resultType").or_insert_with(|| "complete".into());
        let meta = map.entry("_meta").or_insert_with(|| json!({}));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert(
                META_SERVER_INFO.into(),
                json!({ "name": "airlock", "version": env!("CARGO_PKG_VERSION") }),
            );
        }
    }
    result
}

/// The `server/discover` result.
fn discover() -> Value {
    json!({
        "supportedVersions": ALL_VERSIONS,
        "capabilities": {
            "tools": { "listChanged": true },
            "logging": {},
            "extensions": { TASKS_EXTENSION: {} },
        },
        "instructions": "Tools run in a WebAssembly sandbox with only the capabilities \
                         the operator granted; a destructive tool may ask you to confirm.",
        "ttlMs": LIST_TTL_MS,
        "cacheScope": "public",
    })
}

// --- confirmation through multi round-trip requests -----------------------

fn state_key() -> &'static [u8; 32] {
    static KEY: std::sync::OnceLock<[u8; 32]> = std::sync::OnceLock::new();
    KEY.get_or_init(rand::random::<[u8; 32]>)
}

fn hmac(key: &[u8; 32], message: &[u8]) -> [u8; 32] {
    let mut block = [0u8; 64];
    block[..32].copy_from_slice(key);
    let inner: Vec<u8> = block.iter().map(|b| b ^ 0x36).collect();
    let outer: Vec<u8> = block.iter().map(|b| b ^ 0x5c).collect();
    let inner_hash = Sha256::new()
        .chain_update(&inner)
        .chain_update(message)
        .finalize();
    Sha256::new()
        .chain_update(&outer)
        .chain_update(inner_hash)
        .finalize()
        .into()
}

/// What a confirmation's `requestState` is bound to.
fn call_digest(principal: Option<&str>, tool: &str, arguments: &Value) -> String {
    let bound = json!([principal, tool, arguments]).to_string();
    hex::encode(Sha256::digest(bound.as_bytes()))
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Confirmation states already answered, each kept until it expires: a
/// state is good for one answer, never for a replay of the same call.
#[derive(Default)]
pub struct UsedStates {
    used: Mutex<HashMap<String, u64>>,
}

impl UsedStates {
    /// Marks `state` (valid until `expires`) as answered; false when it was
    /// answered before.
    pub fn first_use(&self, state: &str, now: u64) -> bool {
        let mut used = self.used.lock().unwrap_or_else(|p| p.into_inner());
        used.retain(|_, expires| *expires > now);
        let expires = state_expiry(state).unwrap_or(now + STATE_TTL.as_secs());
        used.insert(state.to_string(), expires).is_none()
    }
}

/// The expiry written in a state's payload (checked by [`verify_state`]).
fn state_expiry(state: &str) -> Option<u64> {
    let (payload, _) = state.split_once('.')?;
    let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .ok()?;
    let payload = String::from_utf8(payload).ok()?;
    payload.split('.').nth(1)?.parse().ok()
}

/// `requestState` for a confirmation: payload (with a random nonce, so no
/// two are alike) and its HMAC.
pub fn sign_state(digest: &str, expires: u64) -> String {
    let nonce: u64 = rand::random();
    let payload = format!("confirm.{expires}.{nonce:016x}.{digest}");
    let mac = hmac(state_key(), payload.as_bytes());
    format!(
        "{}.{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(payload),
        hex::encode(mac)
    )
}

/// Whether `state` was signed by this process for `digest` and is unexpired.
pub fn verify_state(state: &str, digest: &str, now: u64) -> bool {
    let Some((payload, mac)) = state.split_once('.') else {
        return false;
    };
    let Ok(payload) = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(payload) else {
        return false;
    };
    let Ok(mac) = hex::decode(mac) else {
        return false;
    };
    let expected = hmac(state_key(), &payload);
    let same = mac.len() == expected.len()
        && mac
            .iter()
            .zip(expected)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0;
    if !same {
        return false;
    }
    let Ok(payload) = String::from_utf8(payload) else {
        return false;
    };
    let mut parts = payload.splitn(4, '.');
    let (Some("confirm"), Some(expires), Some(_nonce), Some(bound)) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    expires.parse::<u64>().is_ok_and(|e| e > now) && bound == digest
}

// --- subscriptions ----------------------------------------------------------

struct Listener {
    key: u64,
    session: u64,
    id: Value,
    out: Outbox,
    /// Cancelled when the server ends the subscription.
    ended: CancelToken,
}

/// The open `subscriptions/listen` streams that asked for tool-list changes.
#[derive(Default)]
pub struct Listeners {
    open: Mutex<Vec<Listener>>,
    next: std::sync::atomic::AtomicU64,
}

impl Listeners {
    /// Sends `notifications/tools/list_changed` on every open stream;
    /// returns how many got it.
    pub fn tools_changed(&self) -> usize {
        let mut open = lock(&self.open);
        open.retain(|l| !l.out.is_closed());
        open.iter()
            .filter(|l| {
                l.out
                    .send(jsonrpc::notification(
                        "notifications/tools/list_changed",
                        json!({ "_meta": { META_SUBSCRIPTION: l.id } }),
                    ))
                    .is_ok()
            })
            .count()
    }

    /// Ends the subscriptions opened through `session` (stdin closed).
    pub fn end_session(&self, session: u64) {
        for listener in lock(&self.open).iter().filter(|l| l.session == session) {
            listener.ended.cancel();
        }
    }

    /// Ends every subscription (shutdown).
    pub fn end_all(&self) {
        for listener in lock(&self.open).iter() {
            listener.ended.cancel();
        }
    }

    fn add(&self, session: u64, id: Value, out: Outbox, ended: CancelToken) -> u64 {
        let key = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        lock(&self.open).push(Listener {
            key,
            session,
            id,
            out,
            ended,
        });
        key
    }

    fn remove(&self, key: u64) {
        lock(&self.open).retain(|l| l.key != key);
    }
}

// --- the requests -----------------------------------------------------------

impl Session {
    /// Who owns the tasks of a modern request: the bearer token, else
    /// anyone holding the (unguessable) id.
    fn modern_owner(&self) -> Owner {
        match &self.token {
            Some(token) => Owner::Token(token.name.clone()),
            None => Owner::Anyone,
        }
    }

    /// Ends this session's subscriptions (the stdio client closed stdin).
    pub fn end_subscriptions(&self) {
        self.server.listeners.end_session(self.key);
    }

    /// Handles a request of revision 2026-07-28.
    pub(super) async fn modern(
        self: &Arc<Self>,
        id: &Id,
        request: &mut Request,
        out: &Outbox,
    ) -> Answer {
        let meta = match read_meta(request.params.as_ref()) {
            Ok(meta) => meta,
            Err(error) => return Answer::Error(error),
        };
        let mut params = request.params.take().unwrap_or_else(|| json!({}));
        let method = request.method.as_str();
        if method.starts_with("tasks/") && name_field(method).is_some() && !meta.tasks() {
            return Answer::Error(missing_capability(
                format!(
                    "{method} belongs to the {TASKS_EXTENSION} extension, which the request does not declare"
                ),
                json!({ "extensions": { TASKS_EXTENSION: {} } }),
            ));
        }
        let answer: Answer = match method {
            "server/discover" => Answer::Result(discover()),
            "tools/list" => self
                .list_tools(&params)
                .map(|mut result| {
                    result["ttlMs"] = LIST_TTL_MS.into();
                    // A token sees only its tools: not for shared caches.
                    let scope = if self.token.is_some() { "private" } else { "public" };
                    result["cacheScope"] = scope.into();
                    result
                })
                .into(),
            "tools/call" => self.modern_call(id, &mut params, &meta, out).await,
            "tasks/get" => self
                .modern_task(&params)
                .map(|task| task.to_json_extension())
                .into(),
            "tasks/update" => self.modern_task(&params).map(|_| json!({})).into(),
            "tasks/cancel" => self
                .modern_task(&params)
                .map(|task| {
                    if task.cancel("The task was cancelled by request.").is_ok() {
                        tracing::info!(task = %task.id, tool = %task.tool, "task cancelled by the client");
                    }
                    json!({})
                })
                .into(),
            "subscriptions/listen" => self.listen(id, &params, out).await,
            method => Answer::Error(ErrorObject::method_not_found(method)),
        };
        match answer {
            Answer::Result(result) => Answer::Result(complete(result)),
            other => other,
        }
    }

    fn modern_task(&self, params: &Value) -> Result<Arc<Task>, ErrorObject> {
        let id = params
            .get("taskId")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                ErrorObject::invalid_params("taskId (a string) is required")
                    .with_data(json!({ "parameter": "taskId" }))
            })?;
        self.server
            .tasks
            .get(id, &self.modern_owner())
            .ok_or_else(|| {
                ErrorObject::invalid_params("Task not found")
                    .with_data(json!({ "parameter": "taskId" }))
            })
    }

    async fn modern_call(
        self: &Arc<Self>,
        id: &Id,
        params: &mut Value,
        meta: &Meta,
        out: &Outbox,
    ) -> Answer {
        let arguments = take_arguments(params);
        let params = &*params;
        let Some(name) = params.get("name").and_then(Value::as_str) else {
            return Answer::Error(
                ErrorObject::invalid_params("name (the tool to call) is required")
                    .with_data(json!({ "parameter": "name" })),
            );
        };
        if !self.allows(name) {
            return Answer::Error(unknown_tool(name));
        }
        let Some(support) = self
            .server
            .runtime
            .catalog()
            .tool(name)
            .map(|t| t.info.task_support)
        else {
            return Answer::Error(unknown_tool(name));
        };
        let as_task = support == TaskSupport::Required;
        if as_task && !meta.tasks() {
            return Answer::Error(missing_capability(
                format!(
                    "{name} runs only as a task: declare the {TASKS_EXTENSION} extension in \
                     _meta[\"{META_CAPABILITIES}\"].extensions"
                ),
                json!({ "extensions": { TASKS_EXTENSION: {} } }),
            ));
        }
        let runtime = self.server.runtime.clone();
        let prepared = match runtime.prepare_as(self.token_name(), name, arguments) {
            Ok(prepared) => prepared,
            Err(CallError::UnknownTool(_)) => return Answer::Error(unknown_tool(name)),
            Err(err) => return Answer::Result(tool_error(&err)),
        };
        let confirmation = if prepared.needs_confirmation() {
            match self.confirm_by_round_trip(name, &prepared, params, meta) {
                Ok(confirmation) => confirmation,
                Err(answer) => return answer,
            }
        } else {
            Confirmation::Unavailable
        };
        if as_task {
            return self.modern_task_start(name, prepared, confirmation).into();
        }
        let level = meta
            .log_level
            .map_or(Level::ALL.len() as u8, |level| level as u8);
        let progress = params.pointer("/_meta/progressToken").cloned();
        let cancel = CancelToken::new();
        let _tracked = self.server.track(cancel.clone());
        let _registered = Registered::new(self, id, cancel.clone());
        let stop_on_drop = CancelOnDrop(Some(cancel.clone()));
        let observer = Arc::new(Observer {
            out: out.clone(),
            level: Arc::new(std::sync::atomic::AtomicU8::new(level)),
            tool: name.to_string(),
            progress,
        });
        super::run_to_answer(
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

    /// The confirmation of a destructive call, or what to answer instead:
    /// an `InputRequiredResult` asking for it, or an error.
    fn confirm_by_round_trip(
        &self,
        tool: &str,
        prepared: &PreparedCall,
        params: &Value,
        meta: &Meta,
    ) -> Result<Confirmation, Answer> {
        let digest = call_digest(self.token_name(), tool, prepared.arguments());
        if let Some(state) = params.get("requestState") {
            let valid = state
                .as_str()
                .is_some_and(|s| verify_state(s, &digest, now_secs()));
            if !valid {
                return Err(Answer::Error(
                    ErrorObject::invalid_params(
                        "requestState is invalid, expired, or belongs to another call; \
                         call again without it",
                    )
                    .with_data(json!({ "parameter": "requestState" })),
                ));
            }
            if let Some(response) = params
                .get("inputResponses")
                .and_then(|r| r.get(CONFIRM_KEY))
            {
                let answered = state.as_str().unwrap_or_default();
                if !self.server.used_states.first_use(answered, now_secs()) {
                    return Err(Answer::Error(
                        ErrorObject::invalid_params(
                            "requestState was answered already; a confirmation is good for \
                             one call: call again without it",
                        )
                        .with_data(json!({ "parameter": "requestState" })),
                    ));
                }
                let accepted = response.get("action").and_then(Value::as_str) == Some("accept")
                    && response.pointer("/content/confirm") == Some(&Value::Bool(true));
                tracing::info!(tool, accepted, "confirmation answered");
                return Ok(if accepted {
                    Confirmation::Accepted
                } else {
                    Confirmation::Declined
                });
            }
            // The state is good but the answer is missing: ask again.
        }
        if !meta.elicitation() {
            return Err(Answer::Error(missing_capability(
                format!(
                    "{tool} is destructive and runs only after the user confirms it: declare \
                     the elicitation capability (form mode) so the server can ask"
                ),
                json!({ "elicitation": { "form": {} } }),
            )));
        }
        let expires = now_secs() + STATE_TTL.as_secs();
        Err(Answer::Result(json!({
            "resultType": "input_required",
            "inputRequests": {
                CONFIRM_KEY: {
                    "method": "elicitation/create",
                    "params": super::confirm_form(tool, prepared.arguments()),
                }
            },
            "requestState": sign_state(&digest, expires),
        })))
    }

    /// Starts a task (extension shape): answers the `CreateTaskResult`.
    fn modern_task_start(
        self: &Arc<Self>,
        name: &str,
        prepared: PreparedCall,
        confirmation: Confirmation,
    ) -> Result<Value, ErrorObject> {
        let cancel = CancelToken::new();
        let task = self
            .server
            .tasks
            .create(self.modern_owner(), name, None, cancel.clone())?;
        tracing::info!(task = %task.id, tool = name, caller = ?self.token_name(), "task created (2026-07-28)");
        let server = self.server.clone();
        let running = task.clone();
        tokio::spawn(async move {
            let _tracked = server.track(cancel.clone());
            // Progress and logs are not carried for tasks in this revision.
            let (out, _) = mpsc::unbounded_channel();
            let observer = Arc::new(Observer {
                out,
                level: Arc::new(std::sync::atomic::AtomicU8::new(Level::ALL.len() as u8)),
                tool: running.tool.clone(),
                progress: None,
            });
            let runtime = server.runtime.clone();
            let run = run_blocking(runtime, prepared, observer, cancel, confirmation);
            let outcome = match run.await {
                Some(Ok(output)) => Ok(output.to_mcp()),
                Some(Err(err)) => Ok(tool_error(&err)),
                None => {
                    tracing::error!(tool = %running.tool, "the task's thread failed");
                    Err(ErrorObject::internal())
                }
            };
            if running.finish(outcome) {
                tracing::info!(task = %running.id, status = running.status().as_str(), "task ended");
            }
        });
        let mut result = task.to_json_extension();
        if let Some(map) = result.as_object_mut() {
            map.remove("result");
            map.remove("error");
            map.insert("resultType".into(), "task".into());
        }
        Ok(result)
    }

    /// `subscriptions/listen`: acknowledges, then stays open until the
    /// client cancels (no answer then) or the server ends it (a result).
    async fn listen(self: &Arc<Self>, id: &Id, params: &Value, out: &Outbox) -> Answer {
        let subscription = id.as_value().clone();
        let tools = params.pointer("/notifications/toolsListChanged") == Some(&Value::Bool(true));
        let mut agreed = json!({});
        if tools {
            agreed["toolsListChanged"] = true.into();
        }
        let ack = jsonrpc::notification(
            "notifications/subscriptions/acknowledged",
            json!({ "_meta": { META_SUBSCRIPTION: subscription }, "notifications": agreed }),
        );
        if out.send(ack).is_err() {
            return Answer::Nothing;
        }
        let cancelled = CancelToken::new();
        let _registered = Registered::new(self, id, cancelled.clone());
        let ended = CancelToken::new();
        let key = self.server.listeners.add(
            self.key,
            subscription.clone(),
            if tools {
                out.clone()
            } else {
                mpsc::unbounded_channel().0
            },
            ended.clone(),
        );
        let mut tick = tokio::time::interval(Duration::from_millis(100));
        loop {
            tokio::select! {
                _ = out.closed() => break,
                _ = tick.tick() => {
                    if cancelled.is_cancelled() || ended.is_cancelled() {
                        break;
                    }
                }
            }
        }
        self.server.listeners.remove(key);
        if ended.is_cancelled() && !cancelled.is_cancelled() {
            Answer::Result(json!({ "_meta": { META_SUBSCRIPTION: subscription } }))
        } else {
            Answer::Nothing
        }
    }
}

use std::sync::Arc;

#[cfg(test)]
mod tests {
    use super::*;

    fn request(text: &str) -> Request {
        match jsonrpc::message(serde_json::from_str(text).expect("json")) {
            jsonrpc::Message::Request(r) => r,
            _ => panic!("not a request"),
        }
    }

    const META: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

    #[test]
    fn modern_requests_are_recognized() {
        assert!(is_modern(&request(&format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{"_meta":{META}}}}}"#
        ))));
        assert!(is_modern(&request(
            r#"{"jsonrpc":"2.0","id":1,"method":"server/discover"}"#
        )));
        assert!(!is_modern(&request(
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"progressToken":1}}}"#
        )));
        assert!(!is_modern(&request(&format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"_meta":{META}}}}}"#
        ))));
    }

    #[test]
    fn meta_is_required_and_checked() {
        let err = read_meta(None).unwrap_err();
        assert_eq!(err.code, jsonrpc::INVALID_PARAMS);
        let err = read_meta(Some(&json!({"_meta": {META_VERSION: "1900-01-01"}}))).unwrap_err();
        assert_eq!(err.code, UNSUPPORTED_VERSION);
        let data = err.to_json()["data"].clone();
        assert_eq!(data["requested"], "1900-01-01");
        assert_eq!(data["supported"][0], MODERN);
        assert!(
            data["supported"]
                .as_array()
                .unwrap()
                .contains(&json!("2025-11-25"))
        );
        let err = read_meta(Some(&json!({"_meta": {META_VERSION: MODERN}}))).unwrap_err();
        assert_eq!(
            err.code,
            jsonrpc::INVALID_PARAMS,
            "capabilities are required"
        );
        let err = read_meta(Some(&json!({"_meta": {
            META_VERSION: MODERN, META_CAPABILITIES: {}, META_LOG_LEVEL: "loud"
        }})))
        .unwrap_err();
        assert_eq!(err.code, jsonrpc::INVALID_PARAMS);
        let meta = read_meta(Some(&json!({"_meta": {
            META_VERSION: MODERN,
            META_CAPABILITIES: {"elicitation": {}, "extensions": {TASKS_EXTENSION: {}}},
            META_LOG_LEVEL: "info"
        }})))
        .unwrap();
        assert!(meta.elicitation() && meta.tasks());
        assert_eq!(meta.log_level, Some(Level::Info));
    }

    #[test]
    fn headers_must_match_the_body() {
        let call = request(&format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"café","_meta":{META}}}}}"#
        ));
        let meta = read_meta(call.params.as_ref()).unwrap();
        let v = Some(MODERN);
        let encoded = format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode("café")
        );
        assert!(check_headers(v, Some("tools/call"), Some(&encoded), &call, &meta).is_ok());
        for (version, method, name) in [
            (None, Some("tools/call"), Some(encoded.as_str())),
            (
                Some("2025-11-25"),
                Some("tools/call"),
                Some(encoded.as_str()),
            ),
            (v, None, Some(encoded.as_str())),
            (v, Some("tools/list"), Some(encoded.as_str())),
            (v, Some("tools/call"), None),
            (v, Some("tools/call"), Some("cafe")),
            (v, Some("tools/call"), Some("=?base64?!!?=")),
        ] {
            let err = check_headers(version, method, name, &call, &meta).unwrap_err();
            assert_eq!(err.code, HEADER_MISMATCH, "{version:?} {method:?} {name:?}");
        }
        let get = request(&format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{{"taskId":"ab","_meta":{META}}}}}"#
        ));
        assert!(check_headers(v, Some("tasks/get"), Some("ab"), &get, &meta).is_ok());
        assert!(check_headers(v, Some("tasks/get"), Some("cd"), &get, &meta).is_err());
        let list = request(&format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{"_meta":{META}}}}}"#
        ));
        assert!(check_headers(v, Some("tools/list"), None, &list, &meta).is_ok());
        assert_eq!(decode_header_value("plain").as_deref(), Some("plain"));
    }

    #[test]
    fn statuses_for_modern_errors() {
        let e = |code: i64| jsonrpc::error_response(&Id::null(), &ErrorObject::new(code, "x"));
        assert_eq!(http_status(&e(HEADER_MISMATCH)), 400);
        assert_eq!(http_status(&e(MISSING_CAPABILITY)), 400);
        assert_eq!(http_status(&e(UNSUPPORTED_VERSION)), 400);
        assert_eq!(http_status(&e(jsonrpc::METHOD_NOT_FOUND)), 404);
        assert_eq!(http_status(&json!({"result": {}})), 200);
    }

    #[test]
    fn request_state_is_bound_and_expires() {
        let digest = call_digest(Some("alice"), "rm", &json!({"path": "/x"}));
        let state = sign_state(&digest, 1_000);
        assert!(verify_state(&state, &digest, 999));
        assert!(!verify_state(&state, &digest, 1_000), "expired");
        let other = call_digest(Some("bob"), "rm", &json!({"path": "/x"}));
        assert!(!verify_state(&state, &other, 999), "another caller");
        let args = call_digest(Some("alice"), "rm", &json!({"path": "/y"}));
        assert!(!verify_state(&state, &args, 999), "other arguments");
        // Tampering with the payload breaks the MAC.
        let forged = state.replacen('A', "B", 1);
        assert!(!verify_state(&forged, &digest, 999) || forged == state);
        assert!(!verify_state("nonsense", &digest, 0));
        assert!(!verify_state("a.b", &digest, 0));
        // No two states are alike, even for the same call and second.
        assert_ne!(sign_state(&digest, 1_000), state);
    }

    #[test]
    fn a_request_state_is_answered_once_and_forgotten_after_it_expires() {
        let digest = call_digest(None, "rm", &json!({}));
        let used = UsedStates::default();
        let state = sign_state(&digest, 1_000);
        assert!(used.first_use(&state, 10));
        assert!(!used.first_use(&state, 11), "a replay");
        let other = sign_state(&digest, 1_000);
        assert!(used.first_use(&other, 12), "another state of the same call");
        // Past its expiry a state is no longer kept (and no longer valid).
        let later = sign_state(&digest, 2_000);
        assert!(used.first_use(&later, 1_500));
        assert_eq!(used.used.lock().expect("used").len(), 1);
    }

    #[tokio::test]
    async fn one_session_serves_both_revisions() {
        use crate::policy::Policy;
        use crate::sandbox::{Sandbox, SandboxConfig};
        let sandbox =
            Sandbox::new(&SandboxConfig::default().cache(None).instances(4)).expect("sandbox");
        let server =
            super::super::Server::new(Arc::new(crate::Runtime::new(sandbox, Policy::default())));
        let session = Session::new(server.clone(), None);
        let send = |text: String| {
            let session = session.clone();
            async move {
                let (tx, _rx) = mpsc::unbounded_channel();
                session
                    .handle_incoming(jsonrpc::parse(text.as_bytes()), &tx)
                    .await
                    .expect("a response")
            }
        };
        let modern = |id: u32, method: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{"_meta":{META}}}}}"#
            )
        };
        // Modern first, without initialize.
        let r = send(modern(1, "server/discover")).await;
        assert_eq!(r["result"]["resultType"], "complete");
        assert_eq!(r["result"]["supportedVersions"][1], "2025-11-25");
        let r = send(modern(2, "tools/list")).await;
        assert_eq!(r["result"]["resultType"], "complete");
        assert_eq!(r["result"]["cacheScope"], "public");
        assert_eq!(r["result"]["ttlMs"], LIST_TTL_MS);
        // Removed in this revision.
        for (i, m) in ["ping", "logging/setLevel", "tasks/list", "tasks/result"]
            .iter()
            .enumerate()
        {
            let r = send(modern(10 + i as u32, m)).await;
            assert_eq!(r["error"]["code"], jsonrpc::METHOD_NOT_FOUND, "{m}");
        }
        // Legacy methods still need initialize; then both work side by side.
        let r = send(r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#.into()).await;
        assert_eq!(r["error"]["code"], jsonrpc::INVALID_REQUEST);
        let r = send(
            r#"{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#.into(),
        )
        .await;
        assert_eq!(r["result"]["protocolVersion"], "2025-11-25");
        let r = send(r#"{"jsonrpc":"2.0","id":5,"method":"tools/list"}"#.into()).await;
        assert!(
            r["result"].get("resultType").is_none(),
            "legacy results unchanged"
        );
        let r = send(modern(6, "tools/list")).await;
        assert_eq!(r["result"]["resultType"], "complete");
        let r = send(
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2030-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}"#.into(),
        )
        .await;
        assert_eq!(r["error"]["code"], UNSUPPORTED_VERSION);
        let r = send(r#"{"jsonrpc":"2.0","id":8,"method":"server/discover"}"#.into()).await;
        assert_eq!(r["error"]["code"], jsonrpc::INVALID_PARAMS);
        let r = send(
            format!(r#"{{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{{"name":"nope","_meta":{META}}}}}"#),
        )
        .await;
        assert_eq!(r["error"]["code"], jsonrpc::INVALID_PARAMS, "unknown tool");
        let r = send(
            format!(r#"{{"jsonrpc":"2.0","id":20,"method":"tasks/get","params":{{"taskId":"00","_meta":{META}}}}}"#),
        )
        .await;
        assert_eq!(r["error"]["code"], MISSING_CAPABILITY, "no tasks extension");
        let r = send(
            r#"{"jsonrpc":"2.0","id":21,"method":"tasks/get","params":{"taskId":"00","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}"#.into(),
        )
        .await;
        assert_eq!(r["error"]["code"], jsonrpc::INVALID_PARAMS, "unknown task");
    }

    #[tokio::test]
    async fn listen_acknowledges_and_carries_list_changed() {
        use crate::policy::Policy;
        use crate::sandbox::{Sandbox, SandboxConfig};
        let sandbox =
            Sandbox::new(&SandboxConfig::default().cache(None).instances(4)).expect("sandbox");
        let server =
            super::super::Server::new(Arc::new(crate::Runtime::new(sandbox, Policy::default())));
        let session = Session::new(server.clone(), None);
        let (tx, mut rx) = mpsc::unbounded_channel();
        let text = format!(
            r#"{{"jsonrpc":"2.0","id":"l1","method":"subscriptions/listen","params":{{"_meta":{META},"notifications":{{"toolsListChanged":true,"resourceSubscriptions":["x"]}}}}}}"#
        );
        let listening = {
            let session = session.clone();
            tokio::spawn(async move {
                session
                    .handle_incoming(jsonrpc::parse(text.as_bytes()), &tx)
                    .await
            })
        };
        let ack = rx.recv().await.expect("ack");
        assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
        assert_eq!(ack["params"]["_meta"][META_SUBSCRIPTION], "l1");
        assert_eq!(
            ack["params"]["notifications"],
            json!({"toolsListChanged": true})
        );
        assert_eq!(server.tools_changed(), 1);
        let changed = rx.recv().await.expect("list_changed");
        assert_eq!(changed["method"], "notifications/tools/list_changed");
        assert_eq!(changed["params"]["_meta"][META_SUBSCRIPTION], "l1");
        session.end_subscriptions();
        let end = listening.await.expect("joined").expect("a final result");
        assert_eq!(end["id"], "l1");
        assert_eq!(end["result"]["resultType"], "complete");
        assert_eq!(server.tools_changed(), 0);
    }

    #[test]
    fn results_are_complete_with_server_info() {
        let r = complete(json!({"tools": []}));
        assert_eq!(r["resultType"], "complete");
        assert_eq!(r["_meta"][META_SERVER_INFO]["name"], "airlock");
        let r = complete(json!({"resultType": "task"}));
        assert_eq!(r["resultType"], "task");
        let d = discover();
        assert_eq!(d["supportedVersions"][0], MODERN);
        assert!(d["capabilities"]["extensions"][TASKS_EXTENSION].is_object());
        assert!(d["ttlMs"].as_u64().is_some());
    }
}
