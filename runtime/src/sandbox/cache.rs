//! The on-disk compile cache: a component is compiled once per content and
//! engine configuration, then loaded in milliseconds.
//!
//! Entries are keyed by the SHA-256 of the `.wasm` bytes, the compiler's
//! tier and a hash of the engine's compatibility settings, so a change of
//! wasmtime version or configuration never loads a stale artefact. Entries are written to a
//! temporary file and renamed into place, so a crash never leaves a torn
//! entry; an entry that fails to load anyway is replaced.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use wasmtime::Engine;
use wasmtime::component::Component;

use super::tier::Tier;

/// Where compiled components are kept.
#[derive(Debug, Clone)]
pub struct CompileCache {
    dir: PathBuf,
}

impl CompileCache {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        CompileCache { dir: dir.into() }
    }

    /// The default folder: `$AIRLOCK_CACHE_DIR`, else `$XDG_CACHE_HOME/airlock`,
    /// else `~/.cache/airlock`; `None` when none can be determined.
    pub fn default_dir() -> Option<PathBuf> {
        if let Some(dir) = std::env::var_os("AIRLOCK_CACHE_DIR") {
            return Some(dir.into());
        }
        if let Some(dir) = std::env::var_os("XDG_CACHE_HOME") {
            return Some(Path::new(&dir).join("airlock"));
        }
        std::env::var_os("HOME").map(|home| Path::new(&home).join(".cache/airlock"))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn entry(&self, engine: &Engine, tier: Tier, digest: &str) -> PathBuf {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        env!("CARGO_PKG_VERSION").hash(&mut hasher);
        let tier = match tier {
            // The names entries had before there were tiers.
            Tier::Optimized => String::new(),
            Tier::Quick => format!("-{}", tier.key()),
        };
        self.dir
            .join(format!("{digest}-{:016x}{tier}.cwasm", hasher.finish()))
    }

    /// The cached code of the component whose SHA-256 is `digest`, compiled
    /// by `tier`'s `engine`; `None` when there is none (or it is unusable).
    pub(super) fn load(&self, engine: &Engine, tier: Tier, digest: &str) -> Option<Component> {
        let path = self.entry(engine, tier, digest);
        if !path.is_file() {
            return None;
        }
        // SAFETY: the cache folder belongs to the operator running airlock
        // and holds only artefacts this code wrote with the same engine
        // settings (the key includes them). A damaged file fails to
        // deserialize and is replaced by the caller's compile.
        match unsafe { Component::deserialize_file(engine, &path) } {
            Ok(component) => Some(component),
            Err(err) => {
                tracing::warn!(
                    "compile cache entry {} is unusable ({err:#}); recompiling",
                    path.display()
                );
                None
            }
        }
    }

    /// Loads the compiled form of `bytes` (whose SHA-256 is `digest`), or
    /// compiles it and stores the result. Cache failures are logged and never
    /// fail the load: the cache is an optimisation.
    pub(super) fn load_or_compile(
        &self,
        engine: &Engine,
        tier: Tier,
        digest: &str,
        bytes: &[u8],
    ) -> wasmtime::Result<Component> {
        if let Some(component) = self.load(engine, tier, digest) {
            return Ok(component);
        }
        let path = self.entry(engine, tier, digest);
        let compiled = engine.precompile_component(bytes)?;
        if let Err(err) = self.store(&path, &compiled) {
            tracing::warn!("cannot write compile cache {}: {err}", path.display());
        }
        // SAFETY: `compiled` was produced by this engine just now.
        unsafe { Component::deserialize(engine, &compiled) }
    }

    fn store(&self, path: &Path, compiled: &[u8]) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&tmp, compiled)?;
        std::fs::rename(&tmp, path)
    }
}
