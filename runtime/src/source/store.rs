//! The content-addressed store: every blob pulled from a registry or a URL
//! (components, manifests, configs, signature payloads), kept under its
//! SHA-256 digest next to the compile cache, so a second start needs no
//! network.
//!
//! Every read hashes the content again and compares it with the name: a
//! blob damaged on disk is removed and reported as absent (it is fetched
//! again), never used. Writes go to a temporary file renamed into place, so
//! a crash never leaves a torn blob.
//!
//! ```text
//! STORE/blobs/sha256/HEX            the blob whose SHA-256 is HEX
//! STORE/signatures/sha256-HEX.json  the cosign `.sig` manifest last seen
//!                                   for manifest sha256:HEX (its payloads
//!                                   are blobs; its signatures are checked
//!                                   on every use)
//! ```

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// Why the store could not be written.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot write to the store {}: {source}", dir.display())]
    Write {
        dir: PathBuf,
        source: std::io::Error,
    },
    #[error("refusing to store content as {expected}: it hashes to {actual}")]
    Mismatch { expected: String, actual: String },
}

/// `sha256:` and the hex SHA-256 of `bytes`.
pub fn digest_of(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// The store in a folder.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
}

impl Store {
    pub fn new(dir: impl Into<PathBuf>) -> Store {
        Store { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of a blob; `None` for a digest that is not `sha256:HEX`
    /// (so no name from a registry ever becomes a path outside the store).
    fn blob_path(&self, digest: &str) -> Option<PathBuf> {
        let hex = digest.strip_prefix("sha256:")?;
        (hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
            .then(|| self.dir.join("blobs/sha256").join(hex))
    }

    /// The blob named `digest`, checked against it; `None` when absent or
    /// damaged (a damaged blob is removed, with a warning).
    pub fn get(&self, digest: &str) -> Option<Vec<u8>> {
        let path = self.blob_path(digest)?;
        let bytes = std::fs::read(&path).ok()?;
        let actual = digest_of(&bytes);
        if actual == digest {
            return Some(bytes);
        }
        tracing::warn!(
            "the store's copy of {digest} is damaged (its content hashes to {actual}); \
             removing {} (it is fetched again when needed)",
            path.display()
        );
        let _ = std::fs::remove_file(&path);
        None
    }

    /// Whether a blob is present (not checked: [`Store::get`] checks).
    pub fn has(&self, digest: &str) -> bool {
        self.blob_path(digest).is_some_and(|p| p.is_file())
    }

    /// Stores `bytes` as `digest`, after checking that it is theirs.
    pub fn put(&self, digest: &str, bytes: &[u8]) -> Result<(), StoreError> {
        let actual = digest_of(bytes);
        let path = match self.blob_path(digest) {
            Some(path) if actual == digest => path,
            _ => {
                return Err(StoreError::Mismatch {
                    expected: digest.to_string(),
                    actual,
                });
            }
        };
        if path.is_file() {
            return Ok(());
        }
        self.write(&path, bytes)
    }

    /// The `.sig` manifest last seen for a manifest digest.
    pub fn signatures(&self, manifest: &str) -> Option<Vec<u8>> {
        std::fs::read(self.signatures_path(manifest)?).ok()
    }

    /// Remembers the `.sig` manifest of a manifest digest (its payloads go
    /// in as blobs through [`Store::put`]).
    pub fn put_signatures(&self, manifest: &str, bytes: &[u8]) -> Result<(), StoreError> {
        match self.signatures_path(manifest) {
            Some(path) => self.write(&path, bytes),
            None => Err(StoreError::Mismatch {
                expected: manifest.to_string(),
                actual: "no sha256 digest".to_string(),
            }),
        }
    }

    fn signatures_path(&self, manifest: &str) -> Option<PathBuf> {
        let blob = self.blob_path(manifest)?;
        let hex = blob.file_name()?.to_string_lossy().into_owned();
        Some(
            self.dir
                .join("signatures")
                .join(format!("sha256-{hex}.json")),
        )
    }

    fn write(&self, path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
        let failed = |source| StoreError::Write {
            dir: self.dir.clone(),
            source,
        };
        let folder = path.parent().unwrap_or(&self.dir);
        std::fs::create_dir_all(folder).map_err(failed)?;
        let tmp = path.with_extension(format!(
            "tmp{}-{}",
            std::process::id(),
            rand::random::<u32>()
        ));
        std::fs::write(&tmp, bytes).map_err(failed)?;
        std::fs::rename(&tmp, path).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            failed(e)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blobs_are_checked_when_stored_and_when_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::new(dir.path());
        let digest = digest_of(b"component");
        assert_eq!(store.get(&digest), None);
        store.put(&digest, b"component").expect("put");
        assert!(store.has(&digest));
        assert_eq!(store.get(&digest).as_deref(), Some(&b"component"[..]));

        let wrong = store.put(&digest_of(b"other"), b"component");
        assert!(
            matches!(wrong, Err(StoreError::Mismatch { .. })),
            "{wrong:?}"
        );

        // Damage on disk: never used, removed, reported as absent.
        let hex = digest.strip_prefix("sha256:").expect("prefix");
        let file = dir.path().join("blobs/sha256").join(hex);
        std::fs::write(&file, b"tampered").expect("tamper");
        assert_eq!(store.get(&digest), None);
        assert!(!file.exists());
    }

    #[test]
    fn names_that_are_not_digests_never_become_paths() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::new(dir.path());
        for name in ["sha256:../../etc/passwd", "md5:abc", "sha256:ABC", ""] {
            assert_eq!(store.get(name), None, "{name}");
            assert!(store.put(name, b"x").is_err(), "{name}");
            assert!(store.put_signatures(name, b"x").is_err(), "{name}");
        }
    }

    #[test]
    fn signatures_are_kept_per_manifest() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::new(dir.path());
        let manifest = digest_of(b"manifest");
        assert_eq!(store.signatures(&manifest), None);
        store.put_signatures(&manifest, b"{}").expect("put");
        store
            .put_signatures(&manifest, b"{\"new\":1}")
            .expect("replace");
        assert_eq!(
            store.signatures(&manifest).as_deref(),
            Some(&b"{\"new\":1}"[..])
        );
    }
}
