//! The sandbox: one wasmtime engine, and a fresh store and instance for
//! every call, with exactly the capabilities of the call's [`Grant`].
//!
//! Every limit a call can hit is recognised here and reported by name
//! ([`RunError`]): wall time (epoch interruption), memory (asked of the
//! limiter, not guessed from the trap kind), fuel, stack, and panics (the
//! message is read from the guest's captured stderr).
//!
//! Everything a call hands back passes [`redact`] on its way out (the
//! result and error here, log and progress messages in `call_state`), so a
//! secret injected into the call's requests never reaches the client.
//!
//! Where things are: `linker` links every host interface; `provision` makes
//! a call's store from its grant, capability by capability; `tier` picks
//! the compiler; `call_state` is what a store holds; the host interfaces
//! that bound what a guest does are each a module of their own (`folders`,
//! `sockets`, `waits`, `outgoing`, `config`, …). The store holds those
//! it bounds, so they do not name it: `linker` links each through a getter
//! of its view of the store; `interruption` (the cancel flag, why a call was
//! stopped) is below them all.

pub mod asks;
mod bindings;
mod bounded_fs;
mod budget;
mod cache;
mod call_state;
mod config;
mod engine;
mod folders;
mod interruption;
mod linker;
mod network;
mod offers;
mod outgoing;
mod p3;
mod pipe;
mod plain;
mod provision;
pub mod redact;
mod refusals;
mod run;
mod skills;
mod sockets;
pub mod tier;
mod tls;
mod waits;
mod wasmcp;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use wasmtime::component::Component;
use wasmtime::{Engine, Store};

pub use crate::offer::DescribedOffers;
pub use bindings::{CONTRACT, Offers, ToolPre, is_contract};
pub use cache::CompileCache;
pub use call_state::CallState;
pub use engine::{SandboxConfig, Tuning};
use engine::{TICK, engine_config};
pub use interruption::CancelToken;
pub use offers::OfferOutcome;
pub use p3::needs_concurrency;
pub use plain::FunctionsPre;
use run::Run;
use tier::Backend;
pub use tier::Tier;
pub use tls::{connector as tls_connector, crypto_provider};
pub use wasmcp::{WasmcpPre, check_imports as check_wasmcp_imports};

use crate::observe::CallObserver;
use crate::policy::{Grant, Limits};
pub use crate::policy::{format_duration, format_size};
use crate::telemetry::{self, SpanKind};
use crate::tool::{Content, Hints, Icon, TaskSupport};

/// A call that did not produce a result, by cause (serialisable: a
/// cordon's worker reports it to the serving process).
#[derive(Debug, Clone, PartialEq, thiserror::Error, serde::Serialize, serde::Deserialize)]
pub enum RunError {
    #[error("timed out after {}", format_duration(*.0))]
    TimedOut(Duration),
    #[error("memory limit of {} exceeded", format_size(*.0))]
    Memory(u64),
    #[error("fuel exhausted")]
    Fuel,
    #[error("stack overflow")]
    StackOverflow,
    #[error("the tool panicked: {0}")]
    Panic(String),
    #[error("the tool crashed: {0}")]
    Crashed(String),
    #[error("cancelled")]
    Cancelled,
    #[error("output of {} exceeds the {} limit", format_size(*actual), format_size(*limit))]
    OutputTooLarge { actual: u64, limit: u64 },
    #[error("the tool returned invalid structured output: {0}")]
    BadOutput(String),
    /// The tool reported that its arguments do not fit.
    #[error("{0}")]
    InvalidArguments(String),
    /// The tool ran and reported a failure.
    #[error("{0}")]
    Failed(String),
    /// The grant could not be set up (e.g. a granted folder vanished).
    #[error("cannot set up the call: {0}")]
    Setup(String),
}

/// How a guest's run ended when nothing went wrong: with its answer, or
/// stopped at a request to the client that only a later round of a multi
/// round-trip (2026-07-28) answers — one request, or those of a batch not
/// answered yet. Waiting is an outcome, not a failure.
#[derive(Debug, Clone, PartialEq)]
pub enum Ran<T> {
    Answered(T),
    Waits(Vec<crate::observe::Ask>),
}

