//! What one call may take of the host besides memory and time: bytes
//! written into its folders, entries created there, descriptors held at
//! once (`limits.write`, `limits.files`, `limits.open`: files, listings,
//! sockets). Each attack runs beside well-behaved calls, which must keep
//! working; and a served airlock keeps accepting while calls hold every
//! descriptor the process leaves them.

use crate::support;

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use airlock::Runtime;
use serde_json::json;
use support::servers::Server;
use support::{call, http, test_component, text};

struct Fixture {
    runtime: Runtime,
    _dir: tempfile::TempDir,
    /// A listed loopback address that accepts connections and holds them
    /// until the other side closes them.
    listener: Server,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("old.txt"), "existing\n").expect("old.txt");
        let host = dir.path().to_str().expect("utf-8 tempdir");
        let listener = Server::holding();
        let addr = listener.addr;
        let policy = format!(
            r#"
[components.hostile]
destructive = "allow"
network = ["{addr}"]
folders = [{{ host = "{host}", guest = "/data", mode = "read-write" }}]
limits = {{ time = "60s", write = "3MiB", files = 10, open = 20, concurrency = 64 }}
"#
        );
        let runtime = support::runtime(&policy, &[test_component("hostile")]);
        Fixture {
            runtime,
            _dir: dir,
            listener,
        }
    })
}

/// Runs one filesystem op of the hostile component beside good calls and
/// returns its text: `COUNT REASON`.
fn attack(tool: &str, op: &str, path: &str) -> (u64, String) {
    attack_with(tool, json!({ "op": op, "path": path }))
}

/// Runs one until-refused attack with `args` beside good calls and
/// returns its text: `COUNT REASON`.
fn attack_with(tool: &str, args: serde_json::Value) -> (u64, String) {
    let runtime = &fixture().runtime;
    let out = support::beside_good_calls(runtime, || call(runtime, tool, args))
        .expect("the tool reports where it was stopped");
    let out = text(&out);
    let (count, why) = out.split_once(' ').expect("COUNT REASON");
    (count.parse().expect("a count"), why.to_string())
}

#[test]
fn a_call_holds_at_most_its_open_limit_and_gets_them_back_after() {
    for round in 0..3 {
        let (held, _) = attack("fs_read_only", "hoard", "/data/old.txt");
        assert_eq!(
            held, 20,
            "round {round}: the call's limit, and nothing kept from before"
        );
    }
}

#[test]
fn a_call_writes_at_most_its_write_limit() {
    for (tool, name) in [("fs_destructive", "full-d.bin"), ("fs_plain", "full-p.bin")] {
        let (written, why) = attack(tool, "fill", &format!("/data/{name}"));
        assert_eq!(written, 3 << 20, "{tool}: {why}");
        assert!(!why.is_empty(), "{tool}: the guest saw an error");
    }
    // A tool that fails on it: its error names the limit that stopped it.
    let runtime = &fixture().runtime;
    let args = json!({ "op": "fill", "path": "/data/strict.bin", "strict": true });
    let err = call(runtime, "fs_destructive", args).expect_err("the tool fails");
    let message = err.to_string();
    assert!(message.contains("stopped after 3145728 bytes"), "{message}");
    assert!(message.contains("limits.write (3 MiB"), "{message}");
}

#[test]
fn a_call_creates_at_most_its_files_limit() {
    let (created, why) = attack("fs_plain", "spawn", "/data/many");
    assert_eq!(created, 10, "{why}");
}

#[test]
fn folder_listings_count_as_open_descriptors() {
    // A listing holds its folder open (its descriptor, and the stream of
    // entries): at most `limits.open` places between them.
    for round in 0..2 {
        let (listings, _) = attack("fs_read_only", "listings", "/data");
        assert!(
            (10..=20).contains(&listings),
            "round {round}: {listings} listings held with open = 20"
        );
    }
}

#[test]
fn tcp_sockets_count_as_open_descriptors() {
    // Each connection to a listed address is a socket held open.
    let addr = fixture().listener.addr.to_string();
    for round in 0..3 {
        let (sockets, why) = attack_with("tcp_open", json!({ "addr": addr, "hoard": true }));
        assert_eq!(
            sockets, 20,
            "round {round}: the call's limit, and nothing kept from before ({why})"
        );
    }
}

#[test]
fn a_served_airlock_accepts_while_calls_hold_every_descriptor_it_leaves_them() {
    // With a soft limit of 400 open files, all calls together may hold
    // 400 - 256 (the reserve) = 144 descriptors.
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("old.txt"), "existing\n").expect("old.txt");
    let host = dir.path().to_str().expect("utf-8 tempdir");
    let policy = format!(
        r#"
[components.hostile]
folders = [{{ host = "{host}", guest = "/data", mode = "read-only" }}]
limits = {{ time = "60s", open = 100, concurrency = 8 }}
"#
    );
    let served = http::serve_with_nofile(&policy, &[test_component("hostile")], &[], 400);
    let addr = served.addr;
    let rpc = move |body: serde_json::Value| {
        let reply = http::http(
            addr,
            "POST",
            "/rpc",
            &[http::JSON],
            body.to_string().as_bytes(),
        );
        assert_eq!(reply.status, 200, "{}", reply.body);
        reply.json()
    };
    let hoard = |hold: u64| {
        json!({"jsonrpc": "2.0", "id": 1, "method": "fs_read_only",
               "params": {"op": "hoard", "path": "/data/old.txt", "hold": hold}})
    };
    let before = served.open_fds();
    // Two calls take everything and hold it for 4 s.
    let hoarders: Vec<_> = (0..2)
        .map(|_| {
            let body = hoard(4000);
            std::thread::spawn(move || rpc(body))
        })
        .collect();
    let until = Instant::now() + Duration::from_secs(30);
    while served.open_fds() < before + 144 {
        assert!(
            Instant::now() < until,
            "the calls never held 144 descriptors"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Meanwhile new connections are accepted and answered at once, and a
    // call that needs no descriptor of its own runs.
    for n in 0..20 {
        let started = Instant::now();
        let reply = http::http(addr, "GET", "/rpc/describe", &[], b"");
        assert_eq!(reply.status, 200, "request {n}: {}", reply.body);
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "request {n} took {:?}",
            started.elapsed()
        );
    }
    let good = rpc(json!({"jsonrpc": "2.0", "id": 2, "method": "good", "params": {}}));
    assert_eq!(result_text(&good), "ok");
    // Between them the two calls held exactly what the process leaves calls.
    let held: u64 = hoarders
        .into_iter()
        .map(|h| {
            let reply = h.join().expect("a hoarding call");
            result_text(&reply)
                .split(' ')
                .next()
                .and_then(|n| n.parse::<u64>().ok())
                .expect("a count")
        })
        .sum();
    assert_eq!(held, 144);
    // And gave every one back: a call alone gets its own limit again.
    let alone = result_text(&rpc(hoard(0)));
    assert!(alone.starts_with("100 "), "{alone}");
}

/// The text of a `/rpc` result (its first content block).
fn result_text(reply: &serde_json::Value) -> String {
    reply["result"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text result: {reply}"))
        .to_string()
}

#[test]
fn name_lookups_count_as_open_descriptors() {
    // Each lookup runs on the shared blocking pool until its stream is
    // dropped: at most `limits.open` of them at once, and all back after.
    for round in 0..2 {
        let args = json!({ "lookups": true, "name": "localhost" });
        let (lookups, why) = attack_with("tcp_open", args);
        assert_eq!(lookups, 20, "round {round}: {why}");
        assert!(why.contains("new-socket-limit"), "round {round}: {why}");
    }
}
