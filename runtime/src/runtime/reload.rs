//! Hot reload (`airlock serve --watch`): a [`Watcher`] polls the served
//! paths (modification time and size of each `.wasm`, no file-system
//! notification API) and rebuilds the catalog when a component is added,
//! replaced or removed. A component named by reference (`oci://…`) is
//! replaced when its entry in `airlock.lock` changes (`airlock pull
//! --update`); a tag that moves in the registry changes nothing here.
//!
//! Reload is per component and all-or-nothing: a replacement that fails
//! validation is refused and logged, and the component's previous tools
//! keep serving. A reload never removes or replaces a serving component
//! because of another file: a new version that claims a name another file
//! serves (or newly brings in the same poll) — a tool's name, a resource's
//! URI (a UI's `ui://` page among them), a template, a prompt's name — is
//! refused, naming both files and the name, whatever the order of the file
//! names ([`crate::catalog::claims`], the catalog's own rule); a pinned
//! component (`sha256` in the policy) is replaced only by a file matching
//! its pin. Calls
//! already running hold their `Arc<Tool>` and finish on the version they
//! started with. A file is loaded once its stamp has stayed the same for
//! two polls, so a copy still being written is not mistaken for a broken
//! component.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

use super::Runtime;
use crate::catalog::{Catalog, Claim, LoadError, Loaded, Served, Tool};

/// What identifies a version of a file without reading it (or, for a
/// reference, the digest its lock entry names).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Stamp {
    File {
        modified: Option<SystemTime>,
        len: u64,
    },
    Locked(String),
}

fn stamp(path: &std::path::Path) -> Option<Stamp> {
    let meta = std::fs::metadata(path).ok()?;
    meta.is_file().then(|| Stamp::File {
        modified: meta.modified().ok(),
        len: meta.len(),
    })
}

/// The stamp of a served file or reference.
fn stamp_of(runtime: &Runtime, path: &std::path::Path) -> Option<Stamp> {
    match runtime.locked_digest(path) {
        Some(locked) => Some(Stamp::Locked(locked)),
        None => stamp(path),
    }
}

struct Entry {
    /// The version last looked at (loaded or refused).
    seen: Stamp,
    /// A new version seen once; loaded when the next poll sees it again.
    settling: Option<Stamp>,
    /// The last version that loaded (its tools, or only its offers), if any.
    served: Option<Served>,
}

/// What one poll changed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Changes {
    /// Files whose new version now serves (added or replaced).
    pub loaded: Vec<PathBuf>,
    /// Files whose new version was refused (the old one, if any, serves),
    /// each with why (as the log says it).
    pub refused: Vec<(PathBuf, String)>,
    /// Files that disappeared with their tools.
    pub removed: Vec<PathBuf>,
}

impl Changes {
    /// Whether the tool set changed (a new catalog is in place).
    pub fn tools_changed(&self) -> bool {
        !self.loaded.is_empty() || !self.removed.is_empty()
    }
}

/// Watches the paths a server serves.
pub struct Watcher {
    paths: Vec<PathBuf>,
    files: BTreeMap<PathBuf, Entry>,
}

impl Watcher {
    /// Starts from what `runtime` serves now (after [`Runtime::load`] of
    /// the same `paths`).
    pub fn new(runtime: &Runtime, paths: &[PathBuf]) -> Watcher {
        let catalog = runtime.catalog();
        let mut files = BTreeMap::new();
        for file in runtime.files(paths) {
            let Some(seen) = stamp_of(runtime, &file) else {
                continue;
            };
            let served = catalog
                .served()
                .into_iter()
                .find(|s| s.component.path == file);
            files.insert(
                file,
                Entry {
                    seen,
                    settling: None,
                    served,
                },
            );
        }
        Watcher {
            paths: paths.to_vec(),
            files,
        }
    }

    /// Looks at the files once; when the tool set changed, installs a new
    /// catalog in `runtime`. Blocking (it compiles new components).
    pub fn poll(&mut self, runtime: &Runtime) -> Changes {
        let mut changes = Changes::default();
        let present = runtime.files(&self.paths);
        let gone: Vec<PathBuf> = self
            .files
            .keys()
            .filter(|f| !present.contains(f) || stamp_of(runtime, f).is_none())
            .cloned()
            .collect();
        for file in gone {
            if let Some(entry) = self.files.remove(&file)
                && entry.served.is_some()
            {
                tracing::debug!("reload: {} removed", file.display());
                eprintln!("removed {}", file.display());
                changes.removed.push(file);
            }
        }
        // First load every file that changed; then decide, all at once, which
        // of the new versions may serve: none may take a name (a tool's, a
        // URI, a template, a prompt's) that another file serves or newly
        // brings, whatever the order of names.
        let mut candidates: Vec<(PathBuf, Result<Loaded, LoadError>)> = Vec::new();
        for file in present {
            let Some(now) = stamp_of(runtime, &file) else {
                continue;
            };
            let entry = self.files.entry(file.clone()).or_insert(Entry {
                // Never seen: treat as changed.
                seen: Stamp::File {
                    modified: None,
                    len: u64::MAX,
                },
                settling: None,
                served: None,
            });
            if entry.seen == now {
                entry.settling = None;
                continue;
            }
            if entry.settling.as_ref() != Some(&now) {
                // Changed since last time: wait one poll for it to settle.
                entry.settling = Some(now);
                continue;
            }
            entry.settling = None;
            entry.seen = now;
            let loaded = runtime.load_file(&file);
            candidates.push((file, loaded));
        }
        let clashes: Vec<Option<LoadError>> = candidates
            .iter()
            .map(|(file, loaded)| match loaded {
                Ok(loaded) => self.clash(file, &loaded.claims(), &candidates),
                Err(_) => None,
            })
            .collect();
        for ((file, loaded), clash) in candidates.into_iter().zip(clashes) {
            let Some(entry) = self.files.get_mut(&file) else {
                continue;
            };
            let loaded = match (loaded, clash) {
                (Ok(_), Some(clash)) => Err(clash),
                (loaded, _) => loaded,
            };
            match loaded {
                Ok(loaded) => {
                    let names = loaded.tool_names();
                    tracing::debug!("reload: loaded {}", file.display());
                    eprintln!(
                        "loaded {}: {}{}",
                        file.display(),
                        match names.is_empty() {
                            true => "no tools, only resources or prompts".to_string(),
                            false => names.join(", "),
                        },
                        what_changed(entry.served.as_ref().map(|s| &s.tools[..]), &names)
                    );
                    entry.served = Some(loaded.share());
                    changes.loaded.push(file);
                }
                Err(err) => {
                    let keeping = match (&err, &entry.served) {
                        (
                            LoadError::Clash { first, .. } | LoadError::OfferClash { first, .. },
                            _,
                        ) => {
                            format!(
                                "; refusing {}, {} keeps it",
                                file.display(),
                                first.display()
                            )
                        }
                        (_, Some(_)) => "; the previous version keeps serving".to_string(),
                        (_, None) => String::new(),
                    };
                    tracing::debug!("reload: refused {}", file.display());
                    let why = format!("{err}{keeping}");
                    eprintln!("refused {why}");
                    changes.refused.push((file, why));
                }
            }
        }
        if changes.tools_changed() {
            runtime.replace_catalog(self.catalog());
        }
        changes
    }

