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

/// The token's algorithm, if `allowed` has it, and the id of its key. A
/// header that asks for more than a plain JWS is refused (see
/// [`plain_jws`]). Nothing else of the header is used: `jku`, `jwk`, `x5u`
/// and `x5c` name keys the token's sender chose, and a key is only ever
/// one of the issuer's published set, picked by `kid`.
pub fn algorithm(
    token: &str,
    allowed: &[Algorithm],
) -> Result<(Algorithm, Option<String>), Refused> {
    plain_jws(token)?;
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

/// Refuses a header that changes how the token must be read: `crit` names
/// extensions the recipient must understand or refuse the token (RFC 7515
/// §4.1.11; airlock understands none), and `b64` other than `true` says the
/// payload is not base64url-encoded (RFC 7797), which jsonwebtoken would
/// read as if it were.
fn plain_jws(token: &str) -> Result<(), Refused> {
    let encoded = token.split('.').next().unwrap_or_default();
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(encoded)
        .map_err(|_| Refused::NotAJwt)?;
    let header: Map<String, Value> =
        serde_json::from_slice(&bytes).map_err(|e| Refused::Invalid(format!("header: {e}")))?;
    if let Some(crit) = header.get("crit") {
        return Err(Refused::Invalid(format!(
            "its header's `crit` ({crit}) names extensions airlock does not understand \
             (RFC 7515 §4.1.11)"
        )));
    }
    match header.get("b64") {
        None | Some(Value::Bool(true)) => Ok(()),
        Some(b64) => Err(Refused::Invalid(format!(
            "its header says `b64: {b64}`: an unencoded payload (RFC 7797) is not accepted"
        ))),
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::EncodingKey;
    use serde_json::json;

    const RESOURCE: &str = "https://airlock.test/mcp";
    const ISSUER: &str = "https://idp.test";

    /// A P-256 key pair: the private half to sign, the public half to verify.
    fn key_pair() -> (EncodingKey, DecodingKey, Value) {
        let pair = rcgen::KeyPair::generate().expect("P-256 key");
        let raw = pair.public_key_raw();
        let b64 = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
        let (x, y) = (b64(&raw[1..33]), b64(&raw[33..65]));
        let decoding = DecodingKey::from_ec_components(&x, &y).expect("public key");
        let jwk = json!({"kty": "EC", "crv": "P-256", "x": x, "y": y});
        (
            EncodingKey::from_ec_der(&pair.serialize_der()),
            decoding,
            jwk,
        )
    }

    /// A token with exactly `header`, signed with `key`.
    fn mint(header: &Value, key: &EncodingKey) -> String {
        let b64 =
            |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("clock")
            .as_secs();
        let claims = json!({"iss": ISSUER, "sub": "alice", "aud": RESOURCE,
                            "exp": now + 300, "scope": "everything"});
        let input = format!("{}.{}", b64(header), b64(&claims));
        let signature =
            jsonwebtoken::crypto::sign(input.as_bytes(), key, Algorithm::ES256).expect("sign");
        format!("{input}.{signature}")
    }

    /// What the gate does with a token: its header, then its signature with
    /// the issuer's key.
    fn check(token: &str, issuer_key: &DecodingKey) -> Result<Verified, Refused> {
        let (alg, _kid) = algorithm(token, &[Algorithm::ES256])?;
        let expected = Expected {
            issuer: ISSUER,
            resource: RESOURCE,
            leeway: Duration::from_secs(60),
        };
        verify(token, issuer_key, alg, &expected)
    }

    #[test]
    fn a_plain_token_of_the_issuer_is_accepted() {
        let (signing, public, _) = key_pair();
        let token = mint(
            &json!({"alg": "ES256", "typ": "JWT", "kid": "k1"}),
            &signing,
        );
        let verified = check(&token, &public).expect("accepted");
        assert_eq!(verified.subject, "alice");
        assert_eq!(verified.scopes, ["everything"]);
    }

    #[test]
    fn a_header_with_crit_or_an_unencoded_payload_is_refused() {
        let (signing, public, _) = key_pair();
        for header in [
            json!({"alg": "ES256", "crit": ["exp"], "exp": 1}),
            json!({"alg": "ES256", "crit": ["http://example.com/ext"], "http://example.com/ext": true}),
            json!({"alg": "ES256", "crit": []}),
            json!({"alg": "ES256", "b64": false, "crit": ["b64"]}),
            json!({"alg": "ES256", "b64": false}),
            json!({"alg": "ES256", "b64": "false"}),
        ] {
            let token = mint(&header, &signing);
            let refused = check(&token, &public).expect_err(&header.to_string());
            assert!(
                matches!(&refused, Refused::Invalid(why) if why.contains("crit") || why.contains("b64")),
                "{header}: {refused:?}"
            );
            assert_eq!(
                refused.client_message(),
                "the access token is not valid here"
            );
        }
        // `b64: true` is the default spelt out: nothing changes.
        let token = mint(&json!({"alg": "ES256", "b64": true}), &signing);
        assert!(check(&token, &public).is_ok());
    }

    #[test]
    fn keys_the_token_names_itself_are_never_used() {
        let (issuer_signing, issuer_public, _) = key_pair();
        let (forger, _, forger_jwk) = key_pair();
        // Signed by the forger, carrying its key or where to find it.
        for header in [
            json!({"alg": "ES256", "jwk": forger_jwk}),
            json!({"alg": "ES256", "jku": "https://forger.test/jwks"}),
            json!({"alg": "ES256", "x5u": "https://forger.test/cert.pem"}),
            json!({"alg": "ES256", "kid": "k1", "jwk": forger_jwk, "jku": "https://forger.test/jwks"}),
        ] {
            let token = mint(&header, &forger);
            assert!(
                matches!(check(&token, &issuer_public), Err(Refused::NoKey(_))),
                "{header}"
            );
        }
        // The same headers on a token the issuer signed change nothing.
        let token = mint(
            &json!({"alg": "ES256", "jku": "https://forger.test/jwks"}),
            &issuer_signing,
        );
        assert!(check(&token, &issuer_public).is_ok());
    }

    #[test]
    fn alg_none_and_symmetric_algorithms_are_refused() {
        let (signing, public, _) = key_pair();
        for header in [
            json!({"alg": "none"}),
            json!({"alg": "None"}),
            json!({"alg": "HS256"}),
            json!({"alg": "RS256"}),
        ] {
            let token = mint(&header, &signing);
            let refused = check(&token, &public).expect_err(&header.to_string());
            assert!(
                matches!(refused, Refused::Invalid(_) | Refused::Algorithm(_)),
                "{header}: {refused:?}"
            );
        }
    }
}
