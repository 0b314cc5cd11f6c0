//! `cargo xtask deps`: which dependencies have a newer release than the
//! one locked, the sandbox's own first. A fix on the line a dependency
//! follows (wasmtime's LTS) must never wait unnoticed: this reads what
//! `cargo update --dry-run --verbose` would do in each workspace and sorts
//! every newer release into one of three kinds — one `cargo update` takes,
//! one on the same semver line that cargo does not take (a requirement in
//! the tree holds it back, a crate of the release is missing from the
//! registry, or it needs a newer Rust), and a new major line.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

/// The workspaces whose lockfiles are read: the runtime's, and the guests'.
const WORKSPACES: [&str; 3] = [".", "components", "tests/components"];

/// Crate name prefixes of the sandbox: the isolation, the TLS and HTTP
/// stacks, token and signature checks. A newer release of one of these is
/// listed first.
const SANDBOX: [&str; 14] = [
    "wasmtime",
    "cranelift-",
    "winch-",
    "pulley-",
    "cap-",
    "rustls",
    "tokio-rustls",
    "webpki",
    "hyper",
    "h2",
    "jsonwebtoken",
    "ring",
    "wasmparser",
    "wit-parser",
];

/// A dependency with a newer release than the one locked.
#[derive(Debug, PartialEq)]
struct Behind {
    workspace: String,
    name: String,
    locked: String,
    /// What `cargo update` would lock instead, if anything.
    update: Option<String>,
    /// A newer release cargo did not take, and why, if cargo said.
    available: Option<(String, Option<String>)>,
}

impl Behind {
    fn sandbox(&self) -> bool {
        SANDBOX.iter().any(|p| self.name.starts_with(p))
    }

    /// A release on the locked version's semver line that cargo could not
    /// take: the case that hides a fix.
    fn held_back(&self) -> Option<&(String, Option<String>)> {
        self.available
            .as_ref()
            .filter(|(v, _)| compatible(&self.locked, v))
    }

    fn line(&self) -> String {
        let mut line = format!("{} {}", self.name, self.locked);
        if let Some(update) = &self.update {
            let _ = write!(line, " -> {update} (cargo update takes it)");
        }
        if let Some((version, why)) = &self.available {
            let why = why.as_deref().map(|w| format!(", {w}")).unwrap_or_default();
            if self.held_back().is_some() {
                let _ = write!(
                    line,
                    "; {version} is released on this line and not taken{why} (a requirement \
                     in the tree, a crate missing from the registry or a newer Rust holds it)"
                );
            } else {
                let _ = write!(line, "; new major line {version}{why}");
            }
        }
        if self.workspace != "." {
            let _ = write!(line, "  [{}]", self.workspace);
        }
        line
    }
}

/// Whether `newer` is semver-compatible with `locked` (same major, or same
/// minor below 1.0, or the same 0.0.x).
fn compatible(locked: &str, newer: &str) -> bool {
    let parts = |v: &str| -> Vec<u64> {
        v.split(['-', '+'])
            .next()
            .unwrap_or(v)
            .split('.')
            .map(|p| p.parse().unwrap_or(0))
            .collect()
    };
    let (a, b) = (parts(locked), parts(newer));
    let at = |v: &[u64], i: usize| v.get(i).copied().unwrap_or(0);
    match (at(&a, 0), at(&a, 1)) {
        (0, 0) => at(&b, 0) == 0 && at(&b, 1) == 0 && at(&a, 2) == at(&b, 2),
        (0, minor) => at(&b, 0) == 0 && at(&b, 1) == minor,
        (major, _) => at(&b, 0) == major,
    }
}

/// Reads cargo's `Updating NAME vA -> vB (available: vC)` and
/// `Unchanged NAME vA (available: vC, requires Rust R)` lines.
fn parse(workspace: &str, out: &str) -> Vec<Behind> {
    let mut behind = Vec::new();
    for line in out.lines().map(str::trim) {
        let (verb, rest) = match line.split_once(' ') {
            Some((verb @ ("Updating" | "Unchanged"), rest)) => (verb, rest.trim()),
            _ => continue,
        };
        let (head, available) = match rest.split_once(" (available: ") {
            Some((head, tail)) => {
                let tail = tail.trim_end_matches(')');
                let (version, why) = match tail.split_once(", ") {
                    Some((v, why)) => (v, Some(why.to_string())),
                    None => (tail, None),
                };
                (
                    head,
                    Some((version.trim_start_matches('v').to_string(), why)),
                )
            }
            None => (rest, None),
        };
        let mut words = head.split_whitespace();
        let (Some(name), Some(locked)) = (words.next(), words.next()) else {
            continue;
        };
        if name.ends_with("index") {
            continue; // "Updating crates.io index"
        }
        let update = match (verb, words.next(), words.next()) {
            ("Updating", Some("->"), Some(to)) => Some(to.trim_start_matches('v').to_string()),
            _ => None,
        };
        if update.is_none() && available.is_none() {
            continue;
        }
        behind.push(Behind {
            workspace: workspace.to_string(),
            name: name.to_string(),
            locked: locked.trim_start_matches('v').to_string(),
            update,
            available,
        });
    }
    behind
}