impl<T> Ran<T> {
    /// The answer of a run no round can follow (the CLI, `/rpc`, a task, a
    /// session's requests in band): only a round's asking stops a guest to
    /// wait, so a wait here is a bug, answered as a crash, never as an
    /// answer.
    pub fn settled(self) -> Result<T, RunError> {
        match self {
            Ran::Answered(answer) => Ok(answer),
            Ran::Waits(_) => {
                tracing::error!("a run waits for a later round where none can follow");
                Err(RunError::Crashed(
                    "it waits for an answer of its client that no round can carry".into(),
                ))
            }
        }
    }

    /// The answer turned into another (a wait stays one).
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Ran<U> {
        match self {
            Ran::Answered(answer) => Ran::Answered(f(answer)),
            Ran::Waits(asks) => Ran::Waits(asks),
        }
    }

    /// The answer passed through `f` (a wait stays one).
    pub fn try_map<U, E>(self, f: impl FnOnce(T) -> Result<U, E>) -> Result<Ran<U>, E> {
        match self {
            Ran::Answered(answer) => f(answer).map(Ran::Answered),
            Ran::Waits(asks) => Ok(Ran::Waits(asks)),
        }
    }
}

impl RunError {
    /// A short machine-readable name of the cause (audit log, metrics).
    pub fn kind(&self) -> &'static str {
        match self {
            RunError::TimedOut(_) => "timeout",
            RunError::Memory(_) => "memory",
            RunError::Fuel => "fuel",
            RunError::StackOverflow => "stack",
            RunError::Panic(_) => "panic",
            RunError::Crashed(_) => "crash",
            RunError::Cancelled => "cancelled",
            RunError::OutputTooLarge { .. } => "output",
            RunError::BadOutput(_) => "bad-output",
            RunError::InvalidArguments(_) => "invalid-arguments",
            RunError::Failed(_) => "tool-error",
            RunError::Setup(_) => "setup",
        }
    }

    /// True when a limit of its grant stopped it (time, memory, fuel,
    /// stack, output): a limit hit, recorded as a refusal (a span event
    /// of its kind when tracing). Declared here, beside [`Self::kind`],
    /// so that a new cause says whether it is one.
    pub fn is_limit_hit(&self) -> bool {
        match self {
            RunError::TimedOut(_)
            | RunError::Memory(_)
            | RunError::Fuel
            | RunError::StackOverflow
            | RunError::OutputTooLarge { .. } => true,
            RunError::Panic(_)
            | RunError::Crashed(_)
            | RunError::Cancelled
            | RunError::BadOutput(_)
            | RunError::InvalidArguments(_)
            | RunError::Failed(_)
            | RunError::Setup(_) => false,
        }
    }

    /// True for the tool's own reports (as opposed to the runtime stopping it).
    pub fn is_tool_report(&self) -> bool {
        matches!(self, RunError::InvalidArguments(_) | RunError::Failed(_))
    }
}

/// A tool as the component describes it, before the catalog validates it
/// (serialisable: a cordon's worker lists its components' tools).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct DescribedTool {
    pub name: String,
    pub title: Option<String>,
    pub description: String,
    pub input_schema: String,
    pub output_schema: Option<String>,
    pub hints: Hints,
    /// Whether the tool declares its hints itself (a policy may declare
    /// hints only for a tool that does not).
    pub own_hints: bool,
    pub icons: Vec<Icon>,
    pub task_support: TaskSupport,
}

/// What a guest returned from a successful call, before the runtime checks
/// it against the tool's output schema.
#[derive(Debug, Clone)]
pub struct RawOutput {
    pub content: Vec<Content>,
    /// Parsed from the guest's JSON text (so redacted as decoded values).
    pub structured: Option<serde_json::Value>,
}

impl RawOutput {
    /// Its size as the output limit counts it: the bytes of its content,
    /// and of its structured JSON as text.
    pub fn size(&self) -> u64 {
        let structured = self
            .structured
            .as_ref()
            .map_or(0, |v| crate::json::to_vec(v).len() as u64);
        run::content_size(&self.content) + structured
    }
}

