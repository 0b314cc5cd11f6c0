//! What a key of a policy section is: [`SectionKey`], implemented once per
//! key beside that key's own checks (`folders.rs`, `network_keys.rs`,
//! `values.rs`, `ask_keys.rs`, `component_keys.rs`, `keys.rs`), and listed
//! in the table of `keys.rs`, from which the section's forms come.

use serde::Deserialize;
use serde_json::Value;

use super::context::Parser;
use super::grant::Grant;
use super::settings::Settings;

/// Which section a key is written in: `[defaults]`, `[components.NAME]`
/// or `[components.NAME.tools.TOOL]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Place {
    Defaults,
    Component,
    Tool,
}

/// One key of a policy section: how it is written, checked and merged,
/// and how the grant it becomes is shown. The table of `keys.rs` names
/// each implementation once, with its key and field.
pub(super) trait SectionKey {
    /// The value as the policy file writes it (what `serde` reads).
    type Raw: for<'de> Deserialize<'de>;
    /// The checked value one section holds.
    type Checked: Clone + std::fmt::Debug + PartialEq + Eq;

    /// The value checked; an error is reported to `parser` (at the value's
    /// line and column) and the value left out.
    fn check(parser: &Parser<'_>, raw: Self::Raw) -> Option<Self::Checked>;

    /// This section's value over what the less specific sections gave
    /// (defaults ← component ← tool): most keys replace the value as a
    /// whole, `limits` limit by limit.
    fn merge(checked: &Self::Checked, settings: &mut Settings);

    /// Whether the key may be written in `place`; if not, where the error
    /// points (a byte offset) and what it says. Everywhere, by default.
    fn misplaced(_place: Place, _raw: &Self::Raw) -> Option<(usize, &'static str)> {
        None
    }

    /// How `airlock inspect` (text and `--json`, under the key's name) and
    /// the audit log show what the key grants; `None` when it is shown
    /// with another key's grant (`tls` with `network`) or not at all.
    fn shown(_grant: &Grant) -> Option<ShownGrant> {
        None
    }
}

/// What one key grants a call, as `airlock inspect` and the audit log
/// show it.
#[derive(Debug, Clone, PartialEq)]
pub struct ShownGrant {
    /// Its value in `inspect --json`'s `grant`.
    pub json: Value,
    /// Its lines in `inspect`'s `effective grant` (none: not shown there).
    pub lines: Vec<String>,
    /// Its fields of the audit entry's `grant` (none: not recorded).
    pub audit: Vec<(&'static str, Value)>,
}
