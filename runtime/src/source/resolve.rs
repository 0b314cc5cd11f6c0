//! From a reference to verified bytes: the lock says which digest, the
//! store has it or the registry (or URL) sends it, the pin and the
//! signature are checked, and only then are the bytes handed to the loader.
//!
//! Order, for an OCI tag: the lock's digest (else the registry's answer
//! for the tag, recorded in the lock once everything passed) → the
//! manifest (store, else registry) → the component's digest against the
//! policy's `sha256` pin → the signature (before the component is
//! downloaded) → the component (store, else registry, bounded by the size
//! the manifest declares and by [`DEFAULT_MAX_SIZE`]). The network is used
//! only for what the store lacks, so a second start works offline.

use std::path::{Path, PathBuf};

use bytes::Bytes;

use super::auth::Credentials;
use super::http::{Http, HttpError};
use super::layout::Manifest;
use super::lock::{Lock, LockError, Locked};
use super::pace::{FetchLimits, Progress};
use super::reference::{OciReference, Source};
use super::registry::{Registry, RegistryError, block_on};
use super::signature::{self, PAYLOAD_MEDIA_TYPE, PublicKey, Refusal, SIGNATURE_ANNOTATION};
use super::store::{Store, StoreError};

/// The largest component fetched unless the resolver is told otherwise.
pub const DEFAULT_MAX_SIZE: u64 = 256 * 1024 * 1024;
/// The largest signature payload read (cosign's are a few hundred bytes).
const PAYLOAD_LIMIT: u64 = 64 * 1024;
/// Signatures looked at per artifact.
const MAX_SIGNATURES: usize = 32;

/// Why a source could not be resolved; says which source.
#[derive(Debug, thiserror::Error)]
#[error("{reference}: {cause}")]
pub struct SourceError {
    pub reference: String,
    pub cause: Cause,
}

/// What went wrong.
#[derive(Debug, thiserror::Error)]
pub enum Cause {
    #[error(transparent)]
    Registry(#[from] RegistryError),
    #[error(transparent)]
    Http(#[from] HttpError),
    #[error("refused: {0}")]
    Signature(Refusal),
    #[error("cannot check its signature: {0}")]
    SignatureUnavailable(String),
    #[error(
        "its component is {actual}, but the policy pins sha256 = \"{pinned}\"; \
         refusing it (change the pin to take it)"
    )]
    Pin { pinned: String, actual: String },
    #[error(
        "it now serves {current}, but the lock has {locked}; run `airlock pull --update {reference}` \
         to take the new one"
    )]
    Moved {
        reference: String,
        locked: String,
        current: String,
    },
    #[error("the component is {size} bytes, more than the {limit} bytes airlock accepts")]
    TooLarge { size: u64, limit: u64 },
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot use the network: {0}")]
    Network(String),
}

/// What the component must satisfy (from the policy).
#[derive(Debug, Default, Clone, Copy)]
pub struct Expect<'a> {
    /// The `sha256` pin: hex digest of the `.wasm` bytes.
    pub sha256: Option<&'a str>,
    /// The key a cosign signature must be made with.
    pub key: Option<&'a PublicKey>,
}

/// A resolved component.
#[derive(Debug)]
pub struct Fetched {
    pub bytes: Vec<u8>,
    /// `sha256:` of the bytes.
    pub component: String,
    /// The manifest's digest (OCI only).
    pub manifest: Option<String>,
    /// The key file that verified its signature.
    pub verified_by: Option<String>,
    /// Whether anything came over the network (else all from the store).
    pub downloaded: bool,
}

/// What `airlock pull` did.
#[derive(Debug)]
pub struct Pulled {
    pub fetched: Fetched,
    /// The tag or URL moved and the lock kept the old digest: (locked, now).
    pub moved: Option<(String, String)>,
    /// The lock entry changed: the digest it had before, if any.
    pub relocked: Option<Option<String>>,
}

/// What a registry says of an artifact, before anything is fetched.
#[derive(Debug)]
pub struct Published {
    pub digest: String,
    pub manifest: Manifest,
    /// The lock's digest for this reference, if any.
    pub locked: Option<Locked>,
    /// The signature check, when a key was given.
    pub signature: Option<Result<(), Cause>>,
}

/// Resolves references: the store, the lock file, the network settings.
pub struct Resolver {
    pub(super) store: Store,
    lock: Option<PathBuf>,
    /// TLS for registries and URLs; why there is none otherwise.
    tls: Result<tokio_rustls::TlsConnector, String>,
    /// Hosts spoken to over plain HTTP.
    plain: Vec<String>,
    credentials: Credentials,
    pub(super) max_size: u64,
    /// How long one fetch may take, and how slowly it may arrive.
    limits: FetchLimits,
}

