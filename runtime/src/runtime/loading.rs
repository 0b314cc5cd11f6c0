//! Loading a server's components without making it wait, and without one
//! component making the others wait: each loads on a thread of its own
//! (a slow registry, a failing fetch or a listing that loops holds only
//! its own), at most [`compile_places`] compile at once (compiling takes
//! the cores and hundreds of MiB), and each joins the catalog as soon as it
//! is ready; the server tells its clients
//! (`notifications/tools/list_changed`).
//!
//! The first file still wins a tool's name, as in [`Runtime::load`]: the
//! catalog is always what loading the components ready so far in file
//! order gives. So when a component listed earlier arrives after a later
//! one that declares one of its names, the later one is withdrawn (and
//! reported refused, with the clash), and the result does not depend on
//! which finished first.
//!
//! While components are loading, the log says every [`SAY_EVERY`] which
//! ones and what each waits on (`Runtime::loading_now`); `/readyz` only
//! counts them.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::pending::Phase;
use super::{LoadReport, Runtime};
use crate::catalog::{self, Catalog, LoadError, Served};
use crate::source::Source;

type Loaded = (usize, PathBuf, Result<catalog::Loaded, LoadError>);

/// How often the log says what the components still loading wait on.
pub const SAY_EVERY: Duration = Duration::from_secs(10);
/// A component loading for this long is said at `warn`, not `info`.
const SLOW: Duration = Duration::from_secs(30);
/// How long after a start a list request (`tools/list` and the like) waits
/// for the components still loading, rather than answer without their
/// tools: a desktop client lists once, at its start, and may not ask again
/// on `notifications/tools/list_changed`. Half the minute the TypeScript
/// SDK gives a request by default, and longer than a big component's first
/// compile on quick-tier code takes.
pub const LIST_WAIT: Duration = Duration::from_secs(30);

/// How many components compile at once: at least 2, so one slow compile
/// (or a listing that loops until its time limit) never holds the rest,
/// and at most 4, since wasmtime spreads one compile over the cores
/// already and each compile takes its own memory.
pub fn compile_places() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 4))
}

/// The components of one start still being loaded (the runtime knows
/// which, and what each waits on: [`Runtime::loading_now`]).
pub struct Loading {
    results: Receiver<Loaded>,
    /// Every component of this start that loaded, by file order.
    ready: BTreeMap<usize, (PathBuf, Served)>,
    /// Those of `ready` in the catalog (the others lost a name).
    admitted: BTreeSet<usize>,
    /// When the log last said what is still loading.
    said: Instant,
}

impl Loading {
    /// Starts loading what `paths` stand for ([`Runtime::files`]) into
    /// `runtime`'s catalog; nothing is admitted until [`Loading::wait`] or
    /// [`Loading::next`].
    pub fn start(runtime: Arc<Runtime>, paths: &[PathBuf]) -> Loading {
        let files = runtime.files(paths);
        runtime.set_loading(&files);
        let (sender, results) = mpsc::channel();
        let places = Arc::new(Places::new(compile_places()));
        for (index, file) in files.into_iter().enumerate() {
            let work = Work {
                runtime: runtime.clone(),
                places: places.clone(),
                results: sender.clone(),
                index,
                file,
            };
            let again = work.clone();
            let spawned = std::thread::Builder::new()
                .name("airlock-load".into())
                .spawn(move || work.run());
            if let Err(err) = spawned {
                // No thread to spare: load here, as a start without one would.
                tracing::warn!("cannot start a loader thread ({err}); loading before serving");
                again.run();
            }
        }
        Loading {
            results,
            ready: BTreeMap::new(),
            admitted: BTreeSet::new(),
            said: Instant::now(),
        }
    }