/// A limit for loading: listing tools must be quick and small (each
/// limit's value for this is declared with it, in `policy/limits.rs`).
pub const DESCRIBE_LIMITS: Limits = Limits::DESCRIBE;

/// The engines of both tiers, their linkers and the epoch ticker.
pub struct Sandbox {
    /// Cranelift's: every component's code in the end.
    optimized: Backend,
    /// Winch's, for the first calls of a big component (see [`Tier`]);
    /// `None` when tiering is off.
    quick: Option<Backend>,
    tier_above: Option<usize>,
    cache: Option<CompileCache>,
    fuel: bool,
    /// Instances the pool holds at once.
    instances: u32,
    ticker: Arc<AtomicBool>,
    /// The engine of WASI 0.3 components (see `p3`), once one loaded.
    #[cfg(feature = "p3")]
    concurrent: p3::engine::Concurrent,
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        self.ticker.store(true, Ordering::Relaxed);
    }
}

impl Sandbox {
    pub fn new(config: &SandboxConfig) -> anyhow::Result<Self> {
        let engine = match Engine::new(&engine_config(config, Tier::Optimized, true)) {
            Ok(engine) => engine,
            Err(err) => {
                // The pool reserves address space up front; where that is not
                // allowed (e.g. a low `ulimit -v`) fall back to on-demand.
                tracing::warn!("pooling allocator unavailable ({err:#}); allocating on demand");
                Engine::new(&engine_config(config, Tier::Optimized, false))?
            }
        };
        let optimized = Backend::new(engine)?;
        let quick = match config.tier_above {
            Some(_) => Some(Backend::new(Engine::new(&engine_config(
                config,
                Tier::Quick,
                false,
            ))?)?),
            None => None,
        };
        let stop = Arc::new(AtomicBool::new(false));
        // Both engines tick: a call's time limit and cancellation hold on
        // either tier's code.
        let engines: Vec<Engine> = std::iter::once(&optimized)
            .chain(&quick)
            .map(|backend| backend.engine.clone())
            .collect();
        let ticker_stop = stop.clone();
        std::thread::Builder::new()
            .name("airlock-epoch".into())
            .spawn(move || {
                while !ticker_stop.load(Ordering::Relaxed) {
                    std::thread::sleep(TICK);
                    for engine in &engines {
                        engine.increment_epoch();
                    }
                }
            })?;
        Ok(Sandbox {
            optimized,
            quick,
            tier_above: config.tier_above,
            cache: config.cache.clone(),
            fuel: config.fuel,
            instances: config.instances,
            #[cfg(feature = "p3")]
            concurrent: p3::engine::Concurrent::new(config, stop.clone()),
            ticker: stop,
        })
    }

    /// How many instances may exist at once (the pool's size).
    pub fn instances(&self) -> u32 {
        self.instances
    }

    /// The optimised tier's engine.
    pub fn engine(&self) -> &Engine {
        &self.optimized.engine
    }

    /// The store a call with `grant` runs in, set up exactly as for a real
    /// call; the benchmarks time the phases of a call with it.
    #[doc(hidden)]
    pub fn bench_store(&self, grant: &Grant) -> Result<Store<CallState>, RunError> {
        let run = provision::start(
            &self.optimized.engine,
            grant,
            self.fuel,
            Arc::new(crate::observe::Unobserved),
            CancelToken::new(),
        )?;
        Ok(run.store)
    }

