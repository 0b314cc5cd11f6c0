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
use crate::support::{airlock_command, component, test_component, wait_for_exit, workspace};

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

/// A `/mcp` POST whose answer streams finishes in a task of its own: the
/// HTTP request's `traceparent` header stays the parent of what it runs
/// after that — here the second request of a batch, answered after the
/// first one's question switched the answer to SSE.
#[test]
fn the_traceparent_header_reaches_what_a_streamed_answer_runs_later() {
    let Some(receiver) = receiver() else {
        return;
    };
    let (port, _seen) = upstream();
    let policy = format!(
        "[components.hostile]\nask = [\"elicit\"]\n\
         [components.hostile.network.\"http://127.0.0.1:{port}\"]\n"
    );
    let endpoint = format!("http://127.0.0.1:{}", receiver.port);
    let served = serve_with_env(
        &policy,
        &[test_component("hostile"), test_component("offers")],
        &["--otlp-endpoint", &endpoint],
        &[("OTEL_BSP_SCHEDULE_DELAY", "100")],
    );
    let mut mcp = Mcp::connect(served.addr, serde_json::json!({"elicitation": {}}), &[]);
    mcp.extra
        .push(("traceparent".into(), format!("00-{TRACE}-{CLIENT_SPAN}-01")));
    let url = format!("http://127.0.0.1:{port}/");
    let batch = serde_json::json!([
        {"jsonrpc": "2.0", "id": "asks", "method": "tools/call",
         "params": {"name": "ask_then_http", "arguments": {"url": url}}},
        {"jsonrpc": "2.0", "id": "reads", "method": "resources/read",
         "params": {"uri": "test://static-text"}},
    ]);
    let (_, responses) = call_answering(
        &mcp,
        &batch,
        serde_json::json!({"action": "accept", "content": {"note": "n"}}),
    );
    let responses = responses.as_array().expect("the batch's responses");
    assert_eq!(responses.len(), 2, "{responses:?}");
    let spans = receiver.spans_until(|spans| {
        ["tools/call ask_then_http", "resources/read"]
            .iter()
            .all(|name| spans.iter().any(|s| s["span"] == *name))
    });
    for name in ["tools/call ask_then_http", "resources/read"] {
        let span = named(&spans, name);
        assert_eq!(span["trace_id"], TRACE, "{name}: the header's trace");
        assert_eq!(span["parent_span_id"], CLIENT_SPAN, "{name}");
    }
}

