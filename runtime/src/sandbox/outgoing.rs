//! Sending the requests [`super::network`] allows: the call's `wasi:http`
//! hooks ([`HttpFilter`]), which check each request, resolve and check its
//! host, add its credentials, connect to exactly the checked addresses, run
//! TLS over that socket for `https` (`tls`) and speak HTTP/1.1 — every step
//! bounded by the call's deadline and its cancellation, and by the guest's
//! own connect and first-byte timeouts.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::uri::Scheme;
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::{Error as HttpError, RequestOptions, WasiBody, WasiHttpHooks};

use super::budget::{Descriptors, Held};
use super::interruption::CancelToken;
use super::network::{Denial, Destination, check_request, check_resolved, inject};
use super::redact::Redactor;
use super::tls;
use crate::logtext::GuestText;
use crate::policy::{Credential, NetworkGrant, Offline};

/// The `wasi:http` hooks of one call: checks every request against the
/// grant and sends the allowed ones itself.
pub struct HttpFilter {
    grant: Option<NetworkGrant>,
    /// Why `grant` is `None`, for the refusal.
    offline: Offline,
    deadline: Instant,
    cancel: CancelToken,
    /// The call's descriptor budget: each connection holds a place in it
    /// until it closes (`limits.open`).
    descriptors: Option<Descriptors>,
    /// The call's secrets, kept out of this module's log lines.
    redactor: Redactor,
    /// The credentials sent so far (`Credential::describe`), for the audit;
    /// made with the first request, so a call without one allocates nothing.
    used: Option<Arc<Mutex<Vec<String>>>>,
}

impl Default for HttpFilter {
    /// No network (fail closed).
    fn default() -> Self {
        HttpFilter {
            grant: None,
            offline: Offline::default(),
            deadline: Instant::now(),
            cancel: CancelToken::new(),
            descriptors: None,
            redactor: Redactor::default(),
            used: None,
        }
    }
}

impl HttpFilter {
    /// The filter of a call with `network` (`None`: no network, for
    /// the reason `offline`) until `deadline`. (What a grant makes of it:
    /// `HttpFilter::for_grant` in `sandbox::provision`.)
    pub fn new(
        network: Option<NetworkGrant>,
        offline: Offline,
        deadline: Instant,
        cancel: CancelToken,
        descriptors: Descriptors,
        redactor: Redactor,
    ) -> Self {
        HttpFilter {
            grant: network,
            offline,
            deadline,
            cancel,
            descriptors: Some(descriptors),
            redactor,
            used: None,
        }
    }

    /// The credentials this call's requests carried, each once, in the
    /// words of [`Credential::describe`] (never a value).
    pub fn credentials_used(&self) -> Vec<String> {
        self.used
            .as_ref()
            .map(|used| used.lock().unwrap_or_else(|p| p.into_inner()).clone())
            .unwrap_or_default()
    }
}

type SendFuture = Box<
    dyn Future<
            Output = Result<
                (
                    http::Response<WasiBody>,
                    Box<dyn Future<Output = Result<(), HttpError>> + Send>,
                ),
                HttpError,
            >,
        > + Send,
>;

impl WasiHttpHooks for HttpFilter {
    fn default_scheme(&mut self) -> Option<Scheme> {
        // A guest names its scheme; nothing is assumed for it.
        None
    }

    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _fut: Box<dyn Future<Output = Result<(), HttpError>> + Send>,
    ) -> SendFuture {
        let checked = check_request(
            self.grant.as_ref().ok_or(self.offline),
            request.method(),
            request.uri(),
        );
        let (allow, trust, credentials) = match (&self.grant, &checked) {
            (Some(g), Ok(c)) => (
                g.allow.clone(),
                c.https.then(|| g.trust.clone()),
                c.credentials
                    .iter()
                    .filter_map(|&i| g.credentials.get(i).cloned())
                    .collect::<Vec<_>>(),
            ),
            _ => (Vec::new(), None, Vec::new()),
        };
        let stop = Stop {
            deadline: self.deadline,
            cancel: self.cancel.clone(),
        };
        let redactor = self.redactor.clone();
        let used = self.used.get_or_insert_with(Arc::default).clone();
        let what = redactor
            .text(&format!("{} {}", request.method(), request.uri()))
            .into_owned();
        let traced = outbound_span(&request);
        let carry_trace = traced.is_some() && carries_trace(self.grant.as_ref(), request.uri());
        // A connection is a descriptor: it holds a place until it closes.
        let held = match self.descriptors.as_ref().map(Descriptors::take) {
            Some(Ok(held)) => Some(held),
            Some(Err(why)) => {
                tracing::info!("HTTP request {} refused: {why}", GuestText(&what));
                if let Some(span) = traced {
                    span.refused("open");
                    span.end(Err("refused"));
                }
                return Box::new(async { Err(HttpError::ConnectionLimitReached) });
            }
            None => None,
        };
        Box::new(async move {
            let refused = |r: Denial| {
                if let Some(span) = &traced {
                    span.refused("network");
                }
                let why = redactor.text(&r.to_string()).into_owned();
                tracing::warn!(
                    "HTTP request {} refused: {}",
                    GuestText(&what),
                    GuestText(&why)
                );
                r.to_error()
            };
            let checked = checked.map_err(refused)?;
            let server_name = checked.server_name();
            let addrs = match checked.destination {
                Destination::Addr(addr) => vec![addr],
                Destination::Name(host, port) => {
                    let found = stop
                        .bound(tokio::net::lookup_host((host.as_str(), port)), || {
                            HttpError::DnsTimeout
                        })
                        .await?
                        .map_err(|_| refused(Denial::NotFound(host.clone())))?;
                    check_resolved(&allow, &host, found.map(|a| a.ip()), port).map_err(refused)?
                }
            };
            let tls = match trust {
                None => None,
                Some(trust) => match tls::connector(&trust) {
                    Ok(connector) => Some((connector, server_name)),
                    Err(why) => {
                        tracing::error!("HTTP request {} failed: {why}", GuestText(&what));
                        return Err(HttpError::ConfigurationError);
                    }
                },
            };
            let mut request = request;
            let credentials: Vec<&Credential> = credentials.iter().collect();
            inject(request.headers_mut(), &credentials)?;
            if let Some(span) = &traced {
                if carry_trace {
                    crate::telemetry::inject_into(span.context(), request.headers_mut());
                }
                span.credentials(credentials.iter().map(|c| c.describe()).collect());
            }
            let sent = Sent {
                what: &what,
                redactor: &redactor,
                credentials: &credentials,
                used: &used,
            };
            let sent = send(request, &addrs, tls, options, stop, held, sent).await;
            if let Some(span) = traced {
                span.end(
                    sent.as_ref()
                        .map(|(r, _)| r.status().as_u16())
                        .map_err(|_| "failed"),
                );
            }
            sent
        })
    }
}

