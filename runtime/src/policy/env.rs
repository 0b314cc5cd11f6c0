//! Values the policy takes from the runtime's environment: a section's `env`
//! key (what the tool sees), and the `from` variables that
//! [`super::network`] reads for injected credentials (what it never sees).
//! Every message names the variable, never its value.

use std::collections::BTreeMap;
use std::env::VarError;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use toml::Spanned;

use super::file::{Parser, PolicyError};

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

impl Parser<'_> {
    /// Checks a section's `env` key; values in name order.
    pub(super) fn env(
        &self,
        raw: BTreeMap<Spanned<String>, Spanned<RawEnv>>,
    ) -> Result<Vec<(String, String)>, PolicyError> {
        let mut vars = Vec::new();
        for (name, value) in raw {
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
            vars.push((name, value));
        }
        Ok(vars)
    }

    /// The value of the runtime's variable `var`, read now; `for_what`
    /// says what it is for in an error, and `at` is where it is named.
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
                format!("environment variable {var} (for {for_what}) is not set"),
            )),
            Err(VarError::NotUnicode(_)) => Err(self.error(
                at,
                format!("environment variable {var} (for {for_what}) is not valid Unicode"),
            )),
        }
    }
}
