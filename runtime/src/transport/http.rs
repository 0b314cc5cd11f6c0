//! HTTP on hyper: MCP Streamable HTTP at `/mcp`, plain JSON-RPC at `/rpc`
//! (and its text description at `/rpc/describe`).
//!
//! The front door is defensive because anything may knock:
//! - `Host` and `Origin` must name an allowed host (loopback by default),
//!   against DNS rebinding (403);
//! - bearer tokens from the policy, when it has any (401), each seeing only
//!   its tools;
//! - bodies are limited (413), refused from `Content-Length` before reading
//!   and cut off while streaming, never buffered whole;
//! - calls in flight are limited (503 with `Retry-After`), connections are
//!   limited, and a client must send its headers in time.
//!
//! A POST to `/mcp` is answered with JSON, unless the call sends something
//! on its own before its result (progress, log, an elicitation request):
//! then the answer turns into an SSE stream carrying those and the result.
//! A GET to `/mcp` opens the session's standing SSE stream for messages not
//! tied to a request (`notifications/tools/list_changed`, task status, a
//! background task's elicitation); a newer GET replaces an older one.
//!
//! Revision 2026-07-28 has no session: a POST whose body carries the
//! per-request `_meta` (or whose `MCP-Protocol-Version` is 2026-07-28) runs
//! on a throw-away session after its headers are checked against the body
//! (`check_modern`); its errors get 400 (-32020, -32021, -32022, missing
//! `_meta`) or 404 (-32601). `subscriptions/listen` is its long-lived SSE
//! answer, in place of the GET stream.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Body, Frame, Incoming as IncomingBody, SizeHint};
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, mpsc};

use crate::policy::Token;
use crate::protocol::jsonrpc::{self, Incoming, Message};
use crate::protocol::mcp::{self, Server, Session, stateless};
use crate::protocol::rpc;

/// Limits and allow-lists of the HTTP server.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// Host names (no port) accepted in `Host` and `Origin`.
    pub allowed_hosts: Vec<String>,
    /// Largest request body, in bytes.
    pub max_body: usize,
    /// Requests running tool calls at once, over all clients.
    pub max_calls: usize,
    /// Open connections at once; more are closed on accept.
    pub max_connections: usize,
    /// Open MCP sessions at once.
    pub max_sessions: usize,
    /// A session unused this long is forgotten (404 afterwards).
    pub session_idle: Duration,
    /// Time a client has to send its request headers.
    pub header_timeout: Duration,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            allowed_hosts: loopback_names(),
            max_body: 4 * 1024 * 1024,
            max_calls: 64,
            max_connections: 1024,
            max_sessions: 4096,
            session_idle: Duration::from_secs(3600),
            header_timeout: Duration::from_secs(10),
        }
    }
}

/// The host names that mean this machine.
pub fn loopback_names() -> Vec<String> {
    ["localhost", "127.0.0.1", "::1"].map(String::from).to_vec()
}

type BoxBody = http_body_util::combinators::BoxBody<Bytes, Infallible>;

struct Entry {
    session: Arc<Session>,
    last_used: Mutex<Instant>,
}

struct Shared {
    server: Arc<Server>,
    config: HttpConfig,
    tokens: Vec<Token>,
    sessions: Mutex<HashMap<String, Arc<Entry>>>,
    calls: Arc<Semaphore>,
}

