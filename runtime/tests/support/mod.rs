//! Shared helpers of the end-to-end tests: where the built components are,
//! and a runtime with a given policy.

pub mod http;
pub mod oauth;
pub mod registry;
pub mod servers;
pub mod tls;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use airlock::Runtime;
use airlock::call::{CallError, Caller, Confirmation};
use airlock::observe::Unobserved;
use airlock::policy::Policy;
use airlock::sandbox::{CompileCache, Sandbox, SandboxConfig};
use airlock::tool::Output;
use serde_json::{Value, json};

pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

fn built(folder: &str, name: &str) -> PathBuf {
    let path = workspace().join(folder).join(format!("{name}.wasm"));
    assert!(
        path.is_file(),
        "{} is missing: run `cargo xtask build` first",
        path.display()
    );
    path
}

/// A first-party component, built by `cargo xtask build`.
pub fn component(name: &str) -> PathBuf {
    built("target/components", name)
}

/// A hostile or lying test component, built by `cargo xtask build`.
pub fn test_component(name: &str) -> PathBuf {
    built("target/test-components", name)
}

/// A Python or JavaScript example, built by `cargo xtask build` (or
/// `cargo xtask build-examples`).
pub fn example(name: &str) -> PathBuf {
    built("target/examples", name)
}

/// The compile cache the tests share (so each component compiles once).
pub fn cache() -> CompileCache {
    CompileCache::new(workspace().join("target/test-cache"))
}

/// A sandbox sized for tests.
pub fn sandbox() -> Sandbox {
    sandbox_with(SandboxConfig::default())
}

pub fn sandbox_with(config: SandboxConfig) -> Sandbox {
    Sandbox::new(&config.instances(32).cache(Some(cache()))).expect("sandbox")
}

/// A runtime with `policy` (TOML; relative paths against the workspace)
/// and `files` loaded; panics when anything is refused.
pub fn runtime(policy: &str, files: &[PathBuf]) -> Runtime {
    runtime_of(Policy::parse(policy, &workspace()).expect("policy"), files)
}

/// A runtime with a parsed `policy` and `files` loaded; panics when
/// anything is refused.
/// A runtime with the policy `text` (relative paths against `dir`), read
/// with only `var` set, to `value`, in its environment, and `files` loaded.
pub fn runtime_with_var(
    dir: &Path,
    text: &str,
    (var, value): (&str, &str),
    files: &[PathBuf],
) -> Runtime {
    let policy = Policy::parse_with_env(text, dir, |name| {
        if name == var {
            Ok(value.to_string())
        } else {
            Err(std::env::VarError::NotPresent)
        }
    })
    .unwrap_or_else(|e| panic!("{e}\n{text}"));
    runtime_of(policy, files)
}

pub fn runtime_of(policy: Policy, files: &[PathBuf]) -> Runtime {
    let sandbox = sandbox_with(SandboxConfig::default().fuel(policy.uses_fuel()));
    let runtime = Runtime::new(sandbox, policy);
    let report = runtime.load(files);
    assert!(
        report.refused.is_empty(),
        "refused: {:?}",
        report
            .refused
            .iter()
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
    );
    runtime
}

/// `airlock ARGS` (the binary under test) with the tests' compile cache.
pub fn airlock_command(args: &[&str]) -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_airlock"));
    command
        .args(args)
        .env("AIRLOCK_CACHE_DIR", workspace().join("target/test-cache"));
    command
}

/// The first refusal of loading `files` under `policy` (TOML), as text;
/// panics when everything loads.
pub fn first_refusal(policy: &str, files: &[PathBuf]) -> String {
    let policy = Policy::parse(policy, &workspace()).expect("policy");
    let runtime = Runtime::new(sandbox(), policy);
    let report = runtime.load(files);
    report
        .refused
        .first()
        .map(ToString::to_string)
        .unwrap_or_else(|| panic!("{files:?} loaded; expected a refusal"))
}

