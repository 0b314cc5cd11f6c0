//! The runtime: the loaded catalog, the policy, the audit log and the
//! sandbox together, and the one entry point for calls
//! ([`Runtime::prepare`], which hands over to [`crate::call`]).

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock, RwLock};

use serde_json::Value;

use crate::audit::AuditLog;
use crate::call::{self, CallError, Caller, PreparedCall, Running};
use crate::catalog::{self, Catalog, LoadError, Tool};
use crate::observe::CallObserver;
use crate::optimize::Optimizer;
use crate::pending::{Pending, PendingList, Phase};
use crate::policy::{CaBundle, Grant, Policy, PolicyError, Roots, Trust};
use crate::sandbox::{CompileCache, Sandbox};
use crate::source::{Expect, Progress, Resolver, Source, Store};
use crate::tool::Output;

/// What loading a set of paths did.
#[derive(Default)]
pub struct LoadReport {
    /// Each loaded file with the names of its tools.
    pub loaded: Vec<(PathBuf, Vec<String>)>,
    pub refused: Vec<LoadError>,
}

impl LoadReport {
    /// Records how loading `file` went, adding its tools to `catalog`
    /// unless one of their names is there already.
    fn record(
        &mut self,
        catalog: &mut Catalog,
        file: PathBuf,
        loaded: Result<Vec<Tool>, LoadError>,
    ) {
        match loaded {
            Ok(tools) => {
                let names = tools.iter().map(|t| t.info.name.clone()).collect();
                match catalog.add(tools) {
                    Ok(()) => self.loaded.push((file, names)),
                    Err(err) => self.refused.push(err),
                }
            }
            Err(err) => self.refused.push(err),
        }
    }
}

/// The catalog, the policy and the sandbox.
pub struct Runtime {
    sandbox: Arc<Sandbox>,
    policy: Policy,
    catalog: RwLock<Arc<Catalog>>,
    audit: Option<Arc<AuditLog>>,
    /// Prepared calls not yet finished, across every catalog version.
    running: Arc<Running>,
    /// Fetches components named by reference (`oci://`, `https://`).
    resolver: Resolver,
    /// Component files still loading after serving began, and what each
    /// waits on.
    loading: PendingList,
    /// Compiles optimised code for quick-tier components, once
    /// [`Runtime::optimize_in_background`] started it.
    optimizer: OnceLock<Optimizer>,
}

/// TLS for fetching components: the bundled (webpki) roots and the CA
/// bundle `ca_file` (else `$AIRLOCK_CA_FILE`), from the client
/// configurations the sandbox keeps for tools' https (`sandbox::tls`: one
/// crypto provider, one configuration per trust setting).
pub fn source_tls(ca_file: Option<&Path>) -> Result<tokio_rustls::TlsConnector, String> {
    let file = ca_file
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os("AIRLOCK_CA_FILE").map(PathBuf::from));
    let ca = file
        .map(|f| CaBundle::read(&f).map_err(|e| format!("AIRLOCK_CA_FILE: {e}")))
        .transpose()?;
    let trust = Trust {
        roots: Roots::Bundled,
        ca,
    };
    crate::sandbox::tls_connector(&trust).map_err(|e| e.to_string())
}

/// The resolver a runtime starts with: the default store, no lock file,
/// [`source_tls`], HTTPS only, the environment's credentials.
pub fn default_resolver() -> Resolver {
    Resolver::new(default_store()).with_tls(source_tls(None))
}

/// The store: `$AIRLOCK_STORE_DIR`, else `store/` in the default compile
/// cache's folder (`~/.cache/airlock/store`).
pub fn default_store() -> Store {
    if let Some(dir) = std::env::var_os("AIRLOCK_STORE_DIR") {
        return Store::new(dir);
    }
    let cache = CompileCache::default_dir().unwrap_or_else(|| std::env::temp_dir().join("airlock"));
    Store::new(cache.join("store"))
}

