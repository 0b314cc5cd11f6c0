//! `cargo xtask`: builds the guest components and runs the project's checks,
//! so nobody needs to remember the wasm target or the order of steps.
//!
//! - `cargo xtask build`  — the `airlock` binary and every component
//! - `cargo xtask serve`  — build, then serve the example tools over HTTP
//!   with the policy they need ([`SERVE_POLICY`])
//! - `cargo xtask apps-host` — a page showing a tool's MCP App (UI) in a
//!   browser, against the airlock `serve` runs
//! - `cargo xtask test`   — build, all tests, fmt and clippy; ends with a
//!   `N passed, N failed` line; includes the clients no one here wrote
//!   (MCP conformance suite, Python SDK, Inspector CLI, the OpenRPC
//!   tools, an MCP Apps host in chromium: `tests/clients/`;
//!   Debian's docker-registry and the ORAS Python SDK: `tests/registry/`)
//! - `cargo xtask bench`  — the benchmark suite; writes `BENCHMARKS.md`
//! - `cargo xtask fuzz`   — the fuzz targets on the stable toolchain
//! - `cargo xtask deps`   — dependencies behind a newer release, the sandbox's first

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

mod apps;
mod clients;
mod deps;
mod extension_scenarios;
mod harness;
mod openrpc;
mod toolchains;

use apps::apps_host;
use clients::{client_tests, test_apps, test_clients, test_openrpc};
use toolchains::{build_examples, ensure_apt, ensure_venv, language_tests};

const TARGET: &str = "wasm32-wasip2";

/// Guest workspaces and where their `.wasm` files are collected.
const GUESTS: [(&str, &str); 3] = [
    ("components", "target/components"),
    ("tests/components", "target/test-components"),
    // The WASI 0.3 test components: a workspace of their own (wit-bindgen's
    // `async` feature stays out of the 0.2 guests).
    ("tests/components/p3", "target/test-components"),
];

fn main() -> Result<()> {
    let root = root();
    std::env::set_current_dir(&root)?;
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("build") => build(&root),
        Some("serve") => serve(&root, &args[1..]),
        Some("test") => test(&root),
        Some("test-clients") => test_clients(&root),
        Some("test-openrpc") => test_openrpc(&root),
        Some("test-apps") => test_apps(&root),
        Some("apps-host") => apps_host(&root, &args[1..]),
        Some("build-examples") => build_examples(&root),
        Some("bench") => bench(&root, &args[1..]),
        Some("fuzz") => fuzz(&root, &args[1..]),
        Some("deps") => deps::deps(&root),
        _ => {
            eprintln!(
                "usage: cargo xtask <command>\n\n\
                 commands:\n  \
                 build   build the airlock binary and every component (wasm32-wasip2)\n  \
                 serve   build, then serve the example tools on http://127.0.0.1:8414/mcp\n          \
                 with components/serve-policy.toml (extra arguments go to `airlock serve`)\n  \
                 apps-host [--airlock URL] [--port N] [--tool NAME]  a page for your browser\n          \
                 that shows a tool's MCP App (UI) from a running airlock (default\n          \
                 http://127.0.0.1:8414, page on http://127.0.0.1:8420, tool stock_levels)\n  \
                 test    build, run every test, cargo fmt --check and clippy; prints a summary\n  \
                 test-clients  only the MCP clients (conformance suite, Python SDK, Inspector)\n          \
                 against target/debug/airlock and target/components\n  \
                 test-openrpc  only the OpenRPC tools (schema-utils-js, test-coverage,\n          \
                 generator) against target/debug/airlock\n  \
                 test-apps  only the MCP Apps test: a host page with ext-apps' AppBridge in\n          \
                 headless chromium (screenshots in target/mcp-apps/)\n  \
                 build-examples  install the pinned Python/JS toolchains under target/ and\n          \
                 build examples/python/* and examples/js/* into target/examples/ (and the\n          \
                 plain Python/JS test components into target/test-components/)\n  \
                 fuzz [TARGET|all] [--seconds N] [--seed S]  run the fuzz targets on the\n          \
                 stable toolchain (random and mutated inputs; see fuzz/README.md)\n  \
                 deps    every dependency with a newer release than the one locked, the\n          \
                 sandbox's own (wasmtime, rustls, hyper, …) first; `!` marks a release on\n          \
                 the locked line that cargo does not take (a fix to carry as a patch)\n  \
                 bench [--quick] [--only SECTION]  release build, run the benchmark suite,\n          \
                 write BENCHMARKS.md and benchmarks/*.svg; --only (http, lanes, auth, floor,\n          \
                 sides, languages, stdio, startup, memory, replicas, …) prints one section"
            );
            std::process::exit(2);
        }
    }
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// `cargo` in `workspace`, building into its own `target/` whatever a
/// `CARGO_TARGET_DIR` or `build.target-dir` says elsewhere: the binary,
/// the components and the tests are looked for there
/// (`target/debug/airlock`, `target/components`, …).
fn cargo(workspace: &Path) -> Command {
    let mut cmd = Command::new("cargo");
    cmd.current_dir(workspace)
        .env("CARGO_TARGET_DIR", workspace.join("target"));
    cmd
}

