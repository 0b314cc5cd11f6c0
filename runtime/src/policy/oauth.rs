//! `[oauth]`: access tokens issued by the organisation's own authorization
//! servers, accepted as MCP's authorization section prescribes for a
//! resource server. What the policy says: this server's resource
//! identifier (a token's `aud` must name it), the issuers trusted, the
//! signature algorithms accepted, and which scopes give which tools,
//! resources and prompts.
//! Checking a token against it is the HTTP transport's
//! (`transport::http::oauth`); this module only reads and checks the
//! section.
//!
//! ```toml
//! [oauth]
//! resource = "https://tools.example.com/mcp"
//! issuers = ["https://idp.example.com/realms/acme"]
//! algorithms = ["RS256", "ES256"]    # optional; these two by default
//!
//! [[oauth.scopes]]
//! scope = "catalog.read"
//! tools = ["lookup_price"]           # none of tools, resources, prompts: everything
//! resources = ["shipping://rates/{region}"]
//! prompts = ["plan_shipment"]
//!
//! [[oauth.claims]]                   # by another claim of the token
//! claim = "groups"                   # a string, or a list of strings
//! value = "finance"
//! tools = ["export_orders"]
//! ```
//!
//! As for `[[tokens]]`: an entry that lists none of `tools`, `resources`
//! and `prompts` gives everything; one that lists any gives only what it
//! lists (an absent list then gives nothing of its kind).

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value};
use toml::Spanned;
use url::Url;

use super::network::CaBundle;

/// The signature algorithms a token may be signed with: asymmetric only
/// (an HMAC key would be a secret shared with the issuer, which a resource
/// server must not hold; `none` is no signature).
pub const ALGORITHMS: [&str; 9] = [
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA",
];

/// Accepted when the section names none.
const DEFAULT_ALGORITHMS: [&str; 2] = ["RS256", "ES256"];

/// Clock difference forgiven on `exp` and `nbf`, unless `leeway` says.
const DEFAULT_LEEWAY: Duration = Duration::from_secs(60);

/// The section as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(super) struct RawOAuth {
    resource: Spanned<String>,
    issuers: Spanned<Vec<Spanned<String>>>,
    algorithms: Option<Vec<Spanned<String>>>,
    leeway: Option<Spanned<u64>>,
    ca: Option<Spanned<String>>,
    plain_http: Option<bool>,
    #[serde(default)]
    scopes: Vec<RawScope>,
    #[serde(default)]
    claims: Vec<RawClaim>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawClaim {
    claim: Spanned<String>,
    value: Spanned<String>,
    tools: Option<Vec<String>>,
    resources: Option<Vec<String>>,
    prompts: Option<Vec<String>>,
    metrics: Option<bool>,
}

/// Claims airlock checks itself, or that say nothing about who the caller
/// is: a grant by one of them would be a mistake.
const CHECKED_CLAIMS: [&str; 8] = ["iss", "aud", "exp", "nbf", "iat", "jti", "scope", "scp"];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScope {
    scope: Spanned<String>,
    tools: Option<Vec<String>>,
    resources: Option<Vec<String>>,
    prompts: Option<Vec<String>>,
    metrics: Option<bool>,
}

/// The checked section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuth {
    /// This server's resource identifier (RFC 8707), as written: a token's
    /// `aud` must name it, and Protected Resource Metadata (RFC 9728)
    /// describes it.
    pub resource: String,
    /// The authorization servers whose tokens are accepted, as written (a
    /// token's `iss` must be one of them, character for character).
    pub issuers: Vec<String>,
    /// Names from [`ALGORITHMS`].
    pub algorithms: Vec<String>,
    pub leeway: Duration,
    /// Added to the bundled roots for the issuers' HTTPS.
    pub ca: Option<CaBundle>,
    /// Plain `http://` issuers, on loopback only (a test's or a sidecar's).
    pub plain_http: bool,
    pub scopes: Vec<ScopeGrant>,
    pub claims: Vec<ClaimGrant>,
    /// Where this resource's metadata is served (RFC 9728 §3.1).
    metadata: Url,
}

/// What one scope gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeGrant {
    pub scope: String,
    /// Where `scope` is written (line, column), for messages about the entry.
    pub position: (usize, usize),
    /// What a token with this scope may list and use.
    pub gives: Gives,
    /// `metrics = true`: may read `/metrics` though limited to some tools.
    pub metrics: bool,
}