/// Serves until `shutdown` resolves; then stops accepting, lets requests in
/// flight finish within `grace`, and cancels the calls still running.
pub async fn serve(
    server: Arc<Server>,
    listener: TcpListener,
    config: HttpConfig,
    shutdown: impl std::future::Future<Output = ()>,
    grace: Duration,
) -> std::io::Result<()> {
    let tokens = server.runtime.policy().tokens().to_vec();
    let connections = Arc::new(Semaphore::new(config.max_connections));
    let shared = Arc::new(Shared {
        server: server.clone(),
        tokens,
        sessions: Mutex::new(HashMap::new()),
        calls: Arc::new(Semaphore::new(config.max_calls)),
        config,
    });
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(err) => {
                    // Out of file descriptors and the like: wait, do not spin.
                    tracing::warn!("accept: {err}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Ok(permit) = connections.clone().try_acquire_owned() else {
            tracing::warn!("connection limit reached; closing a connection from {peer}");
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let header_timeout = shared.config.header_timeout;
        let shared = shared.clone();
        let service = hyper::service::service_fn(move |req| {
            let shared = shared.clone();
            async move { Ok::<_, Infallible>(route(&shared, req, peer).await) }
        });
        let conn = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(header_timeout)
            .max_buf_size(64 * 1024)
            .serve_connection(TokioIo::new(stream), service);
        let watched = graceful.watch(conn);
        tokio::spawn(async move {
            if let Err(err) = watched.await {
                tracing::debug!("connection from {peer}: {err}");
            }
            drop(permit);
        });
    }
    drop(listener);
    // Standing streams never end on their own: close them so the graceful
    // shutdown waits only for real requests.
    for entry in lock(&shared.sessions).values() {
        entry.session.set_standing(None);
    }
    tracing::info!("stopped accepting; waiting up to {grace:?} for requests in flight");
    let drained = graceful.shutdown();
    tokio::pin!(drained);
    if tokio::time::timeout(grace, &mut drained).await.is_err() {
        tracing::warn!(
            "grace period over; cancelling {} running call(s)",
            server.running()
        );
        server.cancel_all();
        // A cancelled guest stops within a few epoch ticks; its request is
        // then answered ("shutting down") and its connection closes.
        if tokio::time::timeout(Duration::from_secs(2), &mut drained)
            .await
            .is_err()
        {
            tracing::warn!("{} call(s) did not stop in time", server.running());
        }
    }
    Ok(())
}

async fn route(
    shared: &Arc<Shared>,
    req: Request<IncomingBody>,
    peer: SocketAddr,
) -> Response<BoxBody> {
    if let Err(why) = check_one_host(req.headers()) {
        tracing::info!("refused a request from {peer}: {why}");
        return plain(StatusCode::BAD_REQUEST, &format!("bad request: {why}\n"));
    }
    if let Err(why) = check_host_and_origin(&shared.config, req.headers()) {
        tracing::info!("refused a request from {peer}: {why}");
        return plain(StatusCode::FORBIDDEN, &format!("forbidden: {why}\n"));
    }
    let path = req.uri().path().to_string();
    let known = matches!(path.as_str(), "/mcp" | "/rpc" | "/rpc/describe");
    if !known {
        return plain(
            StatusCode::NOT_FOUND,
            "not found; MCP is at /mcp, JSON-RPC at /rpc\n",
        );
    }
    let token = match authenticate(&shared.tokens, req.headers()) {
        Ok(token) => token,
        Err(response) => return response,
    };
    match (path.as_str(), req.method()) {
        ("/mcp", &Method::POST) => mcp_post(shared, req, token).await,
        ("/mcp", &Method::DELETE) => mcp_delete(shared, req.headers(), token.as_ref()),
        ("/mcp", &Method::GET) => mcp_get(shared, req.headers(), token.as_ref()),
        ("/mcp", _) => not_allowed("GET, POST, DELETE"),
        ("/rpc", &Method::POST) => rpc_post(shared, req, token).await,
        ("/rpc", _) => not_allowed("POST"),
        ("/rpc/describe", &Method::GET) => plain(
            StatusCode::OK,
            &rpc::describe(&shared.server, token.as_ref()),
        ),
        _ => not_allowed("GET"),
    }
}

// --- /mcp ----------------------------------------------------------------

const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";

async fn mcp_post(
    shared: &Arc<Shared>,
    req: Request<IncomingBody>,
    token: Option<Token>,
) -> Response<BoxBody> {
    let headers = req.headers().clone();
    if let Err(response) = check_json_content_type(&headers) {
        return response;
    }
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("*/*")
        .to_ascii_lowercase();
    let any = accept.contains("*/*");
    if !(any || accept.contains("application/json") || accept.contains("text/event-stream")) {
        return rpc_error_status(
            StatusCode::NOT_ACCEPTABLE,
            "Not Acceptable: the client must accept application/json and text/event-stream",
        );
    }
    let sse_ok = any || accept.contains("text/event-stream");
    let version_header = headers.get(VERSION_HEADER).map(|v| v.to_str().ok());
    let body = match read_body(req, shared.config.max_body).await {
        Ok(body) => body,
        Err(response) => return response,
    };
    let incoming = jsonrpc::parse(&body);
    // Errors answer the request's id when there is one.
    let request_id = match &incoming {
        Incoming::Single(Message::Request(r)) => r.id.clone(),
        _ => None,
    }
    .unwrap_or_else(jsonrpc::Id::null);
    if let Some(version) = version_header {
        let supported = version.is_some_and(|v| stateless::ALL_VERSIONS.contains(&v.trim()));
        if !supported {
            // UnsupportedProtocolVersionError (2026-07-28), which older
            // clients read as a 400 like before.
            let error = stateless::unsupported_version(version.unwrap_or(""));
            return json(
                StatusCode::BAD_REQUEST,
                &jsonrpc::error_response(&request_id, &error),
            );
        }
    }
    let modern_header = version_header.flatten().map(str::trim) == Some(stateless::MODERN);

    let is_initialize = matches!(&incoming,
        Incoming::Single(Message::Request(r)) if r.method == "initialize");
    if is_initialize && modern_header {
        // Revision 2026-07-28 has no initialize.
        let error = jsonrpc::ErrorObject::method_not_found("initialize");
        return json(
            StatusCode::NOT_FOUND,
            &jsonrpc::error_response(&request_id, &error),
        );
    }
    if is_initialize {
        return initialize(shared, incoming, token).await;
    }

    // 2026-07-28: no session; each request stands alone.
    let modern = modern_header
        || matches!(&incoming, Incoming::Single(Message::Request(r)) if stateless::is_modern(r));
    let session = if modern {
        if let Err(response) = check_modern(&headers, &incoming) {
            return response;
        }
        Session::new(shared.server.clone(), token)
    } else {
        match find_session(shared, &headers, token.as_ref()) {
            Ok(session) => session,
            Err(response) => return response,
        }
    };
    let has_requests = match &incoming {
        Incoming::Single(m) => matches!(m, Message::Request(r) if r.id.is_some()),
        Incoming::Batch(ms) => ms
            .iter()
            .any(|m| matches!(m, Message::Request(r) if r.id.is_some())),
        Incoming::Error(_) => false,
    };
    if !has_requests {
        // Notifications and replies: accepted, nothing to answer — unless
        // the input itself was invalid.
        let (out, _) = mpsc::unbounded_channel();
        return match session.handle_incoming(incoming, &out).await {
            None => empty(StatusCode::ACCEPTED),
            Some(error) => json(StatusCode::BAD_REQUEST, &error),
        };
    }
    let runs_call = match &incoming {
        Incoming::Single(m) => mcp::runs_long(m),
        Incoming::Batch(ms) => ms.iter().any(mcp::runs_long),
        Incoming::Error(_) => false,
    };
    let permit = if runs_call {
        match shared.calls.clone().try_acquire_owned() {
            Ok(permit) => Some(permit),
            Err(_) => return busy(),
        }
    } else {
        None
    };
    let (out, mut rx) = mpsc::unbounded_channel::<Value>();
    // Without SSE nothing can be streamed: a closed outbox makes the
    // session drop notifications and treat confirmation as unavailable.
    if !sse_ok {
        rx.close();
    }
    // Polled here rather than spawned (one task and wake-up less per
    // request); it moves into the stream's task if the answer streams.
    // Dropping it (the client went away) drops the call and so cancels it.
    let mut work = CatchPanic(Box::pin(async move {
        let response = session.handle_incoming(incoming, &out).await;
        drop(permit);
        response
    }));
    let finish = |done| {
        let mut response = finish_json(done);
        if modern && response.status() == StatusCode::OK {
            set_modern_status(&mut response);
        }
        response
    };
    let first = tokio::select! {
        done = &mut work => return finish(done),
        first = rx.recv(), if sse_ok => first,
    };
    let Some(first) = first else {
        // The outbox closed without a message: wait for the answer.
        return finish(work.await);
    };
    // Something to stream before the result: switch to SSE.
    let (tx, body) = ChannelBody::new();
    tokio::spawn(async move {
        let mut work = work;
        if tx.send(sse_event(&first)).is_err() {
            return; // the client went away; dropping `work` stops the call
        }
        loop {
            tokio::select! {
                message = rx.recv() => match message {
                    Some(message) => if tx.send(sse_event(&message)).is_err() { return },
                    None => break,
                },
                done = &mut work => {
                    while let Ok(message) = rx.try_recv() {
                        let _ = tx.send(sse_event(&message));
                    }
                    if let Ok(Some(response)) = done {
                        let _ = tx.send(sse_event(&response));
                    }
                    return;
                }
            }
        }
        if let Ok(Some(response)) = work.await {
            let _ = tx.send(sse_event(&response));
        }
    });
    let mut response = Response::new(body.boxed());
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// Checks a 2026-07-28 POST before it runs: a single message, the
/// per-request `_meta` (400 with -32602 or -32022) and, for a request, the
/// `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers against the
/// body (400 with -32020).
#[allow(clippy::result_large_err)]
fn check_modern(headers: &HeaderMap, incoming: &Incoming) -> Result<(), Response<BoxBody>> {
    let request = match incoming {
        Incoming::Single(Message::Request(request)) => request,
        // Notifications and replies: nothing to check (202 later).
        Incoming::Single(_) => return Ok(()),
        Incoming::Error(error) => {
            return Err(json(
                StatusCode::BAD_REQUEST,
                &jsonrpc::error_response(&jsonrpc::Id::null(), error),
            ));
        }
        Incoming::Batch(_) => {
            let error = jsonrpc::ErrorObject::invalid_request(
                "revision 2026-07-28 takes one JSON-RPC message per POST, not a batch",
            );
            return Err(json(
                StatusCode::BAD_REQUEST,
                &jsonrpc::error_response(&jsonrpc::Id::null(), &error),
            ));
        }
    };
    let Some(id) = request.id.as_ref() else {
        return Ok(());
    };
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    // A body version the header contradicts is a header mismatch (-32020),
    // whether or not the server speaks it.
    let body_version = request
        .params
        .as_ref()
        .and_then(|p| p.pointer("/_meta/io.modelcontextprotocol~1protocolVersion"))
        .and_then(Value::as_str);
    let mismatch = match (header(VERSION_HEADER).map(str::trim), body_version) {
        (Some(h), Some(b)) if h != b => Some(jsonrpc::ErrorObject::new(
            stateless::HEADER_MISMATCH,
            format!(
                "Header mismatch: MCP-Protocol-Version header value '{}' does not match body value '{}'",
                jsonrpc::shorten(h, 100),
                jsonrpc::shorten(b, 100)
            ),
        )),
        _ => None,
    };
    mismatch
        .map_or_else(|| stateless::read_meta(request.params.as_ref()), Err)
        .and_then(|meta| {
            stateless::check_headers(
                header(VERSION_HEADER),
                header("mcp-method"),
                header("mcp-name"),
                request,
                &meta,
            )
        })
        .map_err(|error| {
            json(
                StatusCode::BAD_REQUEST,
                &jsonrpc::error_response(id, &error),
            )
        })
}

/// Sets the status of a JSON answer to a 2026-07-28 request from its error
/// (400, 404), if any.
fn set_modern_status(response: &mut Response<BoxBody>) {
    let code = response
        .extensions()
        .get::<ModernError>()
        .map(|e| e.0)
        .unwrap_or(200);
    if let Ok(status) = StatusCode::from_u16(code) {
        *response.status_mut() = status;
    }
}

/// The HTTP status a 2026-07-28 answer asks for, stashed by [`finish_json`].
#[derive(Clone, Copy)]
struct ModernError(u16);

fn finish_json(done: Result<Option<Value>, Panicked>) -> Response<BoxBody> {
    match done {
        Ok(Some(response)) => {
            let status = stateless::http_status(&response);
            let mut reply = json(StatusCode::OK, &response);
            reply.extensions_mut().insert(ModernError(status));
            reply
        }
        // Cancelled by the client: there is no response to give.
        Ok(None) => empty(StatusCode::ACCEPTED),
        Err(Panicked) => {
            tracing::error!("an MCP request failed: its handler panicked");
            rpc_error_status(StatusCode::INTERNAL_SERVER_ERROR, "Internal error")
        }
    }
}

async fn initialize(
    shared: &Arc<Shared>,
    incoming: Incoming,
    token: Option<Token>,
) -> Response<BoxBody> {
    let session = Session::new(shared.server.clone(), token);
    let (out, _) = mpsc::unbounded_channel();
    let Some(answer) = session.handle_incoming(incoming, &out).await else {
        return empty(StatusCode::ACCEPTED);
    };
    if answer.get("result").is_none() {
        return json(StatusCode::OK, &answer);
    }
    let id = hex::encode(rand::random::<[u8; 16]>());
    {
        let mut sessions = lock(&shared.sessions);
        let now = Instant::now();
        let idle = shared.config.session_idle;
        sessions.retain(|_, e| now.duration_since(*lock(&e.last_used)) < idle);
        if sessions.len() >= shared.config.max_sessions {
            drop(sessions);
            return busy();
        }
        sessions.insert(
            id.clone(),
            Arc::new(Entry {
                session,
                last_used: Mutex::new(now),
            }),
        );
    }
    let mut response = json(StatusCode::OK, &answer);
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(SESSION_HEADER, value);
    }
    response
}

#[allow(clippy::result_large_err)]
fn find_session(
    shared: &Shared,
    headers: &HeaderMap,
    token: Option<&Token>,
) -> Result<Arc<Session>, Response<BoxBody>> {
    let Some(id) = headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok()) else {
        return Err(rpc_error_status(
            StatusCode::BAD_REQUEST,
            "Bad Request: Mcp-Session-Id header is required (send initialize first)",
        ));
    };
    let entry = lock(&shared.sessions).get(id).cloned();
    let not_found = || {
        rpc_error_status(
            StatusCode::NOT_FOUND,
            "Session not found; initialize a new one",
        )
    };
    let Some(entry) = entry else {
        return Err(not_found());
    };
    let mut last = lock(&entry.last_used);
    if last.elapsed() >= shared.config.session_idle {
        drop(last);
        lock(&shared.sessions).remove(id);
        return Err(not_found());
    }
    // A session belongs to the token that opened it.
    if entry.session.token_name() != token.map(|t| t.name.as_str()) {
        return Err(not_found());
    }
    *last = Instant::now();
    Ok(entry.session.clone())
}