impl Runtime {
    /// A runtime with an empty catalog. When the policy names an audit log
    /// that cannot be opened, this logs the error and runs without one; use
    /// [`Runtime::try_new`] to refuse to start instead.
    pub fn new(sandbox: Sandbox, policy: Policy) -> Self {
        let audit = policy
            .audit_path()
            .and_then(|path| match AuditLog::open(path) {
                Ok(log) => Some(Arc::new(log)),
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
            resolver: default_resolver(),
            loading: PendingList::default(),
            optimizer: OnceLock::new(),
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
        for file in expand(paths, &self.policy) {
            let loaded = self.load_one(&file);
            report.record(&mut catalog, file, loaded);
        }
        self.replace_catalog(catalog);
        report
    }

    /// Adds what loading `file` gave to the catalog being served; refused
    /// when one of its names is served already (the first to arrive wins:
    /// [`crate::loading`] keeps file order instead, whichever arrives first).
    pub fn admit(&self, file: PathBuf, loaded: Result<Vec<Tool>, LoadError>) -> LoadReport {
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
        expand(paths, &self.policy)
    }

    /// The names the components `paths` stand for load under (what a
    /// `[components.NAME]` section must say): the file stem of a file, the
    /// section of a source the policy names, else the reference's last part.
    pub fn component_names(&self, paths: &[PathBuf]) -> Vec<String> {
        self.files(paths)
            .iter()
            .filter_map(|file| Some(self.name_of(file, &Source::from_path(file).ok()?)))
            .collect()
    }

    /// The name `source` (found at `path`) loads under.
    fn name_of(&self, path: &Path, source: &Source) -> String {
        if !source.is_remote() {
            return source.default_name();
        }
        self.policy
            .component_with_source(path)
            .map_or_else(|| source.default_name(), |c| c.name.clone())
    }

    /// Loads and checks one component file (with the policy's pin and tool
    /// sections) without touching the catalog.
    pub fn load_file(&self, path: &Path) -> Result<Vec<Tool>, LoadError> {
        self.load_one(path)
    }

    fn load_one(&self, path: &Path) -> Result<Vec<Tool>, LoadError> {
        let (name, bytes) = self.read_component(path)?;
        self.compile_component(path, name, &bytes)
    }

    /// The first half of loading a component: its name and bytes, read or
    /// fetched, checked against the policy's pin.
    pub(crate) fn read_component(&self, path: &Path) -> Result<(String, Vec<u8>), LoadError> {
        let (name, bytes) = self.read(path)?;
        if let Some(expected) = self
            .policy
            .component(&name)
            .and_then(|c| c.sha256.as_deref())
        {
            let actual = catalog::sha256_hex(&bytes);
            if !actual.eq_ignore_ascii_case(expected) {
                return Err(LoadError::Invalid {
                    path: path.to_path_buf(),
                    reason: format!(
                        "sha256 is {actual}, but the policy pins {expected}; \
                         refusing a file that changed"
                    ),
                });
            }
        }
        Ok((name, bytes))
    }

    /// The second half: compiles `bytes`, lists and checks the tools, and
    /// applies the policy's tool sections.
    pub(crate) fn compile_component(
        &self,
        path: &Path,
        name: String,
        bytes: &[u8],
    ) -> Result<Vec<Tool>, LoadError> {
        let mut tools = catalog::load_bytes(&self.sandbox, path, &name, bytes)?;
        catalog::apply_policy_hints(&mut tools, |tool| self.policy.hints_declared(&name, tool))?;
        let names: Vec<&str> = tools.iter().map(|t| t.info.name.as_str()).collect();
        let unmatched = self.policy.unmatched_tools(&name, &names);
        if !unmatched.is_empty() {
            return Err(LoadError::UnmatchedTools {
                path: path.to_path_buf(),
                sections: PolicyError::from_all(unmatched),
            });
        }
        Ok(tools)
    }

    /// The name and bytes of a component: a file is read; a reference is
    /// resolved (lock, store, registry) and its signature checked before
    /// anything of it runs. The name is the file stem, or for a reference
    /// the policy section whose `source` it is (else its last part).
    fn read(&self, path: &Path) -> Result<(String, Vec<u8>), LoadError> {
        let source = Source::from_path(path).map_err(|e| LoadError::Invalid {
            path: path.to_path_buf(),
            reason: e.reason,
        })?;
        let name = self.name_of(path, &source);
        if !source.is_remote() {
            let bytes = std::fs::read(path).map_err(|source| LoadError::Read {
                path: path.to_path_buf(),
                source,
            })?;
            if let Some(key) = self.policy.verify_key(&name) {
                return Err(LoadError::Invalid {
                    path: path.to_path_buf(),
                    reason: format!(
                        "the policy requires a signature by {} (`verify` of \
                         [components.{name}] or [defaults]), which a local file cannot carry; \
                         serve it from a registry (airlock publish), or remove `verify`",
                        key.label
                    ),
                });
            }
            return Ok((name, bytes));
        }
        let expect = Expect {
            sha256: self
                .policy
                .component(&name)
                .and_then(|c| c.sha256.as_deref()),
            key: self.policy.verify_key(&name),
        };
        let progress = Progress::default();
        self.loading.enter(path, Phase::Fetching(progress.clone()));
        let fetched = self.resolver.fetch_watched(&source, expect, &progress)?;
        if fetched.downloaded {
            tracing::info!("fetched {source} ({})", fetched.component);
        }
        Ok((name, fetched.bytes))
    }

    /// The effective grant of a tool under this runtime's policy.
    pub fn grant_for(&self, tool: &Tool) -> Grant {
        call::grant_for(&self.policy, tool)
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
        let setting = call::Setting {
            catalog: &catalog,
            policy: &self.policy,
            sandbox: &self.sandbox,
            audit: self.audit.as_ref(),
            running: &self.running,
        };
        call::prepare(&setting, caller, tool, arguments)
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

/// Files to load: each `.wasm` path, each `.wasm` in a folder (sorted), and
/// each component source the policy names, without duplicates. A reference
/// (`oci://…`, `https://…`) stands for itself.
fn expand(paths: &[PathBuf], policy: &Policy) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for path in paths {
        if path.to_str().is_some_and(|p| p.contains("://")) {
            files.push(path.clone());
        } else if path.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(path)
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "wasm"))
                .collect();
            found.sort();
            files.extend(found);
        } else {
            files.push(path.clone());
        }
    }
    for component in policy.components() {
        if let Some(source) = &component.source {
            files.push(source.label());
        }
    }
    // One file however it is spelled (`tools/x.wasm`, `./tools/x.wasm`, an
    // absolute path): the first spelling stays.
    let mut seen = std::collections::HashSet::new();
    files.retain(|file| seen.insert(std::fs::canonicalize(file).unwrap_or_else(|_| file.clone())));
    files
}
