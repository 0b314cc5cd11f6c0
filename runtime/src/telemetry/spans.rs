//! The spans: one SERVER span per request ([`Request`], named and
//! attributed as the MCP conventions say), INTERNAL children for the phases
//! of an entry into a guest ([`phase`]), CLIENT children for what the host
//! sends on a guest's behalf ([`Outbound`]: its HTTP requests; asks to the
//! client are a [`phase`] of kind CLIENT), and refusals as events
//! ([`refused`]). Attribute values are names, kinds, hosts, ports and
//! statuses — never an argument, an answer, a header or a secret.

use std::borrow::Cow;
use std::time::Instant;

use opentelemetry::trace::{SpanKind, Status, TraceContextExt, Tracer as _};
use opentelemetry::{Context, ContextGuard, KeyValue};

/// A client's name for a tool, prompt or URI is cut to this many bytes
/// in a span's name and attributes.
const MAX_NAME: usize = 256;

/// What a request is, as its span and the operation metric name it.
#[derive(Debug, Default)]
pub struct RequestInfo<'a> {
    /// The MCP method (`tools/call`), or for `/rpc` the tool called.
    pub method: &'a str,
    /// `/rpc` (JSON-RPC of tools) rather than MCP.
    pub plain_rpc: bool,
    pub tool: Option<&'a str>,
    pub prompt: Option<&'a str>,
    pub uri: Option<&'a str>,
    /// The JSON-RPC id, as text (none for a notification or `null`).
    pub id: Option<String>,
    pub session: Option<&'a str>,
    pub protocol: Option<&'a str>,
    /// `tcp` (HTTP) or `pipe` (stdio).
    pub transport: &'static str,
    /// The remote parent from `params._meta`; else the ambient context
    /// (the HTTP request's `traceparent`, set by the transport) is.
    pub parent: Option<Context>,
    /// The span of the work this request continues, kept by the server
    /// (a round's `requestState`, a task's record): the parent when the
    /// client names none, so the work stays one trace on any replica;
    /// else a link.
    pub earlier: Option<Context>,
}

/// One request's SERVER span, while it is answered.
pub struct Request {
    cx: Context,
    started: Instant,
    metric: Vec<KeyValue>,
}

fn cut(text: &str) -> Cow<'_, str> {
    if text.len() <= MAX_NAME {
        return Cow::Borrowed(text);
    }
    let mut end = MAX_NAME;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(format!("{}…", &text[..end]))
}

impl Request {
    /// Starts the span of `info`'s request, when exporting.
    pub fn start(info: RequestInfo<'_>) -> Option<Request> {
        let state = super::state()?;
        let ambient = Context::current();
        let named = info.parent.is_some() || ambient.span().span_context().is_valid();
        let parent = match (info.parent, &info.earlier) {
            (Some(parent), _) => parent,
            (None, Some(earlier)) if !named => earlier.clone(),
            (None, _) => ambient.clone(),
        };
        let target = info.tool.or(info.prompt).map(cut);
        let name = match (&target, info.plain_rpc) {
            (_, true) => format!("rpc {}", cut(info.method)),
            (Some(target), false) => format!("{} {target}", info.method),
            (None, false) => info.method.to_string(),
        };
        let mut attributes = Vec::with_capacity(10);
        let mut metric = Vec::with_capacity(5);
        if info.plain_rpc {
            attributes.push(KeyValue::new("rpc.system.name", "jsonrpc"));
            attributes.push(KeyValue::new("rpc.method", cut(info.method).into_owned()));
        } else {
            let method = KeyValue::new("mcp.method.name", info.method.to_string());
            attributes.push(method.clone());
            metric.push(method);
        }
        if let Some(tool) = info.tool {
            let tool = KeyValue::new("gen_ai.tool.name", cut(tool).into_owned());
            attributes.push(tool.clone());
            attributes.push(KeyValue::new("gen_ai.operation.name", "execute_tool"));
            metric.push(tool);
        }
        if let Some(prompt) = info.prompt {
            let prompt = KeyValue::new("gen_ai.prompt.name", cut(prompt).into_owned());
            attributes.push(prompt.clone());
            metric.push(prompt);
        }
        if let Some(uri) = info.uri {
            attributes.push(KeyValue::new("mcp.resource.uri", cut(uri).into_owned()));
        }
        if let Some(id) = info.id {
            attributes.push(KeyValue::new("jsonrpc.request.id", id));
        }
        if let Some(session) = info.session {
            attributes.push(KeyValue::new("mcp.session.id", session.to_string()));
        }
        if let Some(protocol) = info.protocol {
            let version = KeyValue::new("mcp.protocol.version", protocol.to_string());
            attributes.push(version.clone());
            metric.push(version);
        }
        let transport = KeyValue::new("network.transport", info.transport);
        attributes.push(transport.clone());
        metric.push(transport);
        let mut builder = state
            .tracer
            .span_builder(name)
            .with_kind(SpanKind::Server)
            .with_attributes(attributes);
        // The HTTP request's context, when `_meta` named another parent;
        // the earlier span, when the client named another one.
        let mut links = Vec::new();
        let ambient = ambient.span().span_context().clone();
        let parent_span = parent.span().span_context().clone();
        if ambient.is_valid() && ambient.trace_id() != parent_span.trace_id() {
            links.push(opentelemetry::trace::Link::with_context(ambient));
        }
        if let Some(earlier) = &info.earlier {
            let earlier = earlier.span().span_context().clone();
            if earlier.span_id() != parent_span.span_id() {
                links.push(opentelemetry::trace::Link::with_context(earlier));
            }
        }
        if !links.is_empty() {
            builder = builder.with_links(links);
        }
        let span = builder.start_with_context(&state.tracer, &parent);
        Some(Request {
            cx: parent.with_span(span),
            started: Instant::now(),
            metric,
        })
    }

