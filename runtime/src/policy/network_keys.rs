//! The network keys of a policy section: as written, checked into what
//! they grant (`network.rs`), and shown: `network`, in either form or by
//! the name of a `[networks.NAME]` (a host's table: its `headers` and
//! `trace`), `tls` and the `ca` bundle (all three
//! shown together, as the grant's network). Each error points at the value
//! (the [`Parser`]'s line:column); a secret's value never appears in one.

use std::fmt;

use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::json;
use toml::Spanned;

use super::context::Parser;
use super::error::PolicyError;
use super::grant::{Grant, HttpMethods, NetworkGrant};
use super::host::{HostPattern, HostPatternError};
use super::key::{SectionKey, ShownGrant};
use super::network::{CaBundle, Credential, MIN_SECRET_LEN, NetworkList, Roots, Secret};
use super::settings::Settings;

/// Headers the connection itself owns; a credential may not set them.
const RESERVED_HEADERS: &[&str] = &[
    "host",
    "connection",
    "content-length",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "keep-alive",
    "proxy-connection",
    "http2-settings",
];

/// `network = [...]` or `[X.network."pattern"]` tables (checked in
/// `network_keys.rs`).
pub(super) enum RawNetwork {
    List(Vec<Spanned<String>>),
    Table(Vec<(Spanned<String>, RawHost)>),
    /// `network = "NAME"`: the grant of `[networks.NAME]`.
    Named(String),
}

/// The table of one pattern in the long form.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawHost {
    pub(super) headers: Option<Pairs<Spanned<RawHeader>>>,
    /// `trace = false`: the host's requests carry no `traceparent`.
    pub(super) trace: Option<bool>,
}

/// A header of one pattern: `{ from = "VAR", format = "Bearer {}" }`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawHeader {
    pub(super) from: Spanned<String>,
    pub(super) format: Option<Spanned<String>>,
}

impl<'de> Deserialize<'de> for RawNetwork {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawNetwork;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(
                    "a list of host patterns, one table per pattern \
                     ([components.NAME.network.\"PATTERN\"]), or the name of a [networks.NAME]",
                )
            }
            fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<RawNetwork, E> {
                Ok(RawNetwork::Named(name.to_string()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RawNetwork, A::Error> {
                let mut list = Vec::new();
                while let Some(p) = seq.next_element::<Spanned<String>>()? {
                    list.push(p);
                }
                Ok(RawNetwork::List(list))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawNetwork, A::Error> {
                let mut table = Vec::new();
                while let Some(key) = map.next_key::<Spanned<String>>()? {
                    table.push((key, map.next_value::<RawHost>()?));
                }
                Ok(RawNetwork::Table(table))
            }
        }
        deserializer.deserialize_any(V)
    }
}

// `headers = { A = {...}, B = {...} }` in document order (a map, read as
// pairs so the spans of names survive).
pub(super) struct Pairs<T>(pub(super) Vec<(Spanned<String>, T)>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Pairs<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Pairs<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a table")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Pairs<T>, A::Error> {
                let mut pairs = Vec::new();
                while let Some(key) = map.next_key::<Spanned<String>>()? {
                    pairs.push((key, map.next_value::<T>()?));
                }
                Ok(Pairs(pairs))
            }
        }
        deserializer.deserialize_map(V(std::marker::PhantomData))
    }
}

/// `network = [...]`, a table per pattern, or `"NAME"`: replaced as a
/// whole, headers included, by a more specific section.
pub(super) struct Network;

impl SectionKey for Network {
    type Raw = Spanned<RawNetwork>;
    type Checked = NetworkList;

    fn check(parser: &Parser<'_>, raw: Self::Raw) -> Option<NetworkList> {
        let at = raw.span().start;
        parser.keep(parser.network(raw.into_inner(), at))
    }

    fn merge(list: &NetworkList, settings: &mut Settings) {
        settings.network.clone_from(&list.allow);
        settings.credentials.clone_from(&list.credentials);
        settings.untraced.clone_from(&list.untraced);
    }

