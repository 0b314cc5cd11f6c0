//! The `folders` key of a policy section: which host folders a tool sees,
//! where, and how. Guest paths are absolute without `.`/`..` parts, no two
//! mounts nest in one another, and each host folder exists when the policy
//! is loaded.

use std::path::PathBuf;

use serde::Deserialize;
use toml::Spanned;

use super::file::{Parser, PolicyError};

/// How the policy mounts a folder (before the tool's hints narrow it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FolderMode {
    #[default]
    ReadOnly,
    ReadWrite,
}

impl FolderMode {
    pub fn as_str(self) -> &'static str {
        match self {
            FolderMode::ReadOnly => "read-only",
            FolderMode::ReadWrite => "read-write",
        }
    }
}

/// A folder the policy grants: `host` is resolved against the policy file's
/// folder and existed when the policy was loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Folder {
    pub host: PathBuf,
    pub guest: String,
    pub mode: FolderMode,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFolder {
    host: Spanned<String>,
    guest: Spanned<String>,
    #[serde(default)]
    mode: FolderMode,
}

impl Parser<'_> {
    pub(super) fn folders(&self, raw: Spanned<Vec<RawFolder>>) -> Result<Vec<Folder>, PolicyError> {
        let mut folders: Vec<Folder> = Vec::new();
        for f in raw.into_inner() {
            let at = f.guest.span().start;
            let guest = check_guest_path(f.guest.get_ref()).map_err(|m| self.error(at, m))?;
            if let Some(other) = folders.iter().find(|o| nested(&o.guest, &guest)) {
                return Err(self.error(
                    at,
                    format!(
                        "guest path {guest:?} overlaps {:?}: mounts may not be nested or repeated",
                        other.guest
                    ),
                ));
            }
            let host = self.resolve(f.host.get_ref());
            let at = f.host.span().start;
            match std::fs::metadata(&host) {
                Ok(m) if m.is_dir() => {}
                Ok(_) => {
                    return Err(self.error(
                        at,
                        format!("host folder {} is not a folder", host.display()),
                    ));
                }
                Err(e) => {
                    return Err(self.error(
                        at,
                        format!("host folder {} cannot be used: {e}", host.display()),
                    ));
                }
            }
            folders.push(Folder {
                host,
                guest,
                mode: f.mode,
            });
        }
        Ok(folders)
    }
}

/// Checks a guest path: absolute, no `.`/`..`/empty parts. Returns it
/// without a trailing `/` (except for `/` itself).
fn check_guest_path(path: &str) -> Result<String, String> {
    if !path.starts_with('/') {
        return Err(format!(
            "guest path {path:?} must be absolute (start with '/')"
        ));
    }
    let trimmed = if path.len() > 1 {
        path.strip_suffix('/').unwrap_or(path)
    } else {
        path
    };
    if trimmed != "/"
        && trimmed[1..]
            .split('/')
            .any(|part| part.is_empty() || part == "." || part == "..")
    {
        return Err(format!(
            "guest path {path:?} may not contain '.', '..' or '//'"
        ));
    }
    if trimmed.contains('\0') {
        return Err(format!("guest path {path:?} contains a NUL character"));
    }
    Ok(trimmed.to_string())
}

/// Whether one guest path is the other or inside it.
fn nested(a: &str, b: &str) -> bool {
    let inside = |outer: &str, inner: &str| {
        outer == "/"
            || inner == outer
            || inner
                .strip_prefix(outer)
                .is_some_and(|r| r.starts_with('/'))
    };
    inside(a, b) || inside(b, a)
}
