//! Hostile components against the limits: each attack ends its own call
//! with a named error, while a well-behaved call running at the same time
//! completes and the runtime keeps serving.

use crate::support;

use std::sync::{Arc, OnceLock};
use std::thread;
use std::time::Duration;

use airlock::Runtime;
use airlock::call::{CallError, Caller};
use airlock::observe::Unobserved;
use airlock::sandbox::RunError;
use serde_json::json;
use support::{call, test_component, text};

const POLICY: &str = r#"
[components.hostile]
limits = { time = "1s", memory = "32MiB", output = "1MiB", log = "64KiB", concurrency = 64 }

# Writing 100 MiB takes a while in a debug build; it must not time out.
[components.hostile.tools.shout]
limits = { time = "60s" }

# Room to build a 50 MiB result, so that the output limit is what stops it.
[components.hostile.tools.huge_result]
limits = { memory = "256MiB" }
"#;

fn hostile() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| support::runtime(POLICY, &[test_component("hostile")]))
}

/// Runs the attack `tool` beside well-behaved calls; returns its error.
fn attack(tool: &str) -> CallError {
    support::beside_good_calls(hostile(), || call(hostile(), tool, json!({})))
        .expect_err("the attack must fail")
}

/// Calls `tool` on another thread, cancels it after 100 ms, and returns
/// how the call ended.
fn cancelled_after_100ms(tool: &str, args: serde_json::Value) -> CallError {
    let prepared = hostile()
        .prepare(Caller::CommandLine, tool, args)
        .expect("prepared");
    let cancel = prepared.cancel_token().clone();
    let runner = thread::spawn(move || prepared.run(Arc::new(Unobserved)));
    thread::sleep(Duration::from_millis(100));
    cancel.cancel();
    runner.join().expect("runner").expect_err("cancelled")
}

#[test]
fn infinite_loop_times_out() {
    let err = attack("spin");
    assert!(
        matches!(err, CallError::Run(RunError::TimedOut(_))),
        "{err:?}"
    );
    assert_eq!(err.to_string(), "timed out after 1s");
}

#[test]
fn blocking_inside_the_host_still_times_out() {
    // An hour-long sleep blocks in the host, out of reach of the epoch
    // check; the bounded wait ends it at the deadline.
    let err = attack("nap");
    assert_eq!(err.to_string(), "timed out after 1s");
}

#[test]
fn cancellation_reaches_a_guest_blocked_in_the_host() {
    let err = cancelled_after_100ms("nap", json!({}));
    assert!(
        matches!(err, CallError::Run(RunError::Cancelled)),
        "{err:?}"
    );
}

#[test]
fn memory_bomb_hits_the_memory_limit() {
    let err = attack("allocate");
    assert_eq!(err.to_string(), "memory limit of 32 MiB exceeded");
}

#[test]
fn deep_recursion_is_a_stack_overflow() {
    let err = attack("recurse");
    assert_eq!(err.to_string(), "stack overflow");
}

#[test]
fn overflowing_the_guest_stack_ends_the_call() {
    let err = attack("recurse_big");
    assert!(
        matches!(err, CallError::Run(RunError::Crashed(_))),
        "{err:?}"
    );
    assert!(err.to_string().contains("out-of-bounds"), "{err}");
}

#[test]
fn panic_reports_its_message() {
    let err = attack("panic");
    assert_eq!(err.to_string(), "the tool panicked: boom");
}

#[test]
fn exiting_instead_of_returning_is_named() {
    // WASI 0.2's `exit` carries only success or failure: 3 arrives as 1.
    let err = attack("exit");
    assert_eq!(
        err.to_string(),
        "the tool crashed: it exited (status 1) without returning a result"
    );
}

#[test]
fn huge_result_is_refused_by_size() {
    let err = attack("huge_result");
    assert_eq!(err.to_string(), "output of 50 MiB exceeds the 1 MiB limit");
}

#[test]
fn invalid_structured_output_is_a_tool_error() {
    let err = attack("bad_json");
    assert!(
        matches!(err, CallError::Run(RunError::BadOutput(_))),
        "{err:?}"
    );
    assert!(err.to_string().contains("not JSON"), "{err}");
}

#[test]
fn a_hundred_megabytes_of_stdout_are_capped_not_fatal() {
    // The guest writes 100 MiB to stdout; the runtime keeps 64 KiB, drops
    // the rest, and the call itself succeeds.
    let out = call(hostile(), "shout", json!({})).expect("shout");
    assert_eq!(text(&out), "shouted");
}

#[test]
fn environment_is_empty_unless_granted() {
    // SAFETY: tests in this file do not read the environment concurrently.
    unsafe { std::env::set_var("AIRLOCK_TEST_SECRET", "hunter2") };
    let out = call(hostile(), "env", json!({})).expect("env");
    assert_eq!(text(&out), "", "a tool with no env grant sees nothing");

    let granted = support::runtime(
        r#"
[components.hostile]
env = { GREETING = "hello", SECRET = { from = "AIRLOCK_TEST_SECRET" } }
"#,
        &[test_component("hostile")],
    );
    let out = call(&granted, "env", json!({})).expect("env");
    assert_eq!(text(&out), "GREETING=hello\nSECRET=hunter2");
}

