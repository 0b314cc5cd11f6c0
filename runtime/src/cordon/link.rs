//! The serving process's end of a cordon: it starts the cordon's worker
//! (the airlock binary again, `serve --cordon-worker NAME`, with only the
//! cordon's environment), sends it each call of its components, relays
//! what the guest reports and asks to the call's observer and the client's
//! answers back, cancels, and restarts the worker when it dies — failing
//! only that worker's calls in flight, each with a clear error.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::{Duration, Instant};

use tokio::io::AsyncWriteExt;
use tokio::net::unix::pipe::{Receiver, Sender};
use tokio::runtime::Handle;
use tokio::sync::mpsc::{UnboundedSender, unbounded_channel};

use super::launcher::{Start, Started};
use super::relay::{Relay, Replies, unavailable};
use super::wire::{self, Done, Frames, FromWorker, ToWorker, Work};
use crate::catalog::Listing;
use crate::observe::CallObserver;
use crate::policy::Grant;
use crate::sandbox::{CancelToken, Ran, RunError, Teardown};

/// How long a worker may take to confine itself and say it is ready.
const START_TIMEOUT: Duration = Duration::from_secs(120);

/// One cordon, seen from the serving process.
pub struct Link {
    name: String,
    starter: Arc<dyn Start>,
    /// The server's async runtime: it reads what each worker says.
    tokio: Handle,
    /// Held only to read or set: calls on the async threads look here.
    worker: Mutex<Option<Arc<Worker>>>,
    /// Held while a worker starts and loads its components (seconds), by
    /// one thread, never an async one: calls meanwhile wait on it apart.
    starting: Mutex<()>,
    /// What each of its components was last loaded from: a worker started
    /// again loads them all before it takes a call.
    loads: Mutex<BTreeMap<String, Sent>>,
    next_call: AtomicU64,
    me: Weak<Link>,
}

/// A component as sent to a worker: where it was read from, its bytes.
type Sent = (PathBuf, Arc<[u8]>);

/// Whether a worker got ready, or why not.
type Readiness = Result<(), String>;

/// A running worker process.
struct Worker {
    pid: u32,
    /// `None` once the link let it go (the worker then exits). Written
    /// without blocking a thread: a worker that stops reading (stuck, or
    /// an escaped guest's) holds up only the calls that write to it, not
    /// the server's async threads.
    stdin: tokio::sync::Mutex<Option<Sender>>,
    /// The process, when this one started it (else its launcher reaps it).
    child: Mutex<Option<Child>>,
    /// Calls in flight, each with the channel its messages go to.
    calls: Mutex<HashMap<u64, UnboundedSender<FromWorker>>>,
    /// `Some(Ok(components))` once ready, `Some(Err)` if it never was.
    ready: (Mutex<Option<Readiness>>, Condvar),
    dead: AtomicBool,
    link: Weak<Link>,
}

