//! Publishing and pulling tools through a real OCI registry (Debian's
//! `docker-registry`, started on loopback by each test), interoperating
//! with a client no one here wrote (the ORAS Python SDK), with signatures
//! made by an independent signer (`cryptography`, cosign's format): the
//! lock, the store, offline starts, moved tags, refusals that say which,
//! and Basic authentication.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use airlock::Runtime;
use airlock::policy::Policy;
use airlock::runtime::reload::Watcher;
use airlock::source::auth::Credentials;
use airlock::source::{Resolver, Store};
use serde_json::{Value, json};
use support::registry::{Registry, keygen, oras_tool, sign};
use support::servers::{Answer, Server};
use support::{component, workspace};

/// A folder for one test: the current folder of `airlock` (its lock goes
/// here) and its store (`store/`); the compile cache is the tests' own.
struct Work {
    dir: tempfile::TempDir,
}

impl Work {
    fn new() -> Work {
        Work {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_airlock"));
        command
            .args(args)
            .current_dir(self.dir.path())
            .env("AIRLOCK_CACHE_DIR", workspace().join("target/test-cache"))
            .env("AIRLOCK_STORE_DIR", self.path("store"))
            .env("DOCKER_CONFIG", self.path("docker"))
            .env_remove("AIRLOCK_REGISTRY_AUTH");
        command
    }

    /// `airlock ARGS`, run in this folder.
    fn airlock(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("run airlock")
    }

    /// `airlock ARGS`, which must succeed; its stdout.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.airlock(args);
        assert!(
            out.status.success(),
            "airlock {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `airlock ARGS`, which must fail with exit code 5; its stderr.
    fn refused(&self, args: &[&str]) -> String {
        let out = self.airlock(args);
        assert_eq!(
            out.status.code(),
            Some(5),
            "airlock {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    fn lock(&self) -> String {
        std::fs::read_to_string(self.path("airlock.lock")).unwrap_or_default()
    }

    /// A runtime with `policy` whose resolver uses this folder's store and
    /// lock, and no credentials.
    fn runtime(&self, policy: &str) -> Runtime {
        let policy = Policy::parse(policy, self.dir.path()).expect("policy");
        Runtime::new(support::sandbox(), policy).with_resolver(
            Resolver::new(Store::new(self.path("store")))
                .with_lock(Some(self.path("airlock.lock")))
                .with_credentials(Credentials::with(Vec::new())),
        )
    }
}

/// `airlock publish FILE REF`; returns the manifest digest it printed.
fn publish(work: &Work, file: &Path, reference: &str) -> String {
    let out = work.ok(&["publish", &file.display().to_string(), reference]);
    field(&out, "digest")
}

/// The value after `name` on a line of `airlock pull`/`publish` output.
fn field(out: &str, name: &str) -> String {
    out.lines()
        .find_map(|l| l.trim_start().strip_prefix(name))
        .map(|rest| rest.trim().split(' ').next().unwrap_or("").to_string())
        .unwrap_or_else(|| panic!("no {name} in:\n{out}"))
}

fn price(out: &str) -> f64 {
    let value: Value = serde_json::from_str(out).expect("call result");
    value["structuredContent"]["result"]
        .as_f64()
        .expect("a price")
}

#[test]
fn published_by_airlock_pulled_by_oras_byte_for_byte_in_the_cncf_layout() {
    let registry = Registry::start();
    let work = Work::new();
    let reference = registry.reference("acme/catalog:1.0");
    let digest = publish(&work, &component("catalog"), &reference);

    let out = work.path("oras");
    oras_tool(&[
        "pull",
        &registry.addr,
        "acme/catalog:1.0",
        &out.display().to_string(),
    ]);
    let pulled = std::fs::read(out.join("catalog.wasm")).expect("oras wrote catalog.wasm");
    assert!(
        pulled == std::fs::read(component("catalog")).expect("catalog"),
        "oras pulled other bytes than were published"
    );

    let manifest: Value = serde_json::from_str(&oras_tool(&[
        "manifest",
        &registry.addr,
        "acme/catalog:1.0",
    ]))
    .expect("manifest JSON");
    assert_eq!(
        manifest["config"]["mediaType"],
        "application/vnd.wasm.config.v0+json"
    );
    assert_eq!(manifest["layers"].as_array().map(Vec::len), Some(1));
    assert_eq!(manifest["layers"][0]["mediaType"], "application/wasm");
    let annotations = &manifest["annotations"];
    assert_eq!(annotations["org.opencontainers.image.version"], "1.0");
    assert_eq!(annotations["org.opencontainers.image.title"], "catalog");
    assert!(annotations["org.opencontainers.image.created"].is_string());
    let tools: Value = serde_json::from_str(
        annotations["dev.airlock.tools"]
            .as_str()
            .expect("the tools annotation"),
    )
    .expect("tools JSON");
    let lookup = tools
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "lookup_price"))
        .expect("lookup_price is listed");
    assert_eq!(lookup["annotations"]["readOnlyHint"], true);
    assert!(
        lookup["description"]
            .as_str()
            .is_some_and(|d| !d.is_empty())
    );

    // `airlock inspect` shows the same before anything is fetched or run.
    let shown = work.ok(&["inspect", &reference]);
    assert!(shown.contains(&digest), "{shown}");
    assert!(shown.contains("lookup_price — Look up price"), "{shown}");
    assert!(shown.contains("readOnlyHint=true"), "{shown}");
    assert!(!work.path("store").exists(), "inspect fetched something");
}

#[test]
fn pushed_by_oras_pulled_and_served_by_airlock_then_offline_from_the_store() {
    let mut registry = Registry::start();
    let work = Work::new();
    oras_tool(&[
        "push",
        &registry.addr,
        "acme/oras:1",
        &component("catalog").display().to_string(),
    ]);
    let reference = registry.reference("acme/oras:1");
    let out = work.ok(&["pull", &reference]);
    assert!(out.contains("tools      lookup_price, restock"), "{out}");
    assert!(out.contains("downloaded into the store"), "{out}");
    let digest = field(&out, "digest");
    assert!(work.lock().contains(&digest), "{}", work.lock());

    let call = ["call", &reference, "lookup_price", "sku=SKU-1001"];
    assert_eq!(price(&work.ok(&call)), 12.5);

    // The registry is down: the lock and the store are enough.
    registry.stop();
    assert_eq!(price(&work.ok(&call)), 12.5);
    // A reference the store lacks fails, saying why.
    let err = work.refused(&["call", &registry.reference("acme/other:1"), "x"]);
    assert!(err.contains("cannot connect"), "{err}");
}

#[test]
fn signatures_by_an_independent_signer_pass_and_each_refusal_says_which() {
    let mut registry = Registry::start();
    let work = Work::new();
    let (acme_key, _) = keygen(&work.path("keys"));
    let (other_key, _) = keygen(&work.path("other"));
    let digest = publish(
        &work,
        &component("catalog"),
        &registry.reference("acme/catalog:1"),
    );
    let export = publish(
        &work,
        &component("export"),
        &registry.reference("acme/export:1"),
    );
    let pinned = registry.reference(&format!("acme/catalog@{digest}"));
    std::fs::write(
        work.path("airlock.toml"),
        format!(
            "[defaults]\nverify = {{ key = \"keys/cosign.pub\" }}\n\n\
             [components.catalog]\nsource = \"{pinned}\"\n"
        ),
    )
    .expect("policy");
    let call = [
        "call",
        "--policy",
        "airlock.toml",
        &pinned,
        "lookup_price",
        "sku=SKU-1001",
    ];

    let err = work.refused(&call);
    assert!(err.contains("it is unsigned"), "{err}");
    assert!(
        err.contains(&format!("{}.sig", digest.replace(':', "-"))),
        "{err}"
    );

    sign(&registry, "acme/catalog", &digest, &other_key, None);
    let err = work.refused(&call);
    assert!(err.contains("signed, but not by"), "{err}");
    assert!(err.contains("keys/cosign.pub"), "{err}");

    // A signature by the right key, but over another artifact, copied here.
    sign(&registry, "acme/catalog", &digest, &acme_key, Some(&export));
    let err = work.refused(&call);
    assert!(err.contains(&format!("is over {export}")), "{err}");

    sign(&registry, "acme/catalog", &digest, &acme_key, None);
    assert_eq!(price(&work.ok(&call)), 12.5);

    // Offline, the stored signature is checked again.
    registry.stop();
    assert_eq!(price(&work.ok(&call)), 12.5);

    // A component the policy requires a signature for may not come from a file.
    let file = component("catalog").display().to_string();
    let err = work.refused(&["call", "--policy", "airlock.toml", &file, "lookup_price"]);
    assert!(err.contains("a local file cannot carry"), "{err}");
}

#[test]
fn a_tampered_blob_is_refused_naming_both_digests() {
    let registry = Registry::start();
    let work = Work::new();
    let reference = registry.reference("acme/catalog:1");
    publish(&work, &component("catalog"), &reference);
    let layer =
        airlock::source::store::digest_of(&std::fs::read(component("catalog")).expect("catalog"));
    let blob = registry.blob_file(&layer);
    let mut bytes = std::fs::read(&blob).expect("the registry's blob");
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&blob, bytes).expect("tamper");
    let err = work.refused(&["pull", &reference]);
    assert!(err.contains("other content than"), "{err}");
    assert!(err.contains(&layer), "{err}");
    assert!(!work.path("store/blobs/sha256").join(&layer[7..]).exists());
}

