//! Loading a server's components without making it wait: one loader thread
//! compiles them in file order (so the first file still wins a name, as in
//! [`Runtime::load`]); what is ready within the start's wait serves from
//! the first request, the rest joins the catalog as each is ready, and the
//! server tells its clients (`notifications/tools/list_changed`).
//!
//! A component found in the compile cache loads in milliseconds; one that
//! is not (a Python component takes tens of seconds to compile) would
//! otherwise keep `serve` from listening until it is done.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use crate::catalog::{LoadError, Tool};
use crate::{LoadReport, Runtime};

type Loaded = (PathBuf, Result<Vec<Tool>, LoadError>);

/// The components of one start still being loaded (the runtime knows
/// which: [`Runtime::still_loading`]).
pub struct Loading {
    results: Receiver<Loaded>,
}

impl Loading {
    /// Starts loading what `paths` stand for ([`Runtime::files`]) into
    /// `runtime`'s catalog, which should be empty; nothing is admitted until
    /// [`Loading::wait`] or [`Loading::next`].
    pub fn start(runtime: Arc<Runtime>, paths: &[PathBuf]) -> Loading {
        let files = runtime.files(paths);
        runtime.set_loading(&files);
        let (sender, results) = mpsc::channel();
        let work = (runtime.clone(), files.clone(), sender.clone());
        let spawned = std::thread::Builder::new()
            .name("airlock-load".into())
            .spawn(move || load_all(&work.0, work.1, &work.2));
        if let Err(err) = spawned {
            // No thread to spare: load here, as a start without one would.
            tracing::warn!("cannot start a loader thread ({err}); loading before serving");
            load_all(&runtime, files, &sender);
        }
        Loading { results }
    }

    /// Admits every load that finishes within `wait` (all of them, however
    /// long they take, with `None`) and reports them.
    pub fn wait(&mut self, runtime: &Runtime, wait: Option<Duration>) -> LoadReport {
        let deadline = wait.map(|wait| Instant::now() + wait);
        let mut report = LoadReport::default();
        while runtime.still_loading() > 0 {
            let received = match deadline {
                None => self.results.recv().ok(),
                Some(deadline) => {
                    match self
                        .results
                        .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                    {
                        Ok(loaded) => Some(loaded),
                        Err(RecvTimeoutError::Timeout) => break,
                        Err(RecvTimeoutError::Disconnected) => None,
                    }
                }
            };
            let Some((file, loaded)) = received else {
                self.loader_gone(runtime);
                break;
            };
            let admitted = runtime.admit(file, loaded);
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
        match self.results.recv() {
            Ok((file, loaded)) => Some(runtime.admit(file, loaded)),
            Err(_) => {
                self.loader_gone(runtime);
                None
            }
        }
    }

    /// The loader thread ended without sending every result: it panicked.
    fn loader_gone(&mut self, runtime: &Runtime) {
        for file in runtime.loading_files() {
            tracing::error!("{}: the loader stopped before loading it", file.display());
        }
        runtime.set_loading(&[]);
    }
}

fn load_all(runtime: &Runtime, files: Vec<PathBuf>, results: &Sender<Loaded>) {
    for file in files {
        let loaded = runtime.load_file(&file);
        if results.send((file, loaded)).is_err() {
            return;
        }
    }
}
