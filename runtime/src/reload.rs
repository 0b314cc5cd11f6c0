//! Hot reload (`airlock serve --watch`): a [`Watcher`] polls the served
//! paths (modification time and size of each `.wasm`, no file-system
//! notification API) and rebuilds the catalog when a component is added,
//! replaced or removed.
//!
//! Reload is per component: a replacement that fails validation is refused
//! and logged, and the component's previous tools keep serving. Calls
//! already running hold their `Arc<Tool>` and finish on the version they
//! started with. A file is loaded once its stamp has stayed the same for
//! two polls, so a copy still being written is not mistaken for a broken
//! component.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

use crate::Runtime;
use crate::catalog::{Catalog, Tool};

/// What identifies a version of a file without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    modified: Option<SystemTime>,
    len: u64,
}

fn stamp(path: &std::path::Path) -> Option<Stamp> {
    let meta = std::fs::metadata(path).ok()?;
    meta.is_file().then(|| Stamp {
        modified: meta.modified().ok(),
        len: meta.len(),
    })
}

struct Entry {
    /// The version last looked at (loaded or refused).
    seen: Stamp,
    /// A new version seen once; loaded when the next poll sees it again.
    settling: Option<Stamp>,
    /// The tools of the last version that loaded, if any.
    tools: Option<Vec<Arc<Tool>>>,
}

/// What one poll changed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Changes {
    /// Files whose new version now serves (added or replaced).
    pub loaded: Vec<PathBuf>,
    /// Files whose new version was refused (the old one, if any, serves).
    pub refused: Vec<PathBuf>,
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
            let Some(seen) = stamp(&file) else { continue };
            let tools: Vec<Arc<Tool>> = catalog
                .tools()
                .filter(|t| t.component.path == file)
                .cloned()
                .collect();
            files.insert(
                file,
                Entry {
                    seen,
                    settling: None,
                    tools: (!tools.is_empty()).then_some(tools),
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
            .filter(|f| !present.contains(f) || stamp(f).is_none())
            .cloned()
            .collect();
        for file in gone {
            if let Some(entry) = self.files.remove(&file)
                && entry.tools.is_some()
            {
                tracing::debug!("reload: {} removed", file.display());
                eprintln!("removed {}", file.display());
                changes.removed.push(file);
            }
        }
        for file in present {
            let Some(now) = stamp(&file) else { continue };
            let entry = self.files.entry(file.clone()).or_insert(Entry {
                // Never seen: treat as changed.
                seen: Stamp {
                    modified: None,
                    len: u64::MAX,
                },
                settling: None,
                tools: None,
            });
            if entry.seen == now {
                entry.settling = None;
                continue;
            }
            if entry.settling != Some(now) {
                // Changed since last time: wait one poll for it to settle.
                entry.settling = Some(now);
                continue;
            }
            entry.settling = None;
            entry.seen = now;
            match runtime.load_file(&file) {
                Ok(tools) => {
                    let names: Vec<_> = tools.iter().map(|t| t.info.name.clone()).collect();
                    tracing::debug!("reload: loaded {}", file.display());
                    eprintln!("loaded {}: {}", file.display(), names.join(", "));
                    entry.tools = Some(tools.into_iter().map(Arc::new).collect());
                    changes.loaded.push(file);
                }
                Err(err) => {
                    let keeping = if entry.tools.is_some() {
                        "; the previous version keeps serving"
                    } else {
                        ""
                    };
                    tracing::debug!("reload: refused {}", file.display());
                    eprintln!("refused {err}{keeping}");
                    changes.refused.push(file);
                }
            }
        }
        if changes.tools_changed() {
            runtime.replace_catalog(self.catalog());
        }
        changes
    }

    /// A catalog of the last good version of every file, in path order; a
    /// component whose tool names clash with an earlier one is left out.
    fn catalog(&self) -> Catalog {
        let mut catalog = Catalog::new();
        for (file, entry) in &self.files {
            let Some(tools) = &entry.tools else { continue };
            if let Err(err) = catalog.add_shared(tools) {
                tracing::debug!("reload: clash in {}", file.display());
                eprintln!("refused {err} (while reloading {})", file.display());
            }
        }
        catalog
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
        assert_eq!(changes.refused, vec![file.clone()]);
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