#[test]
fn a_moved_tag_is_reported_and_followed_only_after_pull_update_then_reloaded() {
    let registry = Registry::start();
    let work = Work::new();
    let tag = registry.reference("acme/tool:stable");
    let first = publish(&work, &component("catalog"), &tag);
    let policy = format!("[components.tool]\nsource = \"{tag}\"\n");
    std::fs::write(work.path("airlock.toml"), &policy).expect("policy");

    // Served in-process, as `serve --watch` would.
    let runtime = work.runtime(&policy);
    let report = runtime.load(&[]);
    assert!(
        report.refused.is_empty(),
        "{:?}",
        report
            .refused
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
    );
    assert!(runtime.catalog().tool("lookup_price").is_some());
    assert!(work.lock().contains(&first), "{}", work.lock());
    let mut watcher = Watcher::new(&runtime, &[]);

    // The tag moves in the registry: nothing follows it.
    let second = publish(&work, &component("export"), &tag);
    assert_ne!(first, second);
    for _ in 0..3 {
        assert!(!watcher.poll(&runtime).tools_changed());
    }
    let fresh = work.runtime(&policy);
    fresh.load(&[]);
    assert!(
        fresh.catalog().tool("lookup_price").is_some(),
        "a new start keeps the lock"
    );

    let out = work.airlock(&["pull", "--policy", "airlock.toml"]);
    assert_eq!(out.status.code(), Some(5));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("moved"), "{err}");
    assert!(err.contains(&second) && err.contains(&first), "{err}");
    assert!(work.lock().contains(&first) && !work.lock().contains(&second));

    let out = work.ok(&["pull", "--policy", "airlock.toml", "--update"]);
    assert!(out.contains(&format!("updated (was {first})")), "{out}");
    assert!(out.contains("tools      export_orders"), "{out}");
    assert!(work.lock().contains(&second));

    // The watcher sees the lock move (after it settles) and reloads.
    let mut changed = false;
    for _ in 0..3 {
        changed |= watcher.poll(&runtime).tools_changed();
    }
    assert!(changed, "no reload after the lock moved");
    assert!(runtime.catalog().tool("export_orders").is_some());
    assert!(runtime.catalog().tool("lookup_price").is_none());
}

