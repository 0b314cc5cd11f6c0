//! Sources that are not well-behaved registries: `https://` URLs served by
//! a local HTTPS server whose certificate a test CA (`support::tls`) signed, and
//! servers answering garbage, endless bodies, a 2 GiB component or one
//! byte at a time. Every download is bounded in size and time, a slow one
//! holds back no other component, and every refusal says what was wrong.

use crate::support;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use airlock::Runtime;
use airlock::policy::Policy;
use airlock::runtime::loading::Loading;
use airlock::source::auth::Credentials;
use airlock::source::store::digest_of;
use airlock::source::{Expect, FetchLimits, Resolver, Source, Store};
use support::http::{http, listening_address};
use support::servers::{Answer, Server};
use support::tls::{Ca, Leaf};
use support::{component, workspace};

/// 200 declaring `length` bytes, then one byte every 0.5 s, for a minute
/// at most (or until the client goes).
fn trickle(length: u64) -> Answer {
    Answer::Trickle {
        length,
        every: Duration::from_millis(500),
        bytes: 1,
        lasting: Duration::from_secs(60),
    }
}

/// A test CA (written to `dir/ca.pem`) and TLS settings for a server
/// whose certificate it signed, for `localhost` and 127.0.0.1.
fn test_ca(dir: &std::path::Path) -> (PathBuf, Arc<rustls::ServerConfig>) {
    let ca = Ca::new();
    let config = ca.server_config(Leaf::For(&["localhost", "127.0.0.1"]));
    (ca.write_pem(dir), config)
}

/// A resolver with a store and lock in `dir`, no credentials.
fn resolver(dir: &std::path::Path) -> Resolver {
    Resolver::new(Store::new(dir.join("store")))
        .with_lock(Some(dir.join("airlock.lock")))
        .with_credentials(Credentials::with(Vec::new()))
}

#[test]
fn https_sources_with_a_test_ca_are_locked_stored_and_served_offline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (ca_file, tls) = test_ca(dir.path());
    let catalog = std::fs::read(component("catalog")).expect("catalog");
    let body = catalog.clone();
    let server = Server::https(tls, move |request| match request.target.as_str() {
        "/dl/catalog.wasm" => Answer::ok(body.clone()),
        _ => Answer::status(404, "no such file"),
    });
    let addr = server.addr;
    let url = format!("https://localhost:{}/dl/catalog.wasm", addr.port());
    let airlock = |ca: Option<&PathBuf>| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_airlock"));
        command
            .args(["call", &url, "lookup_price", "sku=SKU-1001"])
            .current_dir(dir.path())
            .env("AIRLOCK_CACHE_DIR", workspace().join("target/test-cache"))
            .env("AIRLOCK_STORE_DIR", dir.path().join("store"))
            .env_remove("AIRLOCK_CA_FILE");
        if let Some(ca) = ca {
            command.env("AIRLOCK_CA_FILE", ca);
        }
        command.output().expect("airlock")
    };

    let out = airlock(None);
    assert_eq!(out.status.code(), Some(5));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("TLS") && err.contains("UnknownIssuer"),
        "{err}"
    );

    let out = airlock(Some(&ca_file));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("12.5"));
    let lock = std::fs::read_to_string(dir.path().join("airlock.lock")).expect("lock");
    assert!(
        lock.contains(&url) && lock.contains(&digest_of(&catalog)),
        "{lock}"
    );

    // Served from the store: no CA, no server needed any more.
    let out = airlock(None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // A URL that does not exist says so.
    let missing = format!("https://localhost:{}/dl/none.wasm", addr.port());
    let err = resolver(dir.path())
        .with_tls(airlock::source_tls(Some(&ca_file)))
        .fetch(&Source::parse(&missing).expect("url"), Expect::default())
        .expect_err("404")
        .to_string();
    assert!(err.contains("404"), "{err}");
}

#[test]
fn endless_and_oversized_downloads_are_cut_off_with_a_clear_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (ca_file, tls) = test_ca(dir.path());
    let server = Server::https(tls, |request| match request.target.as_str() {
        "/endless.wasm" => Answer::Endless,
        _ => Answer::declares(2 << 30),
    });
    let addr = server.addr;
    let resolver = resolver(dir.path())
        .with_tls(airlock::source_tls(Some(&ca_file)))
        .with_max_size(1 << 20);
    let fetch = |path: &str| {
        let url = format!("https://localhost:{}{path}", addr.port());
        resolver
            .fetch(&Source::parse(&url).expect("url"), Expect::default())
            .expect_err(path)
            .to_string()
    };
    let err = fetch("/endless.wasm");
    assert!(
        err.contains("larger than the 1048576 bytes airlock accepts"),
        "{err}"
    );
    let err = fetch("/huge.wasm");
    assert!(err.contains("it declares 2147483648 bytes"), "{err}");
    assert!(!dir.path().join("airlock.lock").exists());
}

