//! What the network keys of a policy section grant: `network` (the hosts a
//! tool may reach, each optionally with headers airlock adds to its
//! requests), `tls` and `ca` (what an https server's certificate is checked
//! against). The keys as written are read in `raw.rs` and checked into
//! these types in `network_keys.rs`.
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
//! Checked when the policy is loaded: the patterns, the header names
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

use super::HostPattern;

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
    /// The patterns written with `trace = false`: requests they match
    /// carry no `traceparent` from the host.
    pub untraced: Vec<HostPattern>,
}

/// Shortest secret airlock injects: a shorter one would be redacted from
/// ordinary text (and found by guessing).
pub const MIN_SECRET_LEN: usize = 8;

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
