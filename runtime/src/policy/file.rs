//! The operator's policy file (`airlock.toml`): its format, the checked
//! [`Policy`] it becomes, and the merged [`Settings`] of one tool. Reading
//! and checking the text is above this module, in `parse.rs`
//! ([`Policy::load`], [`Policy::parse`]); its errors are [`PolicyError`]s.
//!
//! Everything not granted is denied. Unknown keys are errors, and every error
//! names the file, line and column (`airlock.toml:12:9: …`). Checks made when
//! the file is loaded, not at call time: sizes and durations, host patterns,
//! folder modes, guest paths (absolute, no `..`, no two mounts nested in one
//! another), host folders (must exist), environment values taken from the
//! runtime's environment (the variable must be set; its value is never
//! printed), `sha256` pins (64 hex digits), `source` references, `verify`
//! keys (the file must hold an ECDSA P-256 public key).
//!
//! # Format
//!
//! ```toml
//! # Optional JSON Lines audit log, one line per call; relative paths are
//! # relative to the folder of this file.
//! audit = "audit.jsonl"
//! # The audit log records each request a tool makes of the client (`ask`);
//! # the user's answers too only with this (off by default).
//! audit-answers = false
//!
//! # Applies to every component. Any key of a component or tool section
//! # (except source, sha256, tools) may be given here, and `verify`.
//! [defaults]
//! destructive = "deny"        # deny (default) | allow | confirm
//! limits = { memory = "64MiB", time = "5s", output = "1MiB", log = "64KiB", concurrency = 16 }
//! # every limit, with its unit, default and what it bounds, is a row of the
//! # table in `limits.rs` (for operators: docs/policy.md, "Limits")
//!
//! # One section per component; the name is the component's file stem.
//! [components.catalog]
//! source = "components/catalog.wasm"   # optional; relative to this file's folder
//! sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

//! # mode: "read-only" (the default when omitted) or "read-write".
//! folders = [
//!     { host = "./data", guest = "/data", mode = "read-write" },
//!     { host = "/srv/shared", guest = "/shared" },
//! ]
//! # name, name:port, *.name (subdomains only), http:// or https:// prefix,
//! # IP address, [IPv6]:port, CIDR range. No port = the scheme's default
//! # port (http 80, https 443; both when no scheme is given).
//! network = ["api.example.com", "api.example.com:8443", "*.example.org",
//!            "https://x.example.net", "10.1.2.3", "10.0.0.0/8", "[::1]:8080"]
//! # What https certificates are checked against: "bundled" (Mozilla's
//! # roots, the default) or "system" (the platform's store); `ca` adds a PEM
//! # bundle (relative to this file's folder).
//! tls = "bundled"
//! # Exactly the variables the tool sees: literal, or copied from the
//! # runtime's own environment when the file is loaded.
//! env = { API_URL = "https://api.example.com", TOKEN = { from = "CATALOG_TOKEN" } }
//! # What `wasi:config/store` answers (`get`, `get-all`); the same forms as env.
//! config = { region = "eu-west", api-key = { from = "CATALOG_TOKEN" } }
//! # Requests the tool may make of the client during a call (none by
//! # default): ask the user (elicit), the client's model (sample), its roots.
//! ask = ["elicit", "sample", "roots"]
//! # A URL elicitation sends the user to https: (or http: to this machine)
//! # only; this narrows it to the hosts listed (host patterns as `network`'s,
//! # without a scheme). Not set: any host.
//! elicit-url-hosts = ["example.com", "*.example.org"]
//!
//! [components.catalog.limits]  # overrides only the limits it names
//! time = "10s"
//! fuel = 1000000000            # optional instruction budget; unmetered if absent
//!
//! # Per-tool overrides; the tool must exist in the component.
//! [components.catalog.tools.restock]
//! destructive = "allow"
//!
//! # `network` may also be written as one table per pattern, with headers
//! # airlock adds to the requests to that host (the tool never sees them).
//! [components.tracker.network."https://api.example.com"]
//! headers = { Authorization = { from = "CATALOG_TOKEN", format = "Bearer {}" } }
//! [components.tracker.network."uploads.example.com"]
//!
//! # A tool that declares no hints of its own (a plain function; see
//! # `crate::functions`) may be given them here; without, it gets the
//! # strictest sandbox (create-only folders, no network). `hints` in
//! # [components.NAME] are those of each of its tools; a tool section's win.
//! [components.fetch.tools.fetch]
//! hints = ["read-only", "open-world"]   # also "destructive", "idempotent"
//!
//! # A component from a registry: a tag (locked in airlock.lock at first
//! # use) or a digest; `sha256` pins its component (.wasm) digest, and
//! # `verify` requires a cosign signature by the key (also in [defaults]).
//! [components.export]
//! source = "oci://ghcr.io/acme/export:1.2.0"    # or https://…/export.wasm
//! verify = { key = "keys/acme.pub" }
//! # Its guests run in a worker process of their own (a cordon; the
//! # default for a registry or URL source is one named after it, "front"
//! # keeps it in the serving process; see `crate::cordon`).
//! cordon = "acme"
//!
//! # HTTP bearer tokens. sha256 = hex SHA-256 digest of the token itself.
//! [[tokens]]
//! name = "agent-1"
//! sha256 = "2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae"
//! tools = ["lookup_price"]     # tools this token may see and call; omit = all
//! ```
//!
//! Sizes: an integer (bytes) or a string with `B`, `KiB`, `MiB` or `GiB`.
//! Durations: a string with `ms`, `s` or `m`.
//!
//! Merging: defaults ← component ← tool, key by key, as the table of keys
//! (`keys.rs`) declares each. `limits` merge limit by limit; `folders`, `network` (with its headers), `env` and `config` are
//! replaced as a whole by a more specific section (so a tool section can
//! take a folder away), and so are `tls` and `ca`. The network keys are
//! checked in `network_keys.rs`, into the types of [`super::network`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::error::PolicyError;
use super::keys::Section;
pub use super::settings::{Folder, FolderMode, Settings};
pub use super::token::{Identity, Token, TokenCredential};
use crate::source::{PublicKey, Source};
use crate::tool::Hints;

