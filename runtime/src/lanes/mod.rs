//! Lanes: the threads guest calls run on.
//!
//! A call blocks its thread while the guest runs, so the async server hands
//! it to another thread. tokio's blocking pool parks that thread after every
//! call and wakes one for the next: two context switches per call, which on
//! a busy two-core machine cost more than the call itself (BENCHMARKS.md,
//! "Lanes"). Lanes keep one thread per core pulling calls from one queue;
//! under load they rarely park, and handing a call over is a push.
//!
//! A call that blocks for long — a guest sleeping or waiting on the network —
//! must not hold up the calls queued behind it. A watcher looks at the lanes
//! every [`LONG`] while there is work: whenever calls wait and fewer than
//! `width` threads are free of long calls, it adds threads; and when no call
//! has finished since its last look (every lane is blocked), each call that
//! has waited [`LONG`] gets a thread of its own, so many blocking calls at
//! once start as fast as with a thread per call. Calls that wait because the
//! CPUs are busy get no extra threads: the queue moves, and more threads
//! would only share the same cores. A thread beyond `width` ends as soon as
//! `width` others are free of long calls, or after [`KEEP`] without work.
//!
//! A short call that finds the server otherwise idle skips the lanes and
//! runs on the async thread that received it ([`inline`]).

mod inline;

pub use inline::{INLINE_VAR, Inline, Pace, SHORT, blocking};

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// A call running longer than this no longer counts as keeping its lane.
pub const LONG: Duration = Duration::from_millis(2);
/// How long a thread beyond the lanes' width waits for work before it ends.
pub const KEEP: Duration = Duration::from_secs(10);
/// The most threads at once (tokio's blocking pool has the same bound).
const MAX_THREADS: usize = 512;

type Job = Box<dyn FnOnce() + Send>;

/// A pool of threads for blocking work, sized for short jobs. Dropping it
/// lets the jobs already queued finish, then its threads end.
pub struct Lanes {
    shared: Arc<Shared>,
}

struct Shared {
    state: Mutex<State>,
    /// Idle threads wait here for work.
    work: Condvar,
    /// The watcher waits here while nothing runs.
    watch: Condvar,
    width: usize,
    long: Duration,
}

#[derive(Default)]
struct State {
    /// Jobs waiting, with when they came.
    queue: VecDeque<(Instant, Job)>,
    /// When each thread's current job started; `None` while it waits.
    /// A thread keeps its index for its lifetime; ended threads leave a
    /// reusable `None`.
    started: Vec<Option<Instant>>,
    /// Indices in `started` that belong to no thread.
    vacant: Vec<usize>,
    threads: usize,
    /// Threads waiting for work, and how many of them have been signalled
    /// but not yet woken (so two jobs do not count on the same thread).
    idle: usize,
    wakeups: usize,
    /// Jobs finished so far: the watcher tells blocked lanes (no progress)
    /// from busy ones.
    finished: u64,
    watcher: Watcher,
    /// Set when the lanes are dropped: threads end once the queue is empty.
    closed: bool,
}

#[derive(Default, PartialEq)]
enum Watcher {
    #[default]
    NotStarted,
    Watching,
    Asleep,
}

/// The lanes every call shares, one per core. (On two cores, one lane
/// — leaving a core to the async threads — looked better in single runs;
/// medians of interleaved rounds put two lanes ahead: BENCHMARKS.md, "Lanes".)
///
/// `None` when the environment variable [`LANES_VAR`] is `0`: calls then
/// go to tokio's blocking pool, as before lanes. Another number sets the
/// width. Both exist so that the benchmarks can compare; the default is
/// what they chose.
pub fn global() -> Option<&'static Lanes> {
    static LANES: OnceLock<Option<Lanes>> = OnceLock::new();
    LANES
        .get_or_init(|| {
            let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
            let width = match std::env::var(LANES_VAR).ok().map(|v| v.trim().parse()) {
                None => cores,
                Some(Ok(0)) => return None,
                Some(Ok(width)) => width,
                Some(Err(_)) => {
                    tracing::warn!("{LANES_VAR} is not a number; using the default lanes");
                    cores
                }
            };
            Some(Lanes::new(width, LONG))
        })
        .as_ref()
}

