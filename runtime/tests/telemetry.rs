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

use crate::support::http::{Mcp, http, serve_with_env};
use crate::support::{component, test_component, workspace};

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

impl Receiver {
    /// The first data point of metric `name` whose attributes hold `done`
    /// (at most 20 s).
    fn point(&self, name: &str, done: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line["metric"] == name && done(&line) => return line,
                Ok(_) => {}
                Err(_) => panic!("no {name} point"),
            }
        }
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
    // `http://` in the pattern: a credential goes over plain http only
    // where the pattern says so (docs/policy.md, Credentials).
    let policy = format!(
        "[components.webfetch.network.\"http://127.0.0.1:{port}\"]\n\
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
    reached_upstream(outbound, port, &seen);
    let unknown = named(&spans, "rpc nothing_here");
    assert_eq!(unknown["attributes"]["error.type"], "-32601");
    assert_eq!(unknown["status"], 2, "ERROR");
    // No argument, answer or secret in any span.
    let all = serde_json::to_string(&spans).expect("json");
    for secret in ["argument-value-7", "hello", "sekrit-value-42", "/page"] {
        assert!(!all.contains(secret), "{secret} in {all}");
    }
}

/// Sends `body` in `mcp`'s session on a connection of its own, answers the
/// first `elicitation/create` it carries with `answer`, and returns the
/// question and the response to `body` (both read from the SSE stream).
fn call_answering(mcp: &Mcp, body: &Value, answer: Value) -> (Value, Value) {
    let asked = |m: &Value| m["method"] == "elicitation/create";
    mcp.call_answering(body, Duration::from_secs(30), asked, answer)
}

/// The outbound request's span names the credential (header, pattern,
/// variable), never its value; the upstream on `port` saw that span as its
/// parent, in the client's trace, and the value the host injected.
fn reached_upstream(outbound: &Value, port: u16, seen: &mpsc::Receiver<Seen>) {
    assert_eq!(
        outbound["attributes"]["airlock.credentials"],
        serde_json::json!([format!(
            "x-api-key for http://127.0.0.1:{port} (from TEL_SECRET)"
        )])
    );
    let (traceparent, key) = seen
        .recv_timeout(Duration::from_secs(5))
        .expect("a request");
    let expected = format!(
        "00-{TRACE}-{}-01",
        outbound["span_id"].as_str().unwrap_or_default()
    );
    assert_eq!(traceparent.as_deref(), Some(expected.as_str()));
    assert_eq!(
        key.as_deref(),
        Some("sekrit-value-42"),
        "the host injected it"
    );
}

fn child_of<'a>(spans: &'a [Value], name: &str, parent: &Value) -> &'a Value {
    spans
        .iter()
        .find(|s| s["span"] == name && s["parent_span_id"] == parent["span_id"])
        .unwrap_or_else(|| panic!("no span {name} under {parent}: {spans:#?}"))
}