/// One call from the command line, with no observer and no one to confirm.
/// The entries of an audit log, one JSON object a line.
pub fn audit_entries(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("audit log")
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect()
}

/// What each audit entry was for and how it ended: `(tool, outcome)`.
pub fn audit_outcomes(entries: &[Value]) -> Vec<(&str, &str)> {
    entries
        .iter()
        .map(|e| {
            (
                e["tool"].as_str().unwrap_or(""),
                e["outcome"].as_str().unwrap_or(""),
            )
        })
        .collect()
}

pub fn call(runtime: &Runtime, tool: &str, args: Value) -> Result<Output, CallError> {
    runtime.call(Caller::CommandLine, tool, args, Arc::new(Unobserved))
}

/// One call whose confirmation (if the policy asks for one) is `answer`.
pub fn call_answered(
    runtime: &Runtime,
    tool: &str,
    args: Value,
    answer: Confirmation,
) -> Result<Output, CallError> {
    let mut prepared = runtime.prepare(Caller::CommandLine, tool, args)?;
    if prepared.needs_confirmation() {
        prepared.confirm(answer);
    }
    prepared.run(Arc::new(Unobserved))
}

/// The structured result of a call that must succeed.
pub fn structured(runtime: &Runtime, tool: &str, args: Value) -> Value {
    let out = call(runtime, tool, args).unwrap_or_else(|e| panic!("{tool}: {e}"));
    out.structured
        .unwrap_or_else(|| panic!("{tool}: no structured output"))
}

/// The error of a call that must fail.
pub fn call_error(runtime: &Runtime, tool: &str, args: Value) -> CallError {
    match call(runtime, tool, args) {
        Ok(out) => panic!("{tool}: expected an error, got {out:?}"),
        Err(err) => err,
    }
}

/// The hostile component's `spin` runs out of fuel under a fuel limit,
/// and the same component's next call runs as if nothing happened.
pub fn assert_fuel_runs_out(runtime: &Runtime) {
    let err = call(runtime, "spin", json!({})).expect_err("fuel");
    assert_eq!(err.to_string(), "fuel exhausted");
    assert_eq!(text(&call(runtime, "good", json!({})).expect("good")), "ok");
}

/// The text of the first content block.
pub fn text(output: &Output) -> String {
    match output.content.first() {
        Some(airlock::tool::Content::Text(text)) => text.clone(),
        other => panic!("expected a text block, got {other:?}"),
    }
}

/// Runs `attack` on another thread while well-behaved calls of the hostile
/// component's `good` tool run on this one. Every good call must succeed,
/// during and after the attack; returns what the attack returned.
pub fn beside_good_calls<T: Send>(runtime: &Runtime, attack: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|scope| {
        let bad = scope.spawn(attack);
        let mut good_calls = 0;
        while !bad.is_finished() || good_calls == 0 {
            let out =
                call(runtime, "good", json!({})).expect("a well-behaved call beside an attack");
            assert_eq!(text(&out), "ok");
            good_calls += 1;
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let result = bad.join().expect("the attack's thread");
        let after = call(runtime, "good", json!({})).expect("a call after the attack");
        assert_eq!(text(&after), "ok");
        result
    })
}

/// Sends SIGTERM to process `pid` (a served airlock), as an operator would.
pub fn terminate(pid: u32) {
    signal(pid, "TERM");
}

/// Sends SIGINT (Ctrl-C) to `pid`.
pub fn interrupt(pid: u32) {
    signal(pid, "INT");
}

fn signal(pid: u32, name: &str) {
    let ok = std::process::Command::new("kill")
        .args([&format!("-{name}"), &pid.to_string()])
        .status()
        .expect("kill");
    assert!(ok.success(), "kill -{name} {pid}");
}

/// Waits (at most 20 s) for `child` to exit and returns its status.
pub fn wait_for_exit(child: &mut std::process::Child) -> std::process::ExitStatus {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status;
        }
        assert!(std::time::Instant::now() < deadline, "airlock did not stop");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}
