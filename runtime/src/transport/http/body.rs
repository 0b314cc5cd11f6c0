//! What the HTTP transport answers with: plain and JSON responses, JSON-RPC
//! errors with an HTTP status, and SSE streams fed by an outbox through a
//! bounded body (a client that does not read holds the stream still, it
//! does not grow it).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::{Body, Frame, SizeHint};
use hyper::header::{self, HeaderValue};
use hyper::{Response, StatusCode};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::protocol::jsonrpc;
use crate::transport::calls::Refused;

pub type BoxBody = http_body_util::combinators::BoxBody<Bytes, Infallible>;

/// SSE events queued toward one client before the stream waits for it.
const STREAM_QUEUE: usize = 16;

fn full(bytes: impl Into<Bytes>) -> BoxBody {
    Full::new(bytes.into()).boxed()
}

pub fn plain(status: StatusCode, text: &str) -> Response<BoxBody> {
    typed(status, text.to_string(), "text/plain; charset=utf-8")
}

pub fn json(status: StatusCode, value: &Value) -> Response<BoxBody> {
    typed(status, crate::json::to_string(value), "application/json")
}

/// A response with `status`, `body` and its content type.
pub fn typed(status: StatusCode, body: String, content_type: &'static str) -> Response<BoxBody> {
    let mut response = Response::new(full(body));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// An HTTP error with a JSON-RPC error body (id null), as MCP clients expect.
pub fn rpc_error_status(status: StatusCode, message: &str) -> Response<BoxBody> {
    let error = jsonrpc::ErrorObject::new(jsonrpc::INVALID_REQUEST, message);
    json(
        status,
        &jsonrpc::error_response(&jsonrpc::Id::null(), &error),
    )
}

pub fn empty(status: StatusCode) -> Response<BoxBody> {
    let mut response = Response::new(full(Bytes::new()));
    *response.status_mut() = status;
    response
}

/// 503 with `Retry-After`: too many calls at once.
pub fn busy() -> Response<BoxBody> {
    retry_later("busy: too many calls in flight; retry shortly\n")
}

/// 503 while the server drains: new work goes to another replica; the
/// load balancer may retry it there at once.
pub fn draining() -> Response<BoxBody> {
    retry_later(
        "draining: this server is shutting down and takes no new calls; retry (another replica)\n",
    )
}

/// The 503 for a request that was not let in.
pub fn refused(why: Refused) -> Response<BoxBody> {
    match why {
        Refused::Draining => draining(),
        Refused::Busy => busy(),
    }
}

/// 503 with `Retry-After: 1` and `text`.
pub fn retry_later(text: &str) -> Response<BoxBody> {
    let mut response = plain(StatusCode::SERVICE_UNAVAILABLE, text);
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

pub fn not_allowed(allow: &'static str) -> Response<BoxBody> {
    let mut response = plain(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n");
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static(allow));
    response
}

pub fn sse_event(message: &Value) -> Bytes {
    let mut event = b"event: message\ndata: ".to_vec();
    crate::json::write(&mut event, message);
    event.extend_from_slice(b"\n\n");
    Bytes::from(event)
}

/// An SSE response and the sender that feeds it.
pub fn sse() -> (mpsc::Sender<Bytes>, Response<BoxBody>) {
    let (tx, rx) = mpsc::channel(STREAM_QUEUE);
    let mut response = Response::new(ChannelBody { rx }.boxed());
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    (tx, response)
}

/// A request's future that answers `Err(Panicked)` when it panics, as a
/// spawned task's `JoinError` would: a bug gives a 500, not a reset
/// connection. It is not polled again after that.
pub struct CatchPanic<F>(pub Pin<Box<F>>);

pub struct Panicked;

impl<F: Future> Future for CatchPanic<F> {
    type Output = Result<F::Output, Panicked>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = self.0.as_mut();
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(Poll::Ready(value)) => Poll::Ready(Ok(value)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(_) => Poll::Ready(Err(Panicked)),
        }
    }
}

/// A response body fed through a bounded channel (an SSE stream).
struct ChannelBody {
    rx: mpsc::Receiver<Bytes>,
}

impl Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.rx
            .poll_recv(cx)
            .map(|m| m.map(|bytes| Ok(Frame::data(bytes))))
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}
