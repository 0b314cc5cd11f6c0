//! Policy: what the operator grants each tool, and what a call actually gets.
//!
//! - [`file`](mod@file): the policy file (`airlock.toml`): its format, the
//!   checked [`Policy`], and the merged [`Settings`] of one tool (defaults ←
//!   component ← tool);
//! - reading it, from the bottom up: `error` ([`PolicyError`], naming
//!   file:line:column), `context` (the parser's state), `key` (what a key
//!   of a section is: `SectionKey`), each key beside its checks
//!   (`folders`, `network_keys`, `values`: env and config, `ask_keys`,
//!   `component_keys`: hints and verify), `keys` (the table of every key
//!   of a section, from which the section's forms, its check, its merge and
//!   how its grant is shown come), `raw` (the TOML as written), `parse`
//!   (the whole file checked, and [`Policy::load`] / [`Policy::parse`]);
//! - `settings`: [`Settings`], one tool's sections merged;
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

mod ask_keys;
mod component_keys;
mod context;
mod effective;
mod elicit_url;
mod error;
pub mod file;
mod folders;
mod grant;
pub mod host;
mod key;
mod keys;
pub mod limits;
pub mod network;
mod network_keys;
mod oauth;
mod parse;
mod raw;
mod settings;
mod token;
mod units;
mod values;
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
pub use key::ShownGrant;
pub use keys::SECTION_KEYS;
pub use limits::{LIMIT_KEYS, LimitKey, Limits, Shown};
pub use network::{CaBundle, Credential, Roots, Secret, Trust};
pub use oauth::{ClaimGrant, Gives, OAuth, ScopeGrant, ScopedAccess};
pub use units::{format_duration, format_size};
