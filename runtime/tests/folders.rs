//! Folder grants made binding by hints, against the real hostile component:
//! a tool with no hints gets create-only folders (new files yes, anything
//! that existed before the call no), a destructive tool full read-write, a
//! read-only tool read-only even where the policy says read-write; and no
//! tool reaches outside its mount via `..`, an absolute host path or a
//! planted symlink. Each test compares the host folder byte for byte before
//! and after.

use crate::support;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use airlock::Runtime;
use airlock::call::CallError;
use airlock::sandbox::RunError;
use serde_json::{Value, json};
use support::{call, test_component, text};

/// One shared runtime: a tempdir with `data/` mounted read-write at `/data`
/// and `outside/` (not mounted) holding a secret.
struct Fixture {
    runtime: Runtime,
    _root: tempfile::TempDir,
    data: PathBuf,
    outside: PathBuf,
}

const SECRET: &str = "top secret, outside every mount";

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let root = tempfile::tempdir().expect("tempdir");
        let data = root.path().join("data");
        let outside = root.path().join("outside");
        fs::create_dir(&data).expect("data");
        fs::create_dir(&outside).expect("outside");
        fs::write(outside.join("secret.txt"), SECRET).expect("secret");
        let host = data.to_str().expect("utf-8 tempdir");
        assert!(!host.contains(['"', '\\']), "tempdir needs no escaping");
        let policy = format!(
            r#"
[components.hostile]
destructive = "allow"
folders = [{{ host = "{host}", guest = "/data", mode = "read-write" }}]
"#
        );
        let runtime = support::runtime(&policy, &[test_component("hostile")]);
        Fixture {
            runtime,
            _root: root,
            data,
            outside,
        }
    })
}

/// A fresh folder `/data/<name>` with pre-existing content: `old.txt`,
/// `keep/inner.txt` and an empty folder `empty/`. Returns its host path.
fn scenario(name: &str) -> PathBuf {
    let dir = fixture().data.join(name);
    fs::create_dir(&dir).expect("scenario folder");
    fs::write(dir.join("old.txt"), "existing content\n").expect("old.txt");
    fs::create_dir(dir.join("keep")).expect("keep");
    fs::write(dir.join("keep/inner.txt"), "inner\n").expect("inner.txt");
    fs::create_dir(dir.join("empty")).expect("empty");
    dir
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    File(Vec<u8>),
    Dir,
    Link(PathBuf),
}

