//! Who is asking: the request's bearer token checked against the policy's
//! `[[tokens]]`, else verified as an access token of an `[oauth]` issuer;
//! a refusal is the response (401, or 403 for scopes that give nothing)
//! with the challenge that tells a client where to get a token.

use hyper::{Response, StatusCode};

use super::body::{BoxBody, plain};
use super::checks::{authenticate, bearer, closing};
use super::oauth::{Denied, OAuthGate};
use crate::policy::Token;

/// The token of a request: one of the policy's `[[tokens]]`, else an
/// access token `gate` admits; `Ok(None)` when the policy has neither
/// (everything is open). A refusal is the response to send.
#[allow(clippy::result_large_err)]
pub async fn authorize(
    tokens: &[Token],
    gate: Option<&OAuthGate>,
    headers: &hyper::header::HeaderMap,
) -> Result<Option<Token>, Response<BoxBody>> {
    let Some(gate) = gate else {
        return authenticate(tokens, headers);
    };
    let bearer = bearer(headers)?;
    if let Some(found) = bearer.and_then(|b| tokens.iter().find(|t| t.accepts(b))) {
        return Ok(Some(found.clone()));
    }
    let denied = match bearer {
        None => None,
        Some(bearer) => match gate.admit(bearer).await {
            Ok(token) => return Ok(Some(token)),
            Err(denied) => {
                tracing::info!("refused an access token: {}", denied.reason());
                Some(denied)
            }
        },
    };
    let (status, text) = match &denied {
        Some(Denied::Scope { .. }) => (
            StatusCode::FORBIDDEN,
            "forbidden: the access token's scopes give nothing on this server\n",
        ),
        _ => (
            StatusCode::UNAUTHORIZED,
            "unauthorized: a valid access token for this server is required \
             (its authorization servers are in /.well-known/oauth-protected-resource)\n",
        ),
    };
    let mut response = plain(status, text);
    response.headers_mut().insert(
        hyper::header::WWW_AUTHENTICATE,
        gate.challenge(denied.as_ref()),
    );
    Err(closing(response))
}