fn mcp_delete(shared: &Shared, headers: &HeaderMap, token: Option<&Token>) -> Response<BoxBody> {
    let session = match find_session(shared, headers, token) {
        Ok(session) => session,
        Err(response) => return response,
    };
    if let Some(id) = headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok()) {
        lock(&shared.sessions).remove(id);
    }
    session.cancel_all();
    session.set_standing(None);
    empty(StatusCode::NO_CONTENT)
}

/// How often an idle standing stream gets an SSE comment, so a client that
/// went away is noticed.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// GET `/mcp`: the session's standing SSE stream.
fn mcp_get(shared: &Shared, headers: &HeaderMap, token: Option<&Token>) -> Response<BoxBody> {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    if !(accept.contains("text/event-stream") || accept.contains("*/*")) {
        return rpc_error_status(
            StatusCode::NOT_ACCEPTABLE,
            "Not Acceptable: GET /mcp is an SSE stream; accept text/event-stream",
        );
    }
    let session = match find_session(shared, headers, token) {
        Ok(session) => session,
        Err(response) => return response,
    };
    let (out, mut rx) = mpsc::unbounded_channel::<Value>();
    session.set_standing(Some(out));
    let (tx, body) = ChannelBody::new();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(KEEP_ALIVE);
        tick.tick().await;
        loop {
            let bytes = tokio::select! {
                message = rx.recv() => match message {
                    Some(message) => sse_event(&message),
                    // Replaced by a newer stream, the session ended, or shutdown.
                    None => return,
                },
                _ = tick.tick() => Bytes::from_static(b": keep-alive\n\n"),
            };
            if tx.send(bytes).is_err() {
                return; // the client went away
            }
        }
    });
    let mut response = Response::new(body.boxed());
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