    /// Compiles a component for its first calls (or loads it from the
    /// compile cache): on the quick tier when it is big and its optimised
    /// code is not cached (see [`tier::first_tier`]), else optimised.
    pub fn compile(&self, digest: &str, bytes: &[u8]) -> wasmtime::Result<Component> {
        if let Some(why) = p3::needs_concurrency(bytes) {
            return self.compile_concurrent(&why, digest, bytes);
        }
        let cached = self
            .cache
            .as_ref()
            .and_then(|cache| cache.load(&self.optimized.engine, Tier::Optimized, digest));
        if let Some(component) = cached {
            return Ok(component);
        }
        let quick = self
            .quick
            .as_ref()
            .filter(|_| tier::first_tier(bytes.len(), self.tier_above, false) == Tier::Quick);
        match quick {
            // Winch lacks proposals Cranelift compiles (tail calls, …): a
            // component using one starts on optimised code instead. An
            // invalid component thus fails with Cranelift's message.
            Some(quick) => self
                .compile_on(quick, Tier::Quick, digest, bytes)
                .or_else(|err| {
                    tracing::debug!("quick tier cannot compile {digest} ({err:#}); optimising");
                    self.compile_optimized(digest, bytes)
                }),
            None => self.compile_optimized(digest, bytes),
        }
    }

    /// Compiles a component's optimised code (or loads it from the compile
    /// cache), however big it is.
    pub fn compile_optimized(&self, digest: &str, bytes: &[u8]) -> wasmtime::Result<Component> {
        self.compile_on(&self.optimized, Tier::Optimized, digest, bytes)
    }

    fn compile_on(
        &self,
        backend: &Backend,
        tier: Tier,
        digest: &str,
        bytes: &[u8],
    ) -> wasmtime::Result<Component> {
        match &self.cache {
            Some(cache) => cache.load_or_compile(&backend.engine, tier, digest, bytes),
            None => Component::new(&backend.engine, bytes),
        }
    }

    /// Which tier's code runs on `engine` (a component's or linked code's).
    pub fn tier(&self, engine: &Engine) -> Tier {
        match &self.quick {
            Some(quick) if Engine::same(engine, &quick.engine) => Tier::Quick,
            _ => Tier::Optimized,
        }
    }

    fn backend(&self, component: &Component) -> &Backend {
        if let Some(concurrent) = self.concurrent_backend(component.engine()) {
            return concurrent;
        }
        match (&self.quick, self.tier(component.engine())) {
            (Some(quick), Tier::Quick) => quick,
            _ => &self.optimized,
        }
    }

    /// The interfaces a component imports, e.g. `wasi:filesystem/types@0.2.6`.
    pub fn imports(&self, component: &Component) -> Vec<String> {
        component
            .component_type()
            .imports(component.engine())
            .map(|(name, _)| name.to_string())
            .collect()
    }

    /// Links a component against what the runtime provides (on the engine
    /// that compiled it). Fails when it imports anything else, or lacks the
    /// exports its kind needs.
    pub fn link(&self, component: &Component, kind: Exports) -> wasmtime::Result<Linked> {
        let backend = self.backend(component);
        let linker = match kind {
            Exports::Wasmcp => &backend.linkers.wasmcp,
            _ => &backend.linkers.tool,
        };
        let pre = linker.instantiate_pre(component)?;
        self.checked_link(match kind {
            Exports::Contract => Linked::Tool(ToolPre::new(pre)?),
            Exports::Functions(functions) => Linked::Functions(FunctionsPre::new(pre, functions)?),
            Exports::Wasmcp => Linked::Wasmcp(WasmcpPre::new(pre)?),
        })
    }

    /// Lists the component's tools, under [`DESCRIBE_LIMITS`].
    pub fn describe(&self, pre: &ToolPre<CallState>) -> Result<Vec<DescribedTool>, RunError> {
        let mut run = self.start_listing(pre.engine())?;
        let result = match self.concurrent_backend(pre.engine()) {
            Some(_) => run.describe_concurrent(pre),
            None => pre.describe(&mut run.store),
        };
        let tools = run.finish(result)?;
        Ok(tools.into_iter().map(DescribedTool::from).collect())
    }

