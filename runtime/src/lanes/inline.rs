//! Running a short call on the async thread that received it, instead of
//! handing it to a lane.
//!
//! A hand-off costs two wake-ups (the lane's, then the async thread's for
//! the answer): at one connection, a fifth of the calls per second
//! (BENCHMARKS.md, "The unsandboxed floor"). Under load the hand-off is
//! what keeps the async threads free for the other connections. So a call
//! runs where it arrived only when all of this holds:
//! - its tool may ([`Pace`]): its component imports neither `wasi:sockets`
//!   nor `wasi:http` (their host functions wait on a Tokio runtime of
//!   their own, which cannot start on an async thread), and its recent
//!   runs were short;
//! - the server is otherwise idle: no other call in flight (the caller
//!   says), nothing running or queued on the lanes;
//! - no other call runs inline: one async thread at most is held, the
//!   others serve everything else;
//! - the runtime has worker threads to spare (not a current-thread one).
//!
//! A call that runs long all the same holds one async thread for at most
//! its time limit; an inline run of [`BAR`] or more keeps its tool on the
//! lanes for as long as it is loaded, so a guest cannot build up a short
//! pace to hold an async thread again and again. A wait inside the host
//! (a clock, a stream, a file) goes through [`blocking`], which hands the
//! async thread's other work to another thread for as long as it lasts.
//!
//! Not the work of the task that runs the call, though: whatever else that
//! task would do stands still until the guest returns. So a call that may
//! ask its client (its grant has `ask`) runs inline only in a task of its
//! own, never inside the future that awaits it
//! (`PreparedCall::run_on_lane`): its question reaches the client through
//! what only that future's task moves — the SSE answer of an HTTP POST is
//! written by the task that polls the call — and a 2026-07-28 call becomes
//! a task by a timer racing it there. Held in place, the question would
//! wait unsent until the call's time limit. Over stdio a writer task of its
//! own carries the question either way. A call that may not ask waits on
//! nothing a transport delivers (its notifications are dropped, never
//! waited for, when its stream is full; a cancellation only sets a flag
//! that the guest's epoch checks and waits read), so it still runs in place.

use std::cell::Cell;
use std::marker::PhantomData;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use tokio::runtime::{Handle, RuntimeFlavor};

/// A tool whose recent runs took longer than this goes to the lanes: under
/// [`super::LONG`], and short enough that holding an async thread this long
/// (only while no other call is in flight) delays no other connection
/// noticeably. It admits an interpreter guest (the componentize-py
/// example's call: 0.75 ms): at one connection inline it answered in 1.1
/// ms at the median against 2.2 ms through a lane (BENCHMARKS.md, Levers).
pub const SHORT: Duration = Duration::from_micros(1500);

/// An inline run this long keeps its tool on the lanes for good: thirteen
/// times [`SHORT`], which no short tool takes unless the machine stalls it.
pub const BAR: Duration = Duration::from_millis(20);

/// `0` runs no call inline (for comparing, as with [`super::LANES_VAR`]);
/// `always` runs inline every call that may run there, whatever its tool's
/// pace (for a test that needs a call inline on a loaded machine, where a
/// debug build's runs are not always short); unset or anything else: by
/// pace, the default. Read once.
pub const INLINE_VAR: &str = "AIRLOCK_INLINE";

/// Whether a tool's calls may run inline: what its component can reach,
/// and how long its recent runs took.
#[derive(Debug)]
pub struct Pace {
    /// The component imports nothing that waits on a runtime of its own.
    eligible: bool,
    /// Set for good by an inline run of [`BAR`] or more.
    barred: AtomicBool,
    /// A maximum of the recent runs' durations (microseconds) that forgets
    /// an eighth of itself with every run: after a 6 ms run, the tool's
    /// next ten or so calls run on the lanes.
    recent: AtomicU64,
}