// --- /rpc ----------------------------------------------------------------

async fn rpc_post(
    shared: &Arc<Shared>,
    req: Request<IncomingBody>,
    token: Option<Token>,
) -> Response<BoxBody> {
    if let Err(response) = check_json_content_type(req.headers()) {
        return response;
    }
    let body = match read_body(req, shared.config.max_body).await {
        Ok(body) => body,
        Err(response) => return response,
    };
    let Ok(_permit) = shared.calls.clone().try_acquire_owned() else {
        return busy();
    };
    match rpc::handle(&shared.server, token.as_ref(), jsonrpc::parse(&body)).await {
        Some(response) => json(StatusCode::OK, &response),
        None => empty(StatusCode::NO_CONTENT),
    }
}

// --- checks ----------------------------------------------------------------

/// The host part of `host[:port]` or `[v6]:port`, lower-cased.
fn host_name(authority: &str) -> &str {
    let authority = authority.trim();
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().unwrap_or("");
    }
    match authority.rsplit_once(':') {
        Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
        _ => authority,
    }
}

/// RFC 9112 §3.2: a request without a `Host` header, with more than one,
/// or with one that is not text, is a bad request (400) — before anyone
/// asks whether the host is allowed.
fn check_one_host(headers: &HeaderMap) -> Result<(), &'static str> {
    let mut hosts = headers.get_all(header::HOST).iter();
    match (hosts.next(), hosts.next()) {
        (None, _) => Err("no Host header"),
        (Some(_), Some(_)) => Err("more than one Host header"),
        (Some(host), None) if host.to_str().is_err() => Err("unreadable Host header"),
        (Some(_), None) => Ok(()),
    }
}

