//! A cordon's worker: the process that runs the guests of one cordon's
//! components, each call in a fresh instance of its own pool, for the
//! serving process at the other end of its stdin and stdout. What a guest
//! reports or asks goes back as a message of its call; the client's answer
//! comes in as one. When its stdin ends (the server let the cordon go, or
//! died) it finishes the calls it has and exits.

use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::Value;

use super::parked::Parked;
use super::wire::{
    self, Done, Ended, Frames, FromWorker, Reported, ToWorker, WireAsk, WireAskFailure,
    WireOffered, WireOutput, Work,
};
use crate::catalog::Listing;
use crate::observe::{Ask, AskFailure, CallObserver};
use crate::sandbox::{CancelToken, Ran, RunError, Teardown};
use crate::tool::Level;

/// What runs the calls: the worker's runtime, with its catalog and policy.
pub trait Runner: Send + Sync + 'static {
    /// Loads component `name` from `bytes` (replacing one of that name)
    /// and answers what its guest listed.
    fn load(&self, name: &str, path: &std::path::Path, bytes: &[u8]) -> Result<Listing, String>;

    /// Whether `work` is a call of a tool whose recent runs were short
    /// (see [`crate::lanes::Pace`]): alone in the worker, its lane keeps
    /// the reading rather than wake another lane for it.
    fn is_short(&self, component: &str, digest: &str, work: &Work) -> bool;

    /// Runs `work` in a fresh instance of `component`, whose loaded code
    /// must have `digest`.
    fn run(
        &self,
        component: &str,
        digest: &str,
        work: &Work,
        observer: Arc<dyn CallObserver>,
        cancel: CancelToken,
    ) -> (Result<Ran<Done>, RunError>, Teardown);
}

type Out = Arc<Mutex<Box<dyn Write + Send>>>;

/// Answers awaited by guests, by (call, request).
type Awaited = Arc<Mutex<HashMap<(u64, u64), mpsc::Sender<ToWorker>>>>;

/// Serves calls from `input` until it ends, then waits for those running.
///
/// No thread only reads: the reading moves from lane to lane. The lane
/// that reads a call hands the reading on (a push onto the lanes' queue,
/// which under load a busy lane takes without a wake-up) and runs the call
/// itself, so a call is not handed from a reader to a lane. A call that
/// runs long holds only its own lane: the reading waits in the queue, and
/// the lanes' watcher gives it a thread when it waited [`crate::lanes::LONG`].
/// A short call alone in the worker (one connection's) is spared even the
/// push: its lane parks the reading and reads on after it ([`Parked`]).
pub fn serve(
    runner: Arc<dyn Runner>,
    input: std::fs::File,
    output: impl Write + Send + 'static,
) -> std::io::Result<()> {
    let out: Out = Arc::new(Mutex::new(Box::new(output)));
    send(&out, &FromWorker::Ready)?;
    let serving = Arc::new(Serving {
        runner,
        out,
        awaited: Arc::default(),
        cancels: Arc::default(),
        loads: Mutex::default(),
        calls: InFlight::default(),
        parked: Arc::new(Parked::new(|reader: Reader| {
            apart(move || reader.read_on())
        })),
    });
    let (ended, end) = mpsc::channel();
    let reader = Reader {
        frames: Frames::new(input),
        serving: serving.clone(),
        ended,
        last_call: Instant::now(),
    };
    apart(move || reader.read_on());
    let read = end
        .recv()
        .unwrap_or_else(|_| Err(std::io::Error::other("the worker's reading stopped")));
    // The server let go: stop waiting for answers that will not come.
    if let Ok(mut awaited) = serving.awaited.lock() {
        awaited.clear();
    }
    let loads = serving.loads.lock().map(|mut l| std::mem::take(&mut *l));
    for load in loads.unwrap_or_default() {
        let _ = load.join();
    }
    serving.calls.wait_for_none();
    read
}

/// Runs `job` on a lane (on a thread of its own when lanes are off: a
/// worker has no async runtime whose blocking pool would take it).
fn apart(job: impl FnOnce() + Send + 'static) {
    match crate::lanes::global() {
        Some(lanes) => lanes.spawn(job),
        None => drop(std::thread::spawn(job)),
    }
}

