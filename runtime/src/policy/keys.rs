//! Every key of a policy section, each declared once, in
//! `section_keys!`'s table: its field, the [`SectionKey`] that says how it
//! is written, checked, merged and shown, its key in the policy file, and
//! whether the grant carries its merged value as it is (`copied`). From the
//! table come `RawSection` (the section as written, read key by key in
//! `raw`), `Section` (one section's checked values), the check of a
//! section (`Parser::section`, each key where it may be written), the
//! merge of sections into [`Settings`] (defaults ← component ← tool, in
//! `file`), the values a [`Grant`] copies from the settings, and
//! [`Grant::shown`] (what `airlock inspect` prints, text and `--json`, and
//! [`Grant::audited`], what the audit entry records). A new key is one row
//! here, its `SectionKey` beside its own checks, the field it merges into
//! ([`Settings`]) and, when the grant carries it, the [`Grant`] field
//! (`copied`) or its narrowing (`effective`), and its enforcement.
//!
//! A key's logic stays in its own module: `folders.rs`, `network_keys.rs`
//! (`network`, `tls`, `ca`), `values.rs` (`env`, `config`), `limits.rs`
//! (each limit, declared in its own table), `ask_keys.rs` (`ask`,
//! `elicit-url-hosts`), `component_keys.rs` (`hints`, `verify`); here only
//! `destructive` and the glue of `limits`.

use serde::Deserialize;
use serde_json::{Value, json};

use super::ask_keys::{Ask, ElicitUrlHosts};
use super::component_keys::{DeclaredHints, Verify};
use super::context::Parser;
use super::folders::Folders;
use super::grant::{Consent, Grant};
use super::key::{Place, SectionKey, ShownGrant};
use super::limits::{LimitsPatch, RawLimits, Shown};
use super::network_keys::{Ca, Network, Tls};
use super::settings::Settings;
use super::values::{Config, Env};

macro_rules! section_keys {
    ($(
        $(#[doc = $doc:literal])*
        $field:ident: $key:ty = $name:literal $(, $copied:ident)?;
    )*) => {
        /// A section of grants as written: `[defaults]`,
        /// `[components.X.tools.Y]`, and the grants of `[components.X]`
        /// itself (whose own keys `raw` takes out first). Unknown keys are
        /// refused.
        #[derive(Deserialize, Default)]
        #[serde(deny_unknown_fields)]
        pub(super) struct RawSection {
            $(
                #[serde(rename = $name)]
                pub(super) $field: Option<<$key as SectionKey>::Raw>,
            )*
            /// Where the section's name is (byte offset), for errors about it.
            #[serde(skip)]
            pub(super) at: usize,
        }

        /// One checked section (defaults, component or tool); `None` =
        /// inherit from the less specific section.
        #[derive(Debug, Clone, Default, PartialEq, Eq)]
        pub(super) struct Section {
            $(pub(super) $field: Option<<$key as SectionKey>::Checked>,)*
        }

        /// Every key of a section, in the table's order.
        pub const SECTION_KEYS: &[&str] = &[$($name,)*];

        impl Section {
            /// This section's values over `settings`, key by key.
            pub(super) fn apply_to(&self, settings: &mut Settings) {
                $(
                    if let Some(checked) = &self.$field {
                        <$key as SectionKey>::merge(checked, settings);
                    }
                )*
            }
        }

        impl Parser<'_> {
            /// A section's values, checked; a value with an error, or
            /// written where its key may not be, is left out (and kept for
            /// the report).
            pub(super) fn section(&self, raw: RawSection, place: Place) -> Section {
                Section {$(
                    $field: raw.$field.and_then(|raw| {
                        if let Some((at, message)) = <$key as SectionKey>::misplaced(place, &raw) {
                            self.report(self.error(at, message));
                            return None;
                        }
                        <$key as SectionKey>::check(self, raw)
                    }),
                )*}
            }
        }

        impl Grant {
            /// The grant's values that the settings give as they are (the
            /// `copied` keys); the rest are left for `effective` to narrow.
            pub(super) fn copied(settings: &Settings) -> Grant {
                Grant {
                    $($($field: {
                        let _copied = stringify!($copied);
                        settings.$field.clone()
                    },)?)*
                    ..Grant::default()
                }
            }

            /// What the grant gives, key by key in the table's order (by
            /// the policy's name of each key), then how the tool's hints
            /// narrowed it: what `airlock inspect` shows and the audit
            /// entry records.
            pub fn shown(&self) -> Vec<(&'static str, ShownGrant)> {
                let mut shown = Vec::new();
                $(
                    if let Some(one) = <$key as SectionKey>::shown(self) {
                        shown.push(($name, one));
                    }
                )*
                shown.push(("narrowings", narrowings(self)));
                shown
            }
        }
    };
}

