//! The exporters' HTTP: one request per export over hyper's HTTP/1.1
//! client, TLS by the process's one rustls provider (`ring`, the
//! connector `serve` hands in), on the server's tokio runtime. The SDK's
//! batching threads poll [`HttpClient::send_bytes`] outside any runtime,
//! so the request itself is spawned on the runtime's handle and awaited.

use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::rt::TokioIo;
use opentelemetry_http::{HttpClient, HttpError};

/// At most this long for one export, connecting included.
const TIMEOUT: Duration = Duration::from_secs(10);
/// A collector's answer is a small protobuf; more is not read.
const MAX_ANSWER: usize = 64 * 1024;

/// Sends exports from the threads of the SDK's processors.
#[derive(Clone)]
pub(super) struct Client {
    pub runtime: tokio::runtime::Handle,
    pub tls: tokio_rustls::TlsConnector,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("telemetry::Client")
    }
}

#[async_trait::async_trait]
impl HttpClient for Client {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let tls = self.tls.clone();
        let sent = self
            .runtime
            .spawn(async move { tokio::time::timeout(TIMEOUT, send(request, tls)).await });
        match sent.await {
            Ok(Ok(answer)) => answer,
            Ok(Err(_)) => Err(format!("no answer from the collector within {TIMEOUT:?}").into()),
            Err(err) => Err(format!("the export stopped: {err}").into()),
        }
    }
}

/// A byte stream to the collector: plain TCP, or TLS over it.
trait Io: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send> Io for T {}

async fn send(
    request: Request<Bytes>,
    tls: tokio_rustls::TlsConnector,
) -> Result<Response<Bytes>, HttpError> {
    let uri = request.uri().clone();
    let host = uri.host().ok_or("the OTLP endpoint names no host")?;
    let https = uri.scheme_str() == Some("https");
    let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let tcp = tokio::net::TcpStream::connect((host.as_str(), port)).await?;
    let stream: Box<dyn Io> = match https {
        false => Box::new(tcp),
        true => {
            let name = rustls::pki_types::ServerName::try_from(host.clone())?;
            Box::new(tls.connect(name, tcp).await?)
        }
    };
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(connection);
    let (mut parts, body) = request.into_parts();
    let authority = uri.authority().map(|a| a.as_str().to_string());
    parts.uri = uri
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .parse()
        .map_err(|_| "the OTLP endpoint's path is not valid")?;
    if let Some(authority) = authority {
        parts.headers.insert(http::header::HOST, authority.parse()?);
    }
    let response = sender
        .send_request(Request::from_parts(parts, Full::new(body)))
        .await?;
    let (parts, body) = response.into_parts();
    let body = Limited::new(body, MAX_ANSWER)
        .collect()
        .await
        .map_err(|err| format!("the collector's answer: {err}"))?
        .to_bytes();
    Ok(Response::from_parts(parts, body))
}
