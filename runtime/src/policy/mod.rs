//! Policy: what the operator grants each tool, and what a call actually gets.
//!
//! - [`file`](mod@file): the policy file (`airlock.toml`), checked when loaded, and the
//!   merged [`Settings`] of one tool (defaults ← component ← tool);
//! - [`host`]: [`HostPattern`], the network destinations a policy may list;
//! - [`network`]: the `network`, `tls` and `ca` keys — host patterns,
//!   [`Credential`]s airlock injects into requests, [`Trust`] for https;
//! - [`effective()`]: settings narrowed by the tool's hints → [`Grant`], the
//!   only capability input of the sandbox;
//! - the grant types: [`Grant`], [`Mount`], [`Access`], [`NetworkGrant`],
//!   [`Consent`], [`Limits`], [`Narrowing`];
//! - [`wassette`]: a wassette policy (YAML) converted into a policy section
//!   (`airlock policy import`).

mod effective;
pub mod file;
mod grant;
pub mod host;
pub mod network;
mod parse;
mod raw;
mod units;
pub mod wassette;

pub use effective::effective;
pub use file::{ComponentPolicy, Folder, FolderMode, Policy, PolicyError, Settings, Token};
pub use grant::*;
pub use host::{HostPattern, HostPatternError};
pub use network::{CaBundle, Credential, Roots, Secret, Trust};
pub use parse::UNSET;
pub use units::{format_duration, format_size};
