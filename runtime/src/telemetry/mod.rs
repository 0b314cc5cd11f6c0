//! OpenTelemetry traces and metrics, exported over OTLP/HTTP (protobuf) when
//! configured and off otherwise: what happened, for whom and where it went.
//!
//! Spans follow the MCP semantic conventions (`docs/gen-ai/mcp.md` of
//! open-telemetry/semantic-conventions-genai, status Development; the
//! version followed is named in docs/serving.md): one SERVER span per MCP
//! request or `/rpc` call ([`Request`]), with children for the phases of an
//! entry into a guest ([`Phase`]: arguments, provisioning, the guest's run,
//! each question to the client, each outbound HTTP request, registry
//! fetches and signature checks, OAuth key-set fetches: [`within`]); refusals and limit
//! hits are span events ([`refused`]). Attributes never carry an argument
//! value, an answer or a secret: names, kinds, hosts and statuses only.
//!
//! Free when off: every entry point first asks [`on`] (one atomic load)
//! and does nothing else when no exporter was started.
//!
//! config (what the environment and `serve` ask for) → client (the
//! exporter's HTTP) → export (the providers) → propagation (W3C trace
//! context in and out) → spans, measures.

mod client;
mod config;
mod export;
mod measures;
mod propagation;
mod spans;

use std::sync::OnceLock;

pub use config::{ConfigError, Settings};
pub use export::{Exporting, start};
pub use measures::session_ended;
pub use opentelemetry::context::FutureExt;
pub use opentelemetry::trace::SpanKind;
pub use opentelemetry::{Context, KeyValue};
pub use propagation::{from_headers, from_meta, from_traceparent, inject_into, traceparent};
pub use spans::{
    Outbound, Phase, Request, RequestInfo, current, enter, in_context, phase, refused, trace_id,
    within, within_noting,
};

/// The running exporters' instruments; set once by [`start`].
static STATE: OnceLock<export::State> = OnceLock::new();

/// True once traces and metrics are exported; every hook asks this first.
#[inline]
pub fn on() -> bool {
    STATE.get().is_some()
}

fn state() -> Option<&'static export::State> {
    STATE.get()
}
