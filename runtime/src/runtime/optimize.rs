//! Optimising in the background: a component whose first calls run on
//! quick-tier code (see [`crate::sandbox::Tier`]) gets Cranelift's
//! optimised code compiled on a thread of its own, linked the same way,
//! and put in place for the calls that start after it. Running calls
//! finish on the code they started with.
//!
//! The compile runs on a one-thread pool of its own: wasmtime compiles
//! functions in parallel on the current rayon pool, which would otherwise
//! take every core from the calls being served meanwhile.

use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Weak};
use std::time::Instant;

use crate::catalog::Component;
use crate::sandbox::Sandbox;

/// The queue of components awaiting their optimised code.
pub(crate) struct Optimizer {
    jobs: Sender<Weak<Component>>,
}

impl Optimizer {
    /// Starts the thread; it ends when the optimiser is dropped.
    pub(crate) fn start(sandbox: Arc<Sandbox>) -> std::io::Result<Self> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .thread_name(|_| "airlock-optimize".into())
            .build()
            .map_err(std::io::Error::other)?;
        let (jobs, queue) = mpsc::channel::<Weak<Component>>();
        std::thread::Builder::new()
            .name("airlock-optimize-queue".into())
            .spawn(move || {
                for job in queue {
                    // A component a reload dropped meanwhile needs nothing.
                    if let Some(component) = job.upgrade() {
                        pool.install(|| optimize(&sandbox, &component));
                    }
                }
            })?;
        Ok(Optimizer { jobs })
    }

    /// Queues `component` when its optimised code is still to be compiled
    /// (queuing it twice compiles it once).
    pub(crate) fn enqueue(&self, component: &Arc<Component>) {
        if component.awaits_optimizing() {
            // Fails only once the thread is gone: nothing left to serve.
            let _ = self.jobs.send(Arc::downgrade(component));
        }
    }
}

/// Compiles, links and puts in place one component's optimised code. A
/// failure keeps the quick-tier code, which serves as well, only slower.
fn optimize(sandbox: &Sandbox, component: &Component) {
    let Some(bytes) = component.take_unoptimized() else {
        return;
    };
    let started = Instant::now();
    let exports = component.code().exports();
    let linked = sandbox
        .compile_optimized(&component.digest, &bytes)
        .and_then(|compiled| sandbox.link(&compiled, exports));
    match linked {
        Ok(linked) => {
            component.replace_code(linked);
            tracing::info!(
                "{}: optimised code in place after {:.1} s",
                component.name,
                started.elapsed().as_secs_f64()
            );
        }
        Err(err) => tracing::warn!(
            "{}: cannot compile optimised code, calls stay on the quick tier: {err:#}",
            component.name
        ),
    }
}