fn check_host_and_origin(config: &HttpConfig, headers: &HeaderMap) -> Result<(), String> {
    let allowed = |host: &str| {
        config
            .allowed_hosts
            .iter()
            .any(|a| a.eq_ignore_ascii_case(host))
    };
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .ok_or("no Host header")?;
    let name = host_name(host);
    if !allowed(name) {
        return Err(format!(
            "Host {:?} is not allowed",
            jsonrpc::shorten(name, 100)
        ));
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().map_err(|_| "unreadable Origin")?;
        let authority = origin
            .split_once("://")
            .map(|(_, rest)| rest.split('/').next().unwrap_or(""))
            .ok_or_else(|| format!("Origin {:?} is not allowed", jsonrpc::shorten(origin, 100)))?;
        if !allowed(host_name(authority)) {
            return Err(format!(
                "Origin {:?} is not allowed",
                jsonrpc::shorten(origin, 100)
            ));
        }
    }
    Ok(())
}

/// The token of the request when the policy has tokens; `Ok(None)` when it
/// has none (everything is open).
#[allow(clippy::result_large_err)]
fn authenticate(tokens: &[Token], headers: &HeaderMap) -> Result<Option<Token>, Response<BoxBody>> {
    if tokens.is_empty() {
        return Ok(None);
    }
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, rest) = v.trim().split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
        });
    let challenge = match bearer {
        None => "Bearer realm=\"airlock\"",
        Some(bearer) => match tokens.iter().find(|t| t.accepts(bearer)) {
            Some(token) => return Ok(Some(token.clone())),
            None => "Bearer realm=\"airlock\", error=\"invalid_token\"",
        },
    };
    let mut response = plain(
        StatusCode::UNAUTHORIZED,
        "unauthorized: a valid bearer token is required\n",
    );
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static(challenge),
    );
    Err(response)
}

