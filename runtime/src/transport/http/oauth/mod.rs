//! OAuth 2.1 resource server, as MCP's authorization section prescribes
//! for an HTTP server: access tokens from the issuers the policy's
//! `[oauth]` trusts, verified on every request ([`verify`]) with the
//! issuers' keys ([`keys`]); Protected Resource Metadata (RFC 9728) at
//! `/.well-known/oauth-protected-resource` and its path-suffixed form; the
//! `WWW-Authenticate` challenges of a 401 (no valid token) and a 403 (a
//! token whose scopes give nothing here).
//!
//! The policy's static `[[tokens]]` keep working beside it: a bearer that
//! is one of them is that token; any other is verified as an access token.

pub mod keys;
mod remembered;
pub mod verify;

use std::sync::Arc;

use http::HeaderValue;
use jsonwebtoken::Algorithm;
use serde_json::{Value, json};

use crate::policy::{Identity, OAuth, Roots, Token, Trust};
use keys::{IssuerKeys, Reach};
use remembered::Remembered;
use verify::{Expected, Refused};

/// Why a bearer token is not let in.
#[derive(Debug)]
pub enum Denied {
    /// 401: not a valid token for this server.
    Invalid(Refused),
    /// 403: valid, but none of its scopes gives anything here.
    Scope { had: Vec<String> },
}

/// The resource server: the policy's `[oauth]` and the issuers' keys.
pub struct OAuthGate {
    policy: OAuth,
    algorithms: Vec<Algorithm>,
    issuers: Vec<Arc<IssuerKeys>>,
    /// Tokens admitted already, until they expire.
    remembered: Remembered,
}

impl OAuthGate {
    pub fn new(policy: OAuth) -> OAuthGate {
        let algorithms = policy
            .algorithms
            .iter()
            .filter_map(|name| name.parse().ok())
            .collect();
        let tls = crate::sandbox::tls_connector(&Trust {
            roots: Roots::Bundled,
            ca: policy.ca.clone(),
        })
        .map_err(|e| e.to_string());
        let issuers = policy
            .issuers
            .iter()
            .map(|issuer| {
                let plain = match (policy.plain_http, url::Url::parse(issuer)) {
                    (true, Ok(url)) => vec![authority(&url)],
                    _ => Vec::new(),
                };
                let reach = Reach {
                    tls: tls.clone(),
                    plain,
                };
                IssuerKeys::new(issuer.clone(), reach)
            })
            .collect();
        OAuthGate {
            policy,
            algorithms,
            issuers,
            remembered: Remembered::default(),
        }
    }

    /// Fetches every issuer's keys, so the first tokens do not wait; an
    /// issuer that cannot be reached now is logged and tried again when a
    /// token of it arrives.
    pub async fn prefetch(&self) {
        // Side by side: a slow issuer does not hold up the others' keys.
        for issuer in self.issuers.iter().cloned() {
            tokio::spawn(async move {
                match issuer.prefetch().await {
                    Ok(n) => tracing::info!("OAuth: {n} signing key(s) of {}", issuer.issuer),
                    Err(err) => tracing::warn!(
                        "OAuth: cannot fetch the keys of {}: {err}; its tokens are refused \
                         until they can be (tried again at most every {} s)",
                        issuer.issuer,
                        keys::RETRY_AFTER.as_secs()
                    ),
                }
            });
        }
    }

    /// The paths Protected Resource Metadata is served at: the resource's
    /// path-suffixed form and the bare one.
    pub fn serves_metadata_at(&self, path: &str) -> bool {
        path == "/.well-known/oauth-protected-resource" || path == self.policy.metadata_url().path()
    }

    /// The Protected Resource Metadata document (RFC 9728 §2).
    pub fn metadata(&self) -> Value {
        json!({
            "resource": self.policy.resource,
            "authorization_servers": self.policy.issuers,
            "scopes_supported": self.policy.scopes_supported(),
            "bearer_methods_supported": ["header"],
            "resource_signing_alg_values_supported": self.policy.algorithms,
            "resource_name": "airlock",
        })
    }

