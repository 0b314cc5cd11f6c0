//! The keys whose values a tool reads: `env`, exactly the environment
//! variables it sees, and `config`, what `wasi:config/store` answers. Both
//! are written alike: a literal, or `{ from = "VAR" }`, copied from the
//! runtime's environment when the policy is loaded (the variable must be
//! set; its value is never printed). Replaced as a whole by a more
//! specific section.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde_json::json;
use toml::Spanned;

use super::context::Parser;
use super::error::PolicyError;
use super::grant::Grant;
use super::key::{SectionKey, ShownGrant};
use super::settings::Settings;

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

/// Names and values, in name order.
type Values = Vec<(String, String)>;

/// The names of `values`: what is shown of them (values are often secrets).
fn names(values: &Values) -> Vec<&str> {
    values.iter().map(|(name, _)| name.as_str()).collect()
}

/// `env = { API_URL = "https://…", TOKEN = { from = "CATALOG_TOKEN" } }`.
pub(super) struct Env;

impl SectionKey for Env {
    type Raw = BTreeMap<Spanned<String>, Spanned<RawEnv>>;
    type Checked = Values;

    fn check(parser: &Parser<'_>, raw: Self::Raw) -> Option<Values> {
        Some(parser.env(raw))
    }

    fn merge(values: &Values, settings: &mut Settings) {
        settings.env.clone_from(values);
    }

    fn shown(grant: &Grant) -> Option<ShownGrant> {
        let names = names(&grant.env);
        let listed = match names.is_empty() {
            true => "none".to_string(),
            false => names.join(", "),
        };
        Some(ShownGrant {
            json: json!(names),
            lines: vec![format!("env: {listed}")],
            audit: vec![("env", json!(names))],
        })
    }
}

/// `config = { region = "eu-west", api-key = { from = "CATALOG_TOKEN" } }`:
/// the same form as `env`.
pub(super) struct Config;

impl SectionKey for Config {
    type Raw = BTreeMap<Spanned<String>, Spanned<RawEnv>>;
    type Checked = Values;

    fn check(parser: &Parser<'_>, raw: Self::Raw) -> Option<Values> {
        Some(parser.env(raw))
    }

    fn merge(values: &Values, settings: &mut Settings) {
        settings.config.clone_from(values);
    }

    /// Shown only when set; not in the audit entry.
    fn shown(grant: &Grant) -> Option<ShownGrant> {
        let names = names(&grant.config);
        Some(ShownGrant {
            json: json!(names),
            lines: match names.is_empty() {
                true => Vec::new(),
                false => vec![format!("config: {}", names.join(", "))],
            },
            audit: Vec::new(),
        })
    }
}

impl Parser<'_> {
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
}
