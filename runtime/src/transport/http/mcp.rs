//! `/mcp`: Streamable HTTP. A POST is answered with JSON, unless the
//! request sends something on its own before its result (progress, a log,
//! an elicitation request): then the answer turns into an SSE stream
//! carrying those and the result. GET opens the session's standing SSE
//! stream; DELETE ends the session. Sessions (2025-11-25 and older) are
//! opened by `initialize` and named by `Mcp-Session-Id`; a 2026-07-28
//! request runs on a throw-away session once its headers agree with its
//! body.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::body::Incoming as IncomingBody;
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Request, Response, StatusCode};
use serde_json::Value;

use super::body::{
    BoxBody, CatchPanic, Panicked, busy, draining, empty, json, refused, rpc_error_status, sse,
    sse_event,
};
use super::checks::{check_headers, check_json_content_type, read_body, stateless_status};
use super::shared::{Entry, Shared, stream_slot};
use crate::call::Caller;
use crate::policy::Token;
use crate::protocol::jsonrpc::{self, ErrorObject, Id, Incoming, Message};
use crate::protocol::mcp::Session;
use crate::protocol::mcp::dispatch::{self, Answered, Before};
use crate::protocol::mcp::request::Meta;
use crate::protocol::mcp::request::{HEADER_MISMATCH, read_meta, unsupported_version};
use crate::protocol::mcp::revision::{META_VERSION, Revision};
use crate::protocol::outbox::Outbox;
use crate::sync::lock;
use crate::transport::calls::Holds;

const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";
/// How often an idle standing stream gets an SSE comment, so a client that
/// went away is noticed.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

type Answer = Result<Response<BoxBody>, Response<BoxBody>>;

/// POST `/mcp`.
pub async fn post(
    shared: &Arc<Shared>,
    req: Request<IncomingBody>,
    token: Option<Token>,
    peer: SocketAddr,
) -> Response<BoxBody> {
    match post_checked(shared, req, token, peer).await {
        Ok(response) | Err(response) => response,
    }
}

async fn post_checked(
    shared: &Arc<Shared>,
    req: Request<IncomingBody>,
    token: Option<Token>,
    peer: SocketAddr,
) -> Answer {
    let headers = req.headers().clone();
    check_json_content_type(&headers)?;
    let sse_ok = accepts_sse(&headers)?;
    let body = read_body(req, shared.config.max_body, shared.config.body_timeout).await?;
    let incoming = jsonrpc::parse(&body);
    let single = match &incoming {
        Incoming::Single(Message::Request(request)) => Some(request),
        _ => None,
    };
    // Errors answer the request's id when there is one.
    let id = single.and_then(|r| r.id.clone()).unwrap_or_else(Id::null);
    let version = headers.get(VERSION_HEADER).map(|v| v.to_str().ok());
    if let Some(version) = version
        && version.is_none_or(|v| Revision::parse(v.trim()).is_none())
    {
        // UnsupportedProtocolVersionError (2026-07-28), which older
        // clients read as a 400 like before.
        let error = unsupported_version(version.unwrap_or(""));
        return Err(json(
            StatusCode::BAD_REQUEST,
            &jsonrpc::error_response(&id, &error),
        ));
    }
    let stateless = dispatch::is_stateless(version.flatten(), single);
    if let Some(opening) = single.filter(|r| matches!(dispatch::before(r), Before::OpensSession)) {
        if stateless {
            // Revision 2026-07-28 opens no session.
            let error = ErrorObject::method_not_found(&opening.method);
            return Err(json(
                StatusCode::NOT_FOUND,
                &jsonrpc::error_response(&id, &error),
            ));
        }
        if shared.calls.is_draining() {
            return Err(draining());
        }
        return Ok(initialize(shared, incoming, token, peer).await);
    }
    let (session, meta) = if stateless {
        let meta = check_stateless(&headers, &incoming)?;
        check_mirrored(shared, &headers, single, token.as_ref())?;
        let caller = Caller::of(token.as_ref(), Caller::Peer(peer));
        (shared.server.open_session(token, caller), meta)
    } else {
        (find_session(shared, &headers, token.as_ref())?, None)
    };
    Ok(answer(shared, session, incoming, meta, sse_ok, stateless).await)
}

/// Whether the client takes an SSE answer; 406 when it takes neither JSON
/// nor SSE.
#[allow(clippy::result_large_err)]
fn accepts_sse(headers: &HeaderMap) -> Result<bool, Response<BoxBody>> {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("*/*")
        .to_ascii_lowercase();
    let any = accept.contains("*/*");
    if !(any || accept.contains("application/json") || accept.contains("text/event-stream")) {
        return Err(rpc_error_status(
            StatusCode::NOT_ACCEPTABLE,
            "Not Acceptable: the client must accept application/json and text/event-stream",
        ));
    }
    Ok(any || accept.contains("text/event-stream"))
}