    /// The `WWW-Authenticate` value of a refusal (RFC 6750 §3, RFC 9728
    /// §5.1): where the metadata is, and for a refused token why.
    pub fn challenge(&self, denied: Option<&Denied>) -> HeaderValue {
        let metadata = self.policy.metadata_url();
        // The scopes that give something here: what a client should ask
        // its authorization server for (MCP: "scope" in every challenge).
        let scope = self.policy.scopes_supported().join(" ");
        let mut value = format!("Bearer resource_metadata=\"{metadata}\", scope=\"{scope}\"");
        match denied {
            None => {}
            Some(Denied::Invalid(refused)) => value.push_str(&format!(
                ", error=\"invalid_token\", error_description=\"{}\"",
                refused.client_message()
            )),
            Some(Denied::Scope { .. }) => value.push_str(", error=\"insufficient_scope\""),
        }
        // Built from the policy's URL and fixed words: always a valid
        // header value; the fallback only keeps a bug from panicking.
        HeaderValue::from_str(&value).unwrap_or(HeaderValue::from_static("Bearer"))
    }

    /// Verifies `bearer` and gives what its scopes allow, as a token.
    pub async fn admit(&self, bearer: &str) -> Result<Token, Denied> {
        if let Some(token) = self.remembered.get(bearer) {
            return Ok(token);
        }
        let verified = self.verify(bearer).await.map_err(Denied::Invalid)?;
        let scopes: Vec<&str> = verified.scopes.iter().map(String::as_str).collect();
        let Some(access) = self.policy.access(&scopes, &verified.claims) else {
            return Err(Denied::Scope {
                had: verified.scopes.clone(),
            });
        };
        let gives = access.gives;
        let token = Token {
            resources: gives.resources,
            prompts: gives.prompts,
            ..Token::issued(
                Identity {
                    issuer: verified.issuer,
                    subject: verified.subject,
                    client_id: verified.client_id,
                },
                gives.tools,
                access.metrics,
            )
        };
        self.remembered.keep(bearer, &token, verified.expires);
        Ok(token)
    }

    async fn verify(&self, bearer: &str) -> Result<verify::Verified, Refused> {
        let issuer = verify::claimed_issuer(bearer)?;
        let keys = self
            .issuers
            .iter()
            .find(|k| k.issuer == issuer)
            .ok_or(Refused::UnknownIssuer(issuer))?;
        let (alg, kid) = verify::algorithm(bearer, &self.algorithms)?;
        let candidates = keys
            .keys_for(kid.as_deref())
            .await
            .map_err(Refused::NoKey)?;
        let expected = Expected {
            issuer: &keys.issuer,
            resource: &self.policy.resource,
            leeway: self.policy.leeway,
        };
        let mut last = Refused::NoKey("no key".into());
        for key in &candidates {
            match verify::verify(bearer, key, alg, &expected) {
                Ok(verified) => return Ok(verified),
                // Another key of the set may be the one (no `kid`).
                Err(e @ (Refused::NoKey(_) | Refused::Algorithm(_))) => last = e,
                Err(e) => return Err(e),
            }
        }
        Err(last)
    }
}

/// `host:port` of `url`, as the HTTP client's plain-HTTP list spells it.
fn authority(url: &url::Url) -> String {
    let host = url.host_str().unwrap_or("");
    match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_string(),
    }
}

impl Denied {
    /// For the operator's log.
    pub fn reason(&self) -> String {
        match self {
            Denied::Invalid(refused) => refused.to_string(),
            Denied::Scope { had } => format!(
                "its scopes ({}) give nothing here",
                match had.is_empty() {
                    true => "none".to_string(),
                    false => had.join(" "),
                }
            ),
        }
    }
}
