//! An issuer's signing keys: its `jwks_uri` found in its metadata (RFC
//! 8414, else OpenID Connect discovery), the key set fetched and cached.
//!
//! Bounded, so an issuer that is slow, huge or hostile costs little: each
//! document is read up to [`DOCUMENT_LIMIT`], each fetch (metadata and keys,
//! redirects included) within [`FETCH_TIMEOUT`], one fetch at a time per
//! issuer, and a key the cache lacks is looked for again at most every
//! [`RETRY_AFTER`] (a flood of tokens naming made-up key ids causes one
//! fetch, not one each). A request whose key is cached never waits for a
//! fetch: a cache older than [`FRESH_FOR`] is used while a refresh runs
//! beside it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use jsonwebtoken::DecodingKey;
use jsonwebtoken::jwk::{JwkSet, PublicKeyUse};
use serde::Deserialize;
use url::Url;

use crate::source::FetchLimits;
use crate::source::http::{Http, Request};
use crate::sync::lock;

/// The most of a metadata document or key set read.
pub const DOCUMENT_LIMIT: u64 = 256 * 1024;
/// The time one fetch (metadata, then keys) may take.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// How soon an unknown key, or a failed fetch, is tried again.
pub const RETRY_AFTER: Duration = Duration::from_secs(30);
/// How long a fetched key set is used before it is refreshed.
pub const FRESH_FOR: Duration = Duration::from_secs(3600);

/// How the issuer is reached: TLS settings, and whether plain HTTP to its
/// own host is allowed (a loopback issuer the policy marks `plain-http`).
#[derive(Clone)]
pub struct Reach {
    pub tls: Result<tokio_rustls::TlsConnector, String>,
    pub plain: Vec<String>,
}

struct Cached {
    keys: Vec<(Option<String>, DecodingKey)>,
    fetched: Option<Instant>,
    tried: Option<Instant>,
}

/// One issuer's keys.
pub struct IssuerKeys {
    /// The issuer as the policy writes it (and its tokens' `iss`).
    pub issuer: String,
    reach: Reach,
    cached: Mutex<Cached>,
    fetching: tokio::sync::Mutex<()>,
    /// A refresh of stale keys runs beside serving (one at a time).
    refreshing: AtomicBool,
}

impl IssuerKeys {
    pub fn new(issuer: String, reach: Reach) -> Arc<IssuerKeys> {
        Arc::new(IssuerKeys {
            issuer,
            reach,
            cached: Mutex::new(Cached {
                keys: Vec::new(),
                fetched: None,
                tried: None,
            }),
            fetching: tokio::sync::Mutex::new(()),
            refreshing: AtomicBool::new(false),
        })
    }

    /// The keys that may have signed a token naming `kid` (every key when
    /// it names none); fetched when the cache has none.
    pub async fn keys_for(self: &Arc<Self>, kid: Option<&str>) -> Result<Vec<DecodingKey>, String> {
        if let Some(found) = self.lookup(kid) {
            if self.is_stale()
                && !self.tried_recently()
                && !self.refreshing.swap(true, Ordering::AcqRel)
            {
                let keys = self.clone();
                tokio::spawn(async move {
                    {
                        let _fetching = keys.fetching.lock().await;
                        if keys.is_stale()
                            && let Err(err) = keys.refresh().await
                        {
                            tracing::warn!(
                                "OAuth: refreshing the keys of {}: {err}; the cached ones stay",
                                keys.issuer
                            );
                        }
                    }
                    keys.refreshing.store(false, Ordering::Release);
                });
            }
            return Ok(found);
        }
        let _fetching = self.fetching.lock().await;
        // Another request may have fetched while this one waited.
        if let Some(found) = self.lookup(kid) {
            return Ok(found);
        }
        if !self.tried_recently()
            && let Err(err) = self.refresh().await
        {
            tracing::warn!("OAuth: the keys of {}: {err}", self.issuer);
        }
        self.lookup(kid)
            .ok_or_else(|| match (kid, lock(&self.cached).fetched) {
                (_, None) => "the issuer's keys could not be fetched (the log says why)".into(),
                (Some(kid), Some(_)) => format!("the issuer's key set has no key {kid:?}"),
                (None, Some(_)) => "the issuer's key set has no key".into(),
            })
    }

    /// Fetches the key set now (at start, so the first token does not
    /// wait): how many keys it holds, or why it could not be fetched.
    pub async fn prefetch(&self) -> Result<usize, String> {
        let _fetching = self.fetching.lock().await;
        // A request that came first may have fetched it meanwhile: once is
        // enough (the flood test counts the fetches).
        if !self.is_stale() {
            return Ok(lock(&self.cached).keys.len());
        }
        self.refresh().await
    }

    fn lookup(&self, kid: Option<&str>) -> Option<Vec<DecodingKey>> {
        let cached = lock(&self.cached);
        let found: Vec<DecodingKey> = cached
            .keys
            .iter()
            .filter(|(id, _)| kid.is_none() || id.as_deref() == kid)
            .map(|(_, key)| key.clone())
            .collect();
        (!found.is_empty()).then_some(found)
    }

