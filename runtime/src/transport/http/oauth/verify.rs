//! Verifying an access token (a JWT) with a key of its issuer: the
//! signature (an allow-listed asymmetric algorithm, the key's type matching
//! it), the issuer, the audience (this server's resource identifier, RFC
//! 8707) and the validity period. No I/O: the keys come from
//! [`super::keys`].
//!
//! The claims are read into typed fields: a token whose `exp` or `nbf` is
//! not a number is refused rather than having the check skipped.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;
use serde_json::{Map, Value};

/// Who a verified token speaks for, and what it may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub issuer: String,
    /// `sub`, else the client's id (a client-credentials token).
    pub subject: String,
    pub client_id: Option<String>,
    pub scopes: Vec<String>,
    /// `exp`, in Unix seconds.
    pub expires: u64,
    /// Every claim but the checked ones (`sub`, `groups`, `roles`, …), for
    /// `[[oauth.claims]]`.
    pub claims: Map<String, Value>,
}

/// Why a token is not accepted. What a client is told is
/// [`Refused::client_message`]; the rest goes to the log.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Refused {
    #[error("the bearer token is not a JWT")]
    NotAJwt,
    #[error("the token's issuer {0:?} is not one this server trusts")]
    UnknownIssuer(String),
    #[error("the token is signed with {0}, which the policy does not accept")]
    Algorithm(String),
    #[error("no key of the issuer verifies the token ({0})")]
    NoKey(String),
    #[error("the token is expired")]
    Expired,
    #[error("the token is not valid yet")]
    NotYetValid,
    #[error("the token is for another resource (its aud does not name this server)")]
    Audience,
    #[error("the token names no subject or client")]
    NoSubject,
    #[error("the token is invalid: {0}")]
    Invalid(String),
}

impl Refused {
    /// The `error_description` a client gets: what is wrong, not which
    /// check an attacker came closest to passing beyond that.
    pub fn client_message(&self) -> &'static str {
        match self {
            Refused::Expired => "the access token expired",
            Refused::NotYetValid => "the access token is not valid yet",
            Refused::Audience => "the access token is for another resource",
            _ => "the access token is not valid here",
        }
    }
}

/// The issuer a token claims, read before its signature is checked (to pick
/// the keys to check it with; nothing else is taken from it unverified).
pub fn claimed_issuer(token: &str) -> Result<String, Refused> {
    let mut parts = token.split('.');
    let (Some(_), Some(payload), Some(_), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(Refused::NotAJwt);
    };
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .map_err(|_| Refused::NotAJwt)?;
    #[derive(Deserialize)]
    struct Issuer {
        iss: String,
    }
    serde_json::from_slice::<Issuer>(&bytes)
        .map(|i| i.iss)
        .map_err(|_| Refused::Invalid("no `iss` claim".into()))
}

/// The token's algorithm, if `allowed` has it, and the id of its key.
pub fn algorithm(
    token: &str,
    allowed: &[Algorithm],
) -> Result<(Algorithm, Option<String>), Refused> {
    let header = jsonwebtoken::decode_header(token).map_err(|e| {
        // `none` and the HMACs' cousins that jsonwebtoken does not know
        // fail here, as "unknown variant".
        Refused::Invalid(format!("header: {e}"))
    })?;
    if !allowed.contains(&header.alg) {
        return Err(Refused::Algorithm(format!("{:?}", header.alg)));
    }
    Ok((header.alg, header.kid))
}

/// The audience claim: one resource or several.
#[derive(Deserialize)]
#[serde(untagged)]
enum Audience {
    One(String),
    Many(Vec<String>),
}

/// Scopes as `scope` ("a b") or `scp` (["a", "b"] or "a b").
#[derive(Deserialize)]
#[serde(untagged)]
enum Scopes {
    Words(String),
    List(Vec<String>),
}

impl Scopes {
    fn into_vec(self) -> Vec<String> {
        match self {
            Scopes::Words(words) => words.split_whitespace().map(String::from).collect(),
            Scopes::List(list) => list,
        }
    }
}

#[derive(Deserialize)]
struct Claims {
    iss: String,
    sub: Option<String>,
    aud: Audience,
    exp: u64,
    nbf: Option<u64>,
    scope: Option<Scopes>,
    scp: Option<Scopes>,
    client_id: Option<String>,
    azp: Option<String>,
    #[serde(flatten)]
    rest: Map<String, Value>,
}

/// What checking a token needs besides the key.
pub struct Expected<'a> {
    pub issuer: &'a str,
    /// This server's resource identifier.
    pub resource: &'a str,
    pub leeway: Duration,
}

/// Verifies `token`'s signature with `key` under `alg` (from
/// [`algorithm`]) and its claims against `expected`.
pub fn verify(
    token: &str,
    key: &DecodingKey,
    alg: Algorithm,
    expected: &Expected,
) -> Result<Verified, Refused> {
    let mut validation = Validation::new(alg);
    validation.algorithms = vec![alg];
    validation.set_issuer(&[expected.issuer]);
    validation.set_audience(&[expected.resource]);
    validation.set_required_spec_claims(&["exp", "iss", "aud"]);
    validation.leeway = expected.leeway.as_secs();
    validation.validate_nbf = true;
    let claims = jsonwebtoken::decode::<Claims>(token, key, &validation)
        .map_err(|e| {
            use jsonwebtoken::errors::ErrorKind;
            match e.kind() {
                ErrorKind::ExpiredSignature => Refused::Expired,
                ErrorKind::ImmatureSignature => Refused::NotYetValid,
                ErrorKind::InvalidAudience => Refused::Audience,
                ErrorKind::InvalidIssuer => Refused::UnknownIssuer(String::new()),
                ErrorKind::InvalidSignature => {
                    Refused::NoKey("the signature does not verify".into())
                }
                ErrorKind::InvalidAlgorithm => Refused::Algorithm(format!("{alg:?} with this key")),
                _ => Refused::Invalid(e.to_string()),
            }
        })?
        .claims;
    // jsonwebtoken checked these; checked again on the typed claims, so the
    // rule does not rest on how a library reads a malformed claim.
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let leeway = expected.leeway.as_secs();
    if claims.exp.saturating_add(leeway) < now {
        return Err(Refused::Expired);
    }
    if claims
        .nbf
        .is_some_and(|nbf| nbf > now.saturating_add(leeway))
    {
        return Err(Refused::NotYetValid);
    }
    let audiences = match claims.aud {
        Audience::One(one) => vec![one],
        Audience::Many(many) => many,
    };
    if !audiences.iter().any(|a| a == expected.resource) {
        return Err(Refused::Audience);
    }
    if claims.iss != expected.issuer {
        return Err(Refused::UnknownIssuer(claims.iss));
    }
    let mut rest = claims.rest;
    for (name, value) in [
        ("sub", &claims.sub),
        ("client_id", &claims.client_id),
        ("azp", &claims.azp),
    ] {
        if let Some(value) = value {
            rest.insert(name.into(), Value::String(value.clone()));
        }
    }
    let client_id = claims.client_id.or(claims.azp);
    let subject = claims
        .sub
        .or_else(|| client_id.clone())
        .filter(|s| !s.is_empty())
        .ok_or(Refused::NoSubject)?;
    let scopes = claims
        .scope
        .or(claims.scp)
        .map(Scopes::into_vec)
        .unwrap_or_default();
    Ok(Verified {
        issuer: claims.iss,
        subject,
        client_id,
        scopes,
        expires: claims.exp,
        claims: rest,
    })
}
