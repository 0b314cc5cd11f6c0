//! Checking the policy file: from what `serde` read ([`super::raw`]) to a
//! [`Policy`], each error pointing at the line and column of the value.
//! Checks go on past an error, so the file's errors are reported together.
//! The entry points ([`Policy::load`], [`Policy::parse`]) are here, at the
//! top of the folder; a section's keys are checked as the table of
//! `keys.rs` declares them (`Parser::section`), each in its own module.

use std::collections::BTreeMap;
use std::env::VarError;
use std::path::Path;

use toml::Spanned;

use super::context::Parser;
use super::error::PolicyError;
use super::file::{ComponentPolicy, Policy, Token};
use super::key::Place;
use super::raw::RawComponent;
use crate::source::Source;

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
        Self::load_with_env(path, |name| std::env::var(name))
    }

    /// As [`Policy::load_with_errors`], with `env` standing in for the
    /// runtime's environment: a cordon's worker reads the file with only
    /// its own sections' variables, and the server notes which variables
    /// the file reads.
    pub fn load_with_env(
        path: impl AsRef<Path>,
        env: impl Fn(&str) -> Result<String, VarError>,
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
        Ok(Parser::new(&text, &file, base, &env).policy_and_errors())
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
        let defaults = raw
            .defaults
            .map(|s| self.section(s, Place::Defaults))
            .unwrap_or_default();
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
            components,
            tokens,
            oauth,
            files: self.files.take(),
        };
        (policy, errors)
    }

    fn component(&self, name: &str, c: RawComponent) -> ComponentPolicy {
        let at = c.section.at;
        let section = self.section(c.section, Place::Component);
        let mut tools = BTreeMap::new();
        let mut positions = BTreeMap::new();
        for (tool, s) in c.tools {
            positions.insert(tool.clone(), self.position(s.at));
            tools.insert(tool, self.section(s, Place::Tool));
        }
        ComponentPolicy {
            name: name.to_string(),
            position: self.position(at),
            tool_positions: positions,
            source: c.source.and_then(|s| self.keep(self.source(s))),
            sha256: c.sha256.as_ref().and_then(|s| self.keep(self.sha256(s))),
            offers_network: c.offers_network.unwrap_or(false),
            cordon: c.cordon.and_then(|s| self.keep(self.cordon(s))),
            verify: section.verify.clone(),
            section,
            tools,
        }
    }

    /// `cordon`: a name of lower-case letters, digits and `-` (it names a
    /// worker process in the log and the metrics), or `front`.
    fn cordon(&self, raw: Spanned<String>) -> Result<String, PolicyError> {
        let name = raw.get_ref();
        let fits = !name.is_empty()
            && name.len() <= 40
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        match fits {
            true => Ok(name.clone()),
            false => Err(self.error(
                raw.span().start,
                format!(
                    "cordon {name:?} is not a cordon's name: use up to 40 lower-case letters, \
                     digits and '-' (e.g. \"vendor-x\"), or \"front\" to run it in the serving \
                     process"
                ),
            )),
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
}
