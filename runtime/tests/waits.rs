//! What blocks inside the host ends at the call's deadline, and no guest
//! action panics the host: opening a FIFO whose other end nobody opens,
//! and every `wasi:io` stream and pollable operation in its non-blocking
//! and blocking form, on streams that are ready and not ready — HTTP
//! bodies (incoming and outgoing) against a server that controls when it
//! sends and whether it reads, and file streams while their background
//! read or write runs.
//!
//! What blocks in wasmtime-wasi's filesystem: `open` of a FIFO (until its
//! other end is opened). Reads and writes, by descriptor or stream, are
//! positional (`pread`/`pwrite`): on a FIFO they fail at once with
//! `ESPIPE`; on a regular file a stream is not ready only while its
//! background operation runs.

use crate::support;

use std::fs::{File, OpenOptions};
use std::path::Path;
use std::sync::OnceLock;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use airlock::Runtime;
use airlock::call::CallError;
use airlock::sandbox::RunError;
use serde_json::{Value, json};
use support::servers::{Answer, Server};
use support::{call, test_component, text};

/// The calls' wall time: every blocking case must end right after it.
const TIME: Duration = Duration::from_secs(1);

struct Fixture {
    runtime: Runtime,
    dir: tempfile::TempDir,
    /// The body server ([`body_server`]) the hostile component may reach.
    server: Server,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("hello.txt"), "hello").expect("hello.txt");
        let server = body_server();
        let port = server.port();
        let host = dir.path().to_str().expect("utf-8 tempdir");
        let policy = format!(
            r#"
[components.hostile]
destructive = "allow"
network = ["127.0.0.1:{port}"]
folders = [{{ host = "{host}", guest = "/data", mode = "read-write" }}]
limits = {{ time = "{}ms", concurrency = 64 }}
"#,
            TIME.as_millis()
        );
        let runtime = support::runtime(&policy, &[test_component("hostile")]);
        Fixture {
            runtime,
            dir,
            server,
        }
    })
}

/// A server whose path says when the response body comes: `/now` sends
/// `hello` with the head, `/later` 300 ms after it, `/never` sends the head
/// only and holds the connection. `/sink` reads whatever is sent to it.
fn body_server() -> Server {
    Server::http(|request| {
        let first = &request.line;
        if first.contains("/sink") {
            Answer::Drain
        } else if first.contains("/now") {
            Answer::Paced {
                length: 5,
                parts: vec![(Duration::ZERO, b"hello".to_vec())],
            }
        } else if first.contains("/later") {
            Answer::Paced {
                length: 5,
                parts: vec![(Duration::from_millis(300), b"hello".to_vec())],
            }
        } else {
            Answer::head_only(5, Duration::from_secs(30))
        }
    })
}

/// Makes a FIFO at `path` (with the system's `mkfifo`).
fn mkfifo(path: &Path) {
    let made = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("run mkfifo");
    assert!(made.success(), "mkfifo {}", path.display());
}

/// Opens a FIFO at both ends at once (never blocks): whoever holds it is
/// a reader that never reads and a writer that never writes.
fn hold_fifo(path: &Path) -> File {
    OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .expect("open the FIFO at both ends")
}

/// Runs `tool` with `args`, failing (instead of hanging) when the call is
/// still running 10 s after its deadline; returns how long it took.
fn bounded_call(tool: &str, args: Value) -> (Result<String, CallError>, Duration) {
    let (tx, rx) = mpsc::channel();
    let tool = tool.to_string();
    // Not a scoped thread: a hanging call must not hold the test.
    thread::spawn(move || {
        let started = Instant::now();
        let result = call(&fixture().runtime, &tool, args).map(|out| text(&out));
        let _ = tx.send((result, started.elapsed()));
    });
    rx.recv_timeout(TIME + Duration::from_secs(10))
        .unwrap_or_else(|_| panic!("the call hangs past its deadline"))
}

fn assert_timed_out(what: &str, (result, took): (Result<String, CallError>, Duration)) {
    match result {
        Err(CallError::Run(RunError::TimedOut(_))) => {}
        other => panic!("{what}: expected the call to time out, got {other:?}"),
    }
    assert!(
        took < TIME + Duration::from_secs(3),
        "{what}: took {took:?}"
    );
}

#[test]
fn opening_a_fifo_nobody_writes_ends_at_the_deadline() {
    let fifo = fixture().dir.path().join("open.fifo");
    mkfifo(&fifo);
    let args = json!({"op": "open", "path": "/data/open.fifo"});
    assert_timed_out("open", bounded_call("fs_read_only", args));
    // The pool thread still in `open` gets its writer and finishes.
    drop(hold_fifo(&fifo));
}