    /// Runs tool `name` with `arguments` (a JSON object as text) in a fresh
    /// instance with exactly `grant`. The outcome comes with the call's
    /// [`Teardown`]: drop it once the outcome is on its way.
    pub fn call(
        &self,
        pre: &Linked,
        name: &str,
        arguments: &str,
        grant: &Grant,
        observer: Arc<dyn CallObserver>,
        cancel: CancelToken,
    ) -> (Result<Ran<RawOutput>, RunError>, Teardown) {
        let concurrent = self.concurrent_backend(pre.engine()).is_some();
        let call = |run: &mut Run| match pre {
            _ if concurrent => run.call_concurrent(pre, name, arguments),
            Linked::Tool(pre) => run.call(pre, name, arguments),
            Linked::Functions(pre) => run.call_function(pre, name, arguments),
            Linked::Wasmcp(pre) => run.call_wasmcp(pre, name, arguments),
        };
        self.run_granted(pre, grant, observer, cancel, call, redact::Redactor::output)
    }

    /// Runs `body` in a fresh instance of `pre`'s component provisioned
    /// with exactly `grant` — a tool call, a read, a prompt or a
    /// completion alike. What it hands back passes `redact` (its error the
    /// redactor's own), the one way out of the sandbox, and comes with the
    /// run's [`Teardown`]. A guest stopped at a request for a later round
    /// [`Ran::Waits`], whatever `body` made of the stop.
    fn run_granted<T>(
        &self,
        pre: &Linked,
        grant: &Grant,
        observer: Arc<dyn CallObserver>,
        cancel: CancelToken,
        body: impl FnOnce(&mut Run) -> Result<T, RunError>,
        redact: impl FnOnce(&redact::Redactor, T) -> T,
    ) -> (Result<Ran<T>, RunError>, Teardown) {
        let provisioning = telemetry::phase("airlock.provision", SpanKind::Internal, Vec::new);
        let mut run = match provision::start(pre.engine(), grant, self.fuel, observer, cancel) {
            Ok(run) => run,
            Err(err) => return (Err(err), Teardown::none()),
        };
        drop(provisioning);
        let running = telemetry::phase("airlock.run", SpanKind::Internal, Vec::new);
        let result = body(&mut run);
        if let Err(err) = &result {
            running.failed(err.kind());
        }
        drop(running);
        // Its params were redacted before the request was made.
        let waits = std::mem::take(&mut run.store.data_mut().asks.next_round);
        let redactor = &run.store.data().redactor;
        let result = match result {
            _ if !waits.is_empty() => Ok(Ran::Waits(waits)),
            Ok(answer) => Ok(Ran::Answered(redact(redactor, answer))),
            Err(err) => Err(redactor.error(err)),
        };
        // What it printed, whatever the outcome (a failure's output is
        // often the reason).
        let guest_log = redactor.log(run.output.take());
        let teardown = Teardown {
            store: Some(run.store),
            guest_log,
            apart: None,
        };
        (result, teardown)
    }

    /// A store for listing a component's tools: no grant but
    /// [`DESCRIBE_LIMITS`], no one observing.
    fn start_listing(&self, engine: &Engine) -> Result<Run, RunError> {
        let grant = Grant {
            limits: DESCRIBE_LIMITS,
            ..Grant::default()
        };
        provision::start(
            engine,
            &grant,
            self.fuel,
            Arc::new(crate::observe::Unobserved),
            CancelToken::new(),
        )
    }
}

/// A finished call's store. Dropping it tears the instance down: its pool
/// slot is reset (the pages the call dirtied) and freed, its files and
/// sockets closed. That is about a third of a trivial call, so callers
/// hand the outcome on first and drop this afterwards.
#[must_use = "dropping the teardown at once is fine; keep it only to answer first"]
pub struct Teardown {
    /// Held to be dropped, and asked what the call's requests carried.
    store: Option<Store<CallState>>,
    /// What the guest printed (stdout and stderr, capped and redacted) and
    /// how many bytes the cap dropped.
    guest_log: (String, u64),
    /// What a run in another process (a cordon's worker) reported of its
    /// store, which stayed there.
    apart: Option<Apart>,
}

/// What a teardown tells of a store in another process.
struct Apart {
    credentials_used: Vec<String>,
    asks: Vec<asks::AskRecord>,
    folder_refusals: Option<u64>,
}

impl Teardown {
    /// Nothing to tear down: the call never got a store.
    pub(crate) fn none() -> Self {
        Teardown {
            store: None,
            guest_log: (String::new(), 0),
            apart: None,
        }
    }

