//! The span of one MCP request ([`crate::telemetry`]), when exporting: named
//! and attributed from its method and params as the MCP conventions say
//! (the tool or prompt named, the resource URI read — never an argument),
//! its parent the `traceparent` of its `params._meta`, else the HTTP
//! request's, else the span of the work it continues — a 2026-07-28
//! round's retry continues the round that signed its `requestState`, a
//! task's later request (`tasks/get`, `tasks/result`…) the call that made
//! the task, on whichever replica it lands; ended with its JSON-RPC error
//! code, or `tool_error` for a tool call answered `isError`. The dispatch
//! wraps every request in it.

use std::future::Future;

use serde_json::Value;

use super::request::Answer;
use super::revision::META_VERSION;
use super::server::Server;
use super::session::Session;
use crate::call::Caller;
use crate::protocol::jsonrpc::{Id, Request};
use crate::telemetry::{self, RequestInfo};

/// The span of `request` (with `id`) in `session`, when exporting.
pub async fn start(
    server: &Server,
    session: &Session,
    id: &Id,
    request: &Request,
) -> Option<telemetry::Request> {
    if !telemetry::on() {
        return None;
    }
    let earlier = earlier(server, request).await;
    let params = request.params.as_ref();
    let text = |field: &str| params.and_then(|p| p.get(field)).and_then(Value::as_str);
    let method = request.method.as_str();
    let session_key = session.revision().map(|_| session.key().to_string());
    let declared = params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(META_VERSION))
        .and_then(Value::as_str);
    let protocol = session.revision().map(|r| r.as_str()).or(declared);
    let id = match id.as_value() {
        Value::Null => None,
        Value::String(text) => Some(text.clone()),
        other => Some(other.to_string()),
    };
    telemetry::Request::start(RequestInfo {
        method,
        tool: (method == "tools/call").then(|| text("name")).flatten(),
        prompt: (method == "prompts/get").then(|| text("name")).flatten(),
        uri: method
            .starts_with("resources/")
            .then(|| text("uri"))
            .flatten(),
        id,
        session: session_key.as_deref(),
        protocol,
        transport: match session.caller() {
            Caller::Stdio => "pipe",
            _ => "tcp",
        },
        parent: telemetry::from_meta(params),
        earlier,
        ..RequestInfo::default()
    })
}

/// The span the server kept for the work `request` continues: the
/// `traceparent` in its round's `requestState`, or in the record of the
/// task its `taskId` names (here or in the replicas' shared store).
async fn earlier(server: &Server, request: &Request) -> Option<telemetry::Context> {
    let params = request.params.as_ref()?;
    let text = |field: &str| params.get(field).and_then(Value::as_str);
    let kept = if let Some(state) = text("requestState") {
        super::request_state::trace_of(state)
    } else if request.method.starts_with("tasks/")
        && let Some(task) = text("taskId")
    {
        server.tasks.trace_of(task).await
    } else {
        None
    };
    telemetry::from_traceparent(&kept?)
}

/// Answers with `answering` inside `span` (when there is one), then ends
/// the span with how it was answered.
pub async fn run(
    span: Option<telemetry::Request>,
    answering: impl Future<Output = Answer>,
) -> Answer {
    use crate::telemetry::FutureExt as _;
    let Some(span) = span else {
        return answering.await;
    };
    let answer = answering.with_context(span.context()).await;
    let error = match &answer {
        // The code only: a message may quote what the client sent.
        Answer::Error(error) => Some((error.code.to_string(), None)),
        Answer::Result(result) if result.get("isError") == Some(&Value::Bool(true)) => {
            Some(("tool_error".to_string(), None))
        }
        Answer::Result(_) => None,
        Answer::Nothing => Some(("cancelled".to_string(), None)),
    };
    span.end(error);
    answer
}
