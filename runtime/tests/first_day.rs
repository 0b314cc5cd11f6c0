//! The rough edges a new user met on the first day (issues #37 and #46),
//! as the `airlock` binary and the guides show them now: which policy a
//! command uses, what a refusal says when none was loaded, every error of a
//! policy or serve file at once, the desktop-client hint for an unset
//! variable, component-level hints, a plain-HTTP registry, an empty folder
//! and a truncated component; the desktop clients' `"env"` blocks, the
//! first list of a start that still compiles, `call --help`'s examples,
//! what `serve` says with nothing to serve, its address checked before
//! loading, and durations in the log.

use crate::support;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use support::servers::Server;
use support::{component, test_component};

/// `airlock ARGS` run in `dir`, stdin closed.
fn airlock_in(dir: &Path, args: &[&str]) -> Output {
    command_in(dir, args).output().expect("run airlock")
}

fn command_in(dir: &Path, args: &[&str]) -> Command {
    let mut command = support::airlock_command(args);
    command
        .current_dir(dir)
        .stdin(Stdio::null())
        .env("AIRLOCK_STORE_DIR", dir.join("store"));
    command
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn path(p: &Path) -> String {
    p.display().to_string()
}

/// A folder with `airlock.toml` letting `catalog`'s restock run.
fn folder_with_policy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("data")).expect("data");
    std::fs::write(
        dir.path().join("airlock.toml"),
        "[components.catalog]\ndestructive = \"allow\"\n\
         folders = [{ host = \"data\", guest = \"/data\", mode = \"read-write\" }]\n",
    )
    .expect("policy");
    dir
}

/// `call` (like `check`) uses ./airlock.toml when no --policy is given, and
/// says so; --no-policy loads none.
#[test]
fn call_uses_the_policy_in_the_current_folder_and_says_so() {
    let dir = folder_with_policy();
    let catalog = path(&component("catalog"));
    let call = ["call", &catalog, "restock", "sku=SKU-1001", "units=2"];
    let out = airlock_in(dir.path(), &call);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("airlock: using the policy ./airlock.toml"),
        "{}",
        stderr(&out)
    );

    let mut without = call.to_vec();
    without.push("--no-policy");
    let out = airlock_in(dir.path(), &without);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(!stderr(&out).contains("using the policy"));
}

/// With no policy at all, the refusal of an open-world tool's request says
/// that none was loaded, not that the tool is not open-world.
#[test]
fn a_network_refusal_says_no_policy_was_loaded() {
    let dir = tempfile::tempdir().expect("tempdir");
    let webfetch = path(&component("webfetch"));
    let out = airlock_in(
        dir.path(),
        &["call", &webfetch, "fetch_url", "url=http://127.0.0.1:9/"],
    );
    let err = stderr(&out);
    assert!(
        err.contains("the tool has no network access: no policy was loaded"),
        "{err}"
    );
    assert!(!err.contains("only open-world tools may use"), "{err}");
}

/// A desktop client passes only the variables in its `env`: over stdio,
/// the refusal of a policy whose variable is not set says where to set it.
#[test]
fn an_unset_variable_over_stdio_names_the_clients_env() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("p.toml"),
        "[components.catalog]\nenv = { TOKEN = { from = \"AIRLOCK_FIRST_DAY_UNSET\" } }\n",
    )
    .expect("policy");
    let catalog = path(&component("catalog"));
    let out = command_in(
        dir.path(),
        &["serve", "--stdio", "--policy", "p.toml", &catalog],
    )
    .env_remove("AIRLOCK_FIRST_DAY_UNSET")
    .output()
    .expect("serve");
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("environment variable AIRLOCK_FIRST_DAY_UNSET (for TOKEN) is not set"),
        "{err}"
    );
    assert!(
        err.contains("if a desktop client starts airlock, set it in the client's `env`"),
        "{err}"
    );
}

/// `check` reports the policy's errors and the sections that match no
/// component in one run: a relative guest path does not hide its missing
/// host folder, nor a misspelt section name.
#[test]
fn check_reports_every_error_in_one_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("airlock.toml"),
        "[components.catalog]\nfolders = [{ host = \"nowhere\", guest = \"data\" }]\n\n\
         [components.catlog]\ndestructive = \"alow\"\n",
    )
    .expect("policy");
    let catalog = path(&component("catalog"));
    let out = airlock_in(dir.path(), &["check", "airlock.toml", &catalog]);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    let err = stderr(&out);
    for expected in [
        "guest path \"data\" must be absolute",
        "host folder nowhere cannot be used",
        "`alow` is not a mode for destructive calls; expected one of `deny`, `allow`, `confirm`",
        "[components.catlog]",
        "airlock.toml: 4 errors",
    ] {
        assert!(err.contains(expected), "{expected:?} missing in:\n{err}");
    }
}

