//! The open `subscriptions/listen` streams (2026-07-28): who listens for
//! which notifications (the tools', resources' and prompts' list changes,
//! updates of some resources), and the means to end them (the client's
//! stdin closed, shutdown).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};

use crate::protocol::jsonrpc;
use crate::protocol::outbox::Outbox;
use crate::sandbox::CancelToken;
use crate::sync::lock;

/// The `_meta` key naming the subscription a notification belongs to.
pub const META_SUBSCRIPTION: &str = "io.modelcontextprotocol/subscriptionId";

/// What one subscription asked for (and the server agreed to).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Wants {
    pub tools: bool,
    pub resources: bool,
    pub prompts: bool,
    /// Resource URIs whose updates it wants.
    pub updates: Vec<String>,
}

struct Listener {
    key: u64,
    session: u64,
    id: Value,
    /// Where its notifications go.
    out: Outbox,
    wants: Wants,
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
        self.tell("notifications/tools/list_changed", |w| w.tools)
    }

    /// `notifications/resources/list_changed` to every stream that asked.
    pub fn resources_changed(&self) -> usize {
        self.tell("notifications/resources/list_changed", |w| w.resources)
    }

    /// `notifications/prompts/list_changed` to every stream that asked.
    pub fn prompts_changed(&self) -> usize {
        self.tell("notifications/prompts/list_changed", |w| w.prompts)
    }

    /// `notifications/resources/updated` to every stream subscribed to `uri`.
    pub fn resource_updated(&self, uri: &str) -> usize {
        let open = lock(&self.open);
        open.iter()
            .filter(|l| l.wants.updates.iter().any(|u| u == uri))
            .filter(|l| {
                l.out.notify(jsonrpc::notification(
                    "notifications/resources/updated",
                    json!({ "uri": uri, "_meta": { META_SUBSCRIPTION: l.id } }),
                ))
            })
            .count()
    }

    fn tell(&self, method: &str, asked: impl Fn(&Wants) -> bool) -> usize {
        let open = lock(&self.open);
        open.iter()
            .filter(|l| asked(&l.wants))
            .filter(|l| {
                l.out.notify(jsonrpc::notification(
                    method,
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

    pub(super) fn add(
        &self,
        session: u64,
        id: Value,
        out: Outbox,
        wants: Wants,
        ended: CancelToken,
    ) -> u64 {
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        lock(&self.open).push(Listener {
            key,
            session,
            id,
            out,
            wants,
            ended,
        });
        key
    }

    pub(super) fn remove(&self, key: u64) {
        lock(&self.open).retain(|l| l.key != key);
    }
}

/// An open subscription's entry, removed when its request ends in any way
/// (the transport drops a request whose client went away).
pub(super) struct Subscribed<'a> {
    pub(super) listeners: &'a Listeners,
    pub(super) key: u64,
}

impl Drop for Subscribed<'_> {
    fn drop(&mut self) {
        self.listeners.remove(self.key);
    }
}