#[allow(clippy::result_large_err)]
fn check_json_content_type(headers: &HeaderMap) -> Result<(), Response<BoxBody>> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let essence = content_type.split(';').next().unwrap_or("").trim();
    if essence.eq_ignore_ascii_case("application/json") {
        Ok(())
    } else {
        Err(plain(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported media type: send Content-Type: application/json\n",
        ))
    }
}

/// Reads the body, refusing (413) one over `max` from its declared length
/// or as soon as the bytes read pass `max`.
#[allow(clippy::result_large_err)]
async fn read_body(req: Request<IncomingBody>, max: usize) -> Result<Bytes, Response<BoxBody>> {
    let too_large = || {
        plain(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!("request body over the {max}-byte limit\n"),
        )
    };
    if let Some(length) = req.headers().get(header::CONTENT_LENGTH) {
        let length = length.to_str().ok().and_then(|v| v.parse::<u64>().ok());
        match length {
            Some(length) if length > max as u64 => return Err(too_large()),
            Some(_) => {}
            None => return Err(plain(StatusCode::BAD_REQUEST, "bad Content-Length\n")),
        }
    }
    match Limited::new(req.into_body(), max).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(err) if err.is::<http_body_util::LengthLimitError>() => Err(too_large()),
        Err(err) => {
            tracing::debug!("reading a request body: {err}");
            Err(plain(
                StatusCode::BAD_REQUEST,
                "could not read the request body\n",
            ))
        }
    }
}