impl Resolver {
    /// A resolver keeping blobs in `store`, with no lock file, the
    /// environment's credentials, HTTPS only, and no TLS settings yet (see
    /// [`Resolver::with_tls`]; `Runtime::new` gives it the runtime's).
    pub fn new(store: Store) -> Resolver {
        Resolver {
            store,
            lock: None,
            tls: Err("no TLS client was set up for fetching components".into()),
            plain: Vec::new(),
            credentials: Credentials::from_env(),
            max_size: DEFAULT_MAX_SIZE,
            limits: FetchLimits::default(),
        }
    }

    /// Records and reads tag resolutions in `lock`.
    pub fn with_lock(mut self, lock: Option<PathBuf>) -> Resolver {
        self.lock = lock;
        self
    }

    /// The TLS client for registries and URLs (or why there is none, said
    /// when the network is needed).
    pub fn with_tls(mut self, tls: Result<tokio_rustls::TlsConnector, String>) -> Resolver {
        self.tls = tls;
        self
    }

    /// Hosts (`host` or `host:port`) spoken to over plain HTTP.
    pub fn with_insecure(mut self, hosts: Vec<String>) -> Resolver {
        self.plain.extend(hosts);
        self
    }

    pub fn with_credentials(mut self, credentials: Credentials) -> Resolver {
        self.credentials = credentials;
        self
    }

    /// The largest component accepted, in bytes.
    pub fn with_max_size(mut self, bytes: u64) -> Resolver {
        self.max_size = bytes;
        self
    }

    /// The deadline and minimum rate of each fetch (see [`FetchLimits`]).
    pub fn with_fetch_limits(mut self, limits: FetchLimits) -> Resolver {
        self.limits = limits;
        self
    }

