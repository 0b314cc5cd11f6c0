//! `airlock.lock`: what each tag and URL resolved to the first time it was
//! used. Later starts (and `--watch` reloads) load exactly these digests,
//! from the store, without asking the registry where the tag points now;
//! `airlock pull --update` is the only thing that moves an entry. A tag
//! that moved is reported by `airlock pull`, never followed silently.
//!
//! The file sits next to the policy (or where `--lock` says) and is meant
//! to be committed with it. It is rewritten whole, through a temporary
//! file, and entries are sorted, so diffs stay small.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Why the lock file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("{}: {reason}", path.display())]
    Invalid { path: PathBuf, reason: String },
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// What one reference resolved to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Locked {
    /// The manifest's digest (OCI references only).
    pub manifest: Option<String>,
    /// The component's digest (`sha256:` of the `.wasm` bytes).
    pub component: String,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    version: u32,
    #[serde(default, rename = "source")]
    sources: Vec<Entry>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    reference: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    manifest: Option<String>,
    component: String,
}

const HEADER: &str = "# airlock.lock: the digest each tag or URL resolved to when it was first used.\n\
# airlock loads exactly these until `airlock pull --update` moves them; commit it\n\
# with the policy.\n";

/// A lock file's entries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Lock {
    entries: BTreeMap<String, Locked>,
}

impl Lock {
    /// Reads `path`; a missing file is an empty lock.
    pub fn read(path: &Path) -> Result<Lock, LockError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Lock::parse(&text).map_err(|reason| LockError::Invalid {
                path: path.to_path_buf(),
                reason,
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Lock::default()),
            Err(e) => Err(LockError::Invalid {
                path: path.to_path_buf(),
                reason: format!("cannot read: {e}"),
            }),
        }
    }

    fn parse(text: &str) -> Result<Lock, String> {
        let file: File = toml::from_str(text).map_err(|e| {
            format!(
                "{}; fix it, or delete it to resolve every tag again",
                e.message().trim_end()
            )
        })?;
        if file.version != 1 {
            return Err(format!(
                "version {} is not one this airlock reads (1)",
                file.version
            ));
        }
        let mut entries = BTreeMap::new();
        for entry in file.sources {
            for digest in entry.manifest.iter().chain([&entry.component]) {
                super::reference::check_digest(digest)?;
            }
            let locked = Locked {
                manifest: entry.manifest,
                component: entry.component,
            };
            entries.insert(entry.reference, locked);
        }
        Ok(Lock { entries })
    }

    pub fn get(&self, reference: &str) -> Option<&Locked> {
        self.entries.get(reference)
    }

    /// Records what `reference` resolved to; whether that changed anything.
    pub fn set(&mut self, reference: &str, locked: Locked) -> bool {
        self.entries.insert(reference.to_string(), locked.clone()) != Some(locked)
    }

    fn text(&self) -> String {
        let file = File {
            version: 1,
            sources: self
                .entries
                .iter()
                .map(|(reference, locked)| Entry {
                    reference: reference.clone(),
                    manifest: locked.manifest.clone(),
                    component: locked.component.clone(),
                })
                .collect(),
        };
        format!("{HEADER}{}", toml::to_string(&file).unwrap_or_default())
    }

    /// Writes the lock to `path` (through a temporary file).
    pub fn write(&self, path: &Path) -> Result<(), LockError> {
        let failed = |source| LockError::Write {
            path: path.to_path_buf(),
            source,
        };
        let tmp = path.with_extension(format!("lock.tmp{}", std::process::id()));
        std::fs::write(&tmp, self.text()).map_err(failed)?;
        std::fs::rename(&tmp, path).map_err(failed)
    }

    /// Records one entry in the file at `path`, read again just before so
    /// another airlock's entries are kept.
    pub fn record(path: &Path, reference: &str, locked: Locked) -> Result<bool, LockError> {
        let mut lock = Lock::read(path)?;
        let changed = lock.set(reference, locked);
        if changed {
            lock.write(path)?;
        }
        Ok(changed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digest(n: u8) -> String {
        format!("sha256:{}", hex::encode([n; 32]))
    }

    #[test]
    fn entries_round_trip_sorted_with_a_header() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("airlock.lock");
        assert_eq!(
            Lock::read(&path).expect("missing is empty"),
            Lock::default()
        );
        let oci = Locked {
            manifest: Some(digest(1)),
            component: digest(2),
        };
        let url = Locked {
            manifest: None,
            component: digest(3),
        };
        assert!(Lock::record(&path, "oci://r.example/b:1", oci.clone()).expect("record"));
        assert!(Lock::record(&path, "https://a.example/x.wasm", url.clone()).expect("record"));
        assert!(!Lock::record(&path, "oci://r.example/b:1", oci.clone()).expect("same again"));
        let text = std::fs::read_to_string(&path).expect("read");
        assert!(text.starts_with("# airlock.lock"), "{text}");
        assert!(
            text.find("https://a.example").expect("url")
                < text.find("oci://r.example").expect("oci"),
            "sorted: {text}"
        );
        let lock = Lock::read(&path).expect("read back");
        assert_eq!(lock.get("oci://r.example/b:1"), Some(&oci));
        assert_eq!(lock.get("https://a.example/x.wasm"), Some(&url));
    }

    #[test]
    fn a_damaged_lock_says_what_to_do() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("airlock.lock");
        for (text, what) in [
            ("version = 1\n[[source]]\nreference = \"x\"\n", "component"),
            ("version = 2\n", "version 2"),
            (
                "version = 1\n[[source]]\nreference = \"x\"\ncomponent = \"md5:1\"\n",
                "not a sha256",
            ),
        ] {
            std::fs::write(&path, text).expect("write");
            let err = Lock::read(&path).expect_err(text).to_string();
            assert!(err.contains(what), "{text}: {err}");
        }
    }
}