/// What an `[[oauth.scopes]]` or `[[oauth.claims]]` entry lists, as a
/// `[[tokens]]` entry does: listing none of them gives everything; listing
/// any gives only what they list (an absent list then gives nothing of
/// its kind).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Gives {
    /// Tools it may list and call.
    pub tools: Option<Vec<String>>,
    /// Resource URIs and URI templates (as written) it may list and read.
    pub resources: Option<Vec<String>>,
    /// Prompts it may list and get.
    pub prompts: Option<Vec<String>>,
}

impl Gives {
    /// Whether it lists nothing, and so gives everything.
    pub fn everything(&self) -> bool {
        self.tools.is_none() && self.resources.is_none() && self.prompts.is_none()
    }

    /// Adds what `other` lists to what this lists, kind by kind.
    fn add(&mut self, other: &Gives) {
        for (mine, theirs) in [
            (&mut self.tools, &other.tools),
            (&mut self.resources, &other.resources),
            (&mut self.prompts, &other.prompts),
        ] {
            let Some(theirs) = theirs else { continue };
            let mine = mine.get_or_insert_with(Vec::new);
            for name in theirs {
                if !mine.contains(name) {
                    mine.push(name.clone());
                }
            }
        }
    }
}

/// What a token holding a claim value gets (`[[oauth.claims]]`): by
/// subject, group, role — whatever the authorization server puts in its
/// tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimGrant {
    /// The claim's name (`sub`, `groups`, `roles`, `client_id`, …).
    pub claim: String,
    /// Where `claim` is written (line, column), for messages about the entry.
    pub position: (usize, usize),
    /// The value the claim must be, or (a list) hold.
    pub value: String,
    /// What it gives.
    pub gives: Gives,
    pub metrics: bool,
}

impl ClaimGrant {
    fn matches(&self, claims: &Map<String, Value>) -> bool {
        match claims.get(&self.claim) {
            Some(Value::String(one)) => *one == self.value,
            Some(Value::Array(list)) => list.iter().any(|v| v.as_str() == Some(&self.value)),
            _ => false,
        }
    }
}

/// What a token's scopes and claims give together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopedAccess {
    /// Lists nothing when one of the entries gives everything.
    pub gives: Gives,
    pub metrics: bool,
}

impl OAuth {
    /// What a token with `scopes` and `claims` gets: the union of what its
    /// matching `[[oauth.scopes]]` and `[[oauth.claims]]` give, kind by
    /// kind (everything when one of them lists nothing); `None` when none
    /// matches.
    pub fn access(&self, scopes: &[&str], claims: &Map<String, Value>) -> Option<ScopedAccess> {
        let by_scope = self
            .scopes
            .iter()
            .filter(|g| scopes.contains(&g.scope.as_str()))
            .map(|g| (&g.gives, g.metrics));
        let by_claim = self
            .claims
            .iter()
            .filter(|g| g.matches(claims))
            .map(|g| (&g.gives, g.metrics));
        let mut granted = by_scope.chain(by_claim).peekable();
        granted.peek()?;
        let mut access = ScopedAccess {
            gives: Gives::default(),
            metrics: false,
        };
        let mut everything = false;
        for (gives, metrics) in granted {
            access.metrics |= metrics;
            everything |= gives.everything();
            access.gives.add(gives);
        }
        if everything {
            access.gives = Gives::default();
        }
        Some(access)
    }

    /// The scopes the policy grants something to, for clients to ask for.
    pub fn scopes_supported(&self) -> Vec<&str> {
        self.scopes.iter().map(|g| g.scope.as_str()).collect()
    }

    /// Where this resource's metadata is served (RFC 9728 §3.1: the
    /// well-known path goes between the host and the resource's path).
    pub fn metadata_url(&self) -> &Url {
        &self.metadata
    }
}

