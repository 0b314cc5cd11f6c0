//! Who may call: an HTTP bearer token the server accepts — a `[[tokens]]`
//! entry of the policy or an access token an `[oauth]` issuer signed — and
//! what it may list and use (tools, resources, prompts, `/metrics`).

use std::fmt;

use sha2::{Digest, Sha256};

/// An HTTP bearer token the server accepts: one of the policy's
/// `[[tokens]]`, or an access token an `[oauth]` issuer signed.
#[derive(Clone, PartialEq, Eq)]
pub struct Token {
    /// The `[[tokens]]` entry's name; for an access token `SUBJECT@ISSUER`
    /// (what per-token bounds and task owners are keyed by).
    pub name: String,
    pub credential: TokenCredential,
    /// Tools this token may list and call. A token with none of `tools`,
    /// `resources` and `prompts` may use everything; one with any of them
    /// only what they list (an absent list then allows nothing).
    pub tools: Option<Vec<String>>,
    /// Resource URIs and URI templates (as written) it may list and read.
    pub resources: Option<Vec<String>>,
    /// Prompts it may list and get.
    pub prompts: Option<Vec<String>>,
    /// `metrics = true`: may read `/metrics` though limited to some tools.
    pub metrics: bool,
    /// Where a `[[tokens]]` entry's name is written (line, column), for
    /// messages about the entry; `None` for an access token.
    pub position: Option<(usize, usize)>,
}

/// How a token proved itself.
#[derive(Clone, PartialEq, Eq)]
pub enum TokenCredential {
    /// SHA-256 of a `[[tokens]]` secret; the secret itself is never stored.
    Secret([u8; 32]),
    /// An access token verified against its issuer's keys.
    Issued(Identity),
}

/// Who an access token speaks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub issuer: String,
    pub subject: String,
    /// The OAuth client the token was issued to (`client_id`, `azp`).
    pub client_id: Option<String>,
}

impl Token {
    /// A `[[tokens]]` entry.
    pub fn secret(name: impl Into<String>, sha256: [u8; 32], tools: Option<Vec<String>>) -> Token {
        Token {
            name: name.into(),
            credential: TokenCredential::Secret(sha256),
            tools,
            resources: None,
            prompts: None,
            metrics: false,
            position: None,
        }
    }

    /// A verified access token of `identity`, with what its scopes give.
    pub fn issued(identity: Identity, tools: Option<Vec<String>>, metrics: bool) -> Token {
        Token {
            name: format!("{}@{}", identity.subject, identity.issuer),
            credential: TokenCredential::Issued(identity),
            tools,
            resources: None,
            prompts: None,
            metrics,
            position: None,
        }
    }

    /// Whether `bearer` is this `[[tokens]]` secret. Compares digests in
    /// constant time so response timing says nothing about how close a
    /// guess was.
    pub fn accepts(&self, bearer: &str) -> bool {
        let TokenCredential::Secret(sha256) = &self.credential else {
            return false;
        };
        let digest = Sha256::digest(bearer.as_bytes());
        digest
            .iter()
            .zip(sha256.iter())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
    }

    /// Who an access token speaks for; `None` for a `[[tokens]]` entry.
    pub fn identity(&self) -> Option<&Identity> {
        match &self.credential {
            TokenCredential::Issued(identity) => Some(identity),
            TokenCredential::Secret(_) => None,
        }
    }

    /// Whether the token lists nothing, and so may use everything.
    pub fn is_unlimited(&self) -> bool {
        self.tools.is_none() && self.resources.is_none() && self.prompts.is_none()
    }

    fn lists(&self, list: &Option<Vec<String>>, name: &str) -> bool {
        self.is_unlimited() || list.as_ref().is_some_and(|l| l.iter().any(|n| n == name))
    }

    /// Whether this token may see and call `tool`.
    pub fn allows_tool(&self, tool: &str) -> bool {
        self.lists(&self.tools, tool)
    }

    /// Whether this token may see and read the resource `uri`, or the
    /// resources of the template `template` (its text) that `uri` matched.
    pub fn allows_resource(&self, uri: &str, template: Option<&str>) -> bool {
        self.lists(&self.resources, uri) || template.is_some_and(|t| self.lists(&self.resources, t))
    }

    /// Whether this token may see and get `prompt` (and complete its
    /// arguments).
    pub fn allows_prompt(&self, prompt: &str) -> bool {
        self.lists(&self.prompts, prompt)
    }

    /// Whether this token may read `/metrics`, which name every tool and
    /// count its calls: a token allowed everything, or one marked for it.
    pub fn allows_metrics(&self) -> bool {
        self.is_unlimited() || self.metrics
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Token")
            .field("name", &self.name)
            .field("tools", &self.tools)
            .finish_non_exhaustive()
    }
}
