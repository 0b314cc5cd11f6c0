//! OpenTelemetry export against a real OTLP/HTTP receiver: a small Python
//! server (`tests/telemetry/otlp_receiver.py`) that decodes what airlock
//! exports with the official protobuf definitions (`opentelemetry-proto`,
//! pinned in tests/clients/requirements.txt and installed by `cargo xtask
//! test` into target/clients/venv) and prints each span as a JSON line.
//! The spans' names, attributes and parent links are checked, and that no
//! argument, answer or secret is in any attribute.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::http::{http, serve_with_env};
use crate::support::{component, workspace};

/// The client's trace and span (the root of the trace).
const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";

struct Receiver {
    child: Child,
    port: u16,
    lines: mpsc::Receiver<Value>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The receiver, or `None` (the test says why and passes) when the pinned
/// venv is not installed (`cargo xtask test` installs it).
fn receiver() -> Option<Receiver> {
    let python = workspace().join("target/clients/venv/bin/python");
    if !python.is_file() {
        eprintln!(
            "skipped: {} is missing (cargo xtask test installs it)",
            python.display()
        );
        return None;
    }
    let mut child = Command::new(python)
        .arg(workspace().join("tests/telemetry/otlp_receiver.py"))
        .stdout(Stdio::piped())
        .spawn()
        .expect("the receiver starts");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut first = String::new();
    out.read_line(&mut first).expect("its port");
    let port = first
        .trim()
        .strip_prefix("port ")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("the receiver said {first:?}"));
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in out.lines().map_while(Result::ok) {
            let value: Value = serde_json::from_str(&line).expect("a JSON line");
            assert!(value.get("undecodable").is_none(), "{value}");
            if tx.send(value).is_err() {
                return;
            }
        }
    });
    Some(Receiver { child, port, lines })
}

impl Receiver {
    /// Spans received until `done` holds of them (at most 20 s).
    fn spans_until(&self, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut spans = Vec::new();
        while !done(&spans) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.get("span").is_some() => spans.push(line),
                Ok(_) => {}
                Err(_) => panic!("spans so far: {spans:#?}"),
            }
        }
        spans
    }
}

/// The `traceparent` and `x-api-key` headers a request came with.
type Seen = (Option<String>, Option<String>);

/// A loopback server answering `hello` that hands back each request's
/// `traceparent` and `x-api-key` headers.
fn upstream() -> (u16, mpsc::Receiver<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().map_while(Result::ok) {
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).is_ok_and(|n| n == 1) {
                head.push(byte[0]);
            }
            let head = String::from_utf8_lossy(&head).to_lowercase();
            let header = |name: &str| {
                head.lines()
                    .find_map(|l| l.strip_prefix(&format!("{name}: ")).map(str::to_string))
            };
            let _ = tx.send((header("traceparent"), header("x-api-key")));
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello");
        }
    });
    (port, rx)
}

fn named<'a>(spans: &'a [Value], name: &str) -> &'a Value {
    spans
        .iter()
        .find(|s| s["span"] == name)
        .unwrap_or_else(|| panic!("no span {name}: {spans:#?}"))
}

#[test]
fn a_call_s_spans_reach_a_collector_under_the_client_s_trace() {
    let Some(receiver) = receiver() else {
        return;
    };
    let (port, seen) = upstream();
    let policy = format!(
        "[components.webfetch.network.\"127.0.0.1:{port}\"]\n\
         headers = {{ \"x-api-key\" = {{ from = \"TEL_SECRET\" }} }}\n"
    );
    let endpoint = format!("http://127.0.0.1:{}", receiver.port);
    let served = serve_with_env(
        &policy,
        &[component("webfetch")],
        &["--otlp-endpoint", &endpoint],
        &[
            ("TEL_SECRET", "sekrit-value-42"),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
        ],
    );
    let traceparent = format!("00-{TRACE}-{CLIENT_SPAN}-01");
    let url = format!("http://127.0.0.1:{port}/page?q=argument-value-7");
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "fetch_url", "params": {"url": url}});
    let headers = [
        ("content-type", "application/json"),
        ("traceparent", traceparent.as_str()),
    ];
    let reply = http(
        served.addr,
        "POST",
        "/rpc",
        &headers,
        body.to_string().as_bytes(),
    );
    assert_eq!(reply.json()["result"]["body"], "hello", "{}", reply.body);
    // A call the policy refuses (no such tool is served: refused before it ran).
    let refused =
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "nothing_here", "params": {}});
    http(
        served.addr,
        "POST",
        "/rpc",
        &headers,
        refused.to_string().as_bytes(),
    );

    let spans = receiver.spans_until(|spans| {
        ["rpc fetch_url", "GET", "airlock.run", "rpc nothing_here"]
            .iter()
            .all(|name| spans.iter().any(|s| s["span"] == *name))
    });
    let call = named(&spans, "rpc fetch_url");
    assert_eq!(call["trace_id"], TRACE);
    assert_eq!(
        call["parent_span_id"], CLIENT_SPAN,
        "the client's span is the parent"
    );
    assert_eq!(call["kind"], 2, "SERVER");
    assert_eq!(call["attributes"]["gen_ai.tool.name"], "fetch_url");
    assert_eq!(call["attributes"]["gen_ai.operation.name"], "execute_tool");
    let run = named(&spans, "airlock.run");
    assert_eq!(run["parent_span_id"], call["span_id"]);
    let outbound = named(&spans, "GET");
    assert_eq!(outbound["kind"], 3, "CLIENT");
    assert_eq!(outbound["parent_span_id"], run["span_id"]);
    assert_eq!(outbound["attributes"]["server.port"], i64::from(port));
    assert_eq!(outbound["attributes"]["http.response.status_code"], 200);
    // The upstream saw the outbound span as its parent, in the same trace.
    let (sent, _) = seen
        .recv_timeout(Duration::from_secs(5))
        .expect("a request");
    let expected = format!(
        "00-{TRACE}-{}-01",
        outbound["span_id"].as_str().unwrap_or_default()
    );
    assert_eq!(sent.as_deref(), Some(expected.as_str()));
    let unknown = named(&spans, "rpc nothing_here");
    assert_eq!(unknown["attributes"]["error.type"], "-32601");
    assert_eq!(unknown["status"], 2, "ERROR");
    // No argument, answer or secret in any span.
    let all = serde_json::to_string(&spans).expect("json");
    for secret in ["argument-value-7", "hello", "sekrit-value-42", "/page"] {
        assert!(!all.contains(secret), "{secret} in {all}");
    }
}
