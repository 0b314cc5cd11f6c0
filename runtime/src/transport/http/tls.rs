//! HTTPS on the listener (`serve --tls-cert FILE --tls-key FILE`): the
//! certificate chain and its key, read from PEM files and checked before
//! serving begins (a key that does not belong to the certificate is refused
//! then, not at the first client's handshake), and read again when either
//! file changes, so a renewed certificate (certbot, cert-manager) is served
//! without a restart. A renewal that does not load is logged and the pair
//! that loaded last keeps serving.
//!
//! One crypto provider for the whole binary: `ring`, as for the tools'
//! HTTPS and for fetching components.
//!
//! A plain-HTTP request sent to the HTTPS port is answered `400 Bad
//! Request` with the `https://` address to use ([`answer_plain_http`]),
//! not handed to the handshake, which would answer with a TLS alert that
//! clients show as "Received HTTP/0.9 when not allowed" or garbage.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio_rustls::TlsAcceptor;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use crate::sync::lock;

/// How often the files are looked at for a renewal.
const WATCH_EVERY: Duration = Duration::from_secs(10);

/// The two PEM files the listener's certificate comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    /// The server's certificate first, then the intermediate certificates.
    pub cert: PathBuf,
    /// Its private key (PKCS#8, PKCS#1 RSA or SEC1 EC).
    pub key: PathBuf,
}

/// Why the certificate or key cannot be served; each says what to do.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{} holds no certificate: expected PEM `BEGIN CERTIFICATE` blocks, \
         the server's certificate first, then its chain",
        path.display()
    )]
    NoCertificate { path: PathBuf },
    #[error("{} is not valid PEM: {reason}", path.display())]
    Pem { path: PathBuf, reason: String },
    #[error(
        "{} holds no private key: expected a PEM `BEGIN PRIVATE KEY`, \
         `BEGIN RSA PRIVATE KEY` or `BEGIN EC PRIVATE KEY` block (is it the \
         certificate? --tls-key takes the key, --tls-cert the certificate)",
        path.display()
    )]
    NoKey { path: PathBuf },
    #[error("the key in {} cannot be used: {reason}", path.display())]
    Key { path: PathBuf, reason: String },
    #[error(
        "the key in {} does not belong to the certificate in {}: pass the key \
         the certificate was issued for",
        key.display(),
        cert.display()
    )]
    Mismatch { cert: PathBuf, key: PathBuf },
}

impl TlsFiles {
    /// Reads and checks the pair.
    fn load(&self, provider: &CryptoProvider) -> Result<CertifiedKey, TlsError> {
        let read = |path: &Path| {
            std::fs::read(path).map_err(|source| TlsError::Read {
                path: path.to_path_buf(),
                source,
            })
        };
        let pem = |path: &Path| {
            let path = path.to_path_buf();
            move |e: rustls::pki_types::pem::Error| TlsError::Pem {
                path,
                reason: e.to_string(),
            }
        };
        let chain = CertificateDer::pem_slice_iter(&read(&self.cert)?)
            .collect::<Result<Vec<_>, _>>()
            .map_err(pem(&self.cert))?;
        if chain.is_empty() {
            return Err(TlsError::NoCertificate {
                path: self.cert.clone(),
            });
        }
        let key = match PrivateKeyDer::from_pem_slice(&read(&self.key)?) {
            Ok(key) => key,
            Err(rustls::pki_types::pem::Error::NoItemsFound) => {
                return Err(TlsError::NoKey {
                    path: self.key.clone(),
                });
            }
            Err(e) => return Err(pem(&self.key)(e)),
        };
        let signing = provider
            .key_provider
            .load_private_key(key)
            .map_err(|e| TlsError::Key {
                path: self.key.clone(),
                reason: e.to_string(),
            })?;
        let certified = CertifiedKey::new(chain, signing);
        match certified.keys_match() {
            Ok(()) | Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::Unknown)) => {
                Ok(certified)
            }
            Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch)) => {
                Err(TlsError::Mismatch {
                    cert: self.cert.clone(),
                    key: self.key.clone(),
                })
            }
            Err(e) => Err(TlsError::Pem {
                path: self.cert.clone(),
                reason: e.to_string(),
            }),
        }
    }

    /// The files' modification times, to notice a renewal.
    fn stamp(&self) -> (Option<SystemTime>, Option<SystemTime>) {
        let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
        (modified(&self.cert), modified(&self.key))
    }
}

/// The certificate the listener presents, replaced when the files change.
#[derive(Debug)]
struct Current {
    files: TlsFiles,
    key: Mutex<Arc<CertifiedKey>>,
}

impl ResolvesServerCert for Current {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(lock(&self.key).clone())
    }
}

/// The listener's TLS: the acceptor for connections and the certificate
/// behind it.
#[derive(Clone)]
pub struct ServerTls {
    acceptor: TlsAcceptor,
    current: Arc<Current>,
    provider: Arc<CryptoProvider>,
}

impl std::fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerTls")
            .field("files", &self.current.files)
            .finish_non_exhaustive()
    }
}