    fn is_stale(&self) -> bool {
        lock(&self.cached)
            .fetched
            .is_none_or(|at| at.elapsed() > FRESH_FOR)
    }

    fn tried_recently(&self) -> bool {
        lock(&self.cached)
            .tried
            .is_some_and(|at| at.elapsed() < RETRY_AFTER)
    }

    /// Fetches metadata and keys: how many keys there are now; on failure
    /// the cache stays as it was. The caller holds `fetching`.
    async fn refresh(&self) -> Result<usize, String> {
        lock(&self.cached).tried = Some(Instant::now());
        // Its span (when exporting) names the issuer, never a key.
        let issuer = || {
            vec![crate::telemetry::KeyValue::new(
                "airlock.oauth.issuer",
                self.issuer.clone(),
            )]
        };
        let fetching = self.fetch();
        let keys = crate::telemetry::within(
            "airlock.oauth.keys",
            crate::telemetry::SpanKind::Client,
            issuer,
            fetching,
        )
        .await?;
        let count = keys.len();
        let mut cached = lock(&self.cached);
        cached.keys = keys;
        cached.fetched = Some(Instant::now());
        Ok(count)
    }

    async fn fetch(&self) -> Result<Vec<(Option<String>, DecodingKey)>, String> {
        let limits = FetchLimits {
            timeout: FETCH_TIMEOUT,
            min_rate: 1024,
            grace: Duration::from_secs(2),
            fixed_for: Some("an issuer's keys"),
        };
        let http = Http::new(self.reach.tls.clone(), self.reach.plain.clone()).with_limits(limits);
        let jwks_uri = self.jwks_uri(&http).await?;
        let body = get(&http, jwks_uri).await?;
        let set: JwkSet =
            serde_json::from_slice(&body).map_err(|e| format!("the key set is not a JWKS: {e}"))?;
        let keys: Vec<_> = set
            .keys
            .iter()
            .filter(|jwk| jwk.common.public_key_use != Some(PublicKeyUse::Encryption))
            .filter_map(|jwk| {
                DecodingKey::from_jwk(jwk)
                    .ok()
                    .map(|key| (jwk.common.key_id.clone(), key))
            })
            .collect();
        if keys.is_empty() {
            return Err("the key set holds no signing key airlock can use".into());
        }
        Ok(keys)
    }

    /// The `jwks_uri` of the issuer's metadata, which must name this issuer.
    async fn jwks_uri(&self, http: &Http) -> Result<Url, String> {
        #[derive(Deserialize)]
        struct Metadata {
            issuer: String,
            jwks_uri: Option<String>,
        }
        let mut tried = Vec::new();
        for url in metadata_urls(&self.issuer)? {
            let body = match get(http, url.clone()).await {
                Ok(body) => body,
                Err(err) => {
                    tried.push(err);
                    continue;
                }
            };
            let metadata: Metadata = serde_json::from_slice(&body)
                .map_err(|e| format!("{url}: not authorization server metadata: {e}"))?;
            if metadata.issuer != self.issuer {
                return Err(format!(
                    "{url} is the metadata of {:?}, not of {} (RFC 8414 §3.3)",
                    metadata.issuer, self.issuer
                ));
            }
            let jwks = metadata
                .jwks_uri
                .ok_or_else(|| format!("{url} names no jwks_uri"))?;
            return Url::parse(&jwks).map_err(|e| format!("{url}: jwks_uri {jwks:?}: {e}"));
        }
        Err(format!("no metadata found: {}", tried.join("; ")))
    }
}

/// Where an issuer's metadata may be: RFC 8414's well-known path inserted
/// before the issuer's path, then OpenID Connect's appended to it.
pub fn metadata_urls(issuer: &str) -> Result<Vec<Url>, String> {
    let base = Url::parse(issuer).map_err(|e| format!("issuer {issuer:?}: {e}"))?;
    let path = base.path().trim_end_matches('/').to_string();
    let mut oauth = base.clone();
    oauth.set_path(&format!("/.well-known/oauth-authorization-server{path}"));
    let mut oidc = base;
    oidc.set_path(&format!("{path}/.well-known/openid-configuration"));
    Ok(vec![oauth, oidc])
}

async fn get(http: &Http, url: Url) -> Result<bytes::Bytes, String> {
    let shown = url.to_string();
    let response = http
        .send(Request::get(url), DOCUMENT_LIMIT)
        .await
        .map_err(|e| e.to_string())?;
    if !response.status.is_success() {
        return Err(format!("{shown}: {}", response.status));
    }
    Ok(response.body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_is_looked_for_where_both_specifications_put_it() {
        let urls = |issuer: &str| -> Vec<String> {
            metadata_urls(issuer)
                .expect("urls")
                .iter()
                .map(Url::to_string)
                .collect()
        };
        assert_eq!(
            urls("https://idp.example.com/realms/acme"),
            [
                "https://idp.example.com/.well-known/oauth-authorization-server/realms/acme",
                "https://idp.example.com/realms/acme/.well-known/openid-configuration"
            ]
        );
        assert_eq!(
            urls("https://idp.example.com"),
            [
                "https://idp.example.com/.well-known/oauth-authorization-server",
                "https://idp.example.com/.well-known/openid-configuration"
            ]
        );
    }
}
