//! Policy: what the operator grants each tool, and what a call actually gets.
//!
//! - [`file`](mod@file): the policy file (`airlock.toml`): its format, the
//!   checked [`Policy`], and the merged [`Settings`] of one tool (defaults ←
//!   component ← tool);
//! - reading it, from the bottom up: `error` ([`PolicyError`], naming
//!   file:line:column), `raw` (the TOML as written), `context` (the parser's
//!   state), `network_keys` (the network keys checked), `parse` (the rest
//!   checked, and [`Policy::load`] / [`Policy::parse`]);
//! - `oauth`: the `[oauth]` section ([`OAuth`]): the issuers whose access
//!   tokens are accepted, this server's resource identifier, what scopes
//!   give;
//! - [`host`]: [`HostPattern`], the network destinations a policy may list;
//! - [`network`]: the `network`, `tls` and `ca` keys — host patterns,
//!   [`Credential`]s airlock injects into requests, [`Trust`] for https;
//! - `elicit_url`: [`ElicitUrls`], where a tool's URL elicitation may send
//!   the user (`https:`, or `http:` to this machine; `elicit-url-hosts`);
//! - [`effective()`]: settings narrowed by the tool's hints → [`Grant`], the
//!   only capability input of the sandbox;
//! - the grant types: [`Grant`], [`Mount`], [`Access`], [`NetworkGrant`],
//!   [`Consent`], [`Narrowing`];
//! - [`limits`](mod@limits): [`Limits`], each limit declared once (its
//!   key, unit, default, check and how `inspect` shows it);
//! - [`wassette`]: a wassette policy (YAML) converted into a policy section
//!   (`airlock policy import`).

mod context;
mod effective;
mod elicit_url;
mod error;
pub mod file;
mod grant;
pub mod host;
pub mod limits;
pub mod network;
mod network_keys;
mod oauth;
mod parse;
mod raw;
mod token;
mod units;
pub mod wassette;

pub use context::UNSET;
pub use effective::effective;
pub use elicit_url::ElicitUrls;
pub use error::PolicyError;
pub use file::{
    ComponentPolicy, Folder, FolderMode, Identity, Policy, Settings, Token, TokenCredential,
};
pub use grant::*;
pub use host::{HostPattern, HostPatternError};
pub use limits::{LIMIT_KEYS, LimitKey, Limits, Shown};
pub use network::{CaBundle, Credential, Roots, Secret, Trust};
pub use oauth::{ClaimGrant, Gives, OAuth, ScopeGrant, ScopedAccess};
pub use units::{format_duration, format_size};