#[test]
fn opening_a_fifo_for_writing_nobody_reads_ends_at_the_deadline() {
    let fifo = fixture().dir.path().join("open-write.fifo");
    mkfifo(&fifo);
    let args = json!({"op": "open_write", "path": "/data/open-write.fifo"});
    assert_timed_out("open for writing", bounded_call("fs_destructive", args));
    // The pool thread still in `open` gets its reader and finishes.
    drop(hold_fifo(&fifo));
}

/// What one stream operation must end with.
#[derive(Debug, Clone, Copy)]
enum Expect {
    /// The tool's text (`read 5`).
    Text(&'static str),
    /// The text starts with this (a size the runtime does not promise).
    Starts(&'static str),
    /// The call waits until its deadline and times out.
    TimedOut,
    /// The guest is stopped by a trap naming its mistake (a write that
    /// `check-write` did not permit): a crash of the call, not of the host.
    Trap(&'static str),
}

use Expect::{Starts, Text, TimedOut, Trap};

/// One case: the `io` tool's arguments (besides `op`) and, per operation,
/// what it must end with.
struct Case {
    name: &'static str,
    args: Value,
    ops: Vec<(&'static str, Expect)>,
}

/// The operations of an input stream that is ready, or not ready and
/// never becoming so.
fn input_ops(ready: bool) -> Vec<(&'static str, Expect)> {
    if ready {
        return vec![
            ("read", Text("read 5")),
            ("blocking-read", Text("read 5")),
            ("skip", Text("skip 5")),
            ("blocking-skip", Text("skip 5")),
            ("ready", Text("ready true")),
            ("block", Text("block ok")),
            ("poll", Text("poll [0]")),
            ("splice", Text("splice 5")),
            ("blocking-splice", Text("splice 5")),
            ("drop", Text("drop")),
        ];
    }
    vec![
        ("read", Text("read 0")),
        ("blocking-read", TimedOut),
        ("skip", Text("skip 0")),
        ("blocking-skip", TimedOut),
        ("ready", Text("ready false")),
        ("block", TimedOut),
        ("poll", TimedOut),
        ("splice", Text("splice 0")),
        ("blocking-splice", TimedOut),
        ("drop", Text("drop")),
    ]
}

/// The operations of an output stream with someone reading it (ready), or
/// filled with nobody reading (not ready).
fn output_ops(ready: bool) -> Vec<(&'static str, Expect)> {
    if ready {
        return vec![
            ("check-write", Starts("check-write ")),
            ("write", Text("write ok")),
            ("blocking-write-and-flush", Text("write ok")),
            ("write-zeroes", Text("write ok")),
            ("blocking-write-zeroes-and-flush", Text("write ok")),
            ("flush", Text("flush ok")),
            ("blocking-flush", Text("flush ok")),
            ("ready", Text("ready true")),
            ("block", Text("block ok")),
            ("poll", Text("poll [0]")),
            ("splice", Text("splice 5")),
            ("blocking-splice", Text("splice 5")),
            ("drop", Text("drop")),
        ];
    }
    vec![
        ("check-write", Text("check-write 0")),
        ("write", Trap("write")),
        ("blocking-write-and-flush", TimedOut),
        ("write-zeroes", Trap("write")),
        ("blocking-write-zeroes-and-flush", TimedOut),
        ("flush", Text("flush ok")),
        ("blocking-flush", TimedOut),
        ("ready", Text("ready false")),
        ("block", TimedOut),
        ("poll", TimedOut),
        ("splice", Text("splice 0")),
        ("blocking-splice", TimedOut),
        ("drop", Text("drop")),
    ]
}

fn url(path: &str) -> String {
    format!("http://127.0.0.1:{}/{path}", fixture().server.port())
}

/// Runs every case's every operation (a call each, 12 at a time) and
/// returns what did not end as expected.
fn run(cases: &[Case]) -> Vec<String> {
    let mut calls = Vec::new();
    for case in cases {
        for (n, (op, expect)) in case.ops.iter().enumerate() {
            let mut args = case.args.clone();
            args["op"] = json!(op);
            // Output files are made by the call: one per operation.
            if let Some(path) = args["path"].as_str().filter(|p| p.ends_with(".out")) {
                args["path"] = json!(format!("{path}.{n}"));
            }
            calls.push((format!("{} {op}", case.name), args, *expect));
        }
    }
    let mut wrong = Vec::new();
    for batch in calls.chunks(12) {
        let outcomes: Vec<_> = thread::scope(|scope| {
            let running: Vec<_> = batch
                .iter()
                .map(|(_, args, _)| scope.spawn(|| bounded_call("io", args.clone())))
                .collect();
            running
                .into_iter()
                .map(|call| call.join().expect("the call's thread"))
                .collect()
        });
        for ((what, _, expect), (result, took)) in batch.iter().zip(outcomes) {
            let ok = match (expect, &result) {
                (Text(want), Ok(got)) => got == want,
                (Starts(want), Ok(got)) => {
                    got.starts_with(want) && got != "check-write 0" && !got.contains("failed")
                }
                (TimedOut, Err(CallError::Run(RunError::TimedOut(_)))) => {
                    took < TIME + Duration::from_secs(3)
                }
                (Trap(word), Err(CallError::Run(RunError::Crashed(why)))) => why.contains(word),
                _ => false,
            };
            if !ok {
                wrong.push(format!(
                    "{what}: expected {expect:?}, got {result:?} in {took:?}"
                ));
            }
        }
    }
    wrong
}

#[test]
fn every_stream_operation_on_http_bodies_ends_cleanly_ready_or_not() {
    let later_blocking: Vec<_> = input_ops(true)
        .into_iter()
        .filter(|(op, _)| op.starts_with("blocking") || ["block", "poll"].contains(op))
        .collect();
    let cases = [
        Case {
            name: "response body, ready",
            args: json!({"kind": "http-body", "url": url("now"), "wait": true}),
            ops: input_ops(true),
        },
        Case {
            name: "response body, never sent",
            args: json!({"kind": "http-body", "url": url("never")}),
            ops: input_ops(false),
        },
        Case {
            // Not ready when asked; the blocking forms wait for it.
            name: "response body, sent later",
            args: json!({"kind": "http-body", "url": url("later")}),
            ops: later_blocking,
        },
        Case {
            name: "request body, read by the server",
            args: json!({"kind": "http-request", "url": url("sink"), "src": "/data/hello.txt"}),
            ops: output_ops(true),
        },
        Case {
            name: "request body, full and never read",
            args: json!({"kind": "http-request", "fill": true, "src": "/data/hello.txt"}),
            ops: output_ops(false),
        },
    ];
    let wrong = run(&cases);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_stream_operation_on_files_ends_cleanly_ready_or_not() {
    let cases = [
        Case {
            name: "file stream, ready",
            args: json!({"kind": "file-read", "path": "/data/hello.txt", "wait": true}),
            ops: input_ops(true),
        },
        Case {
            // Nothing read yet: a non-blocking read only starts one.
            name: "file stream, not read yet",
            args: json!({"kind": "file-read", "path": "/data/hello.txt"}),
            ops: vec![
                ("read", Text("read 0")),
                ("blocking-read", Text("read 5")),
                ("skip", Text("skip 0")),
                ("blocking-skip", Text("skip 5")),
                // Ready as soon as the background read is done.
                ("ready", Starts("ready ")),
                ("block", Text("block ok")),
                ("poll", Text("poll [0]")),
                ("splice", Text("splice 0")),
                ("blocking-splice", Text("splice 5")),
                // Waits for the read it started.
                ("drop", Text("drop")),
            ],
        },
        Case {
            name: "file output stream, ready",
            args: json!({"kind": "file-write", "path": "/data/new.out", "src": "/data/hello.txt"}),
            ops: output_ops(true),
        },
        Case {
            // A write runs: the stream permits nothing until it is seen done.
            name: "file output stream, writing",
            args: json!({"kind": "file-write", "path": "/data/busy.out", "busy": true,
                         "src": "/data/hello.txt"}),
            ops: vec![
                ("check-write", Text("check-write 0")),
                ("write", Trap("check_write")),
                ("blocking-write-and-flush", Text("write ok")),
                ("write-zeroes", Trap("check_write")),
                ("blocking-write-zeroes-and-flush", Text("write ok")),
                ("flush", Text("flush ok")),
                ("blocking-flush", Text("flush ok")),
                ("ready", Starts("ready ")),
                ("block", Text("block ok")),
                ("poll", Text("poll [0]")),
                ("splice", Text("splice 0")),
                ("blocking-splice", Text("splice 5")),
                // Waits for the write that runs.
                ("drop", Text("drop")),
            ],
        },
    ];
    let wrong = run(&cases);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // What the blocking writes wrote arrived in their files.
    let dir = fixture().dir.path();
    let written = std::fs::read(dir.join("new.out.2")).expect("new.out.2");
    assert_eq!(written, b"hello", "blocking-write-and-flush");
    let zeroes = std::fs::read(dir.join("new.out.4")).expect("new.out.4");
    assert_eq!(zeroes, [0; 5], "blocking-write-zeroes-and-flush");
    let after_busy = std::fs::read(dir.join("busy.out.2")).expect("busy.out.2");
    assert_eq!(after_busy, b"hellohello", "a write after the running one");
}