/// Over stdio the session ends with stdin: its
/// `mcp.server.session.duration` point (transport `pipe`) and its spans
/// reach the collector through the flush at exit — the periodic export's
/// interval and the spans' batching delay are set far beyond the test.
#[test]
fn a_stdio_session_s_duration_and_spans_are_flushed_at_exit() {
    let Some(receiver) = receiver() else {
        return;
    };
    let endpoint = format!("http://127.0.0.1:{}", receiver.port);
    let catalog = component("catalog").display().to_string();
    let mut child = airlock_command(&[
        "serve",
        "--stdio",
        "--load-wait",
        "600",
        "--otlp-endpoint",
        &endpoint,
        &catalog,
    ])
    .env("OTEL_METRIC_EXPORT_INTERVAL", "600000")
    .env("OTEL_BSP_SCHEDULE_DELAY", "600000")
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    .spawn()
    .expect("start airlock");
    let input = [
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
    ]
    .join("\n");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(input.as_bytes()).expect("write");
    drop(stdin);
    let mut out = String::new();
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut out)
        .expect("read");
    assert!(out.contains(r#""id":1"#), "{out}");
    assert!(wait_for_exit(&mut child).success());
    let spans = receiver.spans_until(|spans| spans.iter().any(|s| s["span"] == "tools/list"));
    assert_eq!(
        named(&spans, "tools/list")["attributes"]["network.transport"],
        "pipe"
    );
    let point = receiver.point("mcp.server.session.duration", |p| {
        p["attributes"]["network.transport"] == "pipe"
    });
    assert_eq!(point["count"], 1, "{point}");
    assert_eq!(point["attributes"]["mcp.protocol.version"], "2025-11-25");
}

/// A component from a registry, signed: its resolution at load is one
/// trace — `airlock.source.resolve` (registry, repository, tag), its
/// manifest and blob fetches (CLIENT, each with its GET), the signature's
/// own fetches and `airlock.signature.verify` (the key's label, how many
/// signatures) — and a signature by another key marks the check and the
/// resolution failed.
#[test]
fn a_registry_fetch_and_its_signature_check_are_traced() {
    use crate::support::registry::{Registry, keygen, sign};
    let Some(receiver) = receiver() else {
        return;
    };
    let registry = Registry::start();
    let work = tempfile::tempdir().expect("tempdir");
    let store = work.path().join("store");
    let publish = |repo: &str| {
        // Published from a store of its own: the server's fetches it all.
        let reference = format!("{}:1", registry.reference(repo));
        let out = airlock_command(&["publish", &component("catalog").display().to_string()])
            .arg(&reference)
            .env("AIRLOCK_STORE_DIR", work.path().join("published"))
            .env("DOCKER_CONFIG", work.path().join("docker"))
            .output()
            .expect("publish");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let out = String::from_utf8_lossy(&out.stdout).into_owned();
        let digest = out
            .lines()
            .find_map(|l| l.trim_start().strip_prefix("digest"))
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("no digest in {out}"))
            .to_string();
        (reference, digest)
    };
    let (good, good_digest) = publish("acme/signed");
    let (bad, bad_digest) = publish("acme/stranger");
    let (key, public) = keygen(&work.path().join("keys"));
    let (other, _) = keygen(&work.path().join("other"));
    sign(&registry, "acme/signed", &good_digest, &key, None);
    sign(&registry, "acme/stranger", &bad_digest, &other, None);
    let policy = format!(
        "[components.catalog]\nsource = \"{good}\"\nverify = {{ key = \"{}\" }}\n\
         [components.stranger]\nsource = \"{bad}\"\nverify = {{ key = \"{}\" }}\n",
        public.display(),
        public.display()
    );
    let endpoint = format!("http://127.0.0.1:{}", receiver.port);
    let served = serve_with_env(
        &policy,
        &[],
        &["--otlp-endpoint", &endpoint],
        &[
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
            ("AIRLOCK_STORE_DIR", &store.display().to_string()),
        ],
    );
    let spans = receiver.spans_until(|spans| {
        spans
            .iter()
            .filter(|s| s["span"] == "airlock.source.resolve")
            .count()
            == 2
            && spans
                .iter()
                .filter(|s| s["span"] == "airlock.signature.verify")
                .count()
                == 2
    });
    drop(served);
    let resolved = |repo: &str| {
        spans
            .iter()
            .find(|s| {
                s["span"] == "airlock.source.resolve"
                    && s["attributes"]["airlock.registry.repository"] == repo
            })
            .unwrap_or_else(|| panic!("no resolution of {repo}: {spans:#?}"))
    };
    let signed = resolved("acme/signed");
    assert_eq!(signed["parent_span_id"], "", "a root: the server loads it");
    assert_eq!(signed["attributes"]["server.address"], registry.addr);
    assert_eq!(signed["attributes"]["airlock.registry.reference"], "1");
    assert_eq!(signed["status"], 0, "UNSET: it resolved");
    let under = |name: &str| -> Vec<&Value> {
        spans
            .iter()
            .filter(|s| s["span"] == name && s["parent_span_id"] == signed["span_id"])
            .collect()
    };
    // The tag and the signature's tag; the signature's payload and the
    // component.
    assert_eq!(under("airlock.registry.manifest").len(), 2, "{spans:#?}");
    assert_eq!(under("airlock.registry.blob").len(), 2, "{spans:#?}");
    for fetch in under("airlock.registry.manifest")
        .into_iter()
        .chain(under("airlock.registry.blob"))
    {
        assert_eq!(fetch["kind"], 3, "CLIENT");
        assert_eq!(fetch["trace_id"], signed["trace_id"]);
        assert_eq!(fetch["attributes"]["server.address"], registry.addr);
        let get = child_of(&spans, "GET", fetch);
        assert_eq!(get["attributes"]["http.response.status_code"], 200);
    }
    let verified = child_of(&spans, "airlock.signature.verify", signed);
    assert_eq!(verified["kind"], 1, "INTERNAL");
    assert_eq!(verified["attributes"]["airlock.signature.count"], 1);
    assert!(
        verified["attributes"]["airlock.signature.key"]
            .as_str()
            .is_some_and(|label| label.contains("cosign.pub")),
        "{verified}"
    );
    assert_eq!(verified["status"], 0);
    // Signed by another key: refused, and said so on both spans.
    let stranger = resolved("acme/stranger");
    let refused = child_of(&spans, "airlock.signature.verify", stranger);
    assert_eq!(refused["attributes"]["error.type"], "refused");
    assert_eq!(refused["status"], 2, "ERROR");
    assert_eq!(stranger["status"], 2, "ERROR");
}