/// A component's own section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComponentPolicy {
    /// The section name (the component's file stem).
    pub name: String,
    /// Where it comes from: a `.wasm` file (resolved against the policy
    /// file's folder), an `oci://` reference or an `https://` URL.
    pub source: Option<Source>,
    /// The pinned SHA-256 digest of the `.wasm`, 64 lower-case hex digits.
    pub sha256: Option<String>,
    /// The key its cosign signature must be made with (its own `verify`).
    pub verify: Option<PublicKey>,
    /// `offers-network = true`: its reads, prompts and completions may
    /// reach the network its section grants (default: they may not).
    pub offers_network: bool,
    /// `cordon = "NAME"`: the worker process its guests run in (`front`:
    /// the serving process); `None` leaves it to the default
    /// (`crate::cordon::of`).
    pub cordon: Option<String>,
    pub(super) section: Section,
    /// Its tool sections; their `hints` are those of tools that carry
    /// none (plain functions).
    pub(super) tools: BTreeMap<String, Section>,
    /// Line and column of the section's name, and of each tool section's.
    pub(super) position: (usize, usize),
    pub(super) tool_positions: BTreeMap<String, (usize, usize)>,
}

impl ComponentPolicy {
    /// The tools it has a section for (`[components.NAME.tools.TOOL]`), in
    /// name order: each may grant other folders and hosts than the
    /// component's own section.
    pub fn tool_sections(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }
}

/// A checked policy. [`Policy::default`] grants nothing: no folders, no
/// network, no environment, destructive calls denied, default limits.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    /// The file it was read from, for messages (`<policy>` for text).
    pub(super) file: String,
    pub(super) audit: Option<PathBuf>,
    /// `audit-answers`: the audit log keeps the client's answers.
    pub(super) audit_answers: bool,
    /// `[defaults]`, with its `verify`.
    pub(super) defaults: Section,
    pub(super) components: BTreeMap<String, ComponentPolicy>,
    pub(super) tokens: Vec<Token>,
    pub(super) oauth: Option<super::OAuth>,
    /// The files read for it besides itself: `verify` keys, CA bundles.
    pub(super) files: Vec<PathBuf>,
}

impl Policy {
    /// The merged settings of one tool: defaults ← component ← tool. An
    /// unknown component or tool gets what the less specific sections give.
    pub fn settings_for(&self, component: &str, tool: &str) -> Settings {
        let mut settings = Settings {
            no_policy: !self.is_loaded(),
            ..Settings::default()
        };
        self.defaults.apply_to(&mut settings);
        if let Some(c) = self.components.get(component) {
            c.section.apply_to(&mut settings);
            if let Some(t) = c.tools.get(tool) {
                t.apply_to(&mut settings);
            }
        }
        settings
    }

    /// Whether this policy was read from a file or text (not
    /// [`Policy::default`], which grants nothing).
    pub fn is_loaded(&self) -> bool {
        !self.file.is_empty()
    }

    pub fn component(&self, name: &str) -> Option<&ComponentPolicy> {
        self.components.get(name)
    }

    /// Whether `component`'s reads, prompts and completions may use the
    /// network its section grants (`offers-network = true`).
    pub fn offers_network(&self, component: &str) -> bool {
        self.components
            .get(component)
            .is_some_and(|c| c.offers_network)
    }

    /// The key a component's signature must be made with: its own
    /// `verify`, else that of `[defaults]`.
    pub fn verify_key(&self, component: &str) -> Option<&PublicKey> {
        self.components
            .get(component)
            .and_then(|c| c.verify.as_ref())
            .or(self.defaults.verify.as_ref())
    }

    /// The component section whose `source` is `label` (a reference as
    /// written, or a file path as resolved).
    pub fn component_with_source(&self, label: &Path) -> Option<&ComponentPolicy> {
        self.components
            .values()
            .find(|c| c.source.as_ref().is_some_and(|s| s.label() == label))
    }

