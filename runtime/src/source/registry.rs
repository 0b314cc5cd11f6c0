//! The OCI distribution API, the parts airlock needs: manifests and blobs
//! by tag or digest, pushing blobs (monolithic upload) and manifests, with
//! the registry's Basic or Bearer authentication (see [`super::auth`]).
//!
//! Everything received is bounded ([`MANIFEST_LIMIT`], a blob by the size
//! its descriptor declares) and checked against its digest before anyone
//! uses it: a registry that sends other bytes than it promised is refused,
//! naming both digests.

use std::sync::Mutex;

use bytes::Bytes;
use http::{HeaderValue, Method, StatusCode, header};
use url::Url;

use super::auth::{Challenge, Credentials, Login, parse_challenge};
use super::http::{Http, HttpError, Request, Response};
use super::reference::OciReference;
use super::store::digest_of;
use crate::telemetry::{KeyValue, SpanKind};

/// The largest manifest accepted (the distribution registry's own limit).
pub const MANIFEST_LIMIT: u64 = 4 * 1024 * 1024;
/// The largest token answer accepted.
const TOKEN_LIMIT: u64 = 1024 * 1024;

/// Why talking to a registry failed.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error(transparent)]
    Http(#[from] HttpError),
    #[error("{what} is not in the registry ({url} answered 404)")]
    NotFound { what: String, url: String },
    #[error("{registry} {reason}")]
    Denied { registry: String, reason: String },
    #[error("{url} answered {status}: {excerpt}")]
    Status {
        url: String,
        status: StatusCode,
        excerpt: String,
    },
    #[error(
        "the registry sent other content than {expected} for {what} (it hashes to {actual}); \
         refusing it: the registry's copy is damaged or tampered with"
    )]
    Digest {
        what: String,
        expected: String,
        actual: String,
    },
    #[error("{what}: {reason}")]
    Invalid { what: String, reason: String },
}

/// A TLS handshake that got a plain-HTTP answer (rustls: "received
/// corrupt message of type InvalidContentType") as what it means: the
/// registry speaks http://, and how to say so.
fn plain_answer(err: HttpError, registry: &str, repository: &str) -> HttpError {
    match err {
        HttpError::Failed { url, reason }
            if reason.starts_with("TLS") && reason.contains("InvalidContentType") =>
        {
            HttpError::Failed {
                url,
                reason: format!(
                    "the registry answered plain HTTP, not TLS: use \
                     `oci+http://{registry}/{repository}:TAG` or `--insecure-registry {registry}` \
                     (a local test registry), or give the registry TLS"
                ),
            }
        }
        other => other,
    }
}

/// One repository of one registry, with the authorization won so far.
pub struct Registry {
    http: Http,
    base: Url,
    registry: String,
    repository: String,
    credentials: Credentials,
    /// Looked up at the first challenge (a credential helper may be a
    /// program; a start served from the store never runs it).
    login: std::sync::OnceLock<Option<Login>>,
    /// The `Authorization` value the registry last accepted or asked for.
    authorization: Mutex<Option<HeaderValue>>,
}

impl Registry {
    /// `oci` names the repository; plain HTTP when the reference says
    /// `oci+http://` or the client allows it for the registry.
    pub fn new(http: &Http, credentials: &Credentials, oci: &OciReference) -> Registry {
        let http = if oci.plain_http {
            http.allowing_plain(&oci.registry)
        } else {
            http.clone()
        };
        let host = oci.api_host();
        let probe = Url::parse(&format!("http://{host}/")).ok();
        let plain = oci.plain_http || probe.is_some_and(|u| http.allows_plain(&u));
        let scheme = if plain { "http" } else { "https" };
        let base = Url::parse(&format!("{scheme}://{host}/v2/{}/", oci.repository))
            .unwrap_or_else(|_| Url::parse("https://invalid.invalid/").expect("a valid URL"));
        Registry {
            http,
            base,
            registry: oci.registry.clone(),
            repository: oci.repository.clone(),
            credentials: credentials.clone(),
            login: std::sync::OnceLock::new(),
            authorization: Mutex::new(None),
        }
    }

    fn login(&self) -> Option<&Login> {
        self.login
            .get_or_init(|| self.credentials.login(&self.registry))
            .as_ref()
    }

    fn url(&self, path: &str) -> Url {
        self.base.join(path).unwrap_or_else(|_| self.base.clone())
    }

