//! The long requests of a transport, in one piece every transport uses:
//! what a message holds while it runs (read from the method table), the
//! places of calls in flight and the refusal of new calls once draining
//! begins, running a request beside the reading of the next ones, and the
//! grace period at shutdown. A transport then only reads its bytes and
//! writes its answers.
//!
//! Only a request that runs long is spawned: a short one is answered in
//! place, which is one task and one wake-up less per request.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

use crate::protocol::jsonrpc::{Incoming, Message};
use crate::protocol::mcp::dispatch::{Long, long_kind};

/// What a body (one message or a batch) holds while it runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Holds {
    call: bool,
    wait: bool,
}

impl Holds {
    /// Asks the method table about each request of `incoming`.
    pub fn of(incoming: &Incoming) -> Holds {
        let mut holds = Holds::default();
        let mut add = |message: &Message| match long_kind(message) {
            Some(Long::Call) => holds.call = true,
            Some(Long::Wait) => holds.wait = true,
            None => {}
        };
        match incoming {
            Incoming::Single(message) => add(message),
            Incoming::Batch(messages) => messages.iter().for_each(add),
            Incoming::Error(_) => {}
        }
        holds
    }

    /// It runs a guest: it takes one of the calls in flight.
    pub fn call(self) -> bool {
        self.call
    }

    /// It waits (for a task, for notifications) without running a guest.
    pub fn wait(self) -> bool {
        self.wait
    }

    /// It may take long, so it should not hold up the messages after it.
    pub fn runs_long(self) -> bool {
        self.call || self.wait
    }
}

/// Why a request that would run a call was not let in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("the server is shutting down and takes no new calls")]
    Draining,
    #[error("too many calls in flight")]
    Busy,
}

/// A request's place among the calls in flight (none for a request that
/// runs no call); given back when dropped.
#[derive(Debug)]
pub struct Place {
    _permit: Option<OwnedSemaphorePermit>,
}

/// A transport's calls: their places, whether it drains, and the requests
/// it runs beside its reading.
pub struct Calls {
    /// The places of calls in flight and their number; `None`: no limit.
    places: Option<(Arc<Semaphore>, usize)>,
    draining: AtomicBool,
    spawned: Arc<Spawned>,
}

impl Calls {
    /// Calls without a limit (a transport with a single client).
    pub fn unlimited() -> Calls {
        Calls::with_places(None)
    }

    /// At most `max` calls in flight; more are refused as busy.
    pub fn limited(max: usize) -> Calls {
        Calls::with_places(Some((Arc::new(Semaphore::new(max)), max)))
    }

    fn with_places(places: Option<(Arc<Semaphore>, usize)>) -> Calls {
        Calls {
            places,
            draining: AtomicBool::new(false),
            spawned: Arc::new(Spawned::default()),
        }
    }

    /// Lets in a body that holds `holds`: one that runs a call takes a
    /// place, and is refused while draining or when none is free; one that
    /// only waits takes none, so idle listeners never starve calls.
    pub fn admit(&self, holds: Holds) -> Result<Place, Refused> {
        match holds.call {
            true => self.admit_call(),
            false => Ok(Place { _permit: None }),
        }
    }

    /// Lets in a request that runs a call (see [`Calls::admit`]).
    pub fn admit_call(&self) -> Result<Place, Refused> {
        if self.is_draining() {
            return Err(Refused::Draining);
        }
        match &self.places {
            None => Ok(Place { _permit: None }),
            Some((places, _)) => match places.clone().try_acquire_owned() {
                Ok(permit) => Ok(Place {
                    _permit: Some(permit),
                }),
                Err(_) => Err(Refused::Busy),
            },
        }
    }

    /// Places taken now (0 without a limit).
    pub fn held(&self) -> usize {
        self.places
            .as_ref()
            .map_or(0, |(places, max)| max - places.available_permits())
    }

