//! The network keys of a policy section: `network` (the hosts a tool may
//! reach, each optionally with headers airlock adds to its requests), `tls`
//! and `ca` (what an https server's certificate is checked against).
//!
//! ```toml
//! [components.github]
//! # The short form: host patterns only (see `host.rs` for the forms).
//! network = ["api.github.com", "10.0.0.0/8"]
//! tls = "bundled"             # bundled (Mozilla's roots, the default) | system
//! ca = "certs/corp-ca.pem"    # optional PEM bundle, added to the roots
//!
//! # The long form: one table per pattern, in order. A credential is read
//! # from the runtime's environment when the policy is loaded; the tool never
//! # sees it.
//! [components.github.network."https://api.github.com"]
//! headers = { Authorization = { from = "GITHUB_TOKEN", format = "Bearer {}" } }
//! [components.github.network."uploads.github.com"]   # listed, no headers
//!
//! # A named grant, in either form, that several sections share by name.
//! [networks.github."https://api.github.com"]
//! headers = { Authorization = { from = "GITHUB_TOKEN", format = "Bearer {}" } }
//! [components.issues]
//! network = "github"
//! ```
//!
//! Checked here, when the policy is loaded: the patterns, the header names
//! (not ones the HTTP connection itself owns), that each `from` variable is
//! set and its value fits in a header and is long enough to be redacted,
//! that `format` has one `{}`, that the `ca` file holds certificates usable
//! as trust anchors. Values never appear in an error.
//!
//! Which requests get a credential is the sandbox's rule
//! ([`Credential::applies_to`]): requests whose scheme, host and port the
//! credential's pattern matches — and, for a pattern without a scheme, https
//! only: a secret goes over plain http only where the pattern says `http://`.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
use toml::Spanned;

use super::HostPattern;
use super::file::PolicyError;
use super::parse::Parser;

/// The base set of trust roots for https.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Roots {
    /// Mozilla's root certificates, built into airlock (`webpki-roots`).
    #[default]
    Bundled,
    /// The platform's certificate store, read once when first needed.
    System,
}

impl Roots {
    pub fn as_str(self) -> &'static str {
        match self {
            Roots::Bundled => "bundled",
            Roots::System => "system",
        }
    }
}

/// An operator's CA bundle: the certificates of a PEM file, read when the
/// policy was loaded.
#[derive(Clone, PartialEq, Eq)]
pub struct CaBundle {
    pub path: PathBuf,
    /// DER certificates, each checked to be usable as a trust anchor.
    pub certs: Arc<[rustls::pki_types::CertificateDer<'static>]>,
}

impl fmt::Debug for CaBundle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "CaBundle({}, {} certificate(s))",
            self.path.display(),
            self.certs.len()
        )
    }
}

/// What an https server's certificate is checked against: the base roots,
/// plus the operator's CA bundle if any.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Trust {
    pub roots: Roots,
    pub ca: Option<CaBundle>,
}

/// A value taken from the runtime's environment that a tool must never
/// see: no `Display`, and `Debug` shows only that it is there.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Arc<str>);

impl Secret {
    pub fn new(value: impl Into<Arc<str>>) -> Self {
        Secret(value.into())
    }

    /// The value itself: for the request it goes into and for redaction.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// A header airlock adds to a tool's requests to one host pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credential {
    pub host: HostPattern,
    /// The header's name, lower case (as HTTP/2 and `http` spell it).
    pub header: String,
    /// The environment variable the value came from (safe to show).
    pub from: String,
    /// The variable's value: what redaction hides.
    pub secret: Secret,
    /// The header's value: `format` with `{}` replaced by the secret.
    pub value: Secret,
}

impl Credential {
    /// Whether a request to `scheme://host:port` gets this credential: the
    /// pattern matches, and the request is https unless the pattern itself
    /// names `http`.
    pub fn applies_to(&self, scheme: &str, host: &str, port: u16) -> bool {
        let over_http_allowed = self.host.scheme_is_http();
        (scheme.eq_ignore_ascii_case("https") || over_http_allowed)
            && self.host.matches_host(scheme, host, port)
    }

