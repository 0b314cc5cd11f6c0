//! A throwaway certificate authority and a local HTTPS server for the
//! tests of outgoing `https` requests. Everything is made at test time
//! (`rcgen`) and served on 127.0.0.1, on a random port.
//!
//! The server answers `GET /echo` with the request's headers, one
//! `name: value` line each, `/json` with [`JSON`], `/page` with [`PAGE`],
//! and anything else with `hello`; it records what arrived. A stalled
//! server accepts TCP and never says a word.

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

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
    /// TLS server settings (ring) with a certificate `leaf` signed by this
    /// CA, for a server of a test's own.
    pub fn server_config(&self, leaf: Leaf) -> Arc<rustls::ServerConfig> {
        let (chain, key) = self.leaf(&leaf);
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .expect("server certificate");
        Arc::new(config)
    }
}

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub path: String,
    /// Every header line, names lower case, in the order they arrived.
    pub headers: Vec<(String, String)>,
}

impl Seen {
    /// Every value of header `name`.
    pub fn header(&self, name: &str) -> Vec<String> {
        self.headers
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
            .collect()
    }
}

/// A local HTTPS server, running until the test process ends.
pub struct HttpsServer {
    pub addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl HttpsServer {
    /// Serves on 127.0.0.1 with a certificate `leaf` signed by `ca`.
    pub fn start(ca: &Ca, leaf: Leaf) -> HttpsServer {
        let acceptor = tokio_rustls::TlsAcceptor::from(ca.server_config(leaf));
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind an HTTPS server");
        listener.set_nonblocking(true).expect("non-blocking");
        let addr = listener.local_addr().expect("address");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = seen.clone();
        thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("server runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                loop {
                    let Ok((tcp, _)) = listener.accept().await else {
                        continue;
                    };
                    let (acceptor, record) = (acceptor.clone(), record.clone());
                    tokio::spawn(async move {
                        // A client that refuses the certificate ends here.
                        let Ok(tls) = acceptor.accept(tcp).await else {
                            return;
                        };
                        let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                            let record = record.clone();
                            async move {
                                Ok::<_, std::convert::Infallible>(answer(&req, &record))
                            }
                        });
                        let _ = hyper::server::conn::http1::Builder::new()
                            .serve_connection(TokioIo::new(tls), service)
                            .await;
                    });
                }
            });
        });
        HttpsServer { addr, seen }
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The requests that arrived so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("seen").clone()
    }
}

fn answer(
    req: &hyper::Request<hyper::body::Incoming>,
    record: &Mutex<Vec<Seen>>,
) -> hyper::Response<Full<Bytes>> {
    let seen = Seen {
        path: req.uri().path().to_string(),
        headers: req
            .headers()
            .iter()
            .map(|(n, v)| {
                (
                    n.as_str().to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
    };
    let (body, kind) = match seen.path.as_str() {
        "/echo" => (
            seen.headers
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
                seen.headers
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
    record.lock().expect("record").push(seen);
    let mut response = hyper::Response::new(Full::new(Bytes::from(body)));
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(kind),
    );
    response
}

/// A server that accepts TCP connections and never answers (a TLS
/// handshake with it stalls). Returns its port.
pub fn stalled_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a stalled server");
    let port = listener.local_addr().expect("address").port();
    thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            held.push(stream);
            // Keep every connection open, silent, for a while.
            if held.len() > 64 {
                thread::sleep(Duration::from_secs(30));
            }
        }
    });
    port
}