/// What every lane of the worker shares.
struct Serving {
    runner: Arc<dyn Runner>,
    out: Out,
    awaited: Awaited,
    cancels: Arc<Mutex<HashMap<u64, CancelToken>>>,
    loads: Mutex<Vec<std::thread::JoinHandle<()>>>,
    calls: InFlight,
    /// The reading, while the lane that read a short call runs it.
    parked: Arc<Parked<Reader>>,
}

/// The reading of the worker's input, on whichever lane has it.
struct Reader {
    frames: Frames<std::fs::File>,
    serving: Arc<Serving>,
    /// Told how the input ended.
    ended: mpsc::Sender<std::io::Result<()>>,
    /// When the last call came.
    last_call: Instant,
}

/// Calls coming at least this far apart come one at a time (under load
/// they come tens of microseconds apart, and a lane woken for the reading
/// soon has the next one).
const APART: std::time::Duration = std::time::Duration::from_micros(100);

impl Reader {
    /// Reads messages until one is a call: then the reading goes on on
    /// another lane, and this one runs the call — unless the call is short
    /// and alone (calls come [`APART`], no other runs, no other message has
    /// come): then this lane parks the reading while it runs the call and
    /// reads on after it (see [`Parked`]).
    fn read_on(mut self) {
        loop {
            let message = match self.frames.read::<ToWorker>() {
                Ok(Some(message)) => message,
                Ok(None) => return drop(self.ended.send(Ok(()))),
                Err(err) => return drop(self.ended.send(Err(err))),
            };
            let handled = match message {
                ToWorker::Run {
                    id,
                    component,
                    digest,
                    work,
                    trace,
                } => {
                    let serving = self.serving.clone();
                    // One at a time, nothing else running nor come: no lane
                    // to wake.
                    let came = std::mem::replace(&mut self.last_call, Instant::now());
                    let alone =
                        came.elapsed() >= APART && serving.calls.none() && !self.frames.has_more();
                    if !(alone && serving.runner.is_short(&component, &digest, &work)) {
                        apart(move || self.read_on());
                        serving.run(id, &component, &digest, &work, trace);
                        return;
                    }
                    if let Err(reader) = serving.parked.park(self) {
                        apart(move || reader.read_on());
                    }
                    serving.run(id, &component, &digest, &work, trace);
                    match serving.parked.take_back() {
                        Some(reader) => self = reader,
                        None => return,
                    }
                    Ok(())
                }
                ToWorker::Load { id, name, path } => self.load(id, name, path),
                ToWorker::Answer { id, seq, .. } | ToWorker::Waited { id, seq, .. } => {
                    let awaited = self.serving.awaited.lock();
                    let to = awaited.ok().and_then(|mut a| a.remove(&(id, seq)));
                    if let Some(to) = to {
                        let _ = to.send(message);
                    }
                    Ok(())
                }
                ToWorker::Cancel { id, shutdown } => {
                    let cancels = self.serving.cancels.lock();
                    let token = cancels.ok().and_then(|c| c.get(&id).cloned());
                    match (token, shutdown) {
                        (Some(token), true) => token.shut_down(),
                        (Some(token), false) => token.cancel(),
                        (None, _) => {}
                    }
                    Ok(())
                }
            };
            if let Err(err) = handled {
                return drop(self.ended.send(Err(err)));
            }
        }
    }

    /// A component to load: its bytes are the next frame; compiled and
    /// listed on a thread of its own.
    fn load(&mut self, id: u64, name: String, path: std::path::PathBuf) -> std::io::Result<()> {
        let Some(bytes) = self.frames.read_raw()? else {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        };
        let (runner, out) = (self.serving.runner.clone(), self.serving.out.clone());
        let load = std::thread::Builder::new()
            .name(format!("airlock-load-{id}"))
            .spawn(move || {
                let listing = runner.load(&name, &path, &bytes);
                let _ = send(&out, &FromWorker::Listed { id, listing });
            })?;
        if let Ok(mut loads) = self.serving.loads.lock() {
            loads.push(load);
        }
        Ok(())
    }
}

