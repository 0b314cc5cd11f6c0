//! Loading one component: read the file or fetch the reference (lock,
//! store, registry, signature), check it against the policy's pin, compile
//! it, list and check its tools and apply the policy's tool sections. And
//! which files a set of served paths stands for. Nothing here touches the
//! catalog being served; [`super::Runtime`] and [`super::loading`] do.

use std::path::{Path, PathBuf};

use super::pending::{PendingList, Phase};
use crate::catalog::{self, Catalog, LoadError, Loaded};
use crate::policy::{Policy, PolicyError};
use crate::sandbox::Sandbox;
use crate::source::{Expect, Progress, Resolver, Source};

/// What loading a set of paths did.
#[derive(Default)]
pub struct LoadReport {
    /// Each loaded file with the names of its tools (none for a component
    /// that only offers resources or prompts).
    pub loaded: Vec<(PathBuf, Vec<String>)>,
    pub refused: Vec<LoadError>,
}

impl LoadReport {
    /// Records how loading `file` went, adding its tools to `catalog`
    /// unless one of their names is there already.
    pub(crate) fn record(
        &mut self,
        catalog: &mut Catalog,
        file: PathBuf,
        loaded: Result<Loaded, LoadError>,
    ) {
        match loaded {
            Ok(loaded) => {
                let names = loaded.tool_names();
                match catalog.add(loaded) {
                    Ok(()) => self.loaded.push((file, names)),
                    Err(err) => self.refused.push(err),
                }
            }
            Err(err) => self.refused.push(err),
        }
    }
}

/// What loading a component needs of a runtime, borrowed from it.
pub struct Loader<'a> {
    pub(crate) policy: &'a Policy,
    pub(crate) sandbox: &'a Sandbox,
    pub(crate) resolver: &'a Resolver,
    /// Where a fetch reports its progress (`/readyz`, the log).
    pub(crate) pending: &'a PendingList,
    /// The cordons whose workers list (and run) some components.
    pub(crate) cordons: Option<&'a std::sync::Arc<crate::cordon::Cordons>>,
}

impl Loader<'_> {
    /// The name `source` (found at `path`) loads under.
    pub fn name_of(&self, path: &Path, source: &Source) -> String {
        if !source.is_remote() {
            return source.default_name();
        }
        self.policy
            .component_with_source(path)
            .map_or_else(|| source.default_name(), |c| c.name.clone())
    }

    /// Loads and checks one component file (with the policy's pin and tool
    /// sections).
    pub fn load(&self, path: &Path) -> Result<Loaded, LoadError> {
        let (name, bytes) = self.read(path)?;
        self.compile(path, name, &bytes)
    }

    /// The first half of loading a component: its name and bytes, read or
    /// fetched, checked against the policy's pin.
    pub fn read(&self, path: &Path) -> Result<(String, Vec<u8>), LoadError> {
        let (name, bytes) = self.fetch(path)?;
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
    pub fn compile(&self, path: &Path, name: String, bytes: &[u8]) -> Result<Loaded, LoadError> {
        let link = match self.cordons {
            Some(cordons) => cordons.link(&name),
            None => None,
        };
        if link.is_none() && self.cordons.is_some() {
            self.placed_here(path, &name)?;
        }
        match link {
            // Its worker lists it: none of its code runs here.
            // (Sent whatever its kind: plain functions are listed from their
            // types here, but run there.)
            Some(link) => {
                let listing = link.list(&name, path, bytes);
                self.compile_listed(path, name, bytes, &|_| listing.clone())
            }
            None => {
                self.compile_listed(path, name, bytes, &|code| catalog::list(self.sandbox, code))
            }
        }
    }

    /// Whether a component a server loads may run in the serving process:
    /// one whose section puts it in a cordon the server did not start with
    /// it (it arrived later, under `--watch`) is refused, not run here.
    fn placed_here(&self, path: &Path, name: &str) -> Result<(), LoadError> {
        let remote = crate::source::Source::from_path(path).is_ok_and(|s| s.is_remote());
        match crate::cordon::of(self.policy, name, remote) {
            None => Ok(()),
            Some(cordon) => Err(LoadError::Invalid {
                path: path.to_path_buf(),
                reason: format!(
                    "its policy section puts it in cordon {cordon:?}, whose worker did not \
                     start with it (it arrived after the server started); restart `airlock \
                     serve` to serve it in its cordon"
                ),
            }),
        }
    }

    /// [`Loader::compile`], with the guest's listing from `lister`.
    pub fn compile_listed(
        &self,
        path: &Path,
        name: String,
        bytes: &[u8],
        lister: &dyn Fn(&crate::sandbox::Linked) -> catalog::Listing,
    ) -> Result<Loaded, LoadError> {
        let mut loaded = catalog::load_listed(self.sandbox, path, &name, bytes, lister)?;
        catalog::apply_policy_hints(&mut loaded.tools, |tool| {
            self.policy.hints_declared(&name, tool)
        })?;
        let names: Vec<&str> = loaded.tools.iter().map(|t| t.info.name.as_str()).collect();
        let unmatched = self.policy.unmatched_tools(&name, &names);
        if !unmatched.is_empty() {
            return Err(LoadError::UnmatchedTools {
                path: path.to_path_buf(),
                sections: PolicyError::from_all(unmatched),
            });
        }
        Ok(loaded)
    }

    /// The name and bytes of a component: a file is read; a reference is
    /// resolved (lock, store, registry) and its signature checked before
    /// anything of it runs. The name is the file stem, or for a reference
    /// the policy section whose `source` it is (else its last part).
    fn fetch(&self, path: &Path) -> Result<(String, Vec<u8>), LoadError> {
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
        self.pending.enter(path, Phase::Fetching(progress.clone()));
        let fetched = self.resolver.fetch_watched(&source, expect, &progress)?;
        if fetched.downloaded {
            tracing::info!("fetched {source} ({})", fetched.component);
        }
        Ok((name, fetched.bytes))
    }
}

/// Files to load: each `.wasm` path, each `.wasm` in a folder (sorted), and
/// each component source the policy names, without duplicates. A reference
/// (`oci://…`, `https://…`) stands for itself.
pub fn expand(paths: &[PathBuf], policy: &Policy) -> Vec<PathBuf> {
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
