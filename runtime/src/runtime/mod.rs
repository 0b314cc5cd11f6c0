//! The runtime: the catalog being served, the policy, the audit log and the
//! sandbox together, and the one entry point for calls
//! ([`Runtime::prepare`], which hands over to [`crate::call`]).
//!
//! `Runtime` is the front; how its catalog comes to be lives beside it:
//!
//! ```text
//! fetching   where components named by reference come from by default
//! pending    the components still loading, and what each waits on
//! component  loading one component (read or fetch, pin, compile, check)
//! optimize   quick-tier components' optimised code, compiled behind them
//! loading    a server's components, loaded while it already serves
//! reload     hot reload of the catalog (`serve --watch`)
//! ```
//!
//! `loading` and `reload` drive a `Runtime`; the others are what it is
//! made of.

pub mod component;
mod fetching;
pub mod loading;
mod optimize;
pub mod pending;
pub mod reload;

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock, RwLock};

use serde_json::Value;

use crate::audit::AuditLog;
use crate::call::{self, CallError, Caller, PreparedCall, PreparedOffer, ResourceUpdates, Running};
use crate::catalog::{Catalog, LoadError, Loaded, Tool};
use crate::observe::CallObserver;
use crate::offer::OfferRequest;
use crate::policy::{Grant, Policy};
use crate::sandbox::Sandbox;
use crate::source::{Resolver, Source};
use crate::tool::Output;

pub use component::{LoadReport, Loader};
pub use fetching::{default_resolver, default_store, source_tls};
use optimize::Optimizer;
use pending::{Pending, PendingList, Phase};

/// The catalog, the policy and the sandbox.
pub struct Runtime {
    sandbox: Arc<Sandbox>,
    policy: Policy,
    catalog: RwLock<Arc<Catalog>>,
    audit: Option<Arc<AuditLog>>,
    /// Prepared calls not yet finished, across every catalog version.
    running: Arc<Running>,
    /// Where components' `host.resource-updated` calls are announced.
    updates: Arc<ResourceUpdates>,
    /// Fetches components named by reference (`oci://`, `https://`).
    resolver: Resolver,
    /// Component files still loading after serving began, and what each
    /// waits on.
    loading: PendingList,
    /// Compiles optimised code for quick-tier components, once
    /// [`Runtime::optimize_in_background`] started it.
    optimizer: OnceLock<Optimizer>,
    /// The cordons whose workers run some components' guests (serving
    /// only; set once, before serving).
    cordons: OnceLock<Arc<crate::cordon::Cordons>>,
}

impl Runtime {
    /// A runtime with an empty catalog. When the policy names an audit log
    /// that cannot be opened, this logs the error and runs without one; use
    /// [`Runtime::try_new`] to refuse to start instead.
    pub fn new(sandbox: Sandbox, policy: Policy) -> Self {
        let audit = policy
            .audit_path()
            .and_then(|path| match AuditLog::open(path) {
                Ok(log) => Some(Arc::new(log.with_answers(policy.audit_answers()))),
                Err(err) => {
                    tracing::error!("cannot open the audit log {}: {err}", path.display());
                    None
                }
            });
        Runtime {
            sandbox: Arc::new(sandbox),
            policy,
            catalog: RwLock::new(Arc::new(Catalog::new())),
            audit,
            running: Arc::default(),
            updates: Arc::default(),
            resolver: default_resolver(),
            loading: PendingList::default(),
            optimizer: OnceLock::new(),
            cordons: OnceLock::new(),
        }
    }

    /// Fetches components named by reference with `resolver` (its store,
    /// lock file and network settings) instead of the default one.
    pub fn with_resolver(mut self, resolver: Resolver) -> Self {
        self.resolver = resolver;
        self
    }

    pub fn resolver(&self) -> &Resolver {
        &self.resolver
    }

    /// For a component named by reference, what its lock entry says now
    /// (`Some("")` when it has none), so a hot reload sees `airlock pull
    /// --update`; `None` for a file.
    pub fn locked_digest(&self, label: &Path) -> Option<String> {
        let source = Source::from_path(label).ok().filter(Source::is_remote)?;
        match self.resolver.locked(&source) {
            Ok(locked) => Some(
                locked
                    .map(|l| format!("{} {}", l.manifest.unwrap_or_default(), l.component))
                    .unwrap_or_default(),
            ),
            Err(err) => {
                tracing::warn!("{err}");
                Some(String::new())
            }
        }
    }