    /// The teardown of a run in a cordon's worker, as it reported it.
    pub(crate) fn apart(
        guest_log: (String, u64),
        credentials_used: Vec<String>,
        asks: Vec<asks::AskRecord>,
        folder_refusals: Option<u64>,
    ) -> Self {
        Teardown {
            store: None,
            guest_log,
            apart: Some(Apart {
                credentials_used,
                asks,
                folder_refusals,
            }),
        }
    }

    /// What the guest printed to stdout and stderr (redacted, up to the
    /// grant's `limits.log`), and how many more bytes were dropped.
    pub fn guest_log(&self) -> (&str, u64) {
        (&self.guest_log.0, self.guest_log.1)
    }

    /// The injected credentials the call's requests carried, each once, as
    /// `HEADER for PATTERN (from VARIABLE)`: never a value.
    pub fn credentials_used(&self) -> Vec<String> {
        match (&self.store, &self.apart) {
            (Some(store), _) => store.data().net.credentials_used(),
            (None, Some(apart)) => apart.credentials_used.clone(),
            (None, None) => Vec::new(),
        }
    }

    /// The requests the call made of its client, in order (for its audit
    /// entry and the operator's log).
    pub fn asks(&self) -> &[asks::AskRecord] {
        match (&self.store, &self.apart) {
            (Some(store), _) => store.data().asks.records.as_slice(),
            (None, Some(apart)) => &apart.asks,
            (None, None) => &[],
        }
    }

    /// How many filesystem operations the read-only and create-only rules
    /// refused during the call, for its audit entry (`None` when no guest
    /// ran).
    pub fn folder_refusals(&self) -> Option<u64> {
        match (&self.store, &self.apart) {
            (Some(store), _) => Some(store.data().folder_guard.refusals()),
            (None, Some(apart)) => apart.folder_refusals,
            (None, None) => None,
        }
    }
}

/// What a component exports that the runtime serves, found before it is
/// linked: the airlock contract, plain functions, or wasmcp's tools.
pub enum Exports {
    Contract,
    Functions(Vec<crate::functions::Function>),
    Wasmcp,
}

/// A component linked against the runtime, by kind: what a call
/// instantiates.
pub enum Linked {
    /// Exports `airlock:tool/tools` (see [`CONTRACT`]).
    Tool(ToolPre<CallState>),
    /// Exports plain functions (see [`crate::functions`]).
    Functions(FunctionsPre),
    /// Exports `wasmcp:mcp-v20251125/tools` (see [`crate::wasmcp`]).
    Wasmcp(WasmcpPre),
}

impl Linked {
    /// The engine its code belongs to (a store for it must be made there).
    pub fn engine(&self) -> &Engine {
        match self {
            Linked::Tool(pre) => pre.engine(),
            Linked::Functions(pre) => pre.pre.engine(),
            Linked::Wasmcp(pre) => pre.pre.engine(),
        }
    }

    /// What it was linked with, to link other code of the same component
    /// (its optimised code) the same way.
    pub fn exports(&self) -> Exports {
        match self {
            Linked::Tool(_) => Exports::Contract,
            Linked::Functions(pre) => Exports::Functions(pre.functions().cloned().collect()),
            Linked::Wasmcp(_) => Exports::Wasmcp,
        }
    }

    /// The contract's bindings; `None` for other kinds.
    pub fn tool(&self) -> Option<&ToolPre<CallState>> {
        match self {
            Linked::Tool(pre) => Some(pre),
            Linked::Functions(_) | Linked::Wasmcp(_) => None,
        }
    }

    /// [`ToolPre::instantiate_call`], for the benchmarks' phase timings;
    /// fails for components without the contract.
    #[doc(hidden)]
    pub fn instantiate_call<'a>(
        &self,
        store: impl wasmtime::AsContextMut<Data = CallState>,
    ) -> wasmtime::Result<(wasmtime::component::Instance, bindings::CallFunc<'a>)> {
        self.tool()
            .ok_or_else(|| wasmtime::format_err!("not an airlock tool component"))?
            .instantiate_call(store)
    }
}
