//! The effective grant of one call: exactly what the sandbox gives the guest.
//!
//! A [`Grant`] is the output of [`super::effective`] (policy settings narrowed
//! by the tool's hints) and the only input the sandbox takes about
//! capabilities. Nothing a client sends can change one.

use std::path::PathBuf;

use super::limits::Limits;

/// How a granted folder is mounted for one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Access {
    /// Read, list, stat; no change of any kind.
    ReadOnly,
    /// Read everything; create new files and folders and write to what this
    /// call created; never modify, truncate, rename or delete what existed
    /// before the call.
    CreateOnly,
    /// Full read-write.
    ReadWrite,
}

impl Access {
    pub fn as_str(self) -> &'static str {
        match self {
            Access::ReadOnly => "read-only",
            Access::CreateOnly => "create-only",
            Access::ReadWrite => "read-write",
        }
    }
}

impl std::fmt::Display for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A host folder visible to the guest under `guest` path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    pub host: PathBuf,
    pub guest: String,
    pub access: Access,
}

/// Which HTTP methods an open-world tool may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpMethods {
    /// Any method.
    Any,
    /// GET, HEAD and OPTIONS only (read-only tools).
    SafeOnly,
}

/// Network access of one call. `None` in [`Grant::network`] means no network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkGrant {
    pub allow: Vec<super::HostPattern>,
    pub methods: HttpMethods,
    /// Headers airlock adds to requests to some of the hosts of `allow`.
    pub credentials: Vec<super::Credential>,
    /// Patterns of `allow` whose requests carry no `traceparent` from the
    /// host (`trace = false` in the policy), when traces are exported.
    pub untraced: Vec<super::HostPattern>,
    /// What https certificates are checked against.
    pub trust: super::Trust,
}

/// Why a call has no network (its [`Grant::network`] is `None`): the
/// refusal of a request says which, so the operator knows what to change.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Offline {
    /// The policy lists no host for the tool.
    #[default]
    NotListed,
    /// The tool is not open-world.
    NotOpenWorld,
    /// No policy was loaded, so nothing is granted.
    NoPolicy,
}

impl std::fmt::Display for Offline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Offline::NotListed => {
                "the policy lists no host for it (`network` in its [components.NAME] or tool \
                 section)"
            }
            Offline::NotOpenWorld => {
                "it is not open-world (only open-world tools may use the network)"
            }
            Offline::NoPolicy => {
                "no policy was loaded, so nothing is granted (name one with --policy FILE, or \
                 run where airlock.toml is)"
            }
        })
    }
}

/// Consent for destructive calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Consent {
    /// Refuse every destructive call (the default).
    #[default]
    Deny,
    /// Run destructive calls.
    Allow,
    /// Ask the client to confirm each call; refuse when it cannot.
    Confirm,
}

impl Consent {
    pub fn as_str(self) -> &'static str {
        match self {
            Consent::Deny => "deny",
            Consent::Allow => "allow",
            Consent::Confirm => "confirm",
        }
    }
}

/// Which requests to the client a tool may make during a call (`ask`);
/// none unless the operator grants them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Asks {
    /// `host.elicit` and `host.elicit-url`: ask the user.
    pub elicit: bool,
    /// `host.sample`: ask the client's model (spends the user's tokens).
    pub sample: bool,
    /// `host.roots`: learn the client's roots (information only).
    pub roots: bool,
}

impl Asks {
    /// Whether any request is granted.
    pub fn any(self) -> bool {
        self.elicit || self.sample || self.roots
    }

    /// The granted kinds by their policy names, in the policy's order.
    pub fn names(self) -> Vec<&'static str> {
        [
            (self.elicit, "elicit"),
            (self.sample, "sample"),
            (self.roots, "roots"),
        ]
        .into_iter()
        .filter_map(|(granted, name)| granted.then_some(name))
        .collect()
    }
}

/// Why the effective grant differs from what the policy says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Narrowing {
    /// What was narrowed, e.g. `/data` or `network`.
    pub what: String,
    /// The policy's value, e.g. `read-write`.
    pub from: String,
    /// The effective value, e.g. `read-only`.
    pub to: String,
    /// Why, e.g. `tool is read-only`.
    pub reason: String,
}

impl std::fmt::Display for Narrowing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {} → {} ({})",
            self.what, self.from, self.to, self.reason
        )
    }
}

/// Everything one call may use.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Grant {
    pub mounts: Vec<Mount>,
    /// `None`: no network at all.
    pub network: Option<NetworkGrant>,
    /// Why there is no network, when `network` is `None`.
    pub offline: Offline,
    /// Environment variables the guest sees, exactly these.
    pub env: Vec<(String, String)>,
    /// What `wasi:config/store` answers, exactly these.
    pub config: Vec<(String, String)>,
    pub limits: Limits,
    /// How a destructive tool's calls get consent; `None` for a tool that
    /// is not destructive (it never needs any).
    pub consent: Option<Consent>,
    /// Requests the tool may make of the client (`ask`), within
    /// `limits.elicitations`, `samplings` and `sample_tokens`.
    pub asks: Asks,
    /// Where its URL elicitations may send the user (`elicit-url-hosts`).
    pub elicit_urls: super::ElicitUrls,
    pub narrowings: Vec<Narrowing>,
}