    /// With its methods, the credentials injected (never a value) and
    /// what https is checked against (`tls`, `ca`).
    fn shown(grant: &Grant) -> Option<ShownGrant> {
        let network = grant.network.as_ref();
        let json = json!(network.map(|n| json!({
            "allow": n.allow.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
            "methods": match n.methods {
                HttpMethods::Any => "any",
                HttpMethods::SafeOnly => "GET, HEAD, OPTIONS",
            },
            // Which header goes where and from which variable; never a value.
            "credentials": n.credentials.iter().map(|c| json!({
                "header": c.header, "host": c.host.to_string(), "from": c.from,
            })).collect::<Vec<_>>(),
            // Hosts whose requests carry no traceparent (`trace = false`).
            "untraced": n.untraced.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
            "tls": {
                "roots": n.trust.roots.as_str(),
                "ca": n.trust.ca.as_ref().map(|ca| ca.path.display().to_string()),
            },
        })));
        let audit = vec![
            (
                "network",
                json!(network.map(|n| n.allow.iter().map(|p| p.to_string()).collect::<Vec<_>>())),
            ),
            (
                "credentials",
                json!(network.map(|n| {
                    n.credentials
                        .iter()
                        .map(|c| c.describe())
                        .collect::<Vec<_>>()
                })),
            ),
        ];
        Some(ShownGrant {
            json,
            lines: network_text(network),
            audit,
        })
    }
}

fn network_text(network: Option<&NetworkGrant>) -> Vec<String> {
    let Some(n) = network else {
        return vec!["network: none".to_string()];
    };
    let hosts = n.allow.iter().map(|p| p.to_string()).collect::<Vec<_>>();
    let methods = match n.methods {
        HttpMethods::Any => "any method",
        HttpMethods::SafeOnly => "GET, HEAD, OPTIONS only",
    };
    let mut lines = vec![format!("network: {} ({methods})", hosts.join(", "))];
    for c in &n.credentials {
        lines.push(format!("injects {} (value hidden)", c.describe()));
    }
    if !n.untraced.is_empty() {
        let hosts = n.untraced.iter().map(|p| p.to_string()).collect::<Vec<_>>();
        lines.push(format!("no traceparent to {}", hosts.join(", ")));
    }
    lines.push(format!(
        "tls: {} roots{}",
        n.trust.roots.as_str(),
        n.trust
            .ca
            .as_ref()
            .map(|ca| format!(" + CA bundle {}", ca.path.display()))
            .unwrap_or_default()
    ));
    lines
}

/// `tls = "bundled" | "system"`: shown with the network.
pub(super) struct Tls;

impl SectionKey for Tls {
    type Raw = Roots;
    type Checked = Roots;

    fn check(_: &Parser<'_>, roots: Roots) -> Option<Roots> {
        Some(roots)
    }

    fn merge(roots: &Roots, settings: &mut Settings) {
        settings.trust.roots = *roots;
    }
}

/// `ca = "certs/corp-ca.pem"`: shown with the network.
pub(super) struct Ca;

impl SectionKey for Ca {
    type Raw = Spanned<String>;
    type Checked = CaBundle;

    fn check(parser: &Parser<'_>, path: Spanned<String>) -> Option<CaBundle> {
        parser.keep(parser.ca(&path))
    }

    fn merge(ca: &CaBundle, settings: &mut Settings) {
        settings.trust.ca = Some(ca.clone());
    }
}

