//! Tiered compilation: a component on quick-tier (Winch) code is held to
//! every limit as on optimised code, the optimiser puts optimised code in
//! place under a runtime that keeps serving, and the compile cache then
//! starts the next runtime on optimised code at once; a component the
//! quick tier cannot compile starts optimised.
//!
//! Every component here starts on the quick tier (`tier_above(Some(0))`),
//! each test with a compile cache of its own, so that optimised code is
//! never found cached by accident.

use crate::support;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use airlock::Runtime;
use airlock::call::{CallError, Caller};
use airlock::observe::Unobserved;
use airlock::policy::Policy;
use airlock::sandbox::{CompileCache, RunError, Sandbox, SandboxConfig, Tier};
use serde_json::json;
use support::{call, test_component, text};

const POLICY: &str = r#"
[components.hostile]
limits = { time = "1s", memory = "32MiB", concurrency = 64 }

[components.plain]
"#;

/// A runtime whose every component starts on the quick tier, caching in
/// `cache`.
fn quick_runtime(policy: &str, cache: &Path, fuel: bool) -> Runtime {
    let config = SandboxConfig::default()
        .instances(16)
        .fuel(fuel)
        .cache(Some(CompileCache::new(cache)))
        .tier_above(Some(0));
    let sandbox = Sandbox::new(&config).expect("sandbox");
    let policy = Policy::parse(policy, &support::workspace()).expect("policy");
    let runtime = Runtime::new(sandbox, policy);
    let report = runtime.load(&[test_component("hostile"), test_component("plain")]);
    assert!(report.refused.is_empty(), "{:?}", report.refused);
    runtime
}

fn tier_of(runtime: &Runtime, tool: &str) -> Tier {
    let catalog = runtime.catalog();
    let tool = catalog.tool(tool).expect("tool loaded");
    tool.component.tier(runtime.sandbox())
}

#[test]
fn quick_tier_code_is_held_to_every_limit() {
    let cache = tempfile::tempdir().expect("cache dir");
    let runtime = quick_runtime(POLICY, cache.path(), false);
    assert_eq!(tier_of(&runtime, "good"), Tier::Quick);
    assert_eq!(
        text(&call(&runtime, "good", json!({})).expect("good")),
        "ok"
    );

    let err = call(&runtime, "spin", json!({})).expect_err("spin");
    assert!(
        matches!(err, CallError::Run(RunError::TimedOut(_))),
        "{err:?}"
    );
    let err = call(&runtime, "allocate", json!({})).expect_err("allocate");
    assert_eq!(err.to_string(), "memory limit of 32 MiB exceeded");
    let err = call(&runtime, "recurse", json!({})).expect_err("recurse");
    assert_eq!(err.to_string(), "stack overflow");
    let err = call(&runtime, "panic", json!({})).expect_err("panic");
    assert_eq!(err.to_string(), "the tool panicked: boom");

    // Cancellation reaches quick-tier code through the epoch too.
    let prepared = runtime
        .prepare(Caller::CommandLine, "spin", json!({}))
        .expect("prepared");
    let cancel = prepared.cancel_token().clone();
    let runner = std::thread::spawn(move || prepared.run(Arc::new(Unobserved)));
    std::thread::sleep(Duration::from_millis(100));
    cancel.cancel();
    let err = runner.join().expect("runner").expect_err("cancelled");
    assert!(
        matches!(err, CallError::Run(RunError::Cancelled)),
        "{err:?}"
    );

    // A plain-functions component runs on the quick tier as well.
    assert_eq!(tier_of(&runtime, "add"), Tier::Quick);
    let out = call(&runtime, "add", json!({ "a": 2, "b": 3 })).expect("add");
    assert_eq!(out.structured, Some(json!({ "result": 5 })), "{out:?}");
}

#[test]
fn fuel_runs_out_on_quick_tier_code() {
    let cache = tempfile::tempdir().expect("cache dir");
    let policy = "[components.hostile]\nlimits = { fuel = 1000000, time = \"5s\" }\n";
    let runtime = quick_runtime(policy, cache.path(), true);
    assert_eq!(tier_of(&runtime, "spin"), Tier::Quick);
    support::assert_fuel_runs_out(&runtime);
}

