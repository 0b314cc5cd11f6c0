//! Tests of the policy file: the documented example, merging, accessors, and
//! one test per refusal, each checking the line the error points at.

use std::env::VarError;
use std::path::Path;
use std::time::Duration;

use super::*;
use crate::policy::{Asks, Consent, Limits};

/// A cosign public key (ECDSA P-256), as `cosign generate-key-pair` writes it.
const ACME_PUB: &str = "-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEEnHVnwGsFp0y2jqiksvU4w82kvIM
cSvKRZaqpkeiDEtgwcNaVYuv6cxUcHa+5fTepueQseGBVhvUIbnMVZnw1A==
-----END PUBLIC KEY-----
";

/// A folder with `data/`, `shared/` and `keys/acme.pub` inside, standing
/// in for the policy's folder.
fn base() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir(dir.path().join("data")).expect("data dir");
    std::fs::create_dir(dir.path().join("shared")).expect("shared dir");
    std::fs::create_dir(dir.path().join("keys")).expect("keys dir");
    std::fs::write(dir.path().join("keys/acme.pub"), ACME_PUB).expect("key");
    dir
}

/// The runtime environment the tests see: only CATALOG_TOKEN is set.
fn env(name: &str) -> Result<String, VarError> {
    match name {
        "CATALOG_TOKEN" => Ok("s3cret-value".to_string()),
        _ => Err(VarError::NotPresent),
    }
}

fn parse(text: &str, base: &Path) -> Result<Policy, PolicyError> {
    Policy::parse_with_env(text, base, env)
}

fn ok(text: &str) -> (Policy, tempfile::TempDir) {
    let dir = base();
    let policy = parse(text, dir.path()).unwrap_or_else(|e| panic!("{e}"));
    (policy, dir)
}

/// Parses `text`, expects a refusal at `line` whose message contains `what`.
#[track_caller]
fn refused(text: &str, line: usize, what: &str) -> String {
    let dir = base();
    let err = match parse(text, dir.path()) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e.to_string(),
    };
    let prefix = format!("<policy>:{line}:");
    assert!(err.starts_with(&prefix), "expected line {line}: {err}");
    assert!(err.contains(what), "expected {what:?} in: {err}");
    err
}

/// The example in the module documentation, with its absolute folder moved
/// into the test folder.
fn documented_example(dir: &Path) -> String {
    let source = include_str!("file.rs");
    let mut lines = source
        .lines()
        .filter_map(|l| l.strip_prefix("//!"))
        .map(|l| l.strip_prefix(' ').unwrap_or(l))
        .skip_while(|l| *l != "```toml")
        .skip(1)
        .take_while(|l| *l != "```")
        .collect::<Vec<_>>()
        .join("\n");
    lines.push('\n');
    lines.replace("/srv/shared", &dir.join("shared").display().to_string())
}

#[test]
fn the_documented_example_is_valid() {
    let dir = base();
    let text = documented_example(dir.path());
    assert!(text.contains("[components.catalog]"), "example not found");
    let policy = parse(&text, dir.path()).unwrap_or_else(|e| panic!("{e}"));

    assert_eq!(
        policy.audit_path(),
        Some(dir.path().join("audit.jsonl").as_path())
    );
    let catalog = policy.component("catalog").expect("catalog section");
    assert_eq!(catalog.name, "catalog");
    assert_eq!(catalog.cordon, None);
    assert_eq!(
        policy.component("export").and_then(|c| c.cordon.as_deref()),
        Some("acme")
    );
    assert_eq!(
        catalog.source,
        Some(crate::source::Source::File(
            dir.path().join("components/catalog.wasm")
        ))
    );
    assert_eq!(catalog.sha256.as_deref().map(str::len), Some(64));
    assert_eq!(policy.components().count(), 4);
    let export = policy.component("export").expect("export section");
    assert_eq!(
        export.source.as_ref().map(ToString::to_string).as_deref(),
        Some("oci://ghcr.io/acme/export:1.2.0")
    );
    assert_eq!(
        policy.verify_key("export").map(|k| k.label.clone()),
        Some(dir.path().join("keys/acme.pub").display().to_string())
    );
    assert_eq!(policy.verify_key("catalog"), None);
    assert_eq!(
        policy.declared_hints("fetch", "fetch"),
        Some(crate::tool::Hints {
            read_only: true,
            open_world: true,
            ..Default::default()
        })
    );
    assert_eq!(policy.declared_hints("catalog", "restock"), None);
    assert!(policy.unmatched_tools("catalog", &["restock"]).is_empty());
    let unmatched = policy.unmatched_tools("catalog", &["lookup", "reorder"]);
    assert_eq!(unmatched.len(), 1);
    let line = documented_example(Path::new("/"))
        .lines()
        .position(|l| l == "[components.catalog.tools.restock]")
        .expect("the example has a restock section")
        + 1;
    assert_eq!(
        unmatched[0].to_string(),
        format!(
            "<policy>:{line}:27: [components.catalog.tools.restock] names no tool of catalog \
             (it declares lookup, reorder); correct the name or remove the section"
        )
    );
    assert!(policy.uses_fuel());

    let s = policy.settings_for("catalog", "lookup_price");
    assert_eq!(s.folders.len(), 2);
    assert_eq!(s.folders[0].host, dir.path().join("./data"));
    assert_eq!(s.folders[0].guest, "/data");
    assert_eq!(s.folders[0].mode, FolderMode::ReadWrite);
    assert_eq!(
        s.folders[1].mode,
        FolderMode::ReadOnly,
        "mode defaults to read-only"
    );
    assert_eq!(s.network.len(), 7);
    assert_eq!(s.network[6].to_string(), "[::1]:8080");
    assert_eq!(
        s.env,
        [
            ("API_URL".to_string(), "https://api.example.com".to_string()),
            ("TOKEN".to_string(), "s3cret-value".to_string()),
        ]
    );
    assert_eq!(s.limits.time, Duration::from_secs(10));
    assert_eq!(s.limits.memory, 64 << 20);
    assert_eq!(s.limits.fuel, Some(1_000_000_000));
    assert_eq!(s.destructive, Consent::Deny);
    assert_eq!(
        policy.settings_for("catalog", "restock").destructive,
        Consent::Allow
    );
    assert_eq!(s.trust, crate::policy::Trust::default());
    assert!(s.credentials.is_empty());
    let tracker = policy.settings_for("tracker", "any");
    assert_eq!(tracker.network.len(), 2);
    assert_eq!(tracker.credentials.len(), 1);
    let c = &tracker.credentials[0];
    assert_eq!(
        c.describe(),
        "authorization for https://api.example.com (from CATALOG_TOKEN)"
    );
    assert_eq!(c.value.expose(), "Bearer s3cret-value");
    assert!(policy.has_credentials());

    let token = &policy.tokens()[0];
    assert_eq!(token.name, "agent-1");
    assert!(
        token.accepts("foo"),
        "the example digest is sha256(\"foo\")"
    );
    assert!(!token.accepts("bar"));
    assert!(token.allows_tool("lookup_price"));
    assert!(!token.allows_tool("restock"));
}