    /// The clash, if any, of `claims` (the names the new version of `file`
    /// takes) with what another file serves now or brings new in this
    /// poll. The other file is named first: a newcomer never displaces it.
    fn clash(
        &self,
        file: &PathBuf,
        claims: &[Claim],
        candidates: &[(PathBuf, Result<Loaded, LoadError>)],
    ) -> Option<LoadError> {
        let serving = self
            .files
            .iter()
            .filter(|(other, _)| *other != file)
            .filter_map(|(other, entry)| Some((other, entry.served.as_ref()?.claims())));
        let arriving = candidates
            .iter()
            .filter(|(other, _)| other != file)
            .filter_map(|(other, loaded)| Some((other, loaded.as_ref().ok()?.claims())));
        for (other, theirs) in serving.chain(arriving) {
            if let Some(claim) = claims.iter().find(|claim| theirs.contains(claim)) {
                return Some(claim.clash(other, file));
            }
        }
        None
    }

    /// A catalog of the last good version of every file, in path order; a
    /// component whose names clash with an earlier one's is left out.
    fn catalog(&self) -> Catalog {
        let mut catalog = Catalog::new();
        for (file, entry) in &self.files {
            let Some(served) = &entry.served else {
                continue;
            };
            if let Err(err) = catalog.add_shared(served) {
                tracing::debug!("reload: clash in {}", file.display());
                eprintln!("refused {err} (while reloading {})", file.display());
            }
        }
        catalog
    }
}

/// How a new version's tool names differ from the version it replaces,
/// for the reload message (empty for a component seen for the first time).
fn what_changed(before: Option<&[Arc<Tool>]>, after: &[String]) -> String {
    let Some(before) = before else {
        return String::new();
    };
    let added: Vec<&str> = after
        .iter()
        .filter(|n| !before.iter().any(|t| &t.info.name == *n))
        .map(String::as_str)
        .collect();
    let removed: Vec<&str> = before
        .iter()
        .map(|t| t.info.name.as_str())
        .filter(|n| !after.iter().any(|a| a == n))
        .collect();
    let mut parts = Vec::new();
    if !added.is_empty() {
        parts.push(format!("added {}", added.join(", ")));
    }
    if !removed.is_empty() {
        parts.push(format!("removed {}", removed.join(", ")));
    }
    if parts.is_empty() {
        " (replaced; same tools)".to_string()
    } else {
        format!(" (replaced; {})", parts.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Policy;
    use crate::sandbox::{Sandbox, SandboxConfig};

    fn runtime() -> Runtime {
        let sandbox =
            Sandbox::new(&SandboxConfig::default().cache(None).instances(2)).expect("sandbox");
        Runtime::new(sandbox, Policy::default())
    }

    #[test]
    fn broken_files_are_refused_after_settling_and_removal_is_noticed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let runtime = runtime();
        let paths = vec![dir.path().to_path_buf()];
        runtime.load(&paths);
        let mut watcher = Watcher::new(&runtime, &paths);
        assert_eq!(watcher.poll(&runtime), Changes::default());
        let file = dir.path().join("broken.wasm");
        std::fs::write(&file, b"not wasm").expect("write");
        // First sight: it settles.
        assert_eq!(watcher.poll(&runtime), Changes::default());
        let changes = watcher.poll(&runtime);
        assert_eq!(changes.refused.len(), 1);
        assert_eq!(changes.refused[0].0, file);
        assert!(!changes.tools_changed());
        // Not retried while unchanged.
        assert_eq!(watcher.poll(&runtime), Changes::default());
        std::fs::remove_file(&file).expect("remove");
        // Nothing loaded from it, so removing it changes no tools.
        assert_eq!(watcher.poll(&runtime), Changes::default());
        assert_eq!(runtime.catalog().tools().count(), 0);
    }

    #[test]
    fn stamps_tell_versions_apart() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("a.wasm");
        assert_eq!(stamp(&file), None);
        std::fs::write(&file, b"1").expect("write");
        let one = stamp(&file).expect("stamp");
        std::fs::write(&file, b"22").expect("write");
        assert_ne!(stamp(&file), Some(one));
        assert_eq!(stamp(dir.path()), None, "a folder is no component");
    }
}