impl ServerTls {
    /// Reads and checks `files`; HTTP/1.1 only (what the listener speaks),
    /// TLS 1.2 and 1.3.
    pub fn load(files: TlsFiles) -> Result<ServerTls, TlsError> {
        let provider = Arc::new(crate::sandbox::crypto_provider());
        let key = files.load(&provider)?;
        let current = Arc::new(Current {
            files,
            key: Mutex::new(Arc::new(key)),
        });
        let mut config = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError::Key {
                path: current.files.key.clone(),
                reason: e.to_string(),
            })?
            .with_no_client_auth()
            .with_cert_resolver(current.clone());
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(ServerTls {
            acceptor: TlsAcceptor::from(Arc::new(config)),
            current,
            provider,
        })
    }

    pub fn acceptor(&self) -> &TlsAcceptor {
        &self.acceptor
    }

    /// Reads the files again; on success the next handshakes present the
    /// new pair (connections already open keep theirs).
    pub fn reload(&self) -> Result<(), TlsError> {
        let key = self.current.files.load(&self.provider)?;
        *lock(&self.current.key) = Arc::new(key);
        Ok(())
    }

    /// Watches the files until dropped (the task is aborted with the
    /// listener): a changed modification time reloads the pair.
    pub fn watch(&self) -> tokio::task::JoinHandle<()> {
        let tls = self.clone();
        tokio::spawn(async move {
            let files = tls.current.files.clone();
            let mut seen = files.stamp();
            let mut tick = tokio::time::interval(WATCH_EVERY);
            tick.tick().await;
            loop {
                tick.tick().await;
                let now = files.stamp();
                if now == seen {
                    continue;
                }
                seen = now;
                match tls.reload() {
                    Ok(()) => tracing::info!(
                        "TLS: {} changed; new connections get the new certificate",
                        files.cert.display()
                    ),
                    Err(err) => tracing::error!(
                        "TLS: the changed certificate does not load ({err}); \
                         the previous one keeps serving"
                    ),
                }
            }
        })
    }
}

/// The most of a plain-HTTP request's head read to answer it.
const PLAIN_HEAD: usize = 8 * 1024;

/// Answers a connection whose first byte starts an HTTP request (an ASCII
/// letter: a method) rather than a TLS record (a ClientHello starts with
/// 0x16): `400`, naming the `https://` address of what it asked for, and
/// the connection closes. False (nothing read) for anything else, which
/// goes on to the handshake.
pub async fn answer_plain_http(stream: &mut TcpStream) -> bool {
    let mut first = [0u8; 1];
    match stream.peek(&mut first).await {
        Ok(1) if first[0].is_ascii_uppercase() => {}
        _ => return false,
    }
    let mut head = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while head.len() < PLAIN_HEAD && !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => head.extend_from_slice(&chunk[..n]),
        }
    }
    let local = stream.local_addr().ok();
    let body = format!(
        "this port speaks HTTPS: use {}\n",
        https_address(&String::from_utf8_lossy(&head), local)
    );
    let answer = format!(
        "HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain; charset=utf-8\r\n\
         x-content-type-options: nosniff\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(answer.as_bytes()).await;
    let _ = stream.shutdown().await;
    // What the client still sends (a body) is read and dropped before the
    // connection closes: closing with it unread would reset the connection,
    // and the client could lose the answer.
    let mut left = PLAIN_HEAD;
    while left > 0 {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => left = left.saturating_sub(n),
        }
    }
    true
}

/// `https://HOST/PATH` for a plain-HTTP request's `head`: the host from
/// its `Host` header (else the address it reached), the path from its
/// request line; each only when it is made of the characters it may hold,
/// so the answer never repeats anything else the request sent.
fn https_address(head: &str, local: Option<std::net::SocketAddr>) -> String {
    let mut lines = head.split("\r\n");
    let path = lines
        .next()
        .and_then(|line| line.split(' ').nth(1))
        .filter(|p| p.starts_with('/') && p.len() <= 256)
        .filter(|p| {
            // RFC 3986's characters of a path and query.
            p.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-._~%!$&'()*+,;=:@/?".contains(&b))
        })
        .unwrap_or("/");
    let host = lines
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("host"))
        .map(|(_, value)| value.trim().to_string())
        .filter(|h| !h.is_empty() && h.len() <= 255)
        .filter(|h| {
            h.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b))
        })
        .or_else(|| local.map(|a| a.to_string()))
        .unwrap_or_else(|| "HOST:PORT".into());
    format!("https://{host}{path}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_https_address_comes_from_the_request_and_only_what_it_may_hold() {
        let local = Some("127.0.0.1:8414".parse().expect("addr"));
        let head = "GET /mcp?x=1 HTTP/1.1\r\nHost: tools.internal:8414\r\n\r\n";
        assert_eq!(
            https_address(head, local),
            "https://tools.internal:8414/mcp?x=1"
        );
        // No Host: the address the connection reached.
        assert_eq!(
            https_address("POST /rpc HTTP/1.0\r\n\r\n", local),
            "https://127.0.0.1:8414/rpc"
        );
        // Nothing else the request sent is repeated.
        let odd = "GET /<script> x HTTP/1.1\r\nhost: a<b>\r\n\r\n";
        assert_eq!(https_address(odd, local), "https://127.0.0.1:8414/");
        let odd = "GET http://x/ HTTP/1.1\r\nHOST: [::1]:9\r\n\r\n";
        assert_eq!(https_address(odd, None), "https://[::1]:9/");
    }
}
