//! The operator's policy file (`airlock.toml`): parsing, checking, and the
//! merged [`Settings`] of one tool.
//!
//! Everything not granted is denied. Unknown keys are errors, and every error
//! names the file, line and column (`airlock.toml:12:9: …`). Checks made when
//! the file is loaded, not at call time: sizes and durations, host patterns,
//! folder modes, guest paths (absolute, no `..`, no two mounts nested in one
//! another), host folders (must exist), environment values taken from the
//! runtime's environment (the variable must be set; its value is never
//! printed), `sha256` pins (64 hex digits).
//!
//! # Format
//!
//! ```toml
//! # Optional JSON Lines audit log, one line per call; relative paths are
//! # relative to the folder of this file.
//! audit = "audit.jsonl"
//!
//! # Applies to every component. Any key of a component or tool section
//! # (except source, sha256, tools) may be given here.
//! [defaults]
//! destructive = "deny"        # deny (default) | allow | confirm
//! limits = { memory = "64MiB", time = "5s", output = "1MiB", log = "64KiB", concurrency = 16 }
//! # also in limits, per call: write = "256MiB" (bytes written into granted
//! # folders), files = 4096 (entries created there), open = 256 (descriptors
//! # held at once), messages = 1000 (host log and progress messages sent to
//! # the client; their bytes count against `log`)
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
//! Merging: defaults ← component ← tool, key by key. `limits` merge limit by
//! limit; `folders`, `network` (with its headers) and `env` are replaced as a
//! whole by a more specific section (so a tool section can take a folder
//! away), and so are `tls` and `ca`.
//!
//! The network keys are parsed in [`super::network`], environment values in
//! `env.rs`, folders in `folders.rs`, tokens in `tokens.rs`.

use std::collections::BTreeMap;
use std::env::VarError;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use super::HostPattern;
use super::env::RawEnv;
use super::folders::RawFolder;
pub use super::folders::{Folder, FolderMode};
use super::grant::{Consent, Limits};
use super::network::{CaBundle, Credential, NetworkList, RawNetwork, Roots, Trust};
use super::tokens::RawToken;
pub use super::tokens::Token;
use super::units::{Size, Time};

/// Why a policy file was refused.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// The file could not be read.
    #[error("{file}: cannot read the policy file: {error}")]
    Read { file: String, error: std::io::Error },
    /// The file is not a valid policy; `line` and `column` count from 1.
    #[error("{file}:{line}:{column}: {message}")]
    Invalid {
        file: String,
        line: usize,
        column: usize,
        message: String,
    },
}

/// What the policy grants one tool, all sections merged; the input of
/// [`super::effective`].
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Settings {
    pub folders: Vec<Folder>,
    pub network: Vec<HostPattern>,
    /// Headers added to requests to hosts of `network`; values are secrets.
    pub credentials: Vec<Credential>,
    /// What https certificates are checked against.
    pub trust: Trust,
    /// Resolved values, in name order.
    pub env: Vec<(String, String)>,
    pub limits: Limits,
    /// What to do with a destructive call.
    pub destructive: Consent,
}

// Hand-written so that environment values (often secrets) never reach a log.
impl fmt::Debug for Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Settings")
            .field("folders", &self.folders)
            .field("network", &self.network)
            .field("credentials", &self.credentials)
            .field("trust", &self.trust)
            .field("env", &self.env.iter().map(|(k, _)| k).collect::<Vec<_>>())
            .field("limits", &self.limits)
            .field("destructive", &self.destructive)
            .finish()
    }
}

/// One limit per field; `None` = inherit from the less specific section.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct LimitsPatch {
    memory: Option<u64>,
    time: Option<Duration>,
    fuel: Option<u64>,
    output: Option<u64>,
    log: Option<u64>,
    concurrency: Option<u32>,
    write: Option<u64>,
    files: Option<u64>,
    open: Option<u64>,
    messages: Option<u64>,
}

/// One checked section (defaults, component or tool); `None` = inherit.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Section {
    folders: Option<Vec<Folder>>,
    network: Option<NetworkList>,
    tls: Option<Roots>,
    ca: Option<CaBundle>,
    env: Option<Vec<(String, String)>>,
    limits: LimitsPatch,
    destructive: Option<Consent>,
}

