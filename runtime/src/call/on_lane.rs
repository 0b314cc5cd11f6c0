//! How an entry's guest runs away from the async task that awaits it (a
//! tool call, a read, a prompt, a completion alike): on a lane, or in a
//! task of its own, and stopped when the future awaiting it is dropped —
//! the client went away.

use crate::sandbox::CancelToken;

/// Hands `job` to a lane and waits for what it delivers through the
/// sender it is given; `None` when the lane's thread died first.
/// Dropping the future stops the guest (through `cancel`).
pub(super) async fn on_a_lane<T: Send + 'static>(
    cancel: CancelToken,
    job: impl FnOnce(tokio::sync::oneshot::Sender<T>) + Send + 'static,
) -> Option<T> {
    let stop_on_drop = CancelOnDrop::arm(cancel);
    let (tx, rx) = tokio::sync::oneshot::channel();
    crate::lanes::spawn(move || job(tx));
    let outcome = rx.await.ok();
    stop_on_drop.disarm();
    outcome
}

/// Cancels an entry when the future waiting for it is dropped before it
/// is [disarmed](Self::disarm).
pub(super) struct CancelOnDrop(Option<CancelToken>);

impl CancelOnDrop {
    pub(super) fn arm(cancel: CancelToken) -> Self {
        CancelOnDrop(Some(cancel))
    }

    /// The outcome is in: dropping no longer cancels.
    pub(super) fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(token) = &self.0 {
            token.cancel();
        }
    }
}
