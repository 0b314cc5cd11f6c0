//! HTTP on hyper: MCP Streamable HTTP at `/mcp`, plain JSON-RPC at `/rpc`
//! (and its text description at `/rpc/describe`); `/healthz`, `/readyz`
//! and `/metrics` for operators.
//!
//! The front door is defensive because anything may knock:
//! - `Host` and `Origin` must name an allowed host (loopback by default),
//!   against DNS rebinding (403);
//! - bearer tokens from the policy, when it has any (401), each seeing only
//!   its tools;
//! - bodies are limited (413), refused from `Content-Length` before reading
//!   and cut off while streaming, never buffered whole;
//! - calls in flight are limited (503 with `Retry-After`); connections and
//!   long-lived streams (the GET stream, `subscriptions/listen`, a wait in
//!   `tasks/result`) are limited in total and per token, and a stream
//!   whose client left is closed (a keep-alive comment every 15 s finds
//!   one that left silently); a subscription is not a call and takes no
//!   call's place;
//! - a client must send its headers in time, and its body within a time
//!   that grows with what it delivered (408 when it trickles);
//! - while draining (after SIGTERM) new calls get 503 with `Retry-After`,
//!   so a load balancer sends them to another replica.
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
//! on a throw-away session after its headers are checked against the body;
//! its errors get 400 (-32020, -32021, -32022, missing `_meta`) or 404
//! (-32601). `subscriptions/listen` is its long-lived SSE answer, in place
//! of the GET stream.
//!
//! The modules: [`checks`] (the front door's rules, apart from I/O),
//! [`auth`] (who is asking: `[[tokens]]`, else an [`oauth`] access token),
//! [`limits`] (connections and streams per token, the body's allowance),
//! [`mcp`] (`/mcp`: sessions, POST, GET, DELETE), [`body`] (responses and
//! bounded SSE bodies), [`ops`] (`/healthz`, `/readyz`, `/metrics`),
//! [`tls`] (HTTPS on the listener, renewed certificates picked up);
//! `/rpc` and the accept loop are here.

mod auth;
mod body;
mod checks;
mod limits;
mod mcp;
mod oauth;
mod ops;
mod rpc_get;
mod shared;
mod tls;

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper::body::Incoming as IncomingBody;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use crate::policy::Token;
use crate::protocol::jsonrpc;
use crate::protocol::mcp::Server;
use crate::protocol::rpc;
use crate::sync::lock;
use crate::transport::calls::{self, Calls};
use body::{BoxBody, empty, json, not_allowed, plain, refused, typed};
use checks::{check_host_and_origin, check_json_content_type, check_one_host, read_body};
use limits::Slots;
use shared::{Bound, Shared, bind_connection};
pub use shared::{HttpConfig, loopback_names};
pub use tls::{ServerTls, TlsError, TlsFiles};