/// A serve file's errors come all at once.
#[test]
fn serve_config_errors_come_all_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("serve.toml"),
        "max_calls = 8\ngrace = \"ten\"\nstate = \"localhost\"\n",
    )
    .expect("serve.toml");
    let out = airlock_in(dir.path(), &["serve", "--config", "serve.toml"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("error: serve.toml:1:1: unknown field `max_calls`"),
        "{err}"
    );
    assert!(err.contains("error: serve.toml:2:9: "), "{err}");
    assert!(err.contains("`state` is a Redis URL"), "{err}");
}

/// `hints` in a component's section give each of its tools that declares
/// none those hints; `check` shows them and where they come from. For a
/// component whose tools declare their own, the section to fix is named.
#[test]
fn component_level_hints_are_applied_and_shown() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("airlock.toml"),
        "[components.plain]\nhints = [\"read-only\", \"idempotent\"]\n",
    )
    .expect("policy");
    let plain = path(&test_component("plain"));
    let out = airlock_in(dir.path(), &["check", "airlock.toml", &plain]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains(": hints read-only, idempotent (from [components.plain])"),
        "{}",
        stdout(&out)
    );
    let out = airlock_in(dir.path(), &["inspect", &plain]);
    assert!(
        stdout(&out).contains(
            "hints: read-only, idempotent (declared by the policy, in [components.plain])"
        ),
        "{}",
        stdout(&out)
    );

    std::fs::write(
        dir.path().join("airlock.toml"),
        "[components.catalog]\nhints = [\"read-only\"]\n",
    )
    .expect("policy");
    let catalog = path(&component("catalog"));
    let out = airlock_in(dir.path(), &["check", "airlock.toml", &catalog]);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("remove `hints` from [components.catalog]"),
        "{}",
        stderr(&out)
    );
}

/// An `oci://` reference to a registry that speaks plain HTTP: the TLS
/// handshake's "corrupt message" becomes what to do.
#[test]
fn a_plain_http_registry_is_named_with_the_fix() {
    // What a plain HTTP server says to a TLS handshake.
    let plain = Server::canned(
        b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_vec(),
    );
    let addr = plain.addr;
    let dir = tempfile::tempdir().expect("tempdir");
    let reference = format!("oci://{addr}/acme/catalog:1");
    let out = airlock_in(dir.path(), &["pull", &reference]);
    assert_ne!(out.status.code(), Some(0));
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "the registry answered plain HTTP, not TLS: use `oci+http://{addr}/acme/catalog:TAG` \
             or `--insecure-registry {addr}`"
        )),
        "{err}"
    );
    assert!(!err.contains("InvalidContentType"), "{err}");
}

/// An empty folder named explicitly says it is empty; a truncated
/// component says it is cut short.
#[test]
fn an_empty_folder_and_a_truncated_component_say_what_they_are() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("tools")).expect("tools");
    let out = airlock_in(dir.path(), &["inspect", "tools"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("nothing to inspect: tools holds no component files (.wasm)"),
        "{}",
        stderr(&out)
    );

    let bytes = std::fs::read(component("catalog")).expect("catalog");
    std::fs::write(dir.path().join("cut.wasm"), &bytes[..bytes.len() / 2]).expect("write");
    let out = airlock_in(dir.path(), &["inspect", "cut.wasm"]);
    assert_ne!(out.status.code(), Some(0));
    let err = stderr(&out);
    assert!(err.contains("the file is cut short"), "{err}");
    assert!(!err.contains("unexpected end-of-file"), "{err}");
}