/// Runs `job` on the [`global`] lanes, or on tokio's blocking pool when
/// lanes are off (then it must be called inside a tokio runtime).
pub fn spawn(job: impl FnOnce() + Send + 'static) {
    match global() {
        Some(lanes) => lanes.spawn(job),
        None => drop(tokio::task::spawn_blocking(job)),
    }
}

/// Sets the lanes' width (`0`: tokio's blocking pool instead); read once.
pub const LANES_VAR: &str = "AIRLOCK_LANES";

impl Lanes {
    /// Lanes `width` threads wide; a job running longer than `long` frees
    /// its lane (another thread takes over the queue).
    pub fn new(width: usize, long: Duration) -> Self {
        Lanes {
            shared: Arc::new(Shared {
                state: Mutex::new(State::default()),
                work: Condvar::new(),
                watch: Condvar::new(),
                width: width.max(1),
                long,
            }),
        }
    }

    /// Runs `job` on a lane. A job that panics is dropped (the thread
    /// lives on); whoever waits for its result sees its channel closed.
    pub fn spawn(&self, job: impl FnOnce() + Send + 'static) {
        let shared = &self.shared;
        let mut state = shared.lock();
        state.queue.push_back((Instant::now(), Box::new(job)));
        if state.idle > state.wakeups {
            state.wakeups += 1;
            drop(state);
            shared.work.notify_one();
            return;
        }
        if state.threads < shared.width {
            shared.start_thread(&mut state);
            return;
        }
        // Every thread is busy: the job waits. Make sure someone watches
        // for lanes held by long calls.
        match state.watcher {
            Watcher::NotStarted => {
                state.watcher = Watcher::Watching;
                let watched = shared.clone();
                let started = std::thread::Builder::new()
                    .name("airlock-lanes".into())
                    .spawn(move || watched.watch());
                if let Err(err) = started {
                    tracing::error!("cannot start the lanes' watcher: {err}");
                    state.watcher = Watcher::NotStarted;
                }
            }
            Watcher::Asleep => {
                state.watcher = Watcher::Watching;
                drop(state);
                shared.watch.notify_one();
            }
            Watcher::Watching => {}
        }
    }

    /// How many threads are alive.
    pub fn threads(&self) -> usize {
        self.shared.lock().threads
    }

    /// Whether no job runs or waits.
    pub fn idle(&self) -> bool {
        let state = self.shared.lock();
        state.queue.is_empty() && state.started.iter().all(Option::is_none)
    }
}

impl Drop for Lanes {
    fn drop(&mut self) {
        self.shared.lock().closed = true;
        self.shared.work.notify_all();
        self.shared.watch.notify_all();
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Jobs run outside the lock and panics are caught, so a poisoned
        // lock still holds consistent state.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn start_thread(self: &Arc<Self>, state: &mut State) {
        if state.threads >= MAX_THREADS {
            return;
        }
        let index = match state.vacant.pop() {
            Some(index) => index,
            None => {
                state.started.push(None);
                state.started.len() - 1
            }
        };
        let shared = self.clone();
        let spawned = std::thread::Builder::new()
            .name("airlock-call".into())
            .spawn(move || shared.work(index));
        match spawned {
            Ok(_) => state.threads += 1,
            Err(err) => {
                tracing::error!("cannot start a thread for calls: {err}");
                state.vacant.push(index);
            }
        }
    }

