//! The runtime: the loaded catalog, the policy and the sandbox together,
//! and the one entry point for calls ([`Runtime::prepare`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, RwLock};

use serde_json::Value;

use crate::call::{CallError, CallObserver, Confirmation, PreparedCall, Refusal};
use crate::catalog::{self, Catalog, LoadError, Tool};
use crate::policy::{self, Consent, Grant, Policy};
use crate::sandbox::{CancelToken, Sandbox};
use crate::tool::Output;

/// A place in a tool's concurrency limit, given back on drop.
pub struct Slot {
    tool: Arc<Tool>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.tool.running.fetch_sub(1, Ordering::AcqRel);
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
}

impl Runtime {
    pub fn new(sandbox: Sandbox, policy: Policy) -> Self {
        Runtime {
            sandbox,
            policy,
            catalog: RwLock::new(Arc::new(Catalog::new())),
        }
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

    fn load_one(&self, path: &Path) -> Result<Vec<Tool>, LoadError> {
        let bytes = std::fs::read(path).map_err(|source| LoadError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        if let Some(expected) = self.policy.component(&name).and_then(|c| c.sha256.as_deref()) {
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
        let catalog = self.catalog();
        let tool = catalog
            .tool(tool)
            .cloned()
            .ok_or_else(|| CallError::UnknownTool(tool.to_string()))?;
        let arguments = tool.args.prepare(arguments)?;
        let grant = self.grant_for(&tool);
        if tool.info.hints.destructive && grant.consent == Consent::Deny {
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
        Ok(PreparedCall {
            _slot: Some(Slot { tool: tool.clone() }),
            tool,
            arguments,
            grant,
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
        if let Some(source) = &component.source
            && !files.contains(source)
        {
            files.push(source.clone());
        }
    }
    files.dedup();
    files
}