    /// Its context: the parent of everything done for it.
    pub fn context(&self) -> Context {
        self.cx.clone()
    }

    /// Ends it: `error` is the JSON-RPC error's code and message, or a
    /// failed tool's kind (`tool_error`) with no message.
    pub fn end(mut self, error: Option<(String, Option<String>)>) {
        let span = self.cx.span();
        if let Some((kind, message)) = error {
            span.set_attribute(KeyValue::new("error.type", kind.clone()));
            if kind.starts_with('-') {
                span.set_attribute(KeyValue::new("rpc.response.status_code", kind.clone()));
            }
            span.set_status(Status::error(message.unwrap_or_default()));
            self.metric.push(KeyValue::new("error.type", kind));
        }
        span.end();
        if let Some(state) = super::state() {
            let took = self.started.elapsed().as_secs_f64();
            state.operation.record(took, &self.metric);
        }
    }
}

/// A new span `name` of `kind` under the current context, as a context to
/// enter or carry; `None` when not exporting (`attributes` is asked only
/// then).
fn child(
    name: impl Into<Cow<'static, str>>,
    kind: SpanKind,
    attributes: impl FnOnce() -> Vec<KeyValue>,
) -> Option<Context> {
    let state = super::state()?;
    let parent = Context::current();
    let span = state
        .tracer
        .span_builder(name)
        .with_kind(kind)
        .with_attributes(attributes())
        .start_with_context(&state.tracer, &parent);
    Some(parent.with_span(span))
}

/// A phase of the current request (INTERNAL; CLIENT for an ask), current
/// on this thread until it is dropped, which ends it.
pub struct Phase {
    cx: Option<Context>,
    _current: Option<ContextGuard>,
}

/// Starts phase `name` under the current context, when exporting;
/// `attributes` is asked only then.
pub fn phase(
    name: &'static str,
    kind: SpanKind,
    attributes: impl FnOnce() -> Vec<KeyValue>,
) -> Phase {
    let Some(cx) = child(name, kind, attributes) else {
        return Phase {
            cx: None,
            _current: None,
        };
    };
    Phase {
        _current: Some(cx.clone().attach()),
        cx: Some(cx),
    }
}

impl Phase {
    /// Marks it failed with `kind` (a low-cardinality class).
    pub fn failed(&self, kind: &str) {
        if let Some(cx) = &self.cx {
            cx.span()
                .set_attribute(KeyValue::new("error.type", kind.to_string()));
            cx.span().set_status(Status::error(""));
        }
    }

    /// Adds `attribute` to it.
    pub fn set(&self, attribute: impl FnOnce() -> KeyValue) {
        if let Some(cx) = &self.cx {
            cx.span().set_attribute(attribute());
        }
    }
}

impl Drop for Phase {
    fn drop(&mut self) {
        if let Some(cx) = &self.cx {
            cx.span().end();
        }
    }
}

/// Runs `work` inside span `name` of `kind` (a child of the current
/// context: a request's, or a root for what the server does on its own,
/// such as loading a component), when exporting; an error ends it marked
/// failed. The async counterpart of [`phase`], for the host's own fetches
/// (registry, OAuth keys) and checks (signatures). Free when off.
pub async fn within<T, E>(
    name: impl Into<Cow<'static, str>>,
    kind: SpanKind,
    attributes: impl FnOnce() -> Vec<KeyValue>,
    work: impl std::future::Future<Output = Result<T, E>>,
) -> Result<T, E> {
    within_noting(name, kind, attributes, work, |_| Vec::new()).await
}

/// [`within`], adding what `noted` says of the outcome (such as an HTTP
/// response's status) to the span before it ends.
pub async fn within_noting<T, E>(
    name: impl Into<Cow<'static, str>>,
    kind: SpanKind,
    attributes: impl FnOnce() -> Vec<KeyValue>,
    work: impl std::future::Future<Output = Result<T, E>>,
    noted: impl FnOnce(&Result<T, E>) -> Vec<KeyValue>,
) -> Result<T, E> {
    use opentelemetry::context::FutureExt as _;
    let Some(cx) = child(name, kind, attributes) else {
        return work.await;
    };
    let out = work.with_context(cx.clone()).await;
    for attribute in noted(&out) {
        cx.span().set_attribute(attribute);
    }
    if out.is_err() {
        cx.span()
            .set_attribute(KeyValue::new("error.type", "failed"));
        cx.span().set_status(Status::error(""));
    }
    cx.span().end();
    out
}