    /// A thread's life: take jobs until there has been none for [`KEEP`]
    /// and the lanes have more threads than their width.
    fn work(&self, index: usize) {
        let mut state = self.lock();
        loop {
            if let Some((_, job)) = state.queue.pop_front() {
                state.started[index] = Some(Instant::now());
                drop(state);
                let _ = catch_unwind(AssertUnwindSafe(job));
                state = self.lock();
                state.started[index] = None;
                state.finished += 1;
                if self.surplus(&state) {
                    state.threads -= 1;
                    state.vacant.push(index);
                    return;
                }
                continue;
            }
            if state.closed {
                state.threads -= 1;
                return;
            }
            state.idle += 1;
            let (next, waited) = self
                .work
                .wait_timeout(state, KEEP)
                .unwrap_or_else(|p| p.into_inner());
            state = next;
            state.idle -= 1;
            state.wakeups = state.wakeups.saturating_sub(1);
            if waited.timed_out() && state.queue.is_empty() && state.threads > self.width {
                state.threads -= 1;
                state.vacant.push(index);
                return;
            }
        }
    }

    /// Whether a thread that just finished its job is more than the lanes
    /// need: `width` other threads are free of long calls. (Extra threads
    /// were added for blocked lanes; once those unblock, extra threads
    /// pulling from the queue would only share the same cores.)
    fn surplus(&self, state: &State) -> bool {
        if state.threads <= self.width {
            return false;
        }
        state
            .threads
            .saturating_sub(1 + self.long_jobs(state, Instant::now()))
            >= self.width
    }

    /// How many jobs have run for [`Self::long`] or more at `now`.
    fn long_jobs(&self, state: &State, now: Instant) -> usize {
        let started = state.started.iter().flatten();
        started
            .filter(|started| now.duration_since(**started) >= self.long)
            .count()
    }

    /// Adds threads while calls wait and long calls hold the lanes; sleeps
    /// once nothing has waited for [`QUIET`] ticks. (Sleeping between every
    /// two calls would mean waking it for nearly every call.)
    fn watch(self: Arc<Self>) {
        const QUIET: u32 = 25;
        let mut quiet = 0;
        let mut state = self.lock();
        let mut finished = state.finished;
        while !state.closed {
            let now = Instant::now();
            let free = state.threads - self.long_jobs(&state, now);
            // Calls waiting while others finish wait for a CPU, not for a
            // blocked lane: they get no thread of their own.
            let stuck = state.finished == finished;
            finished = state.finished;
            let stale = if stuck {
                state
                    .queue
                    .iter()
                    .take_while(|(came, _)| now.duration_since(*came) >= self.long)
                    .count()
            } else {
                0
            };
            let wanted = stale.max(self.width.saturating_sub(free).min(state.queue.len()));
            for _ in 0..wanted {
                self.start_thread(&mut state);
            }
            // Nothing waiting, nothing to add a thread for: a job that runs
            // on and on (a cordon worker's reading, blocked on its input)
            // needs no watching; the next job that must wait wakes it.
            quiet = if state.queue.is_empty() { quiet + 1 } else { 0 };
            if quiet >= QUIET {
                quiet = 0;
                state.watcher = Watcher::Asleep;
                while state.watcher == Watcher::Asleep && !state.closed {
                    state = self.watch.wait(state).unwrap_or_else(|p| p.into_inner());
                }
            } else {
                state = self
                    .watch
                    .wait_timeout(state, self.long)
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn jobs_run_and_deliver() {
        let lanes = Lanes::new(2, LONG);
        let (tx, rx) = mpsc::channel();
        for i in 0..100 {
            let tx = tx.clone();
            lanes.spawn(move || tx.send(i).expect("send"));
        }
        let mut got: Vec<i32> = (0..100)
            .map(|_| rx.recv_timeout(Duration::from_secs(10)).expect("a job ran"))
            .collect();
        got.sort_unstable();
        assert_eq!(got, (0..100).collect::<Vec<_>>());
        assert!(lanes.threads() <= 2, "short jobs need no extra threads");
    }

    /// Jobs that block longer than `long` on every lane do not hold up the
    /// queue: the watcher adds threads and the short job behind them runs.
    #[test]
    fn blocked_lanes_do_not_hold_up_the_queue() {
        let lanes = Lanes::new(2, Duration::from_millis(5));
        let (release, blocked) = mpsc::channel::<()>();
        let blocked = Arc::new(Mutex::new(blocked));
        for _ in 0..2 {
            let blocked = blocked.clone();
            lanes.spawn(move || {
                let _ = blocked.lock().expect("lock").recv();
            });
        }
        let (tx, rx) = mpsc::channel();
        lanes.spawn(move || tx.send("short").expect("send"));
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(10)),
            Ok("short"),
            "the short job waited behind the blocked lanes"
        );
        assert!(lanes.threads() >= 3);
        drop(release);
    }

    /// Many blocking jobs at once each get a thread soon, as with a thread
    /// per job: 40 jobs that each wait until all 40 have started.
    #[test]
    fn many_blocking_jobs_run_side_by_side() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let lanes = Lanes::new(2, Duration::from_millis(5));
        let started = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = mpsc::channel();
        for _ in 0..40 {
            let started = started.clone();
            let tx = tx.clone();
            lanes.spawn(move || {
                started.fetch_add(1, Ordering::SeqCst);
                let give_up = Instant::now() + Duration::from_secs(10);
                while started.load(Ordering::SeqCst) < 40 && Instant::now() < give_up {
                    std::thread::sleep(Duration::from_millis(1));
                }
                tx.send(started.load(Ordering::SeqCst) == 40).expect("send");
            });
        }
        for _ in 0..40 {
            let saw_all = rx
                .recv_timeout(Duration::from_secs(20))
                .expect("a job ended");
            assert!(saw_all, "a job gave up waiting for the others to start");
        }
    }