impl Serving {
    /// Runs call `id` on this thread and sends its end.
    fn run(&self, id: u64, component: &str, digest: &str, work: &Work, trace: Option<String>) {
        let held = self.calls.hold();
        let cancel = CancelToken::new();
        if let Ok(mut cancels) = self.cancels.lock() {
            cancels.insert(id, cancel.clone());
        }
        let observer = Arc::new(Relayed {
            id,
            out: self.out.clone(),
            awaited: self.awaited.clone(),
            next: AtomicU64::new(0),
            parked: self.parked.clone(),
        });
        // The server's call, continued here when traced.
        let parent = trace
            .as_deref()
            .and_then(crate::telemetry::from_traceparent);
        let _trace = crate::telemetry::enter(parent.as_ref());
        let (outcome, teardown) = self.runner.run(component, digest, work, observer, cancel);
        let done = FromWorker::Done {
            id,
            outcome: outcome.map(|ran| match ran {
                Ran::Answered(Done::Output(raw)) => Ended::Answered(WireOutput::from(&raw)),
                Ran::Answered(Done::Offer(Ok(offered))) => {
                    Ended::Offered(WireOffered::from(&offered))
                }
                Ran::Answered(Done::Offer(Err(missing))) => Ended::NotFound(missing),
                Ran::Waits(asks) => Ended::Waits(asks.iter().map(WireAsk::from).collect()),
            }),
            reported: reported(&teardown),
        };
        let _ = send(&self.out, &done);
        if let Ok(mut cancels) = self.cancels.lock() {
            cancels.remove(&id);
        }
        drop(teardown);
        drop(held);
    }
}

/// The calls running, counted so that the worker ends only after them.
#[derive(Default, Clone)]
struct InFlight(Arc<(Mutex<usize>, std::sync::Condvar)>);

/// One call counted in [`InFlight`] until it is dropped.
struct Held(InFlight);

impl InFlight {
    fn hold(&self) -> Held {
        if let Ok(mut n) = self.0.0.lock() {
            *n += 1;
        }
        Held(self.clone())
    }

    /// Whether no call runs.
    fn none(&self) -> bool {
        self.0.0.lock().is_ok_and(|n| *n == 0)
    }

    fn wait_for_none(&self) {
        let (count, changed) = &*self.0;
        if let Ok(guard) = count.lock() {
            drop(changed.wait_while(guard, |n| *n > 0));
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let (count, changed) = &*(self.0).0;
        if let Ok(mut n) = count.lock() {
            *n = n.saturating_sub(1);
        }
        changed.notify_all();
    }
}

fn send(out: &Out, message: &FromWorker) -> std::io::Result<()> {
    let frame = wire::frame(message)?;
    let mut out = out
        .lock()
        .map_err(|_| std::io::Error::other("the worker's output is poisoned"))?;
    out.write_all(&frame)?;
    out.flush()
}

/// What a call's teardown says, for the serving process's record.
fn reported(teardown: &Teardown) -> Reported {
    let (log, dropped) = teardown.guest_log();
    Reported {
        guest_log: log.to_string(),
        log_dropped: dropped,
        credentials_used: teardown.credentials_used(),
        asks: teardown.asks().iter().map(Into::into).collect(),
        folder_refusals: teardown.folder_refusals(),
    }
}

/// A call's observer in the worker: everything goes to the serving
/// process as a message of the call.
struct Relayed {
    id: u64,
    out: Out,
    awaited: Awaited,
    next: AtomicU64,
    /// The reading, moved on before the call waits for an answer (which
    /// only the reading brings).
    parked: Arc<Parked<Reader>>,
}

impl Relayed {
    /// Sends `message` (made with the request's number) and waits for the
    /// answer to it; `None` when the serving process let the call go.
    fn request(&self, message: impl FnOnce(u64) -> FromWorker) -> Option<ToWorker> {
        let seq = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel();
        self.awaited.lock().ok()?.insert((self.id, seq), tx);
        self.parked.move_on();
        send(&self.out, &message(seq)).ok()?;
        rx.recv().ok()
    }
}

fn within_ms(deadline: Instant) -> u64 {
    let left = deadline.saturating_duration_since(Instant::now());
    u64::try_from(left.as_millis()).unwrap_or(u64::MAX)
}

impl CallObserver for Relayed {
    fn log(&self, level: Level, message: &str) {
        let _ = send(
            &self.out,
            &FromWorker::Log {
                id: self.id,
                level: level.as_str().to_string(),
                message: message.to_string(),
            },
        );
    }

    fn progress(&self, done: f64, total: Option<f64>, message: Option<&str>) {
        let _ = send(
            &self.out,
            &FromWorker::Progress {
                id: self.id,
                done,
                total,
                message: message.map(str::to_string),
            },
        );
    }