impl Pace {
    /// The pace of a new tool of a component with these `imports`
    /// (`wasi:io/poll@0.2.6`, …): not yet short, so its first few calls
    /// run on the lanes and are measured there.
    pub fn new(imports: &[String]) -> Self {
        let eligible = !imports
            .iter()
            .any(|i| i.starts_with("wasi:sockets/") || i.starts_with("wasi:http/"));
        Pace {
            eligible,
            barred: AtomicBool::new(false),
            recent: AtomicU64::new(micros(SHORT) * 2),
        }
    }

    /// Counts one run of the tool that took `took`. A plain load and store,
    /// not a read-modify-write: every call of every lane writes here, and
    /// a run lost to a race between two of them changes nothing that
    /// matters.
    pub fn record(&self, took: Duration) {
        if took >= BAR && INLINE.get() {
            self.barred.store(true, Ordering::Relaxed);
        }
        let recent = self.recent.load(Ordering::Relaxed);
        let next = micros(took).max(recent - recent / 8);
        if next != recent {
            self.recent.store(next, Ordering::Relaxed);
        }
    }

    /// Whether the tool's calls may run inline now.
    pub fn is_short(&self) -> bool {
        self.eligible
            && self.recent.load(Ordering::Relaxed) <= micros(SHORT)
            && !self.barred.load(Ordering::Relaxed)
    }
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// Set while some call runs inline, anywhere in the process.
static HELD: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// Set while this thread runs a call inline.
    static INLINE: Cell<bool> = const { Cell::new(false) };
}

/// Held while a call runs inline on this thread; dropping it ends that.
/// Not `Send`: it marks the thread it was made on.
pub struct Inline {
    _thread: PhantomData<*const ()>,
}

impl Inline {
    /// Takes the one place for an inline call, when the call's tool has
    /// the `pace` for it, the call is `alone` in the process, the lanes
    /// are idle and this is a worker of a multi-threaded runtime.
    pub fn try_start(pace: &Pace, alone: impl FnOnce() -> bool) -> Option<Inline> {
        let paced = match mode() {
            Mode::Off => return None,
            Mode::Paced => pace.is_short(),
            Mode::Always => pace.eligible,
        };
        // The cheap checks first: most calls of a busy server stop at `alone`.
        if !paced || !alone() || !on_worker_thread() {
            return None;
        }
        if !super::global()?.idle() {
            return None;
        }
        Self::take()
    }

    /// The one place, if no other call holds it; marks this thread.
    fn take() -> Option<Inline> {
        HELD.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .ok()?;
        INLINE.set(true);
        Some(Inline {
            _thread: PhantomData,
        })
    }
}

/// Whether this thread belongs to a multi-threaded Tokio runtime (whose
/// other workers go on serving while this one runs a call).
fn on_worker_thread() -> bool {
    Handle::try_current().is_ok_and(|h| h.runtime_flavor() == RuntimeFlavor::MultiThread)
}

impl Drop for Inline {
    fn drop(&mut self) {
        INLINE.set(false);
        HELD.store(false, Ordering::Release);
    }
}

/// Runs `wait`, a host call that blocks its thread until something
/// happens (and may start a Tokio runtime of its own to wait on): on a
/// thread running a call inline, inside [`tokio::task::block_in_place`],
/// so that the async thread's other work moves to another thread for the
/// wait and a runtime may be entered; elsewhere (a lane), as it is.
pub fn blocking<R>(wait: impl FnOnce() -> R) -> R {
    if INLINE.get() {
        tokio::task::block_in_place(wait)
    } else {
        wait()
    }
}

/// What [`INLINE_VAR`] says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Off,
    Paced,
    Always,
}

