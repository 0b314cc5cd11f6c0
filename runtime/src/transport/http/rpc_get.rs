//! `GET /rpc?method=NAME&params=JSON&id=ID` and `GET /rpc/openrpc.json`.
//!
//! A GET call is a POST of the same request: the same front door (tokens,
//! draining, the calls in flight), then the call [`rpc::handle`] makes
//! ([`rpc::handle_get`]), so the same grants, limits, audit entry and
//! errors. Only a read-only tool that is
//! not destructive may be called so; any other is 405 (`Allow: POST`) with
//! a JSON-RPC error that says to POST. A successful call of an idempotent
//! tool may be cached by the client (`Cache-Control: private, max-age=60`,
//! `Vary: Authorization`); every other answer is `no-store`.

use std::net::SocketAddr;
use std::sync::Arc;

use hyper::header::{self, HeaderValue};
use hyper::{Response, StatusCode};

use super::body::{BoxBody, json, refused};
use super::shared::Shared;
use crate::policy::Token;
use crate::protocol::openrpc;
use crate::protocol::rpc::{self, GetCall};

/// What a client may cache a successful idempotent GET call for.
const CACHEABLE: &str = "private, max-age=60";

/// `GET /rpc`: one call from the query.
pub(super) async fn call(
    shared: &Arc<Shared>,
    query: &str,
    token: Option<Token>,
    peer: SocketAddr,
) -> Response<BoxBody> {
    let (request, cacheable) = match rpc::get_call(&shared.server, token.as_ref(), query) {
        GetCall::Run { request, cacheable } => (request, cacheable),
        GetCall::PostOnly(error) => {
            let mut response = uncached(json(StatusCode::METHOD_NOT_ALLOWED, &error));
            response
                .headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("POST"));
            return response;
        }
        GetCall::Bad(error) => return uncached(json(StatusCode::BAD_REQUEST, &error)),
    };
    let _place = match shared.calls.admit_call() {
        Ok(place) => place,
        Err(why) => return refused(why),
    };
    let answer = rpc::handle_get(&shared.server, token.as_ref(), peer, request).await;
    let mut response = json(StatusCode::OK, &answer);
    if cacheable && answer.get("error").is_none() {
        let headers = response.headers_mut();
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(CACHEABLE));
        headers.insert(header::VARY, HeaderValue::from_static("authorization"));
        response
    } else {
        uncached(response)
    }
}

/// `GET /rpc/openrpc.json`: the document of the tools `token` may use.
pub(super) fn document(shared: &Shared, token: Option<&Token>) -> Response<BoxBody> {
    let document = openrpc::document(&shared.server.runtime.catalog(), token);
    // It changes with hot reload.
    uncached(json(StatusCode::OK, &document))
}

fn uncached(mut response: Response<BoxBody>) -> Response<BoxBody> {
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}
