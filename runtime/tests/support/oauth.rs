//! A stand-in OAuth authorization server on loopback for the tests: a
//! signing key of the test's own (ES256) and an issuer serving RFC 8414
//! metadata and its JWKS (used by `serve_oauth` and `telemetry`).

use std::sync::{Arc, OnceLock};

use base64::Engine as _;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

use super::servers::{Answer, Server};

/// A signing key (ES256) and its JWK.
pub struct Key {
    pub kid: String,
    encoding: EncodingKey,
    pub jwk: Value,
}

impl Key {
    pub fn new(kid: &str) -> Key {
        let pair = rcgen::KeyPair::generate().expect("P-256 key");
        let raw = pair.public_key_raw();
        let b64 = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
        Key {
            kid: kid.to_string(),
            encoding: EncodingKey::from_ec_der(&pair.serialize_der()),
            jwk: json!({"kty": "EC", "crv": "P-256", "kid": kid, "use": "sig", "alg": "ES256",
                        "x": b64(&raw[1..33]), "y": b64(&raw[33..65])}),
        }
    }

    pub fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &self.encoding).expect("sign")
    }

    /// Signed under a header of the test's own (ES256, this key's `kid`,
    /// and `extra`), which `Header` could not carry.
    pub fn sign_with_header(&self, extra: Value, claims: &Value) -> String {
        let mut header = json!({"alg": "ES256", "typ": "JWT", "kid": self.kid});
        for (name, value) in extra.as_object().expect("an object") {
            header[name] = value.clone();
        }
        let b64 =
            |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
        let input = format!("{}.{}", b64(&header), b64(claims));
        let signature =
            jsonwebtoken::crypto::sign(input.as_bytes(), &self.encoding, Algorithm::ES256)
                .expect("sign");
        format!("{input}.{signature}")
    }
}

/// A stand-in authorization server: RFC 8414 metadata and a JWKS.
pub struct Issuer {
    pub server: Server,
    pub url: String,
}

impl Issuer {
    pub fn new(keys: Vec<Value>) -> Issuer {
        let url: Arc<OnceLock<String>> = Arc::default();
        let seen = url.clone();
        let server = Server::http(move |request| {
            let issuer = seen.get().cloned().unwrap_or_default();
            match request.path.as_str() {
                "/.well-known/oauth-authorization-server" => Answer::ok(
                    json!({"issuer": issuer, "jwks_uri": format!("{issuer}/jwks"),
                           "token_endpoint": format!("{issuer}/token")})
                    .to_string(),
                ),
                "/jwks" => Answer::ok(json!({"keys": keys}).to_string()),
                _ => Answer::status(404, "not found"),
            }
        });
        let issuer = format!("http://127.0.0.1:{}", server.port());
        url.set(issuer.clone()).expect("set once");
        Issuer {
            server,
            url: issuer,
        }
    }
}
