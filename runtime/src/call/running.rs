//! The calls prepared and not yet finished: one registry for the whole
//! process, so that shutdown can count them and stop them, whatever the
//! door they came through; and each call's place in its tool's
//! concurrency limit — a read's, prompt's or completion's in its
//! component's —, or in the bounded queue before it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::error::CallError;
use crate::catalog::Places;
use crate::sandbox::{CancelToken, RunError};
use crate::sync::lock;

/// Every call prepared and not yet finished (waiting for confirmation,
/// running, or being torn down), by call id, with its cancel token.
#[derive(Default)]
pub struct Running {
    calls: Mutex<HashMap<u64, CancelToken>>,
    /// How many `calls` holds (read without the lock), and whether the
    /// calls before came to an empty server.
    in_flight: InFlight,
}

/// Calls in a row that must each have come to an empty server before a
/// call counts as [`Place::alone`]. A server under load now and then sees
/// a call come while nothing else runs (a third of them at 16 connections
/// on two cores, the load generator sharing them); eight in a row it
/// hardly ever sees, one connection at a time always.
const SOLO_STREAK: usize = 8;

/// How many calls are in flight, and for how many arrivals in a row there
/// was no other.
#[derive(Default)]
struct InFlight {
    count: AtomicUsize,
    solo: AtomicUsize,
}

impl InFlight {
    fn arrive(&self) {
        if self.count.fetch_add(1, Ordering::AcqRel) == 0 {
            self.solo.fetch_add(1, Ordering::Relaxed);
        } else {
            self.solo.store(0, Ordering::Relaxed);
        }
    }

    fn leave(&self) {
        self.count.fetch_sub(1, Ordering::AcqRel);
    }

    fn count(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }

    /// One call in flight, and the [`SOLO_STREAK`] before it came alone.
    fn quiet(&self) -> bool {
        self.count() == 1 && self.solo.load(Ordering::Relaxed) >= SOLO_STREAK
    }
}

impl Running {
    /// Calls prepared and not yet finished. A server that stops waits for
    /// this to reach zero.
    pub fn count(&self) -> usize {
        self.in_flight.count()
    }

    /// Stops every call because the server is shutting down: each request
    /// still gets an answer, saying so.
    pub fn shut_down_all(&self) {
        for token in lock(&self.calls).values() {
            token.shut_down();
        }
    }
}

/// Calls that may wait for a place, per place under the limit: with the
/// default `concurrency = 16`, 64 wait behind the 16 running, so that a
/// server within its default `--max-calls` (64) never answers `busy` for
/// short calls.
pub const QUEUE_PER_PLACE: u32 = 4;

/// How often a waiting call looks at its cancel token.
const CANCEL_CHECK: Duration = Duration::from_millis(50);

/// A call's place in the registry and in its tool's concurrency limit (a
/// read's, prompt's or completion's in its component's), given back when
/// the call is dropped. A call over the limit waits for a place, in a queue
/// of [`QUEUE_PER_PLACE`] × the limit, at most as long as its own
/// `limits.time`.
pub(super) struct Place {
    running: Arc<Running>,
    id: u64,
    places: Arc<Places>,
    limit: u32,
    /// Whether the place under the limit is held (else the call waits).
    held: bool,
}

impl Place {
    /// Registers call `id` and takes one of `places` under `limit`, or a
    /// place in the queue; `busy` (naming what `busy` says) when the queue
    /// is full too.
    pub(super) fn take(
        running: &Arc<Running>,
        id: u64,
        places: &Arc<Places>,
        limit: u32,
        cancel: &CancelToken,
        busy_name: impl FnOnce() -> String,
    ) -> Result<Self, CallError> {
        let held = try_hold(places, limit);
        if !held {
            let queue = limit.saturating_mul(QUEUE_PER_PLACE);
            let waiting = &places.waiting;
            if waiting.fetch_add(1, Ordering::AcqRel) >= queue {
                waiting.fetch_sub(1, Ordering::AcqRel);
                return Err(busy(busy_name(), limit));
            }
        }
        lock(&running.calls).insert(id, cancel.clone());
        running.in_flight.arrive();
        Ok(Place {
            running: running.clone(),
            id,
            places: places.clone(),
            limit,
            held,
        })
    }