/// Runs a body on `session` and answers it: 202 for notifications and
/// replies, JSON for a response, or an SSE stream when messages precede it.
/// `meta` is a 2026-07-28 request's `_meta`, read once by its checks.
async fn answer(
    shared: &Arc<Shared>,
    session: Arc<Session>,
    incoming: Incoming,
    meta: Option<Meta>,
    sse_ok: bool,
    stateless: bool,
) -> Response<BoxBody> {
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
        return match dispatch::handle(&shared.server, &session, incoming, meta, &Outbox::closed())
            .await
            .body
        {
            None => empty(StatusCode::ACCEPTED),
            Some(error) => json(StatusCode::BAD_REQUEST, &error),
        };
    }
    let holds = Holds::of(&incoming);
    // A call takes one of the calls in flight; a wait (a subscription, a
    // task's result) only a stream, so idle listeners never starve calls.
    let place = match shared.calls.admit(holds) {
        Ok(place) => place,
        Err(why) => return refused(why),
    };
    let stream = match holds.wait() {
        true => match stream_slot(shared, session.token_name()) {
            Ok(slot) => Some(slot),
            Err(response) => return response,
        },
        false => None,
    };
    // Without SSE nothing can be streamed: a closed outbox makes the
    // session drop notifications and treat confirmation as unavailable.
    let (out, inbox) = match sse_ok {
        true => {
            let (out, inbox) = Outbox::channel();
            (out, Some(inbox))
        }
        false => (Outbox::closed(), None),
    };
    // Polled here rather than spawned (one task and wake-up less per
    // request); it moves into the stream's task if the answer streams.
    // Dropping it (the client went away) drops the call and so cancels it.
    // A call run inline runs inside this poll, so nothing below reads the
    // inbox meanwhile: a call that may ask its client (and so wait for the
    // question read from there) never runs inline here, but in a task of
    // its own (`PreparedCall::run_on_lane`).
    let server = shared.server.clone();
    let waits = crate::transport::listing::waits(&incoming, &server.runtime);
    // The request's trace context (its `traceparent` header, entered by
    // `route`) goes with the work, which may finish in the stream's task.
    let trace = crate::telemetry::current();
    let mut work = CatchPanic(Box::pin(async move {
        if waits {
            crate::transport::listing::settled(&server.runtime).await;
        }
        let handling = dispatch::handle(&server, &session, incoming, meta, &out);
        let answered = crate::telemetry::in_context(trace, handling).await;
        drop((place, stream));
        answered
    }));
    let finish = |done| finish_json(done, stateless);
    let Some(mut inbox) = inbox else {
        return finish(work.await);
    };
    let first = tokio::select! {
        done = &mut work => return finish(done),
        first = inbox.recv() => first,
    };
    let Some(first) = first else {
        // The outbox closed without a message: wait for the answer.
        return finish(work.await);
    };
    // Something to stream before the result: switch to SSE. Whenever the
    // client goes away (noticed at once when the connection closes, or at
    // the next keep-alive comment), returning drops `work`: the call is
    // stopped and its places (call, stream) are given back.
    let (tx, response) = sse();
    shared.calls.spawn(async move {
        let mut work = work;
        if tx.send(sse_event(&first)).await.is_err() {
            return;
        }
        let mut tick = tokio::time::interval(KEEP_ALIVE);
        tick.tick().await;
        loop {
            tokio::select! {
                message = inbox.recv() => match message {
                    Some(message) => if tx.send(sse_event(&message)).await.is_err() { return },
                    None => break,
                },
                () = tx.closed() => return,
                _ = tick.tick() => if tx.send(Bytes::from_static(b": keep-alive\n\n")).await.is_err() {
                    return;
                },
                done = &mut work => {
                    while let Ok(message) = inbox.try_recv() {
                        if tx.send(sse_event(&message)).await.is_err() {
                            return;
                        }
                    }
                    if let Ok(Answered { body: Some(response), .. }) = done {
                        let _ = tx.send(sse_event(&response)).await;
                    }
                    return;
                }
            }
        }
        tokio::select! {
            done = work => if let Ok(Answered { body: Some(response), .. }) = done {
                let _ = tx.send(sse_event(&response)).await;
            },
            () = tx.closed() => {}
        }
    });
    response
}

/// The JSON answer to a POST; a 2026-07-28 error gets its own status.
fn finish_json(done: Result<Answered, Panicked>, stateless: bool) -> Response<BoxBody> {
    match done {
        Ok(Answered {
            body: Some(response),
            error,
        }) => {
            let status = match stateless {
                true => stateless_status(error),
                false => StatusCode::OK,
            };
            json(status, &response)
        }
        // Cancelled by the client: there is no response to give.
        Ok(Answered { body: None, .. }) => empty(StatusCode::ACCEPTED),
        Err(Panicked) => {
            tracing::error!("an MCP request failed: its handler panicked");
            rpc_error_status(StatusCode::INTERNAL_SERVER_ERROR, "Internal error")
        }
    }
}

