//! Registry credentials and the two ways a registry asks for them.
//!
//! Credentials come from, in order: `AIRLOCK_REGISTRY_AUTH` (for CI: lines
//! of `REGISTRY=USER:SECRET`, or a JSON document shaped like Docker's
//! `config.json`), then Docker's `config.json` (`$DOCKER_CONFIG/config.json`,
//! else `~/.docker/config.json`): a `credHelpers` entry for the registry,
//! its `auths` entry, or the `credsStore` helper. Nothing is sent until a
//! registry answers 401 and says how (`WWW-Authenticate`): `Basic` gets the
//! credentials; `Bearer` (the distribution token flow) sends them, if any,
//! to the realm it names and uses the token it answers. Secrets are never
//! printed.

use std::path::PathBuf;

use base64::Engine as _;
use serde::Deserialize;

/// A user name and a secret (password or token).
#[derive(Clone, PartialEq, Eq)]
pub struct Login {
    pub user: String,
    pub secret: String,
}

impl std::fmt::Debug for Login {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Login")
            .field("user", &self.user)
            .finish_non_exhaustive()
    }
}

impl Login {
    /// The value of an `Authorization: Basic` header.
    pub fn basic(&self) -> String {
        let pair = format!("{}:{}", self.user, self.secret);
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(pair)
        )
    }
}

/// Where credentials are looked up.
#[derive(Debug, Clone, Default)]
pub struct Credentials {
    /// `AIRLOCK_REGISTRY_AUTH`, parsed.
    env: Vec<(String, Login)>,
    /// Docker's `config.json`, if found and valid.
    docker: Option<DockerConfig>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct DockerConfig {
    #[serde(default)]
    auths: std::collections::BTreeMap<String, DockerAuth>,
    #[serde(default)]
    cred_helpers: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    creds_store: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
struct DockerAuth {
    #[serde(default)]
    auth: Option<String>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
}

impl DockerAuth {
    fn login(&self) -> Option<Login> {
        if let (Some(user), Some(secret)) = (&self.username, &self.password) {
            return Some(Login {
                user: user.clone(),
                secret: secret.clone(),
            });
        }
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(self.auth.as_deref()?.trim())
            .ok()?;
        let text = String::from_utf8(decoded).ok()?;
        let (user, secret) = text.split_once(':')?;
        Some(Login {
            user: user.to_string(),
            secret: secret.to_string(),
        })
    }
}

/// The registry an `auths` key names: `https://ghcr.io/v1/` is `ghcr.io`;
/// Docker Hub has several names.
fn normalize(key: &str) -> String {
    let key = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    let host = key.split('/').next().unwrap_or(key);
    match host {
        "index.docker.io" | "registry-1.docker.io" => "docker.io".to_string(),
        other => other.to_string(),
    }
}

impl Credentials {
    /// Reads `AIRLOCK_REGISTRY_AUTH` and Docker's `config.json` now; an
    /// invalid one is reported and skipped.
    pub fn from_env() -> Credentials {
        let env = match std::env::var("AIRLOCK_REGISTRY_AUTH") {
            Ok(text) => Credentials::parse_env(&text).unwrap_or_else(|err| {
                tracing::warn!("AIRLOCK_REGISTRY_AUTH is ignored: {err}");
                Vec::new()
            }),
            Err(_) => Vec::new(),
        };
        let file = std::env::var_os("DOCKER_CONFIG")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".docker")))
            .map(|dir| dir.join("config.json"));
        let docker = file.and_then(|file| {
            let text = std::fs::read(&file).ok()?;
            serde_json::from_slice(&text)
                .map_err(|e| tracing::warn!("{} is ignored: {e}", file.display()))
                .ok()
        });
        Credentials { env, docker }
    }

    /// `REGISTRY=USER:SECRET` lines, or a `config.json`-shaped document.
    pub fn parse_env(text: &str) -> Result<Vec<(String, Login)>, String> {
        if text.trim_start().starts_with('{') {
            let config: DockerConfig = serde_json::from_str(text)
                .map_err(|e| format!("not a config.json-shaped document: {e}"))?;
            return Ok(config
                .auths
                .iter()
                .filter_map(|(k, a)| Some((normalize(k), a.login()?)))
                .collect());
        }
        let mut entries = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let parsed = line.split_once('=').and_then(|(registry, login)| {
                let (user, secret) = login.split_once(':')?;
                Some((
                    normalize(registry),
                    Login {
                        user: user.to_string(),
                        secret: secret.to_string(),
                    },
                ))
            });
            match parsed {
                Some(entry) => entries.push(entry),
                None => {
                    return Err(format!(
                        "line {} is not REGISTRY=USER:SECRET (or a JSON document like \
                         Docker's config.json)",
                        n + 1
                    ));
                }
            }
        }
        Ok(entries)
    }

    /// Credentials given directly (tests, and callers with their own).
    pub fn with(entries: Vec<(String, Login)>) -> Credentials {
        Credentials {
            env: entries,
            docker: None,
        }
    }

    /// The login for `registry` (`host` or `host:port`), if any.
    pub fn login(&self, registry: &str) -> Option<Login> {
        let registry = normalize(registry);
        if let Some((_, login)) = self.env.iter().find(|(r, _)| *r == registry) {
            return Some(login.clone());
        }
        let docker = self.docker.as_ref()?;
        if let Some(helper) = docker
            .cred_helpers
            .iter()
            .find(|(k, _)| normalize(k) == registry)
            .map(|(_, h)| h)
        {
            return helper_login(helper, &registry);
        }
        if let Some(login) = docker
            .auths
            .iter()
            .find(|(k, _)| normalize(k) == registry)
            .and_then(|(_, a)| a.login())
        {
            return Some(login);
        }
        helper_login(docker.creds_store.as_deref()?, &registry)
    }
}

