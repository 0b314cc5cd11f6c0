//! Checking the network keys of a policy section as written (`raw.rs`)
//! into what they grant (`network.rs`): `network`, in either form or by
//! the name of a `[networks.NAME]`, and the `ca` bundle. Each error points
//! at the value (the [`Parser`]'s line:column); a secret's value never
//! appears in one.

use toml::Spanned;

use super::context::Parser;
use super::error::PolicyError;
use super::host::{HostPattern, HostPatternError};
use super::network::{CaBundle, Credential, MIN_SECRET_LEN, NetworkList, Secret};
use super::raw::{RawHeader, RawNetwork};

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
        CaBundle::read(&path).map_err(|e| self.error(raw.span().start, e))
    }
}
