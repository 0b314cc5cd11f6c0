//! The policy file as written: what `serde` reads from the TOML, before
//! any check. Spanned fields are those checked after parsing (in
//! [`super::parse`]), so their errors can point at the value.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use toml::Spanned;

use super::file::FolderMode;
use super::grant::Consent;
use super::network::{RawNetwork, Roots};
use super::units::{Size, Time};
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPolicy {
    pub(super) audit: Option<String>,
    #[serde(default)]
    pub(super) defaults: Option<RawSection>,
    #[serde(default)]
    pub(super) components: BTreeMap<String, RawComponent>,
    #[serde(default)]
    pub(super) tokens: Vec<RawToken>,
}

/// `[defaults]` and `[components.X.tools.Y]`.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSection {
    pub(super) folders: Option<Spanned<Vec<RawFolder>>>,
    pub(super) network: Option<RawNetwork>,
    pub(super) tls: Option<Roots>,
    pub(super) ca: Option<Spanned<String>>,
    pub(super) env: Option<BTreeMap<Spanned<String>, Spanned<RawEnv>>>,
    pub(super) config: Option<BTreeMap<Spanned<String>, Spanned<RawEnv>>>,
    pub(super) limits: Option<RawLimits>,
    pub(super) destructive: Option<RawConsent>,
    /// Only in a tool section: the hints of a tool that declares none.
    pub(super) hints: Option<Spanned<Vec<Spanned<String>>>>,
    /// Only in `[defaults]` (and a component's own section).
    pub(super) verify: Option<Spanned<RawVerify>>,
}

/// `[components.X]`: a section plus what only a component has. (Written out
/// rather than flattened: serde cannot combine flatten with
/// `deny_unknown_fields`.)
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawComponent {
    pub(super) source: Option<Spanned<String>>,
    pub(super) sha256: Option<Spanned<String>>,
    pub(super) verify: Option<Spanned<RawVerify>>,
    pub(super) folders: Option<Spanned<Vec<RawFolder>>>,
    pub(super) network: Option<RawNetwork>,
    pub(super) tls: Option<Roots>,
    pub(super) ca: Option<Spanned<String>>,
    pub(super) env: Option<BTreeMap<Spanned<String>, Spanned<RawEnv>>>,
    pub(super) config: Option<BTreeMap<Spanned<String>, Spanned<RawEnv>>>,
    pub(super) limits: Option<RawLimits>,
    pub(super) destructive: Option<RawConsent>,
    #[serde(default)]
    pub(super) tools: BTreeMap<String, RawSection>,
}

/// `verify = { key = "keys/acme.pub" }`: the signature a component needs.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawVerify {
    pub(super) key: Spanned<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFolder {
    pub(super) host: Spanned<String>,
    pub(super) guest: Spanned<String>,
    #[serde(default)]
    pub(super) mode: FolderMode,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLimits {
    pub(super) memory: Option<Spanned<Size>>,
    pub(super) time: Option<Spanned<Time>>,
    pub(super) fuel: Option<Spanned<u64>>,
    pub(super) output: Option<Spanned<Size>>,
    pub(super) log: Option<Size>,
    pub(super) concurrency: Option<Spanned<u32>>,
    pub(super) write: Option<Spanned<Size>>,
    pub(super) files: Option<Spanned<u64>>,
    pub(super) open: Option<Spanned<u64>>,
    pub(super) messages: Option<Spanned<u64>>,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
pub(super) enum RawConsent {
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

/// An environment value: `"literal"` or `{ from = "VAR" }`.
pub(super) enum RawEnv {
    Literal(String),
    From(String),
}

impl<'de> Deserialize<'de> for RawEnv {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawEnv;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string, or a table { from = \"VARIABLE\" }")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawEnv, E> {
                Ok(RawEnv::Literal(v.to_string()))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawEnv, A::Error> {
                let mut from = None;
                while let Some(key) = map.next_key::<String>()? {
                    if key != "from" {
                        return Err(de::Error::unknown_field(&key, &["from"]));
                    }
                    if from.is_some() {
                        return Err(de::Error::duplicate_field("from"));
                    }
                    from = Some(map.next_value::<String>()?);
                }
                from.map(RawEnv::From)
                    .ok_or_else(|| de::Error::missing_field("from"))
            }
        }
        deserializer.deserialize_any(V)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawToken {
    pub(super) name: Spanned<String>,
    pub(super) sha256: Spanned<String>,
    pub(super) tools: Option<Vec<String>>,
}
