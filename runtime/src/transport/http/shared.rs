//! What every request through the HTTP server shares: its limits and
//! allow-lists ([`HttpConfig`]), the policy's tokens, the MCP sessions, its
//! calls (places in flight, draining: [`crate::transport::calls`]), and
//! each token's share of connections and streams (taken here, counted by
//! [`super::limits`]).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hyper::{Response, StatusCode};

use super::body::{BoxBody, retry_later};
use super::limits::{Full, Slot, Slots};
use crate::policy::Token;
use crate::protocol::mcp::{Server, Session};
use crate::sync::lock;
use crate::transport::calls::Calls;

/// Limits and allow-lists of the HTTP server.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// Host names (no port) accepted in `Host` and `Origin`.
    pub allowed_hosts: Vec<String>,
    /// Largest request body, in bytes.
    pub max_body: usize,
    /// Requests running tool calls at once, over all clients.
    pub max_calls: usize,
    /// Open connections at once; more are closed on accept. A token holds
    /// at most a quarter of them.
    pub max_connections: usize,
    /// Long-lived streams open at once (GET `/mcp`, `subscriptions/listen`,
    /// `tasks/result` waits); a token holds at most a quarter of them.
    pub max_streams: usize,
    /// Open MCP sessions at once.
    pub max_sessions: usize,
    /// A session unused this long is forgotten (404 afterwards).
    pub session_idle: Duration,
    /// Time a client has to send its request headers.
    pub header_timeout: Duration,
    /// Time a request body has before it must keep up the minimum rate
    /// ([`super::limits::BODY_MIN_RATE`]).
    pub body_timeout: Duration,
    /// HTTPS on the listener (`--tls-cert`, `--tls-key`); plain HTTP when
    /// `None`.
    pub tls: Option<super::ServerTls>,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            allowed_hosts: loopback_names(),
            max_body: 4 * 1024 * 1024,
            max_calls: 64,
            max_connections: 1024,
            max_streams: 256,
            max_sessions: 4096,
            session_idle: Duration::from_secs(3600),
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(10),
            tls: None,
        }
    }
}

/// The host names that mean this machine.
pub fn loopback_names() -> Vec<String> {
    ["localhost", "127.0.0.1", "::1"].map(String::from).to_vec()
}

pub(super) struct Entry {
    pub(super) session: Arc<Session>,
    pub(super) last_used: Mutex<Instant>,
}

pub(super) struct Shared {
    pub(super) server: Arc<Server>,
    pub(super) config: HttpConfig,
    pub(super) tokens: Vec<Token>,
    /// Access tokens of the policy's `[oauth]` issuers, when it has one.
    pub(super) oauth: Option<super::oauth::OAuthGate>,
    pub(super) sessions: Mutex<HashMap<String, Arc<Entry>>>,
    /// Places of calls in flight (`max_calls`), draining, and the answers
    /// that stream from a task of their own.
    pub(super) calls: Calls,
    /// Connections counted per token, from their first authenticated request.
    pub(super) connections: Arc<Slots>,
    /// Open long-lived streams.
    pub(super) streams: Arc<Slots>,
    /// Numbers the MCP sessions opened here (the audit log's callers).
    pub(super) next_session: AtomicU64,
}

/// A connection's place among its token's connections, once it has one.
pub(super) type Bound = Arc<Mutex<Option<Slot>>>;

/// Counts the connection against `token` on its first request with it; a
/// token over its share is answered 429 and the connection closed.
#[allow(clippy::result_large_err)]
pub(super) fn bind_connection(
    shared: &Shared,
    bound: &Bound,
    token: &str,
    peer: SocketAddr,
) -> Result<(), Response<BoxBody>> {
    let mut bound = lock(bound);
    if bound.is_some() {
        return Ok(());
    }
    match shared.connections.take(Some(token)) {
        Ok(slot) => {
            *bound = Some(slot);
            Ok(())
        }
        Err(full) => {
            let limit = match full {
                Full::Token(n) | Full::Total(n) => n,
            };
            tracing::warn!(
                "token {token:?} holds {limit} connection(s), its share; closing one from {peer}"
            );
            let mut response = retry_later(&format!(
                "too many connections: this token holds {limit}, its share of the server's; \
                 reuse a connection or close idle ones\n"
            ));
            *response.status_mut() = StatusCode::TOO_MANY_REQUESTS;
            response.headers_mut().insert(
                hyper::header::CONNECTION,
                hyper::header::HeaderValue::from_static("close"),
            );
            Err(response)
        }
    }
}

/// A place among the open streams for a request of `token`, or the 503
/// that says none is free.
#[allow(clippy::result_large_err)]
pub(super) fn stream_slot(shared: &Shared, token: Option<&str>) -> Result<Slot, Response<BoxBody>> {
    shared.streams.take(token).map_err(|full| {
        let text = match full {
            Full::Token(n) => format!(
                "busy: this token has {n} streams open, its share; close one (an old GET /mcp \
                 or subscriptions/listen) and retry\n"
            ),
            Full::Total(n) => {
                format!("busy: {n} streams open, the server's limit; retry shortly\n")
            }
        };
        retry_later(&text)
    })
}
