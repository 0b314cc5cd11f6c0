//! Checking the policy file: from what `serde` read ([`super::raw`]) to a
//! [`Policy`], each error pointing at the line and column of the value.
//! Checks go on past an error, so the file's errors are reported together.
//! The entry points ([`Policy::load`], [`Policy::parse`]) are here, at the
//! top of the folder; the network keys are checked in `network_keys.rs`.

use std::collections::BTreeMap;
use std::env::VarError;
use std::path::Path;

use toml::Spanned;

use super::HostPattern;
use super::context::Parser;
use super::error::PolicyError;
use super::file::{ComponentPolicy, Folder, Policy, Section, Token};
use super::grant::{Asks, Consent};
use super::limits::{LimitsPatch, RawLimits};
use super::raw::{RawAsk, RawComponent, RawEnv, RawFolder, RawSection, RawVerify};
use crate::source::{PublicKey, Source};
use crate::tool::Hints;

impl Policy {
    /// Reads and checks a policy file. Relative paths in it are resolved
    /// against the file's folder; `from` variables are read from the
    /// runtime's environment now.
    pub fn load(path: impl AsRef<Path>) -> Result<Policy, PolicyError> {
        match Self::load_with_errors(path)? {
            (policy, errors) if errors.is_empty() => Ok(policy),
            (_, errors) => Err(PolicyError::from_all(errors)),
        }
    }

    /// As [`Policy::load`], but a file that can be read gives its policy
    /// without the values in error, besides the errors: `airlock check`
    /// checks the rest against the components and reports all at once.
    pub fn load_with_errors(
        path: impl AsRef<Path>,
    ) -> Result<(Policy, Vec<PolicyError>), PolicyError> {
        let path = path.as_ref();
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|error| PolicyError::Read {
            file: file.clone(),
            error,
        })?;
        let base = match path.parent() {
            Some(base) if !base.as_os_str().is_empty() => base,
            _ => Path::new("."),
        };
        Ok(Parser::new(&text, &file, base, &|name| std::env::var(name)).policy_and_errors())
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
        Parser::new(text, "<policy>", base_dir, &env).policy()
    }
}

