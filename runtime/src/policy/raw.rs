//! The policy file as written: what `serde` reads from the TOML, before
//! any check. Spanned fields are those checked after parsing (in
//! [`super::parse`]), so their errors can point at the value.
//!
//! [`read`] takes the file section by section and key by key, so that one
//! wrong key does not hide the next: `airlock check` reports every error.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde::de::IntoDeserializer;
use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::keys::RawSection;
use super::limits::RawLimits;
use super::network_keys::RawNetwork;

#[derive(Default)]
pub(super) struct RawPolicy {
    pub(super) audit: Option<String>,
    /// `audit-answers = true`: the audit log keeps the client's answers to
    /// tools' requests (off: it keeps only what was asked).
    pub(super) audit_answers: Option<bool>,
    pub(super) defaults: Option<RawSection>,
    pub(super) components: BTreeMap<String, RawComponent>,
    pub(super) tokens: Vec<RawToken>,
    pub(super) oauth: Option<super::oauth::RawOAuth>,
    /// `[networks.NAME]`: name, where it is written, the grant.
    pub(super) networks: Vec<(String, usize, RawNetwork)>,
}

/// `[components.X]`: its section of grants, plus what only a component
/// has.
///
/// Not `#[serde(flatten)]` of the section: serde reads a flattened struct
/// out of its own buffer of the table (`Content`), where `toml::Spanned`
/// cannot be read ("expected a spanned value"), and with
/// `deny_unknown_fields` its error for an unknown key no longer says which
/// keys were expected. So [`read`] takes these keys out of the table, as it
/// does `limits`, and reads the rest as the [`RawSection`].
#[derive(Default)]
pub(super) struct RawComponent {
    pub(super) source: Option<Spanned<String>>,
    pub(super) sha256: Option<Spanned<String>>,
    /// `offers-network = true`: its reads, prompts and completions may use
    /// the network its section grants.
    pub(super) offers_network: Option<bool>,
    /// `cordon = "NAME"`: the worker process its guests run in.
    pub(super) cordon: Option<Spanned<String>>,
    /// Its own grants, `hints` and `verify`; `at` is where its name is.
    pub(super) section: RawSection,
    pub(super) tools: BTreeMap<String, RawSection>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawToken {
    pub(super) name: Spanned<String>,
    pub(super) sha256: Spanned<String>,
    pub(super) tools: Option<Vec<String>>,
    /// Resource URIs and URI templates it may list and read.
    pub(super) resources: Option<Vec<String>>,
    /// Prompts it may list and get.
    pub(super) prompts: Option<Vec<String>>,
    pub(super) metrics: Option<bool>,
}

/// An error found while reading: the byte offset it points at, and what
/// is wrong.
pub(super) type ReadError = (usize, String);

/// The top-level keys of a policy file.
const POLICY_KEYS: &str =
    "`audit`, `audit-answers`, `defaults`, `components`, `networks`, `tokens`, `oauth`";

/// Reads policy text: everything that could be read, and every error in
/// it. A TOML syntax error stops there (what follows may be misread); past
/// that, each top-level key, component, tool section, token and key of a
/// section is read on its own.
pub(super) fn read(text: &str) -> (RawPolicy, Vec<ReadError>) {
    let mut errors = Vec::new();
    let (doc, syntax) = DeTable::parse_recoverable(text);
    if !syntax.is_empty() {
        let errors = syntax.into_iter().map(|e| error(e, 0)).collect();
        return (RawPolicy::default(), errors);
    }
    let mut policy = RawPolicy::default();
    for (key, value) in doc.into_inner() {
        match key.get_ref().as_ref() {
            "audit" => policy.audit = whole(value, &mut errors),
            "audit-answers" => policy.audit_answers = whole(value, &mut errors),
            "defaults" => policy.defaults = Some(section(value, &mut errors)),
            "networks" => {
                for (name, at, network) in table(value, &mut errors) {
                    if let Some(network) = whole(network, &mut errors) {
                        policy.networks.push((name, at, network));
                    }
                }
            }
            "components" => {
                for (name, at, c) in table(value, &mut errors) {
                    let mut c = component(c, &mut errors);
                    c.section.at = at;
                    policy.components.insert(name, c);
                }
            }
            "oauth" => policy.oauth = whole(value, &mut errors),
            "tokens" => {
                let span = value.span();
                match value.into_inner() {
                    DeValue::Array(tokens) => {
                        policy.tokens = tokens
                            .into_iter()
                            .filter_map(|t| whole(t, &mut errors))
                            .collect();
                    }
                    _ => errors.push((span.start, "tokens must be [[tokens]] tables".into())),
                }
            }
            other => errors.push((
                key.span().start,
                format!("unknown field `{other}`, expected one of {POLICY_KEYS}"),
            )),
        }
    }
    (policy, errors)
}

fn error(e: toml::de::Error, fallback: usize) -> ReadError {
    keyed_error(e, fallback, None)
}

/// An error of the value of `key`, in a user's words.
fn keyed_error(e: toml::de::Error, fallback: usize, key: Option<&str>) -> ReadError {
    let at = e.span().map_or(fallback, |s| s.start);
    (at, plain_words(e.message().trim_end(), key))
}

/// serde's "unknown variant `alow`, expected one of `deny`, `allow`,
/// `confirm`" as "`alow` is not a mode for destructive calls; expected one
/// of …"; any other message as it is.
fn plain_words(message: &str, key: Option<&str>) -> String {
    let Some((got, expected)) = message
        .strip_prefix("unknown variant `")
        .and_then(|rest| rest.split_once("`, expected "))
    else {
        return message.to_string();
    };
    let what = match key {
        Some("destructive") => "a mode for destructive calls".to_string(),
        Some("folders") => "a folder mode".to_string(),
        Some("tls") => "a trust store".to_string(),
        Some("ask") => "a kind of request to the client".to_string(),
        Some(key) => format!("a value of `{key}`"),
        None => "a value airlock knows".to_string(),
    };
    format!("`{got}` is not {what}; expected {expected}")
}

/// A value read as a whole (`T` stops at its first error).
fn whole<'i, T: Deserialize<'i>>(
    value: Spanned<DeValue<'i>>,
    errors: &mut Vec<ReadError>,
) -> Option<T> {
    let at = value.span().start;
    T::deserialize(value.into_deserializer())
        .map_err(|e| errors.push(error(e, at)))
        .ok()
}

/// The entries of a table: name, where the name is, value (an error if
/// it is not a table).
fn table<'i>(
    value: Spanned<DeValue<'i>>,
    errors: &mut Vec<ReadError>,
) -> Vec<(String, usize, Spanned<DeValue<'i>>)> {
    let at = value.span().start;
    match value.into_inner() {
        DeValue::Table(t) => t
            .into_iter()
            .map(|(k, v)| (k.get_ref().to_string(), k.span().start, v))
            .collect(),
        other => {
            errors.push((at, format!("expected a table, found {}", other.type_str())));
            Vec::new()
        }
    }
}