/// Serves until `shutdown` resolves, then drains: `/readyz` turns 503 and
/// requests that would start a call are refused (503, `Retry-After`) while
/// the listener stays open, until no call runs or `grace` is over; then it
/// stops accepting, lets the answers in flight be written, and stops the
/// calls still running.
pub async fn serve(
    server: Arc<Server>,
    listener: TcpListener,
    config: HttpConfig,
    shutdown: impl std::future::Future<Output = ()>,
    grace: Duration,
) -> std::io::Result<()> {
    let tokens = server.runtime.policy().tokens().to_vec();
    let oauth = server
        .runtime
        .policy()
        .oauth()
        .cloned()
        .map(oauth::OAuthGate::new);
    let connections = Arc::new(Semaphore::new(config.max_connections));
    let shared = Arc::new(Shared {
        server: server.clone(),
        tokens,
        oauth,
        sessions: Mutex::new(HashMap::new()),
        calls: Calls::limited(config.max_calls),
        connections: Slots::new(config.max_connections),
        streams: Slots::new(config.max_streams),
        next_session: AtomicU64::new(1),
        config,
    });
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    if shared.oauth.is_some() {
        // The issuers' keys, fetched beside serving: a slow issuer delays
        // only its own tokens.
        let shared = shared.clone();
        tokio::spawn(async move {
            if let Some(gate) = &shared.oauth {
                gate.prefetch().await;
            }
        });
    }
    let tls = shared.config.tls.clone();
    // Renewed certificate files are picked up until the listener closes.
    let watching = tls.as_ref().map(ServerTls::watch);
    let accept = |stream: tokio::net::TcpStream, peer: SocketAddr| {
        let Ok(permit) = connections.clone().try_acquire_owned() else {
            tracing::warn!("connection limit reached; closing a connection from {peer}");
            return;
        };
        let _ = stream.set_nodelay(true);
        let header_timeout = shared.config.header_timeout;
        let shared = shared.clone();
        // The token this connection counts against, from its first
        // authenticated request on.
        let bound: Bound = Arc::default();
        let service = hyper::service::service_fn(move |req| {
            let (shared, bound) = (shared.clone(), bound.clone());
            async move { Ok::<_, Infallible>(route(&shared, req, peer, &bound).await) }
        });
        let builder = {
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(header_timeout)
                .max_buf_size(64 * 1024);
            builder
        };
        let Some(tls) = &tls else {
            let watched = graceful.watch(builder.serve_connection(TokioIo::new(stream), service));
            tokio::spawn(async move {
                if let Err(err) = watched.await {
                    tracing::debug!("connection from {peer}: {err}");
                }
                drop(permit);
            });
            return;
        };
        // The handshake runs on the connection's own task, within the time
        // a client has for its headers: a client that never finishes it
        // holds only its connection's place, and not for long. A plain-HTTP
        // request is answered with the https:// address instead.
        let (acceptor, watcher) = (tls.acceptor().clone(), graceful.watcher());
        tokio::spawn(async move {
            let mut stream = stream;
            let handshake = async {
                match tls::answer_plain_http(&mut stream).await {
                    true => Ok(None),
                    false => acceptor.accept(stream).await.map(Some),
                }
            };
            match tokio::time::timeout(header_timeout, handshake).await {
                Ok(Ok(Some(stream))) => {
                    let conn = builder.serve_connection(TokioIo::new(stream), service);
                    if let Err(err) = watcher.watch(conn).await {
                        tracing::debug!("connection from {peer}: {err}");
                    }
                }
                Ok(Ok(None)) => {
                    tracing::debug!("plain HTTP from {peer} on the HTTPS port: answered 400");
                }
                Ok(Err(err)) => tracing::debug!("TLS handshake with {peer}: {err}"),
                Err(_) => tracing::debug!("TLS handshake with {peer}: timed out"),
            }
            drop(permit);
        });
    };
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => accept(stream, peer),
                // Out of file descriptors and the like: wait, do not spin.
                Err(err) => {
                    tracing::warn!("accept: {err}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            () = &mut shutdown => break,
        }
    }
    shared.calls.start_draining();
    let deadline = tokio::time::Instant::now() + grace;
    tracing::info!(
        "draining: refusing new calls; {} running call(s) get up to {grace:?}",
        server.running()
    );
    // Still listening: a load balancer that has not yet seen `/readyz`
    // turn 503 gets a retryable 503, not a refused connection.
    let mut tick = tokio::time::interval(Duration::from_millis(20));
    while server.running() > 0 && tokio::time::Instant::now() < deadline {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => accept(stream, peer),
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            },
            _ = tick.tick() => {}
        }
    }
    drop(listener);
    if let Some(watching) = watching {
        watching.abort();
    }
    // Standing streams never end on their own: close them so the graceful
    // shutdown waits only for real requests.
    for entry in lock(&shared.sessions).values() {
        entry.session.set_standing(None);
    }
    server.listeners.end_all();
    // The requests in flight: on their connections, and the answers that
    // stream from a task of their own (which ends with its connection).
    let drained = graceful.shutdown();
    let finished = async {
        drained.await;
        shared.calls.idle().await;
    };
    let rest = deadline.saturating_duration_since(tokio::time::Instant::now());
    let stop = || {
        tracing::warn!(
            "grace period over; cancelling {} running call(s)",
            server.running()
        );
        server.shut_down_calls();
    };
    // A cancelled guest stops within a few epoch ticks; its request is
    // then answered ("shutting down") and its connection closes.
    if !calls::finish_within(finished, rest, stop, Some(Duration::from_secs(2))).await {
        tracing::warn!("{} call(s) did not stop in time", server.running());
    }
    Ok(())
}

