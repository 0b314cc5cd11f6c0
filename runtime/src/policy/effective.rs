//! Hints become capabilities: the one place where a tool's declared hints
//! narrow what the policy grants it.
//!
//! [`effective`] is a pure function of the merged [`Settings`] and the
//! tool's [`Hints`]. It can only take away: nothing here widens a grant.
//! The rules (DESIGN.md, "Hints become capabilities"):
//!
//! | hints | folders | network | consent |
//! | --- | --- | --- | --- |
//! | read-only | all read-only | listed hosts, GET/HEAD/OPTIONS only (if open-world) | policy's mode if also destructive, else allow |
//! | neither read-only nor destructive | read-write → create-only | listed hosts (if open-world) | allow |
//! | destructive | as the policy says | listed hosts (if open-world) | policy's `destructive` mode |
//! | not open-world | — | none, whatever the policy lists | — |
//!
//! `retry` is the idempotent hint. Every narrowing is recorded with its
//! reason, so `airlock inspect` can show why a tool gets less than the policy
//! lists.

use super::file::{FolderMode, Settings};
use super::grant::{Access, Consent, Grant, HttpMethods, Mount, NetworkGrant, Narrowing};
use crate::tool::Hints;

const READ_ONLY: &str = "tool is read-only";
const NOT_DESTRUCTIVE: &str = "tool is neither read-only nor destructive";
const NOT_OPEN_WORLD: &str = "tool is not open-world";

fn narrowing(what: &str, from: &str, to: &str, reason: &str) -> Narrowing {
    Narrowing {
        what: what.to_string(),
        from: from.to_string(),
        to: to.to_string(),
        reason: reason.to_string(),
    }
}

/// The grant of one call of a tool with `hints` under `settings`.
pub fn effective(settings: &Settings, hints: Hints) -> Grant {
    let mut narrowings = Vec::new();

    let mounts = settings
        .folders
        .iter()
        .map(|f| {
            // Read-only wins over destructive: a tool claiming both gets the
            // stricter folders (and, below, still needs consent).
            let (access, reason) = match f.mode {
                FolderMode::ReadOnly => (Access::ReadOnly, None),
                FolderMode::ReadWrite if hints.read_only => (Access::ReadOnly, Some(READ_ONLY)),
                FolderMode::ReadWrite if hints.destructive => (Access::ReadWrite, None),
                FolderMode::ReadWrite => (Access::CreateOnly, Some(NOT_DESTRUCTIVE)),
            };
            if let Some(reason) = reason {
                narrowings.push(narrowing(&f.guest, f.mode.as_str(), access.as_str(), reason));
            }
            Mount {
                host: f.host.clone(),
                guest: f.guest.clone(),
                access,
            }
        })
        .collect();

    let network = if settings.network.is_empty() {
        None
    } else if !hints.open_world {
        let listed: Vec<String> = settings.network.iter().map(|p| p.to_string()).collect();
        narrowings.push(narrowing("network", &listed.join(", "), "none", NOT_OPEN_WORLD));
        None
    } else {
        let methods = if hints.read_only {
            narrowings.push(narrowing(
                "http methods",
                "any",
                "GET, HEAD, OPTIONS",
                READ_ONLY,
            ));
            HttpMethods::SafeOnly
        } else {
            HttpMethods::Any
        };
        Some(NetworkGrant {
            allow: settings.network.clone(),
            methods,
        })
    };

    // Only destructive calls need consent; for the rest it is settled here
    // so the caller never has to look at hints again.
    let consent = if hints.destructive {
        settings.destructive
    } else {
        Consent::Allow
    };

    Grant {
        mounts,
        network,
        env: settings.env.clone(),
        limits: settings.limits,
        consent,
        retry: hints.idempotent,
        narrowings,
    }
}
