//! `GET /healthz` and `GET /readyz`, for load balancers and orchestrators:
//! alive is "the process answers"; ready is "every component has loaded and
//! the server is not draining", so a replica still compiling a big
//! component, or shutting down, gets no new traffic. Neither needs a token
//! (they say nothing about the tools) and neither runs a tool.

use hyper::StatusCode;

use crate::Runtime;

/// Whether the server should be sent requests, and why not.
pub fn readiness(runtime: &Runtime, draining: bool) -> (StatusCode, String) {
    if draining {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "draining: shutting down, running calls finishing\n".into(),
        );
    }
    match runtime.still_loading() {
        0 => (
            StatusCode::OK,
            format!("ready: {} tool(s)\n", runtime.catalog().tools().count()),
        ),
        n => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("loading: {n} component(s) still compiling\n"),
        ),
    }
}