/// Every entry under `dir`, by relative path, with file bytes and link
/// targets (links are not followed).
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Entry> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Entry>) {
        for entry in fs::read_dir(dir).expect("read_dir") {
            let path = entry.expect("entry").path();
            let rel = path.strip_prefix(base).expect("prefix").to_path_buf();
            let meta = fs::symlink_metadata(&path).expect("metadata");
            if meta.file_type().is_symlink() {
                out.insert(rel, Entry::Link(fs::read_link(&path).expect("link")));
            } else if meta.is_dir() {
                out.insert(rel, Entry::Dir);
                walk(base, &path, out);
            } else {
                out.insert(rel, Entry::File(fs::read(&path).expect("read")));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// One filesystem operation, run beside well-behaved calls.
fn fs_call(tool: &str, args: Value) -> Result<String, CallError> {
    let runtime = &fixture().runtime;
    support::beside_good_calls(runtime, || call(runtime, tool, args)).map(|out| text(&out))
}

/// Asserts the call failed inside the guest with `not-permitted` (what
/// wasmtime-wasi and the create-only guard both answer), seen by a Rust
/// guest as `EPERM`.
fn assert_not_permitted(result: Result<String, CallError>, what: &str) {
    assert_failed_with(result, "Operation not permitted", what);
}

/// Asserts the call failed inside the guest with an error saying `error`.
fn assert_failed_with(result: Result<String, CallError>, error: &str, what: &str) {
    match result {
        Err(CallError::Run(RunError::Failed(message))) => {
            assert!(
                message.contains(error),
                "{what}: expected {error:?}, got {message:?}"
            );
        }
        other => panic!("{what}: expected a refusal, got {other:?}"),
    }
}

/// Asserts the call failed inside the guest (any error) and leaked nothing.
fn assert_fails_without_leak(result: Result<String, CallError>, what: &str) {
    match result {
        Err(CallError::Run(RunError::Failed(message))) => {
            assert!(!message.contains(SECRET), "{what}: leaked {message:?}");
        }
        other => panic!("{what}: expected a failure, got {other:?}"),
    }
}

/// Every write operation on something that existed before the call.
fn writes_on_pre_existing(dir: &str) -> Vec<(&'static str, Value)> {
    vec![
        (
            "overwrite",
            json!({"op": "overwrite", "path": format!("{dir}/old.txt"), "content": "x"}),
        ),
        (
            "truncate",
            json!({"op": "truncate", "path": format!("{dir}/old.txt")}),
        ),
        (
            "append",
            json!({"op": "append", "path": format!("{dir}/old.txt"), "content": "x"}),
        ),
        (
            "delete",
            json!({"op": "delete", "path": format!("{dir}/old.txt")}),
        ),
        (
            "rename",
            json!({"op": "rename", "path": format!("{dir}/old.txt"), "to": format!("{dir}/moved.txt")}),
        ),
        (
            "rename onto",
            json!({"op": "rename", "path": format!("{dir}/keep/inner.txt"), "to": format!("{dir}/old.txt")}),
        ),
        (
            "rename folder",
            json!({"op": "rename", "path": format!("{dir}/keep"), "to": format!("{dir}/kept")}),
        ),
        (
            "create over",
            json!({"op": "create", "path": format!("{dir}/old.txt"), "content": "x"}),
        ),
        (
            "nested overwrite",
            json!({"op": "overwrite", "path": format!("{dir}/keep/inner.txt"), "content": "x"}),
        ),
        (
            "rmdir",
            json!({"op": "rmdir", "path": format!("{dir}/empty")}),
        ),
    ]
}

#[test]
fn plain_tool_creates_new_files_and_folders() {
    let host = scenario("plain_creates");
    let before = snapshot(&host);
    let out = fs_call(
        "fs_plain",
        json!({"op": "create", "path": "/data/plain_creates/new.txt", "content": "fresh"}),
    )
    .expect("create");
    assert_eq!(out, "created");
    let out = fs_call(
        "fs_plain",
        json!({"op": "mkdir", "path": "/data/plain_creates/keep/sub"}),
    )
    .expect("mkdir");
    assert_eq!(out, "made");

    let mut expected = before;
    // The content was written through the descriptor the call created.
    expected.insert("new.txt".into(), Entry::File(b"fresh".to_vec()));
    expected.insert("keep/sub".into(), Entry::Dir);
    assert_eq!(snapshot(&host), expected);
}

#[test]
fn plain_tool_cannot_change_anything_pre_existing() {
    let host = scenario("plain_refused");
    let before = snapshot(&host);
    let writes = writes_on_pre_existing("/data/plain_refused");
    for (what, args) in &writes {
        let result = fs_call("fs_plain", args.clone());
        if *what == "create over" {
            // An exclusive create of a name that exists fails as anywhere:
            // nothing is refused, the name is taken.
            assert_failed_with(result, "File exists", what);
        } else {
            assert_not_permitted(result, what);
        }
        assert_eq!(snapshot(&host), before, "{what} changed the folder");
    }
    assert_eq!(writes.len(), 10);
}

#[test]
fn plain_tool_sees_its_earlier_files_as_pre_existing() {
    // One call is one operation here: what a call created is pre-existing
    // for the next one.
    let host = scenario("plain_earlier");
    let dir = "/data/plain_earlier";
    fs_call(
        "fs_plain",
        json!({"op": "create", "path": format!("{dir}/mine.txt"), "content": "v1"}),
    )
    .expect("create");
    fs_call(
        "fs_plain",
        json!({"op": "mkdir", "path": format!("{dir}/made")}),
    )
    .expect("mkdir");
    let after_create = snapshot(&host);
    assert_eq!(
        after_create.get(Path::new("mine.txt")),
        Some(&Entry::File(b"v1".to_vec()))
    );

    let later = [
        json!({"op": "append", "path": format!("{dir}/mine.txt"), "content": "v2"}),
        json!({"op": "overwrite", "path": format!("{dir}/mine.txt"), "content": "v2"}),
        json!({"op": "truncate", "path": format!("{dir}/mine.txt")}),
        json!({"op": "delete", "path": format!("{dir}/mine.txt")}),
        json!({"op": "rename", "path": format!("{dir}/mine.txt"), "to": format!("{dir}/yours.txt")}),
        json!({"op": "rmdir", "path": format!("{dir}/made")}),
    ];
    for args in later {
        let what = args.to_string();
        assert_not_permitted(fs_call("fs_plain", args), &what);
        assert_eq!(snapshot(&host), after_create, "{what} changed the folder");
    }
}

#[test]
fn plain_tool_reads_and_lists_everywhere() {
    scenario("plain_reads");
    let out = fs_call(
        "fs_plain",
        json!({"op": "read", "path": "/data/plain_reads/keep/inner.txt"}),
    )
    .expect("read");
    assert_eq!(out, "inner\n");
    let out = fs_call(
        "fs_plain",
        json!({"op": "list", "path": "/data/plain_reads"}),
    )
    .expect("list");
    assert_eq!(out, "empty\nkeep\nold.txt");
}

#[test]
fn destructive_tool_may_change_everything() {
    let host = scenario("destructive");
    let dir = "/data/destructive";
    let ok = |args: Value, expect: &str| {
        let what = args.to_string();
        let out = fs_call("fs_destructive", args).unwrap_or_else(|e| panic!("{what}: {e:?}"));
        assert_eq!(out, expect, "{what}");
    };
    ok(
        json!({"op": "append", "path": format!("{dir}/old.txt"), "content": "more"}),
        "appended",
    );
    assert_eq!(
        fs::read(host.join("old.txt")).expect("old"),
        b"existing content\nmore"
    );
    ok(
        json!({"op": "overwrite", "path": format!("{dir}/keep/inner.txt"), "content": "new"}),
        "overwritten",
    );
    assert_eq!(
        fs::read(host.join("keep/inner.txt")).expect("inner"),
        b"new"
    );
    ok(
        json!({"op": "truncate", "path": format!("{dir}/keep/inner.txt")}),
        "truncated",
    );
    assert_eq!(fs::read(host.join("keep/inner.txt")).expect("inner"), b"");
    ok(
        json!({"op": "rename", "path": format!("{dir}/old.txt"), "to": format!("{dir}/moved.txt")}),
        "renamed",
    );
    ok(
        json!({"op": "delete", "path": format!("{dir}/keep/inner.txt")}),
        "deleted",
    );
    ok(
        json!({"op": "rmdir", "path": format!("{dir}/empty")}),
        "removed",
    );

    let expected: BTreeMap<PathBuf, Entry> = [
        (
            "moved.txt".into(),
            Entry::File(b"existing content\nmore".to_vec()),
        ),
        ("keep".into(), Entry::Dir),
    ]
    .into_iter()
    .collect();
    assert_eq!(snapshot(&host), expected);
}

#[test]
fn read_only_tool_cannot_write_where_the_policy_says_read_write() {
    let host = scenario("read_only");
    let before = snapshot(&host);
    let dir = "/data/read_only";
    let mut writes = writes_on_pre_existing(dir);
    writes.push((
        "create",
        json!({"op": "create", "path": format!("{dir}/new.txt"), "content": "x"}),
    ));
    writes.push((
        "mkdir",
        json!({"op": "mkdir", "path": format!("{dir}/new")}),
    ));
    for (what, args) in &writes {
        assert_not_permitted(fs_call("fs_read_only", args.clone()), what);
        assert_eq!(snapshot(&host), before, "{what} changed the folder");
    }
    let out = fs_call(
        "fs_read_only",
        json!({"op": "read", "path": format!("{dir}/old.txt")}),
    )
    .expect("read");
    assert_eq!(out, "existing content\n");
}

#[test]
fn no_tool_reaches_outside_its_mount() {
    let fixture = fixture();
    let host = scenario("escape");
    // A symlink planted inside the read-write mount, pointing outside it.
    std::os::unix::fs::symlink(fixture.outside.join("secret.txt"), host.join("link"))
        .expect("symlink");
    std::os::unix::fs::symlink(&fixture.outside, host.join("dirlink")).expect("symlink");
    let outside_before = snapshot(&fixture.outside);
    let inside_before = snapshot(&host);
    let absolute = fixture.outside.join("secret.txt");
    let absolute = absolute.to_str().expect("utf-8");

    let paths = [
        "/data/../outside/secret.txt".to_string(),
        "/data/escape/../../outside/secret.txt".to_string(),
        absolute.to_string(),
        "/data/escape/link".to_string(),
        "/data/escape/dirlink/secret.txt".to_string(),
    ];
    for tool in ["fs_read_only", "fs_plain", "fs_destructive"] {
        for path in &paths {
            for args in [
                json!({"op": "read", "path": path}),
                json!({"op": "overwrite", "path": path, "content": "pwned"}),
                json!({"op": "append", "path": path, "content": "pwned"}),
                json!({"op": "truncate", "path": path}),
                json!({"op": "delete", "path": path}),
            ] {
                let what = format!("{tool} {args}");
                // Deleting the planted link itself is the destructive tool's
                // right (it is inside the mount); skip that one case.
                if tool == "fs_destructive" && args["op"] == "delete" && path.ends_with("/link") {
                    continue;
                }
                assert_fails_without_leak(fs_call(tool, args), &what);
                assert_eq!(snapshot(&fixture.outside), outside_before, "{what}");
            }
        }
        let listing = fs_call(tool, json!({"op": "list", "path": "/data/escape/dirlink"}));
        assert_fails_without_leak(listing, &format!("{tool} list via dirlink"));
    }
    assert_eq!(snapshot(&host), inside_before);
    assert_eq!(fs::read_to_string(absolute).expect("secret"), SECRET);
}
