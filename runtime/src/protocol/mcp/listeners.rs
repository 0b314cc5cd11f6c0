//! The open `subscriptions/listen` streams (2026-07-28): who listens for
//! `notifications/tools/list_changed`, and the means to end them (the
//! client's stdin closed, shutdown).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};

use crate::protocol::jsonrpc;
use crate::protocol::outbox::Outbox;
use crate::sandbox::CancelToken;
use crate::sync::lock;

/// The `_meta` key naming the subscription a notification belongs to.
pub const META_SUBSCRIPTION: &str = "io.modelcontextprotocol/subscriptionId";

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

    pub(super) fn add(
        &self,
        session: u64,
        id: Value,
        out: Option<Outbox>,
        ended: CancelToken,
    ) -> u64 {
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