impl Link {
    pub fn new(name: &str, starter: Arc<dyn Start>, tokio: Handle) -> Arc<Link> {
        Arc::new_cyclic(|me| Link {
            name: name.to_string(),
            starter,
            tokio,
            worker: Mutex::new(None),
            starting: Mutex::new(()),
            loads: Mutex::new(BTreeMap::new()),
            next_call: AtomicU64::new(1),
            me: me.clone(),
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The worker's process id, when one runs.
    pub fn pid(&self) -> Option<u32> {
        let worker = self.worker.lock().ok()?;
        worker.as_ref().filter(|w| !w.is_dead()).map(|w| w.pid)
    }

    /// Starts the worker now (rather than at the first call) and waits
    /// until it is ready (confined) and has loaded its components.
    pub fn start(&self) -> Result<(), String> {
        self.running().map(drop)
    }

    /// Has the worker load component `name` from `bytes` and list it: the
    /// serving process builds its catalog entry from this listing, running
    /// none of the component's code itself.
    pub fn list(&self, name: &str, path: &Path, bytes: &[u8]) -> Listing {
        let bytes: Arc<[u8]> = Arc::from(bytes);
        if let Ok(mut loads) = self.loads.lock() {
            loads.insert(name.to_string(), (path.to_path_buf(), bytes.clone()));
        }
        let listed = self
            .running()
            .and_then(|worker| self.load_in(&worker, name, path, &bytes));
        listed.unwrap_or_else(|err| Listing {
            tools: Err(RunError::Setup(format!(
                "the worker of cordon {:?} could not list it: {err}",
                self.name
            ))),
            offers: None,
        })
    }

    /// Sends one component to `worker` and waits for its listing (this
    /// thread blocks: not one of the async runtime's).
    fn load_in(
        &self,
        worker: &Worker,
        name: &str,
        path: &Path,
        bytes: &[u8],
    ) -> Result<Listing, String> {
        let id = self.next_call.fetch_add(1, Ordering::Relaxed);
        let (tx, mut rx) = unbounded_channel();
        if let Ok(mut calls) = worker.calls.lock() {
            calls.insert(id, tx);
        }
        let load = ToWorker::Load {
            id,
            name: name.to_string(),
            path: path.to_path_buf(),
        };
        // A worker that does not take it, or list it, within the time a
        // start may take is not waited for longer.
        let answer = self.tokio.block_on(async {
            let by = Instant::now() + START_TIMEOUT;
            let mut frames = wire::frame(&load)?;
            frames.extend_from_slice(&wire::raw_frame(bytes)?);
            worker.write_by(&frames, by).await?;
            match tokio::time::timeout_at(by.into(), rx.recv()).await {
                Ok(Some(answer)) => Ok(answer),
                Ok(None) => Err(std::io::Error::other("it died while loading")),
                Err(_) => Err(std::io::ErrorKind::TimedOut.into()),
            }
        });
        let answer = answer.map_err(|err| err.to_string());
        worker.forget(id);
        match answer? {
            FromWorker::Listed { listing, .. } => listing,
            other => Err(format!("it answered {other:?} to a load")),
        }
    }

    /// Runs `work` in a fresh instance of `component` in the worker, as
    /// [`crate::sandbox::Sandbox::call`] or `run_offer` runs it here; the
    /// worker continues the trace `trace` (a `traceparent`).
    #[allow(clippy::too_many_arguments)]
    pub async fn run(
        &self,
        component: &str,
        digest: &str,
        work: Work,
        trace: Option<String>,
        grant: &Grant,
        observer: Arc<dyn CallObserver>,
        cancel: CancelToken,
    ) -> (Result<Ran<Done>, RunError>, Teardown) {
        let worker = match self.live() {
            Some(worker) => Ok(worker),
            // Starting one blocks (it waits for the worker to be ready).
            None => match self.me.upgrade() {
                Some(me) => tokio::task::spawn_blocking(move || me.running())
                    .await
                    .unwrap_or_else(|err| Err(err.to_string())),
                None => Err("the server let it go".to_string()),
            },
        };
        let worker = match worker {
            Ok(worker) => worker,
            Err(err) => return (Err(unavailable(&self.name, &err)), Teardown::none()),
        };
        let id = self.next_call.fetch_add(1, Ordering::Relaxed);
        let (tx, mut rx) = unbounded_channel();
        if let Ok(mut calls) = worker.calls.lock() {
            calls.insert(id, tx);
        }
        let run = ToWorker::Run {
            id,
            component: component.to_string(),
            digest: digest.to_string(),
            work,
            trace,
        };
        let relay = Relay::new(&self.name, id, grant, observer, &cancel);
        let ended = relay.until_done(run, &mut rx, worker.as_ref()).await;
        worker.forget(id);
        ended
    }

    /// The worker, if one runs.
    fn live(&self) -> Option<Arc<Worker>> {
        let slot = self.worker.lock().ok()?;
        slot.as_ref().filter(|w| !w.is_dead()).cloned()
    }

    /// The running worker, started if there is none or it died.
    fn running(&self) -> Result<Arc<Worker>, String> {
        fn poisoned<T>(_: T) -> String {
            "its state is poisoned".to_string()
        }
        if let Some(worker) = self.live() {
            return Ok(worker);
        }
        let _starting = self.starting.lock().map_err(poisoned)?;
        // Started by whoever held it before.
        if let Some(worker) = self.live() {
            return Ok(worker);
        }
        let worker = self.spawn()?;
        worker.wait_ready()?;
        // A worker started again gets every component back first.
        let loads: Vec<(String, Sent)> = self
            .loads
            .lock()
            .map(|l| l.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default();
        for (name, (path, bytes)) in loads {
            let failed = match self.load_in(&worker, &name, &path, &bytes) {
                Ok(Listing {
                    tools: Err(err), ..
                }) => Some(err.to_string()),
                Err(err) => Some(err),
                Ok(_) => None,
            };
            if let Some(err) = failed {
                tracing::error!(cordon = %self.name, "{name} did not load again: {err}");
            }
        }
        *self.worker.lock().map_err(poisoned)? = Some(worker.clone());
        Ok(worker)
    }

    fn spawn(&self) -> Result<Arc<Worker>, String> {
        let Started {
            pid,
            stdin,
            stdout,
            child,
        } = self
            .starter
            .start(&self.name)
            .map_err(|err| err.to_string())?;
        // Read and written on the runtime, not by threads of their own: a
        // message wakes its call's task from the runtime's poll, with no
        // hop between threads.
        let (stdin, stdout) = {
            let _runtime = self.tokio.enter();
            let stdin =
                Sender::from_file(stdin).map_err(|err| format!("cannot write to it: {err}"))?;
            let stdout = Receiver::from_file(stdout)
                .map_err(|err| format!("cannot read its output: {err}"))?;
            (stdin, stdout)
        };
        let worker = Arc::new(Worker {
            pid,
            stdin: tokio::sync::Mutex::new(Some(stdin)),
            child: Mutex::new(child),
            calls: Mutex::new(HashMap::new()),
            ready: (Mutex::new(None), Condvar::new()),
            dead: AtomicBool::new(false),
            link: self.me.clone(),
        });
        tracing::info!(cordon = %self.name, pid = worker.pid, "cordon worker started");
        self.tokio
            .spawn(read(worker.clone(), stdout, self.me.clone()));
        Ok(worker)
    }

    /// A worker of this link died: said in the log and the metrics, and a
    /// new one started so the next call does not wait for it.
    fn died(&self, worker: &Worker, status: &str, was_ready: bool) {
        crate::metrics::cordon_died(&self.name);
        tracing::warn!(
            cordon = %self.name,
            pid = worker.pid,
            status = %status,
            "cordon worker died; its calls in flight failed"
        );
        // One that never got ready is started again by the next call, not
        // in a loop here.
        if !was_ready {
            return;
        }
        self.start_apart();
    }

    /// Starts a worker again, on a thread of its own (starting one waits
    /// until it is ready).
    fn start_apart(&self) {
        let me = self.me.clone();
        let _ = std::thread::Builder::new()
            .name(format!("airlock-cordon-{}-restart", self.name))
            .spawn(move || {
                if let Some(link) = me.upgrade()
                    && let Err(err) = link.start()
                {
                    tracing::error!(cordon = %link.name, "cannot restart the cordon worker: {err}");
                }
            });
    }
}

impl Drop for Link {
    /// No more calls will come: closing its stdin lets the worker finish
    /// the calls it has and exit (its reader then reaps it).
    fn drop(&mut self) {
        let worker = self.worker.lock().ok().and_then(|mut slot| slot.take());
        if let Some(worker) = worker {
            let taken = worker.stdin.try_lock().map(|mut stdin| stdin.take());
            if taken.is_err() {
                // A call is writing: closed once it is done.
                drop(self.tokio.spawn(async move {
                    worker.stdin.lock().await.take();
                }));
            }
        }
    }
}

impl Replies for Worker {
    async fn reply(&self, message: &ToWorker, by: Instant) -> std::io::Result<()> {
        self.write_by(&wire::frame(message)?, by).await
    }
}

impl Worker {
    fn is_dead(&self) -> bool {
        self.dead.load(Ordering::Acquire)
    }

    /// Writes `frames`, giving up at `by`: a worker that has not taken
    /// them by then no longer reads (stuck, or an escaped guest stopped
    /// it), and a frame cut off would leave its stream unreadable, so it is
    /// let go and another started.
    async fn write_by(&self, frames: &[u8], by: Instant) -> std::io::Result<()> {
        let written = tokio::time::timeout_at(by.into(), self.write(frames)).await;
        match written {
            Ok(written) => written,
            Err(_) => {
                self.let_go();
                Err(std::io::ErrorKind::TimedOut.into())
            }
        }
    }

    /// Writes one frame on its stdin, one writer at a time; a pipe let go
    /// is broken.
    async fn write(&self, frame: &[u8]) -> std::io::Result<()> {
        let mut stdin = self.stdin.lock().await;
        // One let go while this waited for its turn is not written to.
        if self.is_dead() {
            stdin.take();
        }
        match stdin.as_mut() {
            Some(stdin) => stdin.write_all(frame).await,
            None => Err(std::io::ErrorKind::BrokenPipe.into()),
        }
    }

    /// Stops using a worker that stopped reading: no more is written to
    /// it, one this process started is killed, and a new one is started
    /// (which ends the old one: its launcher keeps one worker a cordon).
    fn let_go(&self) {
        if self.dead.swap(true, Ordering::AcqRel) {
            return;
        }
        let link = self.link.upgrade();
        tracing::warn!(
            cordon = link.as_ref().map_or("", |l| l.name.as_str()),
            pid = self.pid,
            "a cordon's worker stopped reading its calls; it is ended and another started"
        );
        if let Ok(mut stdin) = self.stdin.try_lock() {
            stdin.take();
        }
        if let Some(child) = self.child.lock().ok().as_mut().and_then(|c| c.as_mut()) {
            let _ = child.kill();
        }
        if let Some(link) = link {
            link.start_apart();
        }
    }

    fn forget(&self, id: u64) {
        if let Ok(mut calls) = self.calls.lock() {
            calls.remove(&id);
        }
    }

    fn wait_ready(&self) -> Result<(), String> {
        let (state, changed) = &self.ready;
        let guard = state.lock().map_err(|_| "poisoned".to_string())?;
        let (guard, _) = changed
            .wait_timeout_while(guard, START_TIMEOUT, |ready| ready.is_none())
            .map_err(|_| "poisoned".to_string())?;
        guard
            .clone()
            .unwrap_or_else(|| Err(format!("not ready after {}s", START_TIMEOUT.as_secs())))
    }

    fn set_ready(&self, ready: Readiness) {
        let (state, changed) = &self.ready;
        if let Ok(mut state) = state.lock()
            && state.is_none()
        {
            *state = Some(ready);
        }
        changed.notify_all();
    }
}

/// Reads the worker's messages and hands each to its call, until the
/// worker's stdout ends: then every call in flight fails (its channel
/// closes) and the link learns of the death.
async fn read(worker: Arc<Worker>, stdout: Receiver, link: Weak<Link>) {
    let mut frames = Frames::new(stdout);
    while let Ok(Some(message)) = frames.next::<FromWorker>().await {
        let id = match &message {
            FromWorker::Ready => {
                worker.set_ready(Ok(()));
                continue;
            }
            FromWorker::Log { id, .. }
            | FromWorker::Progress { id, .. }
            | FromWorker::ResourceUpdated { id, .. }
            | FromWorker::Ask { id, .. }
            | FromWorker::WaitInTask { id, .. }
            | FromWorker::Listed { id, .. }
            | FromWorker::Done { id, .. } => *id,
        };
        let to = worker.calls.lock().ok().and_then(|c| c.get(&id).cloned());
        if let Some(to) = to {
            let _ = to.send(message);
        }
    }
    // Reaping a child this process started blocks.
    let _ = tokio::task::spawn_blocking(move || ended(&worker, &link)).await;
}

/// The worker's output ended: it is dead.
fn ended(worker: &Worker, link: &Weak<Link>) {
    worker.dead.store(true, Ordering::Release);
    let was_ready = worker
        .ready
        .0
        .lock()
        .is_ok_and(|ready| matches!(*ready, Some(Ok(_))));
    worker.set_ready(Err("it exited before it was ready".into()));
    if let Ok(mut calls) = worker.calls.lock() {
        calls.clear();
    }
    let child = worker.child.lock().ok().and_then(|mut c| c.take());
    let status = match child {
        Some(mut child) => child
            .wait()
            .map_or_else(|err| err.to_string(), |s| s.to_string()),
        None => "its launcher's log line says how it ended".to_string(),
    };
    // A link still in use lost its worker; one dropped closed its pipe.
    if let Some(link) = link.upgrade() {
        link.died(worker, &status, was_ready);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cordon::Launch;
    use crate::observe::{Ask, AskFailure};
    use crate::sandbox::CancelToken;
    use crate::tool::Level;
    use std::time::Instant;

    /// A worker that does not keep the rules: it relays a request its
    /// component is not granted, then says it waits on one it never asked
    /// (what the server answered it, it reports back as the guest's
    /// output); with `big`, it answers more than the output limit; `mute`
    /// never ends a call; `deaf` stops reading once ready (the first worker
    /// of its folder only: the one started after it reads again).
    const LYING_WORKER: &str = r#"
import json, os, struct, sys, time
def send(m):
    b = json.dumps(m).encode()
    sys.stdout.buffer.write(struct.pack(">I", len(b)) + b)
    sys.stdout.buffer.flush()
def read():
    head = sys.stdin.buffer.read(4)
    if len(head) < 4:
        sys.exit(0)
    return json.loads(sys.stdin.buffer.read(struct.unpack(">I", head)[0]))
send("Ready")
once = os.path.join(os.path.dirname(sys.argv[0]), "was-deaf")
if sys.argv[1:] == ["deaf"] and not os.path.exists(once):
    open(once, "w").close()
    time.sleep(600)
while True:
    m = read()
    if sys.argv[1:] in (["mute"], ["deaf"]):
        continue
    if "Run" in m and sys.argv[1:] == ["big"]:
        i = m["Run"]["id"]
        big = {"content": [{"Text": "x" * (2 << 20)}], "structured": None}
        send({"Done": {"id": i, "outcome": {"Ok": {"Answered": big}}, "reported": {
            "guest_log": "", "log_dropped": 0, "credentials_used": [],
            "asks": [], "folder_refusals": None}}})
    elif "Run" in m:
        i = m["Run"]["id"]
        ask = {"kind": "sample", "params": {"messages": []}, "index": 0, "key": None}
        send({"Ask": {"id": i, "seq": 0, "ask": ask, "within_ms": 5000}})
        answer = read()
        never = {"kind": "roots", "params": {}, "index": 7, "key": None}
        send({"Done": {"id": i, "outcome": {"Ok": {"Waits": [never]}}, "reported": {
            "guest_log": json.dumps(answer), "log_dropped": 0, "credentials_used": [],
            "asks": [], "folder_refusals": None}}})
"#;

    /// Counts what reaches the client.
    #[derive(Default)]
    struct Client {
        asked: std::sync::atomic::AtomicUsize,
    }

    impl CallObserver for Client {
        fn log(&self, _: Level, _: &str) {}
        fn progress(&self, _: f64, _: Option<f64>, _: Option<&str>) {}
        fn ask(&self, _: &Ask, _: Instant) -> Result<serde_json::Value, AskFailure> {
            self.asked.fetch_add(1, Ordering::Relaxed);
            Ok(serde_json::json!({}))
        }
    }

    /// The lying worker (`big`: its big answer), and where its script is.
    fn liar(mode: &str) -> (Arc<Link>, tempfile::TempDir) {
        let dir = tempfile::tempdir().expect("tempdir");
        let script = dir.path().join("worker.py");
        std::fs::write(&script, LYING_WORKER).expect("script");
        let link = Link::new(
            "liar",
            Arc::new(Launch {
                program: "python3".into(),
                args: vec![script.into_os_string(), mode.into()],
                env: std::env::vars_os().filter(|(k, _)| k == "PATH").collect(),
            }),
            Handle::current(),
        );
        (link, dir)
    }

    fn work() -> Work {
        Work::Tool {
            name: "t".into(),
            arguments: "{}".into(),
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_worker_s_answer_over_the_output_limit_is_refused_by_the_server() {
        let (link, _dir) = liar("big");
        let grant = Grant::default();
        let client = Arc::new(Client::default());
        let cancel = CancelToken::new();
        let ran = link.run("c", "d", work(), None, &grant, client, cancel);
        let (outcome, _) = ran.await;
        match outcome {
            Err(RunError::OutputTooLarge { limit, .. }) => {
                assert_eq!(limit, grant.limits.output)
            }
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_server_checks_what_a_worker_relays_against_the_call_s_grant() {
        let (link, _dir) = liar("asks");
        let client = Arc::new(Client::default());
        let grant = Grant::default();
        let cancel = CancelToken::new();
        let ran = link.run("c", "d", work(), None, &grant, client.clone(), cancel);
        let (outcome, teardown) = ran.await;
        // Not granted `sample`: the client was never asked, the worker was
        // told why.
        assert_eq!(client.asked.load(Ordering::Relaxed), 0);
        let (told, _) = teardown.guest_log();
        assert!(told.contains("Unavailable"), "{told}");
        assert!(told.contains("does not grant it"), "{told}");
        // A wait on a request it never asked is no wait.
        match outcome {
            Err(RunError::Crashed(why)) => assert!(why.contains("never asked"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    /// A grant whose calls may take `secs`.
    fn lasting(secs: u64) -> Grant {
        let mut grant = Grant::default();
        grant.limits.time = std::time::Duration::from_secs(secs);
        grant
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_call_its_worker_never_ends_fails_as_timed_out_past_its_limit() {
        let (link, _dir) = liar("mute");
        let grant = lasting(1);
        let client = Arc::new(Client::default());
        let ran = link.run("c", "d", work(), None, &grant, client, CancelToken::new());
        match ran.await.0 {
            Err(RunError::TimedOut(limit)) => assert_eq!(limit, grant.limits.time),
            other => panic!("{other:?}"),
        }
    }

    /// On one async thread: were a write to a worker that stopped reading
    /// to block its thread, this test would never end.
    #[tokio::test(flavor = "current_thread")]
    async fn a_worker_that_stops_reading_holds_no_thread_and_is_replaced() {
        let (link, _dir) = liar("deaf");
        // Started apart: a worker's readiness is read on this very thread.
        let starting = link.clone();
        let started = tokio::task::spawn_blocking(move || starting.start()).await;
        started.expect("no panic").expect("started");
        let first = link.pid().expect("a worker");
        let grant = lasting(1);
        // Each call's frame is larger than a pipe holds.
        let big = Work::Tool {
            name: "t".into(),
            arguments: format!("{{\"x\": \"{}\"}}", "x".repeat(96 << 10)),
        };
        let call = |work| {
            let client = Arc::new(Client::default());
            link.run("c", "d", work, None, &grant, client, CancelToken::new())
        };
        let (a, b) = tokio::join!(call(big), call(work()));
        let outcomes = [a.0, b.0];
        assert!(
            outcomes
                .iter()
                .any(|o| matches!(o, Err(RunError::TimedOut(_)))),
            "{outcomes:?}"
        );
        // Every call ended; the other was refused, not left waiting.
        for outcome in &outcomes {
            assert!(
                matches!(outcome, Err(RunError::TimedOut(_) | RunError::Setup(_))),
                "{outcome:?}"
            );
        }
        // Another worker (which reads) takes the next call.
        let mut again = None;
        for _ in 0..300 {
            again = link.pid().filter(|&pid| pid != first);
            if again.is_some() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        assert!(again.is_some(), "no new worker after {first} was let go");
        let next = call(work()).await.0;
        assert!(matches!(next, Err(RunError::TimedOut(_))), "{next:?}");
    }
}