/// Every dependency behind a newer release, in every workspace.
fn survey(root: &Path) -> Result<Vec<Behind>> {
    let mut all = Vec::new();
    for workspace in WORKSPACES {
        let dir = root.join(workspace);
        if !dir.join("Cargo.lock").is_file() {
            continue;
        }
        let out = Command::new("cargo")
            .args(["update", "--dry-run", "--verbose"])
            .current_dir(&dir)
            .output()
            .context("running cargo update --dry-run")?;
        let text = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() {
            let last = text.lines().rev().find(|l| !l.trim().is_empty());
            bail!(
                "cargo update --dry-run in {workspace} failed: {}",
                last.unwrap_or("no output")
            );
        }
        all.extend(parse(workspace, &text));
    }
    Ok(all)
}

/// The crates the root workspace replaces through `[patch.crates-io]`.
fn patched(root: &Path) -> Vec<String> {
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap_or_default();
    manifest
        .split("[patch.crates-io]")
        .nth(1)
        .map(|section| {
            section
                .lines()
                .take_while(|l| !l.trim_start().starts_with('['))
                .filter_map(|l| l.split_once('=').map(|(k, _)| k.trim().to_string()))
                .filter(|k| !k.is_empty() && !k.starts_with('#'))
                .collect()
        })
        .unwrap_or_default()
}

/// `cargo xtask deps`: the whole report.
pub fn deps(root: &Path) -> Result<()> {
    let all = survey(root)?;
    for crate_name in patched(root) {
        println!(
            "{crate_name}: patched from patches/ (patches/README.md says what is carried and when to drop it)"
        );
    }
    let (sandbox, other): (Vec<&Behind>, Vec<&Behind>) = all.iter().partition(|b| b.sandbox());
    for (title, list) in [("sandbox", sandbox), ("other", other)] {
        println!(
            "\n{title} dependencies behind a newer release ({}):",
            list.len()
        );
        for b in list.iter().filter(|b| b.held_back().is_some()) {
            println!("  ! {}", b.line());
        }
        for b in list.iter().filter(|b| b.held_back().is_none()) {
            println!("    {}", b.line());
        }
    }
    println!("\n{}", summary(&all));
    println!(
        "`!` marks a release on the locked line that cargo does not take: if it fixes the \
         sandbox, carry the fix as a patch (see patches/README.md) until it resolves."
    );
    Ok(())
}

/// One line for `cargo xtask test`'s report.
pub fn summary_line(root: &Path) -> String {
    match survey(root) {
        Ok(all) => summary(&all),
        Err(err) => format!("deps: not checked ({err:#})"),
    }
}

fn summary(all: &[Behind]) -> String {
    let updates = all.iter().filter(|b| b.update.is_some()).count();
    let mut held: Vec<&Behind> = all
        .iter()
        .filter(|b| b.sandbox() && b.held_back().is_some())
        .collect();
    // wasmtime's own crates first: the sandbox itself.
    held.sort_by_key(|b| (!b.name.starts_with("wasmtime"), b.name.clone()));
    let held: Vec<String> = held
        .iter()
        .filter_map(|b| {
            b.held_back()
                .map(|(v, _)| format!("{} {} < {v}", b.name, b.locked))
        })
        .collect();
    let mut line = format!(
        "deps: {} behind a newer release, {updates} that `cargo update` takes",
        all.len()
    );
    if !held.is_empty() {
        let shown = held.iter().take(3).cloned().collect::<Vec<_>>().join(", ");
        let more = held.len().saturating_sub(3);
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        let _ = write!(line, "; sandbox releases not taken: {shown}{more}");
    }
    line + " (`cargo xtask deps` lists them)"
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUT: &str = "    Updating crates.io index
     Locking 3 packages to latest Rust 1.95 compatible versions
    Updating hyper v1.12.0 -> v1.13.0
    Updating wasmtime-environ v48.0.8 -> v48.0.10 (available: v48.0.11)
   Unchanged wasmtime-wasi v48.0.8 (available: v50.0.1, requires Rust 1.97.0)
   Unchanged toml v0.9.12+spec-1.1.0 (available: v1.2.2+spec-1.1.0)
      Adding wast v254.0.2
";

    #[test]
    fn cargo_lines_become_updates_held_back_releases_and_new_majors() {
        let all = parse(".", OUT);
        let names: Vec<&str> = all.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(
            names,
            ["hyper", "wasmtime-environ", "wasmtime-wasi", "toml"]
        );
        assert_eq!(all[0].update.as_deref(), Some("1.13.0"));
        assert!(all[0].held_back().is_none());
        assert_eq!(
            all[1].held_back(),
            Some(&("48.0.11".to_string(), None)),
            "48.0.11 is on 48's line and cargo did not take it"
        );
        assert!(all[2].held_back().is_none(), "50 is a new major line");
        assert_eq!(
            all[2].available.as_ref().unwrap().1.as_deref(),
            Some("requires Rust 1.97.0")
        );
        assert!(all[3].held_back().is_none(), "0.9 to 1.2 is a new line");
        assert!(all[1].sandbox() && all[0].sandbox() && !all[3].sandbox());
        assert_eq!(
            summary(&all),
            "deps: 4 behind a newer release, 2 that `cargo update` takes; sandbox releases \
             not taken: wasmtime-environ 48.0.8 < 48.0.11 (`cargo xtask deps` lists them)"
        );
    }

    #[test]
    fn semver_lines() {
        assert!(compatible("48.0.10", "48.0.11"));
        assert!(compatible("0.23.46", "0.23.48"));
        assert!(!compatible("0.9.12+spec-1.1.0", "1.2.2+spec-1.1.0"));
        assert!(!compatible("0.22.1", "0.23.1"));
        assert!(!compatible("0.0.3", "0.0.4"));
        assert!(!compatible("48.0.8", "50.0.1"));
    }
}