#[test]
fn a_registry_answering_garbage_or_too_much_is_refused_before_anything_loads() {
    let dir = tempfile::tempdir().expect("tempdir");
    let wasm_manifest = |size: u64| {
        serde_json::json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": { "mediaType": "application/vnd.wasm.config.v0+json",
                        "digest": digest_of(b"{}"), "size": 2 },
            "layers": [{ "mediaType": "application/wasm",
                         "digest": digest_of(b"the real component"), "size": size }],
        })
        .to_string()
        .into_bytes()
    };
    let server = Server::http(move |request| {
        let manifest = |body: Vec<u8>| Answer::ok(body);
        match request.target.as_str() {
            "/v2/acme/garbage/manifests/1" => manifest(b"<html>Welcome to nginx!</html>".to_vec()),
            "/v2/acme/endless/manifests/1" => Answer::Endless,
            "/v2/acme/huge/manifests/1" => manifest(wasm_manifest(2 << 30)),
            "/v2/acme/liar/manifests/1" => manifest(wasm_manifest(1000)),
            "/v2/acme/lying-digest/manifests/1" => Answer::Full {
                status: 200,
                headers: vec![("Docker-Content-Digest".into(), digest_of(b"another manifest"))],
                body: wasm_manifest(1000),
            },
            "/v2/acme/index/manifests/1" => manifest(
                br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]}"#
                    .to_vec(),
            ),
            p if p.starts_with("/v2/acme/liar/blobs/") => Answer::Endless,
            _ => Answer::status(404, b"{\"errors\":[]}".to_vec()),
        }
    });
    let addr = server.addr;
    let resolver = resolver(dir.path());
    let fetch = |repo: &str| {
        let reference = format!("oci+http://{addr}/acme/{repo}:1");
        resolver
            .fetch(
                &Source::parse(&reference).expect("reference"),
                Expect::default(),
            )
            .expect_err(repo)
            .to_string()
    };
    for (repo, what) in [
        ("garbage", "the manifest is not JSON"),
        ("endless", "larger than the 4194304 bytes"),
        (
            "huge",
            "the component is 2147483648 bytes, more than the 268435456 bytes",
        ),
        ("liar", "larger than the 1000 bytes"),
        ("lying-digest", "other content than"),
        ("index", "image index"),
        ("missing", "not in the registry"),
    ] {
        let err = fetch(repo);
        assert!(err.contains(what), "{repo}: {err}");
    }
    let seen = server.lines();
    assert!(
        !seen.iter().any(|l| l.contains("/acme/huge/blobs/")),
        "the 2 GiB component was requested: {seen:?}"
    );
    assert!(
        !dir.path().join("airlock.lock").exists(),
        "nothing was locked"
    );
    // The store holds no blob that is not what its name says.
    for entry in std::fs::read_dir(dir.path().join("store/blobs/sha256"))
        .into_iter()
        .flatten()
        .flatten()
    {
        let bytes = std::fs::read(entry.path()).expect("blob");
        assert_eq!(
            digest_of(&bytes),
            format!("sha256:{}", entry.file_name().to_string_lossy())
        );
    }
}

/// `airlock serve` run by a test, its stderr lines sent to a channel;
/// killed when dropped.
struct Serving {
    child: Child,
    addr: SocketAddr,
    lines: mpsc::Receiver<String>,
}