    /// Sends a request, answering the registry's 401 challenges (a new
    /// scope, e.g. push after pull, gets a new token).
    async fn send(&self, request: Request, limit: u64) -> Result<Response, RegistryError> {
        let mut challenges = 0;
        loop {
            let mut attempt = request.clone();
            let current = self
                .authorization
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone();
            if let Some(value) = &current {
                attempt.headers.insert(header::AUTHORIZATION, value.clone());
            }
            let response = self
                .http
                .send(attempt, limit)
                .await
                .map_err(|e| plain_answer(e, &self.registry, &self.repository))?;
            if response.status != StatusCode::UNAUTHORIZED || challenges == 3 {
                return Ok(response);
            }
            challenges += 1;
            let challenge = response
                .header(header::WWW_AUTHENTICATE)
                .and_then(parse_challenge)
                .ok_or_else(|| RegistryError::Denied {
                    registry: self.registry.clone(),
                    reason: "answered 401 without a Basic or Bearer challenge".into(),
                })?;
            let value = self.authorize(&challenge).await?;
            if current.as_ref() == Some(&value) {
                // The same credentials again would be refused again.
                return Ok(response);
            }
            *self.authorization.lock().unwrap_or_else(|p| p.into_inner()) = Some(value);
        }
    }

    /// The `Authorization` value a challenge asks for.
    async fn authorize(&self, challenge: &Challenge) -> Result<HeaderValue, RegistryError> {
        let value = match challenge {
            Challenge::Basic => self.login().ok_or_else(|| self.wants_login())?.basic(),
            Challenge::Bearer {
                realm,
                service,
                scope,
            } => format!("Bearer {}", self.token(realm, service, scope).await?),
        };
        HeaderValue::from_str(&value).map_err(|_| RegistryError::Denied {
            registry: self.registry.clone(),
            reason: "answered with a token that is not a valid header value".into(),
        })
    }

    fn wants_login(&self) -> RegistryError {
        RegistryError::Denied {
            registry: self.registry.clone(),
            reason: format!(
                "wants credentials: run `docker login {0}`, or set \
                 AIRLOCK_REGISTRY_AUTH={0}=USER:TOKEN",
                self.registry
            ),
        }
    }