/// The desktop-client configurations the guides show (`"mcpServers"`) are
/// JSON, and their `"env"` names what airlock reads from an environment a
/// client may leave empty: `HOME` (the compile cache) and `AIRLOCK_LOG`.
#[test]
fn the_desktop_client_env_blocks_name_home_and_the_log() {
    let root = support::workspace();
    let mut seen = 0;
    for page in ["README.md", "docs/clients.md"] {
        let text = std::fs::read_to_string(root.join(page)).expect("page");
        for block in text.split("```json\n").skip(1) {
            let block = block.split("```").next().unwrap_or_default();
            if !block.contains("\"mcpServers\"") {
                continue;
            }
            let config: serde_json::Value = serde_json::from_str(block)
                .unwrap_or_else(|e| panic!("{page}: not JSON ({e}):\n{block}"));
            let env = &config["mcpServers"]["airlock"]["env"];
            for name in ["HOME", "AIRLOCK_LOG"] {
                assert!(env.get(name).is_some(), "{page}: no {name} in {env}");
            }
            seen += 1;
        }
    }
    assert_eq!(seen, 2, "README.md and docs/clients.md each show one");
}

/// Over HTTP as over stdio: a client that connects while a component still
/// compiles gets it in its first `tools/list`, and `/readyz` still tells a
/// load balancer that the server is not ready meanwhile.
#[test]
fn over_http_the_first_list_waits_for_a_component_still_compiling() {
    use support::http::{Mcp, http, serve_with_cache};
    let cache = tempfile::tempdir().expect("cache");
    let served = serve_with_cache(
        "",
        &[support::example("shipping")],
        &["--load-wait", "0"],
        cache.path(),
    );
    let ready = http(served.addr, "GET", "/readyz", &[], b"");
    assert_eq!(ready.status, 503, "{}", ready.body);
    let mut mcp = Mcp::connect(served.addr, serde_json::json!({}), &[]);
    let list = mcp.request("tools/list", serde_json::json!({}));
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["book_pickup", "shipping_quote"], "{list}");
}

/// The examples of `call --help` (and `serve --help`) name files that are
/// there after `cargo xtask build`, and run as written from the
/// repository's root.
#[test]
fn the_call_help_examples_run_from_a_clone() {
    let root = support::workspace();
    let out = airlock_in(&root, &["call", "--help"]);
    let help = stdout(&out);
    let examples: Vec<&str> = help
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("airlock call "))
        .collect();
    assert_eq!(examples.len(), 3, "{help}");
    for example in &examples {
        let file = example.split_whitespace().nth(2).unwrap_or_default();
        assert!(
            root.join(file).is_file(),
            "{file} does not exist: {example}"
        );
    }
    // The two that need no policy: their arguments as the shell passes them.
    let first = ["call", "target/components/export.wasm", "export_orders"];
    let out = airlock_in(
        &root,
        &[&first[..], &["customer_id=C-1", "max_age_days=42"]].concat(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = airlock_in(
        &root,
        &[&first[..], &["--args", "[\"C-1\", 30, \"tsv\"]"]].concat(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        examples[1].contains(r#"--args '["C-1", 30, "tsv"]'"#),
        "{help}"
    );

    // serve's examples name files that are there too.
    let help = stdout(&airlock_in(&root, &["serve", "--help"]));
    let named: Vec<&str> = help
        .split_whitespace()
        .filter(|word| word.starts_with("target/") && word.ends_with(".wasm"))
        .collect();
    assert!(named.len() >= 2, "{help}");
    for file in named {
        assert!(root.join(file).is_file(), "{file} does not exist:\n{help}");
    }
}

/// No subcommand's help names a component path a clone does not have after
/// `cargo xtask build` (inspect's once said `components/catalog.wasm`).
#[test]
fn every_help_names_only_component_files_that_exist() {
    let root = support::workspace();
    for sub in [
        "inspect", "call", "check", "serve", "pull", "publish", "new", "policy",
    ] {
        let help = stdout(&airlock_in(&root, &[sub, "--help"]));
        for word in help.split_whitespace() {
            let word = word.trim_matches(|c: char| "()`'\",.".contains(c));
            if word.ends_with(".wasm") && word.contains('/') && !word.contains("://") {
                assert!(
                    root.join(word).is_file(),
                    "`airlock {sub} --help` names {word}, which a clone does not have:\n{help}"
                );
            }
        }
    }
}

/// `serve` with nothing to serve says why, and what to do for that case:
/// no PATH at all is not a matter of refusals.
#[test]
fn serve_with_nothing_to_serve_says_what_to_do_for_its_case() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = airlock_in(dir.path(), &["serve", "--stdio"]);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("error: no tools to serve: no PATH was given and the policy names no component source; name a component file or a folder of them (airlock serve tool.wasm, airlock serve tools/)"),
        "{err}"
    );
    assert!(!err.contains("refusals"), "{err}");

    let bytes = std::fs::read(component("catalog")).expect("catalog");
    std::fs::write(dir.path().join("cut.wasm"), &bytes[..bytes.len() / 2]).expect("write");
    let out = airlock_in(dir.path(), &["serve", "--stdio", "cut.wasm"]);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(
            "error: no tools to serve: every component was refused; fix the refusals above"
        ),
        "{err}"
    );
}