/// How long a credential helper may take: one that waits for a keychain to
/// be unlocked, or a passphrase nobody types, must not hold a fetch (whose
/// own deadline counts only its requests) for good.
const HELPER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Asks `docker-credential-HELPER get` for the login of `registry`.
fn helper_login(helper: &str, registry: &str) -> Option<Login> {
    let program = format!("docker-credential-{helper}");
    run_helper(
        std::process::Command::new(&program),
        &program,
        registry,
        HELPER_TIMEOUT,
    )
}

/// Runs `helper get` (`shown` names it) with `registry` on its stdin, for
/// at most `timeout` (then it is killed, and there is no login).
fn run_helper(
    mut helper: std::process::Command,
    shown: &str,
    registry: &str,
    timeout: std::time::Duration,
) -> Option<Login> {
    use std::io::{Read as _, Write as _};
    #[derive(Deserialize)]
    #[serde(rename_all = "PascalCase")]
    struct Answer {
        username: String,
        secret: String,
    }
    let mut child = helper
        .arg("get")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| tracing::warn!("cannot run {shown}: {e}"))
        .ok()?;
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(registry.as_bytes());
    }
    // Its answer is a line of JSON: it fits the pipe while it runs.
    let started = std::time::Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() < timeout => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            other => {
                let _ = child.kill();
                let _ = child.wait();
                if other.is_ok() {
                    tracing::warn!(
                        "{shown} gave no login within {}s; it was stopped (is it waiting for a \
                         keychain or a passphrase?)",
                        timeout.as_secs()
                    );
                }
                return None;
            }
        }
    };
    let mut stdout = Vec::new();
    child.stdout.take()?.read_to_end(&mut stdout).ok()?;
    if !status.success() {
        return None;
    }
    let answer: Answer = serde_json::from_slice(&stdout).ok()?;
    Some(Login {
        user: answer.username,
        secret: answer.secret,
    })
}

/// What a `WWW-Authenticate` header asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Challenge {
    Basic,
    Bearer {
        realm: String,
        service: Option<String>,
        scope: Option<String>,
    },
}

/// Parses `Basic realm="…"` or `Bearer realm="…",service="…",scope="…"`.
pub fn parse_challenge(header: &str) -> Option<Challenge> {
    let header = header.trim();
    let (scheme, rest) = header.split_once(' ').unwrap_or((header, ""));
    let params = parse_params(rest);
    let get = |name: &str| {
        params
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    };
    if scheme.eq_ignore_ascii_case("basic") {
        Some(Challenge::Basic)
    } else if scheme.eq_ignore_ascii_case("bearer") {
        Some(Challenge::Bearer {
            realm: get("realm")?,
            service: get("service"),
            scope: get("scope"),
        })
    } else {
        None
    }
}

