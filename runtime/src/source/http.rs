//! HTTP(S) for fetching and publishing: one request per connection on
//! hyper's HTTP/1.1 client, TLS by the connector the caller gives (the
//! runtime's comes from `sandbox::tls`, the configuration tools' https
//! uses), every body bounded, redirects followed a few times.
//!
//! What a server sends is read only up to a limit the caller gives: a
//! `Content-Length` over it is refused before the body is read, and a body
//! that runs past it is cut off with an error that says so. Plain `http://`
//! is used only for hosts the operator named (`--insecure-registry`, or an
//! `oci+http://` reference); a redirect never downgrades to it otherwise.
//! Credentials are never sent to another host after a redirect.
//!
//! Time is bounded too ([`super::pace`]): a client made for one fetch
//! ([`Http::new`]) gives all its requests one overall deadline, and every
//! answer's body a minimum rate, so a server that trickles is cut off.

use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use http_body_util::{BodyExt as _, Full};
use hyper_util::rt::TokioIo;
use url::Url;

use super::pace::{self, FetchLimits, Limit, Progress, Transfer};

/// How long a connection (TCP and TLS) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the server may be silent: before its answer, between chunks.
const READ_TIMEOUT: Duration = Duration::from_secs(30);
/// Redirects followed for one request.
const MAX_REDIRECTS: usize = 5;
/// What is read of an error answer's body (for its message).
const ERROR_BODY_LIMIT: u64 = 64 * 1024;

/// Why a request failed.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("{url}: {reason}")]
    Failed { url: String, reason: String },
    #[error(
        "{url} is plain http://; airlock uses it only for hosts named with \
         --insecure-registry (or an oci+http:// reference)"
    )]
    Plain { url: String },
    #[error("{url}: the answer is larger than the {limit} bytes airlock accepts here{declared}")]
    TooLarge {
        url: String,
        limit: u64,
        declared: String,
    },
}

/// An answer, its body read in full (within the limit).
#[derive(Debug)]
pub struct Response {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
    /// The URL that answered (after redirects).
    pub url: Url,
}

impl Response {
    pub fn header(&self, name: header::HeaderName) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The start of the body, for an error message.
    pub fn excerpt(&self) -> String {
        let text = String::from_utf8_lossy(&self.body[..self.body.len().min(300)]);
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    }
}

/// A request to send.
#[derive(Clone)]
pub struct Request {
    pub method: Method,
    pub url: Url,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Request {
    pub fn get(url: Url) -> Request {
        Request {
            method: Method::GET,
            url,
            headers: HeaderMap::new(),
            body: Bytes::new(),
        }
    }

    pub fn header(mut self, name: header::HeaderName, value: &str) -> Request {
        if let Ok(value) = HeaderValue::from_str(value) {
            self.headers.insert(name, value);
        }
        self
    }
}

/// The client for one fetch: TLS settings, the hosts that may speak plain
/// HTTP, and the fetch's time bounds (its deadline runs from [`Http::new`]).
#[derive(Clone)]
pub struct Http {
    /// TLS for https (or why there is none; plain HTTP works without).
    tls: Result<tokio_rustls::TlsConnector, String>,
    /// `host` or `host:port` entries allowed over plain `http://`.
    plain: Vec<String>,
    limits: FetchLimits,
    started: Instant,
    /// Counts the body bytes received, for whoever watches the fetch.
    progress: Option<Progress>,
}

impl Http {
    pub fn new(tls: Result<tokio_rustls::TlsConnector, String>, plain: Vec<String>) -> Http {
        Http {
            tls,
            plain,
            limits: FetchLimits::default(),
            started: Instant::now(),
            progress: None,
        }
    }

    /// The same client with these time bounds.
    pub fn with_limits(mut self, limits: FetchLimits) -> Http {
        self.limits = limits;
        self
    }

    /// The same client, counting what it receives in `progress`.
    pub fn with_progress(mut self, progress: Progress) -> Http {
        self.progress = Some(progress);
        self
    }

    /// What is left of the fetch's deadline.
    fn remaining(&self) -> Duration {
        self.limits.timeout.saturating_sub(self.started.elapsed())
    }