    /// Whether shutdown has begun: new calls are refused.
    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Relaxed)
    }

    /// Begins shutdown: new calls are refused from now on.
    pub fn start_draining(&self) {
        self.draining.store(true, Ordering::Relaxed);
    }

    /// Runs `work` beside the transport's reading, counted until it ends
    /// (or panics).
    pub fn spawn(&self, work: impl Future<Output = ()> + Send + 'static) {
        self.spawned.count.fetch_add(1, Ordering::AcqRel);
        let ended = Ended(self.spawned.clone());
        tokio::spawn(async move {
            let _ended = ended;
            work.await;
        });
    }

    /// Spawned requests not yet ended.
    pub fn running(&self) -> usize {
        self.spawned.count.load(Ordering::Acquire)
    }

    /// Resolves once no spawned request runs.
    pub async fn idle(&self) {
        loop {
            // Registered before the count is read, so an end between the
            // two is not missed.
            let ended = self.spawned.idle.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            if self.running() == 0 {
                return;
            }
            ended.await;
        }
    }

    /// Shutdown of a transport that has stopped reading: refuses new calls,
    /// gives the spawned requests `grace` to answer, then runs `stop` (their
    /// calls answer that the server is shutting down) and waits for them.
    pub async fn drain(&self, grace: Duration, stop: impl FnOnce()) {
        self.start_draining();
        let stop = || {
            tracing::warn!(
                "cancelling {} call(s) still running after the grace period",
                self.running()
            );
            stop();
        };
        finish_within(self.idle(), grace, stop, None).await;
    }
}

/// Waits for `finished` up to `grace`; past it, runs `stop` and waits
/// again, up to `after` (`None`: as long as it takes). Whether `finished`
/// resolved.
pub async fn finish_within(
    finished: impl Future<Output = ()>,
    grace: Duration,
    stop: impl FnOnce(),
    after: Option<Duration>,
) -> bool {
    tokio::pin!(finished);
    if tokio::time::timeout(grace, &mut finished).await.is_ok() {
        return true;
    }
    stop();
    match after {
        None => {
            finished.await;
            true
        }
        Some(after) => tokio::time::timeout(after, finished).await.is_ok(),
    }
}

/// The count of spawned requests, and a wake-up when it reaches 0.
#[derive(Default)]
struct Spawned {
    count: AtomicUsize,
    idle: Notify,
}

/// Held by a spawned request: its end is counted even if it panics or is
/// dropped.
struct Ended(Arc<Spawned>);

impl Drop for Ended {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::jsonrpc;

    fn holds(body: &str) -> Holds {
        Holds::of(&jsonrpc::parse(body.as_bytes()))
    }

    #[test]
    fn the_method_table_says_what_a_body_holds() {
        let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}"#;
        assert!(holds(call).call() && !holds(call).wait());
        let list = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
        assert!(!holds(list).runs_long());
        // A notification is never long, whatever its method.
        let note = r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x"}}"#;
        assert!(!holds(note).runs_long());
        let batch = format!("[{list},{call}]");
        assert!(holds(&batch).call());
    }

    #[test]
    fn draining_refuses_calls_not_waits() {
        let calls = Calls::unlimited();
        let call = Holds {
            call: true,
            wait: false,
        };
        let wait = Holds {
            call: false,
            wait: true,
        };
        assert!(calls.admit(call).is_ok());
        calls.start_draining();
        assert_eq!(calls.admit(call).err(), Some(Refused::Draining));
        assert_eq!(calls.admit_call().err(), Some(Refused::Draining));
        assert!(calls.admit(wait).is_ok());
    }

    #[test]
    fn places_are_limited_and_given_back() {
        let calls = Calls::limited(1);
        let place = calls.admit_call().expect("a free place");
        assert_eq!(calls.held(), 1);
        assert_eq!(calls.admit_call().err(), Some(Refused::Busy));
        drop(place);
        assert_eq!(calls.held(), 0);
        assert!(calls.admit_call().is_ok());
    }

    #[tokio::test]
    async fn drain_waits_for_spawned_requests() {
        let calls = Calls::unlimited();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        calls.spawn(async move {
            let _ = rx.await;
        });
        // A panicking request still counts as ended.
        calls.spawn(async { panic!("a handler's bug") });
        assert!(calls.running() >= 1);
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            let _ = tx.send(());
        });
        let mut stopped = false;
        calls
            .drain(Duration::from_secs(10), || stopped = true)
            .await;
        assert!(!stopped, "ended within the grace period");
        assert_eq!(calls.running(), 0);
        assert!(calls.is_draining());
    }

    #[tokio::test]
    async fn past_the_grace_period_drain_stops_the_rest() {
        let calls = Calls::unlimited();
        let stop = Arc::new(Notify::new());
        let stopped = stop.clone();
        calls.spawn(async move { stopped.notified().await });
        calls
            .drain(Duration::from_millis(10), || stop.notify_one())
            .await;
        assert_eq!(calls.running(), 0);
    }

    #[tokio::test]
    async fn finish_within_gives_up_after_its_second_wait() {
        let mut stopped = false;
        let done = finish_within(
            std::future::pending(),
            Duration::from_millis(5),
            || stopped = true,
            Some(Duration::from_millis(5)),
        )
        .await;
        assert!(stopped && !done);
    }
}
