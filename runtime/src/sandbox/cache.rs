//! The on-disk compile cache: a component is compiled once per content and
//! engine configuration, then loaded in milliseconds.
//!
//! Where it is, by the first rule that gives a folder: `$AIRLOCK_CACHE_DIR`,
//! `$XDG_CACHE_HOME/airlock`, `$HOME/.cache/airlock` (the XDG rules: an
//! empty or relative value counts as unset), else `airlock-cache-UID` in
//! the temporary folder — what a desktop client that starts airlock with no
//! environment gets. That last folder is shared ground, so it is made
//! `0700` and used only when it is a folder of the user's own that nobody
//! else may write to (the cache holds code that is loaded as it is).
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

    /// The default folder (see the module's rules) and the rule that gave
    /// it; an error says why none can be used and what to set.
    pub fn default_dir() -> Result<CacheDir, NoCacheDir> {
        locate(
            |name| std::env::var_os(name),
            &std::env::temp_dir(),
            current_user(),
        )
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

/// The cache folder the rules found, and which rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheDir {
    pub dir: PathBuf,
    /// The variable it came from (`AIRLOCK_CACHE_DIR`, `XDG_CACHE_HOME`,
    /// `HOME`), or `None` for the per-user temporary folder.
    pub from: Option<&'static str>,
}

impl std::fmt::Display for CacheDir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.from {
            Some(var) => write!(f, "{} (from {var})", self.dir.display()),
            None => write!(
                f,
                "{} (neither AIRLOCK_CACHE_DIR, XDG_CACHE_HOME nor HOME is set: a desktop \
                 client's `env` may name one)",
                self.dir.display()
            ),
        }
    }
}

/// Why no compile cache can be used: every start compiles every component.
#[derive(Debug, thiserror::Error)]
#[error(
    "no compile cache: {why}; every start compiles its components again (set \
     AIRLOCK_CACHE_DIR, XDG_CACHE_HOME or HOME to a folder of yours, in a desktop client's `env`)"
)]
pub struct NoCacheDir {
    why: String,
}

/// The rules, on `var` (the environment), the temporary folder `temp` and
/// the user id `uid` (`None` where there are none: the temporary folder is
/// the user's own there).
fn locate(
    var: impl Fn(&str) -> Option<std::ffi::OsString>,
    temp: &Path,
    uid: Option<u32>,
) -> Result<CacheDir, NoCacheDir> {
    if let Some(dir) = var("AIRLOCK_CACHE_DIR").filter(|d| !d.is_empty()) {
        return Ok(CacheDir {
            dir: dir.into(),
            from: Some("AIRLOCK_CACHE_DIR"),
        });
    }
    // XDG: a relative value is invalid and ignored.
    let absolute = |name| var(name).map(PathBuf::from).filter(|p| p.is_absolute());
    if let Some(dir) = absolute("XDG_CACHE_HOME") {
        return Ok(CacheDir {
            dir: dir.join("airlock"),
            from: Some("XDG_CACHE_HOME"),
        });
    }
    if let Some(home) = absolute("HOME") {
        return Ok(CacheDir {
            dir: home.join(".cache/airlock"),
            from: Some("HOME"),
        });
    }
    let dir = match uid {
        Some(uid) => temp.join(format!("airlock-cache-{uid}")),
        None => temp.join("airlock-cache"),
    };
    private_folder(&dir, uid).map_err(|why| NoCacheDir { why })?;
    Ok(CacheDir { dir, from: None })
}

/// Makes `dir` (mode 0700) unless it exists, then checks that it is a
/// folder (not a link) that `uid` owns and nobody else may write to.
#[cfg(unix)]
fn private_folder(dir: &Path, uid: Option<u32>) -> Result<(), String> {
    use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, PermissionsExt as _};
    let shown = dir.display();
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(err) => return Err(format!("cannot make {shown}: {err}")),
    }
    let meta =
        std::fs::symlink_metadata(dir).map_err(|err| format!("cannot read {shown}: {err}"))?;
    if !meta.is_dir() {
        return Err(format!("{shown} is not a folder"));
    }
    if let Some(uid) = uid
        && meta.uid() != uid
    {
        return Err(format!(
            "{shown} belongs to user {}, not to this user ({uid})",
            meta.uid()
        ));
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o022 != 0 {
        return Err(format!(
            "others may write to {shown} (mode {mode:o}; `chmod 700` it to use it)"
        ));
    }
    Ok(())
}