/// The issuer's key set, fetched at the start (so the first token does
/// not wait): `airlock.oauth.keys` (CLIENT, the issuer named), a root since
/// the server does it on its own, with its GETs (the metadata, the JWKS)
/// as children; a request with a token from that issuer is traced under
/// its `traceparent` header, and no token is in any span.
#[test]
fn an_oauth_key_set_fetch_is_traced() {
    use crate::support::oauth::{Issuer, Key};
    let Some(receiver) = receiver() else {
        return;
    };
    let key = Key::new("k1");
    let issuer = Issuer::new(vec![key.jwk.clone()]);
    let resource = "https://airlock.test/mcp";
    let policy = format!(
        "[oauth]\nresource = \"{resource}\"\nissuers = [\"{}\"]\nplain-http = true\n\
         algorithms = [\"ES256\"]\n[[oauth.scopes]]\nscope = \"everything\"\n",
        issuer.url
    );
    let endpoint = format!("http://127.0.0.1:{}", receiver.port);
    let served = serve_with_env(
        &policy,
        &[component("catalog")],
        &["--otlp-endpoint", &endpoint],
        &[("OTEL_BSP_SCHEDULE_DELAY", "100")],
    );
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    let token = key.sign(&serde_json::json!({"iss": issuer.url, "sub": "alice",
        "aud": resource, "exp": now + 300, "iat": now, "scope": "everything"}));
    let bearer = format!("Bearer {token}");
    let traceparent = format!("00-{TRACE}-{CLIENT_SPAN}-01");
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "lookup_price",
        "params": {"sku": "SKU-1001"}});
    let reply = http(
        served.addr,
        "POST",
        "/rpc",
        &[
            ("content-type", "application/json"),
            ("authorization", bearer.as_str()),
            ("traceparent", traceparent.as_str()),
        ],
        body.to_string().as_bytes(),
    );
    assert_eq!(reply.json()["result"], 12.5, "{}", reply.body);
    let spans = receiver.spans_until(|spans| {
        spans.iter().any(|s| s["span"] == "airlock.oauth.keys")
            && spans.iter().any(|s| s["span"] == "rpc lookup_price")
    });
    let keys = named(&spans, "airlock.oauth.keys");
    assert_eq!(keys["kind"], 3, "CLIENT");
    assert_eq!(keys["parent_span_id"], "", "fetched at the start: a root");
    assert_eq!(keys["attributes"]["airlock.oauth.issuer"], issuer.url);
    assert_eq!(keys["status"], 0, "UNSET: fetched");
    let call = named(&spans, "rpc lookup_price");
    assert_eq!(call["trace_id"], TRACE, "the request: under its header");
    assert_eq!(call["parent_span_id"], CLIENT_SPAN);
    let port = i64::from(issuer.server.port());
    let gets: Vec<&Value> = spans
        .iter()
        .filter(|s| s["span"] == "GET" && s["parent_span_id"] == keys["span_id"])
        .collect();
    assert_eq!(gets.len(), 2, "the metadata and the JWKS: {spans:#?}");
    for get in gets {
        assert_eq!(get["attributes"]["server.port"], port);
        assert_eq!(get["attributes"]["http.response.status_code"], 200);
    }
    let all = serde_json::to_string(&spans).expect("json");
    assert!(!all.contains(&token), "no token in any span");
}

