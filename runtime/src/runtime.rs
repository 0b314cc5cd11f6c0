//! The runtime: the loaded catalog, the policy and the sandbox together,
//! and the one entry point for calls ([`Runtime::prepare`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Instant;

use serde_json::Value;

use crate::audit::{AuditLog, Entry};
use crate::call::{CallError, CallObserver, Confirmation, PreparedCall, Refusal};
use crate::catalog::{self, Catalog, LoadError, Tool};
use crate::policy::{self, Consent, Grant, Policy};
use crate::sandbox::{CancelToken, Sandbox};
use crate::tool::Output;

/// A place in a tool's concurrency limit, given back on drop.
pub struct Slot {
    tool: Arc<Tool>,
    in_flight: Arc<AtomicUsize>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.tool.running.fetch_sub(1, Ordering::AcqRel);
        self.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

/// What loading a set of paths did.
#[derive(Default)]
pub struct LoadReport {
    /// Each loaded file with the names of its tools.
    pub loaded: Vec<(PathBuf, Vec<String>)>,
    pub refused: Vec<LoadError>,
}

/// The catalog, the policy and the sandbox.
pub struct Runtime {
    sandbox: Sandbox,
    policy: Policy,
    catalog: RwLock<Arc<Catalog>>,
    audit: Option<Arc<AuditLog>>,
    /// Prepared calls not yet finished, across every catalog version.
    in_flight: Arc<AtomicUsize>,
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
            sandbox,
            policy,
            catalog: RwLock::new(Arc::new(Catalog::new())),
            audit,
            in_flight: Arc::default(),
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
    /// confirmation). A server that stops waits for this to reach zero.
    pub fn calls_in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Acquire)
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
        *self.catalog.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(catalog);
    }

    /// Loads `.wasm` files and folders of them (plus every component the
    /// policy names by `source`) into a new catalog. A bad component is
    /// refused and reported; the others load.
    pub fn load(&self, paths: &[PathBuf]) -> LoadReport {
        let mut report = LoadReport::default();
        let mut catalog = Catalog::new();
        for file in expand(paths, &self.policy) {
            match self.load_one(&file) {
                Ok(tools) => {
                    let names = tools.iter().map(|t| t.info.name.clone()).collect();
                    match catalog.add(tools) {
                        Ok(()) => report.loaded.push((file, names)),
                        Err(err) => report.refused.push(err),
                    }
                }
                Err(err) => report.refused.push(err),
            }
        }
        self.replace_catalog(catalog);
        report
    }

    /// The component files `paths` stand for now (each `.wasm`, each
    /// `.wasm` in a folder, each source the policy names), for a watcher.
    pub fn files(&self, paths: &[PathBuf]) -> Vec<PathBuf> {
        expand(paths, &self.policy)
    }

    /// Loads and checks one component file (with the policy's pin and tool
    /// sections) without touching the catalog.
    pub fn load_file(&self, path: &Path) -> Result<Vec<Tool>, LoadError> {
        self.load_one(path)
    }

    fn load_one(&self, path: &Path) -> Result<Vec<Tool>, LoadError> {
        let bytes = std::fs::read(path).map_err(|source| LoadError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
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
        let tools = catalog::load_bytes(&self.sandbox, path, &bytes)?;
        for section in self.policy.tool_sections(&name) {
            if !tools.iter().any(|t| t.info.name == section) {
                return Err(LoadError::BadTool {
                    path: path.to_path_buf(),
                    tool: section.to_string(),
                    rule: format!(
                        "the policy has a section [components.{name}.tools.{section}], \
                         but the component declares no such tool"
                    ),
                });
            }
        }
        Ok(tools)
    }

    /// The effective grant of a tool under this runtime's policy.
    pub fn grant_for(&self, tool: &Tool) -> Grant {
        let settings = self
            .policy
            .settings_for(&tool.component.name, &tool.info.name);
        policy::effective(&settings, tool.info.hints)
    }

    /// Everything that can be checked before the guest runs: the tool
    /// exists, the arguments fit, the policy permits the call, and the tool
    /// has room under its concurrency limit.
    pub fn prepare(&self, tool: &str, arguments: Value) -> Result<PreparedCall, CallError> {
        self.prepare_as(None, tool, arguments)
    }

    /// [`Runtime::prepare`] on behalf of a known caller (a token's name),
    /// which the audit log records. A refusal is recorded here; the outcome
    /// of a call that runs is recorded when it ends.
    pub fn prepare_as(
        &self,
        caller: Option<&str>,
        tool: &str,
        arguments: Value,
    ) -> Result<PreparedCall, CallError> {
        let started = Instant::now();
        // Only the audit log needs the size; skip the serialisation without one.
        let bytes_in = match &self.audit {
            Some(_) => arguments.to_string().len(),
            None => 0,
        };
        let found = self.catalog().tool(tool).cloned();
        let grant = found.as_ref().map(|t| self.grant_for(t));
        let result = match (&found, grant) {
            (Some(found), Some(grant)) => self.check(found, arguments, grant),
            _ => Err(CallError::UnknownTool(tool.to_string())),
        };
        match result {
            Ok(mut prepared) => {
                prepared.audit = self.audit.clone().map(|log| crate::call::Audit {
                    log,
                    caller: caller.map(str::to_string),
                    started,
                    bytes_in,
                });
                Ok(prepared)
            }
            Err(err) => {
                if let Some(log) = &self.audit {
                    log.record(&Entry {
                        call: None,
                        tool,
                        digest: found.as_ref().map(|t| t.component.digest.as_str()),
                        caller,
                        grant: None,
                        outcome: err.kind(),
                        duration: started.elapsed(),
                        bytes_in,
                        bytes_out: 0,
                        credentials_used: &[],
                    });
                }
                Err(err)
            }
        }
    }

    fn check(
        &self,
        tool: &Arc<Tool>,
        arguments: Value,
        grant: Grant,
    ) -> Result<PreparedCall, CallError> {
        let tool = tool.clone();
        let arguments = tool.args.prepare(arguments)?;
        if grant.consent == Some(Consent::Deny) {
            let (component, name) = (&tool.component.name, &tool.info.name);
            return Err(CallError::Refused(Refusal {
                message: format!(
                    "{name} is destructive and the operator's policy does not allow destructive calls for it"
                ),
                operator_hint: format!(
                    "set destructive = \"allow\" (or \"confirm\") under [components.{component}.tools.{name}] \
                     or [components.{component}] in the policy"
                ),
            }));
        }
        let limit = grant.limits.concurrency;
        if tool.running.fetch_add(1, Ordering::AcqRel) >= limit {
            tool.running.fetch_sub(1, Ordering::AcqRel);
            return Err(CallError::Busy {
                tool: tool.info.name.clone(),
                limit,
            });
        }
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        Ok(PreparedCall {
            id: crate::call::next_call_id(),
            _slot: Some(Slot {
                tool: tool.clone(),
                in_flight: self.in_flight.clone(),
            }),
            tool,
            arguments,
            grant,
            audit: None,
        })
    }

    /// Prepares and runs a call (blocking).
    pub fn call(
        &self,
        tool: &str,
        arguments: Value,
        observer: Arc<dyn CallObserver>,
        cancel: CancelToken,
        confirmation: Confirmation,
    ) -> Result<Output, CallError> {
        let result = self
            .prepare(tool, arguments)
            .and_then(|prepared| prepared.run(&self.sandbox, observer, cancel, confirmation));
        if let Err(CallError::Refused(refusal)) = &result
            && !refusal.operator_hint.is_empty()
        {
            // The client's message names the capability; the operator's log
            // also names the policy key that would allow the call.
            tracing::warn!("{refusal}; to allow it: {}", refusal.operator_hint);
        }
        result
    }
}

/// Files to load: each `.wasm` path, each `.wasm` in a folder (sorted), and
/// each component source the policy names, without duplicates.
fn expand(paths: &[PathBuf], policy: &Policy) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
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
            files.push(source.clone());
        }
    }
    // One file however it is spelled (`tools/x.wasm`, `./tools/x.wasm`, an
    // absolute path): the first spelling stays.
    let mut seen = std::collections::HashSet::new();
    files.retain(|file| seen.insert(std::fs::canonicalize(file).unwrap_or_else(|_| file.clone())));
    files
}