/// Checks a 2026-07-28 POST before it runs: a single message, the
/// per-request `_meta` (400 with -32602 or -32022) and, for a request, the
/// `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers against the
/// body (400 with -32020). Gives the request's `_meta`, read once here.
#[allow(clippy::result_large_err)]
fn check_stateless(
    headers: &HeaderMap,
    incoming: &Incoming,
) -> Result<Option<Meta>, Response<BoxBody>> {
    let bad = |id: &Id, error: &ErrorObject| {
        json(StatusCode::BAD_REQUEST, &jsonrpc::error_response(id, error))
    };
    let request = match incoming {
        Incoming::Single(Message::Request(request)) => request,
        // Notifications and replies: nothing to check (202 later).
        Incoming::Single(_) => return Ok(None),
        Incoming::Error(error) => return Err(bad(&Id::null(), error)),
        Incoming::Batch(_) => {
            let error = ErrorObject::invalid_request(
                "revision 2026-07-28 takes one JSON-RPC message per POST, not a batch",
            );
            return Err(bad(&Id::null(), &error));
        }
    };
    let Some(id) = request.id.as_ref() else {
        return Ok(None);
    };
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let body_version = request
        .params
        .as_ref()
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(META_VERSION))
        .and_then(Value::as_str);
    // A body version the header contradicts is a header mismatch (-32020),
    // whether or not the server speaks it.
    if let (Some(h), Some(b)) = (header(VERSION_HEADER).map(str::trim), body_version)
        && h != b
    {
        let error = ErrorObject::new(
            HEADER_MISMATCH,
            format!(
                "Header mismatch: MCP-Protocol-Version header value '{}' does not match body value '{}'",
                jsonrpc::shorten(h, 100),
                jsonrpc::shorten(b, 100)
            ),
        );
        return Err(bad(id, &error));
    }
    let meta = read_meta(request.params.as_ref()).map_err(|error| bad(id, &error))?;
    check_headers(
        header(VERSION_HEADER),
        header("mcp-method"),
        header("mcp-name"),
        request,
        body_version.unwrap_or_default(),
    )
    .map_err(|error| bad(id, &error))?;
    Ok(Some(meta))
}

/// Runs the header check the method table names for a 2026-07-28 request
/// (a `tools/call`'s mirrored parameters): 400 with its error when the
/// headers disagree with the body.
#[allow(clippy::result_large_err)]
fn check_mirrored(
    shared: &Shared,
    headers: &HeaderMap,
    request: Option<&jsonrpc::Request>,
    token: Option<&Token>,
) -> Result<(), Response<BoxBody>> {
    let Some(request) = request else {
        return Ok(());
    };
    let Before::ChecksHeaders(check) = dispatch::before(request) else {
        return Ok(());
    };
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    check(&shared.server, token, request, &header).map_err(|error| {
        let id = request.id.clone().unwrap_or_else(Id::null);
        json(
            StatusCode::BAD_REQUEST,
            &jsonrpc::error_response(&id, &error),
        )
    })
}

/// `initialize`: a new session, named in the `Mcp-Session-Id` header.
async fn initialize(
    shared: &Arc<Shared>,
    incoming: Incoming,
    token: Option<Token>,
    peer: SocketAddr,
) -> Response<BoxBody> {
    let key = shared.next_session.fetch_add(1, Ordering::Relaxed);
    let caller = Caller::of(
        token.as_ref(),
        Caller::Session {
            key,
            peer: Some(peer),
        },
    );
    let session = shared.server.open_session(token, caller);
    let answered =
        dispatch::handle(&shared.server, &session, incoming, None, &Outbox::closed()).await;
    let Some(answer) = answered.body else {
        return empty(StatusCode::ACCEPTED);
    };
    if answered.error.is_some() {
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

/// The session `Mcp-Session-Id` names, if it is alive and belongs to the
/// request's token.
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

/// DELETE `/mcp`: ends the session and its calls.
pub fn delete(shared: &Shared, headers: &HeaderMap, token: Option<&Token>) -> Response<BoxBody> {
    let session = match find_session(shared, headers, token) {
        Ok(session) => session,
        Err(response) => return response,
    };
    if let Some(id) = headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok()) {
        lock(&shared.sessions).remove(id);
    }
    shared.server.cancel_session(&session);
    session.set_standing(None);
    empty(StatusCode::NO_CONTENT)
}

/// GET `/mcp`: the session's standing SSE stream (a newer one replaces an
/// older one).
pub fn get(shared: &Shared, headers: &HeaderMap, token: Option<&Token>) -> Response<BoxBody> {
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
    let slot = match stream_slot(shared, token.map(|t| t.name.as_str())) {
        Ok(slot) => slot,
        Err(response) => return response,
    };
    let (out, mut inbox) = Outbox::channel();
    session.set_standing(Some(out));
    let (tx, response) = sse();
    tokio::spawn(async move {
        let _slot = slot;
        let mut tick = tokio::time::interval(KEEP_ALIVE);
        tick.tick().await;
        loop {
            let bytes = tokio::select! {
                message = inbox.recv() => match message {
                    Some(message) => sse_event(&message),
                    // Replaced by a newer stream, the session ended, or shutdown.
                    None => return,
                },
                // The client went away (its connection closed).
                () = tx.closed() => return,
                _ = tick.tick() => Bytes::from_static(b": keep-alive\n\n"),
            };
            if tx.send(bytes).await.is_err() {
                return; // the client went away
            }
        }
    });
    response
}