    /// A job that runs on and on with nothing queued behind it (a cordon
    /// worker's reading, blocked on its input between calls) does not keep
    /// the watcher ticking: it sleeps, and a job that must wait wakes it.
    #[test]
    fn the_watcher_sleeps_while_nothing_waits_even_if_a_job_runs_on() {
        let lanes = Lanes::new(1, Duration::from_millis(2));
        let (release, held) = mpsc::channel::<()>();
        lanes.spawn(move || {
            let _ = held.recv();
        });
        // A second job waits behind it, which starts the watcher; it gets a
        // thread of its own (the first job holds the lane) and ends.
        let (tx, rx) = mpsc::channel();
        lanes.spawn(move || tx.send(()).expect("send"));
        rx.recv_timeout(Duration::from_secs(10))
            .expect("the second job ran");
        let asleep = |lanes: &Lanes| lanes.shared.lock().watcher == Watcher::Asleep;
        let until = Instant::now() + Duration::from_secs(10);
        while !asleep(&lanes) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(
            asleep(&lanes),
            "the watcher ticks on while only a held job runs"
        );
        // A job that must wait wakes it again.
        let (tx, rx) = mpsc::channel();
        lanes.spawn(move || tx.send(()).expect("send"));
        rx.recv_timeout(Duration::from_secs(10))
            .expect("a job after it ran");
        drop(release);
    }

    /// Calls that wait only because the lanes are busy get no threads of
    /// their own: a queue that moves is not blocked. 100 jobs of 2 ms on one
    /// lane wait up to 200 ms, four times `long`; adding a thread per stale
    /// job (as the watcher once did) grew the lanes to dozens of threads.
    #[test]
    fn a_busy_queue_does_not_grow_the_lanes() {
        let lanes = Lanes::new(1, Duration::from_millis(50));
        let (tx, rx) = mpsc::channel();
        for _ in 0..100 {
            let shared = lanes.shared.clone();
            let tx = tx.clone();
            lanes.spawn(move || {
                std::thread::sleep(Duration::from_millis(2));
                tx.send(shared.lock().threads).expect("send");
            });
        }
        let most = (0..100)
            .map(|_| rx.recv_timeout(Duration::from_secs(20)).expect("a job ran"))
            .max();
        // One thread more is tolerated: a job descheduled for 50 ms on a
        // loaded machine counts as long, and the watcher replaces it.
        assert!(
            most <= Some(2),
            "the lanes grew to {most:?} threads for a moving queue"
        );
    }