    /// `Authorization for https://api.github.com (from GITHUB_TOKEN)`.
    pub fn describe(&self) -> String {
        format!("{} for {} (from {})", self.header, self.host, self.from)
    }
}

/// The checked `network` key of one section.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetworkList {
    pub allow: Vec<HostPattern>,
    pub credentials: Vec<Credential>,
}

/// Shortest secret airlock injects: a shorter one would be redacted from
/// ordinary text (and found by guessing).
pub const MIN_SECRET_LEN: usize = 8;

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

// ---------------------------------------------------------------------------
// The key as written.

/// `network = [...]` or `[X.network."pattern"]` tables.
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
    headers: Option<Pairs<Spanned<RawHeader>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHeader {
    from: Spanned<String>,
    format: Option<Spanned<String>>,
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
pub(super) struct Pairs<T>(Vec<(Spanned<String>, T)>);

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

    fn pattern(&self, p: &Spanned<String>) -> Result<HostPattern, PolicyError> {
        p.get_ref()
            .parse()
            .map_err(|e: super::HostPatternError| self.error(p.span().start, e.to_string()))
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

impl CaBundle {
    /// Reads a PEM bundle, each certificate checked to be usable as a
    /// trust anchor (the policy's `ca`, and `$AIRLOCK_CA_FILE` for fetching
    /// components).
    pub fn read(path: &std::path::Path) -> Result<CaBundle, String> {
        use rustls::pki_types::CertificateDer;
        use rustls::pki_types::pem::PemObject;
        let shown = path.display();
        let bytes =
            std::fs::read(path).map_err(|e| format!("CA bundle {shown} cannot be read: {e}"))?;
        let mut certs = Vec::new();
        for cert in CertificateDer::pem_slice_iter(&bytes) {
            let cert = cert.map_err(|e| format!("CA bundle {shown} is not valid PEM: {e}"))?;
            // Exactly the check rustls makes when it trusts the certificate.
            rustls::RootCertStore::empty()
                .add(cert.clone())
                .map_err(|e| {
                    format!(
                        "CA bundle {shown}: certificate {} cannot be a trust anchor: {e}",
                        certs.len() + 1
                    )
                })?;
            certs.push(cert);
        }
        if certs.is_empty() {
            return Err(format!(
                "CA bundle {shown} holds no certificate (expected PEM `BEGIN CERTIFICATE` blocks)"
            ));
        }
        Ok(CaBundle {
            path: path.to_path_buf(),
            certs: certs.into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn credential(pattern: &str) -> Credential {
        Credential {
            host: pattern.parse().expect("pattern"),
            header: "authorization".into(),
            from: "T".into(),
            secret: Secret::new("s3cret-value"),
            value: Secret::new("Bearer s3cret-value"),
        }
    }

    #[test]
    fn credentials_go_over_http_only_where_the_pattern_says_http() {
        let any = credential("api.example.com");
        assert!(any.applies_to("https", "api.example.com", 443));
        assert!(!any.applies_to("http", "api.example.com", 80));
        assert!(!any.applies_to("https", "other.example.com", 443));
        assert!(!any.applies_to("https", "api.example.com", 8443));

        let https = credential("https://api.example.com");
        assert!(https.applies_to("https", "api.example.com", 443));
        assert!(!https.applies_to("http", "api.example.com", 80));

        let http = credential("http://127.0.0.1:8080");
        assert!(http.applies_to("http", "127.0.0.1", 8080));
        assert!(!http.applies_to("https", "127.0.0.1", 8080));
    }

    #[test]
    fn secrets_never_show() {
        let c = credential("api.example.com");
        let shown = format!("{c:?} {}", c.describe());
        assert!(!shown.contains("s3cret"), "{shown}");
        assert_eq!(c.describe(), "authorization for api.example.com (from T)");
    }
}