impl Serving {
    /// Serves `paths` from `dir` (store and lock there) with `extra` flags;
    /// returns once it listens, with the lines logged until then.
    fn start(dir: &std::path::Path, paths: &[String], extra: &[&str]) -> (Serving, Vec<String>) {
        // Port 0: the server says which port it got (no race for one
        // chosen before it listens).
        let mut child = Command::new(env!("CARGO_BIN_EXE_airlock"))
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(extra)
            .args(paths)
            .current_dir(dir)
            .env("AIRLOCK_CACHE_DIR", workspace().join("target/test-cache"))
            .env("AIRLOCK_STORE_DIR", dir.join("store"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start airlock");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                eprintln!("[airlock] {line}");
                let _ = tx.send(line);
            }
        });
        let mut serving = Serving {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            lines,
        };
        let early = serving.lines_until("listening on", Duration::from_secs(60));
        serving.addr = early
            .last()
            .and_then(|line| listening_address(line))
            .expect("the address airlock listens on");
        (serving, early)
    }

    /// The lines logged until one containing `text` (included), within `within`.
    fn lines_until(&self, text: &str, within: Duration) -> Vec<String> {
        let deadline = Instant::now() + within;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    let done = line.contains(text);
                    seen.push(line);
                    if done {
                        return seen;
                    }
                }
                Err(_) => panic!("no line with {text:?} within {within:?}: {seen:#?}"),
            }
        }
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Defect 4 of issue 38: a URL trickling its component (a byte every
/// 0.5 s) listed before a local file held the local tool back for as long
/// as the trickle lasted. Now the local tool is served at once, `/readyz`
/// counts the slow one without naming it (it needs no token), the log
/// names it, and the minimum rate cuts it off with an error that says so.
#[test]
fn a_trickling_source_holds_back_no_other_component() {
    let dir = tempfile::tempdir().expect("tempdir");
    let trickling = Server::http(|_| trickle(1 << 20));
    let server = trickling.addr;
    let slow = format!("http://{server}/slow.wasm");
    let local = component("catalog").display().to_string();
    let (serving, early) = Serving::start(
        dir.path(),
        &[slow.clone(), local],
        &[
            "--load-wait",
            "0",
            "--insecure-registry",
            &server.to_string(),
        ],
    );
    assert!(
        early
            .iter()
            .any(|l| l.contains("still") && l.contains(&slow)),
        "the start names the component it waits for: {early:#?}"
    );
    let call = br#"{"jsonrpc":"2.0","id":1,"method":"lookup_price","params":{"sku":"SKU-1001"}}"#;
    let json = [("Content-Type", "application/json")];
    let started = Instant::now();
    let answer = loop {
        let answer = http(serving.addr, "POST", "/rpc", &json, call);
        if answer.body.contains("12.5") || started.elapsed() > Duration::from_secs(10) {
            break answer;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        answer.body.contains(r#""result":12.5"#),
        "the local tool is not served within 10 s: {}",
        answer.body
    );
    let ready = http(serving.addr, "GET", "/readyz", &[], b"");
    assert_eq!(
        (ready.status, ready.body.as_str()),
        (503, "loading: 1 component(s) still fetching\n"),
        "counted, not named"
    );

    let refused = serving.lines_until("refused", Duration::from_secs(60));
    let refused = refused.last().expect("a line");
    assert!(refused.contains(&slow), "{refused}");
    assert!(
        refused.contains("below the minimum rate of 16 KiB/s (--fetch-min-rate)"),
        "{refused}"
    );
    let ready = http(serving.addr, "GET", "/readyz", &[], b"");
    assert_eq!(
        (ready.status, ready.body.as_str()),
        // The catalog's two tools, and the two files of its skill.
        (200, "ready: 2 tool(s), 2 resource(s)\n")
    );
}

/// The rate and the deadline, each on its own, end a trickle with an error
/// that says what happened and which flag to turn.
#[test]
fn a_trickle_is_cut_off_by_the_minimum_rate_or_the_deadline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let trickling = Server::http(|_| trickle(1 << 20));
    let server = trickling.addr;
    let source = Source::parse(&format!("http://{server}/slow.wasm")).expect("url");
    let fetch = |limits: FetchLimits| {
        let started = Instant::now();
        let err = resolver(dir.path())
            .with_insecure(vec![server.to_string()])
            .with_fetch_limits(limits)
            .fetch(&source, Expect::default())
            .expect_err("cut off")
            .to_string();
        (err, started.elapsed())
    };
    let (err, took) = fetch(FetchLimits {
        grace: Duration::from_secs(1),
        ..FetchLimits::default()
    });
    assert!(
        err.contains("below the minimum rate of 16 KiB/s (--fetch-min-rate) after the first 1s"),
        "{err}"
    );
    assert!(took < Duration::from_secs(20), "{took:?}");
    let (err, took) = fetch(FetchLimits {
        timeout: Duration::from_secs(2),
        min_rate: 0,
        ..FetchLimits::default()
    });
    assert!(err.contains("(--fetch-timeout 2; this answer: "), "{err}");
    assert!(err.contains(" of 1 MiB so far"), "{err}");
    assert!(took < Duration::from_secs(20), "{took:?}");
    assert!(!dir.path().join("airlock.lock").exists());
}

/// Components load side by side, yet the first in file order still wins a
/// tool's name: a URL listed first that arrives after a local file
/// declaring the same tools takes them over, whichever finished first.
#[test]
fn the_first_file_wins_a_name_whichever_loads_first() {
    let dir = tempfile::tempdir().expect("tempdir");
    let hostile = std::fs::read(support::test_component("hostile")).expect("hostile");
    let late = Server::http(move |_| {
        Answer::Late(
            Duration::from_secs(2),
            Box::new(Answer::ok(hostile.clone())),
        )
    });
    let server = late.addr;
    let url = format!("http://{server}/first.wasm");
    let local = dir.path().join("second.wasm");
    std::fs::copy(support::test_component("hostile"), &local).expect("copy");
    let runtime = Arc::new(
        Runtime::new(support::sandbox(), Policy::default())
            .with_resolver(resolver(dir.path()).with_insecure(vec![server.to_string()])),
    );
    let mut loading = Loading::start(runtime.clone(), &[PathBuf::from(&url), local.clone()]);
    let mut refused = Vec::new();
    while let Some(report) = loading.next(&runtime) {
        refused.extend(report.refused.iter().map(ToString::to_string));
    }
    assert_eq!(refused.len(), 1, "{refused:?}");
    let first = refused[0].find(&url).expect("names the URL");
    let second = refused[0]
        .find(&local.display().to_string())
        .expect("names the file");
    assert!(first < second, "the URL is first: {}", refused[0]);
    let catalog = runtime.catalog();
    let good = catalog.tool("good").expect("served");
    assert_eq!(good.component.path, PathBuf::from(&url));
    assert_eq!(catalog.components().len(), 1);
}
