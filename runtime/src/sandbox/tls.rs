//! TLS for outgoing `https` requests: the client configuration of a
//! [`Trust`] setting, and a failed handshake in the guest's error code and
//! the operator's words.
//!
//! One crypto provider for the whole binary: `ring`, passed explicitly, and
//! rustls built without `aws-lc-rs` (two providers make rustls's default
//! selection panic at run time; `tests::ring_is_the_only_provider` checks
//! the build). A configuration is built the first time a call with that
//! trust setting makes an https request and then shared: a call that makes
//! no request pays nothing, and the platform store (`tls = "system"`) is
//! read once per process. HTTP/1.1 only (ALPN `http/1.1`): each request has
//! a connection of its own, so HTTP/2's multiplexing would gain nothing.
//!
//! The handshake itself runs in `network`, over the socket whose address the
//! filter checked; the certificate is verified against the URL's host name.

use std::sync::{Arc, Mutex, OnceLock};

use rustls::pki_types::CertificateDer;
use rustls::{ClientConfig, RootCertStore};
use wasmtime_wasi_http::Error as HttpError;

use crate::policy::{Roots, Trust};

/// The one crypto provider of the binary: ring's. rustls 0.23.48 deprecated
/// it for having no post-quantum key exchange; the other provider,
/// aws-lc-rs, is a second crypto library (in C), and with two compiled in
/// rustls panics on its default. Kept on purpose, in this one place.
#[allow(deprecated)]
pub fn crypto_provider() -> rustls::crypto::CryptoProvider {
    rustls::crypto::ring::default_provider()
}
/// Why no TLS client could be set up for a trust setting.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SetupError {
    #[error(
        "tls = \"system\", but the platform's certificate store holds no usable certificate \
         ({0}); set SSL_CERT_FILE or SSL_CERT_DIR, or use tls = \"bundled\" and `ca`"
    )]
    NoSystemRoots(String),
    #[error("cannot set up TLS: {0}")]
    Rustls(String),
}

/// Most client configurations kept at once (one per trust setting in use).
const MAX_CONFIGS: usize = 32;

/// The TLS client for `trust`, built once per distinct setting.
pub fn connector(trust: &Trust) -> Result<tokio_rustls::TlsConnector, SetupError> {
    static BUILT: Mutex<Vec<(Trust, Arc<ClientConfig>)>> = Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, config)) = built.iter().find(|(t, _)| t == trust) {
        return Ok(config.clone().into());
    }
    let config = Arc::new(client_config(trust)?);
    // Reloaded policies with other CA bundles must not pile up forever.
    if built.len() >= MAX_CONFIGS {
        built.remove(0);
    }
    built.push((trust.clone(), config.clone()));
    Ok(config.into())
}