    /// The files read for it besides itself (`verify` keys, `ca` bundles):
    /// a cordon's worker reads them again.
    pub fn files_read(&self) -> &[PathBuf] {
        &self.files
    }

    /// All component sections, in name order.
    pub fn components(&self) -> impl Iterator<Item = &ComponentPolicy> {
        self.components.values()
    }

    /// The hints the policy declares for `tool` of `component`, if any:
    /// `hints` in its tool section, else in the component's section.
    pub fn declared_hints(&self, component: &str, tool: &str) -> Option<Hints> {
        self.hints_declared(component, tool).map(|(hints, _)| hints)
    }

    /// As [`Policy::declared_hints`], with the section that declares them
    /// (`[components.NAME]` or `[components.NAME.tools.TOOL]`).
    pub fn hints_declared(&self, component: &str, tool: &str) -> Option<(Hints, String)> {
        let c = self.components.get(component)?;
        if let Some(hints) = c.tools.get(tool).and_then(|t| t.hints) {
            return Some((hints, format!("[components.{component}.tools.{tool}]")));
        }
        c.section
            .hints
            .map(|h| (h, format!("[components.{component}]")))
    }

    /// The `[components.NAME]` sections that name none of `components`
    /// (the names, file stems, of the components at hand), each as an error
    /// that points at the section.
    pub fn unmatched_components(&self, components: &[&str]) -> Vec<PolicyError> {
        let known = if components.is_empty() {
            "there are none".to_string()
        } else {
            format!("those at hand: {}", components.join(", "))
        };
        self.components
            .values()
            .filter(|c| !components.contains(&c.name.as_str()))
            .map(|c| {
                self.error_at(
                    c.position,
                    format!(
                        "[components.{}] matches no component ({known}; a section is named \
                         after the component's file stem), so its grants apply to nothing",
                        c.name
                    ),
                )
            })
            .collect()
    }

    /// The `[components.COMPONENT.tools.TOOL]` sections whose TOOL is none
    /// of `tools` (the tools the component declares), each as an error that
    /// points at the section.
    pub fn unmatched_tools(&self, component: &str, tools: &[&str]) -> Vec<PolicyError> {
        let Some(c) = self.components.get(component) else {
            return Vec::new();
        };
        c.tool_positions
            .iter()
            .filter(|(tool, _)| !tools.contains(&tool.as_str()))
            .map(|(tool, position)| {
                self.error_at(
                    *position,
                    format!(
                        "[components.{component}.tools.{tool}] names no tool of {component} \
                         ({}); correct the name or remove the section",
                        match tools.is_empty() {
                            true => format!(
                                "it declares none: it offers only resources or prompts, \
                                 which [components.{component}] itself grants"
                            ),
                            false => format!("it declares {}", tools.join(", ")),
                        }
                    ),
                )
            })
            .collect()
    }

    /// `message` about what is written at `(line, column)` of the file
    /// (a `[[tokens]]` entry's `position`, …), as every policy error reads.
    pub fn error_at(&self, (line, column): (usize, usize), message: String) -> PolicyError {
        PolicyError::Invalid {
            file: self.file.clone(),
            line,
            column,
            message,
        }
    }

    /// The same policy without its audit log (`airlock check` writes nothing).
    pub fn without_audit(mut self) -> Policy {
        self.audit = None;
        self
    }

    /// Whether the audit log keeps the client's answers to tools' requests
    /// (`audit-answers = true`); else only what was asked.
    pub fn audit_answers(&self) -> bool {
        self.audit_answers
    }

    /// The audit log path, resolved against the policy file's folder.
    pub fn audit_path(&self) -> Option<&Path> {
        self.audit.as_deref()
    }

    pub fn tokens(&self) -> &[Token] {
        &self.tokens
    }

    /// `[oauth]`: the issuers whose access tokens are accepted, and what
    /// their scopes give.
    pub fn oauth(&self) -> Option<&super::OAuth> {
        self.oauth.as_ref()
    }

    /// Whether any section sets a fuel limit, so the engine must meter fuel
    /// (metering costs time on every call, so it is off unless asked for).
    pub fn uses_fuel(&self) -> bool {
        self.sections()
            .any(|s| s.limits.is_some_and(|l| l.fuel.is_some()))
    }

    /// Whether any section gives credentials to inject.
    pub fn has_credentials(&self) -> bool {
        self.sections().any(|s| {
            s.network
                .as_ref()
                .is_some_and(|n| !n.credentials.is_empty())
        })
    }

    /// Every section: defaults, components, tools.
    fn sections(&self) -> impl Iterator<Item = &Section> {
        std::iter::once(&self.defaults).chain(
            self.components
                .values()
                .flat_map(|c| std::iter::once(&c.section).chain(c.tools.values())),
        )
    }
}

#[cfg(test)]
#[path = "file_tests.rs"]
mod tests;