/// Debian's `redis-server` on a free loopback port, without persistence:
/// the state two replicas share. `None` (the test says why and passes)
/// when it is not installed (`cargo xtask test` installs it).
struct Redis(Child, u16);

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn redis() -> Option<Redis> {
    let binary = std::path::Path::new("/usr/bin/redis-server");
    if !binary.is_file() {
        eprintln!("skipped: {} is missing", binary.display());
        return None;
    }
    let port = crate::support::http::free_port();
    let child = Command::new(binary)
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args(["--save", "", "--appendonly", "no"])
        .stdout(Stdio::null())
        .spawn()
        .expect("redis-server starts");
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "redis-server did not answer");
        std::thread::sleep(Duration::from_millis(50));
    }
    Some(Redis(child, port))
}

/// Two replicas sharing state, both exporting: a 2026-07-28 call's retry
/// on the other replica continues the trace of the round that asked (its
/// parent is that round's span, carried in the signed `requestState`;
/// each round's question a CLIENT span of its run, `next-round` then
/// `answered`),
/// and a task's `tasks/get` on the other replica continues the trace of
/// the call that made it (kept in the task's shared record) — though the
/// client sent no trace context at all; one that names its own parent
/// gets the task's span as a link.
#[test]
fn rounds_and_tasks_continue_their_trace_on_another_replica() {
    use crate::support::http::{answer, body, modern};
    let Some(receiver) = receiver() else {
        return;
    };
    let Some(redis) = redis() else {
        return;
    };
    let (port, _seen) = upstream();
    let policy = format!(
        "[components.hostile]\nask = [\"elicit\"]\n\
         [components.hostile.network.\"http://127.0.0.1:{port}\"]\n"
    );
    let endpoint = format!("http://127.0.0.1:{}", receiver.port);
    let state = format!("redis://127.0.0.1:{}/0", redis.1);
    let replica = |name: &str| {
        serve_with_env(
            &policy,
            &[test_component("hostile")],
            &["--otlp-endpoint", &endpoint, "--state", &state],
            &[
                ("OTEL_BSP_SCHEDULE_DELAY", "100"),
                ("OTEL_SERVICE_NAME", name),
            ],
        )
    };
    let (a, b) = (replica("replica-a"), replica("replica-b"));
    // A round on one replica, its retry on the other.
    let caps = serde_json::json!({"elicitation": {"form": {}}});
    let url = format!("http://127.0.0.1:{port}/");
    let call = |id: u64, mut params: Value| {
        params["name"] = "ask_then_http".into();
        params["arguments"] = serde_json::json!({"url": url});
        body(id, "tools/call", params, caps.clone())
    };
    let first = modern(
        a.addr,
        &call(1, serde_json::json!({})),
        Some("ask_then_http"),
        &[],
    );
    let asked = first.json()["result"].clone();
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let key = asked["inputRequests"]
        .as_object()
        .and_then(|requests| requests.keys().next().cloned())
        .expect("a request");
    let retry = serde_json::json!({"requestState": asked["requestState"],
        "inputResponses": {key: {"action": "accept", "content": {"note": "n"}}}});
    let done = answer(&modern(b.addr, &call(2, retry), Some("ask_then_http"), &[]));
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    // A task made on one replica, polled on the other.
    let caps = serde_json::json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let sleep = body(
        3,
        "tools/call",
        serde_json::json!({"name": "sleep_task", "arguments": {"ms": "100"}}),
        caps.clone(),
    );
    let created = modern(a.addr, &sleep, Some("sleep_task"), &[]).json()["result"].clone();
    let id = created["taskId"].as_str().expect("taskId").to_string();
    let get = body(
        4,
        "tasks/get",
        serde_json::json!({"taskId": id}),
        caps.clone(),
    );
    let polled = modern(b.addr, &get, Some(&id), &[]);
    assert_eq!(polled.status, 200, "{}", polled.body);
    // A client that names its own parent: the task's span is a link.
    let mut named_get = body(5, "tasks/get", serde_json::json!({"taskId": id}), caps);
    named_get["params"]["_meta"]["traceparent"] = format!("00-{TRACE}-{CLIENT_SPAN}-01").into();
    let polled = modern(b.addr, &named_get, Some(&id), &[]);
    assert_eq!(polled.status, 200, "{}", polled.body);

    let spans = receiver.spans_until(|spans| {
        spans
            .iter()
            .filter(|s| s["span"] == "tools/call ask_then_http")
            .count()
            == 2
            && spans
                .iter()
                .filter(|s| s["span"] == "elicitation/create")
                .count()
                == 2
            && spans.iter().any(|s| s["span"] == "tools/call sleep_task")
            && spans.iter().filter(|s| s["span"] == "tasks/get").count() == 2
    });
    let round = |id: &str| {
        spans
            .iter()
            .find(|s| {
                s["span"] == "tools/call ask_then_http"
                    && s["attributes"]["jsonrpc.request.id"] == id
            })
            .unwrap_or_else(|| panic!("no round {id}: {spans:#?}"))
    };
    let (asking, retried) = (round("1"), round("2"));
    assert_eq!(asking["service"], "replica-a");
    assert_eq!(asking["parent_span_id"], "", "the client named no parent");
    assert_eq!(retried["service"], "replica-b");
    assert_eq!(retried["trace_id"], asking["trace_id"], "one trace");
    assert_eq!(retried["parent_span_id"], asking["span_id"]);
    for round in [asking, retried] {
        let attributes = &round["attributes"];
        assert_eq!(attributes["mcp.protocol.version"], "2026-07-28");
        assert!(attributes.get("mcp.session.id").is_none(), "no session");
    }
    // Each round's question is a CLIENT span of its run: the first round
    // stops at it, the retry answers it from the signed record.
    for (round, outcome) in [(asking, "next-round"), (retried, "answered")] {
        let run = child_of(&spans, "airlock.run", round);
        let asked = child_of(&spans, "elicitation/create", run);
        assert_eq!(asked["attributes"]["airlock.ask.outcome"], outcome);
    }
    let made = named(&spans, "tools/call sleep_task");
    assert_eq!(made["service"], "replica-a");
    let poll = |id: &str| {
        spans
            .iter()
            .find(|s| s["span"] == "tasks/get" && s["attributes"]["jsonrpc.request.id"] == id)
            .unwrap_or_else(|| panic!("no tasks/get {id}: {spans:#?}"))
    };
    let polled = poll("4");
    assert_eq!(polled["service"], "replica-b");
    assert_eq!(polled["trace_id"], made["trace_id"], "one trace");
    assert_eq!(polled["parent_span_id"], made["span_id"]);
    let linked = poll("5");
    assert_eq!(linked["trace_id"], TRACE, "the client's parent wins");
    assert_eq!(linked["parent_span_id"], CLIENT_SPAN);
    assert_eq!(linked["links"], serde_json::json!([made["trace_id"]]));
}

