//! The keys only a component's section (and `[defaults]`, or a tool's)
//! has: `hints`, those of a tool that declares none (in a component's or a
//! tool's section, a tool section's win), and `verify`, the key a
//! component's cosign signature must be made with (in `[defaults]` or a
//! component's section, the component's own win). Neither is a
//! capability of a call: [`super::Policy`] reads them from its sections.

use serde::Deserialize;
use toml::Spanned;

use super::context::Parser;
use super::error::PolicyError;
use super::key::{Place, SectionKey};
use super::settings::Settings;
use crate::source::PublicKey;
use crate::tool::Hints;

/// `verify = { key = "keys/acme.pub" }`: the signature a component needs.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawVerify {
    pub(super) key: Spanned<String>,
}

/// `hints = ["read-only", "open-world"]`.
pub(super) struct DeclaredHints;

impl SectionKey for DeclaredHints {
    type Raw = Spanned<Vec<Spanned<String>>>;
    type Checked = Hints;

    fn check(parser: &Parser<'_>, raw: Self::Raw) -> Option<Hints> {
        Some(parser.hints(raw))
    }

    /// Not a capability: [`super::Policy::hints_declared`] reads it
    /// from the sections.
    fn merge(_: &Hints, _: &mut Settings) {}

    fn misplaced(place: Place, raw: &Self::Raw) -> Option<(usize, &'static str)> {
        (place == Place::Defaults).then_some((
            raw.span().start,
            "hints are declared per component, in [components.NAME], or per tool, in \
             [components.NAME.tools.TOOL]; not in [defaults]",
        ))
    }
}

/// `verify = { key = "keys/acme.pub" }`.
pub(super) struct Verify;

impl SectionKey for Verify {
    type Raw = Spanned<RawVerify>;
    type Checked = PublicKey;

    fn check(parser: &Parser<'_>, raw: Self::Raw) -> Option<PublicKey> {
        parser.keep(parser.verify(raw))
    }

    /// Not a capability: [`super::Policy::verify_key`] reads it from the
    /// sections.
    fn merge(_: &PublicKey, _: &mut Settings) {}

    fn misplaced(place: Place, raw: &Self::Raw) -> Option<(usize, &'static str)> {
        (place == Place::Tool).then_some((
            raw.span().start,
            "verify is set per component ([components.NAME]) or in [defaults], not per tool",
        ))
    }
}

impl Parser<'_> {
    /// `verify = { key = "…" }`: the key file must hold a P-256 public key.
    fn verify(&self, raw: Spanned<RawVerify>) -> Result<PublicKey, PolicyError> {
        let key = raw.into_inner().key;
        let at = key.span().start;
        let path = self.resolve(key.get_ref());
        self.files.borrow_mut().push(path.clone());
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
}