#[test]
fn optimised_code_replaces_quick_code_and_is_cached() {
    let cache = tempfile::tempdir().expect("cache dir");
    let runtime = quick_runtime(POLICY, cache.path(), false);
    assert_eq!(tier_of(&runtime, "good"), Tier::Quick);
    // A tool of the old catalog, held like a running call holds it.
    let held = runtime.catalog();

    runtime.optimize_in_background().expect("optimizer");
    let deadline = Instant::now() + Duration::from_secs(120);
    while tier_of(&runtime, "good") != Tier::Optimized
        || tier_of(&runtime, "add") != Tier::Optimized
    {
        assert!(Instant::now() < deadline, "no optimised code after 120 s");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        text(&call(&runtime, "good", json!({})).expect("good")),
        "ok"
    );
    let out = call(&runtime, "add", json!({ "a": 2, "b": 3 })).expect("add");
    assert_eq!(out.structured, Some(json!({ "result": 5 })), "{out:?}");
    // The limits hold on the code swapped in.
    let err = call(&runtime, "allocate", json!({})).expect_err("allocate");
    assert_eq!(err.to_string(), "memory limit of 32 MiB exceeded");
    // The component is the same one: what held it sees the new code.
    let good = held.tool("good").expect("good");
    assert_eq!(good.component.tier(runtime.sandbox()), Tier::Optimized);

    // The next runtime finds the optimised code in the cache and starts
    // on it, however big the component.
    let again = quick_runtime(POLICY, cache.path(), false);
    assert_eq!(tier_of(&again, "good"), Tier::Optimized);
    assert_eq!(tier_of(&again, "add"), Tier::Optimized);
    assert_eq!(text(&call(&again, "good", json!({})).expect("good")), "ok");
}

#[test]
fn small_components_start_optimised_by_default() {
    // The default threshold keeps a Rust tool on Cranelift from the start.
    let cache = tempfile::tempdir().expect("cache dir");
    let config = SandboxConfig::default()
        .instances(4)
        .cache(Some(CompileCache::new(cache.path())));
    let runtime = Runtime::new(
        Sandbox::new(&config).expect("sandbox"),
        Policy::parse(POLICY, &support::workspace()).expect("policy"),
    );
    let report = runtime.load(&[test_component("hostile")]);
    assert!(report.refused.is_empty(), "{:?}", report.refused);
    assert_eq!(tier_of(&runtime, "good"), Tier::Optimized);
}

/// A component whose one core module uses a tail call (`return_call`), a
/// proposal Cranelift compiles and Winch does not.
const TAIL_CALL_COMPONENT: &[u8] = &[
    0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00, // component, version 0x0d
    0x01, 26, // a core module of 26 bytes:
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // module, version 1
    0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // types: () -> ()
    0x03, 0x02, 0x01, 0x00, // one function of type 0
    0x0a, 0x06, 0x01, 0x04, 0x00, 0x12, 0x00, 0x0b, // (return_call 0)
];

#[test]
fn a_component_the_quick_tier_cannot_compile_starts_optimised() {
    let cache = tempfile::tempdir().expect("cache dir");
    let config = SandboxConfig::default()
        .instances(4)
        .cache(Some(CompileCache::new(cache.path())))
        .tier_above(Some(0));
    let sandbox = Sandbox::new(&config).expect("sandbox");
    let compiled = sandbox
        .compile("tail-call", TAIL_CALL_COMPONENT)
        .expect("compiled by Cranelift when Winch refuses it");
    assert_eq!(sandbox.tier(compiled.engine()), Tier::Optimized);
    // Invalid bytes still fail, and say what they said without tiers.
    let garbage = b"\0asm\x0d\0\x01\0\x01\x03abc";
    let err = sandbox
        .compile("garbage", garbage)
        .expect_err("invalid component");
    let untiered = Sandbox::new(
        &SandboxConfig::default()
            .instances(4)
            .cache(None::<CompileCache>)
            .tier_above(None),
    )
    .expect("sandbox");
    let expected = untiered
        .compile("garbage", garbage)
        .expect_err("invalid component");
    assert_eq!(format!("{err:#}"), format!("{expected:#}"));
}