impl Parser<'_> {
    /// The policy, or every error found in the text.
    pub(super) fn policy(&self) -> Result<Policy, PolicyError> {
        match self.policy_and_errors() {
            (policy, errors) if errors.is_empty() => Ok(policy),
            (_, errors) => Err(PolicyError::from_all(errors)),
        }
    }

    /// The policy without the values that have errors, and every error in
    /// file order: `airlock check` checks the rest against the components,
    /// so that one run reports all there is.
    pub(super) fn policy_and_errors(&self) -> (Policy, Vec<PolicyError>) {
        let (raw, read_errors) = super::raw::read(self.text);
        for (at, message) in read_errors {
            self.report(self.error(at, message));
        }
        self.named_networks(raw.networks);
        let mut verify = None;
        let defaults = match raw.defaults {
            Some(mut s) => {
                if let Some(hints) = &s.hints {
                    self.report(self.error(
                        hints.span().start,
                        "hints are declared per component, in [components.NAME], or per \
                         tool, in [components.NAME.tools.TOOL]; not in [defaults]",
                    ));
                }
                verify = s.verify.take().and_then(|v| self.keep(self.verify(v)));
                self.section(s)
            }
            None => Section::default(),
        };
        let components = raw
            .components
            .into_iter()
            .map(|(name, c)| {
                let component = self.component(&name, c);
                (name, component)
            })
            .collect();
        let mut tokens: Vec<Token> = Vec::new();
        for t in raw.tokens {
            if tokens.iter().any(|known| known.name == *t.name.get_ref()) {
                self.report(self.error(
                    t.name.span().start,
                    format!("token name {:?} is used twice", t.name.get_ref()),
                ));
                continue;
            }
            let Some(digest) = self.keep(self.sha256(&t.sha256)) else {
                continue;
            };
            let mut sha256 = [0u8; 32];
            // `sha256()` checked 64 hex digits, so this cannot fail.
            let decoded = hex::decode_to_slice(&digest, &mut sha256)
                .map_err(|e| self.error(t.sha256.span().start, e.to_string()));
            if self.keep(decoded).is_some() {
                tokens.push(Token {
                    position: Some(self.position(t.name.span().start)),
                    metrics: t.metrics.unwrap_or(false),
                    resources: t.resources,
                    prompts: t.prompts,
                    ..Token::secret(t.name.into_inner(), sha256, t.tools)
                });
            }
        }
        let oauth = raw.oauth.and_then(|raw| {
            let (oauth, errors) =
                super::oauth::check(raw, |p| self.resolve(p), |at| self.position(at));
            for (at, message) in errors {
                self.report(self.error(at, message));
            }
            oauth
        });
        let mut errors = self.take_errors();
        errors.sort_by_key(PolicyError::position);
        let policy = Policy {
            file: self.file.to_string(),
            audit: raw.audit.map(|a| self.resolve(&a)),
            audit_answers: raw.audit_answers.unwrap_or(false),
            defaults,
            verify,
            components,
            tokens,
            oauth,
        };
        (policy, errors)
    }

    fn component(&self, name: &str, c: RawComponent) -> ComponentPolicy {
        let mut own = c.section;
        // A component's own section may declare hints and verify (checked
        // here); in a tool section or `[defaults]`, `section` refuses one.
        let component_hints = own.hints.take().map(|declared| self.hints(declared));
        let verify = own.verify.take().and_then(|v| self.keep(self.verify(v)));
        let at = own.at;
        let section = self.section(own);
        let mut tools = BTreeMap::new();
        let mut hints = BTreeMap::new();
        let mut positions = BTreeMap::new();
        for (tool, mut s) in c.tools {
            if let Some(declared) = s.hints.take() {
                hints.insert(tool.clone(), self.hints(declared));
            }
            positions.insert(tool.clone(), self.position(s.at));
            tools.insert(tool, self.section(s));
        }
        ComponentPolicy {
            name: name.to_string(),
            component_hints,
            position: self.position(at),
            tool_positions: positions,
            source: c.source.and_then(|s| self.keep(self.source(s))),
            sha256: c.sha256.as_ref().and_then(|s| self.keep(self.sha256(s))),
            offers_network: c.offers_network.unwrap_or(false),
            verify,
            section,
            tools,
            hints,
        }
    }

    /// `source`: a file (resolved against the policy's folder), an
    /// `oci://` reference or an `https://` URL.
    fn source(&self, raw: Spanned<String>) -> Result<Source, PolicyError> {
        let at = raw.span().start;
        match Source::parse(raw.get_ref()) {
            Ok(Source::File(path)) => Ok(Source::File(self.resolve(path))),
            Ok(remote) => Ok(remote),
            Err(e) => Err(self.error(at, e.to_string())),
        }
    }

    /// `verify = { key = "…" }`: the key file must hold a P-256 public key.
    fn verify(&self, raw: Spanned<RawVerify>) -> Result<PublicKey, PolicyError> {
        let key = raw.into_inner().key;
        let at = key.span().start;
        let path = self.resolve(key.get_ref());
        PublicKey::read(&path).map_err(|e| self.error(at, e))
    }

    /// `hints = ["read-only", "open-world"]`: the four hint names, each at
    /// most once.
    fn hints(&self, raw: Spanned<Vec<Spanned<String>>>) -> Hints {
        let mut hints = Hints::default();
        for name in raw.into_inner() {
            let flag = match name.get_ref().as_str() {
                "read-only" => &mut hints.read_only,
                "destructive" => &mut hints.destructive,
                "idempotent" => &mut hints.idempotent,
                "open-world" => &mut hints.open_world,
                other => {
                    self.report(self.error(
                        name.span().start,
                        format!(
                            "unknown hint {other:?}; the hints are \"read-only\", \
                             \"destructive\", \"idempotent\" and \"open-world\""
                        ),
                    ));
                    continue;
                }
            };
            if std::mem::replace(flag, true) {
                self.report(self.error(
                    name.span().start,
                    format!("hint {:?} is listed twice", name.get_ref()),
                ));
            }
        }
        hints
    }

    /// Checks a digest and returns it in lower case.
    fn sha256(&self, digest: &Spanned<String>) -> Result<String, PolicyError> {
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

    /// A section's settings; a value with an error is left out (and kept
    /// for the report).
    fn section(&self, raw: RawSection) -> Section {
        if let Some(verify) = &raw.verify {
            self.report(self.error(
                verify.span().start,
                "verify is set per component ([components.NAME]) or in [defaults], not per tool",
            ));
        }
        Section {
            folders: raw.folders.map(|f| self.folders(f)),
            network: raw.network.and_then(|n| {
                let at = n.span().start;
                self.keep(self.network(n.into_inner(), at))
            }),
            tls: raw.tls,
            ca: raw.ca.and_then(|c| self.keep(self.ca(&c))),
            env: raw.env.map(|e| self.env(e)),
            // The same form as `env`: literal, or `{ from = "VAR" }`.
            config: raw.config.map(|e| self.env(e)),
            limits: raw.limits.map(|l| self.limits(l)).unwrap_or_default(),
            destructive: raw.destructive.map(Consent::from),
            asks: raw.ask.map(|kinds| asks(&kinds)),
            elicit_url_hosts: raw
                .elicit_url_hosts
                .map(|hosts| self.elicit_url_hosts(hosts)),
        }
    }

    /// `elicit-url-hosts`: host patterns as `network`'s, without a scheme
    /// (a URL elicitation is https:, or http: to this machine, whatever the
    /// list says); a pattern in error is left out.
    fn elicit_url_hosts(&self, raw: Vec<Spanned<String>>) -> Vec<HostPattern> {
        let mut hosts = Vec::new();
        for written in raw {
            let at = written.span().start;
            if written.get_ref().contains("://") {
                self.report(self.error(
                    at,
                    format!(
                        "elicit-url-hosts lists hosts, without a scheme (a URL the user is sent \
                         to is always https:, or http: to this machine): write {:?}",
                        written.get_ref().split_once("://").map_or("", |(_, host)| host)
                    ),
                ));
                continue;
            }
            if let Some(pattern) = self.keep(self.pattern(&written)) {
                hosts.push(pattern);
            }
        }
        hosts
    }

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

    fn env(&self, raw: BTreeMap<Spanned<String>, Spanned<RawEnv>>) -> Vec<(String, String)> {
        raw.into_iter()
            .filter_map(|(name, value)| self.keep(self.var(name, value)))
            .collect()
    }

    /// One environment (or config) variable and its value.
    fn var(
        &self,
        name: Spanned<String>,
        value: Spanned<RawEnv>,
    ) -> Result<(String, String), PolicyError> {
        let at = name.span().start;
        let name = name.into_inner();
        if name.is_empty() || name.contains(['=', '\0']) {
            return Err(self.error(
                at,
                format!("{name:?} is not a valid environment variable name"),
            ));
        }
        let at = value.span().start;
        let value = match value.into_inner() {
            RawEnv::Literal(v) => v,
            RawEnv::From(var) => self.variable(&var, &name, at)?,
        };
        if value.contains('\0') {
            return Err(self.error(at, format!("the value of {name} contains a NUL character")));
        }
        Ok((name, value))
    }

    /// A section's limits, as declared in `limits.rs`.
    fn limits(&self, raw: RawLimits) -> LimitsPatch {
        raw.check(|at, message| self.report(self.error(at, message)))
    }
}

/// `ask = [...]`: the kinds listed (an unknown one was refused when read).
fn asks(kinds: &[RawAsk]) -> Asks {
    let mut asks = Asks::default();
    for kind in kinds {
        match kind {
            RawAsk::Elicit => asks.elicit = true,
            RawAsk::Sample => asks.sample = true,
            RawAsk::Roots => asks.roots = true,
        }
    }
    asks
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