    fn resource_updated(&self, uri: &str) {
        let _ = send(
            &self.out,
            &FromWorker::ResourceUpdated {
                id: self.id,
                uri: uri.to_string(),
            },
        );
    }

    fn ask(&self, ask: &Ask, deadline: Instant) -> Result<Value, AskFailure> {
        let answered = self.request(|seq| FromWorker::Ask {
            id: self.id,
            seq,
            ask: WireAsk::from(ask),
            within_ms: within_ms(deadline),
        });
        match answered {
            Some(ToWorker::Answer { answer, .. }) => answer.map_err(AskFailure::from),
            _ => Err(AskFailure::Failed("the server let the call go".into())),
        }
    }

    fn wait_in_task(
        &self,
        asks: &[Ask],
        deadline: Instant,
    ) -> Option<Vec<Result<Value, AskFailure>>> {
        let answered = self.request(|seq| FromWorker::WaitInTask {
            id: self.id,
            seq,
            asks: asks.iter().map(WireAsk::from).collect(),
            within_ms: within_ms(deadline),
        });
        match answered {
            Some(ToWorker::Waited { answers, .. }) => answers.map(|all| {
                all.into_iter()
                    .map(|a| a.map_err(|f: WireAskFailure| f.into()))
                    .collect()
            }),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::AskKind;
    use crate::sandbox::RawOutput;
    use std::os::fd::OwnedFd;
    use std::time::Duration;

    /// A short tool that asks the client and answers what it was told.
    struct Asking;

    impl Runner for Asking {
        fn load(&self, _: &str, _: &std::path::Path, _: &[u8]) -> Result<Listing, String> {
            Err("nothing loads here".into())
        }

        fn is_short(&self, _: &str, _: &str, _: &Work) -> bool {
            true
        }

        fn run(
            &self,
            _: &str,
            _: &str,
            _: &Work,
            observer: Arc<dyn CallObserver>,
            _: CancelToken,
        ) -> (Result<Ran<Done>, RunError>, Teardown) {
            let ask = Ask {
                kind: AskKind::Roots,
                params: serde_json::json!({}),
                index: 0,
                key: None,
            };
            let told = observer.ask(&ask, Instant::now() + Duration::from_secs(60));
            let output = RawOutput {
                content: Vec::new(),
                structured: told.ok(),
            };
            (Ok(Ran::Answered(Done::Output(output))), Teardown::none())
        }
    }

    fn pipe() -> (std::fs::File, std::fs::File) {
        let (read, write) = std::io::pipe().expect("pipe");
        let file = |fd: OwnedFd| std::fs::File::from(fd);
        (file(read.into()), file(write.into()))
    }

    /// Short calls one at a time, whose lane keeps the reading when they
    /// come [`APART`]: a question each asks moves the reading on, so its
    /// answer is read (the keeper would, but only after `LONG`), and so is
    /// the next call. (`parked::tests` prove the moving on itself.)
    #[test]
    fn a_short_call_alone_keeps_the_reading_and_still_hears_its_answers() {
        let (input, mut to_worker) = pipe();
        let (from_worker, output) = pipe();
        let serving = std::thread::spawn(move || serve(Arc::new(Asking), input, output));
        let mut frames = Frames::new(from_worker);
        let mut next = || {
            frames
                .read::<FromWorker>()
                .expect("read")
                .expect("a message")
        };
        assert!(matches!(next(), FromWorker::Ready));
        for id in 1..=3_u64 {
            wire::send(&mut to_worker, &wire::test_run(id)).expect("run");
            let FromWorker::Ask { id: asked, seq, .. } = next() else {
                panic!("no question");
            };
            assert_eq!(asked, id);
            let answer = Ok(serde_json::json!(id));
            wire::send(&mut to_worker, &ToWorker::Answer { id, seq, answer }).expect("answer");
            match next() {
                FromWorker::Done {
                    id: done,
                    outcome: Ok(Ended::Answered(output)),
                    ..
                } => {
                    assert_eq!(done, id);
                    assert_eq!(output.structured, Some(serde_json::json!(id)));
                }
                other => panic!("{other:?}"),
            }
        }
        drop(to_worker);
        assert!(serving.join().expect("no panic").is_ok());
    }
}