#[test]
fn a_refused_update_leaves_the_previous_version_serving() {
    let registry = Registry::start();
    let work = Work::new();
    let (key, _) = keygen(&work.path("keys"));
    let tag = registry.reference("acme/tool:stable");
    let first = publish(&work, &component("catalog"), &tag);
    sign(&registry, "acme/tool", &first, &key, None);
    let policy = format!(
        "[components.tool]\nsource = \"{tag}\"\nverify = {{ key = \"keys/cosign.pub\" }}\n"
    );
    std::fs::write(work.path("airlock.toml"), &policy).expect("policy");
    let runtime = work.runtime(&policy);
    assert!(runtime.load(&[]).refused.is_empty());
    let mut watcher = Watcher::new(&runtime, &[]);

    // An unsigned new version: `pull --update` refuses it, the lock stays.
    let second = publish(&work, &component("export"), &tag);
    let err = work.refused(&["pull", "--policy", "airlock.toml", "--update"]);
    assert!(err.contains("it is unsigned"), "{err}");
    assert!(work.lock().contains(&first) && !work.lock().contains(&second));

    // An operator who edits the lock by hand gets a refusal at reload, and
    // the signed version keeps serving.
    let edited = work.lock().replace(&first, &second);
    std::fs::write(work.path("airlock.lock"), edited).expect("edit lock");
    let mut refused = Vec::new();
    for _ in 0..3 {
        refused.extend(watcher.poll(&runtime).refused);
    }
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(runtime.catalog().tool("lookup_price").is_some());
    let out = support::call(&runtime, "lookup_price", json!({"sku": "SKU-1001"}))
        .expect("the previous version serves");
    assert_eq!(out.structured, Some(json!({"result": 12.5})));
}