/// Runs `work` in `cx` when there is one: a context carried to wherever
/// the work is polled (a task of its own does not inherit the context its
/// maker entered); as it is otherwise.
pub async fn in_context<F: std::future::Future>(cx: Option<Context>, work: F) -> F::Output {
    use opentelemetry::context::FutureExt as _;
    match cx {
        Some(cx) => work.with_context(cx).await,
        None => work.await,
    }
}

/// Enters `cx` on this thread (a request's context, carried to the lane
/// that runs its guest) until the guard drops.
pub fn enter(cx: Option<&Context>) -> Option<ContextGuard> {
    cx.map(|cx| cx.clone().attach())
}

/// This thread's current context, when exporting (what an entry keeps to
/// carry its request's trace to the thread its guest runs on).
pub fn current() -> Option<Context> {
    super::on().then(Context::current)
}

/// Records a refusal or a limit hit of `kind` (`refused`, `busy`,
/// `network`, `time`…) on the current span, as an event.
pub fn refused(kind: &str, what: &'static str) {
    if !super::on() {
        return;
    }
    Context::map_current(|cx| {
        cx.span().add_event(
            "airlock.refusal",
            vec![
                KeyValue::new("airlock.refusal.kind", kind.to_string()),
                KeyValue::new("airlock.refusal.what", what),
            ],
        );
    });
}

/// The current trace's id (32 hex digits), for the log line and the audit
/// entry, when exporting and inside a traced request.
pub fn trace_id() -> Option<String> {
    if !super::on() {
        return None;
    }
    Context::map_current(|cx| {
        let span = cx.span();
        let context = span.span_context();
        context.is_valid().then(|| context.trace_id().to_string())
    })
}

/// One outbound HTTP request of a guest, sent by the host: a CLIENT span
/// whose context the host writes into the request's headers.
pub struct Outbound {
    cx: Context,
    ended: bool,
}

impl Outbound {
    /// Starts the span of `method` to `host:port`, under the current
    /// context, when exporting.
    pub fn start(method: &str, scheme: &str, host: &str, port: u16) -> Option<Outbound> {
        let state = super::state()?;
        let parent = Context::current();
        let span = state
            .tracer
            .span_builder(method.to_string())
            .with_kind(SpanKind::Client)
            .with_attributes(vec![
                KeyValue::new("http.request.method", method.to_string()),
                KeyValue::new("url.scheme", scheme.to_string()),
                KeyValue::new("server.address", cut(host).into_owned()),
                KeyValue::new("server.port", i64::from(port)),
            ])
            .start_with_context(&state.tracer, &parent);
        Some(Outbound {
            cx: parent.with_span(span),
            ended: false,
        })
    }

    /// The request's context, to write into its headers.
    pub fn context(&self) -> &Context {
        &self.cx
    }

    /// Names the credentials the host added (their descriptions, never a
    /// value).
    pub fn credentials(&self, described: Vec<String>) {
        if !described.is_empty() {
            let names = described.into_iter().map(Into::into).collect::<Vec<_>>();
            self.cx.span().set_attribute(KeyValue::new(
                "airlock.credentials",
                opentelemetry::Value::Array(opentelemetry::Array::String(names)),
            ));
        }
    }

    /// Ends it with the response's status, or refused/failed with `kind`.
    pub fn end(mut self, outcome: Result<u16, &str>) {
        self.ended = true;
        let span = self.cx.span();
        match outcome {
            Ok(status) => {
                span.set_attribute(KeyValue::new(
                    "http.response.status_code",
                    i64::from(status),
                ));
                if status >= 400 {
                    span.set_attribute(KeyValue::new("error.type", status.to_string()));
                    span.set_status(Status::error(""));
                }
            }
            Err(kind) => {
                span.set_attribute(KeyValue::new("error.type", kind.to_string()));
                span.set_status(Status::error(""));
            }
        }
        span.end();
    }

    /// Records a refusal of the host's rules on it (`network`: the policy's
    /// hosts and addresses; `open`: the call's descriptor budget).
    pub fn refused(&self, kind: &str) {
        self.cx.span().add_event(
            "airlock.refusal",
            vec![
                KeyValue::new("airlock.refusal.kind", kind.to_string()),
                KeyValue::new("airlock.refusal.what", "network"),
            ],
        );
    }
}

impl Drop for Outbound {
    /// One never sent (refused, or its call stopped first) ends here.
    fn drop(&mut self) {
        if !self.ended {
            let span = self.cx.span();
            span.set_attribute(KeyValue::new("error.type", "not_sent"));
            span.set_status(Status::error(""));
            span.end();
        }
    }
}