/// The CLIENT span of a guest's request, when exporting traces: its method,
/// scheme, host and port (never its path, query or headers). Ended, with a
/// refusal or the response's status, by the future that sends it.
fn outbound_span(request: &http::Request<WasiBody>) -> Option<crate::telemetry::Outbound> {
    if !crate::telemetry::on() {
        return None;
    }
    let uri = request.uri();
    let scheme = uri.scheme_str().unwrap_or("http");
    let port = uri
        .port_u16()
        .unwrap_or(if scheme == "https" { 443 } else { 80 });
    let host = uri.host().unwrap_or_default();
    crate::telemetry::Outbound::start(request.method().as_str(), scheme, host, port)
}

/// Whether the host writes its `traceparent` into a request to `uri`: not
/// when a pattern of the grant written with `trace = false` matches it.
fn carries_trace(grant: Option<&NetworkGrant>, uri: &http::Uri) -> bool {
    let Some(grant) = grant.filter(|g| !g.untraced.is_empty()) else {
        return true;
    };
    let scheme = uri.scheme_str().unwrap_or("http");
    let port = uri
        .port_u16()
        .unwrap_or(if scheme == "https" { 443 } else { 80 });
    let host = uri.host().unwrap_or_default();
    !grant
        .untraced
        .iter()
        .any(|p| p.matches_host(scheme, host, port))
}

/// When a request must give up: the call's deadline or its cancellation.
#[derive(Clone)]
struct Stop {
    deadline: Instant,
    cancel: CancelToken,
}

impl Stop {
    /// Resolves when the call is out of time or cancelled.
    fn reached(&self) -> Pin<Box<dyn Future<Output = ()> + Send + Sync>> {
        let (deadline, cancel) = (self.deadline, self.cancel.clone());
        Box::pin(async move {
            loop {
                let now = Instant::now();
                if cancel.is_cancelled() || now >= deadline {
                    return;
                }
                tokio::time::sleep((deadline - now).min(super::TICK)).await;
            }
        })
    }

    /// Runs `work` until it ends or the call stops (then `err()`), and at
    /// most `limit` when given.
    async fn bound<T>(
        &self,
        work: impl Future<Output = T>,
        err: impl Fn() -> HttpError,
    ) -> Result<T, HttpError> {
        self.bound_for(work, None, err).await
    }

    async fn bound_for<T>(
        &self,
        work: impl Future<Output = T>,
        limit: Option<Duration>,
        err: impl Fn() -> HttpError,
    ) -> Result<T, HttpError> {
        let limit = limit.unwrap_or(Duration::MAX);
        tokio::select! {
            out = tokio::time::timeout(limit, work) => out.map_err(|_| err()),
            () = self.reached() => Err(err()),
        }
    }
}

/// What a request's log lines say about it, and the credentials it
/// carries, recorded as used once a connection to the server stands.
struct Sent<'a> {
    /// `METHOD URL`, redacted.
    what: &'a str,
    redactor: &'a Redactor,
    credentials: &'a [&'a Credential],
    used: &'a Mutex<Vec<String>>,
}

impl Sent<'_> {
    fn record_credentials(&self) {
        if self.credentials.is_empty() {
            return;
        }
        let mut used = self.used.lock().unwrap_or_else(|p| p.into_inner());
        for c in self.credentials {
            let described = c.describe();
            if !used.contains(&described) {
                used.push(described);
            }
        }
    }
}

