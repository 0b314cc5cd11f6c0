//! The endpoints for operators' machinery, apart from MCP and `/rpc`:
//! `GET /healthz` and `GET /readyz` for load balancers and orchestrators,
//! `GET /metrics` for Prometheus.
//!
//! Alive is "the process answers"; ready is "every component has loaded,
//! the shared state (`--state`) answered within a lease and the server is
//! not draining", so a replica still compiling a big component, cut off
//! from Redis, or shutting down, gets no new traffic. Neither needs a token
//! (they say nothing about the tools, nor which components are loading —
//! only how many fetch or compile) and neither runs a tool. The metrics
//! name the tools, so they are behind the tokens when the policy has any.

use hyper::StatusCode;

use crate::metrics::{self, Snapshot};
use crate::protocol::mcp::Server;
use crate::sandbox::Tier;

/// Whether the server should be sent requests, and why not.
pub fn readiness(server: &Server, draining: bool) -> (StatusCode, String) {
    let runtime = &server.runtime;
    if draining {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "draining: shutting down, running calls finishing\n".into(),
        );
    }
    if !server.state_ready() {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "state store unreachable: shared tasks cannot be served\n".into(),
        );
    }
    // How many are in each phase, never which: the sources (registries,
    // paths) are the operator's, and this answer needs no token. The log
    // names them (see `crate::runtime::loading`).
    let pending = runtime.loading_now();
    if pending.is_empty() {
        return (
            StatusCode::OK,
            format!("ready: {}\n", runtime.catalog().counted()),
        );
    }
    (
        StatusCode::SERVICE_UNAVAILABLE,
        format!(
            "loading: {} component(s) still {}\n",
            pending.len(),
            crate::runtime::pending::summary(&pending)
        ),
    )
}

/// What the HTTP front door holds now, for the metrics.
pub struct HttpHeld {
    /// Requests holding one of the calls in flight (`--max-calls`).
    pub calls: usize,
    /// Connections counted against a token.
    pub connections: usize,
    /// Long-lived streams open.
    pub streams: usize,
}

/// The metrics text (OpenMetrics), with the gauges read from `server` and
/// the front door now.
pub fn metrics_text(server: &Server, held: HttpHeld) -> String {
    let runtime = &server.runtime;
    let catalog = runtime.catalog();
    metrics::render(&Snapshot {
        running: runtime.running().count(),
        pool: runtime.sandbox().instances(),
        components: catalog.components().len(),
        tools: catalog.tools().count(),
        loading: runtime.still_loading(),
        quick: catalog
            .components()
            .iter()
            .filter(|c| c.tier(runtime.sandbox()) == Tier::Quick)
            .count(),
        tasks: server.tasks.count_by_status(),
        http_calls: held.calls,
        http_connections: held.connections,
        http_streams: held.streams,
    })
}

/// The content type of [`metrics_text`].
pub const METRICS_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