// --- responses ---------------------------------------------------------------

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn full(bytes: impl Into<Bytes>) -> BoxBody {
    Full::new(bytes.into()).boxed()
}

fn plain(status: StatusCode, text: &str) -> Response<BoxBody> {
    typed(status, text.to_string(), "text/plain; charset=utf-8")
}

fn json(status: StatusCode, value: &Value) -> Response<BoxBody> {
    typed(status, crate::json::to_string(value), "application/json")
}

/// A response with `status`, `body` and its content type.
fn typed(status: StatusCode, body: String, content_type: &'static str) -> Response<BoxBody> {
    let mut response = Response::new(full(body));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// An HTTP error with a JSON-RPC error body (id null), as MCP clients expect.
fn rpc_error_status(status: StatusCode, message: &str) -> Response<BoxBody> {
    let error = jsonrpc::ErrorObject::new(jsonrpc::INVALID_REQUEST, message);
    json(
        status,
        &jsonrpc::error_response(&jsonrpc::Id::null(), &error),
    )
}

fn empty(status: StatusCode) -> Response<BoxBody> {
    let mut response = Response::new(full(Bytes::new()));
    *response.status_mut() = status;
    response
}

fn busy() -> Response<BoxBody> {
    let mut response = plain(
        StatusCode::SERVICE_UNAVAILABLE,
        "busy: too many calls in flight; retry shortly\n",
    );
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

fn not_allowed(allow: &'static str) -> Response<BoxBody> {
    let mut response = plain(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n");
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static(allow));
    response
}

fn sse_event(message: &Value) -> Bytes {
    let mut event = b"event: message\ndata: ".to_vec();
    crate::json::write(&mut event, message);
    event.extend_from_slice(b"\n\n");
    Bytes::from(event)
}

/// A request's future that answers `Err(Panicked)` when it panics, as a
/// spawned task's `JoinError` would: a bug gives a 500, not a reset
/// connection. It is not polled again after that.
struct CatchPanic<F>(Pin<Box<F>>);

struct Panicked;

impl<F: Future> Future for CatchPanic<F> {
    type Output = Result<F::Output, Panicked>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = self.0.as_mut();
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(Poll::Ready(value)) => Poll::Ready(Ok(value)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(_) => Poll::Ready(Err(Panicked)),
        }
    }
}

/// A response body fed through a channel (the SSE stream).
struct ChannelBody {
    rx: mpsc::UnboundedReceiver<Bytes>,
}

impl ChannelBody {
    fn new() -> (mpsc::UnboundedSender<Bytes>, ChannelBody) {
        let (tx, rx) = mpsc::unbounded_channel();
        (tx, ChannelBody { rx })
    }
}

impl Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.rx
            .poll_recv(cx)
            .map(|m| m.map(|bytes| Ok(Frame::data(bytes))))
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(*k, HeaderValue::from_str(v).unwrap());
        }
        map
    }

    #[test]
    fn host_names() {
        assert_eq!(host_name("localhost:8414"), "localhost");
        assert_eq!(host_name("127.0.0.1"), "127.0.0.1");
        assert_eq!(host_name("[::1]:80"), "::1");
        assert_eq!(host_name("evil.example:1"), "evil.example");
    }

    #[test]
    fn exactly_one_host_header() {
        assert!(check_one_host(&headers(&[("host", "localhost")])).is_ok());
        assert!(check_one_host(&headers(&[])).is_err());
        let two = headers(&[("host", "localhost"), ("host", "localhost")]);
        assert_eq!(check_one_host(&two), Err("more than one Host header"));
    }

    #[test]
    fn host_and_origin() {
        let config = HttpConfig::default();
        let ok = |h: &[(&'static str, &str)]| check_host_and_origin(&config, &headers(h)).is_ok();
        assert!(ok(&[("host", "127.0.0.1:8414")]));
        assert!(ok(&[
            ("host", "localhost"),
            ("origin", "http://localhost:3000")
        ]));
        assert!(ok(&[("host", "[::1]:1"), ("origin", "http://[::1]:5")]));
        assert!(!ok(&[]));
        assert!(!ok(&[("host", "attacker.example:8414")]));
        assert!(!ok(&[
            ("host", "localhost"),
            ("origin", "http://attacker.example")
        ]));
        assert!(!ok(&[("host", "localhost"), ("origin", "null")]));
        assert!(!ok(&[("host", "localhost.attacker.example")]));
    }

    #[test]
    fn bearer_tokens() {
        use sha2::Digest as _;
        let token = Token {
            name: "ci".into(),
            sha256: sha2::Sha256::digest(b"s3cret").into(),
            tools: None,
        };
        let tokens = [token];
        assert!(authenticate(&[], &headers(&[])).unwrap().is_none());
        assert!(authenticate(&tokens, &headers(&[])).is_err());
        assert!(authenticate(&tokens, &headers(&[("authorization", "Bearer wrong")])).is_err());
        let found = authenticate(&tokens, &headers(&[("authorization", "Bearer s3cret")])).unwrap();
        assert_eq!(found.map(|t| t.name), Some("ci".into()));
        let response = authenticate(&tokens, &headers(&[])).unwrap_err();
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        assert!(response.headers().contains_key(header::WWW_AUTHENTICATE));
    }
}