    /// Threads added for a blocked lane end once it unblocks, instead of
    /// pulling from the queue beside the lanes.
    #[test]
    fn extra_threads_end_when_the_lanes_unblock() {
        let lanes = Lanes::new(1, Duration::from_millis(5));
        let (release, blocked) = mpsc::channel::<()>();
        let (started, running) = mpsc::channel();
        lanes.spawn(move || {
            started.send(()).expect("send");
            let _ = blocked.recv();
        });
        running
            .recv_timeout(Duration::from_secs(10))
            .expect("the blocking job started");
        // The one lane is held from here on: the short job runs only on a
        // thread added for it. (Not `threads() >= 2` afterwards: the added
        // thread may already have ended as surplus, when the blocked job
        // had run less than `long` as it finished — a loaded machine's
        // schedule.)
        let (tx, rx) = mpsc::channel();
        let short = tx.clone();
        lanes.spawn(move || short.send(()).expect("send"));
        rx.recv_timeout(Duration::from_secs(10))
            .expect("the short job ran beside the blocked one");
        drop(release);
        let give_up = Instant::now() + Duration::from_secs(10);
        while lanes.threads() > 1 && Instant::now() < give_up {
            let tx = tx.clone();
            lanes.spawn(move || tx.send(()).expect("send"));
            let _ = rx.recv_timeout(Duration::from_secs(10));
        }
        assert_eq!(lanes.threads(), 1, "the extra thread did not end");
    }

    #[test]
    fn lanes_are_idle_only_with_nothing_running_or_queued() {
        let lanes = Lanes::new(1, Duration::from_secs(3600));
        assert!(lanes.idle(), "new lanes");
        let (release, blocked) = mpsc::channel::<()>();
        let (started, running) = mpsc::channel();
        lanes.spawn(move || {
            started.send(()).expect("send");
            let _ = blocked.recv();
        });
        running
            .recv_timeout(Duration::from_secs(10))
            .expect("the job started");
        assert!(!lanes.idle(), "a job runs");
        let (tx, rx) = mpsc::channel();
        lanes.spawn(move || tx.send(()).expect("send"));
        assert!(!lanes.idle(), "a job runs and one waits");
        drop(release);
        rx.recv_timeout(Duration::from_secs(10))
            .expect("the queued job ran");
        let give_up = Instant::now() + Duration::from_secs(10);
        while !lanes.idle() && Instant::now() < give_up {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(lanes.idle(), "both jobs ended");
    }

    #[test]
    fn dropped_lanes_finish_their_queue_and_end() {
        let lanes = Lanes::new(1, Duration::from_secs(3600));
        let shared = lanes.shared.clone();
        let (tx, rx) = mpsc::channel();
        for i in 0..10 {
            let tx = tx.clone();
            lanes.spawn(move || tx.send(i).expect("send"));
        }
        drop(lanes);
        let got: Vec<i32> = (0..10)
            .map(|_| {
                rx.recv_timeout(Duration::from_secs(10))
                    .expect("a queued job ran")
            })
            .collect();
        assert_eq!(
            got,
            (0..10).collect::<Vec<_>>(),
            "one lane runs jobs in order"
        );
        let give_up = Instant::now() + Duration::from_secs(10);
        while shared.lock().threads > 0 && Instant::now() < give_up {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(shared.lock().threads, 0, "the lane's thread ended");
    }

    #[test]
    fn a_panicking_job_leaves_the_lane_working() {
        // One lane, and no job ever counts as long: the second job can only
        // run on the thread whose job panicked.
        let lanes = Lanes::new(1, Duration::from_secs(3600));
        lanes.spawn(|| panic!("a job panicked"));
        let (tx, rx) = mpsc::channel();
        lanes.spawn(move || tx.send(1).expect("send"));
        assert_eq!(rx.recv_timeout(Duration::from_secs(10)), Ok(1));
        assert_eq!(lanes.threads(), 1);
    }
}
