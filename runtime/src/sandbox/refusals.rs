//! Filesystem operations the folder rules refuse: a line in the operator's
//! log for each, saying what was refused, by which rule and what would
//! allow it, and a count per call for its audit entry.
//!
//! Two rules refuse changes in granted folders, and the guest sees either
//! only as `not-permitted` (`EPERM`, "Operation not permitted"):
//!
//! - **read-only**: the folder is mounted read-only, because the policy
//!   says so (`mode = "read-only"`, the default) or because the tool
//!   declares read-only (then every folder is read-only for it);
//! - **create-only**: the tool is neither read-only nor destructive, so its
//!   read-write folders only let it create (see [`super::folders`]).
//!
//! wasmtime-wasi enforces read-only itself (its `FsPerms`), below airlock;
//! the folder layer checks the same permission first, so the refusal is
//! airlock's, with the same error, and can be explained. To name the
//! guest's path (the operations carry only a descriptor and a path relative
//! to it) every descriptor's guest path is recorded when it is opened.

use std::collections::HashMap;

use wasmtime_wasi::p2::FsError;
use wasmtime_wasi::p2::bindings::filesystem::types::ErrorCode;

use crate::logtext::GuestText;
#[cfg(test)] // the tests build their records from grants (`super::*`)
use crate::policy::{Access, Grant};

/// Which rule refused an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    ReadOnly,
    CreateOnly,
}

/// One call's record: the guest path of each descriptor it holds, its
/// read-only folders and why each is, and how many operations were refused.
#[derive(Debug, Default)]
pub struct Refusals {
    /// Guest path of each descriptor (preopens and those opened), by
    /// resource handle.
    paths: HashMap<u32, String>,
    /// Each read-only mount's guest path, and whether the tool's read-only
    /// hint made it so (else the policy's mode did).
    read_only: Vec<(String, bool)>,
    count: u64,
}

impl Refusals {
    /// A call's record, knowing its read-only mounts: each one's guest
    /// path, and whether the tool's read-only hint made it so. (What a
    /// grant makes of it: `Refusals::for_grant` in `sandbox::provision`.)
    pub fn new(read_only: Vec<(String, bool)>) -> Self {
        Refusals {
            paths: HashMap::new(),
            read_only,
            count: 0,
        }
    }

    /// A mount handed to the guest (`get-directories`).
    pub fn preopened(&mut self, descriptor: u32, guest: &str) {
        self.paths.insert(descriptor, guest.to_string());
    }

    /// A descriptor opened at `path` under `parent`.
    pub fn opened(&mut self, descriptor: u32, parent: u32, path: &str) {
        if let Some(full) = self.path(parent, Some(path)) {
            self.paths.insert(descriptor, full);
        }
    }

    pub fn closed(&mut self, descriptor: u32) {
        self.paths.remove(&descriptor);
    }

    /// How many operations this call was refused.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The guest path of `path` under `descriptor` (or of the descriptor).
    fn path(&self, descriptor: u32, path: Option<&str>) -> Option<String> {
        let base = self.paths.get(&descriptor)?;
        Some(match path {
            None => base.clone(),
            Some(path) if base.ends_with('/') => format!("{base}{path}"),
            Some(path) => format!("{base}/{path}"),
        })
    }

    /// Counts and logs a refusal of `what` (`write`, `delete`, …) at `path`
    /// under `descriptor`; returns the error the guest gets.
    pub fn refuse(
        &mut self,
        rule: Rule,
        what: &str,
        descriptor: u32,
        path: Option<&str>,
    ) -> FsError {
        self.count += 1;
        let full = self.path(descriptor, path);
        let shown = full.as_deref().or(path).unwrap_or("an open file");
        let shown = format!("{:?}", GuestText(shown).to_string());
        match rule {
            Rule::CreateOnly => tracing::info!(
                "create-only: refused to {what} {shown} (it existed before the call); the tool is \
                 neither read-only nor destructive, so its read-write folders are create-only — \
                 a tool that declares destructive, with destructive = \"allow\" or \"confirm\" \
                 in the policy, may change it"
            ),
            Rule::ReadOnly => {
                let mount = full
                    .as_deref()
                    .and_then(|full| self.read_only.iter().find(|(guest, _)| within(guest, full)));
                match mount {
                    Some((_, true)) => tracing::info!(
                        "read-only: refused to {what} {shown}: the tool declares read-only, so \
                         every folder is read-only for it whatever the policy's mode; only a tool \
                         that does not declare read-only may change it"
                    ),
                    Some((guest, false)) => tracing::info!(
                        "read-only: refused to {what} {shown}: the policy mounts {guest} \
                         read-only (mode = \"read-only\", the default); mode = \"read-write\" in \
                         its folders entry would allow changes (create-only unless the tool \
                         declares destructive)"
                    ),
                    None => tracing::info!(
                        "read-only: refused to {what} {shown}: its folder is mounted read-only \
                         (the policy's mode, or the tool's read-only hint)"
                    ),
                }
            }
        }
        ErrorCode::NotPermitted.into()
    }
}

/// Whether guest path `path` is `mount` or inside it.
fn within(mount: &str, path: &str) -> bool {
    mount == "/"
        || path
            .strip_prefix(mount)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{Mount, Narrowing};

    fn grant() -> Grant {
        let mount = |guest: &str, access| Mount {
            host: "/srv".into(),
            guest: guest.into(),
            access,
        };
        Grant {
            mounts: vec![
                mount("/policy", Access::ReadOnly),
                mount("/hint", Access::ReadOnly),
                mount("/rw", Access::ReadWrite),
            ],
            narrowings: vec![Narrowing {
                what: "/hint".into(),
                from: "read-write".into(),
                to: "read-only".into(),
                reason: "tool is read-only".into(),
            }],
            ..Grant::default()
        }
    }

    #[test]
    fn read_only_mounts_know_why() {
        let refusals = Refusals::for_grant(&grant());
        assert_eq!(
            refusals.read_only,
            [("/policy".to_string(), false), ("/hint".to_string(), true)]
        );
    }

    #[test]
    fn descriptors_carry_their_guest_paths_and_refusals_are_counted() {
        let mut refusals = Refusals::for_grant(&grant());
        refusals.preopened(1, "/policy");
        refusals.opened(2, 1, "sub");
        refusals.opened(3, 2, "file.txt");
        refusals.opened(4, 99, "unknown-parent");
        assert_eq!(
            refusals.path(3, None).as_deref(),
            Some("/policy/sub/file.txt")
        );
        assert_eq!(
            refusals.path(2, Some("x")).as_deref(),
            Some("/policy/sub/x")
        );
        assert_eq!(refusals.path(4, None), None);
        refusals.closed(3);
        assert_eq!(refusals.path(3, None), None);
        refusals.preopened(5, "/");
        assert_eq!(refusals.path(5, Some("etc")).as_deref(), Some("/etc"));

        let err = refusals.refuse(Rule::ReadOnly, "write", 2, Some("x"));
        assert_eq!(err.downcast_ref(), Some(&ErrorCode::NotPermitted));
        refusals.refuse(Rule::CreateOnly, "delete", 42, None);
        assert_eq!(refusals.count(), 2);
    }

    #[test]
    fn a_mount_holds_its_own_paths_only() {
        assert!(within("/data", "/data"));
        assert!(within("/data", "/data/x"));
        assert!(!within("/data", "/database"));
        assert!(within("/", "/anything"));
    }
}