    /// Whether this is the only call prepared and not finished in the
    /// process, and the [`SOLO_STREAK`] calls before it were alone too: a
    /// server that is not under load (the call may then skip the lanes:
    /// [`crate::lanes::Inline`]).
    pub(super) fn alone(&self) -> bool {
        self.running.in_flight.quiet()
    }

    /// Waits (without a thread) until the call holds its place, at most
    /// `patience`; `busy` after that, `cancelled` when the call is stopped.
    pub(super) async fn hold(
        &mut self,
        patience: Duration,
        cancel: &CancelToken,
        busy_name: impl FnOnce() -> String,
    ) -> Result<(), CallError> {
        let deadline = tokio::time::Instant::now() + patience;
        let places = self.places.clone();
        while !self.held {
            // Registered before trying, so a place freed in between wakes us.
            let freed = places.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            if self.try_leave_queue() {
                break;
            }
            if cancel.is_cancelled() {
                return Err(RunError::Cancelled.into());
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(busy(busy_name(), self.limit));
            }
            let check = deadline.min(tokio::time::Instant::now() + CANCEL_CHECK);
            tokio::select! {
                () = &mut freed => {}
                () = tokio::time::sleep_until(check) => {}
            }
        }
        Ok(())
    }

    /// [`Place::hold`] for a caller without an async runtime (the CLI, a
    /// blocking caller's thread).
    pub(super) fn hold_blocking(
        &mut self,
        patience: Duration,
        cancel: &CancelToken,
        busy_name: impl FnOnce() -> String,
    ) -> Result<(), CallError> {
        let deadline = Instant::now() + patience;
        while !self.try_leave_queue() {
            if cancel.is_cancelled() {
                return Err(RunError::Cancelled.into());
            }
            if Instant::now() >= deadline {
                return Err(busy(busy_name(), self.limit));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        Ok(())
    }

    /// Moves from the queue to a place under the limit, if one is free.
    fn try_leave_queue(&mut self) -> bool {
        if !self.held && try_hold(&self.places, self.limit) {
            self.places.waiting.fetch_sub(1, Ordering::AcqRel);
            self.held = true;
        }
        self.held
    }
}

/// Takes a place under `limit` if one is free.
fn try_hold(places: &Places, limit: u32) -> bool {
    if places.running.fetch_add(1, Ordering::AcqRel) < limit {
        return true;
    }
    places.running.fetch_sub(1, Ordering::AcqRel);
    false
}

fn busy(name: String, limit: u32) -> CallError {
    CallError::Busy {
        tool: name,
        limit,
        queue: limit.saturating_mul(QUEUE_PER_PLACE),
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let places = &self.places;
        if self.held {
            places.running.fetch_sub(1, Ordering::AcqRel);
            places.freed.notify_one();
        } else {
            places.waiting.fetch_sub(1, Ordering::AcqRel);
        }
        lock(&self.running.calls).remove(&self.id);
        self.running.in_flight.leave();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_is_quiet_after_a_streak_of_calls_that_came_alone() {
        let calls = InFlight::default();
        for n in 1..=SOLO_STREAK {
            calls.arrive();
            assert_eq!(calls.quiet(), n == SOLO_STREAK, "call {n} of a streak");
            calls.leave();
        }
        calls.arrive();
        assert!(calls.quiet());
        calls.arrive();
        assert!(!calls.quiet(), "two in flight");
        calls.leave();
        assert!(!calls.quiet(), "one left, but it came while another ran");
        calls.leave();
        for _ in 1..SOLO_STREAK {
            calls.arrive();
            assert!(!calls.quiet(), "the streak starts again after an overlap");
            calls.leave();
        }
        calls.arrive();
        assert!(calls.quiet());
        calls.leave();
        assert_eq!(calls.count(), 0);
    }
}