    /// Admits every load that finishes within `wait` (all of them, however
    /// long they take, with `None`) and reports them.
    pub fn wait(&mut self, runtime: &Runtime, wait: Option<Duration>) -> LoadReport {
        let deadline = wait.map(|wait| Instant::now() + wait);
        let mut report = LoadReport::default();
        while runtime.still_loading() > 0 {
            let Some(loaded) = self.receive(runtime, deadline) else {
                break;
            };
            let admitted = self.admit(runtime, loaded);
            report.loaded.extend(admitted.loaded);
            report.refused.extend(admitted.refused);
        }
        report
    }

    /// Waits for the next component to finish loading and admits it; `None`
    /// once every one has.
    pub fn next(&mut self, runtime: &Runtime) -> Option<LoadReport> {
        if runtime.still_loading() == 0 {
            return None;
        }
        let loaded = self.receive(runtime, None)?;
        Some(self.admit(runtime, loaded))
    }

    /// The next load to finish, by `until` (for ever with `None`); says
    /// what is still loading every [`SAY_EVERY`] meanwhile. `None` when
    /// `until` passed, or the loaders are gone.
    fn receive(&mut self, runtime: &Runtime, until: Option<Instant>) -> Option<Loaded> {
        loop {
            let tick = self.said + SAY_EVERY;
            let stop = until.map_or(tick, |until| until.min(tick));
            match self
                .results
                .recv_timeout(stop.saturating_duration_since(Instant::now()))
            {
                Ok(loaded) => return Some(loaded),
                Err(RecvTimeoutError::Timeout) => {
                    if until.is_some_and(|until| Instant::now() >= until) {
                        return None;
                    }
                    self.say_what_is_loading(runtime);
                }
                Err(RecvTimeoutError::Disconnected) => {
                    self.loader_gone(runtime);
                    return None;
                }
            }
        }
    }

    fn say_what_is_loading(&mut self, runtime: &Runtime) {
        self.said = Instant::now();
        for pending in runtime.loading_now() {
            let waited = pending.waited().as_secs();
            if pending.waited() >= SLOW {
                tracing::warn!("still loading {pending}, for {waited}s");
            } else {
                tracing::info!("still loading {pending}, for {waited}s");
            }
        }
    }

    /// Takes in what loading one component gave: the catalog becomes what
    /// the components ready so far give in file order. It is off the list of those loading only once its tools are in the
    /// catalog, so a list request that waited for it ([`LIST_WAIT`]) has
    /// them.
    fn admit(&mut self, runtime: &Runtime, (index, file, loaded): Loaded) -> LoadReport {
        let mut report = LoadReport::default();
        match loaded {
            Ok(loaded) => {
                self.ready.insert(index, (file.clone(), loaded.share()));
            }
            Err(err) => {
                runtime.loading_done(&file);
                report.refused.push(err);
                return report;
            }
        }
        let ours: HashSet<*const crate::catalog::Component> = self
            .ready
            .values()
            .map(|(_, served)| Arc::as_ptr(&served.component))
            .collect();
        let (admitted, mut clashes) = runtime.update_catalog(|current| {
            let mut catalog = Catalog::new();
            // What is not this start's (a library user's own) stays first.
            for served in current.served() {
                if ours.contains(&Arc::as_ptr(&served.component)) {
                    continue;
                }
                let _ = catalog.add_shared(&served);
            }
            let mut admitted = BTreeSet::new();
            let mut clashes = BTreeMap::new();
            for (at, (_, served)) in &self.ready {
                match catalog.add_shared(served) {
                    Ok(()) => {
                        admitted.insert(*at);
                    }
                    Err(clash) => {
                        clashes.insert(*at, clash);
                    }
                }
            }
            (catalog, (admitted, clashes))
        });
        for at in admitted.difference(&self.admitted) {
            if let Some((file, served)) = self.ready.get(at) {
                report.loaded.push((file.clone(), served.tool_names()));
            }
        }
        let withdrawn = self.admitted.difference(&admitted);
        for at in withdrawn.chain(std::iter::once(&index)) {
            if let Some(clash) = clashes.remove(at) {
                if *at != index
                    && let Some((file, _)) = self.ready.get(at)
                {
                    tracing::warn!(
                        "{}: withdrawn (its tools were served until now): {clash}",
                        file.display()
                    );
                }
                report.refused.push(clash);
            }
        }
        self.admitted = admitted;
        runtime.loading_done(&file);
        report
    }