impl Section {
    fn apply_to(&self, s: &mut Settings) {
        if let Some(f) = &self.folders {
            s.folders = f.clone();
        }
        if let Some(n) = &self.network {
            s.network = n.allow.clone();
            s.credentials = n.credentials.clone();
        }
        if let Some(roots) = self.tls {
            s.trust.roots = roots;
        }
        if let Some(ca) = &self.ca {
            s.trust.ca = Some(ca.clone());
        }
        if let Some(e) = &self.env {
            s.env = e.clone();
        }
        if let Some(d) = self.destructive {
            s.destructive = d;
        }
        let p = &self.limits;
        let l = &mut s.limits;
        l.memory = p.memory.unwrap_or(l.memory);
        l.time = p.time.unwrap_or(l.time);
        l.fuel = p.fuel.or(l.fuel);
        l.output = p.output.unwrap_or(l.output);
        l.log = p.log.unwrap_or(l.log);
        l.concurrency = p.concurrency.unwrap_or(l.concurrency);
        l.write = p.write.unwrap_or(l.write);
        l.files = p.files.unwrap_or(l.files);
        l.open = p.open.unwrap_or(l.open);
        l.messages = p.messages.unwrap_or(l.messages);
    }
}

/// A component's own section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComponentPolicy {
    /// The section name (the component's file stem).
    pub name: String,
    /// The `.wasm` file, resolved against the policy file's folder.
    pub source: Option<PathBuf>,
    /// The pinned SHA-256 digest, 64 lower-case hex digits.
    pub sha256: Option<String>,
    section: Section,
    tools: BTreeMap<String, Section>,
}

/// A checked policy. [`Policy::default`] grants nothing: no folders, no
/// network, no environment, destructive calls denied, default limits.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    audit: Option<PathBuf>,
    defaults: Section,
    components: BTreeMap<String, ComponentPolicy>,
    tokens: Vec<Token>,
}

