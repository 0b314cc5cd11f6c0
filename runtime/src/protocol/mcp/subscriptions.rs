//! `subscriptions/listen` (2026-07-28, in place of the session's GET
//! stream): acknowledges, then carries `notifications/tools/list_changed`
//! tagged with the subscription id until the client cancels or the server
//! ends it.

use std::time::Duration;

use serde_json::{Value, json};

use super::context::Ctx;
use super::listeners::{META_SUBSCRIPTION, Subscribed};
use super::request::Answer;
use crate::protocol::jsonrpc;
use crate::sandbox::CancelToken;

/// `subscriptions/listen`: acknowledges, then stays open until the client
/// cancels (no answer then) or the server ends it (a result).
pub async fn listen(ctx: &Ctx<'_>, params: &Value) -> Answer {
    let subscription = ctx.id.as_value().clone();
    let tools = params.pointer("/notifications/toolsListChanged") == Some(&Value::Bool(true));
    let mut agreed = json!({});
    if tools {
        agreed["toolsListChanged"] = true.into();
    }
    let ack = jsonrpc::notification(
        "notifications/subscriptions/acknowledged",
        json!({ "_meta": { META_SUBSCRIPTION: subscription }, "notifications": agreed }),
    );
    if ctx.out.send(ack).await.is_err() {
        return Answer::Nothing;
    }
    let cancelled = CancelToken::new();
    let _registered = ctx.session.register(ctx.id, cancelled.clone());
    let ended = CancelToken::new();
    let listeners = &ctx.server().listeners;
    let key = listeners.add(
        ctx.session.key(),
        subscription.clone(),
        tools.then(|| ctx.out.clone()),
        ended.clone(),
    );
    let subscribed = Subscribed { listeners, key };
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    loop {
        tokio::select! {
            () = ctx.out.closed_signal() => break,
            _ = tick.tick() => {
                if cancelled.is_cancelled() || ended.is_cancelled() {
                    break;
                }
            }
        }
    }
    drop(subscribed);
    if ended.is_cancelled() && !cancelled.is_cancelled() {
        Answer::Result(json!({ "_meta": { META_SUBSCRIPTION: subscription } }))
    } else {
        Answer::Nothing
    }
}