/// A component in a cordon runs in a worker process of its own: its run
/// and its outbound request are traced under the request all the same, and
/// the server it calls sees a `traceparent` whose parent is that request's
/// span, as for a component served in the serving process.
#[test]
fn a_cordoned_component_s_run_is_traced_like_any_other() {
    let Some(receiver) = receiver() else {
        return;
    };
    let (port, seen) = upstream();
    let policy = format!(
        "[components.webfetch]\ncordon = \"apart\"\n\
         [components.webfetch.network.\"http://127.0.0.1:{port}\"]\n"
    );
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
    let (sent, _) = seen
        .recv_timeout(Duration::from_secs(5))
        .expect("a request");
    let spans = receiver.spans_until(|spans| {
        ["rpc fetch_url", "airlock.run", "GET"]
            .iter()
            .all(|name| spans.iter().any(|s| s["span"] == *name))
    });
    let call = named(&spans, "rpc fetch_url");
    let run = child_of(&spans, "airlock.run", call);
    let outbound = child_of(&spans, "GET", run);
    assert_eq!(outbound["trace_id"], TRACE);
    let expected = format!(
        "00-{TRACE}-{}-01",
        outbound["span_id"].as_str().unwrap_or_default()
    );
    assert_eq!(sent.as_deref(), Some(expected.as_str()));
}