async fn route(
    shared: &Arc<Shared>,
    req: Request<IncomingBody>,
    peer: SocketAddr,
    bound: &Bound,
) -> Response<BoxBody> {
    // A `traceparent` header is the parent of what the request runs (an
    // MCP request's `_meta` names its own: see `protocol::mcp::traced`).
    let response = match crate::telemetry::from_headers(req.headers()) {
        Some(cx) => {
            use crate::telemetry::FutureExt as _;
            answer(shared, req, peer, bound).with_context(cx).await
        }
        None => answer(shared, req, peer, bound).await,
    };
    crate::metrics::http_answered(response.status().as_u16());
    response
}

async fn answer(
    shared: &Arc<Shared>,
    req: Request<IncomingBody>,
    peer: SocketAddr,
    bound: &Bound,
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
    match (path.as_str(), req.method()) {
        ("/healthz", &Method::GET) => return plain(StatusCode::OK, "alive\n"),
        ("/readyz", &Method::GET) => {
            let (status, text) = ops::readiness(&shared.server, shared.calls.is_draining());
            return plain(status, &text);
        }
        ("/healthz" | "/readyz", _) => return not_allowed("GET"),
        _ => {}
    }
    if let Some(gate) = &shared.oauth
        && gate.serves_metadata_at(&path)
    {
        return match req.method() {
            &Method::GET => json(StatusCode::OK, &gate.metadata()),
            _ => not_allowed("GET"),
        };
    }
    let known = matches!(
        path.as_str(),
        "/mcp" | "/rpc" | "/rpc/describe" | "/rpc/openrpc.json" | "/metrics"
    );
    if !known {
        return plain(
            StatusCode::NOT_FOUND,
            "not found; MCP is at /mcp, JSON-RPC at /rpc (/healthz, /readyz for load balancers)\n",
        );
    }
    let token = match auth::authorize(&shared.tokens, shared.oauth.as_ref(), req.headers()).await {
        Ok(token) => token,
        Err(response) => return response,
    };
    if let Some(token) = &token
        && let Err(response) = bind_connection(shared, bound, &token.name, peer)
    {
        return response;
    }
    match (path.as_str(), req.method()) {
        ("/mcp", &Method::POST) => mcp::post(shared, req, token, peer).await,
        ("/mcp", &Method::DELETE) => mcp::delete(shared, req.headers(), token.as_ref()),
        ("/mcp", &Method::GET) => mcp::get(shared, req.headers(), token.as_ref()),
        ("/mcp", _) => not_allowed("GET, POST, DELETE"),
        ("/rpc", &Method::POST) => rpc_post(shared, req, token, peer).await,
        ("/rpc", &Method::GET) => {
            rpc_get::call(shared, req.uri().query().unwrap_or(""), token, peer).await
        }
        ("/rpc", _) => not_allowed("GET, POST"),
        ("/rpc/openrpc.json", &Method::GET) => rpc_get::document(shared, token.as_ref()),
        ("/metrics", &Method::GET) if token.as_ref().is_some_and(|t| !t.allows_metrics()) => plain(
            StatusCode::FORBIDDEN,
            "forbidden: /metrics names every tool; this token is limited to some tools \
             (allow it with `metrics = true` in its [[tokens]] entry)\n",
        ),
        ("/metrics", &Method::GET) => typed(
            StatusCode::OK,
            ops::metrics_text(
                &shared.server,
                ops::HttpHeld {
                    calls: shared.calls.held(),
                    connections: shared.connections.held(),
                    streams: shared.streams.held(),
                },
            ),
            ops::METRICS_TYPE,
        ),
        ("/rpc/describe", &Method::GET) => plain(
            StatusCode::OK,
            &rpc::describe(&shared.server, token.as_ref()),
        ),
        _ => not_allowed("GET"),
    }
}

// --- /rpc ----------------------------------------------------------------

async fn rpc_post(
    shared: &Arc<Shared>,
    req: Request<IncomingBody>,
    token: Option<Token>,
    peer: SocketAddr,
) -> Response<BoxBody> {
    if let Err(response) = check_json_content_type(req.headers()) {
        return response;
    }
    let body = match read_body(req, shared.config.max_body, shared.config.body_timeout).await {
        Ok(body) => body,
        Err(response) => return response,
    };
    let _place = match shared.calls.admit_call() {
        Ok(place) => place,
        Err(why) => return refused(why),
    };
    match rpc::handle(&shared.server, token.as_ref(), peer, jsonrpc::parse(&body)).await {
        Some(response) => json(StatusCode::OK, &response),
        None => empty(StatusCode::NO_CONTENT),
    }
}
