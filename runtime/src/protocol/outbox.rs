//! The way out to one client: a bounded queue of JSON-RPC messages.
//!
//! Every stream toward a client — stdout, the SSE answer of a POST, the
//! session's GET stream, a task's relay — is an [`Outbox`] holding at most
//! [`CAPACITY`] messages. A client that does not read cannot make the
//! server's memory grow:
//! - a notification ([`Outbox::notify`]: progress, logs, status, list
//!   changes) that finds the queue full is dropped and counted; the count
//!   is logged once, when the last handle of the outbox goes away;
//! - a message that must arrive ([`Outbox::send`]: a response, a request
//!   to the client) waits for room, so the request that sends it waits
//!   too, and a transport that reads requests one after another stops
//!   reading (back-pressure instead of a queue).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;
use tokio::sync::mpsc;

/// Messages one outbox holds before notifications are dropped.
pub const CAPACITY: usize = 256;

/// A handle on one client's stream; clones share the queue.
#[derive(Clone)]
pub struct Outbox {
    tx: mpsc::Sender<Value>,
    dropped: Arc<Dropped>,
}

/// The receiving end, read by the transport that writes the stream.
pub type Inbox = mpsc::Receiver<Value>;

/// The outbox was closed: nobody reads this stream any more.
#[derive(Debug)]
pub struct Closed(pub Value);

impl Outbox {
    /// A new stream of [`CAPACITY`] messages.
    pub fn channel() -> (Outbox, Inbox) {
        Self::with_capacity(CAPACITY)
    }

    pub fn with_capacity(capacity: usize) -> (Outbox, Inbox) {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        let outbox = Outbox {
            tx,
            dropped: Arc::new(Dropped(AtomicU64::new(0))),
        };
        (outbox, rx)
    }

    /// An outbox nobody reads (a client that cannot take a stream): every
    /// notification is dropped without being counted, every send fails.
    pub fn closed() -> Outbox {
        let (outbox, inbox) = Self::with_capacity(1);
        drop(inbox);
        outbox
    }

    /// Queues a notification; when the client does not keep up, drops it
    /// and counts it. False when it was not queued.
    pub fn notify(&self, message: Value) -> bool {
        match self.tx.try_send(message) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full(_)) => {
                if self.dropped.0.fetch_add(1, Ordering::Relaxed) == 0 {
                    tracing::warn!(
                        "a client does not read its stream; dropping notifications to it \
                         (counted, and logged when the stream ends)"
                    );
                }
                false
            }
            Err(mpsc::error::TrySendError::Closed(_)) => false,
        }
    }

    /// Queues a message that must arrive, waiting for room.
    pub async fn send(&self, message: Value) -> Result<(), Closed> {
        self.tx.send(message).await.map_err(|e| Closed(e.0))
    }

    /// Queues a message if there is room now; gives it back otherwise
    /// (the queue is full or closed), uncounted.
    pub fn try_send(&self, message: Value) -> Result<(), Value> {
        self.tx.try_send(message).map_err(|e| match e {
            mpsc::error::TrySendError::Full(m) | mpsc::error::TrySendError::Closed(m) => m,
        })
    }

    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }

    /// Resolves when nobody reads this stream any more.
    pub async fn closed_signal(&self) {
        self.tx.closed().await
    }

    /// Whether `other` is a handle on the same stream.
    pub fn same_stream(&self, other: &Outbox) -> bool {
        self.tx.same_channel(&other.tx)
    }
}

/// Notifications dropped from one outbox, logged when it ends.
struct Dropped(AtomicU64);

impl Drop for Dropped {
    fn drop(&mut self) {
        let dropped = *self.0.get_mut();
        if dropped > 0 {
            tracing::warn!(
                "{dropped} notification(s) dropped: the client did not read its stream in time"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn notifications_are_dropped_when_full_and_sends_wait() {
        let (out, mut inbox) = Outbox::with_capacity(2);
        assert!(out.notify(json!(1)));
        assert!(out.notify(json!(2)));
        assert!(!out.notify(json!(3)), "full: dropped");
        assert_eq!(out.dropped.0.load(Ordering::Relaxed), 1);
        // A message that must arrive waits for room instead.
        let sender = out.clone();
        let waiting = tokio::spawn(async move { sender.send(json!("answer")).await.is_ok() });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        assert_eq!(inbox.recv().await, Some(json!(1)));
        assert!(waiting.await.expect("joined"));
        assert_eq!(inbox.recv().await, Some(json!(2)));
        assert_eq!(inbox.recv().await, Some(json!("answer")));
        assert!(inbox.try_recv().is_err(), "the dropped one never arrives");
    }

    #[tokio::test]
    async fn a_closed_outbox_takes_nothing() {
        let out = Outbox::closed();
        assert!(out.is_closed());
        assert!(!out.notify(json!(1)));
        assert!(out.send(json!(2)).await.is_err());
        assert_eq!(out.try_send(json!(3)), Err(json!(3)));
        assert_eq!(out.dropped.0.load(Ordering::Relaxed), 0, "not counted");
        let (a, _inbox) = Outbox::channel();
        assert!(a.same_stream(&a.clone()));
        assert!(!a.same_stream(&out));
    }
}