    /// The error for a transfer `limit` ended.
    fn cut_off(&self, url: &Url, limit: Limit, now: &Transfer) -> HttpError {
        HttpError::Failed {
            url: url.to_string(),
            reason: pace::explain(limit, &self.limits, READ_TIMEOUT, now),
        }
    }

    /// The same client, also allowing plain HTTP to `authority`.
    pub fn allowing_plain(&self, authority: &str) -> Http {
        let mut http = self.clone();
        http.plain.push(authority.to_string());
        http
    }

    /// Whether plain HTTP to `url`'s host is allowed.
    pub fn allows_plain(&self, url: &Url) -> bool {
        let host = url.host_str().unwrap_or("");
        let authority = match url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_string(),
        };
        self.plain.iter().any(|p| *p == authority || *p == host)
    }

    /// Sends `request`, following redirects (for GET and HEAD), and reads
    /// at most `limit` bytes of a successful answer's body. Traced as a
    /// CLIENT span when exporting: method, scheme, host, port and the
    /// answer's status (never the path, a header or a credential).
    pub async fn send(&self, request: Request, limit: u64) -> Result<Response, HttpError> {
        use crate::telemetry::{KeyValue, SpanKind};
        let url = &request.url;
        let attributes = if crate::telemetry::on() {
            vec![
                KeyValue::new("http.request.method", request.method.to_string()),
                KeyValue::new("url.scheme", url.scheme().to_string()),
                KeyValue::new(
                    "server.address",
                    url.host_str().unwrap_or_default().to_string(),
                ),
                KeyValue::new(
                    "server.port",
                    i64::from(url.port_or_known_default().unwrap_or(0)),
                ),
            ]
        } else {
            Vec::new()
        };
        let name = request.method.to_string();
        let sending = self.follow(request, limit);
        let status = |out: &Result<Response, HttpError>| match out {
            Ok(response) => vec![KeyValue::new(
                "http.response.status_code",
                i64::from(response.status.as_u16()),
            )],
            Err(_) => Vec::new(),
        };
        crate::telemetry::within_noting(name, SpanKind::Client, move || attributes, sending, status)
            .await
    }

    async fn follow(&self, mut request: Request, limit: u64) -> Result<Response, HttpError> {
        for _ in 0..=MAX_REDIRECTS {
            let response = self.send_once(&request, limit).await?;
            let redirect = matches!(response.status.as_u16(), 301 | 302 | 303 | 307 | 308)
                && matches!(request.method, Method::GET | Method::HEAD);
            let Some(location) = response.header(header::LOCATION).filter(|_| redirect) else {
                return Ok(response);
            };
            let next = request.url.join(location).map_err(|e| HttpError::Failed {
                url: request.url.to_string(),
                reason: format!("redirect to an invalid location {location:?}: {e}"),
            })?;
            if next.host_str() != request.url.host_str() || next.port() != request.url.port() {
                request.headers.remove(header::AUTHORIZATION);
            }
            request.url = next;
        }
        Err(HttpError::Failed {
            url: request.url.to_string(),
            reason: format!("more than {MAX_REDIRECTS} redirects"),
        })
    }

    async fn send_once(&self, request: &Request, limit: u64) -> Result<Response, HttpError> {
        let url = &request.url;
        let failed = |reason: String| HttpError::Failed {
            url: url.to_string(),
            reason,
        };
        let tls = match url.scheme() {
            "https" => true,
            "http" if self.allows_plain(url) => false,
            "http" => {
                return Err(HttpError::Plain {
                    url: url.to_string(),
                });
            }
            other => return Err(failed(format!("unsupported scheme {other}"))),
        };
        let host = url
            .host_str()
            .ok_or_else(|| failed("no host".into()))?
            .to_string();
        let port = url.port_or_known_default().unwrap_or(443);
        let connect = async {
            let tcp = tokio::net::TcpStream::connect((host.trim_matches(['[', ']']), port))
                .await
                .map_err(|e| format!("cannot connect: {e}"))?;
            let _ = tcp.set_nodelay(true);
            if !tls {
                return Ok(Stream::Plain(tcp));
            }
            let name = rustls::pki_types::ServerName::try_from(host.trim_matches(['[', ']']))
                .map_err(|e| format!("not a TLS server name: {e}"))?
                .to_owned();
            let stream = self
                .tls
                .as_ref()
                .map_err(String::clone)?
                .connect(name, tcp)
                .await
                .map_err(|e| format!("TLS: {e}"))?;
            Ok(Stream::Tls(Box::new(stream)))
        };
        let before = || Transfer {
            elapsed: self.started.elapsed(),
            body_elapsed: Duration::ZERO,
            received: 0,
            expected: None,
        };
        let remaining = self.remaining();
        let stream = tokio::time::timeout(CONNECT_TIMEOUT.min(remaining), connect)
            .await
            .map_err(|_| {
                if remaining < CONNECT_TIMEOUT {
                    self.cut_off(url, Limit::Deadline, &before())
                } else {
                    failed(format!("no connection within {CONNECT_TIMEOUT:?}"))
                }
            })?
            .map_err(failed)?;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| failed(e.to_string()))?;
        let driver = tokio::spawn(conn);