/// A connection's byte stream: plain TCP, or TLS over it.
trait Io: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send> Io for T {}

/// Sends `request` over HTTP/1.1 to the first of `addrs` that accepts a
/// connection, through TLS to the given server name when `tls` is set.
/// Every address was checked; no name is resolved here.
async fn send(
    mut request: http::Request<WasiBody>,
    addrs: &[SocketAddr],
    tls: Option<(tokio_rustls::TlsConnector, String)>,
    options: Option<RequestOptions>,
    stop: Stop,
    held: Option<Held>,
    sent: Sent<'_>,
) -> Result<
    (
        http::Response<WasiBody>,
        Box<dyn Future<Output = Result<(), HttpError>> + Send>,
    ),
    HttpError,
> {
    let options = options.unwrap_or_default();
    let mut last = HttpError::ConnectionRefused;
    let mut stream = None;
    for addr in addrs {
        let connect = tokio::net::TcpStream::connect(*addr);
        match stop
            .bound_for(connect, options.connect_timeout, || {
                HttpError::ConnectionTimeout
            })
            .await?
        {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last = HttpError::Connect(e),
        }
    }
    let stream = stream.ok_or(last)?;
    let stream: Box<dyn Io> = match tls {
        None => Box::new(stream),
        Some((connector, host)) => {
            let name = rustls::pki_types::ServerName::try_from(host.clone())
                .map_err(|_| HttpError::HttpRequestUriInvalid)?;
            // Bounded like connecting: the guest's connect timeout, and the
            // call's deadline (a server that accepts and never answers).
            let handshake = stop
                .bound_for(
                    connector.connect(name, stream),
                    options.connect_timeout,
                    || HttpError::ConnectionTimeout,
                )
                .await;
            match handshake {
                Ok(Ok(tls)) => Box::new(tls),
                Ok(Err(err)) => {
                    let (code, words) = tls::handshake_failure(&err, &host);
                    let words = sent.redactor.text(&words).into_owned();
                    tracing::warn!(
                        "HTTP request {} failed: {}",
                        GuestText(sent.what),
                        GuestText(&words)
                    );
                    return Err(code);
                }
                Err(timeout) => {
                    tracing::info!(
                        "HTTP request {} stopped: no TLS handshake with {} before the call's \
                         deadline or its connect timeout (limits.time)",
                        GuestText(sent.what),
                        GuestText(&sent.redactor.text(&host))
                    );
                    return Err(timeout);
                }
            }
        }
    };
    sent.record_credentials();
    let (mut sender, conn) = stop
        .bound(
            hyper::client::conn::http1::handshake(TokioIo::new(stream)),
            || HttpError::ConnectionTimeout,
        )
        .await??;

    // On the wire the request line carries only the path (the authority is
    // in `Host`, set by wasmtime-wasi-http from the checked URL).
    let path = request
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_string();
    *request.uri_mut() = http::Uri::builder()
        .path_and_query(path)
        .build()
        .map_err(|_| HttpError::HttpRequestUriInvalid)?;

    let mut conn = Box::pin(conn);
    let mut conn_done = false;
    let response = {
        let mut sending = Box::pin(stop.bound_for(
            sender.send_request(request),
            options.first_byte_timeout,
            || HttpError::ConnectionReadTimeout,
        ));
        // Drive the connection while waiting for the response head.
        std::future::poll_fn(|cx| {
            if let Poll::Ready(out) = sending.as_mut().poll(cx) {
                return Poll::Ready(out);
            }
            if !conn_done && let Poll::Ready(result) = conn.as_mut().poll(cx) {
                conn_done = true;
                if let Err(e) = result {
                    return Poll::Ready(Ok(Err(e)));
                }
                return sending.as_mut().poll(cx);
            }
            Poll::Pending
        })
        .await??
    };

    let body_stop = stop.reached();
    let response = response.map(|incoming| {
        StoppableBody {
            inner: incoming,
            stop: body_stop,
        }
        .boxed_unsync()
    });
    let io_stop = stop.clone();
    let io: Box<dyn Future<Output = Result<(), HttpError>> + Send> = Box::new(async move {
        let _held = held;
        if conn_done {
            return Ok(());
        }
        io_stop
            .bound(conn, || HttpError::HttpResponseTimeout)
            .await?
            .map_err(HttpError::from)
    });
    Ok((response, io))
}

/// A response body that ends with an error when the call stops.
struct StoppableBody {
    inner: hyper::body::Incoming,
    stop: Pin<Box<dyn Future<Output = ()> + Send + Sync>>,
}

impl Body for StoppableBody {
    type Data = Bytes;
    type Error = HttpError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, HttpError>>> {
        if self.stop.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Some(Err(HttpError::HttpResponseTimeout)));
        }
        let frame = ready!(Pin::new(&mut self.inner).poll_frame(cx));
        Poll::Ready(frame.map(|f| f.map_err(HttpError::from)))
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