fn run(cmd: &mut Command) -> Result<()> {
    eprintln!("+ {cmd:?}");
    let status = cmd
        .status()
        .with_context(|| format!("cannot run {cmd:?}"))?;
    if !status.success() {
        bail!("{cmd:?} failed with {status}");
    }
    Ok(())
}

/// Adds the wasm target when rustup lacks it (a fresh machine).
fn ensure_target() -> Result<()> {
    let out = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output();
    match out {
        Ok(out)
            if String::from_utf8_lossy(&out.stdout)
                .lines()
                .any(|l| l.trim() == TARGET) =>
        {
            Ok(())
        }
        Ok(_) => run(Command::new("rustup").args(["target", "add", TARGET])),
        Err(_) => {
            eprintln!("warning: rustup not found; assuming the {TARGET} target is installed");
            Ok(())
        }
    }
}

fn build(root: &Path) -> Result<()> {
    run(cargo(root).args(["build", "-p", "airlock"]))?;
    build_guests(root)
}

/// Builds every guest workspace for wasm32-wasip2 and collects the `.wasm`.
fn build_guests(root: &Path) -> Result<()> {
    ensure_target()?;
    for (workspace, out) in GUESTS {
        let dir = root.join(workspace);
        if !dir.join("Cargo.toml").is_file() {
            continue;
        }
        run(cargo(&dir).args(["build", "--release", "--target", TARGET]))?;
        collect(
            &dir.join("target").join(TARGET).join("release"),
            &root.join(out),
        )?;
    }
    build_examples(root)
}

/// Copies the built `.wasm` files into one folder per guest workspace.
fn collect(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to)?;
    let mut count = 0;
    for entry in std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "wasm") {
            let name = path.file_name().context("file name")?;
            std::fs::copy(&path, to.join(name))?;
            count += 1;
        }
    }
    eprintln!("  {count} components in {}", to.display());
    Ok(())
}

/// The fuzz targets of `fuzz/` on the stable toolchain: builds the driver
/// into the workspace's target directory (so it shares the built
/// dependencies) and runs it; `cargo +nightly fuzz run` is the libFuzzer way.
fn fuzz(root: &Path, extra: &[String]) -> Result<()> {
    run(cargo(root)
        .arg("run")
        .arg("--manifest-path")
        .arg(root.join("fuzz/Cargo.toml"))
        .arg("--target-dir")
        .arg(root.join("target"))
        .args(["--no-default-features", "--bin", "fuzz-driver", "--"])
        .args(extra))
}

/// Builds airlock and the bench suite in release mode, the test guests
/// (which hold the bench component), the Python and JavaScript examples and
/// the unsandboxed floor (`bench/floor`, its own workspace: rmcp is built
/// for the benchmarks only), then runs the suite from the root.
fn bench(root: &Path, extra: &[String]) -> Result<()> {
    ensure_target()?;
    let guests = root.join("tests/components");
    run(cargo(&guests).args(["build", "--release", "--target", TARGET]))?;
    collect(
        &guests.join("target").join(TARGET).join("release"),
        &root.join("target/test-components"),
    )?;
    build_examples(root)?;
    // The official MCP Python SDK, the Python guest's unsandboxed peer
    // (`--only languages`), from the clients' pinned venv.
    ensure_venv(
        &root.join("target/clients/venv"),
        "tests/clients/requirements.txt",
    )?;
    run(cargo(root)
        .args(["build", "--release", "--manifest-path"])
        .arg(root.join("bench/floor/Cargo.toml"))
        .arg("--target-dir")
        .arg(root.join("target/floor")))?;
    run(cargo(root).args(["build", "--release", "-p", "airlock", "-p", "airlock-bench"]))?;
    run(Command::new(root.join("target/release/airlock-bench")).args(extra))
}

