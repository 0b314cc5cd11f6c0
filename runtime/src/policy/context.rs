//! The [`Parser`] every check of the policy text works with: the text and
//! the file it came from (so that an error points at `file:line:column`),
//! the folder relative paths resolve against, the environment `from`
//! variables are read from, the errors found so far, and the named network
//! grants. The checks are above it: the network keys in `network_keys.rs`,
//! the rest of a section, and the whole policy, in `parse.rs`.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::env::VarError;
use std::path::{Path, PathBuf};

use super::error::PolicyError;
use super::network::NetworkList;

/// What the error about a variable the policy reads, but is not set, says.
pub const UNSET: &str = "is not set";

/// Turns text into a policy (`parse.rs`), remembering where it came from
/// for errors.
pub(super) struct Parser<'a> {
    /// The policy text, and the file it was read from (`<policy>` for
    /// text).
    pub(super) text: &'a str,
    pub(super) file: &'a str,
    base: &'a Path,
    env: &'a dyn Fn(&str) -> Result<String, VarError>,
    /// The errors found so far; the checks go on past each.
    errors: RefCell<Vec<PolicyError>>,
    /// The `[networks.NAME]` grants (`None`: it has errors, reported).
    pub(super) networks: RefCell<BTreeMap<String, Option<NetworkList>>>,
    /// Files read for the policy besides itself (keys, CA bundles).
    pub(super) files: RefCell<Vec<std::path::PathBuf>>,
}

impl<'a> Parser<'a> {
    pub(super) fn new(
        text: &'a str,
        file: &'a str,
        base: &'a Path,
        env: &'a dyn Fn(&str) -> Result<String, VarError>,
    ) -> Self {
        Parser {
            text,
            file,
            base,
            env,
            errors: RefCell::default(),
            networks: RefCell::default(),
            files: RefCell::default(),
        }
    }

    /// The value of a check, or `None` with its error kept for the report.
    pub(super) fn keep<T>(&self, checked: Result<T, PolicyError>) -> Option<T> {
        checked.map_err(|e| self.report(e)).ok()
    }

    /// Keeps `error` for the report; the checks go on.
    pub(super) fn report(&self, error: PolicyError) {
        self.errors.borrow_mut().push(error);
    }

    /// The line and column (from 1) of byte `offset` of the text.
    pub(super) fn position(&self, offset: usize) -> (usize, usize) {
        let before = self.text.get(..offset).unwrap_or(self.text);
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        (line, column)
    }

    /// An error at byte `offset` of the text.
    pub(super) fn error(&self, offset: usize, message: impl Into<String>) -> PolicyError {
        let (line, column) = self.position(offset);
        PolicyError::Invalid {
            file: self.file.to_string(),
            line,
            column,
            message: message.into(),
        }
    }

    /// The value of the runtime's variable `var`, read now; `for_what`
    /// says what it is for in an error (which names the variable, never
    /// its value), and `at` is where it is named.
    pub(super) fn variable(
        &self,
        var: &str,
        for_what: &str,
        at: usize,
    ) -> Result<String, PolicyError> {
        match (self.env)(var) {
            Ok(v) => Ok(v),
            Err(VarError::NotPresent) => Err(self.error(
                at,
                format!(
                    "environment variable {var} (for {for_what}) {UNSET}: set it in the \
                     environment airlock starts in"
                ),
            )),
            Err(VarError::NotUnicode(_)) => Err(self.error(
                at,
                format!("environment variable {var} (for {for_what}) is not valid Unicode"),
            )),
        }
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

    /// The errors kept so far, taken for the report.
    pub(super) fn take_errors(&self) -> Vec<PolicyError> {
        self.errors.take()
    }
}