fn mode() -> Mode {
    static MODE: OnceLock<Mode> = OnceLock::new();
    *MODE.get_or_init(
        || match std::env::var(INLINE_VAR).as_deref().map(str::trim) {
            Ok("0") => Mode::Off,
            Ok("always") => Mode::Always,
            _ => Mode::Paced,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn imports(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_new_tool_is_not_short_until_its_runs_say_so() {
        let pace = Pace::new(&imports(&["wasi:io/poll@0.2.6"]));
        assert!(!pace.is_short(), "unmeasured");
        let mut runs = 0;
        while !pace.is_short() {
            pace.record(Duration::from_micros(20));
            runs += 1;
            assert!(runs < 20, "twenty short runs did not make it short");
        }
        assert!(runs > 1, "one short run made a new tool short");
    }

    #[test]
    fn an_interpreter_guests_millisecond_runs_are_short() {
        // The componentize-py example's call takes 0.75 ms, 1.1 ms when the
        // machine is busy.
        let pace = Pace::new(&imports(&["wasi:io/poll@0.2.6"]));
        for _ in 0..20 {
            pace.record(Duration::from_micros(1100));
        }
        assert!(pace.is_short());
    }

    #[test]
    fn a_slow_run_keeps_a_tool_on_the_lanes_for_dozens() {
        let pace = Pace::new(&[]);
        for _ in 0..20 {
            pace.record(Duration::from_micros(20));
        }
        assert!(pace.is_short());
        pace.record(SHORT * 4);
        let mut runs = 0;
        while !pace.is_short() {
            pace.record(Duration::from_micros(20));
            runs += 1;
            assert!(runs < 100, "a slow run was never forgotten");
        }
        // Four times SHORT forgets an eighth a run: 11 runs to fall under it.
        assert!(
            runs >= 9,
            "a run of 4 × SHORT was forgotten after {runs} runs"
        );
    }

    #[test]
    fn a_long_inline_run_keeps_a_tool_on_the_lanes_for_good() {
        let pace = Pace::new(&[]);
        for _ in 0..20 {
            pace.record(Duration::from_micros(20));
        }
        // On a lane, a long run is forgotten like any other.
        pace.record(BAR);
        for _ in 0..100 {
            pace.record(Duration::from_micros(20));
        }
        assert!(pace.is_short(), "a long run on a lane");
        // Inline (this thread marked as `Inline` marks it), it is not.
        INLINE.set(true);
        pace.record(BAR);
        INLINE.set(false);
        for _ in 0..10_000 {
            pace.record(Duration::from_micros(20));
        }
        assert!(!pace.is_short(), "a long run inline");
    }

    #[test]
    fn components_that_reach_the_network_never_run_inline() {
        for import in [
            "wasi:sockets/udp-create-socket@0.2.6",
            "wasi:http/outgoing-handler@0.2.6",
        ] {
            let pace = Pace::new(&imports(&["wasi:io/poll@0.2.6", import]));
            for _ in 0..20 {
                pace.record(Duration::from_micros(20));
            }
            assert!(!pace.is_short(), "{import}");
        }
    }

    #[test]
    fn only_a_multi_threaded_runtime_lends_its_thread() {
        assert!(!on_worker_thread(), "outside a runtime");
        let current = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        current.block_on(async { assert!(!on_worker_thread(), "current-thread runtime") });
        let multi = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .expect("runtime");
        multi.block_on(async { assert!(on_worker_thread()) });
    }

    #[test]
    fn a_call_alone_or_of_a_slow_tool_never_asks_for_the_place() {
        let pace = Pace::new(&[]);
        assert!(
            Inline::try_start(&pace, || true).is_none(),
            "a tool not yet measured"
        );
        for _ in 0..20 {
            pace.record(Duration::from_micros(20));
        }
        assert!(
            Inline::try_start(&pace, || false).is_none(),
            "another call in flight"
        );
    }

    /// One inline call at a time; a wait inside it may start a runtime of
    /// its own, as wasmtime-wasi's waits do (which panics on a worker
    /// thread without `block_in_place`).
    #[test]
    fn one_call_inline_at_a_time_and_its_waits_may_block() {
        let multi = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .expect("runtime");
        multi.block_on(async {
            tokio::spawn(async {
                let first = Inline::take().expect("the place is free");
                assert!(Inline::take().is_none(), "a second one at once");
                let waited = blocking(|| wasmtime_wasi::runtime::in_tokio(async { 7 }));
                assert_eq!(waited, 7);
                drop(first);
                assert!(Inline::take().is_some(), "the place is free again");
            })
            .await
            .expect("the task ran");
        });
    }
}