    /// The distribution token flow: ask the realm for a token for the
    /// scope, with the credentials if there are any (anonymous otherwise).
    async fn token(
        &self,
        realm: &str,
        service: &Option<String>,
        scope: &Option<String>,
    ) -> Result<String, RegistryError> {
        let denied = |reason: String| RegistryError::Denied {
            registry: self.registry.clone(),
            reason,
        };
        let mut url = Url::parse(realm)
            .map_err(|e| denied(format!("names an invalid token realm {realm:?}: {e}")))?;
        {
            let mut query = url.query_pairs_mut();
            if let Some(service) = service {
                query.append_pair("service", service);
            }
            let scope = scope
                .clone()
                .unwrap_or_else(|| format!("repository:{}:pull", self.repository));
            query.append_pair("scope", &scope);
        }
        // A realm on the registry's own host may use the registry's scheme.
        let http = match (url.host_str(), self.base.host_str()) {
            (Some(realm_host), Some(host))
                if realm_host == host && self.base.scheme() == "http" =>
            {
                let authority = match url.port() {
                    Some(port) => format!("{realm_host}:{port}"),
                    None => realm_host.to_string(),
                };
                self.http.allowing_plain(&authority)
            }
            _ => self.http.clone(),
        };
        let mut request = Request::get(url);
        if let Some(login) = self.login() {
            request = request.header(header::AUTHORIZATION, &login.basic());
        }
        let response = http.send(request, TOKEN_LIMIT).await?;
        if response.status == StatusCode::UNAUTHORIZED || response.status == StatusCode::FORBIDDEN {
            return Err(match self.login() {
                Some(login) => denied(format!(
                    "refused the credentials of {:?} ({} from the token service)",
                    login.user, response.status
                )),
                None => self.wants_login(),
            });
        }
        if !response.status.is_success() {
            return Err(denied(format!(
                "token service {} answered {}: {}",
                response.url,
                response.status,
                response.excerpt()
            )));
        }
        #[derive(serde::Deserialize)]
        struct Token {
            token: Option<String>,
            access_token: Option<String>,
        }
        let token: Token = serde_json::from_slice(&response.body)
            .map_err(|e| denied(format!("token service answered no JSON token: {e}")))?;
        token
            .token
            .or(token.access_token)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| denied("token service answered no token".into()))
    }

    /// Turns an answer that is not a success into the error it means.
    fn check(&self, response: Response, what: &str) -> Result<Response, RegistryError> {
        match response.status {
            s if s.is_success() => Ok(response),
            StatusCode::NOT_FOUND => Err(RegistryError::NotFound {
                what: what.to_string(),
                url: response.url.to_string(),
            }),
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
                Err(match (self.login(), response.status) {
                    (None, _) => self.wants_login(),
                    (Some(login), status) => RegistryError::Denied {
                        registry: self.registry.clone(),
                        reason: format!(
                            "refused {what} to {:?} ({status}): wrong credentials, or no access",
                            login.user
                        ),
                    },
                })
            }
            status => Err(RegistryError::Status {
                excerpt: response.excerpt(),
                url: response.url.to_string(),
                status,
            }),
        }
    }

    /// The manifest `reference` (a tag or a digest) names, with its digest
    /// (computed here; a digest reference must match it). `None` on 404.
    pub async fn manifest(
        &self,
        reference: &str,
    ) -> Result<Option<(Bytes, String)>, RegistryError> {
        let fetching = self.fetch_manifest(reference);
        crate::telemetry::within(
            "airlock.registry.manifest",
            SpanKind::Client,
            || self.traced(),
            fetching,
        )
        .await
    }

    /// What a registry fetch's span names: the registry and repository
    /// (never a credential or a token).
    fn traced(&self) -> Vec<KeyValue> {
        vec![
            KeyValue::new("server.address", self.registry.clone()),
            KeyValue::new("airlock.registry.repository", self.repository.clone()),
        ]
    }

    async fn fetch_manifest(
        &self,
        reference: &str,
    ) -> Result<Option<(Bytes, String)>, RegistryError> {
        let what = format!("manifest {reference}");
        let request = Request::get(self.url(&format!("manifests/{reference}")))
            .header(header::ACCEPT, super::layout::ACCEPT_MANIFESTS);
        let response = self.send(request, MANIFEST_LIMIT).await?;
        if response.status == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        let response = self.check(response, &what)?;
        let actual = digest_of(&response.body);
        let expected = reference
            .starts_with("sha256:")
            .then(|| reference.to_string())
            .or_else(|| {
                response
                    .header(http::HeaderName::from_static("docker-content-digest"))
                    .map(str::to_string)
            });
        if let Some(expected) = expected.filter(|e| *e != actual) {
            return Err(RegistryError::Digest {
                what,
                expected,
                actual,
            });
        }
        Ok(Some((response.body, actual)))
    }

    /// The blob `digest`, at most `limit` bytes, checked against the digest.
    pub async fn blob(&self, digest: &str, limit: u64, what: &str) -> Result<Bytes, RegistryError> {
        let fetching = self.fetch_blob(digest, limit, what);
        crate::telemetry::within(
            "airlock.registry.blob",
            SpanKind::Client,
            || self.traced(),
            fetching,
        )
        .await
    }

    async fn fetch_blob(
        &self,
        digest: &str,
        limit: u64,
        what: &str,
    ) -> Result<Bytes, RegistryError> {
        let request = Request::get(self.url(&format!("blobs/{digest}")));
        let response = self.check(self.send(request, limit).await?, what)?;
        let actual = digest_of(&response.body);
        if actual != digest {
            return Err(RegistryError::Digest {
                what: what.to_string(),
                expected: digest.to_string(),
                actual,
            });
        }
        Ok(response.body)
    }

    /// Uploads a blob unless the registry has it (monolithic upload).
    pub async fn push_blob(&self, digest: &str, bytes: Bytes) -> Result<(), RegistryError> {
        let what = format!("blob {digest}");
        let head = Request {
            method: Method::HEAD,
            ..Request::get(self.url(&format!("blobs/{digest}")))
        };
        if self.send(head, 0).await?.status.is_success() {
            return Ok(());
        }
        let start = Request {
            method: Method::POST,
            ..Request::get(self.url("blobs/uploads/"))
        };
        let started = self.check(self.send(start, MANIFEST_LIMIT).await?, &what)?;
        let location = started
            .header(header::LOCATION)
            .ok_or_else(|| RegistryError::Invalid {
                what: what.clone(),
                reason: "the registry started an upload without a Location".into(),
            })?;
        let mut url = started
            .url
            .join(location)
            .map_err(|e| RegistryError::Invalid {
                what: what.clone(),
                reason: format!("upload Location {location:?}: {e}"),
            })?;
        url.query_pairs_mut().append_pair("digest", digest);
        let put = Request {
            method: Method::PUT,
            body: bytes,
            ..Request::get(url)
        }
        .header(header::CONTENT_TYPE, "application/octet-stream");
        self.check(self.send(put, MANIFEST_LIMIT).await?, &what)?;
        Ok(())
    }

    /// Puts a manifest under `reference` (a tag); returns its digest.
    pub async fn push_manifest(
        &self,
        reference: &str,
        manifest: Bytes,
        media_type: &str,
    ) -> Result<String, RegistryError> {
        let digest = digest_of(&manifest);
        let put = Request {
            method: Method::PUT,
            body: manifest,
            ..Request::get(self.url(&format!("manifests/{reference}")))
        }
        .header(header::CONTENT_TYPE, media_type);
        self.check(
            self.send(put, MANIFEST_LIMIT).await?,
            &format!("manifest {reference}"),
        )?;
        Ok(digest)
    }
}

/// Runs `work` to completion on a thread of its own with a small async
/// runtime, so callers (loading is synchronous, and may itself run on an
/// async runtime's blocking thread) need none.
pub fn block_on<F>(work: F) -> std::io::Result<F::Output>
where
    F: std::future::Future + Send,
    F::Output: Send,
{
    // The caller's trace context goes along: a fetch's span is the child
    // of the resolution (or request) that asked for it.
    let trace = crate::telemetry::current();
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map(|rt| rt.block_on(crate::telemetry::in_context(trace, work)))
            })
            .join()
    })
    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}
