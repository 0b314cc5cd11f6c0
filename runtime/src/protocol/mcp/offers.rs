//! What `resources/read`, `prompts/get` and `completion/complete` share:
//! running one in the component (through [`crate::call`], on a lane, on
//! behalf of the request's caller), the observer that turns the guest's
//! logs into notifications, and what an error becomes in MCP.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use serde_json::{Value, json};

use super::context::Ctx;
use super::outcome::shutting_down;
use super::request::Answer;
use crate::call::{CallError, OfferError};
use crate::observe::CallObserver;
use crate::offer::{OfferRequest, Offered};
use crate::protocol::jsonrpc::{self, ErrorObject};
use crate::protocol::outbox::Outbox;
use crate::sandbox::RunError;
use crate::tool::Level;

/// MCP's "Resource not found" of the revisions with sessions; 2026-07-28
/// answers -32602 (Invalid Params) instead (SEP-2164).
pub const RESOURCE_NOT_FOUND: i64 = -32002;

/// Sends the guest's log messages as `notifications/message` (logger: what
/// runs); a read, prompt or completion reports no progress.
struct Observer {
    out: Outbox,
    level: Arc<AtomicU8>,
    logger: String,
}

impl CallObserver for Observer {
    fn log(&self, level: Level, message: &str) {
        if (level as u8) < self.level.load(Ordering::Relaxed) {
            return;
        }
        self.out.notify(jsonrpc::notification(
            "notifications/message",
            json!({ "level": level.as_str(), "logger": self.logger, "data": message }),
        ));
    }

    fn progress(&self, _: f64, _: Option<f64>, _: Option<&str>) {}
}

/// Runs `request` for the request's caller and answers its MCP result
/// (`shape` adds what the method's result carries beside it); a request
/// the client cancelled gets no answer.
pub async fn run(
    ctx: &Ctx<'_>,
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
    let observer = Arc::new(Observer {
        out: ctx.out.clone(),
        level: ctx.log_level.clone(),
        logger,
    });
    let outcome = prepared.run_on_lane(observer).await;
    if cancel.is_shut_down() {
        return Answer::Error(shutting_down());
    }
    if cancel.is_cancelled() {
        return Answer::Nothing;
    }
    match outcome {
        Some(Ok(offered)) => Answer::Result(shape(ctx, Offered::to_mcp(&offered))),
        Some(Err(err)) => Answer::Error(error_of(ctx, &subject, &err)),
        None => {
            tracing::error!("the thread of {} failed", subject.method());
            Answer::Error(ErrorObject::internal())
        }
    }
}

/// What an unknown resource is answered, as the revision says.
pub fn resource_not_found(ctx: &Ctx<'_>, uri: &str, message: String) -> ErrorObject {
    let code = if ctx.revision.is_stateless() {
        jsonrpc::INVALID_PARAMS
    } else {
        RESOURCE_NOT_FOUND
    };
    ErrorObject::new(code, message).with_data(json!({ "uri": jsonrpc::shorten(uri, 2048) }))
}

/// What an error becomes: an unknown resource as the revision says, bad
/// arguments -32602, a refusal -32001, the rest (a failure, a limit) -32000
/// with its reason.
fn error_of(ctx: &Ctx<'_>, request: &OfferRequest, err: &OfferError) -> ErrorObject {
    match (err, request) {
        (OfferError::NotFound(message), OfferRequest::Read { uri }) => {
            resource_not_found(ctx, uri, message.clone())
        }
        (OfferError::NotFound(message) | OfferError::InvalidParams(message), _) => {
            ErrorObject::invalid_params(message.clone())
        }
        (OfferError::Call(CallError::Run(RunError::InvalidArguments(message))), _) => {
            ErrorObject::invalid_params(message.clone())
        }
        (OfferError::Call(CallError::Refused(refusal)), _) => {
            tracing::info!("{}: {}", request.method(), refusal.operator_hint);
            ErrorObject::new(jsonrpc::NOT_PERMITTED, refusal.to_string())
        }
        (OfferError::Call(call), _) => ErrorObject::new(
            jsonrpc::TOOL_FAILED,
            format!("{} failed: {call}", request.method()),
        ),
    }
}

/// A tool as `tools/list` lists it, with the `_meta` its component's
/// `tool-meta` gives it (an MCP App's `ui.resourceUri`, checked at load).
pub fn listed_tool(tool: &crate::catalog::Tool) -> Value {
    let mut listed = tool.info.to_mcp();
    if let Some(meta) = tool.component.offers().tool_meta.get(&tool.info.name) {
        listed["_meta"] = Value::Object(meta.clone());
    }
    listed
}

/// A list result with the caching hints of 2026-07-28 (a token sees only
/// what it may: not for shared caches).
pub fn with_cache_hints(ctx: &Ctx<'_>, mut result: Value, ttl_ms: u64) -> Value {
    if ctx.revision.is_stateless() {
        result["ttlMs"] = ttl_ms.into();
        let scope = if ctx.caller().token().is_some() {
            "private"
        } else {
            "public"
        };
        result["cacheScope"] = scope.into();
    }
    result
}