    /// Like [`Runtime::new`], but fails when the audit log cannot be opened.
    pub fn try_new(sandbox: Sandbox, policy: Policy) -> Result<Self, std::io::Error> {
        if let Some(path) = policy.audit_path() {
            AuditLog::open(path).map_err(|err| {
                std::io::Error::new(
                    err.kind(),
                    format!("cannot open the audit log {}: {err}", path.display()),
                )
            })?;
        }
        Ok(Self::new(sandbox, policy))
    }

    /// Calls prepared and not yet finished (running, or waiting for
    /// confirmation), whatever the door they came through; shutdown waits
    /// for them and stops those that outlive its grace period.
    pub fn running(&self) -> &Running {
        &self.running
    }

    /// Where components' resource updates are announced (the MCP server
    /// listens, and tells the subscribed clients).
    pub fn resource_updates(&self) -> &Arc<ResourceUpdates> {
        &self.updates
    }

    pub fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }

    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The current catalog (a snapshot: later reloads do not change it).
    pub fn catalog(&self) -> Arc<Catalog> {
        self.catalog
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Replaces the catalog (hot reload); running calls keep their tools.
    pub fn replace_catalog(&self, catalog: Catalog) {
        self.queue_optimizing(&catalog);
        *self.catalog.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(catalog);
    }

    /// Compiles the optimised code of every quick-tier component, now and
    /// as components load, on a thread of its own (for a server: a
    /// one-off `call` ends before it would be used).
    pub fn optimize_in_background(&self) -> std::io::Result<()> {
        if self.optimizer.get().is_none() {
            let optimizer = Optimizer::start(self.sandbox.clone())?;
            // A second caller's optimiser is dropped, and its thread ends.
            let _ = self.optimizer.set(optimizer);
        }
        self.queue_optimizing(&self.catalog());
        Ok(())
    }

    fn queue_optimizing(&self, catalog: &Catalog) {
        if let Some(optimizer) = self.optimizer.get() {
            for component in catalog.components() {
                optimizer.enqueue(component);
            }
        }
    }

    /// Loads `.wasm` files and folders of them (plus every component the
    /// policy names by `source`) into a new catalog. A bad component is
    /// refused and reported; the others load.
    pub fn load(&self, paths: &[PathBuf]) -> LoadReport {
        let mut report = LoadReport::default();
        let mut catalog = Catalog::new();
        let loader = self.loader();
        for file in component::expand(paths, &self.policy) {
            let loaded = loader.load(&file);
            report.record(&mut catalog, file, loaded);
        }
        self.replace_catalog(catalog);
        report
    }

    /// Adds what loading `file` gave to the catalog being served; refused
    /// when one of its names is served already (the first to arrive wins:
    /// [`crate::loading`] keeps file order instead, whichever arrives first).
    pub fn admit(&self, file: PathBuf, loaded: Result<Loaded, LoadError>) -> LoadReport {
        self.loading.remove(&file);
        let mut report = LoadReport::default();
        let mut current = self.catalog.write().unwrap_or_else(|p| p.into_inner());
        let mut catalog = Catalog::clone(&current);
        report.record(&mut catalog, file, loaded);
        self.queue_optimizing(&catalog);
        *current = Arc::new(catalog);
        report
    }

    /// Marks `files` as loading: [`Runtime::still_loading`] counts them
    /// until [`Runtime::admit`] takes each.
    pub fn set_loading(&self, files: &[PathBuf]) {
        self.loading.set(files);
    }

    /// How many components are still loading (an unknown tool may be one
    /// of theirs).
    pub fn still_loading(&self) -> usize {
        self.loading.len()
    }

    /// Waits until none of the start's components is loading any more,
    /// but not past `bound` after the start began; true when none is.
    pub async fn settled(&self, bound: std::time::Duration) -> bool {
        self.loading.settled(bound).await
    }

    /// The component files still loading, in file order.
    pub fn loading_files(&self) -> Vec<PathBuf> {
        self.loading
            .snapshot()
            .into_iter()
            .map(|p| p.file)
            .collect()
    }

    /// The components still loading, each with what it waits on.
    pub fn loading_now(&self) -> Vec<Pending> {
        self.loading.snapshot()
    }

    /// Records what `file`, still loading, waits on now.
    pub(crate) fn loading_phase(&self, file: &Path, phase: Phase) {
        self.loading.enter(file, phase);
    }

    /// Takes `file` off the components still loading.
    pub(crate) fn loading_done(&self, file: &Path) {
        self.loading.remove(file);
    }

    /// Replaces the catalog by what `change` makes of it, with no other
    /// change in between; optimises the components `change` added.
    pub(crate) fn update_catalog<T>(&self, change: impl FnOnce(&Catalog) -> (Catalog, T)) -> T {
        let mut current = self.catalog.write().unwrap_or_else(|p| p.into_inner());
        let (catalog, out) = change(&current);
        if let Some(optimizer) = self.optimizer.get() {
            for component in catalog.components() {
                if !current
                    .components()
                    .iter()
                    .any(|c| Arc::ptr_eq(c, component))
                {
                    optimizer.enqueue(component);
                }
            }
        }
        *current = Arc::new(catalog);
        out
    }

    /// The component files `paths` stand for now (each `.wasm`, each
    /// `.wasm` in a folder, each source the policy names), for a watcher.
    pub fn files(&self, paths: &[PathBuf]) -> Vec<PathBuf> {
        component::expand(paths, &self.policy)
    }

    /// The names the components `paths` stand for load under (what a
    /// `[components.NAME]` section must say): the file stem of a file, the
    /// section of a source the policy names, else the reference's last part.
    pub fn component_names(&self, paths: &[PathBuf]) -> Vec<String> {
        let loader = self.loader();
        self.files(paths)
            .iter()
            .filter_map(|file| Some(loader.name_of(file, &Source::from_path(file).ok()?)))
            .collect()
    }

    /// Loads and checks one component file (with the policy's pin and tool
    /// sections) without touching the catalog.
    pub fn load_file(&self, path: &Path) -> Result<Loaded, LoadError> {
        self.loader().load(path)
    }

    /// What loading a component needs of this runtime.
    pub fn loader(&self) -> Loader<'_> {
        Loader {
            policy: &self.policy,
            sandbox: &self.sandbox,
            resolver: &self.resolver,
            pending: &self.loading,
            cordons: self.cordons.get(),
        }
    }

    /// The effective grant of a tool under this runtime's policy.
    pub fn grant_for(&self, tool: &Tool) -> Grant {
        call::grant_for(&self.policy, tool)
    }

    /// Runs the guests of cordoned components in their workers from now
    /// on (once; a second set is ignored).
    pub fn set_cordons(&self, cordons: Arc<crate::cordon::Cordons>) {
        let _ = self.cordons.set(cordons);
    }

    /// The cordons set, if any.
    pub fn cordons(&self) -> Option<&Arc<crate::cordon::Cordons>> {
        self.cordons.get()
    }

    /// Everything that can be checked before the guest runs, on behalf of
    /// `caller` (see [`call::prepare`]).
    pub fn prepare(
        &self,
        caller: Caller,
        tool: &str,
        arguments: Value,
    ) -> Result<PreparedCall, CallError> {
        let catalog = self.catalog();
        call::prepare(&self.setting(&catalog), caller, tool, arguments)
    }

    /// What preparing a call or an offer needs, with `catalog` as it is now.
    fn setting<'a>(&'a self, catalog: &'a Arc<Catalog>) -> call::Setting<'a> {
        call::Setting {
            catalog,
            policy: &self.policy,
            sandbox: &self.sandbox,
            cordons: self.cordons.get(),
            audit: self.audit.as_ref(),
            running: &self.running,
            updates: &self.updates,
        }
    }

    /// A resource read, prompt or completion, checked and ready to run on
    /// behalf of `caller` (see [`call::prepare_offer`]).
    pub fn prepare_offer(
        &self,
        caller: Caller,
        request: OfferRequest,
    ) -> Result<PreparedOffer, CallError> {
        let catalog = self.catalog();
        call::prepare_offer(&self.setting(&catalog), caller, request)
    }

    /// Records a read the runtime answered from memory (a skill's file):
    /// its counters, log line and audit entry, as a read that ran has.
    pub fn record_answered(
        &self,
        caller: &Caller,
        label: &str,
        digest: &str,
        started: std::time::Instant,
        bytes: (usize, usize),
    ) {
        call::answered_from_memory(self.audit.as_ref(), caller, label, digest, started, bytes);
    }

    /// The grant of a component's reads, prompts and completions.
    pub fn grant_for_offers(&self, component: &crate::catalog::Component) -> Grant {
        call::grant_for_offers(&self.policy, component)
    }

    /// Prepares and runs a call (blocking), with no one to confirm it.
    pub fn call(
        &self,
        caller: Caller,
        tool: &str,
        arguments: Value,
        observer: Arc<dyn CallObserver>,
    ) -> Result<Output, CallError> {
        self.prepare(caller, tool, arguments)?.run(observer)
    }
}