section_keys! {
    /// `folders`: host folders mounted for the tool, and how.
    folders: Folders = "folders";
    /// `network`: the hosts the tool may reach, and the headers airlock
    /// adds to its requests (values are secrets).
    network: Network = "network";
    /// `tls`: the base roots https certificates are checked against.
    tls: Tls = "tls";
    /// `ca`: the operator's CA bundle, added to the roots.
    ca: Ca = "ca";
    /// `env`: the variables the tool sees, resolved, in name order.
    env: Env = "env", copied;
    /// `config`: what `wasi:config/store` answers, resolved, in key order.
    config: Config = "config", copied;
    /// `limits`: each limit, merged limit by limit.
    limits: LimitsKey = "limits", copied;
    /// `destructive`: what to do with a destructive call.
    destructive: Destructive = "destructive";
    /// `ask`: requests to the client the tool may make.
    asks: Ask = "ask", copied;
    /// `elicit-url-hosts`: where its URL elicitations may send the user.
    elicit_urls: ElicitUrlHosts = "elicit-url-hosts", copied;
    /// `hints`: those of a tool that declares none (a tool section's win
    /// over its component's); not in `[defaults]`.
    hints: DeclaredHints = "hints";
    /// `verify`: the key a component's signature must be made with (a
    /// component's own over `[defaults]`'); not in a tool section.
    verify: Verify = "verify";
}

/// `limits`: read key by key (`raw`), each limit declared in `limits.rs`.
pub(super) struct LimitsKey;

impl SectionKey for LimitsKey {
    type Raw = RawLimits;
    type Checked = LimitsPatch;

    fn check(parser: &Parser<'_>, raw: RawLimits) -> Option<LimitsPatch> {
        Some(raw.check(|at, message| parser.report(parser.error(at, message))))
    }

    /// Limit by limit.
    fn merge(patch: &LimitsPatch, settings: &mut Settings) {
        patch.apply_to(&mut settings.limits);
    }

    fn shown(grant: &Grant) -> Option<ShownGrant> {
        let l = &grant.limits;
        Some(ShownGrant {
            json: Value::Object(l.json(|shown| shown == Shown::Limits)),
            lines: vec![l.line()],
            audit: vec![
                ("memory", json!(l.memory)),
                ("time_ms", json!(l.time.as_millis() as u64)),
                ("fuel", json!(l.fuel)),
            ],
        })
    }
}

/// `destructive = "deny" | "allow" | "confirm"`.
pub(super) struct Destructive;

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
pub(super) enum RawConsent {
    Deny,
    Allow,
    Confirm,
}

impl SectionKey for Destructive {
    type Raw = RawConsent;
    type Checked = Consent;

    fn check(_: &Parser<'_>, raw: RawConsent) -> Option<Consent> {
        Some(match raw {
            RawConsent::Deny => Consent::Deny,
            RawConsent::Allow => Consent::Allow,
            RawConsent::Confirm => Consent::Confirm,
        })
    }

    fn merge(consent: &Consent, settings: &mut Settings) {
        settings.destructive = *consent;
    }

    /// Only a destructive tool has a consent rule to show and record.
    fn shown(grant: &Grant) -> Option<ShownGrant> {
        let consent = grant.consent.map(Consent::as_str);
        Some(ShownGrant {
            json: json!(consent),
            lines: consent
                .map(|consent| format!("destructive calls: {consent}"))
                .into_iter()
                .collect(),
            audit: consent
                .map(|consent| ("destructive", json!(consent)))
                .into_iter()
                .collect(),
        })
    }
}

/// Why the grant is less than the policy lists: shown after the keys.
fn narrowings(grant: &Grant) -> ShownGrant {
    ShownGrant {
        json: json!(
            grant
                .narrowings
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
        ),
        lines: grant
            .narrowings
            .iter()
            .map(|n| format!("narrowed {n}"))
            .collect(),
        audit: Vec::new(),
    }
}

impl Grant {
    /// The audit entry's `grant`: what each key records, in the table's
    /// order.
    pub fn audited(&self) -> Value {
        let fields = self.shown().into_iter().flat_map(|(_, shown)| shown.audit);
        Value::Object(fields.map(|(k, v)| (k.to_string(), v)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_declares_each_key_once() {
        let mut keys = SECTION_KEYS.to_vec();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), SECTION_KEYS.len(), "{SECTION_KEYS:?}");
    }

    /// What `inspect --json` lists, in its order, and the audit entry's
    /// fields, as before the table.
    #[test]
    fn a_grant_is_shown_and_audited_as_before() {
        let grant = Grant {
            consent: Some(Consent::Confirm),
            asks: super::super::Asks {
                sample: true,
                ..Default::default()
            },
            ..Grant::default()
        };
        let shown: Vec<&str> = grant.shown().iter().map(|(key, _)| *key).collect();
        assert_eq!(
            shown,
            [
                "folders",
                "network",
                "env",
                "config",
                "limits",
                "destructive",
                "ask",
                "narrowings"
            ]
        );
        let audited = grant.audited();
        let mut fields: Vec<&str> = audited
            .as_object()
            .map(|o| o.keys().map(String::as_str).collect())
            .unwrap_or_default();
        fields.sort();
        let mut before = [
            "folders",
            "network",
            "env",
            "credentials",
            "memory",
            "time_ms",
            "fuel",
            "ask",
            "destructive",
        ];
        before.sort();
        assert_eq!(fields, before);
        assert_eq!(audited["destructive"], "confirm");
        assert_eq!(audited["ask"], json!(["sample"]));
        let plain = Grant::default().audited();
        assert!(plain.get("ask").is_none() && plain.get("destructive").is_none());
    }
}
