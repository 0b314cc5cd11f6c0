//! W3C trace context in and out: taken from a request's `params._meta`
//! (`traceparent`, `tracestate`, unprefixed as the MCP conventions say)
//! and from HTTP headers; written by the host into a tool's outbound HTTP
//! request, after the guest handed it over — so the guest can neither read
//! nor forge nor remove it (a `traceparent` the guest set is replaced).
//! The server's own carriers — a round's signed `requestState`, a task's
//! record, which any replica may read — keep a `traceparent` as text
//! ([`traceparent`], [`from_traceparent`]).

use opentelemetry::Context;
use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry::trace::TraceContextExt;
use opentelemetry_http::{HeaderExtractor, HeaderInjector};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use serde_json::Value;

/// The remote parent named by a request's `_meta`, when exporting and
/// when it names one.
pub fn from_meta(params: Option<&Value>) -> Option<Context> {
    if !super::on() {
        return None;
    }
    let meta = params?.get("_meta")?.as_object()?;
    let cx = TraceContextPropagator::new().extract(&Meta(meta));
    cx.span().span_context().is_valid().then_some(cx)
}

/// The remote parent named by HTTP `headers`, when exporting and when they
/// name one.
pub fn from_headers(headers: &http::HeaderMap) -> Option<Context> {
    if !super::on() {
        return None;
    }
    let cx = TraceContextPropagator::new().extract(&HeaderExtractor(headers));
    cx.span().span_context().is_valid().then_some(cx)
}

/// Writes `cx`'s span as the parent into `headers` (replacing any
/// `traceparent`/`tracestate` already there).
pub fn inject_into(cx: &Context, headers: &mut http::HeaderMap) {
    headers.remove("traceparent");
    headers.remove("tracestate");
    TraceContextPropagator::new().inject_context(cx, &mut HeaderInjector(headers));
}

/// The current span as a `traceparent` value, when exporting and inside
/// a traced request: what a later request of the same work (a round's
/// retry, a task's later requests, on any replica) continues.
pub fn traceparent() -> Option<String> {
    if !super::on() {
        return None;
    }
    let cx = Context::current();
    if !cx.span().span_context().is_valid() {
        return None;
    }
    let mut carrier = std::collections::HashMap::new();
    TraceContextPropagator::new().inject_context(&cx, &mut carrier);
    carrier.remove("traceparent")
}

/// The remote span a `traceparent` value kept by [`traceparent`] names,
/// when exporting and when it is one.
pub fn from_traceparent(value: &str) -> Option<Context> {
    if !super::on() {
        return None;
    }
    let carrier = std::collections::HashMap::from([("traceparent".to_string(), value.to_string())]);
    let cx = TraceContextPropagator::new().extract(&carrier);
    cx.span().span_context().is_valid().then_some(cx)
}

/// `_meta` as a carrier: string values only.
struct Meta<'a>(&'a serde_json::Map<String, Value>);

impl Extractor for Meta<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(Value::as_str)
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}
