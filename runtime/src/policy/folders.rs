//! The `folders` key: the host folders a tool may use, each mounted at a
//! guest path, read-only (the default) or read-write before the tool's
//! hints narrow it (`effective`). Checked when the policy is loaded: the
//! guest path is absolute, without `.` or `..`, and no two mounts nest;
//! the host folder exists.

use serde::Deserialize;
use serde_json::json;
use toml::Spanned;

use super::context::Parser;
use super::error::PolicyError;
use super::grant::Grant;
use super::key::{SectionKey, ShownGrant};
use super::settings::{Folder, FolderMode, Settings};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFolder {
    pub(super) host: Spanned<String>,
    pub(super) guest: Spanned<String>,
    #[serde(default)]
    pub(super) mode: FolderMode,
}

/// `folders = [{ host, guest, mode }, …]`, replaced as a whole by a more
/// specific section (so a tool section can take a folder away).
pub(super) struct Folders;

impl SectionKey for Folders {
    type Raw = Spanned<Vec<RawFolder>>;
    type Checked = Vec<Folder>;

    fn check(parser: &Parser<'_>, raw: Self::Raw) -> Option<Vec<Folder>> {
        Some(parser.folders(raw))
    }

    fn merge(folders: &Vec<Folder>, settings: &mut Settings) {
        settings.folders.clone_from(folders);
    }

    fn shown(grant: &Grant) -> Option<ShownGrant> {
        let mounts = &grant.mounts;
        Some(ShownGrant {
            json: json!(mounts.iter().map(|m| json!({
                "host": m.host.display().to_string(), "guest": m.guest, "access": m.access.as_str(),
            })).collect::<Vec<_>>()),
            lines: match mounts.is_empty() {
                true => vec!["folders: none".to_string()],
                false => mounts
                    .iter()
                    .map(|m| format!("folder {} → {} ({})", m.host.display(), m.guest, m.access))
                    .collect(),
            },
            audit: vec![(
                "folders",
                json!(
                    mounts
                        .iter()
                        .map(|m| format!("{} ({})", m.guest, m.access))
                        .collect::<Vec<_>>()
                ),
            )],
        })
    }
}

impl Parser<'_> {
    /// Each folder checked; one in error is left out (and reported).
    fn folders(&self, raw: Spanned<Vec<RawFolder>>) -> Vec<Folder> {
        let mut folders: Vec<Folder> = Vec::new();
        for f in raw.into_inner() {
            if let Some(folder) = self.keep(self.folder(f, &folders)) {
                folders.push(folder);
            }
        }
        folders
    }

    /// One folder, checked against those before it. Guest and host are
    /// both checked, so that an error in one does not hide the other's.
    fn folder(&self, f: RawFolder, before: &[Folder]) -> Result<Folder, PolicyError> {
        let at = f.guest.span().start;
        let guest =
            check_guest_path(f.guest.get_ref())
                .map_err(|m| self.error(at, m))
                .and_then(|guest| {
                    match before.iter().find(|o| nested(&o.guest, &guest)) {
                Some(other) => Err(self.error(
                    at,
                    format!(
                        "guest path {guest:?} overlaps {:?}: mounts may not be nested or repeated",
                        other.guest
                    ),
                )),
                None => Ok(guest),
            }
                });
        let host = self.resolve(f.host.get_ref());
        let at = f.host.span().start;
        let usable = match std::fs::metadata(&host) {
            Ok(m) if m.is_dir() => Ok(()),
            Ok(_) => Err(self.error(
                at,
                format!("host folder {} is not a folder", host.display()),
            )),
            Err(e) => Err(self.error(
                at,
                format!("host folder {} cannot be used: {e}", host.display()),
            )),
        };
        let guest = match (guest, usable) {
            (Ok(guest), Ok(())) => guest,
            (Err(e), Ok(())) | (Ok(_), Err(e)) => return Err(e),
            (Err(guest), Err(host)) => {
                self.report(guest);
                return Err(host);
            }
        };
        Ok(Folder {
            host,
            guest,
            mode: f.mode,
        })
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
    inside(a, b) || inside(b, a)
}

/// Whether guest path `inner` is `outer` or inside it.
pub(super) fn inside(outer: &str, inner: &str) -> bool {
    outer == "/"
        || inner == outer
        || inner
            .strip_prefix(outer)
            .is_some_and(|r| r.starts_with('/'))
}
