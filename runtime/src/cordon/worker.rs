//! A cordon's worker: the process that runs the guests of one cordon's
//! components, each call in a fresh instance of its own pool, for the
//! serving process at the other end of its stdin and stdout. What a guest
//! reports or asks goes back as a message of its call; the client's answer
//! comes in as one. When its stdin ends (the server let the cordon go, or
//! died) it finishes the calls it has and exits.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::Value;

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
pub fn serve(
    runner: Arc<dyn Runner>,
    input: impl Read,
    output: impl Write + Send + 'static,
) -> std::io::Result<()> {
    let out: Out = Arc::new(Mutex::new(Box::new(output)));
    send(&out, &FromWorker::Ready)?;
    let awaited: Awaited = Arc::default();
    let cancels: Arc<Mutex<HashMap<u64, CancelToken>>> = Arc::default();
    let mut running = Vec::new();
    let calls = InFlight::default();
    let mut frames = Frames::new(input);
    while let Some(message) = frames.read::<ToWorker>()? {
        match message {
            ToWorker::Load { id, name, path } => {
                let Some(bytes) = frames.read_raw()? else {
                    break;
                };
                let (runner, out) = (runner.clone(), out.clone());
                let load = std::thread::Builder::new()
                    .name(format!("airlock-load-{id}"))
                    .spawn(move || {
                        let listing = runner.load(&name, &path, &bytes);
                        let _ = send(&out, &FromWorker::Listed { id, listing });
                    })?;
                running.push(load);
            }
            ToWorker::Run {
                id,
                component,
                digest,
                work,
                trace,
            } => {
                let cancel = CancelToken::new();
                if let Ok(mut cancels) = cancels.lock() {
                    cancels.insert(id, cancel.clone());
                }
                let observer = Arc::new(Relayed {
                    id,
                    out: out.clone(),
                    awaited: awaited.clone(),
                    next: AtomicU64::new(0),
                });
                let (runner, out, cancels) = (runner.clone(), out.clone(), cancels.clone());
                let held = calls.hold();
                // On a lane, as a guest runs in the server: a thread of a
                // core's few, kept for the next call (a thread a call cost
                // more than the call).
                crate::lanes::spawn(move || {
                    // The server's call, continued here when traced.
                    let parent = trace
                        .as_deref()
                        .and_then(crate::telemetry::from_traceparent);
                    let _trace = crate::telemetry::enter(parent.as_ref());
                    let (outcome, teardown) =
                        runner.run(&component, &digest, &work, observer, cancel);
                    let done = FromWorker::Done {
                        id,
                        outcome: outcome.map(|ran| match ran {
                            Ran::Answered(Done::Output(raw)) => {
                                Ended::Answered(WireOutput::from(&raw))
                            }
                            Ran::Answered(Done::Offer(Ok(offered))) => {
                                Ended::Offered(WireOffered::from(&offered))
                            }
                            Ran::Answered(Done::Offer(Err(missing))) => Ended::NotFound(missing),
                            Ran::Waits(asks) => {
                                Ended::Waits(asks.iter().map(WireAsk::from).collect())
                            }
                        }),
                        reported: reported(&teardown),
                    };
                    let _ = send(&out, &done);
                    if let Ok(mut cancels) = cancels.lock() {
                        cancels.remove(&id);
                    }
                    drop(teardown);
                    drop(held);
                });
            }
            ToWorker::Answer { id, seq, .. } | ToWorker::Waited { id, seq, .. } => {
                let to = awaited.lock().ok().and_then(|mut a| a.remove(&(id, seq)));
                if let Some(to) = to {
                    let _ = to.send(message);
                }
            }
            ToWorker::Cancel { id, shutdown } => {
                let token = cancels.lock().ok().and_then(|c| c.get(&id).cloned());
                match (token, shutdown) {
                    (Some(token), true) => token.shut_down(),
                    (Some(token), false) => token.cancel(),
                    (None, _) => {}
                }
            }
        }
    }
    // The server let go: stop waiting for answers that will not come.
    if let Ok(mut awaited) = awaited.lock() {
        awaited.clear();
    }
    for load in running {
        let _ = load.join();
    }
    calls.wait_for_none();
    Ok(())
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
    let mut out = out
        .lock()
        .map_err(|_| std::io::Error::other("the worker's output is poisoned"))?;
    wire::send(&mut *out, message)
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
}

impl Relayed {
    /// Sends `message` (made with the request's number) and waits for the
    /// answer to it; `None` when the serving process let the call go.
    fn request(&self, message: impl FnOnce(u64) -> FromWorker) -> Option<ToWorker> {
        let seq = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel();
        self.awaited.lock().ok()?.insert((self.id, seq), tx);
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