#[cfg(not(unix))]
fn private_folder(dir: &Path, _uid: Option<u32>) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|err| format!("cannot make {}: {err}", dir.display()))
}

/// The user airlock runs as.
#[cfg(unix)]
fn current_user() -> Option<u32> {
    Some(rustix::process::getuid().as_raw())
}

#[cfg(not(unix))]
fn current_user() -> Option<u32> {
    None
}

#[cfg(all(test, unix))]
mod tests {
    use std::ffi::OsString;
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    fn env<'a>(vars: &'a [(&str, &str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn the_variables_go_first_in_xdg_order_and_invalid_values_are_skipped() {
        let temp = tempfile::tempdir().expect("tempdir");
        let at = |vars: &[(&str, &str)]| locate(env(vars), temp.path(), Some(1000)).expect("a dir");
        let all = [
            ("AIRLOCK_CACHE_DIR", "/srv/cache"),
            ("XDG_CACHE_HOME", "/home/me/.xdg"),
            ("HOME", "/home/me"),
        ];
        assert_eq!(
            at(&all),
            CacheDir {
                dir: "/srv/cache".into(),
                from: Some("AIRLOCK_CACHE_DIR")
            }
        );
        assert_eq!(at(&all[1..]).dir, Path::new("/home/me/.xdg/airlock"));
        assert_eq!(at(&all[2..]).dir, Path::new("/home/me/.cache/airlock"));
        // Empty and relative values count as unset (XDG).
        let skipped = [
            ("AIRLOCK_CACHE_DIR", ""),
            ("XDG_CACHE_HOME", "cache"),
            ("HOME", "/home/me"),
        ];
        assert_eq!(at(&skipped).from, Some("HOME"));
        // Nothing in the temporary folder was made for them.
        assert_eq!(std::fs::read_dir(temp.path()).expect("list").count(), 0);
    }

    #[test]
    fn with_no_variable_a_private_folder_of_the_user_in_the_temporary_folder() {
        let temp = tempfile::tempdir().expect("tempdir");
        let uid = current_user().expect("a user");
        let found = locate(env(&[("HOME", "")]), temp.path(), Some(uid)).expect("a dir");
        let dir = temp.path().join(format!("airlock-cache-{uid}"));
        assert_eq!(
            found,
            CacheDir {
                dir: dir.clone(),
                from: None
            }
        );
        let mode = std::fs::metadata(&dir).expect("made").permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        assert!(
            found.to_string().contains("neither AIRLOCK_CACHE_DIR"),
            "{found}"
        );
        // Found again as it is.
        assert_eq!(
            locate(env(&[]), temp.path(), Some(uid)).expect("again"),
            found
        );
    }

    #[test]
    fn a_temporary_folder_someone_else_owns_or_may_write_to_is_refused() {
        let temp = tempfile::tempdir().expect("tempdir");
        let uid = current_user().expect("a user");
        // Made by this user, so another user's id does not own it.
        let other = uid.wrapping_add(1);
        std::fs::create_dir(temp.path().join(format!("airlock-cache-{other}"))).expect("dir");
        let err = locate(env(&[]), temp.path(), Some(other)).expect_err("refused");
        assert!(
            err.to_string().contains(&format!("belongs to user {uid}")),
            "{err}"
        );
        assert!(err.to_string().contains("set AIRLOCK_CACHE_DIR"), "{err}");
        // Its own, but writable by others.
        let dir = temp.path().join(format!("airlock-cache-{uid}"));
        std::fs::create_dir(&dir).expect("dir");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        let err = locate(env(&[]), temp.path(), Some(uid)).expect_err("refused");
        assert!(err.to_string().contains("others may write to"), "{err}");
        // A link is not the folder it points to.
        std::fs::remove_dir(&dir).expect("rm");
        let elsewhere = tempfile::tempdir().expect("tempdir");
        std::os::unix::fs::symlink(elsewhere.path(), &dir).expect("link");
        let err = locate(env(&[]), temp.path(), Some(uid)).expect_err("refused");
        assert!(err.to_string().contains("is not a folder"), "{err}");
    }
}
