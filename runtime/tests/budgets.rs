//! What one call may take of the host besides memory and time: bytes
//! written into its folders, entries created there, descriptors held at
//! once (`limits.write`, `limits.files`, `limits.open`). Each attack runs
//! beside well-behaved calls, which must keep working.

mod support;

use std::sync::OnceLock;

use airlock::Runtime;
use serde_json::json;
use support::{call, test_component, text};

struct Fixture {
    runtime: Runtime,
    _dir: tempfile::TempDir,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("old.txt"), "existing\n").expect("old.txt");
        let host = dir.path().to_str().expect("utf-8 tempdir");
        let policy = format!(
            r#"
[components.hostile]
destructive = "allow"
folders = [{{ host = "{host}", guest = "/data", mode = "read-write" }}]
limits = {{ time = "60s", write = "3MiB", files = 10, open = 20, concurrency = 64 }}
"#
        );
        let runtime = support::runtime(&policy, &[test_component("hostile")]);
        Fixture { runtime, _dir: dir }
    })
}

/// Runs one filesystem op of the hostile component beside good calls and
/// returns its text: `COUNT REASON`.
fn attack(tool: &str, op: &str, path: &str) -> (u64, String) {
    let runtime = &fixture().runtime;
    let args = json!({ "op": op, "path": path });
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
