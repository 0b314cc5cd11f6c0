//! The serving process confines itself, so that a tool that escapes the
//! WebAssembly sandbox reaches only what the policy grants some tool and
//! what serving needs — not the user's files, not other ports, no other
//! program (Linux; elsewhere it compiles, does nothing, and says so).
//!
//! - [`plan`](mod@plan): the [`Confinement`] of a process, worked out from
//!   the policy and [`Serving`] alone — paths with their access, TCP ports
//!   to connect to and bind — for the whole server or a [`Scope`] of its
//!   components;
//! - `landlock`: the plan as a Landlock ruleset (files, TCP ports,
//!   signal and abstract-socket scopes), in the running kernel's ABI;
//! - `seccomp`: the system calls allowed (an allow-list), and those refused
//!   whatever it says ([`denied_calls`]);
//! - [`apply`]: both, in that order, while the process has one thread, so
//!   every thread started after inherits them;
//! - [`probe`]: what an escaped guest would try, for the proof that the
//!   kernel refuses it (`airlock serve --confine-probe`).

mod plan;
pub mod probe;

#[cfg(target_os = "linux")]
mod landlock;
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
mod seccomp;

use std::path::{Path, PathBuf};

pub use plan::{Access, Confinement, Need, PathRule, PortRule, Scope, Serving};

/// Why a confinement could not be applied where the kernel supports it.
#[derive(Debug, thiserror::Error)]
pub enum ConfineError {
    #[error(
        "the process already runs {0} threads; it must confine itself before it starts any \
         (a thread started before would stay unconfined)"
    )]
    Threads(usize),
    #[error("Landlock: {0}")]
    Landlock(String),
    #[error("seccomp: {0}")]
    Seccomp(String),
}

/// How Landlock holds in this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Landlock {
    /// In force, in this ABI; `full` when every right of the plan was (a
    /// kernel older than the plan's rights enforces the rights it has).
    Enforced { abi: i32, full: bool },
    /// The kernel has no Landlock (or it is not enabled).
    Unsupported,
}

/// What [`apply`] put in force.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    pub landlock: Landlock,
    /// The seccomp filters are installed.
    pub seccomp: bool,
    /// Paths of the plan that do not exist here (nothing to reach).
    pub skipped: Vec<String>,
}

impl Applied {
    /// `Landlock ABI 7, seccomp (allow-list; execve, ptrace, … refused)`.
    pub fn summary(&self) -> String {
        let landlock = match self.landlock {
            Landlock::Enforced { abi, .. } => format!("Landlock ABI {abi}"),
            Landlock::Unsupported => "no Landlock (this kernel has none)".to_string(),
        };
        let seccomp = match self.seccomp {
            true => "seccomp (no new privileges; an allow-list of system calls)",
            false => "no seccomp (not on this architecture)",
        };
        format!("{landlock}, {seccomp}")
    }
}

/// The system calls refused whatever else is allowed.
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
pub fn denied_calls() -> Vec<&'static str> {
    seccomp::DENIED_CALLS
        .iter()
        .map(|(name, _)| *name)
        .collect()
}

/// None: there is no seccomp here.
#[cfg(not(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
pub fn denied_calls() -> Vec<&'static str> {
    Vec::new()
}

/// Whether this system can confine a process at all (Linux).
pub const SUPPORTED: bool = cfg!(target_os = "linux");

/// Applies `plan` to this process: Landlock (files, ports, scopes), then
/// `no_new_privs` and seccomp on every thread. It must run while the
/// process has one thread: Landlock confines the calling thread and the
/// threads it starts after, never those already running. A kernel without
/// Landlock confines nothing there (`Landlock::Unsupported`: the caller
/// warns); any other failure is an error.
#[cfg(target_os = "linux")]
pub fn apply(plan: &Confinement) -> Result<Applied, ConfineError> {
    let threads = threads();
    if threads > 1 {
        return Err(ConfineError::Threads(threads));
    }
    prepare(plan);
    let (landlock, skipped) = landlock::restrict(plan)?;
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    let seccomp = {
        no_new_privs()?;
        seccomp::install()?;
        true
    };
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    let seccomp = false;
    Ok(Applied {
        landlock,
        seccomp,
        skipped,
    })
}

/// Elsewhere than on Linux there is nothing to apply.
#[cfg(not(target_os = "linux"))]
pub fn apply(_plan: &Confinement) -> Result<Applied, ConfineError> {
    Ok(Applied {
        landlock: Landlock::Unsupported,
        seccomp: false,
        skipped: Vec::new(),
    })
}

/// What must exist or be open before the door closes: the server's own
/// folders and files of the plan that are not there yet (the compile cache,
/// the store, the audit log — made now, as they would be a moment later),
/// and wasmtime's handle on `/proc/self/pagemap`, opened once and kept.
#[cfg(target_os = "linux")]
fn prepare(plan: &Confinement) {
    for rule in &plan.paths {
        let own = rule.needs.iter().any(|n| matches!(n, Need::Server(_)));
        if !own || rule.path.exists() {
            continue;
        }
        let _ = match rule.access {
            // Private, as the cache makes its folder.
            Access::ReadWrite => {
                use std::os::unix::fs::DirBuilderExt as _;
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(&rule.path)
            }
            Access::Write => std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&rule.path)
                .map(drop),
            Access::Read => Ok(()),
        };
    }
    let _ = wasmtime::PoolingAllocationConfig::is_pagemap_scan_available();
}

/// The threads of this process, from `/proc/self/status` (1 if unknown).
#[cfg(target_os = "linux")]
fn threads() -> usize {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("Threads:"))
                .and_then(|n| n.trim().parse().ok())
        })
        .unwrap_or(1)
}

/// `no_new_privs` (Landlock sets it too; seccomp needs it without
/// `CAP_SYS_ADMIN`).
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
fn no_new_privs() -> Result<(), ConfineError> {
    // SAFETY: prctl with PR_SET_NO_NEW_PRIVS takes integer arguments only.
    let done = unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) };
    match done {
        0 => Ok(()),
        _ => Err(ConfineError::Seccomp(format!(
            "no_new_privs: {}",
            std::io::Error::last_os_error()
        ))),
    }
}

/// The folders of certificate files (`--tls-cert`, `--tls-key`) and, for
/// those that are links (certbot's `live/` into `archive/`), of their
/// targets: a renewal writes a new file there.
pub fn certificate_folders(files: &[PathBuf]) -> Vec<PathBuf> {
    let mut folders = Vec::new();
    for file in files {
        let resolved = std::fs::canonicalize(file).ok();
        for path in std::iter::once(file.as_path()).chain(resolved.as_deref()) {
            let folder = match path.parent() {
                Some(p) if p.as_os_str().is_empty() => Path::new("."),
                Some(p) => p,
                None => continue,
            };
            if !folders.iter().any(|f: &PathBuf| f == folder) {
                folders.push(folder.to_path_buf());
            }
        }
    }
    folders
}

/// CA certificates the environment names for fetching (`AIRLOCK_CA_FILE`)
/// and for the platform's roots (`SSL_CERT_FILE`, `SSL_CERT_DIR`).
pub fn environment_ca_paths() -> Vec<PathBuf> {
    ["AIRLOCK_CA_FILE", "SSL_CERT_FILE", "SSL_CERT_DIR"]
        .iter()
        .filter_map(std::env::var_os)
        .filter(|v| !v.is_empty())
        .flat_map(|v| std::env::split_paths(&v).collect::<Vec<_>>())
        .collect()
}