impl Parser<'_> {
    /// Checks a section's `network` key (written at byte `at`).
    pub(super) fn network(&self, raw: RawNetwork, at: usize) -> Result<NetworkList, PolicyError> {
        let mut list = NetworkList::default();
        match raw {
            RawNetwork::Named(name) => return self.named_network(&name, at),
            RawNetwork::List(patterns) => {
                for p in patterns {
                    list.allow.push(self.pattern(&p)?);
                }
            }
            RawNetwork::Table(hosts) => {
                for (p, host) in hosts {
                    let pattern = self.pattern(&p)?;
                    for (name, header) in host.headers.map(|h| h.0).unwrap_or_default() {
                        let credential = self.credential(&pattern, &name, header)?;
                        if list
                            .credentials
                            .iter()
                            .any(|c| c.host == pattern && c.header == credential.header)
                        {
                            return Err(self.error(
                                name.span().start,
                                format!("header {} is given twice for {pattern}", name.get_ref()),
                            ));
                        }
                        list.credentials.push(credential);
                    }
                    if host.trace == Some(false) {
                        list.untraced.push(pattern.clone());
                    }
                    list.allow.push(pattern);
                }
            }
        }
        Ok(list)
    }

    /// `network = "NAME"`: the checked grant of `[networks.NAME]`.
    fn named_network(&self, name: &str, at: usize) -> Result<NetworkList, PolicyError> {
        match self.networks.borrow().get(name) {
            Some(Some(list)) => Ok(list.clone()),
            // Its own errors are reported where it is written.
            Some(None) => Ok(NetworkList::default()),
            None => {
                let names: Vec<String> = self.networks.borrow().keys().cloned().collect();
                let known = match names.is_empty() {
                    true => "the policy has no [networks.NAME] section".to_string(),
                    false => format!("the named ones are: {}", names.join(", ")),
                };
                Err(self.error(
                    at,
                    format!(
                        "network {name:?} names no [networks.{name}] ({known}); a list of host \
                         patterns is written network = [{name:?}]"
                    ),
                ))
            }
        }
    }

    /// The `[networks.NAME]` grants, checked once, before the sections
    /// that name them.
    pub(super) fn named_networks(&self, raw: Vec<(String, usize, RawNetwork)>) {
        for (name, at, network) in raw {
            let checked = match network {
                RawNetwork::Named(_) => Err(self.error(
                    at,
                    format!("[networks.{name}] names another network; list its hosts here"),
                )),
                network => self.network(network, at),
            };
            self.networks.borrow_mut().insert(name, self.keep(checked));
        }
    }

    /// One host pattern, as `network` and `elicit-url-hosts` list them.
    pub(super) fn pattern(&self, p: &Spanned<String>) -> Result<HostPattern, PolicyError> {
        p.get_ref()
            .parse()
            .map_err(|e: HostPatternError| self.error(p.span().start, e.to_string()))
    }

    fn credential(
        &self,
        host: &HostPattern,
        name: &Spanned<String>,
        raw: Spanned<RawHeader>,
    ) -> Result<Credential, PolicyError> {
        let at = name.span().start;
        let header = http::HeaderName::from_bytes(name.get_ref().as_bytes()).map_err(|_| {
            self.error(
                at,
                format!("{:?} is not a valid header name", name.get_ref()),
            )
        })?;
        if RESERVED_HEADERS.contains(&header.as_str()) {
            return Err(self.error(
                at,
                format!(
                    "header {} belongs to the connection; airlock sets it itself",
                    name.get_ref()
                ),
            ));
        }
        let raw = raw.into_inner();
        let from = raw.from.get_ref();
        let for_what = format!("header {} for {host}", name.get_ref());
        let secret = self.variable(from, &for_what, raw.from.span().start)?;
        if secret.chars().count() < MIN_SECRET_LEN {
            return Err(self.error(
                raw.from.span().start,
                format!(
                    "the value of {from} (for {for_what}) is shorter than {MIN_SECRET_LEN} \
                     characters: too short to be redacted from tool output reliably"
                ),
            ));
        }
        let value = match &raw.format {
            None => secret.clone(),
            Some(format) => {
                if format.get_ref().matches("{}").count() != 1 {
                    return Err(self.error(
                        format.span().start,
                        "format must contain `{}` exactly once (where the value goes)",
                    ));
                }
                format.get_ref().replace("{}", &secret)
            }
        };
        if http::HeaderValue::from_str(&value).is_err() {
            return Err(self.error(
                raw.from.span().start,
                format!(
                    "the value of {from} (for {for_what}) cannot be sent in a header: it has \
                     control or non-ASCII characters"
                ),
            ));
        }
        Ok(Credential {
            host: host.clone(),
            header: header.as_str().to_string(),
            from: from.clone(),
            secret: Secret::new(secret),
            value: Secret::new(value),
        })
    }

    /// Reads and checks an operator CA bundle (`ca`).
    pub(super) fn ca(&self, raw: &Spanned<String>) -> Result<CaBundle, PolicyError> {
        let path = self.resolve(raw.get_ref());
        self.files.borrow_mut().push(path.clone());
        CaBundle::read(&path).map_err(|e| self.error(raw.span().start, e))
    }
}