    pub fn fetch_limits(&self) -> FetchLimits {
        self.limits
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn lock_path(&self) -> Option<&Path> {
        self.lock.as_deref()
    }

    /// The lock's entry for `source`, if any.
    pub fn locked(&self, source: &Source) -> Result<Option<Locked>, LockError> {
        match &self.lock {
            Some(path) => Ok(Lock::read(path)?.get(&source.to_string()).cloned()),
            None => Ok(None),
        }
    }

    /// The component a remote source stands for, as the loader needs it:
    /// locked digests, from the store when there, verified.
    pub fn fetch(&self, source: &Source, expect: Expect) -> Result<Fetched, SourceError> {
        self.fetch_watched(source, expect, &Progress::default())
    }

    /// Like [`Resolver::fetch`], counting the bytes received in `progress`
    /// as they arrive (for whoever reports on a start that waits).
    pub fn fetch_watched(
        &self,
        source: &Source,
        expect: Expect,
        progress: &Progress,
    ) -> Result<Fetched, SourceError> {
        self.resolve(source, expect, Mode::Load, progress)
            .map(|p| p.fetched)
    }

    /// `airlock pull`: asks the registry (or URL) where the source points
    /// now, fetches and verifies it into the store. The lock moves only
    /// with `update`; otherwise a move is reported and the locked version
    /// is the one fetched.
    pub fn pull(
        &self,
        source: &Source,
        expect: Expect,
        update: bool,
    ) -> Result<Pulled, SourceError> {
        self.resolve(source, expect, Mode::Pull { update }, &Progress::default())
    }

    fn resolve(
        &self,
        source: &Source,
        expect: Expect,
        mode: Mode,
        progress: &Progress,
    ) -> Result<Pulled, SourceError> {
        // Its span (when exporting) is the parent of the fetches and the
        // signature check (see `block_on`); it names where, never a
        // credential or a URL's path and query.
        let resolving = crate::telemetry::phase(
            "airlock.source.resolve",
            crate::telemetry::SpanKind::Internal,
            || traced(source),
        );
        let result = match source {
            Source::File(path) => Err(Cause::Invalid(format!(
                "{} is a file: it is read, not fetched",
                path.display()
            ))),
            Source::Oci(oci) => self.resolve_oci(&Net::watched(self, oci, progress), expect, mode),
            Source::Url(url) => self.resolve_url(url, expect, mode, progress),
        };
        if result.is_err() {
            resolving.failed("failed");
        }
        result.map_err(|cause| SourceError {
            reference: source.to_string(),
            cause,
        })
    }

    /// A client for one fetch: its deadline starts now.
    pub(super) fn http(&self) -> Http {
        Http::new(self.tls.clone(), self.plain.clone()).with_limits(self.limits)
    }

    pub(super) fn lock_entry(&self, reference: &str) -> Result<Option<Locked>, Cause> {
        match &self.lock {
            Some(path) => Ok(Lock::read(path)?.get(reference).cloned()),
            None => Ok(None),
        }
    }

    pub(super) fn record(&self, reference: &str, locked: Locked) -> Result<bool, Cause> {
        match &self.lock {
            Some(path) => Ok(Lock::record(path, reference, locked)?),
            None => Ok(false),
        }
    }

    fn resolve_oci(&self, net: &Net, expect: Expect, mode: Mode) -> Result<Pulled, Cause> {
        let oci = &net.reference;
        let key = oci.to_string();
        let pin = expect.sha256.map(|hex| format!("sha256:{hex}"));
        let locked = match &oci.digest {
            Some(_) => None,
            None => self.lock_entry(&key)?,
        };
        // A pin the lock does not match is the operator moving the pin:
        // the tag is asked again and must now give the pinned component.
        let locked_manifest = locked
            .as_ref()
            .filter(|l| pin.as_ref().is_none_or(|p| *p == l.component))
            .and_then(|l| l.manifest.clone());
        let (manifest, moved) = match (&oci.digest, locked_manifest, mode) {
            (Some(digest), _, _) => (digest.clone(), None),
            (None, Some(locked), Mode::Load) => (locked, None),
            (None, locked, mode) => {
                let tag = oci.manifest_ref();
                let (bytes, current) =
                    net.manifest(tag)?.ok_or_else(|| RegistryError::NotFound {
                        what: format!("tag {tag}"),
                        url: oci.to_string(),
                    })?;
                self.store.put(&current, &bytes)?;
                match locked {
                    Some(locked) if locked != current && mode == (Mode::Pull { update: false }) => {
                        (locked.clone(), Some((locked, current)))
                    }
                    _ => (current, None),
                }
            }
        };
        let fetched = self.materialize(net, &manifest, expect)?;
        if let Some(locked) = &locked
            && locked.manifest.as_deref() == Some(manifest.as_str())
            && locked.component != fetched.component
        {
            return Err(Cause::Invalid(format!(
                "the lock names manifest {manifest} with component {}, but that manifest's \
                 component is {}; the lock was edited: fix it, or run `airlock pull --update`",
                locked.component, fetched.component
            )));
        }
        let mut relocked = None;
        if oci.digest.is_none() && moved.is_none() {
            let entry = Locked {
                manifest: Some(manifest),
                component: fetched.component.clone(),
            };
            if self.record(&key, entry)? {
                relocked = Some(locked.and_then(|l| l.manifest));
            }
        }
        Ok(Pulled {
            fetched,
            moved,
            relocked,
        })
    }

    /// The component of manifest `digest`: manifest, pin, signature, blob.
    fn materialize(&self, net: &Net, digest: &str, expect: Expect) -> Result<Fetched, Cause> {
        let mut downloaded = false;
        let bytes = match self.store.get(digest) {
            Some(bytes) => bytes,
            None => {
                let (bytes, _) = net
                    .manifest(digest)?
                    .ok_or_else(|| RegistryError::NotFound {
                        what: format!("manifest {digest}"),
                        url: net.reference.to_string(),
                    })?;
                self.store.put(digest, &bytes)?;
                downloaded = true;
                bytes.to_vec()
            }
        };
        let manifest = Manifest::parse(&bytes).map_err(Cause::Invalid)?;
        let layer = manifest.component().map_err(Cause::Invalid)?.clone();
        super::reference::check_digest(&layer.digest).map_err(Cause::Invalid)?;
        if let Some(pin) = expect.sha256
            && layer.digest != format!("sha256:{pin}")
        {
            return Err(Cause::Pin {
                pinned: pin.to_string(),
                actual: layer.digest,
            });
        }
        if layer.size > self.max_size {
            return Err(Cause::TooLarge {
                size: layer.size,
                limit: self.max_size,
            });
        }
        let verified_by = match expect.key {
            Some(key) => {
                downloaded |= self.verify(net, digest, key)?;
                Some(key.label.clone())
            }
            None => None,
        };
        let component = match self.store.get(&layer.digest) {
            Some(bytes) => bytes,
            None => {
                let bytes = net.blob(&layer.digest, layer.size, "the component")?;
                self.store.put(&layer.digest, &bytes)?;
                downloaded = true;
                bytes.to_vec()
            }
        };
        Ok(Fetched {
            bytes: component,
            component: layer.digest,
            manifest: Some(digest.to_string()),
            verified_by,
            downloaded,
        })
    }

    /// Checks the cosign signatures of manifest `digest` against `key`:
    /// those in the store first, then the registry's. Whether it used the
    /// network.
    pub(super) fn verify(&self, net: &Net, digest: &str, key: &PublicKey) -> Result<bool, Cause> {
        if let Some(stored) = self.store.signatures(digest)
            && let Some(signatures) = self.stored_signatures(&stored)
            && signature::verify(key, digest, &signatures).is_ok()
        {
            return Ok(false);
        }
        let tag = signature::signature_tag(digest);
        let fetched = net.manifest(&tag).map_err(|e| {
            Cause::SignatureUnavailable(format!(
                "no signature in the store verifies with {}, and the registry's ({tag}) cannot be                  fetched: {e}",
                key.label
            ))
        })?;
        let signatures = match fetched {
            None => Vec::new(),
            Some((bytes, _)) => {
                let manifest = Manifest::parse(&bytes).map_err(|e| {
                    Cause::SignatureUnavailable(format!("the signature manifest {tag}: {e}"))
                })?;
                let mut signatures = Vec::new();
                for layer in manifest
                    .layers
                    .iter()
                    .filter(|l| l.media_type == PAYLOAD_MEDIA_TYPE)
                    .take(MAX_SIGNATURES)
                {
                    let Some(signature) = layer.annotations.get(SIGNATURE_ANNOTATION) else {
                        continue;
                    };
                    let payload = match self.store.get(&layer.digest) {
                        Some(payload) => payload,
                        None => {
                            let payload = net.blob(
                                &layer.digest,
                                layer.size.min(PAYLOAD_LIMIT),
                                "a signature payload",
                            )?;
                            self.store.put(&layer.digest, &payload)?;
                            payload.to_vec()
                        }
                    };
                    signatures.push(signature::Signature {
                        payload,
                        signature: signature.clone(),
                    });
                }
                self.store.put_signatures(digest, &bytes)?;
                signatures
            }
        };
        signature::verify(key, digest, &signatures).map_err(Cause::Signature)?;
        Ok(true)
    }

    /// The signatures of a stored `.sig` manifest whose payloads are all in
    /// the store.
    fn stored_signatures(&self, manifest: &[u8]) -> Option<Vec<signature::Signature>> {
        let manifest = Manifest::parse(manifest).ok()?;
        manifest
            .layers
            .iter()
            .filter(|l| l.media_type == PAYLOAD_MEDIA_TYPE)
            .take(MAX_SIGNATURES)
            .map(|layer| {
                Some(signature::Signature {
                    payload: self.store.get(&layer.digest)?,
                    signature: layer.annotations.get(SIGNATURE_ANNOTATION)?.clone(),
                })
            })
            .collect()
    }
}

/// What a resolution's span says of `source`: the registry, repository
/// and tag or digest of a reference; a URL's host.
fn traced(source: &Source) -> Vec<crate::telemetry::KeyValue> {
    use crate::telemetry::KeyValue;
    match source {
        Source::Oci(oci) => {
            let mut attributes = vec![
                KeyValue::new("server.address", oci.registry.clone()),
                KeyValue::new("airlock.registry.repository", oci.repository.clone()),
            ];
            if let Some(reference) = oci.digest.as_ref().or(oci.tag.as_ref()) {
                let reference = KeyValue::new("airlock.registry.reference", reference.clone());
                attributes.push(reference);
            }
            attributes
        }
        Source::Url(url) => vec![KeyValue::new(
            "server.address",
            url.url.host_str().unwrap_or_default().to_string(),
        )],
        Source::File(_) => Vec::new(),
    }
}

/// Why a resolution runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    /// A start or reload: the lock decides, the store serves.
    Load,
    /// `airlock pull`: ask where the tag points now.
    Pull { update: bool },
}

/// One repository's registry, used only for what the store lacks.
pub(super) struct Net {
    pub(super) registry: Registry,
    reference: OciReference,
}

impl Net {
    pub(super) fn new(resolver: &Resolver, oci: &OciReference) -> Net {
        Net::watched(resolver, oci, &Progress::default())
    }

    /// A client for one fetch whose received bytes `progress` counts.
    fn watched(resolver: &Resolver, oci: &OciReference, progress: &Progress) -> Net {
        let http = resolver.http().with_progress(progress.clone());
        Net {
            registry: Registry::new(&http, &resolver.credentials, oci),
            reference: oci.clone(),
        }
    }

    pub(super) fn manifest(&self, reference: &str) -> Result<Option<(Bytes, String)>, Cause> {
        block_on(self.registry.manifest(reference))
            .map_err(|e| Cause::Network(e.to_string()))?
            .map_err(Cause::Registry)
    }

    fn blob(&self, digest: &str, limit: u64, what: &str) -> Result<Bytes, Cause> {
        block_on(self.registry.blob(digest, limit, what))
            .map_err(|e| Cause::Network(e.to_string()))?
            .map_err(Cause::Registry)
    }
}
