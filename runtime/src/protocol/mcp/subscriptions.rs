//! `subscriptions/listen` (2026-07-28, in place of the session's GET
//! stream): acknowledges, then carries `notifications/tools/list_changed`
//! tagged with the subscription id until the client cancels or the server
//! ends it.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use super::request::{Answer, Ctx};
use crate::protocol::jsonrpc;
use crate::protocol::outbox::Outbox;
use crate::sandbox::CancelToken;
use crate::sync::lock;

const META_SUBSCRIPTION: &str = "io.modelcontextprotocol/subscriptionId";

struct Listener {
    key: u64,
    session: u64,
    id: Value,
    /// Where tool-list changes go; `None` when the client did not ask.
    out: Option<Outbox>,
    /// Cancelled when the server ends the subscription.
    ended: CancelToken,
}

/// The open `subscriptions/listen` streams.
#[derive(Default)]
pub struct Listeners {
    open: Mutex<Vec<Listener>>,
    next: AtomicU64,
}

impl Listeners {
    /// Sends `notifications/tools/list_changed` on every stream that asked
    /// for it; returns how many got it.
    pub fn tools_changed(&self) -> usize {
        let open = lock(&self.open);
        open.iter()
            .filter_map(|l| l.out.as_ref().map(|out| (l, out)))
            .filter(|(l, out)| {
                out.notify(jsonrpc::notification(
                    "notifications/tools/list_changed",
                    json!({ "_meta": { META_SUBSCRIPTION: l.id } }),
                ))
            })
            .count()
    }

    /// Ends the subscriptions opened through `session` (stdin closed).
    pub fn end_session(&self, session: u64) {
        for listener in lock(&self.open).iter().filter(|l| l.session == session) {
            listener.ended.cancel();
        }
    }

    /// Ends every subscription (shutdown).
    pub fn end_all(&self) {
        for listener in lock(&self.open).iter() {
            listener.ended.cancel();
        }
    }

    fn add(&self, session: u64, id: Value, out: Option<Outbox>, ended: CancelToken) -> u64 {
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        lock(&self.open).push(Listener {
            key,
            session,
            id,
            out,
            ended,
        });
        key
    }

    fn remove(&self, key: u64) {
        lock(&self.open).retain(|l| l.key != key);
    }
}

/// An open subscription's entry, removed when its request ends in any way
/// (the transport drops a request whose client went away).
struct Subscribed<'a> {
    listeners: &'a Listeners,
    key: u64,
}

impl Drop for Subscribed<'_> {
    fn drop(&mut self) {
        self.listeners.remove(self.key);
    }
}

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