#[test]
fn settings_never_show_env_values() {
    let (policy, _dir) = ok("[defaults]\nenv = { TOKEN = { from = \"CATALOG_TOKEN\" } }\n");
    let s = policy.settings_for("any", "tool");
    assert_eq!(s.env[0].1, "s3cret-value");
    let shown = format!("{s:?}");
    assert!(
        shown.contains("TOKEN") && !shown.contains("s3cret"),
        "{shown}"
    );
}

#[test]
fn default_policy_grants_nothing() {
    for policy in [Policy::default(), ok("").0] {
        let s = policy.settings_for("catalog", "restock");
        assert!(s.folders.is_empty() && s.network.is_empty() && s.env.is_empty());
        assert_eq!(s.destructive, Consent::Deny);
        assert_eq!(s.limits, Limits::default());
        assert!(policy.audit_path().is_none());
        assert!(policy.tokens().is_empty());
        assert!(policy.component("catalog").is_none());
        assert!(policy.unmatched_tools("catalog", &[]).is_empty());
        assert!(policy.unmatched_components(&[]).is_empty());
        assert!(!policy.uses_fuel());
    }
}

#[test]
fn sections_merge_key_by_key_and_lists_are_replaced() {
    let (policy, dir) = ok(r#"
[defaults]
destructive = "confirm"
network = ["default.example.com"]
env = { A = "1", B = "2" }
folders = [ { host = "shared", guest = "/shared" } ]
limits = { memory = "32MiB", time = "2s", output = 1000, log = "1KiB", concurrency = 4, write = "2MiB", files = 5, open = 7, messages = 9 }

[components.catalog]
folders = [ { host = "data", guest = "/data", mode = "read-write" } ]
env = { C = "3" }
[components.catalog.limits]
time = "10s"

[components.catalog.tools.restock]
destructive = "allow"
network = []
limits = { memory = "128MiB", fuel = 5000 }
"#);
    // Unknown component: defaults only.
    let s = policy.settings_for("other", "x");
    assert_eq!(s.destructive, Consent::Confirm);
    assert_eq!(s.network[0].to_string(), "default.example.com");
    assert_eq!(s.folders[0].guest, "/shared");
    assert_eq!(s.env.len(), 2);
    assert_eq!(
        s.limits,
        Limits {
            memory: 32 << 20,
            time: Duration::from_secs(2),
            fuel: None,
            output: 1000,
            log: 1024,
            concurrency: 4,
            write: 2 << 20,
            files: 5,
            open: 7,
            messages: 9,
            ..Limits::default()
        }
    );

    // Component: its lists replace the defaults'; limits override one by one.
    let s = policy.settings_for("catalog", "lookup");
    assert_eq!(s.destructive, Consent::Confirm);
    assert_eq!(s.network.len(), 1, "network inherited");
    assert_eq!(s.folders.len(), 1);
    assert_eq!(s.folders[0].guest, "/data");
    assert_eq!(s.folders[0].host, dir.path().join("data"));
    assert_eq!(s.env, [("C".to_string(), "3".to_string())]);
    assert_eq!(s.limits.time, Duration::from_secs(10));
    assert_eq!(s.limits.memory, 32 << 20);
    assert_eq!(s.limits.concurrency, 4);

    // Tool: overrides the component, and an empty list takes the network away.
    let s = policy.settings_for("catalog", "restock");
    assert_eq!(s.destructive, Consent::Allow);
    assert!(s.network.is_empty());
    assert_eq!(s.folders[0].guest, "/data");
    assert_eq!(s.limits.memory, 128 << 20);
    assert_eq!(s.limits.time, Duration::from_secs(10));
    assert_eq!(s.limits.fuel, Some(5000));
    assert_eq!(s.limits.output, 1000);
    assert!(policy.uses_fuel());
}

#[test]
fn load_reads_the_file_and_resolves_paths_against_its_folder() {
    let dir = base();
    let path = dir.path().join("airlock.toml");
    std::fs::write(
        &path,
        "audit = \"logs/audit.jsonl\"\n[components.c]\nsource = \"c.wasm\"\nfolders = [ { host = \"data\", guest = \"/d\" } ]\n",
    )
    .expect("write policy");
    let policy = Policy::load(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        policy.audit_path(),
        Some(dir.path().join("logs/audit.jsonl").as_path())
    );
    assert_eq!(
        policy.component("c").and_then(|c| c.source.clone()),
        Some(crate::source::Source::File(dir.path().join("c.wasm")))
    );

    std::fs::write(&path, "[defaults]\n\nlimits = { time = \"5 hours\" }\n").expect("write");
    let err = Policy::load(&path).expect_err("bad time").to_string();
    assert!(err.starts_with(&format!("{}:3:", path.display())), "{err}");

    let missing = dir.path().join("nope.toml");
    let err = Policy::load(&missing)
        .expect_err("missing file")
        .to_string();
    assert!(err.starts_with(&missing.display().to_string()), "{err}");
    assert!(err.contains("cannot read"), "{err}");
}

#[test]
fn error_column_points_at_the_value() {
    let err = refused(
        "[defaults]\nlimits = { memory = \"lots\" }\n",
        2,
        "invalid size",
    );
    assert!(err.starts_with("<policy>:2:21:"), "{err}");
}

#[test]
fn refuses_unknown_keys_everywhere() {
    refused("auditt = \"a\"\n", 1, "unknown field `auditt`");
    refused(
        "[defaults]\nlimits = {}\nfolder = []\n",
        3,
        "unknown field `folder`",
    );
    refused(
        "[components.c]\nsource = \"c.wasm\"\nsha = \"x\"\n",
        3,
        "unknown field `sha`",
    );
    refused(
        "[components.c.limits]\ntime = \"1s\"\ncpu = 3\n",
        3,
        "unknown field `cpu`",
    );
    refused(
        "[components.c.tools.t]\ndestructive = \"allow\"\nsource = \"x.wasm\"\n",
        3,
        "unknown field `source`",
    );
    refused(
        "[defaults]\nfolders = [\n  { host = \"data\", guest = \"/d\", writable = true },\n]\n",
        3,
        "unknown field `writable`",
    );
    refused(
        "[defaults]\nenv = { A = { form = \"X\" } }\n",
        2,
        "unknown field `form`",
    );
    refused(
        "[[tokens]]\nname = \"a\"\nsha256 = \"x\"\nscope = []\n",
        4,
        "unknown field `scope`",
    );
}

#[test]
fn refuses_bad_sizes_and_times() {
    refused(
        "[defaults]\n\nlimits = { memory = \"64MB\" }\n",
        3,
        "invalid size \"64MB\"",
    );
    refused(
        "[defaults.limits]\noutput = \"1.5MiB\"\n",
        2,
        "invalid size",
    );
    refused("[defaults.limits]\nlog = -1\n", 2, "negative");
    refused(
        "[defaults.limits]\ntime = \"5h\"\n",
        2,
        "invalid duration \"5h\"",
    );
    refused("[defaults.limits]\ntime = 5\n", 2, "has no unit");
    refused(
        "[defaults.limits]\nmemory = 0\n",
        2,
        "memory must be greater than 0",
    );
    refused(
        "[defaults.limits]\ntime = \"0s\"\n",
        2,
        "time must be greater than 0",
    );
    refused(
        "[defaults.limits]\nconcurrency = 0\n",
        2,
        "concurrency must be greater than 0",
    );
    refused(
        "[defaults.limits]\nfuel = 0\n",
        2,
        "fuel must be greater than 0",
    );
    for key in ["write", "files", "open"] {
        refused(
            &format!("[defaults.limits]\n{key} = 0\n"),
            2,
            &format!("{key} must be greater than 0"),
        );
    }
}

#[test]
fn refuses_bad_host_patterns() {
    refused(
        "[components.c]\nnetwork = [\n  \"api.example.com\",\n  \"ftp://x.example.com\",\n]\n",
        4,
        "invalid host pattern \"ftp://x.example.com\"",
    );
    refused("[defaults]\nnetwork = [\"10.0.0.1/8\"]\n", 2, "bits set");
    refused("[defaults]\nnetwork = [\"*\"]\n", 2, "invalid host pattern");
}

#[test]
fn refuses_bad_modes_and_consent() {
    refused(
        "[defaults]\nfolders = [ { host = \"data\", guest = \"/d\", mode = \"rw\" } ]\n",
        2,
        "`rw` is not a folder mode; expected `read-only` or `read-write`",
    );
    refused(
        "[defaults]\nfolders = [ { host = \"data\", guest = \"/d\", mode = \"create-only\" } ]\n",
        2,
        "expected `read-only` or `read-write`",
    );
    refused(
        "[defaults]\ndestructive = \"alow\"\n",
        2,
        "`alow` is not a mode for destructive calls; expected one of `deny`, `allow`, `confirm`",
    );
}

/// A relative guest path is reported with its missing host folder, not
/// one run after the other.
#[test]
fn a_bad_guest_path_does_not_hide_a_missing_host_folder() {
    let dir = base();
    let err = parse(
        "[defaults]\nfolders = [{ host = \"nowhere\", guest = \"data\" }]\n",
        dir.path(),
    )
    .expect_err("refused");
    let shown = err.to_string();
    assert_eq!(err.errors().len(), 2, "{shown}");
    assert!(shown.contains("must be absolute"), "{shown}");
    assert!(shown.contains("host folder"), "{shown}");
}

#[test]
fn refuses_bad_guest_paths() {
    refused(
        "[defaults]\nfolders = [ { host = \"data\", guest = \"data\" } ]\n",
        2,
        "guest path \"data\" must be absolute",
    );
    refused(
        "[defaults]\nfolders = [ { host = \"data\", guest = \"/a/../etc\" } ]\n",
        2,
        "may not contain",
    );
    refused(
        "[components.c]\nfolders = [\n  { host = \"data\", guest = \"/data\" },\n  { host = \"shared\", guest = \"/data/x\" },\n]\n",
        4,
        "guest path \"/data/x\" overlaps \"/data\"",
    );
    refused(
        "[defaults]\nfolders = [\n  { host = \"data\", guest = \"/data/\" },\n  { host = \"shared\", guest = \"/data\" },\n]\n",
        4,
        "overlaps",
    );
    refused(
        "[defaults]\nfolders = [\n  { host = \"data\", guest = \"/\" },\n  { host = \"shared\", guest = \"/x\" },\n]\n",
        4,
        "overlaps",
    );
    // Siblings with a common prefix are fine.
    let (policy, _dir) = ok(
        "[defaults]\nfolders = [\n  { host = \"data\", guest = \"/data\" },\n  { host = \"shared\", guest = \"/data2\" },\n]\n",
    );
    assert_eq!(policy.settings_for("c", "t").folders.len(), 2);
}

#[test]
fn refuses_missing_host_folders() {
    refused(
        "[components.c.tools.t]\nfolders = [\n  { host = \"no-such-folder\", guest = \"/d\" },\n]\n",
        3,
        "no-such-folder",
    );
    let dir = base();
    std::fs::write(dir.path().join("file.txt"), "x").expect("write");
    let err = parse(
        "[defaults]\nfolders = [ { host = \"file.txt\", guest = \"/d\" } ]\n",
        dir.path(),
    )
    .expect_err("a file is not a folder")
    .to_string();
    assert!(
        err.starts_with("<policy>:2:") && err.contains("is not a folder"),
        "{err}"
    );
}

#[test]
fn refuses_env_from_unset_variables_without_printing_values() {
    let err = refused(
        "[components.c]\nenv = { A = \"literal\", B = { from = \"NOT_SET_ANYWHERE\" } }\n",
        2,
        "environment variable NOT_SET_ANYWHERE (for B) is not set",
    );
    assert!(!err.contains("literal"), "{err}");
    refused(
        "[defaults]\nenv = { \"A=B\" = \"x\" }\n",
        2,
        "not a valid environment variable name",
    );
    refused("[defaults]\nenv = { A = 3 }\n", 2, "a string, or a table");

    let dir = base();
    let not_unicode = |_: &str| Err(VarError::NotUnicode("\u{FFFD}".into()));
    let err = Policy::parse_with_env(
        "[defaults]\nenv = { A = { from = \"X\" } }\n",
        dir.path(),
        not_unicode,
    )
    .expect_err("not unicode")
    .to_string();
    assert!(err.contains("X (for A) is not valid Unicode"), "{err}");
}

#[test]
fn refuses_bad_digests_and_tokens() {
    refused(
        "[components.c]\nsha256 = \"abc\"\n",
        2,
        "sha256 must be 64 hexadecimal digits, got 3",
    );
    refused(
        &format!("[components.c]\nsha256 = \"{}\"\n", "g".repeat(64)),
        2,
        "64 hexadecimal digits",
    );
    refused(
        "[[tokens]]\nname = \"a\"\nsha256 = \"00\"\n",
        3,
        "64 hexadecimal digits",
    );
    let digest = "A".repeat(64);
    refused(
        &format!(
            "[[tokens]]\nname = \"a\"\nsha256 = \"{digest}\"\n[[tokens]]\nname = \"a\"\nsha256 = \"{digest}\"\n"
        ),
        5,
        "token name \"a\" is used twice",
    );
    // Upper-case digests are accepted and stored in lower case.
    let (policy, _dir) = ok(&format!("[components.c]\nsha256 = \"{digest}\"\n"));
    assert_eq!(
        policy.component("c").and_then(|c| c.sha256.clone()),
        Some("a".repeat(64))
    );
}

#[test]
fn tokens_without_a_tool_list_allow_every_tool() {
    let (policy, _dir) = ok(&format!(
        "[[tokens]]\nname = \"ops\"\nsha256 = \"{}\"\n",
        "fcde2b2edba56bf408601fb721fe9b5c338d10ee429ea04fae5511b68fbf8fb9"
    ));
    let token = &policy.tokens()[0];
    assert!(token.accepts("bar"));
    assert!(token.allows_tool("anything"));
    assert!(
        !format!("{token:?}").contains("fcde"),
        "digest kept out of Debug"
    );
}

#[test]
fn refuses_toml_syntax_errors_with_a_line() {
    refused("[defaults]\ndestructive = \n", 2, "");
    refused("[defaults]\n[defaults]\n", 2, "");
}

#[test]
fn paths_next_to_a_relative_policy_have_no_dot_parts() {
    // As when `airlock.toml` in the current folder says `./src`.
    let policy = parse(
        "audit = \"./audit.jsonl\"\n[components.x]\nsource = \"./x.wasm\"\n\
         folders = [{ host = \"./src\", guest = \"/s\" }, { host = \".\", guest = \"/all\" }]\n",
        Path::new("."),
    )
    .expect("policy");
    let x = policy.component("x").expect("x");
    assert_eq!(x.source, Some(crate::source::Source::File("x.wasm".into())));
    let s = policy.settings_for("x", "t");
    assert_eq!(s.folders[0].host, Path::new("src"));
    assert_eq!(s.folders[1].host, Path::new("."));
}

#[test]
fn hints_are_declared_per_tool_with_known_names() {
    refused(
        "[components.fetch.tools.fetch]\nhints = [\"read-only\", \"cautious\"]\n",
        2,
        "unknown hint \"cautious\"",
    );
    refused(
        "[components.fetch.tools.fetch]\nhints = [\"open-world\", \"open-world\"]\n",
        2,
        "listed twice",
    );
    refused(
        "[defaults]\nhints = [\"read-only\"]\n",
        2,
        "hints are declared per component, in [components.NAME], or per tool",
    );
    refused(
        "[components.fetch]\nhints = [\"read-only\", \"careful\"]\n",
        2,
        "unknown hint \"careful\"",
    );
}

/// `hints` in a component's section are those of each of its tools; a
/// tool section's own `hints` win.
#[test]
fn component_hints_apply_to_every_tool_and_tool_sections_override() {
    let (policy, _dir) = ok(
        "[components.fetch]\nhints = [\"read-only\", \"open-world\"]\n\
         [components.fetch.tools.post]\nhints = [\"open-world\"]\n",
    );
    let read_only_open = crate::tool::Hints {
        read_only: true,
        open_world: true,
        ..Default::default()
    };
    assert_eq!(
        policy.hints_declared("fetch", "get"),
        Some((read_only_open, "[components.fetch]".to_string()))
    );
    assert_eq!(
        policy.hints_declared("fetch", "post"),
        Some((
            crate::tool::Hints {
                open_world: true,
                ..Default::default()
            },
            "[components.fetch.tools.post]".to_string()
        ))
    );
    assert_eq!(policy.declared_hints("other", "get"), None);
}

#[test]
fn sources_and_verify_keys_are_checked_where_written() {
    let (policy, dir) = ok("[defaults]\nverify = { key = \"keys/acme.pub\" }\n\
         [components.x]\nsource = \"oci+http://127.0.0.1:5000/acme/x@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\"\n");
    let key = dir.path().join("keys/acme.pub").display().to_string();
    assert_eq!(
        policy.verify_key("x").map(|k| k.label.clone()),
        Some(key.clone())
    );
    assert_eq!(
        policy.verify_key("unnamed").map(|k| k.label.clone()),
        Some(key)
    );
    assert!(
        policy
            .component_with_source(Path::new(
                "oci+http://127.0.0.1:5000/acme/x@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
            ))
            .is_some()
    );

    refused(
        "[components.x]\nsource = \"oci://ghcr.io/Acme/x:1\"\n",
        2,
        "not a repository name",
    );
    refused(
        "[components.x]\nsource = \"ftp://example.com/x.wasm\"\n",
        2,
        "unknown scheme",
    );
    refused(
        "[components.x]\n\nverify = { key = \"keys/missing.pub\" }\n",
        3,
        "cannot read",
    );
    refused(
        "[components.x]\nverify = { key = \"shared\" }\n",
        2,
        "cannot read",
    );
    refused(
        "[components.x]\nverify = { keyfile = \"keys/acme.pub\" }\n",
        2,
        "unknown field",
    );
    refused(
        "[components.x.tools.t]\nverify = { key = \"keys/acme.pub\" }\n",
        2,
        "per component",
    );
}

#[test]
fn every_error_is_reported_in_file_order() {
    let dir = base();
    let text = "\
auditt = \"a.jsonl\"
[defaults]
limits = { memory = \"lots\", cpu = 3, time = \"0s\" }
network = [\"ok.example.com\", \"bad host\"]
[components.c]
sha = \"x\"
folders = [{ host = \"missing\", guest = \"/m\" }, { host = \"data\", guest = \"rel\" }]
env = { A = { from = \"UNSET\" }, B = \"fine\" }
[components.c.tools.t]
hints = [\"cautious\"]
destructive = \"maybe\"
[[tokens]]
name = \"a\"
sha256 = \"short\"
";
    let err = parse(text, dir.path()).expect_err("refused");
    let lines: Vec<String> = err
        .errors()
        .iter()
        .map(|e| {
            let text = e.to_string();
            text.split(':').nth(1).unwrap_or_default().to_string()
        })
        .collect();
    assert_eq!(
        lines,
        [
            "1", "3", "3", "3", "4", "6", "7", "7", "8", "10", "11", "14"
        ],
        "{err}"
    );
    let shown = err.to_string();
    for what in [
        "unknown field `auditt`",
        "invalid size \"lots\"",
        "unknown field `cpu`",
        "limit time must be greater than 0",
        "bad host",
        "unknown field `sha`",
        "host folder",
        "must be absolute",
        "UNSET",
        "unknown hint \"cautious\"",
        "`maybe` is not a mode for destructive calls",
        "sha256 must be 64 hexadecimal digits",
    ] {
        assert!(shown.contains(what), "{what:?} missing in:\n{shown}");
    }
    assert_eq!(shown.lines().count(), 12, "one error a line:\n{shown}");
}

#[test]
fn a_syntax_error_is_reported_alone() {
    let err =
        parse("[defaults]\ndestructive = \nauditt = 1\n", base().path()).expect_err("refused");
    assert_eq!(err.errors().len(), 1, "{err}");
    assert!(err.to_string().starts_with("<policy>:2:"), "{err}");
}

#[test]
fn sections_that_match_nothing_point_at_their_line() {
    let (policy, _dir) = ok("[components.csvsm]\n[components.fetch.tools.fetch]\n\
                             [components.fetch.tools.fecth]\n");
    let errors = policy.unmatched_components(&["csvsum", "fetch"]);
    assert_eq!(errors.len(), 1);
    assert_eq!(
        errors[0].to_string(),
        "<policy>:1:13: [components.csvsm] matches no component (those at hand: csvsum, \
         fetch; a section is named after the component's file stem), so its grants apply \
         to nothing"
    );
    let errors = policy.unmatched_tools("fetch", &["fetch"]);
    assert_eq!(errors.len(), 1);
    assert!(
        errors[0]
            .to_string()
            .starts_with("<policy>:3:25: [components.fetch.tools.fecth] names no tool of fetch"),
        "{}",
        errors[0]
    );
    assert!(policy.unmatched_tools("csvsm", &[]).is_empty());
}

/// A CA certificate as PEM, made for the test.
fn ca_pem() -> String {
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let key = rcgen::KeyPair::generate().expect("key");
    params.self_signed(&key).expect("CA").pem()
}

#[test]
fn network_tables_list_hosts_with_the_headers_airlock_injects() {
    let (policy, _dir) = ok(r#"
[components.gh.network."uploads.github.com"]
[components.gh.network."https://api.github.com"]
headers = { Authorization = { from = "CATALOG_TOKEN", format = "token {}" }, X-Api-Key = { from = "CATALOG_TOKEN" } }
[components.gh.tools.offline]
network = ["example.com"]
"#);
    let s = policy.settings_for("gh", "any");
    let hosts: Vec<String> = s.network.iter().map(|p| p.to_string()).collect();
    // In the order written (the first credential listed for a header wins).
    assert_eq!(hosts, ["uploads.github.com", "https://api.github.com"]);
    let headers: Vec<(&str, &str)> = s
        .credentials
        .iter()
        .map(|c| (c.header.as_str(), c.value.expose()))
        .collect();
    assert_eq!(
        headers,
        [
            ("authorization", "token s3cret-value"),
            ("x-api-key", "s3cret-value")
        ]
    );
    // Secrets never show in a debug print of the settings.
    let shown = format!("{s:?}");
    assert!(!shown.contains("s3cret"), "{shown}");
    assert!(shown.contains("authorization"), "{shown}");
    // A more specific `network` replaces the hosts and their headers.
    let offline = policy.settings_for("gh", "offline");
    assert!(offline.credentials.is_empty());
    assert_eq!(offline.network.len(), 1);
}

/// `trace = false` on a host's table: its requests carry no traceparent,
/// carried on the grant and shown with the network.
#[test]
fn trace_false_on_a_host_keeps_the_traceparent_from_it() {
    let (policy, _dir) = ok(r#"
[components.gh.network."uploads.github.com"]
[components.gh.network."https://api.github.com"]
headers = { Authorization = { from = "CATALOG_TOKEN" } }
trace = false
[components.gh.network."example.com"]
trace = true
"#);
    let s = policy.settings_for("gh", "any");
    let untraced: Vec<String> = s.untraced.iter().map(|p| p.to_string()).collect();
    assert_eq!(untraced, ["https://api.github.com"]);
    assert_eq!(s.network.len(), 3);
    let hints = crate::tool::Hints {
        open_world: true,
        ..crate::tool::Hints::default()
    };
    let grant = crate::policy::effective(&s, hints);
    let network = grant.network.as_ref().expect("network");
    assert_eq!(network.untraced, s.untraced);
    let shown = grant.shown();
    let (_, net) = shown
        .iter()
        .find(|(key, _)| *key == "network")
        .expect("network shown");
    assert_eq!(
        net.json["untraced"],
        serde_json::json!(["https://api.github.com"])
    );
    assert!(
        net.lines
            .iter()
            .any(|l| l == "no traceparent to https://api.github.com"),
        "{:?}",
        net.lines
    );
    // Not a flag of anything else: a string is refused at its line.
    refused(
        "[components.gh.network.\"example.com\"]\ntrace = \"no\"\n",
        2,
        "bool",
    );
}

#[test]
fn refuses_bad_credentials_without_printing_values() {
    let head = "[components.gh.network.\"api.github.com\"]\n";
    for (line, what) in [
        (
            "headers = { Authorization = { from = \"UNSET_VAR\" } }",
            "environment variable UNSET_VAR (for header Authorization for api.github.com) is not set",
        ),
        (
            "headers = { Authorization = { from = \"CATALOG_TOKEN\", format = \"Bearer\" } }",
            "format must contain `{}` exactly once",
        ),
        (
            "headers = { Authorization = { from = \"CATALOG_TOKEN\", format = \"{} {}\" } }",
            "exactly once",
        ),
        (
            "headers = { Host = { from = \"CATALOG_TOKEN\" } }",
            "belongs to the connection",
        ),
        (
            "headers = { \"Bad Name\" = { from = \"CATALOG_TOKEN\" } }",
            "not a valid header name",
        ),
        (
            "headers = { Authorization = { from = \"SHORT\" } }",
            "shorter than 8 characters",
        ),
        (
            "headers = { Authorization = { from = \"NEWLINE\" } }",
            "cannot be sent in a header",
        ),
        (
            "headers = { Authorization = { value = \"literal\" } }",
            "unknown field `value`",
        ),
        ("header = {}", "unknown field `header`"),
    ] {
        let text = format!("{head}{line}\n");
        let dir = base();
        let env = |name: &str| match name {
            "CATALOG_TOKEN" => Ok("s3cret-value".to_string()),
            "SHORT" => Ok("abc".to_string()),
            "NEWLINE" => Ok("s3cret\nvalue".to_string()),
            _ => Err(VarError::NotPresent),
        };
        let err = Policy::parse_with_env(&text, dir.path(), env)
            .map(|_| ())
            .expect_err(&text)
            .to_string();
        assert!(err.starts_with("<policy>:2:"), "{err}");
        assert!(err.contains(what), "expected {what:?} in: {err}");
        assert!(!err.contains("s3cret") && !err.contains("abc"), "{err}");
    }
    refused(
        "[components.gh.network.\"api github com\"]\n",
        1,
        "invalid host pattern",
    );
    refused(
        "[defaults]\nnetwork = \"api.github.com\"\n",
        2,
        "a list of host patterns",
    );
}

#[test]
fn tls_roots_and_operator_ca_bundles() {
    let dir = base();
    std::fs::write(dir.path().join("ca.pem"), ca_pem()).expect("ca.pem");
    std::fs::write(dir.path().join("empty.pem"), "no certificates here\n").expect("empty");
    let policy = parse(
        "[defaults]\nca = \"ca.pem\"\n[components.a]\ntls = \"system\"\n",
        dir.path(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let a = policy.settings_for("a", "t");
    assert_eq!(a.trust.roots, crate::policy::Roots::System);
    let ca = a.trust.ca.as_ref().expect("the default's CA bundle");
    assert_eq!(ca.path, dir.path().join("ca.pem"));
    assert_eq!(ca.certs.len(), 1);
    let other = policy.settings_for("b", "t");
    assert_eq!(other.trust.roots, crate::policy::Roots::Bundled);
    assert!(other.trust.ca.is_some());

    for (text, what) in [
        (
            "[defaults]\ntls = \"insecure\"\n",
            "`insecure` is not a trust store; expected `bundled` or `system`",
        ),
        ("[defaults]\nca = \"missing.pem\"\n", "cannot be read"),
        ("[defaults]\nca = \"empty.pem\"\n", "holds no certificate"),
    ] {
        let err = parse(text, dir.path())
            .map(|_| ())
            .expect_err(text)
            .to_string();
        assert!(err.starts_with("<policy>:2:"), "{err}");
        assert!(err.contains(what), "expected {what:?} in: {err}");
    }
}

/// `[networks.NAME]`: one grant, with its credentials, that several
/// sections name instead of repeating it.
#[test]
fn a_named_network_is_shared_by_the_sections_that_name_it() {
    let (policy, _dir) = ok("[networks.github.\"https://api.github.com\"]\n\
         headers = { Authorization = { from = \"CATALOG_TOKEN\", format = \"Bearer {}\" } }\n\
         [networks.github.\"uploads.github.com\"]\n\
         [components.issues]\nnetwork = \"github\"\n\
         [components.releases]\nnetwork = \"github\"\n\
         [components.releases.tools.mirror]\nnetwork = [\"mirror.example.com\"]\n");
    for component in ["issues", "releases"] {
        let s = policy.settings_for(component, "list");
        let hosts: Vec<String> = s.network.iter().map(ToString::to_string).collect();
        assert_eq!(
            hosts,
            ["https://api.github.com", "uploads.github.com"],
            "{component}"
        );
        assert_eq!(s.credentials.len(), 1, "{component}");
        assert_eq!(
            s.credentials[0].describe(),
            "authorization for https://api.github.com (from CATALOG_TOKEN)"
        );
    }
    let mirror = policy.settings_for("releases", "mirror");
    assert_eq!(mirror.network.len(), 1);
    assert!(mirror.credentials.is_empty());

    let other = policy.settings_for("other", "t");
    assert!(other.network.is_empty());
}

#[test]
fn a_network_name_must_name_a_networks_section() {
    refused(
        "[networks]\ngithub = [\"api.github.com\"]\n[components.a]\nnetwork = \"gihtub\"\n",
        4,
        "network \"gihtub\" names no [networks.gihtub] (the named ones are: github)",
    );
    refused(
        "[components.a]\nnetwork = \"github\"\n",
        2,
        "the policy has no [networks.NAME] section",
    );
    refused(
        "[networks]\na = \"b\"\n",
        2,
        "[networks.a] names another network",
    );
}

/// A component's section is read as a section of grants plus its own keys
/// (`raw::RawComponent`); an unknown key there still names every key a
/// component may have, in both parts.
#[test]
fn an_unknown_component_key_names_every_key_of_a_component() {
    let err = refused(
        "[components.c]\nsource = \"c.wasm\"\nsha = \"x\"\n",
        3,
        "unknown field `sha`",
    );
    for key in [
        "source", "sha256", "tools", "folders", "config", "hints", "verify", "limits",
    ] {
        assert!(err.contains(&format!("`{key}`")), "{key} in: {err}");
    }
    // A tool section has no component keys.
    let err = refused(
        "[components.c.tools.t]\nsha256 = \"x\"\n",
        2,
        "unknown field `sha256`",
    );
    assert!(!err.contains("`source`"), "{err}");
}

#[test]
fn ask_is_granted_per_component_and_tool_and_denied_by_default() {
    let (policy, _dir) = ok(r#"
[components.catalog]
ask = ["elicit", "sample"]
limits = { elicitations = 1, samplings = 2, sample-tokens = 500 }

[components.catalog.tools.restock]
ask = ["roots"]

[components.catalog.tools.quiet]
ask = []
"#);
    let none = policy.settings_for("other", "x");
    assert_eq!(none.asks, Asks::default(), "denied by default");
    assert_eq!(
        (
            none.limits.elicitations,
            none.limits.samplings,
            none.limits.sample_tokens
        ),
        (3, 3, 1024)
    );
    let component = policy.settings_for("catalog", "lookup");
    assert_eq!(
        component.asks,
        Asks {
            elicit: true,
            sample: true,
            roots: false
        }
    );
    assert_eq!(component.asks.names(), ["elicit", "sample"]);
    assert_eq!(
        (
            component.limits.elicitations,
            component.limits.samplings,
            component.limits.sample_tokens
        ),
        (1, 2, 500)
    );
    // A tool's list replaces its component's, as `folders` does.
    let tool = policy.settings_for("catalog", "restock");
    assert_eq!(
        tool.asks,
        Asks {
            roots: true,
            ..Asks::default()
        }
    );
    assert!(!policy.settings_for("catalog", "quiet").asks.any());
    // The grant carries it to the sandbox whatever the hints.
    let grant = crate::policy::effective(&component, crate::tool::Hints::default());
    assert_eq!(grant.asks, component.asks);
}

#[test]
fn unknown_ask_kinds_and_zero_sample_tokens_are_refused_where_written() {
    let err = refused(
        "[components.c]\nask = [\"elicit\", \"mount\"]\n",
        2,
        "`mount` is not a kind of request to the client; expected one of `elicit`, `sample`, \
         `roots`",
    );
    assert!(err.starts_with("<policy>:2:"), "{err}");
    refused(
        "[defaults]\nlimits = { sample-tokens = 0 }\n",
        2,
        "limit sample-tokens must be greater than 0",
    );
    refused(
        "[defaults]\nlimits = { samplings = -1 }\n",
        2,
        "invalid value: integer `-1`, expected u32",
    );
    refused(
        "[defaults]\nask = \"elicit\"\n",
        2,
        "invalid type: string \"elicit\", expected a sequence",
    );
    let (policy, _dir) = ok("audit-answers = true\n");
    assert!(policy.audit_answers());
    assert!(!ok("").0.audit_answers());
}

#[test]
fn elicit_url_hosts_narrow_where_a_url_elicitation_may_send_the_user() {
    let (policy, _dir) = ok("[defaults]\nelicit-url-hosts = [\"example.com\"]\n\
         [components.catalog]\nask = [\"elicit\"]\n\
         elicit-url-hosts = [\"*.example.org\", \"localhost:3000\"]\n\
         [components.catalog.tools.restock]\nelicit-url-hosts = []\n");
    let hosts =
        |component: &str, tool: &str| policy.settings_for(component, tool).elicit_urls.describe();
    // A more specific section's list replaces the less specific one's.
    assert_eq!(hosts("other", "").as_deref(), Some("example.com"));
    assert_eq!(
        hosts("catalog", "lookup").as_deref(),
        Some("*.example.org, localhost:3000")
    );
    assert_eq!(hosts("catalog", "restock").as_deref(), Some("none"));
    // Not set anywhere: any host (https:, or http: to this machine).
    assert_eq!(ok("").0.settings_for("catalog", "").elicit_urls.hosts, None);
    // The grant carries it to the sandbox.
    let settings = policy.settings_for("catalog", "lookup");
    let grant = crate::policy::effective(&settings, crate::tool::Hints::default());
    assert_eq!(grant.elicit_urls, settings.elicit_urls);
    assert!(grant.elicit_urls.check("https://pay.example.org/").is_ok());
    assert!(grant.elicit_urls.check("https://example.com/").is_err());
}

#[test]
fn a_bad_elicit_url_host_is_refused_where_written() {
    let err = refused(
        "[components.c]\nelicit-url-hosts = [\"example.com\", \"https://pay.example.com\"]\n",
        2,
        "elicit-url-hosts lists hosts, without a scheme (a URL the user is sent to is always \
         https:, or http: to this machine): write \"pay.example.com\"",
    );
    assert!(err.starts_with("<policy>:2:36:"), "{err}");
    refused(
        "[defaults]\nelicit-url-hosts = [\"example.com:0\"]\n",
        2,
        "invalid host pattern \"example.com:0\": the port must be a number from 1 to 65535",
    );
    refused(
        "[defaults]\nelicit-url-hosts = \"example.com\"\n",
        2,
        "invalid type: string \"example.com\", expected a sequence",
    );
    refused(
        "[components.c.tools.t]\nelicit-url-host = [\"example.com\"]\n",
        2,
        "unknown field `elicit-url-host`",
    );
}