/// A table read key by key into `T` (whose keys are all optional): each
/// key's error is recorded and `T` is built from the keys that are right.
/// `nested` keys are taken out first and returned, to be read the same way.
fn by_key<'i, T: Deserialize<'i> + Default>(
    value: Spanned<DeValue<'i>>,
    nested: &[&str],
    errors: &mut Vec<ReadError>,
) -> (T, Vec<Option<Spanned<DeValue<'i>>>>) {
    let span = value.span();
    let mut rest = match value.into_inner() {
        DeValue::Table(t) => t,
        other => {
            let message = format!("expected a table, found {}", other.type_str());
            errors.push((span.start, message));
            return (T::default(), nested.iter().map(|_| None).collect());
        }
    };
    let taken = nested.iter().map(|key| rest.remove(*key)).collect();
    let mut good = DeTable::new();
    for (key, value) in rest {
        let mut one = DeTable::new();
        one.insert(key.clone(), value.clone());
        let one = Spanned::new(span.clone(), DeValue::Table(one));
        match T::deserialize(one.into_deserializer()) {
            Ok(_) => {
                good.insert(key, value);
            }
            Err(e) => {
                let (at, message) = keyed_error(e, key.span().start, Some(key.get_ref()));
                errors.push((at, also_expected(message, nested)));
            }
        }
    }
    let good = Spanned::new(span.clone(), DeValue::Table(good));
    let read = T::deserialize(good.into_deserializer()).unwrap_or_else(|e| {
        errors.push(error(e, span.start));
        T::default()
    });
    (read, taken)
}

/// serde's "unknown field `x`, expected one of `a`, `b`" about a table
/// whose `nested` keys were taken out before it was read: those keys are
/// expected there too.
fn also_expected(message: String, nested: &[&str]) -> String {
    if !message.starts_with("unknown field `") {
        return message;
    }
    let missing: Vec<String> = nested
        .iter()
        .map(|key| format!("`{key}`"))
        .filter(|key| !message.contains(key.as_str()))
        .collect();
    match missing.is_empty() {
        true => message,
        false => format!("{message}, {}", missing.join(", ")),
    }
}

/// `[defaults]` or a tool section, with its `limits` read key by key too.
fn section(value: Spanned<DeValue<'_>>, errors: &mut Vec<ReadError>) -> RawSection {
    let (mut section, nested) = by_key::<RawSection>(value, &["limits"], errors);
    section.limits = limits(nested.into_iter().next().flatten(), errors);
    section
}

fn limits(value: Option<Spanned<DeValue<'_>>>, errors: &mut Vec<ReadError>) -> Option<RawLimits> {
    value.map(|v| by_key::<RawLimits>(v, &[], errors).0)
}

/// `[components.NAME]`: its own keys (`source`, `sha256`, `tools`,
/// `offers-network`, `cordon`) and
/// its `limits` taken out and read on their own, each tool section too,
/// and the rest read as its section of grants.
fn component(value: Spanned<DeValue<'_>>, errors: &mut Vec<ReadError>) -> RawComponent {
    let (mut grants, nested) = by_key::<RawSection>(
        value,
        &[
            "limits",
            "source",
            "sha256",
            "tools",
            "offers-network",
            "cordon",
        ],
        errors,
    );
    let mut nested = nested.into_iter();
    grants.limits = limits(nested.next().flatten(), errors);
    let mut component = RawComponent {
        source: nested.next().flatten().and_then(|s| whole(s, errors)),
        sha256: nested.next().flatten().and_then(|s| whole(s, errors)),
        offers_network: None,
        cordon: None,
        section: grants,
        tools: BTreeMap::new(),
    };
    let tools = nested.next().flatten();
    component.offers_network = nested.next().flatten().and_then(|s| whole(s, errors));
    component.cordon = nested.next().flatten().and_then(|s| whole(s, errors));
    if let Some(tools) = tools {
        for (name, at, tool) in table(tools, errors) {
            let mut tool = section(tool, errors);
            tool.at = at;
            component.tools.insert(name, tool);
        }
    }
    component
}