fn client_config(trust: &Trust) -> Result<ClientConfig, SetupError> {
    let mut roots = RootCertStore::empty();
    match trust.roots {
        Roots::Bundled => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
        Roots::System => {
            let certs = system_roots()?;
            roots.add_parsable_certificates(certs.iter().cloned());
            if roots.is_empty() {
                return Err(SetupError::NoSystemRoots(
                    "none of its certificates parses".into(),
                ));
            }
        }
    }
    if let Some(ca) = &trust.ca {
        // Each was checked to be a usable anchor when the policy was loaded.
        roots.add_parsable_certificates(ca.certs.iter().cloned());
    }
    let provider = Arc::new(crypto_provider());
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| SetupError::Rustls(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// The platform's certificates, read once per process.
fn system_roots() -> Result<&'static [CertificateDer<'static>], SetupError> {
    static SYSTEM: OnceLock<Result<Vec<CertificateDer<'static>>, String>> = OnceLock::new();
    let loaded = SYSTEM.get_or_init(|| {
        let found = rustls_native_certs::load_native_certs();
        if found.certs.is_empty() {
            let why = match found.errors.first() {
                Some(e) => e.to_string(),
                None => "none found".to_string(),
            };
            return Err(why);
        }
        for e in &found.errors {
            tracing::warn!("tls = \"system\": skipped part of the platform's store: {e}");
        }
        Ok(found.certs)
    });
    loaded
        .as_deref()
        .map_err(|why| SetupError::NoSystemRoots(why.clone()))
}

/// A failed TLS handshake with `host`: the code the guest sees, and for the
/// operator what went wrong in words and which policy key would change it.
pub fn handshake_failure(err: &std::io::Error, host: &str) -> (HttpError, String) {
    use rustls::{CertificateError as Cert, Error as Tls};
    let trust_hint = "if the server is right, add its CA to the policy's `ca` (a PEM \
                      bundle), or set tls = \"system\" to use the platform's store";
    let Some(tls) = err.get_ref().and_then(|e| e.downcast_ref::<Tls>()) else {
        let words = match err.kind() {
            std::io::ErrorKind::UnexpectedEof => {
                format!("{host} closed the connection during the TLS handshake")
            }
            _ => format!("TLS handshake with {host} failed: {err}"),
        };
        return (HttpError::TlsProtocolError, words);
    };
    match tls {
        Tls::InvalidCertificate(cert) => {
            let words = match cert {
                Cert::Expired | Cert::ExpiredContext { .. } => {
                    format!("{host}'s certificate has expired ({cert})")
                }
                Cert::NotValidYet | Cert::NotValidYetContext { .. } => {
                    format!("{host}'s certificate is not valid yet ({cert})")
                }
                Cert::NotValidForName | Cert::NotValidForNameContext { .. } => format!(
                    "{host}'s certificate is for another host name ({cert}); the URL's \
                     host must be one the certificate names"
                ),
                Cert::UnknownIssuer => format!(
                    "{host}'s certificate was issued by an unknown authority (not one of \
                     the trust roots); {trust_hint}"
                ),
                other => format!("{host}'s certificate was refused: {other}"),
            };
            (HttpError::TlsCertificateError, words)
        }
        Tls::AlertReceived(alert) => (
            HttpError::TlsAlertReceived {
                alert_id: Some(u8::from(*alert)),
                alert_message: Some(format!("{alert:?}")),
            },
            format!("{host} ended the TLS handshake with the alert {alert:?}"),
        ),
        other => (
            HttpError::TlsProtocolError,
            format!("TLS handshake with {host} failed: {other}"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::CaBundle;

    #[test]
    fn ring_is_the_only_provider() {
        // `ClientConfig::builder()` makes rustls pick its process default
        // from the providers compiled in, and panic when there are two
        // (`ring` and `aws-lc-rs`, as a dependency's default features would
        // add): that is the failure this guards against. With ring alone,
        // the default is ring's, cipher suite for cipher suite.
        let _ = ClientConfig::builder();
        let default = rustls::crypto::CryptoProvider::get_default()
            .expect("exactly one provider compiled in, so rustls picked it");
        let ring = crypto_provider();
        let names = |p: &rustls::crypto::CryptoProvider| {
            p.cipher_suites
                .iter()
                .map(|s| format!("{:?}", s.suite()))
                .collect::<Vec<_>>()
        };
        assert_eq!(names(default), names(&ring));
        assert_eq!(
            format!("{:?}", default.kx_groups),
            format!("{:?}", ring.kx_groups)
        );
    }

    #[test]
    fn one_configuration_per_trust_setting() {
        let bundled = Trust::default();
        let a = client_config(&bundled).expect("bundled roots");
        assert_eq!(a.alpn_protocols, vec![b"http/1.1".to_vec()]);
        connector(&bundled).expect("first");
        connector(&bundled).expect("cached");
        let ca = rcgen::CertificateParams::new(Vec::<String>::new())
            .and_then(|mut p| {
                p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
                p.self_signed(&rcgen::KeyPair::generate()?)
            })
            .expect("a CA");
        let with_ca = Trust {
            roots: Roots::Bundled,
            ca: Some(CaBundle {
                path: "ca.pem".into(),
                certs: vec![ca.der().clone()].into(),
            }),
        };
        connector(&with_ca).expect("bundled and an operator CA");
    }

    #[test]
    fn failures_in_words() {
        let host = "api.example.com";
        let cert = |e: rustls::CertificateError| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                rustls::Error::InvalidCertificate(e),
            )
        };
        let (code, words) = handshake_failure(&cert(rustls::CertificateError::Expired), host);
        assert!(matches!(code, HttpError::TlsCertificateError));
        assert!(words.contains("expired"), "{words}");
        let (_, words) = handshake_failure(&cert(rustls::CertificateError::UnknownIssuer), host);
        assert!(
            words.contains("unknown authority") && words.contains("`ca`"),
            "{words}"
        );
        let (_, words) = handshake_failure(&cert(rustls::CertificateError::NotValidForName), host);
        assert!(words.contains("another host name"), "{words}");
        let alert = std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            rustls::Error::AlertReceived(rustls::AlertDescription::HandshakeFailure),
        );
        let (code, _) = handshake_failure(&alert, host);
        assert!(matches!(
            code,
            HttpError::TlsAlertReceived {
                alert_id: Some(40),
                ..
            }
        ));
        let eof = std::io::Error::from(std::io::ErrorKind::UnexpectedEof);
        let (code, words) = handshake_failure(&eof, host);
        assert!(matches!(code, HttpError::TlsProtocolError));
        assert!(words.contains("closed the connection"), "{words}");
    }
}
