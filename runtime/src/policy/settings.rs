//! What the policy grants one tool, all its sections merged (defaults ←
//! component ← tool, each key as its `SectionKey::merge` says): the
//! [`Settings`] `effective` narrows into a grant, and the form of a
//! granted folder.

use std::fmt;
use std::path::PathBuf;

use serde::Deserialize;

use super::grant::{Asks, Consent};
use super::limits::Limits;
use super::network::{Credential, Trust};
use super::{ElicitUrls, HostPattern};

/// How the policy mounts a folder (before the tool's hints narrow it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FolderMode {
    #[default]
    ReadOnly,
    ReadWrite,
}

impl FolderMode {
    pub fn as_str(self) -> &'static str {
        match self {
            FolderMode::ReadOnly => "read-only",
            FolderMode::ReadWrite => "read-write",
        }
    }
}

/// A folder the policy grants: `host` is resolved against the policy file's
/// folder and existed when the policy was loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Folder {
    pub host: PathBuf,
    pub guest: String,
    pub mode: FolderMode,
}

/// What the policy grants one tool, all sections merged; the input of
/// [`super::effective`].
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Settings {
    pub folders: Vec<Folder>,
    pub network: Vec<HostPattern>,
    /// Headers added to requests to hosts of `network`; values are secrets.
    pub credentials: Vec<Credential>,
    /// Hosts of `network` whose requests get no `traceparent` (`trace = false`).
    pub untraced: Vec<HostPattern>,
    /// What https certificates are checked against.
    pub trust: Trust,
    /// Resolved values, in name order.
    pub env: Vec<(String, String)>,
    /// `wasi:config/store` values, resolved, in key order.
    pub config: Vec<(String, String)>,
    pub limits: Limits,
    /// What to do with a destructive call.
    pub destructive: Consent,
    /// Requests to the client the tool may make.
    pub asks: Asks,
    /// Where its URL elicitations may send the user.
    pub elicit_urls: ElicitUrls,
    /// No policy was loaded ([`super::Policy::default`]): refusals say so.
    pub no_policy: bool,
}

// Hand-written so that environment values (often secrets) never reach a log.
impl fmt::Debug for Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Settings")
            .field("folders", &self.folders)
            .field("network", &self.network)
            .field("credentials", &self.credentials)
            .field("untraced", &self.untraced)
            .field("trust", &self.trust)
            .field("env", &self.env.iter().map(|(k, _)| k).collect::<Vec<_>>())
            .field(
                "config",
                &self.config.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            )
            .field("limits", &self.limits)
            .field("destructive", &self.destructive)
            .field("asks", &self.asks)
            .field("elicit_urls", &self.elicit_urls)
            .field("no_policy", &self.no_policy)
            .finish()
    }
}
