//! Where components come from besides local files: OCI registries and
//! URLs, with a content-addressed store, a lock file and cosign signatures.
//!
//! - [`reference`](Source): `oci://REGISTRY/NAME:TAG`, `…@sha256:DIGEST`,
//!   `https://…/tool.wasm` or a path (parsing only);
//! - [`store`]: blobs under their digest, checked on every read;
//! - [`lock`]: `airlock.lock`, the digest each tag resolved to;
//! - [`layout`]: the CNCF Wasm OCI artifact (manifest, config, annotations);
//! - [`signature`]: cosign key-based signatures (ECDSA P-256);
//! - [`auth`]: registry credentials, Basic and Bearer challenges;
//! - `http`, `registry`: bounded HTTPS and the distribution API;
//! - [`pace`](FetchLimits): how long a fetch may take, how slowly it may
//!   arrive (the rule, apart from the I/O);
//! - [`Resolver`] (`resolve`, `url`): reference → verified bytes, the one
//!   entry point the loader uses (`crate::runtime`), and `pull`; `publish`:
//!   what a registry publishes, and pushing to it, for the CLI.

pub mod auth;
pub mod http;
pub mod layout;
pub mod lock;
mod pace;
mod publish;
mod reference;
mod registry;
mod resolve;
pub mod signature;
pub mod store;
mod url;

pub use pace::{FetchLimits, Progress, bytes as human_bytes};
pub use reference::{OciReference, ReferenceError, Source, UrlSource, check_digest};
pub use resolve::{
    Cause, DEFAULT_MAX_SIZE, Expect, Fetched, Published, Pulled, Resolver, SourceError,
};
pub use signature::PublicKey;
pub use store::Store;