/// `key=value` or `key="quoted \" value"` pairs separated by commas.
fn parse_params(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| *c == ',' || c.is_whitespace()) {
            chars.next();
        }
        let key: String = std::iter::from_fn(|| chars.next_if(|c| *c != '=' && *c != ','))
            .collect::<String>()
            .trim()
            .to_string();
        if key.is_empty() || chars.next() != Some('=') {
            return out;
        }
        let mut value = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => value.extend(chars.next()),
                    '"' => break,
                    c => value.push(c),
                }
            }
        } else {
            value = std::iter::from_fn(|| chars.next_if(|c| *c != ','))
                .collect::<String>()
                .trim()
                .to_string();
        }
        out.push((key, value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A helper that runs the shell `script` (`$1` is `get`).
    #[cfg(unix)]
    fn helper(script: &str) -> std::process::Command {
        let mut command = std::process::Command::new("/bin/sh");
        command.args(["-c", script, "docker-credential-test"]);
        command
    }

    #[cfg(unix)]
    #[test]
    fn a_helper_answers_or_is_stopped() {
        let answers = helper(r#"read r; echo "{\"Username\":\"u-$r\",\"Secret\":\"s\"}""#);
        let long = std::time::Duration::from_secs(60);
        let login = run_helper(answers, "test", "r.example", long).expect("a login");
        assert_eq!(login.user, "u-r.example");
        let hung = helper("exec sleep 600");
        let short = std::time::Duration::from_millis(100);
        assert_eq!(run_helper(hung, "test", "r.example", short), None);
    }

    #[test]
    fn challenges_of_both_kinds() {
        assert_eq!(
            parse_challenge(r#"Basic realm="basic-realm""#),
            Some(Challenge::Basic)
        );
        assert_eq!(
            parse_challenge(
                r#"Bearer realm="https://auth.example/token",service="registry.example",scope="repository:acme/x:pull,push""#
            ),
            Some(Challenge::Bearer {
                realm: "https://auth.example/token".into(),
                service: Some("registry.example".into()),
                scope: Some("repository:acme/x:pull,push".into()),
            })
        );
        assert_eq!(
            parse_challenge(r#"bearer realm=https://a/t, error="insufficient_scope""#),
            Some(Challenge::Bearer {
                realm: "https://a/t".into(),
                service: None,
                scope: None
            })
        );
        assert_eq!(parse_challenge("Bearer service=x"), None, "no realm");
        assert_eq!(parse_challenge("Negotiate abc"), None);
    }

    #[test]
    fn env_credentials_in_both_forms() {
        let lines = Credentials::parse_env("127.0.0.1:5000=ci:s3:cr=t\n\n ghcr.io=bot:tok \n")
            .expect("lines");
        assert_eq!(lines[0].0, "127.0.0.1:5000");
        assert_eq!(lines[0].1.user, "ci");
        assert_eq!(
            lines[0].1.secret, "s3:cr=t",
            "the secret is everything after the first ':'"
        );
        assert_eq!(lines[1].0, "ghcr.io");

        let json = r#"{"auths":{"https://index.docker.io/v1/":{"auth":"dXNlcjpwYXNz"},
                       "reg.example:5000":{"username":"u","password":"p"}}}"#;
        let creds = Credentials::with(Credentials::parse_env(json).expect("json"));
        let hub = creds.login("docker.io").expect("docker hub");
        assert_eq!((hub.user.as_str(), hub.secret.as_str()), ("user", "pass"));
        assert_eq!(creds.login("reg.example:5000").expect("reg").secret, "p");
        assert_eq!(creds.login("other.example"), None);

        let err = Credentials::parse_env("ghcr.io bot tok").expect_err("bad line");
        assert!(err.contains("line 1"), "{err}");
        // Never printed.
        assert!(!format!("{hub:?}").contains("pass"));
        assert_eq!(hub.basic(), "Basic dXNlcjpwYXNz");
    }
}