#[test]
fn a_pin_in_the_policy_decides_over_the_tag() {
    let registry = Registry::start();
    let work = Work::new();
    let tag = registry.reference("acme/tool:1");
    publish(&work, &component("export"), &tag);
    let catalog =
        airlock::source::store::digest_of(&std::fs::read(component("catalog")).expect("catalog"));
    let policy = format!(
        "[components.tool]\nsource = \"{tag}\"\nsha256 = \"{}\"\n",
        &catalog[7..]
    );
    std::fs::write(work.path("airlock.toml"), &policy).expect("policy");
    let err = work.refused(&["pull", "--policy", "airlock.toml"]);
    assert!(err.contains("but the policy pins"), "{err}");
    assert!(work.lock().is_empty(), "a refused resolution is not locked");

    publish(&work, &component("catalog"), &tag);
    let out = work.ok(&["pull", "--policy", "airlock.toml"]);
    assert!(out.contains("lookup_price"), "{out}");
    let check = work.ok(&["check", "airlock.toml"]);
    assert!(check.contains("in the store"), "{check}");
}

/// What both authentication flows share: publishing is refused without
/// credentials, saying how to give them, and works with them; a wrong
/// secret is refused naming the user, never printing the secret. Returns
/// the right credentials (`AIRLOCK_REGISTRY_AUTH`).
fn publish_needing_credentials(work: &Work, registry: &Registry, reference: &str) -> String {
    let file = component("catalog").display().to_string();
    let err = work.refused(&["publish", &file, reference]);
    assert!(err.contains("wants credentials"), "{err}");
    assert!(err.contains("AIRLOCK_REGISTRY_AUTH"), "{err}");

    let creds = format!("{}=ci:s3cret", registry.addr);
    let out = work
        .command(&["publish", &file, reference])
        .env("AIRLOCK_REGISTRY_AUTH", &creds)
        .output()
        .expect("publish");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let out = work
        .command(&["pull", reference])
        .env(
            "AIRLOCK_REGISTRY_AUTH",
            format!("{}=ci:bad-guess", registry.addr),
        )
        .output()
        .expect("pull");
    assert_eq!(out.status.code(), Some(5));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("refused") && err.contains("\"ci\""), "{err}");
    assert!(!err.contains("bad-guess"), "the secret is printed: {err}");
    creds
}

#[test]
fn basic_auth_with_env_or_docker_config_and_clear_refusals() {
    let work = Work::new();
    let line = oras_tool(&["htpasswd", "ci", "s3cret"]);
    let htpasswd = work.path("htpasswd");
    std::fs::write(&htpasswd, line).expect("htpasswd");
    let registry = Registry::with_auth(&format!(
        "auth:\n  htpasswd:\n    realm: airlock-test\n    path: {}\n",
        htpasswd.display()
    ));
    let reference = registry.reference("acme/private:1");

    publish_needing_credentials(&work, &registry, &reference);

    // Docker's config.json, as `docker login` writes it.
    std::fs::create_dir_all(work.path("docker")).expect("docker dir");
    std::fs::write(
        work.path("docker/config.json"),
        json!({ "auths": { registry.addr.clone(): { "auth": "Y2k6czNjcmV0" } } }).to_string(),
    )
    .expect("config.json");
    let out = work.ok(&["pull", &reference]);
    assert!(out.contains("lookup_price"), "{out}");
}