/// The policy `cargo xtask serve` serves the examples with (unless the
/// arguments name another): what the examples need to work as shipped.
const SERVE_POLICY: &str = "components/serve-policy.toml";

/// The stock chart's folder that policy grants, and the levels it starts with.
const SERVE_STOCK: &str = "target/serve/stock";
const SAMPLE_STOCK: &str = "components/stock-chart/data/stock.json";

fn serve(root: &Path, extra: &[String]) -> Result<()> {
    build(root)?;
    serve_folders(root)?;
    let mut cmd = Command::new(root.join("target/debug/airlock"));
    // The first-party tools and the Python and JavaScript examples.
    cmd.args(["serve", "target/components", "target/examples"]);
    if !extra
        .iter()
        .any(|a| a == "--policy" || a.starts_with("--policy="))
    {
        cmd.args(["--policy", SERVE_POLICY]);
    }
    if extra.is_empty() {
        cmd.args(["--listen", "127.0.0.1:8414"]);
    } else {
        cmd.args(extra);
    }
    run(&mut cmd)
}

/// The folders [`SERVE_POLICY`] grants: the stock chart's, with the sample
/// levels when it holds none yet (what the chart's buttons add is kept).
fn serve_folders(root: &Path) -> Result<()> {
    let stock = root.join(SERVE_STOCK);
    std::fs::create_dir_all(&stock).with_context(|| format!("creating {}", stock.display()))?;
    if !stock.join("stock.json").exists() {
        std::fs::copy(root.join(SAMPLE_STOCK), stock.join("stock.json"))
            .with_context(|| format!("copying {SAMPLE_STOCK} into {SERVE_STOCK}"))?;
    }
    Ok(())
}

/// Totals of all test runs.
#[derive(Default)]
struct Tally {
    passed: u64,
    failed: u64,
    ignored: u64,
    failures: Vec<String>,
}

impl Tally {
    /// Prints the failed steps and the closing `N passed, N failed, N
    /// skipped` line; exits 1 when anything failed.
    fn finish(&self) -> Result<()> {
        println!();
        for failure in &self.failures {
            println!("failed step: {failure}");
        }
        println!(
            "{} passed, {} failed, {} skipped",
            self.passed, self.failed, self.ignored
        );
        if self.failed > 0 {
            std::process::exit(1);
        }
        Ok(())
    }

    /// Reads cargo's `test result: ok. 3 passed; 0 failed; 1 ignored; …` lines.
    fn read(&mut self, line: &str) {
        let Some(rest) = line.trim().strip_prefix("test result: ") else {
            return;
        };
        for part in rest.split([';', '.']) {
            let mut words = part.split_whitespace();
            let (Some(n), Some(what)) = (words.next(), words.next()) else {
                continue;
            };
            let Ok(n) = n.parse::<u64>() else { continue };
            match what {
                "passed" => self.passed += n,
                "failed" => self.failed += n,
                "ignored" => self.ignored += n,
                _ => {}
            }
        }
    }
}

/// Runs a command, echoing its output, feeding every line to the tally.
/// Targets that fail to compile (cargo says so on stderr) count as failures
/// too, so that no broken test binary or doctest goes unnoticed.
fn run_counted(cmd: &mut Command, tally: &mut Tally) -> Result<bool> {
    eprintln!("+ {cmd:?}");
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot run {cmd:?}"))?;
    let stderr = child.stderr.take().context("no stderr")?;
    let broken = std::thread::spawn(move || {
        let mut broken = Vec::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            eprintln!("{line}");
            if line.starts_with("error: could not compile")
                || line.starts_with("error: doctest failed")
            {
                broken.push(line);
            }
        }
        broken
    });
    let stdout = child.stdout.take().context("no stdout")?;
    for line in BufReader::new(stdout).lines() {
        let line = line?;
        println!("{line}");
        tally.read(&line);
    }
    let ok = child.wait()?.success();
    for line in broken.join().unwrap_or_default() {
        tally.failed += 1;
        tally.failures.push(line);
    }
    Ok(ok)
}

