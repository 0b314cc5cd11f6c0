//! A throwaway certificate authority and a local HTTPS server for the
//! tests of outgoing `https` requests. Everything is made at test time
//! (`rcgen`) and served on 127.0.0.1, on a random port, by the stand-in
//! [`Server`] of `support::servers` over TLS.
//!
//! The server answers `GET /echo` with the request's headers, one
//! `name: value` line each, `/echo.json` with them as JSON, `/json` with
//! [`JSON`], `/page` with [`PAGE`], and anything else with `hello`; it
//! records what arrived ([`Server::seen`]). A stalled server for a TLS
//! handshake that never ends is [`Server::stalled`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use super::servers::{Answer, Request, Server};

/// What `/json` answers.
pub const JSON: &str = r#"{"name":"airlock","release":{"version":"1.2.3","assets":[{"size":42}]}}"#;

/// What `/page` answers.
pub const PAGE: &str =
    "<!doctype html><html><head><title>Hello from airlock</title></head><body>hi</body></html>";

/// A certificate authority that exists for one test.
pub struct Ca {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

/// What the server's certificate says.
pub enum Leaf<'a> {
    /// Valid now, for these names (a name or an IP address each).
    For(&'a [&'a str]),
    /// For these names, but expired a year ago.
    Expired(&'a [&'a str]),
}

impl Ca {
    pub fn new() -> Ca {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, "airlock test CA");
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let key = KeyPair::generate().expect("CA key");
        Ca {
            issuer: CertifiedIssuer::self_signed(params, key).expect("CA certificate"),
        }
    }

    /// The CA's certificate as PEM, written to `dir/ca.pem`.
    pub fn write_pem(&self, dir: &Path) -> PathBuf {
        let path = dir.join("ca.pem");
        std::fs::write(&path, self.issuer.pem()).expect("write ca.pem");
        path
    }

    /// A server certificate (with its chain) and key signed by this CA.
    fn leaf(&self, leaf: &Leaf) -> (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>) {
        let (names, expired) = match leaf {
            Leaf::For(names) => (names, false),
            Leaf::Expired(names) => (names, true),
        };
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let mut params = CertificateParams::new(names).expect("leaf params");
        if expired {
            params.not_before = rcgen::date_time_ymd(2020, 1, 1);
            params.not_after = rcgen::date_time_ymd(2021, 1, 1);
        }
        let key = KeyPair::generate().expect("leaf key");
        let cert = params
            .signed_by(&key, &self.issuer)
            .expect("leaf certificate");
        let der = PrivatePkcs8KeyDer::from(key.serialize_der());
        (vec![cert.der().clone()], PrivateKeyDer::Pkcs8(der))
    }
}

impl Ca {
    /// A certificate `leaf` signed by this CA and its key, written as PEM
    /// to `dir/cert.pem` and `dir/key.pem` (replacing what is there), for
    /// `airlock serve --tls-cert --tls-key`.
    pub fn write_leaf(&self, dir: &Path, leaf: Leaf) -> (PathBuf, PathBuf) {
        use rustls::pki_types::pem::PemObject as _;
        let (chain, key) = self.leaf(&leaf);
        let pem = |label: &str, der: &[u8]| {
            let body = base64_lines(der);
            format!("-----BEGIN {label}-----\n{body}-----END {label}-----\n")
        };
        let (cert_path, key_path) = (dir.join("cert.pem"), dir.join("key.pem"));
        let chain: String = chain.iter().map(|c| pem("CERTIFICATE", c)).collect();
        std::fs::write(&cert_path, chain).expect("write cert.pem");
        std::fs::write(&key_path, pem("PRIVATE KEY", key.secret_der())).expect("write key.pem");
        // Read back as airlock will.
        CertificateDer::from_pem_file(&cert_path).expect("cert.pem reads back");
        (cert_path, key_path)
    }

    /// TLS client settings (ring) trusting only this CA.
    pub fn client_config(&self) -> Arc<rustls::ClientConfig> {
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(self.issuer.der().clone())
            .expect("CA is a trust anchor");
        let provider = Arc::new(airlock::sandbox::crypto_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
        Arc::new(config)
    }

    /// TLS server settings (ring) with a certificate `leaf` signed by this
    /// CA, for a server of a test's own.
    pub fn server_config(&self, leaf: Leaf) -> Arc<rustls::ServerConfig> {
        let (chain, key) = self.leaf(&leaf);
        let provider = Arc::new(airlock::sandbox::crypto_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .expect("server certificate");
        Arc::new(config)
    }
}

/// A local HTTPS server with a certificate `leaf` signed by `ca`,
/// answering as the module says and recording what arrived;
/// stopped when dropped.
pub fn https_server(ca: &Ca, leaf: Leaf) -> Server {
    Server::https(ca.server_config(leaf), answer)
}

/// What the HTTPS server answers to `request`.
fn answer(request: &Request) -> Answer {
    let (body, kind) = match request.path.as_str() {
        "/echo" => (
            request
                .headers
                .iter()
                .map(|(n, v)| format!("{n}: {v}\n"))
                .collect::<String>(),
            "text/plain",
        ),
        // The headers as JSON, every character of each value written as a
        // `\u` escape (JSON encoders escape some or all characters so:
        // Go's `encoding/json` writes `&`, `<`, `>` as `\u0026`, …).
        "/echo.json" => (
            format!(
                "{{{}}}",
                request
                    .headers
                    .iter()
                    .map(|(n, v)| {
                        let escaped: String =
                            v.chars().map(|c| format!("\\u{:04x}", c as u32)).collect();
                        format!("\"{n}\":\"{escaped}\"")
                    })
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            "application/json",
        ),
        "/json" => (JSON.to_string(), "application/json"),
        "/page" => (PAGE.to_string(), "text/html; charset=utf-8"),
        _ => ("hello".to_string(), "text/plain"),
    };
    Answer::Full {
        status: 200,
        headers: vec![("Content-Type".to_string(), kind.to_string())],
        body: body.into_bytes(),
    }
}

/// `der` in base64, 64 characters a line (PEM's body).
fn base64_lines(der: &[u8]) -> String {
    use base64::Engine as _;
    let text = base64::engine::general_purpose::STANDARD.encode(der);
    text.as_bytes()
        .chunks(64)
        .map(|line| format!("{}\n", String::from_utf8_lossy(line)))
        .collect()
}