/// Checks `raw`; errors are `(byte offset, message)`. `resolve` makes a
/// path relative to the policy file, `place` a byte offset its line and
/// column.
pub(super) fn check(
    raw: RawOAuth,
    resolve: impl Fn(&str) -> PathBuf,
    place: impl Fn(usize) -> (usize, usize),
) -> (Option<OAuth>, Vec<(usize, String)>) {
    let mut errors = Vec::new();
    let plain_http = raw.plain_http.unwrap_or(false);
    let resource = match Url::parse(raw.resource.get_ref()) {
        Ok(url) if url.fragment().is_some() => {
            errors.push((
                raw.resource.span().start,
                "`resource` must not have a #fragment (RFC 8707)".into(),
            ));
            None
        }
        Ok(url) if url.scheme() == "https" || url.scheme() == "http" => {
            Some((raw.resource.get_ref().clone(), metadata_url(url)))
        }
        Ok(url) => {
            errors.push((
                raw.resource.span().start,
                format!(
                    "`resource` is this server's address as clients reach it \
                     (https://HOST/mcp), not a {} URL",
                    url.scheme()
                ),
            ));
            None
        }
        Err(e) => {
            errors.push((
                raw.resource.span().start,
                format!(
                    "`resource` is this server's address as clients reach it \
                     (https://HOST/mcp): {e}"
                ),
            ));
            None
        }
    };
    let mut issuers = Vec::new();
    if raw.issuers.get_ref().is_empty() {
        errors.push((
            raw.issuers.span().start,
            "`issuers` names at least one authorization server (its issuer URL)".into(),
        ));
    }
    for issuer in raw.issuers.into_inner() {
        match issuer_url(issuer.get_ref(), plain_http) {
            Ok(_) => issuers.push(issuer.into_inner()),
            Err(why) => errors.push((issuer.span().start, why)),
        }
    }
    let algorithms = match raw.algorithms {
        None => DEFAULT_ALGORITHMS.map(String::from).to_vec(),
        Some(list) => list
            .into_iter()
            .filter_map(|alg| match ALGORITHMS.contains(&alg.get_ref().as_str()) {
                true => Some(alg.into_inner()),
                false => {
                    errors.push((alg.span().start, algorithm_refused(alg.get_ref())));
                    None
                }
            })
            .collect(),
    };
    let leeway = raw.leeway.map_or(DEFAULT_LEEWAY, |l| {
        if *l.get_ref() > 300 {
            errors.push((
                l.span().start,
                "`leeway` is seconds of clock difference forgiven, at most 300".into(),
            ));
        }
        Duration::from_secs(*l.get_ref())
    });
    let ca = raw
        .ca
        .and_then(|ca| match CaBundle::read(&resolve(ca.get_ref())) {
            Ok(bundle) => Some(bundle),
            Err(why) => {
                errors.push((ca.span().start, why));
                None
            }
        });
    let mut scopes: Vec<ScopeGrant> = Vec::new();
    for s in raw.scopes {
        let name = s.scope.get_ref();
        if name.is_empty() || name.contains(char::is_whitespace) || name.contains('"') {
            errors.push((
                s.scope.span().start,
                format!("{name:?} is not a scope (a scope is one word, no spaces or quotes)"),
            ));
        } else if scopes.iter().any(|g| g.scope == *name) {
            errors.push((
                s.scope.span().start,
                format!("scope {name:?} has two [[oauth.scopes]] entries; merge them"),
            ));
        } else {
            scopes.push(ScopeGrant {
                position: place(s.scope.span().start),
                scope: s.scope.into_inner(),
                gives: Gives {
                    tools: s.tools,
                    resources: s.resources,
                    prompts: s.prompts,
                },
                metrics: s.metrics.unwrap_or(false),
            });
        }
    }
    let mut claims: Vec<ClaimGrant> = Vec::new();
    for c in raw.claims {
        let name = c.claim.get_ref();
        if name.is_empty() {
            errors.push((
                c.claim.span().start,
                "`claim` names a claim of the token".into(),
            ));
        } else if CHECKED_CLAIMS.contains(&name.as_str()) {
            errors.push((
                c.claim.span().start,
                format!(
                    "`{name}` says nothing about who the caller is (airlock checks it itself); \
                     grant by `sub`, a group or role claim, or in [[oauth.scopes]] by scope"
                ),
            ));
        } else {
            claims.push(ClaimGrant {
                position: place(c.claim.span().start),
                claim: c.claim.into_inner(),
                value: c.value.into_inner(),
                gives: Gives {
                    tools: c.tools,
                    resources: c.resources,
                    prompts: c.prompts,
                },
                metrics: c.metrics.unwrap_or(false),
            });
        }
    }
    if scopes.is_empty() && claims.is_empty() && errors.is_empty() {
        errors.push((
            raw.resource.span().start,
            "[oauth] gives no tool yet: add [[oauth.scopes]] entries, each a `scope` and the \
             `tools`, `resources` and `prompts` it gives (none of them: everything), or \
             [[oauth.claims]] entries by another claim"
                .into(),
        ));
    }
    let oauth = resource
        .filter(|_| errors.is_empty())
        .map(|(resource, metadata)| OAuth {
            resource,
            metadata,
            issuers,
            algorithms,
            leeway,
            ca,
            plain_http,
            scopes,
            claims,
        });
    (oauth, errors)
}