        let path = match url.query() {
            Some(q) => format!("{}?{q}", url.path()),
            None => url.path().to_string(),
        };
        let mut builder = http::Request::builder()
            .method(request.method.clone())
            .uri(path);
        let mut headers = request.headers.clone();
        let host_header = match url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.clone(),
        };
        if let Ok(value) = HeaderValue::from_str(&host_header) {
            headers.insert(header::HOST, value);
        }
        headers.insert(
            header::USER_AGENT,
            HeaderValue::from_static(concat!("airlock/", env!("CARGO_PKG_VERSION"))),
        );
        if let Some(h) = builder.headers_mut() {
            *h = headers;
        }
        let outgoing = builder
            .body(Full::new(request.body.clone()))
            .map_err(|e| failed(e.to_string()))?;
        let remaining = self.remaining();
        let response =
            tokio::time::timeout(READ_TIMEOUT.min(remaining), sender.send_request(outgoing))
                .await
                .map_err(|_| {
                    if remaining < READ_TIMEOUT {
                        self.cut_off(url, Limit::Deadline, &before())
                    } else {
                        failed(format!("no answer within {READ_TIMEOUT:?}"))
                    }
                })?
                .map_err(|e| failed(e.to_string()))?;
        let (parts, mut incoming) = response.into_parts();
        let success = parts.status.is_success();
        let limit = if success { limit } else { ERROR_BODY_LIMIT };
        let too_large = |declared: String| HttpError::TooLarge {
            url: url.to_string(),
            limit,
            declared,
        };
        let declared = parts
            .headers
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        if success
            && request.method != Method::HEAD
            && let Some(length) = declared.filter(|l| *l > limit)
        {
            driver.abort();
            return Err(too_large(format!(" (it declares {length} bytes)")));
        }
        let mut body = Vec::new();
        let answered = Instant::now();
        if request.method != Method::HEAD {
            loop {
                let now = || Transfer {
                    elapsed: self.started.elapsed(),
                    body_elapsed: answered.elapsed(),
                    received: body.len() as u64,
                    expected: declared,
                };
                let (wait, ends) = pace::allowance(&self.limits, READ_TIMEOUT, &now());
                let Ok(frame) = tokio::time::timeout(wait, incoming.frame()).await else {
                    driver.abort();
                    return Err(self.cut_off(url, ends, &now()));
                };
                let Some(frame) = frame else { break };
                let frame = frame.map_err(|e| failed(e.to_string()))?;
                let Ok(data) = frame.into_data() else {
                    continue;
                };
                if let Some(progress) = &self.progress {
                    progress.add(data.len() as u64);
                }
                if (body.len() + data.len()) as u64 > limit {
                    if success {
                        driver.abort();
                        return Err(too_large(String::new()));
                    }
                    let room = (limit as usize).saturating_sub(body.len());
                    body.extend_from_slice(&data[..room.min(data.len())]);
                    break;
                }
                body.extend_from_slice(&data);
            }
        }
        driver.abort();
        Ok(Response {
            status: parts.status,
            headers: parts.headers,
            body: Bytes::from(body),
            url: url.clone(),
        })
    }
}

/// A connection, plain or TLS.
enum Stream {
    Plain(tokio::net::TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<tokio::net::TcpStream>>),
}

impl tokio::io::AsyncRead for Stream {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => std::pin::Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => std::pin::Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl tokio::io::AsyncWrite for Stream {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => std::pin::Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => std::pin::Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => std::pin::Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => std::pin::Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => std::pin::Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => std::pin::Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}
