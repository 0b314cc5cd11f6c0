//! The `airlock` binary: `inspect`, `call` and `check` as a user runs them,
//! with their output and exit codes.

use crate::support;

use std::process::{Command, Output};

use serde_json::Value;
use support::{component, test_component};

/// `airlock ARGS` with the tests' compile cache, for more settings (`env`).
fn command(args: &[&str]) -> Command {
    support::airlock_command(args)
}

/// Runs `airlock ARGS` (stdin closed) and returns what it printed.
fn airlock(args: &[&str]) -> Output {
    command(args).output().expect("run airlock")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn path(p: std::path::PathBuf) -> String {
    p.display().to_string()
}

#[test]
fn every_subcommand_has_help_with_an_example() {
    for sub in ["inspect", "call", "check", "pull", "publish"] {
        let out = airlock(&[sub, "--help"]);
        assert!(out.status.success(), "{sub} --help");
        let text = stdout(&out);
        assert!(text.contains("Examples:"), "{sub}: {text}");
        assert!(text.contains(&format!("airlock {sub}")), "{sub}: {text}");
    }
    let out = airlock(&["--help"]);
    assert!(stdout(&out).contains("Exit codes"));
}

#[test]
fn inspect_shows_parameters_hints_and_imports() {
    let out = airlock(&["inspect", &path(component("export"))]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for expected in [
        "export_orders — Export orders",
        "customer_id",
        "required",
        "max_age_days",
        "integer",
        "default 90",
        "default \"csv\"",
        "default true",
        "readOnlyHint=true destructiveHint=false idempotentHint=true openWorldHint=false",
        "task support: optional",
        "imports  airlock:tool/types@0.1.2",
        "           airlock:tool/host@0.1.2",
        "output: {\"type\":\"object\"",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
}

#[test]
fn inspect_json_lists_tools_as_mcp_does() {
    let out = airlock(&["inspect", "--json", &path(component("catalog"))]);
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: Value = serde_json::from_str(&stdout(&out)).expect("json");
    let tools = doc["tools"].as_array().expect("tools");
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["lookup_price", "restock"]);
    let restock = &tools[1];
    assert_eq!(restock["annotations"]["destructiveHint"], true);
    assert_eq!(restock["annotations"]["readOnlyHint"], false);
    assert!(restock["inputSchema"]["properties"]["units"].is_object());
    assert_eq!(restock["execution"]["taskSupport"], "forbidden");
    let icon = &tools[0]["icons"][0];
    assert!(
        icon["src"]
            .as_str()
            .expect("src")
            .starts_with("data:image/svg+xml;base64,")
    );
    assert_eq!(icon["mimeType"], "image/svg+xml");
    assert_eq!(icon["sizes"], serde_json::json!(["any"]));
    let imports = doc["components"][0]["imports"].as_array().expect("imports");
    assert!(imports.iter().any(|i| i == "airlock:tool/host@0.1.2"));
}

#[test]
fn inspect_with_a_policy_shows_the_effective_grant_and_why() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("data")).expect("data");
    let policy = dir.path().join("airlock.toml");
    std::fs::write(
        &policy,
        r#"
[components.catalog]
folders = [{ host = "data", guest = "/data", mode = "read-write" }]
network = ["api.example.com"]
destructive = "confirm"
"#,
    )
    .expect("policy");
    let out = airlock(&[
        "inspect",
        &path(component("catalog")),
        "--policy",
        &path(policy),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("narrowed /data: read-write → read-only (tool is read-only)"),
        "{text}"
    );
    assert!(
        text.contains("narrowed network: api.example.com → none (tool is not open-world)"),
        "{text}"
    );
    assert!(text.contains("destructive calls: confirm"), "{text}");
    // Only the destructive tool (restock) has a consent rule to show.
    assert_eq!(text.matches("destructive calls:").count(), 1, "{text}");
    // Folders are shown as the policy resolved them, without "././".
    assert!(!text.contains("./."), "{text}");
}

#[test]
fn call_coerces_and_prints_json() {
    let out = airlock(&[
        "call",
        &path(component("export")),
        "export_orders",
        "customer_id=CUST-42",
        "max_age_days=42",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let result: Value = serde_json::from_str(&stdout(&out)).expect("json");
    assert_eq!(result["isError"], false);
    assert!(
        result["structuredContent"]["result"]
            .as_str()
            .expect("text")
            .contains("ORD-5001")
    );
}

#[test]
fn call_exit_codes_tell_what_went_wrong() {
    let export = path(component("export"));
    let out = airlock(&[
        "call",
        &export,
        "export_orders",
        "customer_id=C",
        "max_age_days=soon",
    ]);
    assert_eq!(out.status.code(), Some(3), "bad arguments");
    assert!(stderr(&out).contains(r#"Parameter "max_age_days" expects an integer, got "soon""#));

    let out = airlock(&["call", &export, "export_orders", "format=tsv"]);
    assert_eq!(out.status.code(), Some(3), "missing argument");
    assert!(stderr(&out).contains(
        "received: [format], expected: [customer_id, max_age_days, format, include_header]"
    ));

    let out = airlock(&[
        "call",
        &export,
        "export_orders",
        "customer_id=C",
        "format=pdf",
    ]);
    // The tool itself reports that the arguments do not fit (as the seed's
    // export does): still "bad arguments".
    assert_eq!(
        out.status.code(),
        Some(3),
        "tool-reported invalid arguments"
    );
    assert!(stderr(&out).contains(r#"format must be either "csv" or "tsv""#));

    let catalog = path(component("catalog"));
    let out = airlock(&["call", &catalog, "lookup_price", "sku=SKU-9"]);
    assert_eq!(out.status.code(), Some(1), "tool failed");
    assert!(stderr(&out).contains(r#"unknown article "SKU-9""#));

    let out = airlock(&["call", &catalog, "restock", "sku=SKU-1001", "units=2"]);
    assert_eq!(out.status.code(), Some(4), "not permitted");

    let out = airlock(&["call", &catalog, "no_such_tool"]);
    assert_eq!(out.status.code(), Some(5), "unknown tool");
    assert_eq!(
        stderr(&out),
        format!(
            "error: unknown tool \"no_such_tool\"\n{catalog} declares: lookup_price, restock\n"
        )
    );

    let out = airlock(&["call", &catalog]);
    assert_eq!(out.status.code(), Some(2), "usage");

    let out = airlock(&[
        "call",
        &export,
        "export_orders",
        "--args",
        "[\"CUST-7\", 30, \"tsv\"]",
    ]);
    assert!(out.status.success(), "positional: {}", stderr(&out));
}

#[test]
fn a_trap_ends_the_call_not_the_runtime_and_guest_output_stays_off_stdout() {
    let hostile = path(test_component("hostile"));
    let out = airlock(&["call", &hostile, "panic"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("the tool panicked: boom"));
    // The guest writes 100 MiB to its stdout; none of it reaches ours.
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = dir.path().join("p.toml");
    std::fs::write(
        &policy,
        "[components.hostile]\nlimits = { time = \"60s\" }\n",
    )
    .expect("policy");
    let out = airlock(&["call", &hostile, "shout", "--policy", &path(policy)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(out.stdout.len() < 1000, "stdout is the result only");
    assert!(!stdout(&out).contains("xxxx"));
}

#[test]
fn check_reports_the_line_of_an_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let good = dir.path().join("good.toml");
    std::fs::write(&good, "[defaults]\ndestructive = \"deny\"\n").expect("write");
    let out = airlock(&["check", &path(good)]);
    assert!(out.status.success(), "{}", stderr(&out));

    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        "[defaults]\ndestructive = \"deny\"\ncolour = \"blue\"\n",
    )
    .expect("write");
    let out = airlock(&["check", &path(bad)]);
    assert_eq!(out.status.code(), Some(5));
    let err = stderr(&out);
    assert!(err.contains("bad.toml:3:"), "{err}");
    assert!(err.contains("colour"), "{err}");
}

#[test]
fn check_shows_which_tools_may_ask_the_client() {
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = dir.path().join("asks.toml");
    std::fs::write(
        &policy,
        "[components.catalog.tools.lookup_price]\nask = [\"elicit\", \"sample\"]\n\
         limits = { samplings = 1, sample-tokens = 500 }\n\
         [components.catalog.tools.restock]\nask = [\"elicit\"]\n\
         elicit-url-hosts = [\"pay.example.com\", \"*.example.org\"]\n",
    )
    .expect("write");
    let out = airlock(&["check", &path(policy), &path(component("catalog"))]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains(
            "  lookup_price: ask: elicit, sample (per call: 3 elicitation(s), 1 sampling \
             request(s) of at most 500 tokens)"
        ),
        "{text}"
    );
    // Only the limits of what is granted: no sampling limit for a tool
    // that may only elicit; and where its URLs may send the user.
    assert!(
        text.contains(
            "  restock: ask: elicit (per call: 3 elicitation(s); elicit-url-hosts: \
             pay.example.com, *.example.org)\n"
        ),
        "{text}"
    );
}

#[test]
fn check_shows_only_the_roots_limit_for_a_tool_that_may_only_list_roots() {
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = dir.path().join("asks.toml");
    std::fs::write(
        &policy,
        "[components.catalog.tools.lookup_price]\nask = [\"roots\"]\n",
    )
    .expect("write");
    let out = airlock(&["check", &path(policy), &path(component("catalog"))]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("  lookup_price: ask: roots (per call: 10 roots request(s))\n"),
        "{text}"
    );
    // Deny by default: the other tool may ask nothing, and is not listed.
    assert!(!text.contains("restock:"), "{text}");
}

/// `limits.roots-requests` (10 a call by default) is the policy's to set:
/// `check` shows the value given, and refuses a value that is no count.
#[test]
fn check_shows_a_roots_requests_limit_below_the_default() {
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = dir.path().join("asks.toml");
    std::fs::write(
        &policy,
        "[components.catalog.tools.lookup_price]\nask = [\"roots\"]\n\
         limits = { roots-requests = 2 }\n",
    )
    .expect("write");
    let out = airlock(&["check", &path(policy.clone()), &path(component("catalog"))]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("  lookup_price: ask: roots (per call: 2 roots request(s))\n"),
        "{text}"
    );
    std::fs::write(&policy, "[defaults.limits]\nroots-requests = \"many\"\n").expect("write");
    let out = airlock(&["check", &path(policy)]);
    assert_eq!(out.status.code(), Some(5));
    let err = stderr(&out);
    assert!(err.contains("asks.toml:2:18:"), "{err}");
    assert!(err.contains("invalid type"), "{err}");
}

#[test]
fn credentials_are_checked_and_shown_without_their_value() {
    const SECRET: &str = "cli-s3cret-value";
    let dir = tempfile::tempdir().expect("tempdir");
    let hostile = path(test_component("hostile"));
    let section = |tool: &str| {
        format!(
            "[components.hostile]\nsource = {hostile:?}\n\
             [components.hostile{tool}.network.\"https://api.example.com\"]\n\
             headers = {{ Authorization = {{ from = \"CLI_TOKEN\", format = \"Bearer {{}}\" }} }}\n"
        )
    };
    // Given to the component, whose http tools are open-world: fine.
    let given = dir.path().join("given.toml");
    std::fs::write(&given, section("")).expect("write");
    let out = command(&["check", &path(given.clone())])
        .env("CLI_TOKEN", SECRET)
        .output()
        .expect("check");
    assert!(out.status.success(), "{}", stderr(&out));
    let out = command(&["check", &path(given.clone())])
        .output()
        .expect("check");
    assert_eq!(out.status.code(), Some(5));
    assert!(
        stderr(&out).contains("environment variable CLI_TOKEN (for header Authorization for https://api.example.com) is not set"),
        "{}",
        stderr(&out)
    );

    // `inspect --policy` says what is injected where, never the value.
    let out = command(&["inspect", &hostile, "--policy", &path(given)])
        .env("CLI_TOKEN", SECRET)
        .output()
        .expect("inspect");
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains(
            "injects authorization for https://api.example.com (from CLI_TOKEN) (value hidden)"
        ),
        "{text}"
    );
    assert!(text.contains("tls: bundled roots"), "{text}");
    assert!(!text.contains(SECRET), "{text}");

    // Given only to a tool that is not open-world: no call could send it.
    let unused = dir.path().join("unused.toml");
    std::fs::write(&unused, section(".tools.good")).expect("write");
    let out = command(&["check", &path(unused)])
        .env("CLI_TOKEN", SECRET)
        .output()
        .expect("check");
    assert_eq!(out.status.code(), Some(5));
    let err = stderr(&out);
    assert!(
        err.contains("[components.hostile] injects authorization for https://api.example.com (from CLI_TOKEN), but none of its tools given it is open-world"),
        "{err}"
    );
    assert!(!err.contains(SECRET), "{err}");
}

#[test]
fn guest_text_cannot_forge_lines_of_the_runtimes_log() {
    let out = command(&["call", &path(test_component("hostile")), "forge"])
        .env("AIRLOCK_LOG", "info")
        .output()
        .expect("run airlock");
    assert!(out.status.success(), "{}", stderr(&out));
    let log = stderr(&out);
    // The guest's stdout and stderr arrived a line per guest line, each
    // marked as the guest's, control characters escaped ...
    assert!(log.contains("guest: refused /srv/tools/x.wasm"), "{log}");
    assert!(log.contains("guest: \\u{1b}[2Kairlock: listening"), "{log}");
    assert!(log.contains("guest: warn\\rrefused"), "{log}");
    assert!(
        log.contains("[info] a\\nrefused /srv/tools/x.wasm"),
        "{log}"
    );
    // ... and none of it made a line of its own or moved the cursor.
    for line in log.lines() {
        assert!(
            !line.starts_with("refused") && !line.starts_with("airlock:"),
            "forged line: {line:?}\n{log}"
        );
    }
    assert!(!log.contains(['\r', '\x1b']), "{log:?}");
    // The lines are marked as the tool's and the call's.
    let marked = log
        .lines()
        .find(|l| l.contains("guest: ok"))
        .expect("the guest's line");
    assert!(
        marked.contains("tool=forge") && marked.contains("call="),
        "{marked}"
    );
}

/// What a guest printed reaches the log however its call ended: here a
/// panic, whose message is on the guest's stderr (a failure's output is
/// often its reason). Every entry — reads, prompts, completions too — is
/// recorded by the one path that writes these lines.
#[test]
fn a_failed_calls_output_reaches_the_log_too() {
    let out = command(&["call", &path(test_component("hostile")), "panic"])
        .env("AIRLOCK_LOG", "info")
        .output()
        .expect("run airlock");
    assert!(!out.status.success(), "{}", stderr(&out));
    let log = stderr(&out);
    let marked = log
        .lines()
        .find(|l| l.contains("guest: ") && l.contains("panicked at"))
        .unwrap_or_else(|| panic!("no guest line with the panic: {log}"));
    assert!(
        marked.contains("tool=panic") && marked.contains("call="),
        "{marked}"
    );
    assert!(log.lines().any(|l| l.contains("guest: boom")), "{log}");
}

#[test]
fn serve_refuses_to_start_with_nothing_to_serve() {
    let empty = tempfile::tempdir().expect("tempdir");
    let dir = path(empty.path().to_path_buf());
    let out = airlock(&["serve", "--stdio", &dir]);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("error: no tools to serve"), "{err}");
    assert!(
        err.contains("--watch") && err.contains("--allow-empty"),
        "{err}"
    );
    // Deliberately empty: it starts (and ends with its stdin).
    let out = airlock(&["serve", "--stdio", "--allow-empty", &dir]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("warning: no tools to serve yet"));
}

#[test]
fn inspect_with_a_policy_alone_shows_the_components_it_names() {
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = dir.path().join("airlock.toml");
    std::fs::write(
        &policy,
        format!(
            "[components.catalog]\nsource = {:?}\n",
            path(component("catalog"))
        ),
    )
    .expect("policy");
    let out = airlock(&["inspect", "--policy", &path(policy.clone())]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("lookup_price — Look up price"),
        "{}",
        stdout(&out)
    );
    // Without a policy, files are required.
    let out = airlock(&["inspect"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
}

/// `airlock call hostile TOOL op=overwrite path=/data/old.txt` with `/data`
/// mounted as the policy line `folders` says and an audit log; returns the
/// log on stderr and the audit entry.
fn overwrite_in(tool: &str, folders: &str) -> (String, Value) {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    std::fs::create_dir(&data).expect("data");
    std::fs::write(data.join("old.txt"), "before").expect("old.txt");
    let policy = dir.path().join("airlock.toml");
    std::fs::write(
        &policy,
        format!(
            "audit = \"audit.jsonl\"\n[components.hostile]\nfolders = [{{ host = {:?}, guest = \"/data\"{folders} }}]\n",
            path(data.clone())
        ),
    )
    .expect("policy");
    let out = command(&[
        "call",
        &path(test_component("hostile")),
        tool,
        "op=overwrite",
        "path=/data/old.txt",
        "content=after",
        "--policy",
        &path(policy),
    ])
    .env("AIRLOCK_LOG", "info")
    .output()
    .expect("run airlock");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(data.join("old.txt")).expect("read"),
        "before"
    );
    let audit = std::fs::read_to_string(dir.path().join("audit.jsonl")).expect("audit log");
    let entry = serde_json::from_str(audit.lines().next().expect("one entry")).expect("JSON");
    (stderr(&out), entry)
}

#[test]
fn a_read_only_refusal_is_logged_with_its_reason_and_counted_in_the_audit_entry() {
    // Read-only by the policy (no mode: the default).
    let (log, entry) = overwrite_in("fs_plain", "");
    assert!(
        log.contains(
            "read-only: refused to create or open for writing \"/data/old.txt\": the policy \
             mounts /data read-only (mode = \"read-only\", the default); mode = \"read-write\" \
             in its folders entry would allow changes"
        ),
        "{log}"
    );
    assert_eq!(entry["folder_refusals"], 1, "{entry}");
    assert_eq!(entry["outcome"], "tool-error", "{entry}");

    // Read-write in the policy, read-only by the tool's own hint.
    let (log, entry) = overwrite_in("fs_read_only", ", mode = \"read-write\"");
    assert!(
        log.contains(
            "read-only: refused to create or open for writing \"/data/old.txt\": the tool \
             declares read-only, so every folder is read-only for it whatever the policy's mode"
        ),
        "{log}"
    );
    assert_eq!(entry["folder_refusals"], 1, "{entry}");
}

#[test]
fn a_create_only_refusal_is_logged_with_its_rule_and_what_would_allow_it() {
    let (log, entry) = overwrite_in("fs_plain", ", mode = \"read-write\"");
    assert!(
        log.contains("create-only: refused to open for writing \"/data/old.txt\""),
        "{log}"
    );
    assert!(log.contains("destructive = \"allow\""), "{log}");
    assert_eq!(entry["folder_refusals"], 1, "{entry}");
}

#[test]
fn serve_warns_about_a_policy_section_that_matches_no_component() {
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = dir.path().join("airlock.toml");
    // A typo: the component is `catalog`.
    std::fs::write(&policy, "[components.catlog]\ndestructive = \"allow\"\n").expect("policy");
    let out = airlock(&[
        "serve",
        "--stdio",
        "--load-wait",
        "600",
        "--policy",
        &path(policy.clone()),
        &path(component("catalog")),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "warning: {}:1:13: [components.catlog] matches no component (those at hand: \
             catalog; a section is named after the component's file stem), so its grants \
             apply to nothing",
            policy.display()
        )),
        "{err}"
    );
    assert!(!err.contains("[components.catalog]"), "{err}");
}

#[test]
fn check_reports_every_error_one_a_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("airlock.toml");
    std::fs::write(
        &bad,
        "[defaults]\ncolour = \"blue\"\nnetwork = [\"bad host\"]\n\
         [components.c.limits]\ntime = \"0s\"\n",
    )
    .expect("write");
    let out = airlock(&["check", &path(bad.clone())]);
    assert_eq!(out.status.code(), Some(5));
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().collect();
    let at = |line: usize| format!("error: {}:{line}:", bad.display());
    assert_eq!(lines.len(), 4, "{err}");
    assert!(
        lines[0].starts_with(&at(2)) && lines[0].contains("colour"),
        "{err}"
    );
    assert!(
        lines[1].starts_with(&at(3)) && lines[1].contains("bad host"),
        "{err}"
    );
    assert!(
        lines[2].starts_with(&at(5)) && lines[2].contains("time"),
        "{err}"
    );
    assert_eq!(lines[3], format!("{}: 3 errors", bad.display()));
}

#[test]
fn check_with_the_components_catches_tokens_and_scopes_that_give_no_tool() {
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = dir.path().join("airlock.toml");
    std::fs::write(
        &policy,
        "[oauth]\nresource = \"https://tools.example.com/mcp\"\n\
         issuers = [\"https://idp.example.com\"]\n\
         [[oauth.scopes]]\nscope = \"read\"\ntools = [\"lookup_pric\"]\n\
         [[tokens]]\nname = \"ops\"\n\
         sha256 = \"2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae\"\n\
         tools = [\"restok\", \"restock\"]\n",
    )
    .expect("policy");
    let out = airlock(&["check", &path(policy.clone()), &path(component("catalog"))]);
    assert_eq!(out.status.code(), Some(5));
    let shown = policy.display();
    // Each at its entry's line and column (the scope's or the token's
    // name), in file order, as every other policy error.
    assert_eq!(
        stderr(&out),
        format!(
            "error: {shown}:5:9: [[oauth.scopes]] \"read\" gives the tool \"lookup_pric\", which \
             no component at hand declares (they declare lookup_price, restock); correct the \
             name\n\
             error: {shown}:8:8: [[tokens]] \"ops\" gives the tool \"restok\", which no component \
             at hand declares (they declare lookup_price, restock); correct the name\n\
             {shown}: 2 errors\n"
        )
    );
}

#[test]
fn check_with_the_components_catches_sections_that_match_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = dir.path().join("airlock.toml");
    // Two typos: the component is `catalog`, its tool `restock`.
    std::fs::write(
        &policy,
        "[components.catlog]\ndestructive = \"allow\"\n\n\
         [components.catalog.tools.restok]\ndestructive = \"allow\"\n",
    )
    .expect("policy");
    let catalog = path(component("catalog"));

    // Without components, only the file is checked, and check says so.
    let out = airlock(&["check", &path(policy.clone())]);
    assert!(out.status.success(), "{}", stderr(&out));
    // Its first line; the confinement a server would have follows.
    assert_eq!(
        stdout(&out).lines().next().unwrap_or_default(),
        format!(
            "{0}: ok (2 component sections; name the components to check the sections against \
             them: airlock check {0} tools/)",
            policy.display()
        )
    );

    let out = airlock(&["check", &path(policy.clone()), &catalog]);
    assert_eq!(out.status.code(), Some(5));
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "{}:4:27: [components.catalog.tools.restok] names no tool of catalog (it declares \
             lookup_price, restock); correct the name or remove the section",
            policy.display()
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "error: {}:1:13: [components.catlog] matches no component",
            policy.display()
        )),
        "{err}"
    );
    assert!(err.contains(": 2 errors"), "{err}");

    // `serve` refuses the component whose policy names a tool it lacks.
    let out = airlock(&[
        "serve",
        "--stdio",
        "--load-wait",
        "600",
        "--policy",
        &path(policy.clone()),
        &catalog,
    ]);
    assert_eq!(out.status.code(), Some(5));
    assert!(
        stderr(&out).contains(&format!(
            "refused {catalog}: the policy configures tools it does not declare"
        )),
        "{}",
        stderr(&out)
    );

    // Fixed, and the component named by `source`: no path needed.
    std::fs::write(
        &policy,
        format!(
            "[components.catalog]\nsource = {catalog:?}\n\
             [components.catalog.tools.restock]\ndestructive = \"allow\"\n"
        ),
    )
    .expect("policy");
    let out = airlock(&["check", &path(policy.clone())]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out).lines().next().unwrap_or_default(),
        format!(
            "{}: ok (1 component section; 1 component with 2 tools checked against it)",
            policy.display()
        )
    );
}

#[test]
fn check_validates_the_limits_on_what_a_call_may_take() {
    let dir = tempfile::tempdir().expect("tempdir");
    let good = dir.path().join("good.toml");
    std::fs::write(
        &good,
        "[defaults.limits]\nwrite = \"2MiB\"\nfiles = 5\nopen = 7\nmessages = 0\nlog = \"1KiB\"\n",
    )
    .expect("write");
    let out = airlock(&["check", &path(good)]);
    assert!(out.status.success(), "{}", stderr(&out));
    for (line, what) in [
        ("write = 0", "write must be greater than 0"),
        ("files = 0", "files must be greater than 0"),
        ("open = 0", "open must be greater than 0"),
        ("write = \"2MB\"", "invalid size \"2MB\""),
        ("log = \"lots\"", "invalid size \"lots\""),
        ("open = \"many\"", "invalid type"),
        ("files = -1", "invalid value"),
        ("messages = 1.5", "invalid type"),
        ("sockets = 3", "unknown field `sockets`"),
    ] {
        let bad = dir.path().join("bad.toml");
        std::fs::write(&bad, format!("[defaults.limits]\ntime = \"1s\"\n{line}\n")).expect("write");
        let out = airlock(&["check", &path(bad)]);
        assert_eq!(out.status.code(), Some(5), "{line}");
        let err = stderr(&out);
        assert!(err.contains("bad.toml:3:"), "{line}: {err}");
        assert!(err.contains(what), "{line}: {err}");
    }
}

/// `airlock policy import`: a policy in wassette's format becomes a policy
/// section airlock accepts, on stdout; what it tightened is on stderr.
#[test]
fn policy_import_converts_a_wassette_policy_and_says_what_it_tightened() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("notes")).expect("mkdir");
    let wassette = dir.path().join("fetch.policy.yaml");
    std::fs::write(
        &wassette,
        "version: \"1.0\"\n\
         description: \"Permission policy for fetch-rs\"\n\
         permissions:\n\
         \x20 storage:\n\
         \x20   allow:\n\
         \x20     - uri: \"fs://notes/**\"\n\
         \x20       access: [\"read\", \"write\"]\n\
         \x20 network:\n\
         \x20   allow:\n\
         \x20     - host: \"https://rss.nytimes.com/\"\n",
    )
    .expect("write");
    let out = airlock(&["policy", "import", &path(wassette.clone())]);
    assert!(out.status.success(), "{}", stderr(&out));
    let toml = stdout(&out);
    assert!(toml.contains("[components.fetch]\n"), "{toml}");
    assert!(
        toml.contains(&format!(
            "folders = [\n    {{ host = \"{}\", guest = \"/notes\", mode = \"read-write\" }},\n]\n\
             network = [\"https://rss.nytimes.com\"]\n",
            dir.path().join("notes").display()
        )),
        "{toml}"
    );
    let notes = stderr(&out);
    for expected in [
        "tightened: a read-write folder is read-write only for a destructive tool",
        "tightened: only open-world tools reach the listed hosts",
        "tightened: wassette sets no time limit",
    ] {
        assert!(notes.contains(expected), "{expected}: {notes}");
    }
    let converted = dir.path().join("airlock.toml");
    std::fs::write(&converted, &toml).expect("write");
    let check = airlock(&["check", &path(converted)]);
    assert!(check.status.success(), "{}", stderr(&check));

    // A file named only `policy.yaml` does not say which component it is for.
    let bare = dir.path().join("policy.yaml");
    std::fs::write(&bare, "version: \"1.0\"\npermissions:\n  bogus: 1\n").expect("write");
    let out = airlock(&["policy", "import", &path(bare.clone())]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--component NAME"),
        "{}",
        stderr(&out)
    );
    let out = airlock(&["policy", "import", &path(bare.clone()), "--component", "x"]);
    assert_eq!(out.status.code(), Some(5));
    assert!(
        stderr(&out).contains(&format!("{}:3:3: unknown key \"bogus\"", bare.display())),
        "{}",
        stderr(&out)
    );
}

