//! The MCP conventions' metrics, beside the Prometheus ones of
//! [`crate::metrics`] (which stay): `mcp.server.operation.duration` for
//! every request a server answers and `mcp.server.session.duration` for
//! every session that ends, in seconds, with the conventions' buckets.

use opentelemetry::metrics::{Histogram, Meter};

/// The conventions' advised boundaries (seconds).
const BOUNDARIES: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

pub(super) fn operation(meter: &Meter) -> Histogram<f64> {
    meter
        .f64_histogram("mcp.server.operation.duration")
        .with_unit("s")
        .with_description(
            "The duration of the MCP request or notification as observed on the receiver",
        )
        .with_boundaries(BOUNDARIES.to_vec())
        .build()
}

pub(super) fn session(meter: &Meter) -> Histogram<f64> {
    meter
        .f64_histogram("mcp.server.session.duration")
        .with_unit("s")
        .with_description("The duration of the MCP session as observed on the MCP server")
        .with_boundaries(BOUNDARIES.to_vec())
        .build()
}

/// Records a session's duration, when exporting.
pub fn session_ended(took: std::time::Duration, protocol: Option<&str>, transport: &'static str) {
    let Some(state) = super::state() else {
        return;
    };
    let mut attributes = vec![opentelemetry::KeyValue::new("network.transport", transport)];
    if let Some(version) = protocol {
        attributes.push(opentelemetry::KeyValue::new(
            "mcp.protocol.version",
            version.to_string(),
        ));
    }
    state.session.record(took.as_secs_f64(), &attributes);
}