/// What the flags and the policy decide is checked before anything loads:
/// a refusal to listen beyond loopback without tokens, and a port in use,
/// come before a component (here one that would compile for seconds) is
/// even read.
#[test]
fn serve_checks_its_address_before_loading_anything() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cold = |args: &[&str]| {
        let mut command = command_in(dir.path(), args);
        command.env("AIRLOCK_CACHE_DIR", dir.path().join("cache"));
        command.env("AIRLOCK_LOG", "info");
        command.output().expect("run airlock")
    };
    let shipping = path(&support::example("shipping"));
    let out = cold(&["serve", "--listen", "0.0.0.0:0", &shipping]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("error: refusing to listen on 0.0.0.0:0"),
        "{err}"
    );
    assert!(
        !err.contains("compiling") && !err.contains("loaded"),
        "{err}"
    );

    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let addr = taken.local_addr().expect("addr").to_string();
    let out = cold(&["serve", "--listen", &addr, &shipping]);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&format!("error: cannot listen on {addr}")),
        "{err}"
    );
    assert!(
        !err.contains("compiling") && !err.contains("loaded"),
        "{err}"
    );
    assert!(!dir.path().join("cache").exists(), "nothing was compiled");
}

/// A call's duration is logged in milliseconds with at most three decimals
/// (it was `duration_ms=3.0401569999999998`).
#[test]
fn durations_are_logged_to_the_microsecond() {
    let out = command_in(
        &support::workspace(),
        &[
            "call",
            &path(&component("catalog")),
            "lookup_price",
            "sku=SKU-1001",
        ],
    )
    .env("AIRLOCK_LOG", "info")
    .env("NO_COLOR", "1")
    .output()
    .expect("run airlock");
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    let ms = err
        .split("duration_ms=")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no duration_ms in {err}"));
    let decimals = ms.split_once('.').map_or(0, |(_, d)| d.len());
    assert!(
        decimals <= 3 && ms.parse::<f64>().is_ok(),
        "duration_ms={ms}"
    );
}

/// `python3 build.py` of a new Python project says what each long step
/// does before it starts it (pip ran silently for ~25 s). The venv's
/// programs are stand-ins that record their turn, so nothing is installed.
#[test]
fn build_py_says_what_it_installs_and_builds_before_it_does() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = airlock_in(dir.path(), &["new", "tool", "--lang", "python"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let project = dir.path().join("tool");
    let bin = project.join(".venv/bin");
    std::fs::create_dir_all(&bin).expect("bin");
    let site = project.join(".venv/site");
    let stand_ins = [
        (
            "python",
            format!(
                "#!/bin/sh\ncase \"$1\" in\n-m) echo \"(pip ran)\" ;;\n-c) echo '{}' ;;\nesac\n",
                site.display()
            ),
        ),
        (
            "componentize-py",
            "#!/bin/sh\necho \"(componentize-py ran)\"\n".into(),
        ),
    ];
    for (name, script) in stand_ins {
        let file = bin.join(name);
        std::fs::write(&file, script).expect("stand-in");
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let out = Command::new("python3")
        .arg("build.py")
        .current_dir(&project)
        .output()
        .expect("python3 (3.11 or newer) is installed");
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let printed = stdout(&out);
    let at = |text: &str| {
        printed
            .find(text)
            .unwrap_or_else(|| panic!("no {text:?} in:\n{printed}"))
    };
    assert!(
        at("build.py: installing componentize-py==") < at("(pip ran)"),
        "{printed}"
    );
    assert!(printed.contains("up to half a minute"), "{printed}");
    assert!(
        at("(pip ran)") < at("build.py: building tool.wasm from app.py")
            && at("build.py: building tool.wasm") < at("(componentize-py ran)"),
        "{printed}"
    );
    // Installed once: the next build says nothing of pip.
    let out = Command::new("python3")
        .arg("build.py")
        .current_dir(&project)
        .output()
        .expect("python3");
    assert!(!stdout(&out).contains("installing"), "{}", stdout(&out));
}