/// The well-known path goes between the host and the resource's path.
fn metadata_url(mut resource: Url) -> Url {
    let path = resource.path().trim_end_matches('/').to_string();
    resource.set_path(&format!("/.well-known/oauth-protected-resource{path}"));
    resource.set_query(None);
    resource
}

/// An issuer's URL: https, or plain http on loopback when `plain_http`.
fn issuer_url(text: &str, plain_http: bool) -> Result<Url, String> {
    let url = Url::parse(text).map_err(|e| format!("issuer {text:?} is not a URL: {e}"))?;
    let loopback = match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(name)) => name == "localhost",
        None => false,
    };
    match url.scheme() {
        "https" => Ok(url),
        "http" if plain_http && loopback => Ok(url),
        "http" if plain_http => Err(format!(
            "issuer {text} is plain http:// on a host that is not loopback; \
             `plain-http` allows only 127.0.0.1, ::1 and localhost"
        )),
        "http" => Err(format!(
            "issuer {text} is plain http://; an issuer's keys are fetched over HTTPS \
             (for an issuer on this machine, set `plain-http = true`)"
        )),
        other => Err(format!("issuer {text} is a {other} URL; expected https://")),
    }
}

fn algorithm_refused(name: &str) -> String {
    let why = match name.to_ascii_uppercase().as_str() {
        "NONE" => "`none` is no signature at all".to_string(),
        n if n.starts_with("HS") => format!(
            "{name} needs a secret shared with the issuer, which a resource server must not \
             hold (and would let a token be forged with the issuer's public key)"
        ),
        _ => format!("{name} is not a JWS signature algorithm airlock knows"),
    };
    format!("{why}; expected some of {}", ALGORITHMS.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> (Option<OAuth>, Vec<String>) {
        let raw: RawOAuth = toml::from_str(text).expect("reads");
        let (oauth, errors) = check(raw, |p: &str| PathBuf::from(p), |_| (1, 1));
        (oauth, errors.into_iter().map(|(_, e)| e).collect())
    }

    const GOOD: &str = "resource = \"https://tools.example.com/mcp\"\n\
                        issuers = [\"https://idp.example.com/realms/acme\"]\n\
                        [[scopes]]\nscope = \"catalog.read\"\ntools = [\"lookup_price\"]\n\
                        [[scopes]]\nscope = \"admin\"\nmetrics = true\n";

    #[test]
    fn a_good_section_reads_with_its_defaults() {
        let (oauth, errors) = read(GOOD);
        assert!(errors.is_empty(), "{errors:?}");
        let oauth = oauth.expect("checked");
        assert_eq!(oauth.algorithms, ["RS256", "ES256"]);
        assert_eq!(oauth.leeway, Duration::from_secs(60));
        assert_eq!(oauth.scopes_supported(), ["catalog.read", "admin"]);
        assert_eq!(
            oauth.metadata_url().as_str(),
            "https://tools.example.com/.well-known/oauth-protected-resource/mcp"
        );
    }

    #[test]
    fn scopes_give_the_union_of_their_grants() {
        let (oauth, _) = read(GOOD);
        let oauth = oauth.expect("checked");
        let none = Map::new();
        assert_eq!(oauth.access(&["other"], &none), None);
        assert_eq!(oauth.access(&[], &none), None);
        assert_eq!(
            oauth.access(&["catalog.read", "other"], &none),
            Some(ScopedAccess {
                gives: Gives {
                    tools: Some(vec!["lookup_price".into()]),
                    ..Gives::default()
                },
                metrics: false
            })
        );
        assert_eq!(
            oauth.access(&["catalog.read", "admin"], &none),
            Some(ScopedAccess {
                gives: Gives::default(),
                metrics: true
            })
        );
    }

    #[test]
    fn claims_give_tools_by_value_or_membership() {
        let (oauth, errors) = read(
            "resource = \"https://a/mcp\"\nissuers = [\"https://i\"]\n\
             [[claims]]\nclaim = \"groups\"\nvalue = \"finance\"\ntools = [\"export\"]\n\
             [[claims]]\nclaim = \"sub\"\nvalue = \"alice\"\ntools = [\"restock\"]\n",
        );
        assert!(errors.is_empty(), "{errors:?}");
        let oauth = oauth.expect("checked");
        let claims = |v: serde_json::Value| v.as_object().cloned().expect("an object");
        let finance = claims(serde_json::json!({"sub": "bob", "groups": ["sales", "finance"]}));
        assert_eq!(
            oauth.access(&[], &finance).map(|a| a.gives.tools),
            Some(Some(vec!["export".into()]))
        );
        let alice = claims(serde_json::json!({"sub": "alice", "groups": "finance"}));
        assert_eq!(
            oauth.access(&[], &alice).map(|a| a.gives.tools),
            Some(Some(vec!["export".into(), "restock".into()]))
        );
        let other = claims(serde_json::json!({"sub": "carol", "groups": [1, "sales"]}));
        assert_eq!(oauth.access(&[], &other), None);
        let (_, errors) = read(
            "resource = \"https://a/mcp\"\nissuers = [\"https://i\"]\n\
             [[claims]]\nclaim = \"aud\"\nvalue = \"x\"\n",
        );
        assert!(
            errors[0].contains("says nothing about who the caller is"),
            "{errors:?}"
        );
    }

    #[test]
    fn resources_and_prompts_are_given_like_tools() {
        let (oauth, errors) = read(
            "resource = \"https://a/mcp\"\nissuers = [\"https://i\"]\n\
             [[scopes]]\nscope = \"rates\"\nresources = [\"shipping://rates/{region}\"]\n\
             [[scopes]]\nscope = \"plan\"\nprompts = [\"plan_shipment\"]\ntools = [\"quote\"]\n\
             [[scopes]]\nscope = \"all\"\n\
             [[claims]]\nclaim = \"groups\"\nvalue = \"ops\"\nprompts = [\"triage\"]\n",
        );
        assert!(errors.is_empty(), "{errors:?}");
        let oauth = oauth.expect("checked");
        let none = Map::new();
        let rates = oauth.access(&["rates"], &none).expect("granted").gives;
        assert_eq!(
            rates,
            Gives {
                resources: Some(vec!["shipping://rates/{region}".into()]),
                ..Gives::default()
            },
            "lists resources only: no tool, no prompt"
        );
        assert!(!rates.everything());
        let both = oauth.access(&["rates", "plan"], &none).expect("granted");
        assert_eq!(both.gives.tools, Some(vec!["quote".into()]));
        assert_eq!(both.gives.prompts, Some(vec!["plan_shipment".into()]));
        assert_eq!(
            both.gives.resources,
            Some(vec!["shipping://rates/{region}".into()])
        );
        let ops = serde_json::json!({"groups": ["ops"]});
        let ops = ops.as_object().expect("an object");
        let with_claim = oauth.access(&["plan"], ops).expect("granted").gives;
        assert_eq!(
            with_claim.prompts,
            Some(vec!["plan_shipment".into(), "triage".into()])
        );
        assert!(
            oauth
                .access(&["rates", "all"], &none)
                .expect("granted")
                .gives
                .everything(),
            "an entry listing nothing gives everything"
        );
    }

    #[test]
    fn what_cannot_be_safe_is_refused_with_the_reason() {
        for (text, expected) in [
            (
                "resource = \"https://a/mcp\"\nissuers = [\"http://idp.example.com\"]\n",
                "plain http://",
            ),
            (
                "resource = \"https://a/mcp\"\nissuers = [\"http://idp.example.com\"]\nplain-http = true\n",
                "not loopback",
            ),
            (
                "resource = \"https://a/mcp\"\nissuers = []\n",
                "at least one authorization server",
            ),
            (
                "resource = \"https://a/mcp\"\nissuers = [\"https://i\"]\nalgorithms = [\"HS256\"]\n",
                "secret shared with the issuer",
            ),
            (
                "resource = \"https://a/mcp\"\nissuers = [\"https://i\"]\nalgorithms = [\"none\"]\n",
                "no signature at all",
            ),
            (
                "resource = \"https://a/mcp#x\"\nissuers = [\"https://i\"]\n",
                "#fragment",
            ),
            (
                "resource = \"tools\"\nissuers = [\"https://i\"]\n",
                "https://HOST/mcp",
            ),
            (
                "resource = \"https://a/mcp\"\nissuers = [\"https://i\"]\n",
                "add [[oauth.scopes]]",
            ),
            (
                "resource = \"https://a/mcp\"\nissuers = [\"https://i\"]\n\
                 [[scopes]]\nscope = \"a b\"\n",
                "not a scope",
            ),
        ] {
            let (oauth, errors) = read(text);
            assert!(oauth.is_none(), "{text}");
            assert!(
                errors.iter().any(|e| e.contains(expected)),
                "{text}: {errors:?}"
            );
        }
        let (oauth, errors) = read(
            "resource = \"http://127.0.0.1:8414/mcp\"\nissuers = [\"http://127.0.0.1:9000\"]\n\
             plain-http = true\n[[scopes]]\nscope = \"s\"\n",
        );
        assert!(errors.is_empty() && oauth.is_some(), "{errors:?}");
    }
}