#[test]
fn cancellation_stops_a_running_guest() {
    let err = cancelled_after_100ms("sleep", json!({"ms": "60000"}));
    // Either the epoch check stops the guest, or the guest notices first.
    assert!(
        matches!(err, CallError::Run(RunError::Cancelled))
            || err.to_string() == "noticed cancellation",
        "{err:?}"
    );
}

/// A call over `limits.concurrency` waits for a place, in a queue of
/// four times the limit; one that finds the queue full is refused at once.
#[test]
fn calls_over_the_concurrency_limit_wait_in_a_bounded_queue() {
    let runtime = Arc::new(support::runtime(
        "[components.hostile]\nlimits = { concurrency = 1, time = \"20s\" }\n",
        &[test_component("hostile")],
    ));
    let sleep = |ms: u64| {
        let runtime = runtime.clone();
        thread::spawn(move || call(&runtime, "sleep", json!({ "ms": ms.to_string() })))
    };
    let first = sleep(1500);
    thread::sleep(Duration::from_millis(300));
    // One runs; these four wait for its place, one after another.
    let queued: Vec<_> = (0..4).map(|_| sleep(1)).collect();
    thread::sleep(Duration::from_millis(300));
    let err = call(&runtime, "sleep", json!({"ms": "1"})).expect_err("the queue is full");
    assert!(
        matches!(
            err,
            CallError::Busy {
                limit: 1,
                queue: 4,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("retry"), "{err}");
    assert!(first.join().expect("first").is_ok());
    for waiter in queued {
        assert!(waiter.join().expect("waiter").is_ok(), "a queued call runs");
    }
    // The place and the queue are free again.
    assert!(call(&runtime, "sleep", json!({"ms": "1"})).is_ok());
}

/// A call waits for a place at most its own `limits.time`.
#[test]
fn a_queued_call_waits_no_longer_than_its_time_limit() {
    let runtime = Arc::new(support::runtime(
        "[components.hostile]\nlimits = { concurrency = 1, time = \"3s\" }\n",
        &[test_component("hostile")],
    ));
    // Three calls of 2 s at once: one runs, one runs after 2 s of waiting,
    // the last would start after 4 s, past its 3 s.
    let calls: Vec<_> = (0..3)
        .map(|i| {
            let runtime = runtime.clone();
            thread::sleep(Duration::from_millis(if i == 0 { 0 } else { 100 }));
            thread::spawn(move || call(&runtime, "sleep", json!({"ms": "2000"})))
        })
        .collect();
    let outcomes: Vec<_> = calls
        .into_iter()
        .map(|c| c.join().expect("thread"))
        .collect();
    assert!(outcomes[0].is_ok(), "{outcomes:?}");
    let busy = outcomes
        .iter()
        .filter(|o| matches!(o, Err(CallError::Busy { .. })))
        .count();
    assert_eq!(busy, 1, "{outcomes:?}");
    assert_eq!(outcomes.iter().filter(|o| o.is_ok()).count(), 2);
}

#[test]
fn fuel_limit_is_named() {
    let runtime = support::runtime(
        r#"
[components.hostile]
limits = { fuel = 1000000, time = "5s" }
"#,
        &[test_component("hostile")],
    );
    support::assert_fuel_runs_out(&runtime);
}

#[test]
fn a_crash_tells_the_client_its_cause_without_the_guests_backtrace() {
    let err = attack("bad_handle");
    let message = err.to_string();
    assert!(
        matches!(err, CallError::Run(RunError::Crashed(_))),
        "{err:?}"
    );
    assert!(message.contains("handle"), "{message}");
    assert!(
        !message.contains("backtrace") && !message.contains("hostile.wasm!"),
        "the backtrace reached the client: {message}"
    );
}

/// Counts what reaches the client.
#[derive(Default)]
struct Counting {
    logs: std::sync::Mutex<Vec<String>>,
    progress: std::sync::atomic::AtomicU64,
}

impl airlock::observe::CallObserver for Counting {
    fn log(&self, _: airlock::tool::Level, message: &str) {
        self.logs.lock().expect("logs").push(message.to_string());
    }
    fn progress(&self, _: f64, _: Option<f64>, _: Option<&str>) {
        self.progress
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

#[test]
fn a_flood_of_log_and_progress_messages_is_bounded_and_counted_once() {
    let observer = Arc::new(Counting::default());
    let out = hostile()
        .call(Caller::CommandLine, "flood", json!({}), observer.clone())
        .expect("the flood ends");
    assert_eq!(text(&out), "flooded");
    let logs = observer.logs.lock().expect("logs");
    let progress = observer.progress.load(std::sync::atomic::Ordering::Relaxed);
    // 64 KiB of log bytes in the policy: about 64 messages of 1 KiB, of
    // log and progress together, and one note about the rest.
    let sent = logs.len() as u64 - 1 + progress;
    assert!(sent <= 64, "{sent} messages went through");
    let note = logs.last().expect("the note");
    assert!(
        note.contains("dropped") && note.contains("limits.messages"),
        "{note}"
    );
    let dropped: u64 = note
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .expect("a count");
    assert!(dropped > 10_000, "{note}");
    assert_eq!(logs.iter().filter(|l| l.contains("dropped")).count(), 1);
}
