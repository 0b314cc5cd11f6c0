//! `subscriptions/listen` (2026-07-28, in place of the session's GET
//! stream and `resources/subscribe`): acknowledges what it agrees to, then
//! carries the list changes of tools, resources and prompts and the
//! updates of the resources asked for (`resourceSubscriptions`: only URIs
//! served and visible to the caller are agreed), each tagged with the
//! subscription id, until the client cancels or the server ends it.

use std::time::Duration;

use serde_json::json;

use super::context::Ctx;
use super::listeners::{META_SUBSCRIPTION, Subscribed, Wants};
use super::model::subscriptions::ListenParams;
use super::request::Answer;
use super::session::MAX_SUBSCRIPTIONS;
use crate::protocol::jsonrpc;
use crate::sandbox::CancelToken;

/// `subscriptions/listen`: acknowledges, then stays open until the client
/// cancels (no answer then) or the server ends it (a result).
pub async fn listen(ctx: &Ctx<'_>, params: ListenParams) -> Answer {
    let subscription = ctx.id.as_value().clone();
    let asked = params.notifications;
    let catalog = ctx.server().runtime.catalog();
    let updates: Vec<String> = asked
        .resource_subscriptions
        .into_iter()
        .filter(|uri| {
            catalog.resource_for(uri).is_some_and(|(_, t)| {
                ctx.allows_resource(uri, t.map(|t| t.info.uri_template.as_str()))
            })
        })
        .take(MAX_SUBSCRIPTIONS)
        .collect();
    let wants = Wants {
        tools: asked.tools_list_changed,
        resources: asked.resources_list_changed,
        prompts: asked.prompts_list_changed,
        updates,
    };
    let mut agreed = json!({});
    for (key, on) in [
        ("toolsListChanged", wants.tools),
        ("resourcesListChanged", wants.resources),
        ("promptsListChanged", wants.prompts),
    ] {
        if on {
            agreed[key] = true.into();
        }
    }
    if !wants.updates.is_empty() {
        agreed["resourceSubscriptions"] = wants.updates.clone().into();
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
        ctx.out.clone(),
        wants,
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
