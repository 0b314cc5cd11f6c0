//! What `resources/read`, `prompts/get` and `completion/complete` share:
//! running one in the component (through [`crate::call`], on a lane, on
//! behalf of the request's caller) with the guest's logs as notifications
//! and — when the component's `ask` grants it — its requests to the client
//! in band (sessions) or in rounds (2026-07-28, [`super::replay`]), as a
//! tool call's; and what an error becomes in MCP.

use serde_json::{Map, Value, json};

use super::context::Ctx;
use super::model::tools::ListedTool;
use super::model::{Retry, to_value};
use super::outcome::{Asking, Observer};
use super::request::Answer;
use super::request_state::call_digest;
use super::running;
use crate::call::{CallError, Offer, settled};
use crate::offer::{CompletionRef, OfferRequest};
use crate::protocol::jsonrpc::{self, ErrorObject};
use crate::sandbox::RunError;

/// What a round's `requestState` is bound to: the caller, the method and
/// what it was asked for (a retry for anything else is refused).
fn digest_of(ctx: &Ctx<'_>, request: &OfferRequest) -> String {
    let pairs = |list: &[(String, String)]| {
        Value::Object(
            list.iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect(),
        )
    };
    let (subject, content) = match request {
        OfferRequest::Read { uri } => (uri.clone(), Value::Null),
        OfferRequest::Prompt { name, arguments } => (name.clone(), pairs(arguments)),
        OfferRequest::Complete {
            reference,
            argument,
            value,
            context,
        } => {
            let reference = match reference {
                CompletionRef::Prompt(name) => json!({ "prompt": name }),
                CompletionRef::Template(t) => json!({ "template": t }),
            };
            (
                String::new(),
                json!([reference, argument, value, pairs(context)]),
            )
        }
    };
    call_digest(
        ctx.caller().token(),
        &format!("{} {subject}", request.method()),
        &content,
    )
}

/// Runs `request` for the request's caller and answers its MCP result
/// (`shape` adds what the method's result carries beside it); a request
/// the client cancelled gets no answer. `retry` is what a retry of
/// 2026-07-28 brings (its `requestState` and `inputResponses`).
pub async fn run(
    ctx: &Ctx<'_>,
    retry: &Retry,
    request: OfferRequest,
    shape: fn(&Ctx<'_>, Value) -> Value,
) -> Answer {
    let logger = match &request {
        OfferRequest::Read { uri } => uri.clone(),
        OfferRequest::Prompt { name, .. } => name.clone(),
        OfferRequest::Complete { .. } => "completion".into(),
    };
    let subject = request.clone();
    let prepared = match ctx
        .server()
        .runtime
        .prepare_offer(ctx.caller().clone(), request)
    {
        Ok(prepared) => prepared,
        Err(err) => return Answer::Error(error_of(ctx, &subject, &err)),
    };
    let cancel = prepared.cancel_token().clone();
    let _registered = ctx.session.register(ctx.id, cancel.clone());
    let digest = digest_of(ctx, &subject);
    let may_ask = prepared.grant().asks.any();
    let asking = match running::asking(ctx, may_ask, retry, &digest, &cancel).await {
        Ok(asking) => asking,
        Err(answer) => return answer,
    };
    let replay = match &asking {
        Some(Asking::Replay(replay)) => Some(replay.clone()),
        _ => None,
    };
    // A read, prompt or completion reports no progress.
    let observer = Observer::new(ctx.out, &ctx.log_level, logger, None, asking);
    let outcome = prepared.run_in_rounds(observer).await;
    if let Some(answer) = running::stopped(&cancel) {
        return answer;
    }
    let ended = replay.and_then(|replay| running::round_ended(&replay, &digest, &outcome));
    if let Some(answer) = ended {
        return answer;
    }
    match outcome.map(settled::<Offer>) {
        Some(Ok(offered)) => Answer::Result(shape(ctx, to_value(&offered))),
        Some(Err(err)) => Answer::Error(error_of(ctx, &subject, &err)),
        None => {
            tracing::error!("the thread of {} failed", subject.method());
            Answer::Error(ErrorObject::internal())
        }
    }
}

/// What an unknown resource is answered, as the revision says.
pub fn resource_not_found(ctx: &Ctx<'_>, uri: &str, message: String) -> ErrorObject {
    let code = ctx.revision.wire().resource_not_found();
    ErrorObject::new(code, message).with_data(json!({ "uri": jsonrpc::shorten(uri, 2048) }))
}

/// What an error becomes: an unknown resource as the revision says, bad
/// arguments -32602, a refusal -32001, the rest (a failure, a limit) -32000
/// with its reason.
fn error_of(ctx: &Ctx<'_>, request: &OfferRequest, err: &CallError) -> ErrorObject {
    match (err, request) {
        (CallError::NotFound(message), OfferRequest::Read { uri }) => {
            resource_not_found(ctx, uri, message.clone())
        }
        (CallError::NotFound(message) | CallError::InvalidParams(message), _) => {
            ErrorObject::invalid_params(message.clone())
        }
        (CallError::Run(RunError::InvalidArguments(message)), _) => {
            ErrorObject::invalid_params(message.clone())
        }
        // Logged for the operator where it was refused (CallError::refused).
        (CallError::Refused(refusal), _) => {
            ErrorObject::new(jsonrpc::NOT_PERMITTED, refusal.to_string())
        }
        (call, _) => ErrorObject::new(
            jsonrpc::TOOL_FAILED,
            format!("{} failed: {call}", request.method()),
        ),
    }
}

/// A tool as `tools/list` lists it, with the `_meta` its component's
/// `tool-meta` gives it (an MCP App's `ui.resourceUri`, checked at load).
pub fn listed_tool(tool: &crate::catalog::Tool) -> Value {
    to_value(ListedTool::of(tool))
}

/// A list result with the caching hints of its revision (a token sees
/// only what it may: not for shared caches).
pub fn with_cache_hints(ctx: &Ctx<'_>, mut result: Map<String, Value>, ttl_ms: u64) -> Value {
    let private = ctx.caller().token().is_some();
    ctx.revision
        .wire()
        .cache_hints(&mut result, ttl_ms, private);
    Value::Object(result)
}
