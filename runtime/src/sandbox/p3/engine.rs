//! The engine of WASI 0.3 components: wasmtime's component-model
//! concurrency on, its own pool, and the host interfaces of the 0.2
//! engines plus the 0.3 ones wasmtime-wasi and wasmtime-wasi-http provide.
//! Made when the first 0.3 component is compiled, so a runtime that never
//! loads one reserves no second pool and runs no second epoch ticker.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use wasmtime::{Config, Engine};

use crate::sandbox::engine::{SandboxConfig, TICK, engine_config};
use crate::sandbox::linker::{Linkers, host_interfaces};
use crate::sandbox::tier::{Backend, Tier};

/// The concurrent engine, once a 0.3 component needed it.
pub(in crate::sandbox) struct Concurrent {
    config: SandboxConfig,
    /// The sandbox's ticker flag: set when the sandbox is dropped.
    stop: Arc<AtomicBool>,
    backend: OnceLock<Backend>,
    /// Held while the backend is made (two loads at once make one).
    making: Mutex<()>,
}

impl Concurrent {
    pub(in crate::sandbox) fn new(config: &SandboxConfig, stop: Arc<AtomicBool>) -> Self {
        Concurrent {
            config: config.clone(),
            stop,
            backend: OnceLock::new(),
            making: Mutex::new(()),
        }
    }

    /// The engine and linkers, made on first use.
    pub(in crate::sandbox) fn backend(&self) -> wasmtime::Result<&Backend> {
        if let Some(backend) = self.backend.get() {
            return Ok(backend);
        }
        let _making = self.making.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(backend) = self.backend.get() {
            return Ok(backend);
        }
        let backend = self.make()?;
        Ok(self.backend.get_or_init(|| backend))
    }

    /// The backend when it exists and `engine` is its engine.
    pub(in crate::sandbox) fn owning(&self, engine: &Engine) -> Option<&Backend> {
        self.backend
            .get()
            .filter(|backend| Engine::same(&backend.engine, engine))
    }

    fn make(&self) -> wasmtime::Result<Backend> {
        let engine = match Engine::new(&concurrent_config(&self.config, true)) {
            Ok(engine) => engine,
            Err(err) => {
                tracing::warn!(
                    "pooling allocator unavailable for WASI 0.3 components ({err:#}); \
                     allocating on demand"
                );
                Engine::new(&concurrent_config(&self.config, false))?
            }
        };
        let linkers = linkers(&engine)?;
        // Its own ticker: the 0.2 engines' ticker was started with them.
        let (ticking, stop) = (engine.clone(), self.stop.clone());
        std::thread::Builder::new()
            .name("airlock-epoch-p3".into())
            .spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(TICK);
                    ticking.increment_epoch();
                }
            })?;
        Ok(Backend { engine, linkers })
    }
}

/// The optimised tier's settings (pool, fuel, epochs, memory ceiling) with
/// the component model's concurrency on. No quick tier: 0.3 components
/// compile with Cranelift.
fn concurrent_config(config: &SandboxConfig, pooling: bool) -> Config {
    let mut c = engine_config(config, Tier::Optimized, pooling);
    c.concurrency_support(true);
    c.wasm_component_model_async(true);
    c
}

/// Every host interface of the 0.2 engines, and WASI 0.3's `cli`,
/// `clocks`, `random` and `http` (not its `filesystem` and `sockets`: see
/// the module above).
fn linkers(engine: &Engine) -> wasmtime::Result<Linkers> {
    let mut tool = host_interfaces(engine)?;
    wasmtime_wasi::p3::cli::add_to_linker(&mut tool)?;
    wasmtime_wasi::p3::clocks::add_to_linker(&mut tool)?;
    wasmtime_wasi::p3::random::add_to_linker(&mut tool)?;
    // `wasi:http/client` and `types`; each request goes through the
    // call's `outgoing::HttpFilter`, as a 0.2 request does.
    wasmtime_wasi_http::p3::add_to_linker(&mut tool)?;
    Ok(Linkers {
        wasmcp: tool.clone(),
        tool,
    })
}