impl Policy {
    /// Reads and checks a policy file. Relative paths in it are resolved
    /// against the file's folder; `from` variables are read from the
    /// runtime's environment now.
    pub fn load(path: impl AsRef<Path>) -> Result<Policy, PolicyError> {
        let path = path.as_ref();
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|error| PolicyError::Read {
            file: file.clone(),
            error,
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        let base = if base.as_os_str().is_empty() {
            Path::new(".")
        } else {
            base
        };
        Parser {
            text: &text,
            file: &file,
            base,
            env: &|name| std::env::var(name),
        }
        .policy()
    }

    /// Checks policy text; relative paths are resolved against `base_dir`.
    /// Errors name the file as `<policy>`.
    pub fn parse(text: &str, base_dir: &Path) -> Result<Policy, PolicyError> {
        Self::parse_with_env(text, base_dir, |name| std::env::var(name))
    }

    /// Like [`Policy::parse`], with `env` standing in for the runtime's
    /// environment (for tests, and for callers that snapshot it).
    pub fn parse_with_env(
        text: &str,
        base_dir: &Path,
        env: impl Fn(&str) -> Result<String, VarError>,
    ) -> Result<Policy, PolicyError> {
        Parser {
            text,
            file: "<policy>",
            base: base_dir,
            env: &env,
        }
        .policy()
    }

    /// The merged settings of one tool: defaults ← component ← tool. An
    /// unknown component or tool gets what the less specific sections give.
    pub fn settings_for(&self, component: &str, tool: &str) -> Settings {
        let mut settings = Settings::default();
        self.defaults.apply_to(&mut settings);
        if let Some(c) = self.components.get(component) {
            c.section.apply_to(&mut settings);
            if let Some(t) = c.tools.get(tool) {
                t.apply_to(&mut settings);
            }
        }
        settings
    }

    pub fn component(&self, name: &str) -> Option<&ComponentPolicy> {
        self.components.get(name)
    }

    /// All component sections, in name order.
    pub fn components(&self) -> impl Iterator<Item = &ComponentPolicy> {
        self.components.values()
    }

    /// The tool names with a section of their own under `component`, so the
    /// loader can refuse one that names no real tool.
    pub fn tool_sections(&self, component: &str) -> impl Iterator<Item = &str> {
        self.components
            .get(component)
            .into_iter()
            .flat_map(|c| c.tools.keys().map(String::as_str))
    }

    /// The audit log path, resolved against the policy file's folder.
    pub fn audit_path(&self) -> Option<&Path> {
        self.audit.as_deref()
    }

    pub fn tokens(&self) -> &[Token] {
        &self.tokens
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

    /// Whether any section sets a fuel limit, so the engine must meter fuel
    /// (metering costs time on every call, so it is off unless asked for).
    pub fn uses_fuel(&self) -> bool {
        self.sections().any(|s| s.limits.fuel.is_some())
    }
}

// ---------------------------------------------------------------------------
// The file as written. Spanned fields are those checked after parsing, so
// their errors can point at the value.

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPolicy {
    audit: Option<String>,
    #[serde(default)]
    defaults: Option<RawSection>,
    #[serde(default)]
    components: BTreeMap<String, RawComponent>,
    #[serde(default)]
    tokens: Vec<RawToken>,
}

/// `[defaults]` and `[components.X.tools.Y]`.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawSection {
    folders: Option<Spanned<Vec<RawFolder>>>,
    network: Option<RawNetwork>,
    tls: Option<Roots>,
    ca: Option<Spanned<String>>,
    env: Option<BTreeMap<Spanned<String>, Spanned<RawEnv>>>,
    limits: Option<RawLimits>,
    destructive: Option<RawConsent>,
}

/// `[components.X]`: a section plus what only a component has. (Written out
/// rather than flattened: serde cannot combine flatten with
/// `deny_unknown_fields`.)
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawComponent {
    source: Option<String>,
    sha256: Option<Spanned<String>>,
    folders: Option<Spanned<Vec<RawFolder>>>,
    network: Option<RawNetwork>,
    tls: Option<Roots>,
    ca: Option<Spanned<String>>,
    env: Option<BTreeMap<Spanned<String>, Spanned<RawEnv>>>,
    limits: Option<RawLimits>,
    destructive: Option<RawConsent>,
    #[serde(default)]
    tools: BTreeMap<String, RawSection>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLimits {
    memory: Option<Spanned<Size>>,
    time: Option<Spanned<Time>>,
    fuel: Option<Spanned<u64>>,
    output: Option<Spanned<Size>>,
    log: Option<Size>,
    concurrency: Option<Spanned<u32>>,
    write: Option<Spanned<Size>>,
    files: Option<Spanned<u64>>,
    open: Option<Spanned<u64>>,
    messages: Option<Spanned<u64>>,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum RawConsent {
    Deny,
    Allow,
    Confirm,
}

impl From<RawConsent> for Consent {
    fn from(c: RawConsent) -> Consent {
        match c {
            RawConsent::Deny => Consent::Deny,
            RawConsent::Allow => Consent::Allow,
            RawConsent::Confirm => Consent::Confirm,
        }
    }
}

// ---------------------------------------------------------------------------

/// Turns text into a [`Policy`], remembering where it came from for errors.
pub(super) struct Parser<'a> {
    text: &'a str,
    file: &'a str,
    base: &'a Path,
    pub(super) env: &'a dyn Fn(&str) -> Result<String, VarError>,
}

impl Parser<'_> {
    /// An error at byte `offset` of the text.
    pub(super) fn error(&self, offset: usize, message: impl Into<String>) -> PolicyError {
        let before = self.text.get(..offset).unwrap_or(self.text);
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        PolicyError::Invalid {
            file: self.file.to_string(),
            line,
            column,
            message: message.into(),
        }
    }

    fn policy(&self) -> Result<Policy, PolicyError> {
        let raw: RawPolicy = toml::from_str(self.text).map_err(|e| {
            let offset = e.span().map_or(0, |s| s.start);
            self.error(offset, e.message().trim_end())
        })?;
        let defaults = match raw.defaults {
            Some(s) => self.section(s)?,
            None => Section::default(),
        };
        let mut components = BTreeMap::new();
        for (name, c) in raw.components {
            let component = self.component(&name, c)?;
            components.insert(name, component);
        }
        let tokens = self.tokens(raw.tokens)?;
        Ok(Policy {
            audit: raw.audit.map(|a| self.resolve(&a)),
            defaults,
            components,
            tokens,
        })
    }

    fn component(&self, name: &str, c: RawComponent) -> Result<ComponentPolicy, PolicyError> {
        let section = self.section(RawSection {
            folders: c.folders,
            network: c.network,
            tls: c.tls,
            ca: c.ca,
            env: c.env,
            limits: c.limits,
            destructive: c.destructive,
        })?;
        let mut tools = BTreeMap::new();
        for (tool, s) in c.tools {
            tools.insert(tool, self.section(s)?);
        }
        Ok(ComponentPolicy {
            name: name.to_string(),
            source: c.source.map(|s| self.resolve(&s)),
            sha256: c.sha256.as_ref().map(|s| self.sha256(s)).transpose()?,
            section,
            tools,
        })
    }

    /// Checks a digest and returns it in lower case.
    pub(super) fn sha256(&self, digest: &Spanned<String>) -> Result<String, PolicyError> {
        let text = digest.get_ref();
        if text.len() != 64 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(self.error(
                digest.span().start,
                format!(
                    "sha256 must be 64 hexadecimal digits, got {} characters",
                    text.chars().count()
                ),
            ));
        }
        Ok(text.to_ascii_lowercase())
    }