fn test(root: &Path) -> Result<()> {
    let mut tally = Tally::default();
    let step = |name: &str, ok: bool, tally: &mut Tally| {
        if !ok {
            tally.failed += 1;
            tally.failures.push(name.to_string());
        }
    };
    // Only the guests: `cargo test` builds the binary itself, with the same
    // features as the tests (a separate `cargo build -p airlock` would
    // resolve features differently and compile wasmtime twice).
    let built = build_guests(root).is_ok();
    step("build", built, &mut tally);
    // The tests' real parts: Debian's docker-registry and the ORAS Python
    // SDK for the registry tests (runtime/tests/registry.rs says what is
    // missing otherwise), curl, the client the guide's HTTPS and /rpc
    // examples use (serve_tls, the docs' client examples), and the pinned
    // clients' venv, whose opentelemetry-proto decodes what the OTLP
    // receiver of runtime/tests/telemetry.rs is sent (the clients' step
    // below uses the same venv).
    let parts = ensure_apt("docker-registry", "/usr/bin/docker-registry")
        .and_then(|()| ensure_apt("curl", "/usr/bin/curl"))
        .and_then(|()| {
            ensure_venv(
                &root.join("target/registry-venv"),
                "tests/registry/requirements.txt",
            )
        })
        .and_then(|()| {
            ensure_venv(
                &root.join("target/clients/venv"),
                "tests/clients/requirements.txt",
            )
        });
    if let Err(err) = &parts {
        eprintln!("error: installing the tests' parts: {err:#}");
    }
    step("test parts", parts.is_ok(), &mut tally);
    if built {
        let ok = run_counted(
            cargo(root).args(["test", "--workspace", "--no-fail-fast"]),
            &mut tally,
        )?;
        if !ok && tally.failed == 0 {
            step("cargo test", false, &mut tally);
        }
    }
    // WASI 0.3 components need airlock's `p3` feature, off by default
    // (BENCHMARKS.md, "WASI 0.3"): their tests with it on (wasmtime is
    // compiled a second time, with component-model-async).
    if built {
        let failed_before = tally.failed;
        let ok = run_counted(
            cargo(root).args([
                "test",
                "-p",
                "airlock",
                "--features",
                "p3",
                "--no-fail-fast",
                "--lib",
                "--test",
                "runtime",
                "p3",
            ]),
            &mut tally,
        )?;
        if !ok && tally.failed == failed_before {
            step("cargo test --features p3", false, &mut tally);
        }
    }
    let fmt = run(cargo(root).args(["fmt", "--all", "--check"])).is_ok();
    step("cargo fmt --check", fmt, &mut tally);
    let clippy = run(cargo(root).args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]))
    .is_ok();
    step("cargo clippy", clippy, &mut tally);
    let clippy = run(cargo(root).args([
        "clippy",
        "-p",
        "airlock",
        "--all-targets",
        "--features",
        "p3",
        "--",
        "-D",
        "warnings",
    ]))
    .is_ok();
    step("cargo clippy --features p3", clippy, &mut tally);
    for (workspace, _) in GUESTS {
        let dir = root.join(workspace);
        if !dir.join("Cargo.toml").is_file() {
            continue;
        }
        // Not `--all`: that would follow the SDK's path dependency into the
        // main workspace, which is checked above.
        let fmt = run(cargo(&dir).args(["fmt", "--check"])).is_ok();
        step(&format!("cargo fmt --check ({workspace})"), fmt, &mut tally);
        let clippy = run(cargo(&dir).args([
            "clippy",
            "--release",
            "--target",
            TARGET,
            "--",
            "-D",
            "warnings",
        ]))
        .is_ok();
        step(&format!("cargo clippy ({workspace})"), clippy, &mut tally);
    }
    // The first-party tools' own unit tests run natively.
    let failed_before = tally.failed;
    let ok = run_counted(
        cargo(&root.join("components")).args(["test", "--no-fail-fast"]),
        &mut tally,
    )?;
    if !ok && tally.failed == failed_before {
        step("cargo test (components)", false, &mut tally);
    }
    // So do the conformance fixtures' (a test component written with the
    // SDK; the other test components have none).
    let failed_before = tally.failed;
    let ok = run_counted(
        cargo(&root.join("tests/components")).args(["test", "-p", "conformance", "--no-fail-fast"]),
        &mut tally,
    )?;
    if !ok && tally.failed == failed_before {
        step(
            "cargo test (tests/components conformance)",
            false,
            &mut tally,
        );
    }
    language_tests(root, &mut tally)?;
    if built {
        client_tests(root, &mut tally)?;
    }
    // A report, not a test: upstream releases come at any time.
    println!("\n{}", deps::summary_line(root));
    tally.finish()
}