#[test]
fn an_mcp_call_that_asks_and_fetches_a_read_and_a_refusal_are_traced() {
    let Some(receiver) = receiver() else {
        return;
    };
    let (port, seen) = upstream();
    let policy = format!(
        "[components.hostile]\nask = [\"elicit\"]\n\
         [components.hostile.network.\"http://127.0.0.1:{port}\"]\n\
         headers = {{ \"x-api-key\" = {{ from = \"TEL_SECRET\" }} }}\n"
    );
    let endpoint = format!("http://127.0.0.1:{}", receiver.port);
    let served = serve_with_env(
        &policy,
        &[test_component("hostile"), test_component("offers")],
        &["--otlp-endpoint", &endpoint],
        &[
            ("TEL_SECRET", "sekrit-value-42"),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
            ("OTEL_METRIC_EXPORT_INTERVAL", "200"),
        ],
    );
    let mut mcp = Mcp::connect(served.addr, serde_json::json!({"elicitation": {}}), &[]);
    let url = format!("http://127.0.0.1:{port}/page?q=argument-value-7");
    let call = serde_json::json!({"jsonrpc": "2.0", "id": "call-1", "method": "tools/call",
        "params": {"name": "ask_then_http", "arguments": {"url": url},
            "_meta": {"traceparent": format!("00-{TRACE}-{CLIENT_SPAN}-01")}}});
    let (question, response) = call_answering(
        &mcp,
        &call,
        serde_json::json!({"action": "accept", "content": {"note": "answer-text-9"}}),
    );
    assert_eq!(question["params"]["message"], "Fetch it?");
    assert_eq!(response["id"], "call-1");
    assert_eq!(
        response["result"]["content"][0]["text"], "200 hello",
        "{response}"
    );
    let read = mcp.request(
        "resources/read",
        serde_json::json!({"uri": "test://static-text"}),
    );
    assert!(read["result"]["contents"].is_array(), "{read}");
    // Destructive, and the policy does not allow it: refused before it runs.
    let refused = mcp.request(
        "tools/call",
        serde_json::json!({"name": "fs_destructive", "arguments": {}}),
    );
    assert!(refused.get("error").is_some() || refused["result"]["isError"] == true);

    let spans = receiver.spans_until(|spans| {
        [
            "tools/call ask_then_http",
            "elicitation/create",
            "GET",
            "resources/read",
            "tools/call fs_destructive",
        ]
        .iter()
        .all(|name| spans.iter().any(|s| s["span"] == *name))
    });
    let call = named(&spans, "tools/call ask_then_http");
    assert_eq!(call["kind"], 2, "SERVER");
    assert_eq!(call["trace_id"], TRACE, "the _meta traceparent is the root");
    assert_eq!(call["parent_span_id"], CLIENT_SPAN);
    let attributes = &call["attributes"];
    assert_eq!(attributes["mcp.method.name"], "tools/call");
    assert_eq!(attributes["gen_ai.tool.name"], "ask_then_http");
    assert_eq!(attributes["gen_ai.operation.name"], "execute_tool");
    assert_eq!(attributes["mcp.protocol.version"], "2025-11-25");
    assert_eq!(attributes["jsonrpc.request.id"], "call-1");
    let session = attributes["mcp.session.id"]
        .as_str()
        .expect("mcp.session.id");
    assert!(
        !session.is_empty() && session != mcp.session,
        "never the header: {session}"
    );
    // The question to the client: a CLIENT span in the call's run.
    let run = child_of(&spans, "airlock.run", call);
    let asked = child_of(&spans, "elicitation/create", run);
    assert_eq!(asked["kind"], 3, "CLIENT");
    assert_eq!(asked["trace_id"], TRACE);
    assert_eq!(asked["attributes"]["mcp.method.name"], "elicitation/create");
    assert_eq!(asked["attributes"]["airlock.ask.outcome"], "answered");
    // Its outbound request, with the credential named, never its value.
    let outbound = child_of(&spans, "GET", run);
    assert_eq!(outbound["kind"], 3, "CLIENT");
    reached_upstream(outbound, port, &seen);
    // The read: its URI.
    let read = named(&spans, "resources/read");
    assert_eq!(read["kind"], 2, "SERVER");
    assert_eq!(read["attributes"]["mcp.method.name"], "resources/read");
    assert_eq!(read["attributes"]["mcp.resource.uri"], "test://static-text");
    assert_eq!(read["attributes"]["mcp.session.id"], session);
    // The refusal: an event with its kind.
    let refused = named(&spans, "tools/call fs_destructive");
    let events = refused["events"].as_array().expect("events");
    assert!(
        events.iter().any(|e| e["name"] == "airlock.refusal"
            && e["attributes"]["airlock.refusal.kind"] == "refused"),
        "{refused}"
    );
    // No argument, answer or secret in any span.
    let all = serde_json::to_string(&spans).expect("json");
    for secret in [
        "argument-value-7",
        "answer-text-9",
        "sekrit-value-42",
        "/page",
        "Fetch it?",
    ] {
        assert!(!all.contains(secret), "{secret} in {all}");
    }
    // The session ends (DELETE): mcp.server.session.duration.
    let deleted = http(
        served.addr,
        "DELETE",
        "/mcp",
        &[
            ("Mcp-Session-Id", mcp.session.as_str()),
            ("MCP-Protocol-Version", "2025-11-25"),
        ],
        b"",
    );
    assert!(deleted.status < 300, "{}", deleted.body);
    let point = receiver.point("mcp.server.session.duration", |p| {
        p["attributes"]["mcp.protocol.version"] == "2025-11-25"
    });
    assert_eq!(point["unit"], "s");
    assert_eq!(point["count"], 1, "{point}");
    assert_eq!(point["attributes"]["network.transport"], "tcp");
}

/// `trace = false` on the host's table: its request carries no
/// `traceparent`, while the outbound span is still recorded.
#[test]
fn a_host_with_trace_false_sees_no_traceparent() {
    let Some(receiver) = receiver() else {
        return;
    };
    let (port, seen) = upstream();
    let policy =
        format!("[components.webfetch.network.\"http://127.0.0.1:{port}\"]\ntrace = false\n");
    let endpoint = format!("http://127.0.0.1:{}", receiver.port);
    let served = serve_with_env(
        &policy,
        &[component("webfetch")],
        &["--otlp-endpoint", &endpoint],
        &[("OTEL_BSP_SCHEDULE_DELAY", "100")],
    );
    let traceparent = format!("00-{TRACE}-{CLIENT_SPAN}-01");
    let url = format!("http://127.0.0.1:{port}/");
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
    let spans = receiver.spans_until(|spans| spans.iter().any(|s| s["span"] == "GET"));
    assert_eq!(named(&spans, "GET")["trace_id"], TRACE, "still traced");
    let (sent, _) = seen
        .recv_timeout(Duration::from_secs(5))
        .expect("a request");
    assert_eq!(sent, None, "no traceparent to a host with trace = false");
}