    fn section(&self, raw: RawSection) -> Result<Section, PolicyError> {
        Ok(Section {
            folders: raw.folders.map(|f| self.folders(f)).transpose()?,
            network: raw.network.map(|n| self.network(n)).transpose()?,
            tls: raw.tls,
            ca: raw.ca.map(|c| self.ca(&c)).transpose()?,
            env: raw.env.map(|e| self.env(e)).transpose()?,
            limits: raw
                .limits
                .map(|l| self.limits(l))
                .transpose()?
                .unwrap_or_default(),
            destructive: raw.destructive.map(Consent::from),
        })
    }

    /// A path of the policy resolved against its folder, without `.`
    /// parts (`./data` next to `./airlock.toml` is `data`, not `././data`),
    /// so it reads right and compares equal to the same path spelled
    /// another way.
    pub(super) fn resolve(&self, path: impl AsRef<Path>) -> PathBuf {
        let resolved: PathBuf = self
            .base
            .join(path)
            .components()
            .filter(|c| !matches!(c, std::path::Component::CurDir))
            .collect();
        if resolved.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            resolved
        }
    }

    fn limits(&self, raw: RawLimits) -> Result<LimitsPatch, PolicyError> {
        // A zero limit would make every call fail; it is always a mistake.
        let nonzero = |name: &str, value: Option<(u64, usize)>| match value {
            Some((0, at)) => Err(self.error(at, format!("limit {name} must be greater than 0"))),
            Some((v, _)) => Ok(Some(v)),
            None => Ok(None),
        };
        let time = match raw.time {
            Some(t) if t.get_ref().0.is_zero() => {
                return Err(self.error(t.span().start, "limit time must be greater than 0"));
            }
            t => t.map(|t| t.into_inner().0),
        };
        let sized = |s: &Option<Spanned<Size>>| s.as_ref().map(|s| (s.get_ref().0, s.span().start));
        let counted = |n: &Option<Spanned<u64>>| n.as_ref().map(|n| (*n.get_ref(), n.span().start));
        Ok(LimitsPatch {
            memory: nonzero("memory", sized(&raw.memory))?,
            time,
            fuel: nonzero(
                "fuel",
                raw.fuel.as_ref().map(|f| (*f.get_ref(), f.span().start)),
            )?,
            output: nonzero("output", sized(&raw.output))?,
            log: raw.log.map(|l| l.0),
            concurrency: nonzero(
                "concurrency",
                raw.concurrency
                    .as_ref()
                    .map(|c| (u64::from(*c.get_ref()), c.span().start)),
            )?
            .and_then(|c| u32::try_from(c).ok()),
            write: nonzero("write", sized(&raw.write))?,
            files: nonzero("files", counted(&raw.files))?,
            open: nonzero("open", counted(&raw.open))?,
            messages: counted(&raw.messages).map(|(n, _)| n),
        })
    }
}

#[cfg(test)]
#[path = "file_tests.rs"]
mod tests;