/// A token service for the distribution token flow: checks Basic
/// credentials `ci:s3cret` and answers an ES256 JWT for the scope asked,
/// signed by a key whose self-signed certificate (in the `x5c` header) the
/// registry trusts (`rootcertbundle`). Returns the service (stopped when
/// dropped) and the certificate's PEM.
fn token_service(issuer: &'static str, service: &'static str) -> (Server, String) {
    use base64::Engine as _;
    use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    let key = rcgen::KeyPair::generate().expect("key");
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "airlock test token issuer");
    let cert = params.self_signed(&key).expect("certificate");
    let x5c = base64::engine::general_purpose::STANDARD.encode(cert.der());
    let signer = EcdsaKeyPair::from_pkcs8(
        &ECDSA_P256_SHA256_FIXED_SIGNING,
        &key.serialize_der(),
        &ring::rand::SystemRandom::new(),
    )
    .expect("signer");
    let server = Server::http(move |request| {
        let url = url::Url::parse(&format!("http://token{}", request.target)).expect("url");
        let scope = url
            .query_pairs()
            .find(|(k, _)| k == "scope")
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default();
        let authorized = request
            .header("authorization")
            .iter()
            .any(|h| h.ends_with(&base64::engine::general_purpose::STANDARD.encode("ci:s3cret")));
        if !authorized {
            return Answer::status(401, Vec::new());
        }
        // repository:NAME:ACTIONS
        let mut parts = scope.splitn(3, ':');
        let (kind, name, actions) = (parts.next(), parts.next(), parts.next());
        let access = match (kind, name, actions) {
            (Some(kind), Some(name), Some(actions)) => json!([{
                "type": kind, "name": name, "actions": actions.split(',').collect::<Vec<_>>(),
            }]),
            _ => json!([]),
        };
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock")
            .as_secs();
        let header = json!({ "typ": "JWT", "alg": "ES256", "x5c": [x5c] });
        let claims = json!({
            "iss": issuer, "sub": "ci", "aud": service, "exp": now + 300,
            "nbf": now - 10, "iat": now, "jti": format!("{now}-{}", rand_suffix()),
            "access": access,
        });
        let signing_input = format!(
            "{}.{}",
            b64(header.to_string().as_bytes()),
            b64(claims.to_string().as_bytes())
        );
        let signature = signer
            .sign(&ring::rand::SystemRandom::new(), signing_input.as_bytes())
            .expect("sign");
        let token = format!("{signing_input}.{}", b64(signature.as_ref()));
        Answer::Full {
            status: 200,
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: json!({ "token": token, "expires_in": 300 })
                .to_string()
                .into_bytes(),
        }
    });
    (server, cert.pem())
}

fn rand_suffix() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u8(0);
    hasher.finish()
}

#[test]
fn bearer_token_flow_for_push_and_pull() {
    let work = Work::new();
    let (token_server, cert) = token_service("airlock-test-issuer", "airlock-test");
    let token = token_server.addr;
    let bundle = work.path("token.pem");
    std::fs::write(&bundle, cert).expect("bundle");
    let registry = Registry::with_auth(&format!(
        "auth:\n  token:\n    realm: http://{token}/token\n    service: airlock-test\n    \
         issuer: airlock-test-issuer\n    rootcertbundle: {}\n",
        bundle.display()
    ));
    let reference = registry.reference("acme/bearer:1");

    let creds = publish_needing_credentials(&work, &registry, &reference);
    let out = work
        .command(&["pull", &reference])
        .env("AIRLOCK_REGISTRY_AUTH", &creds)
        .output()
        .expect("pull");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("lookup_price"), "{text}");
}
