//! Stopping a guest from outside: the [`CancelToken`] shared between
//! whoever asked for a call and the running guest, and the [`Interruption`]
//! that says why it was stopped. Below the call's store (`call_state`) and
//! the host interfaces that wait within its limit (`waits`, `outgoing`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

/// Why the runtime stopped a guest from outside.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interruption {
    TimedOut,
    Cancelled,
}

impl std::fmt::Display for Interruption {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Interruption::TimedOut => f.write_str("interrupted: wall-time limit"),
            Interruption::Cancelled => f.write_str("interrupted: cancelled"),
        }
    }
}

impl std::error::Error for Interruption {}

/// A cancellation flag shared between the caller and the running guest.
#[derive(Clone, Default, Debug)]
pub struct CancelToken(Arc<AtomicU8>);

/// Why a call was stopped: by whoever asked for it (the client, a task's
/// cancel), or because the server is shutting down — then the request
/// still gets an answer saying so.
const RUNNING: u8 = 0;
const CANCELLED: u8 = 1;
const SHUTDOWN: u8 = 2;

impl CancelToken {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn cancel(&self) {
        let _ = self
            .0
            .compare_exchange(RUNNING, CANCELLED, Ordering::Relaxed, Ordering::Relaxed);
    }
    /// Stops the call because the server is shutting down.
    pub fn shut_down(&self) {
        self.0.store(SHUTDOWN, Ordering::Relaxed);
    }
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed) != RUNNING
    }
    /// Whether the call was stopped by the server's shutdown.
    pub fn is_shut_down(&self) -> bool {
        self.0.load(Ordering::Relaxed) == SHUTDOWN
    }
}