    /// The loader threads ended without sending every result: one panicked.
    fn loader_gone(&mut self, runtime: &Runtime) {
        for file in runtime.loading_files() {
            tracing::error!("{}: the loader stopped before loading it", file.display());
        }
        runtime.set_loading(&[]);
    }
}

/// Loading one component, on a thread of its own.
#[derive(Clone)]
struct Work {
    runtime: Arc<Runtime>,
    places: Arc<Places>,
    results: Sender<Loaded>,
    /// Its place in file order.
    index: usize,
    file: PathBuf,
}

impl Work {
    fn run(self) {
        let Work {
            runtime,
            places,
            results,
            index,
            file,
        } = self;
        let take = || {
            places.take(index, || {
                runtime.loading_phase(&file, Phase::WaitingToCompile);
            })
        };
        // A file is read once it has its place, so the bytes of those
        // waiting are not all in memory at once; a fetch goes ahead.
        let local = !Source::from_path(&file).is_ok_and(|s| s.is_remote());
        let early = local.then(take);
        let loaded = runtime.loader().read(&file).and_then(|(name, bytes)| {
            let _place = early.unwrap_or_else(take);
            runtime.loading_phase(&file, Phase::Compiling);
            runtime.loader().compile(&file, name, &bytes)
        });
        // Fails only once the `Loading` is gone: nobody waits any more.
        let _ = results.send((index, file, loaded));
    }
}

/// The places to compile in: taken earliest file first, so that what is
/// listed first is usually ready first.
struct Places {
    /// Free places, and the file indexes waiting for one.
    state: Mutex<(usize, BTreeSet<usize>)>,
    freed: Condvar,
}

impl Places {
    fn new(count: usize) -> Places {
        Places {
            state: Mutex::new((count.max(1), BTreeSet::new())),
            freed: Condvar::new(),
        }
    }

    /// Takes a place for file `index`, calling `waiting` first when it has
    /// to wait for one.
    fn take(&self, index: usize, waiting: impl FnOnce()) -> Place<'_> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        state.1.insert(index);
        let free =
            |state: &(usize, BTreeSet<usize>)| state.0 > 0 && state.1.first() == Some(&index);
        if !free(&state) {
            waiting();
        }
        while !free(&state) {
            state = self.freed.wait(state).unwrap_or_else(|p| p.into_inner());
        }
        state.1.remove(&index);
        state.0 -= 1;
        // The next waiter may fit in a place still free.
        self.freed.notify_all();
        Place(self)
    }
}

/// A place taken, given back when dropped (also when a compile panics).
struct Place<'a>(&'a Places);

impl Drop for Place<'_> {
    fn drop(&mut self) {
        let mut state = self.0.state.lock().unwrap_or_else(|p| p.into_inner());
        state.0 += 1;
        self.0.freed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_go_to_the_earliest_file_and_come_back() {
        let places = Arc::new(Places::new(1));
        let first = places.take(5, || ());
        let order = Arc::new(Mutex::new(Vec::new()));
        let waiters: Vec<_> = [9, 7]
            .into_iter()
            .map(|index| {
                let (places, order) = (places.clone(), order.clone());
                std::thread::spawn(move || {
                    let _place = places.take(index, || ());
                    order.lock().expect("order").push(index);
                })
            })
            .collect();
        // Both wait (the place is taken) before it is given back.
        while places.state.lock().expect("state").1.len() < 2 {
            std::thread::yield_now();
        }
        drop(first);
        for waiter in waiters {
            waiter.join().expect("waiter");
        }
        assert_eq!(*order.lock().expect("order"), [7, 9]);
        assert_eq!(places.state.lock().expect("state").0, 1);
    }

    #[test]
    fn at_least_two_components_compile_at_once() {
        assert!((2..=4).contains(&compile_places()));
    }
}