/// A deployment as one file beside the policy: `serve --config` takes the
/// flags from its keys (paths relative to it), a flag given wins over its
/// key, and `check --config` checks the file, its policy and components.
#[test]
fn a_serve_configuration_file_stands_for_the_flags_and_check_reads_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::copy(component("catalog"), dir.path().join("catalog.wasm")).expect("copy");
    std::fs::write(
        dir.path().join("airlock.toml"),
        "[components.catalog]\ndestructive = \"allow\"\n",
    )
    .expect("policy");
    let config = dir.path().join("serve.toml");
    std::fs::write(
        &config,
        "components = [\"catalog.wasm\"]\npolicy = \"airlock.toml\"\n\
         listen = \"127.0.0.1:1\"\nload-wait = 600\n",
    )
    .expect("config");
    let config = path(config);

    // `--stdio` wins over the file's `listen` (port 1 could not be bound).
    let out = airlock(&["serve", "--config", &config, "--stdio"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("catalog.wasm: lookup_price, restock"), "{err}");
    assert!(err.contains("serving MCP on stdio"), "{err}");

    let out = airlock(&["check", "--config", &config]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("1 component with 2 tools checked"),
        "{}",
        stdout(&out)
    );

    // A section that matches no component, found through the file.
    std::fs::write(dir.path().join("airlock.toml"), "[components.catlog]\n").expect("policy");
    let out = airlock(&["check", "--config", &config]);
    assert_eq!(out.status.code(), Some(5), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("[components.catlog] matches no component"),
        "{}",
        stderr(&out)
    );

    // A misspelt key: its place, and serve does not start.
    std::fs::write(
        dir.path().join("serve.toml"),
        "components = []\nmax_calls = 4\n",
    )
    .expect("config");
    for args in [
        &["serve", "--config", &config][..],
        &["check", "--config", &config],
    ] {
        let out = airlock(args);
        let err = stderr(&out);
        assert_ne!(out.status.code(), Some(0), "{err}");
        assert!(
            err.contains("serve.toml:2:1: unknown field `max_calls`"),
            "{err}"
        );
        assert!(err.contains("unknown field `max_calls`"), "{err}");
    }
}
