//! The front door under attack: starts the real `airlock serve` (HTTP on a
//! free loopback port, or stdio) with the first-party components and sends
//! it what a careless or hostile client might: invalid UTF-8, truncated and
//! 100 000-level deep JSON, numbers past every range, 100 MB bodies, wrong
//! content types, headers trickled byte by byte, thousands of idle
//! keep-alive connections, a last stdio line without its newline.
//!
//! Every case checks that the server answers cleanly (no 5xx, no crash),
//! that no answer carries internals (file paths, Rust error chains), and
//! that a normal `tools/call` still works afterwards.

use crate::support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::http::{ACCEPT, JSON, Mcp, Served, http, parse_response};

/// `airlock serve --listen 127.0.0.1:PORT target/components`; returns once
/// it listens.
fn serve() -> Served {
    support::http::serve("", &[support::workspace().join("target/components")], &[])
}

/// Reads until a response head is complete; the server may reset the
/// connection right after it (it did not read everything that was sent).
fn read_head(stream: &mut TcpStream) -> Vec<u8> {
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    while !raw.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
        }
    }
    raw
}

/// What must never reach a client: paths of the machine, source files,
/// Rust panics and error chains, parser internals.
fn assert_no_leak(what: &str, body: &str) {
    let workspace = support::workspace().display().to_string();
    for marker in [
        workspace.as_str(),
        "/root/",
        "/home/",
        "/tmp/",
        "target/",
        ".rs:",
        "panicked",
        "Caused by",
        "RUST_BACKTRACE",
        "line 1 column",
        "at line",
        "serde_json",
        "hyper::",
        "wasmtime",
    ] {
        assert!(
            !body.contains(marker),
            "{what}: the answer leaks {marker:?}: {body}"
        );
    }
}

/// A normal `tools/call` over MCP and a call over `/rpc` both work.
fn assert_still_serves(served: &mut Served, after: &str) {
    served.assert_alive();
    let session = Mcp::connect(served.addr, json!({}), &[]);
    let call = json!({"jsonrpc":"2.0","id":"ok","method":"tools/call",
        "params":{"name":"lookup_price","arguments":{"sku":"SKU-1001"}}});
    let r = session.post(&call);
    assert_eq!(r.status, 200, "after {after}: {}", r.body);
    let answer = r.json();
    assert_eq!(
        answer["result"]["isError"], false,
        "after {after}: {answer}"
    );
    assert!(
        answer["result"]["structuredContent"]["result"].is_number(),
        "after {after}: {answer}"
    );
    let r = http(
        served.addr,
        "POST",
        "/rpc",
        &[JSON],
        br#"{"jsonrpc":"2.0","id":1,"method":"lookup_price","params":["SKU-1001"]}"#,
    );
    assert_eq!(r.status, 200, "after {after}: {}", r.body);
    assert!(r.json()["result"].is_number(), "after {after}: {}", r.body);
}

/// Bodies that are not JSON, or JSON at the edges, on both endpoints.
#[test]
fn malformed_json_is_answered_without_crash_or_leak() {
    let mut served = serve();
    let addr = served.addr;
    let session = Mcp::connect(addr, json!({}), &[]);
    let deep_arrays = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let deep_objects = format!("{}1{}", r#"{"a":"#.repeat(100_000), "}".repeat(100_000));
    let deep_params = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo_json","arguments":{{"value":{}1{}}}}}}}"#,
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    // (name, body, the JSON-RPC error code /rpc must answer)
    let cases: Vec<(&str, Vec<u8>, i64)> = vec![
        ("invalid UTF-8", b"\xff\xfe\xfd".to_vec(), -32700),
        (
            "invalid UTF-8 in a string",
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"lookup_\xc3\x28price\"}".to_vec(),
            -32700,
        ),
        (
            "a lone surrogate escape",
            br#"{"jsonrpc":"2.0","id":1,"method":"\ud800"}"#.to_vec(),
            -32700,
        ),
        ("NUL bytes", b"\0\0\0\0".to_vec(), -32700),
        ("a byte-order mark", b"\xef\xbb\xbf{}".to_vec(), -32700),
        ("empty", Vec::new(), -32700),
        ("truncated", br#"{"jsonrpc":"2.0","id":1,"meth"#.to_vec(), -32700),
        ("truncated batch", br#"[{"jsonrpc":"2.0","id":1,"method":"ping"},"#.to_vec(), -32700),
        ("unterminated string", br#"{"jsonrpc":"2.0","id":"#.to_vec(), -32700),
        ("trailing garbage", br#"{"jsonrpc":"2.0","id":1,"method":"x"}}}"#.to_vec(), -32700),
        ("100 000 nested arrays", deep_arrays.into_bytes(), -32700),
        ("100 000 nested objects", deep_objects.into_bytes(), -32700),
        ("deep arguments", deep_params.into_bytes(), -32700),
        ("1e400", b"1e400".to_vec(), -32700),
        (
            "1e400 as an id",
            br#"{"jsonrpc":"2.0","id":1e400,"method":"lookup_price","params":["SKU-1001"]}"#.to_vec(),
            -32700,
        ),
        (
            "-1e400 as an argument",
            br#"{"jsonrpc":"2.0","id":1,"method":"echo_f64","params":{"value":-1e400}}"#.to_vec(),
            -32700,
        ),
        (
            "2^70 as an id",
            br#"{"jsonrpc":"2.0","id":1180591620717411303424,"method":"nope"}"#.to_vec(),
            -32601,
        ),
        (
            "2^70 as an unsigned argument",
            br#"{"jsonrpc":"2.0","id":1,"method":"echo_u64","params":{"value":1180591620717411303424}}"#.to_vec(),
            -32602,
        ),
        (
            "2^64 as an unsigned argument",
            br#"{"jsonrpc":"2.0","id":1,"method":"echo_u64","params":{"value":18446744073709551616}}"#.to_vec(),
            -32602,
        ),
        (
            "-2^63-1 as a signed argument",
            br#"{"jsonrpc":"2.0","id":1,"method":"echo_i64","params":{"value":-9223372036854775809}}"#.to_vec(),
            -32602,
        ),
        (
            "2^70 as a 32-bit argument",
            br#"{"jsonrpc":"2.0","id":1,"method":"echo_i32","params":{"value":"1180591620717411303424"}}"#.to_vec(),
            -32602,
        ),
        (
            "1e-400 and 1e308 (in range for JSON, edge for f64)",
            br#"{"jsonrpc":"2.0","id":1,"method":"echo_json","params":{"value":[1e-400,1.7976931348623157e308,-0]}}"#.to_vec(),
            0,
        ),
        (
            "a batch of garbage",
            br#"[1,"x",null,{},[],{"jsonrpc":"2.0"},{"jsonrpc":"2.0","id":true,"method":"ping"}]"#.to_vec(),
            -32600,
        ),
    ];
    for (name, body, code) in &cases {
        // /rpc: HTTP 200 with the JSON-RPC error in the body.
        let r = http(addr, "POST", "/rpc", &[JSON], body);
        assert_no_leak(name, &r.body);
        assert_eq!(r.status, 200, "/rpc, {name}: {}", r.body);
        let answer = r.json();
        let first = if answer.is_array() {
            &answer[0]
        } else {
            &answer
        };
        match code {
            0 => assert!(first.get("result").is_some(), "/rpc, {name}: {answer}"),
            code => assert_eq!(first["error"]["code"], *code, "/rpc, {name}: {answer}"),
        }
        // /mcp: a client error (or a JSON-RPC error), never a 5xx.
        let r = session.post_raw(body);
        assert_no_leak(name, &r.body);
        assert!(
            r.status == 200 || r.status == 400,
            "/mcp, {name}: {} {}",
            r.status,
            r.body
        );
        if !r.body.is_empty() {
            let answer = r.json();
            let first = if answer.is_array() {
                &answer[0]
            } else {
                &answer
            };
            if *code == -32700 {
                assert_eq!(first["error"]["code"], -32700, "/mcp, {name}: {answer}");
            } else {
                assert!(
                    first.get("error").is_some() || first["result"]["isError"].is_boolean(),
                    "/mcp, {name}: {answer}"
                );
            }
        }
        served.assert_alive();
    }
    // A huge integer as a u64 argument over MCP: a tool error naming it.
    let r = session.post_raw(
        br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo_u64","arguments":{"value":1180591620717411303424}}}"#,
    );
    let answer = r.json();
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert_no_leak("2^70 over MCP", &r.body);
    assert_still_serves(&mut served, "malformed JSON");
}

/// A 100 MB body is refused with 413 as soon as the server knows its size,
/// without being read into memory: with a Content-Length, before the client
/// has sent it; chunked, once the limit (4 MiB) is passed.
#[test]
fn hundred_megabyte_bodies_are_refused_early_without_buffering() {
    let mut served = serve();
    let addr = served.addr;
    const SIZE: usize = 100 * 1024 * 1024;
    let before = served.rss_kib();
    for (path, chunked) in [
        ("/rpc", false),
        ("/mcp", false),
        ("/rpc", true),
        ("/mcp", true),
    ] {
        let mut stream = TcpStream::connect(addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .expect("timeout");
        let framing = if chunked {
            "Transfer-Encoding: chunked".to_string()
        } else {
            format!("Content-Length: {SIZE}")
        };
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{framing}\r\nConnection: close\r\n\r\n"
        );
        stream.write_all(head.as_bytes()).expect("head");
        // Send the body from another thread; count what got through.
        let mut writer = stream.try_clone().expect("clone");
        let sender = std::thread::spawn(move || {
            let chunk = vec![b' '; 256 * 1024];
            let mut sent = 0usize;
            while sent < SIZE {
                let frame = if chunked {
                    let mut frame = format!("{:x}\r\n", chunk.len()).into_bytes();
                    frame.extend_from_slice(&chunk);
                    frame.extend_from_slice(b"\r\n");
                    frame
                } else {
                    chunk.clone()
                };
                if writer.write_all(&frame).is_err() {
                    break;
                }
                sent += chunk.len();
            }
            sent
        });
        let raw = read_head(&mut stream);
        let _ = stream.shutdown(Shutdown::Both);
        let sent = sender.join().expect("sender");
        let reply = parse_response(&raw);
        assert_eq!(
            reply.status, 413,
            "{path}, chunked {chunked}: {}",
            reply.body
        );
        assert!(
            sent < SIZE,
            "{path}, chunked {chunked}: the whole body was sent before the answer"
        );
        served.assert_alive();
        let after = served.rss_kib();
        eprintln!(
            "{path}, chunked {chunked}: 413 after {sent} of {SIZE} bytes; RSS {before} -> {after} KiB"
        );
        assert!(
            after < before + 48 * 1024,
            "{path}, chunked {chunked}: RSS grew from {before} KiB to {after} KiB"
        );
    }
    assert_still_serves(&mut served, "100 MB bodies");
}

/// Anything but `application/json` is refused with 415 (and a bad Accept
/// with 406), before the body is looked at.
#[test]
fn wrong_content_types_are_refused() {
    let mut served = serve();
    let addr = served.addr;
    let session = Mcp::connect(addr, json!({}), &[]);
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"lookup_price","params":["SKU-1001"]}"#;
    for content_type in [
        None,
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
        Some("multipart/form-data; boundary=x"),
        Some("application/json-seq"),
        Some("application/jsonx"),
        Some("text/json"),
        Some(""),
    ] {
        let mut headers = vec![ACCEPT, ("Mcp-Session-Id", session.session.as_str())];
        if let Some(ct) = content_type {
            headers.push(("Content-Type", ct));
        }
        for path in ["/rpc", "/mcp"] {
            let r = http(addr, "POST", path, &headers, body);
            assert_eq!(r.status, 415, "{path} with {content_type:?}: {}", r.body);
            assert_no_leak("content type", &r.body);
        }
    }
    // Parameters and case are fine.
    for content_type in ["application/json; charset=utf-8", "Application/JSON"] {
        let r = http(
            addr,
            "POST",
            "/rpc",
            &[("Content-Type", content_type)],
            body,
        );
        assert_eq!(r.status, 200, "{content_type}: {}", r.body);
    }
    // An MCP client that accepts neither JSON nor SSE.
    let r = http(
        addr,
        "POST",
        "/mcp",
        &[
            JSON,
            ("Accept", "text/html"),
            ("Mcp-Session-Id", &session.session),
        ],
        body,
    );
    assert_eq!(r.status, 406, "{}", r.body);
    // Other methods: 405, whatever the body.
    for (method, path) in [
        ("PUT", "/rpc"),
        ("PATCH", "/mcp"),
        ("DELETE", "/rpc"),
        ("POST", "/rpc/describe"),
        ("POST", "/rpc/openrpc.json"),
    ] {
        let r = http(addr, method, path, &[JSON], body);
        assert_eq!(r.status, 405, "{method} {path}: {}", r.body);
    }
    assert_still_serves(&mut served, "wrong content types");
}

/// Slow clients: some trickle their request head byte by byte, some send
/// nothing at all. The header read timeout (10 s) closes them however
/// slowly they trickle, and the server answers others meanwhile.
#[test]
fn slow_header_senders_are_timed_out() {
    let mut served = serve();
    let addr = served.addr;
    let started = Instant::now();
    let head = format!(
        "POST /rpc HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nX-Padding: {}\r\n",
        "a".repeat(200)
    );
    let mut slow = Vec::new();
    for i in 0..20 {
        let head = head.clone();
        slow.push(std::thread::spawn(move || {
            let mut stream = TcpStream::connect(addr).expect("connect");
            stream.set_nodelay(true).expect("nodelay");
            let opened = Instant::now();
            // Half trickle a byte every 200 ms (never finishing the head),
            // half send nothing after the first bytes.
            let bytes = if i % 2 == 0 {
                head.as_bytes()
            } else {
                &head.as_bytes()[..3]
            };
            for b in bytes {
                if stream.write_all(&[*b]).is_err() {
                    return opened.elapsed();
                }
                std::thread::sleep(Duration::from_millis(200));
            }
            stream
                .set_read_timeout(Some(Duration::from_secs(60)))
                .expect("timeout");
            let mut rest = Vec::new();
            let _ = stream.read_to_end(&mut rest);
            opened.elapsed()
        }));
    }
    // Others are served while the slow ones hang on.
    std::thread::sleep(Duration::from_secs(2));
    assert_still_serves(&mut served, "slow clients (while they trickle)");
    for thread in slow {
        let held = thread.join().expect("slow client");
        assert!(
            held >= Duration::from_secs(8) && held < Duration::from_secs(20),
            "a slow client was closed after {held:?}"
        );
    }
    assert!(started.elapsed() < Duration::from_secs(30));
    assert_still_serves(&mut served, "slow clients");
}

/// Request heads past the server's buffer (64 KiB) or header count are
/// refused with 431 instead of being buffered.
#[test]
fn oversized_request_heads_are_refused() {
    let mut served = serve();
    let addr = served.addr;
    let long = "a".repeat(1024 * 1024);
    let many: Vec<(String, String)> = (0..5000)
        .map(|i| (format!("X-H{i}"), "v".to_string()))
        .collect();
    let cases: [(&str, Vec<(&str, &str)>); 2] = [
        ("a 1 MiB header", vec![JSON, ("X-Long", long.as_str())]),
        (
            "5000 headers",
            many.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect(),
        ),
    ];
    for (name, headers) in cases {
        let mut stream = TcpStream::connect(addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .expect("timeout");
        let mut head = format!("POST /rpc HTTP/1.1\r\nHost: {addr}\r\n");
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("Content-Length: 2\r\n\r\n{}");
        // The server may answer and close before the head is all sent:
        // write from another thread, read here.
        let mut writer = stream.try_clone().expect("clone");
        let sender = std::thread::spawn(move || {
            let _ = writer.write_all(head.as_bytes());
        });
        let raw = read_head(&mut stream);
        let _ = stream.shutdown(Shutdown::Both);
        sender.join().expect("sender");
        let reply = parse_response(&raw);
        assert_eq!(reply.status, 431, "{name}: {}", reply.body);
        assert_no_leak(name, &reply.body);
    }
    assert_still_serves(&mut served, "oversized request heads");
}

/// The soft limit of open files, raised to the hard limit when lower than
/// `want` (with `prlimit`, best effort).
fn open_files_limit(want: u64) -> u64 {
    let read = || {
        std::fs::read_to_string("/proc/self/limits")
            .ok()
            .and_then(|limits| {
                let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
                let mut fields = line.split_whitespace().skip(3);
                let soft = fields.next()?.parse::<u64>().unwrap_or(u64::MAX);
                let hard = fields.next()?.parse::<u64>().unwrap_or(u64::MAX);
                Some((soft, hard))
            })
            .unwrap_or((1024, 1024))
    };
    let (soft, hard) = read();
    if soft < want && hard > soft {
        let _ = Command::new("prlimit")
            .arg(format!("--pid={}", std::process::id()))
            .arg(format!("--nofile={hard}:{hard}"))
            .status();
    }
    read().0
}

/// Thousands of idle keep-alive connections: the server holds at most its
/// limit (1024), closes the excess right away, closes idle ones after the
/// header timeout, and serves new clients again.
#[test]
fn thousands_of_idle_keep_alive_connections_are_bounded() {
    // The server and this test each hold one end of every connection.
    let limit = open_files_limit(5000);
    let count = 2000usize.min((limit.saturating_sub(200) / 2) as usize);
    assert!(
        count > 1100,
        "too few open files allowed ({limit}) to test the bound"
    );
    let mut served = serve();
    let addr = served.addr;
    let before = served.rss_kib();
    let fds_before = served.open_fds();
    let started = Instant::now();
    // A small answer, read whole by one read (a bigger one, like
    // /rpc/describe's, would leave bytes that read as "not closed" later).
    let request = format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    let mut open = Vec::new();
    let mut refused = 0usize;
    for _ in 0..count {
        let Ok(mut stream) = TcpStream::connect(addr) else {
            refused += 1;
            continue;
        };
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        // One request, then the connection stays open and idle.
        let mut buf = [0u8; 8192];
        let answered = stream.write_all(request.as_bytes()).is_ok()
            && matches!(stream.read(&mut buf), Ok(n) if n > 0 && buf.starts_with(b"HTTP/1.1 200"));
        if answered {
            open.push(stream);
        } else {
            refused += 1;
        }
    }
    eprintln!(
        "{count} connections: {} kept alive, {refused} refused, in {:?}",
        open.len(),
        started.elapsed()
    );
    // Bounded: the server holds at most 1024 connections (idle ones may
    // already have timed out on a slow machine, letting later ones in).
    let fds = served.open_fds();
    assert!(
        fds <= fds_before + 1024 + 8,
        "the server holds {fds} files (it held {fds_before} before)"
    );
    assert!(open.len() >= 1000, "only {} connections served", open.len());
    assert_eq!(open.len() + refused, count);
    if started.elapsed() < Duration::from_secs(8) {
        assert!(open.len() <= 1024, "{} connections held", open.len());
        assert!(refused >= count - 1024, "only {refused} refused");
    }
    served.assert_alive();
    let rss = served.rss_kib();
    assert!(
        rss < before + 256 * 1024,
        "RSS grew from {before} KiB to {rss} KiB"
    );
    // Idle connections are closed after the header timeout; then new
    // clients are served again.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let fresh = TcpStream::connect(addr).and_then(|mut s| {
            s.set_read_timeout(Some(Duration::from_secs(5)))?;
            s.write_all(request.as_bytes())?;
            let mut buf = [0u8; 64];
            let n = s.read(&mut buf)?;
            Ok(buf[..n].starts_with(b"HTTP/1.1 200"))
        });
        if matches!(fresh, Ok(true)) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "new clients were not served again: {fresh:?}"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    let mut closed = 0;
    for stream in &mut open {
        stream
            .set_read_timeout(Some(Duration::from_secs(15)))
            .expect("timeout");
        let mut buf = [0u8; 16];
        if matches!(stream.read(&mut buf), Ok(0) | Err(_)) {
            closed += 1;
        }
    }
    assert_eq!(closed, open.len(), "idle connections were not closed");
    drop(open);
    assert_still_serves(&mut served, "thousands of idle connections");
}

/// stdio: garbage lines are answered with errors, the session goes on, and
/// a last line without its newline is still processed before the server
/// exits cleanly.
#[test]
fn stdio_survives_garbage_and_answers_a_last_line_without_newline() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_airlock"))
        .args(["serve", "--stdio", "--load-wait", "600"])
        .arg(support::workspace().join("target/components"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start airlock");
    let mut stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        let mut lines = Vec::new();
        for line in BufReader::new(stdout).split(b'\n') {
            lines.push(line.expect("line"));
        }
        lines
    });
    let mut input: Vec<u8> = Vec::new();
    input.extend_from_slice(br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#);
    input.push(b'\n');
    for garbage in [
        &b"\xff\xfe\xfd"[..],
        b"{\"jsonrpc\":\"2.0\",\"id\":1,",
        b"\0\0",
        b"1e400",
        br#"{"jsonrpc":"2.0","id":1180591620717411303424,"method":"ping"}"#,
    ] {
        input.extend_from_slice(garbage);
        input.push(b'\n');
    }
    input.extend("[".repeat(100_000).bytes());
    input.extend("]".repeat(100_000).bytes());
    input.push(b'\n');
    // A line over the 8 MiB limit: refused, not held.
    input.extend(std::iter::repeat_n(b' ', 9 * 1024 * 1024));
    input.push(b'\n');
    input.extend_from_slice(br#"{"jsonrpc":"2.0","id":"last","method":"tools/call","params":{"name":"lookup_price","arguments":{"sku":"SKU-1001"}}}"#);
    // No newline: EOF ends the line.
    stdin.write_all(&input).expect("write");
    drop(stdin);
    let lines = reader.join().expect("reader");
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(0));
    let messages: Vec<Value> = lines
        .iter()
        .map(|l| {
            let text = String::from_utf8_lossy(l);
            assert_no_leak("stdio", &text);
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
        })
        .collect();
    let errors: Vec<i64> = messages
        .iter()
        .filter_map(|m| m["error"]["code"].as_i64())
        .collect();
    // Four garbage lines and the deep one are parse errors, the ping with a
    // huge id is answered, the long line is refused as an invalid request.
    assert_eq!(
        errors,
        [-32700, -32700, -32700, -32700, -32700, -32600],
        "{messages:?}"
    );
    let last = messages
        .iter()
        .find(|m| m["id"] == "last")
        .unwrap_or_else(|| panic!("the last line was not answered: {messages:?}"));
    assert_eq!(last["result"]["isError"], false, "{last}");
    assert!(
        last["result"]["structuredContent"]["result"].is_number(),
        "{last}"
    );
}

// --- what one token may hold (#38) ----------------------------------------

/// A policy with a token limited to `lookup_price` and one allowed all
/// tools (the operator's).
fn two_tokens() -> String {
    use sha2::Digest as _;
    let digest = |s: &str| hex::encode(sha2::Sha256::digest(s.as_bytes()));
    format!(
        "[[tokens]]\nname = \"limited\"\nsha256 = \"{}\"\ntools = [\"lookup_price\"]\n\n\
         [[tokens]]\nname = \"ops\"\nsha256 = \"{}\"\n",
        digest("limited-secret"),
        digest("ops-secret")
    )
}

const LIMITED: (&str, &str) = ("Authorization", "Bearer limited-secret");
const OPS: (&str, &str) = ("Authorization", "Bearer ops-secret");

/// One gauge of `/metrics`, read with the operator's token.
fn gauge(served: &Served, name: &str) -> u64 {
    let r = http(served.addr, "GET", "/metrics", &[OPS], b"");
    assert_eq!(r.status, 200, "{}", r.body);
    r.body
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in {}", r.body))
}

/// Opens `subscriptions/listen` with `token`; returns the stream once the
/// first bytes of the answer are in, and the answer's head and start.
fn listen(served: &Served, token: (&str, &str)) -> (TcpStream, String) {
    let body = support::http::body(
        1,
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
        json!({}),
    )
    .to_string();
    let mut stream = TcpStream::connect(served.addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: {}\r\n\
         Mcp-Method: subscriptions/listen\r\n{}: {}\r\nContent-Length: {}\r\n\r\n{body}",
        served.addr,
        support::http::MODERN,
        token.0,
        token.1,
        body.len()
    );
    stream.write_all(head.as_bytes()).expect("send");
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    // The head and the acknowledgement (an SSE event), or a refusal.
    while !String::from_utf8_lossy(&got).contains("acknowledged") {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    (stream, String::from_utf8_lossy(&got).into_owned())
}

/// A limited token's idle subscriptions take no call's place, are bounded
/// per token, and are given back when their clients go; before, 70 idle
/// streams of one token held every call permit (503 for every tool call of
/// every token) for good.
#[test]
fn idle_subscriptions_hold_streams_not_calls_and_are_freed_when_clients_go() {
    let mut served = support::http::serve(
        &two_tokens(),
        &[support::workspace().join("target/components")],
        &["--max-calls", "4", "--max-streams", "16"],
    );
    assert_eq!(gauge(&served, "airlock_http_streams_open"), 0);
    let mut open = Vec::new();
    let mut refused = 0;
    for _ in 0..10 {
        let (stream, answer) = listen(&served, LIMITED);
        if answer.starts_with("HTTP/1.1 200") {
            assert!(answer.contains("acknowledged"), "{answer}");
            open.push(stream);
        } else {
            assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
            assert!(answer.contains("its share"), "{answer}");
            refused += 1;
        }
    }
    // A quarter of 16 for one token; the rest refused.
    assert_eq!((open.len(), refused), (4, 6));
    assert_eq!(gauge(&served, "airlock_http_streams_open"), 4);
    assert_eq!(gauge(&served, "airlock_http_calls_held"), 0);
    // Calls of both tokens go through beside the idle streams.
    for token in [LIMITED, OPS] {
        assert_still_serves_with(&mut served, token);
    }
    // The clients go without a word: their streams are given back.
    for stream in &open {
        let _ = stream.shutdown(Shutdown::Both);
    }
    drop(open);
    let deadline = Instant::now() + Duration::from_secs(20);
    while gauge(&served, "airlock_http_streams_open") > 0 {
        assert!(
            Instant::now() < deadline,
            "streams still held after their clients left"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let (_again, answer) = listen(&served, LIMITED);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert_still_serves_with(&mut served, OPS);
}

/// [`assert_still_serves`] for a server with tokens: a call over `/rpc`
/// with `token` answers its result.
fn assert_still_serves_with(served: &mut Served, token: (&str, &str)) {
    served.assert_alive();
    let r = http(
        served.addr,
        "POST",
        "/rpc",
        &[JSON, token],
        br#"{"jsonrpc":"2.0","id":1,"method":"lookup_price","params":["SKU-1001"]}"#,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.json()["result"].is_number(), "{}", r.body);
}

/// Clients with a valid token sending their bodies a byte a second: each
/// is cut off (408) once it falls behind its allowance, a token holds at
/// most a quarter of the connections (429 past that), and another token's
/// calls are served throughout. Before, the body had no deadline and one
/// token could hold every connection.
#[test]
fn slow_bodies_are_cut_off_and_one_token_holds_a_quarter_of_the_connections() {
    let mut served = support::http::serve(
        &two_tokens(),
        &[support::workspace().join("target/components")],
        &["--max-connections", "16", "--body-timeout", "2"],
    );
    let addr = served.addr;
    let started = Instant::now();
    let mut slow = Vec::new();
    for _ in 0..8 {
        slow.push(std::thread::spawn(move || {
            let mut stream = TcpStream::connect(addr).expect("connect");
            stream
                .set_read_timeout(Some(Duration::from_secs(30)))
                .expect("timeout");
            let head = format!(
                "POST /rpc HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
                 Authorization: Bearer limited-secret\r\nContent-Length: 100\r\n\r\n"
            );
            stream.write_all(head.as_bytes()).expect("head");
            let opened = Instant::now();
            // A byte a second, until the server answers or closes.
            let mut reader = stream.try_clone().expect("clone");
            let answered = std::thread::spawn(move || {
                let mut raw = Vec::new();
                let _ = reader.read_to_end(&mut raw);
                raw
            });
            for _ in 0..30 {
                if answered.is_finished() || stream.write_all(b" ").is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_secs(1));
            }
            let raw = answered.join().expect("reader");
            (opened.elapsed(), String::from_utf8_lossy(&raw).into_owned())
        }));
    }
    std::thread::sleep(Duration::from_millis(500));
    // The other token is served while the slow ones trickle.
    assert_still_serves_with(&mut served, OPS);
    let mut statuses = Vec::new();
    for thread in slow {
        let (held, answer) = thread.join().expect("slow client");
        assert!(
            held < Duration::from_secs(10),
            "a slow body was held {held:?}: {answer}"
        );
        statuses.push(answer.split(' ').nth(1).unwrap_or("none").to_string());
    }
    statuses.sort();
    // A quarter of 16 connections for the token: 4 cut off as too slow,
    // the other 4 refused at once.
    assert_eq!(
        statuses,
        ["408", "408", "408", "408", "429", "429", "429", "429"]
    );
    assert!(started.elapsed() < Duration::from_secs(20));
    assert_still_serves_with(&mut served, LIMITED);
}

/// `/metrics` names every tool and counts its calls: a token limited to
/// some tools may not read it unless marked for it; an all-tools token may.
#[test]
fn a_limited_token_reads_no_metrics_unless_marked_for_them() {
    let served = support::http::serve(
        &two_tokens(),
        &[support::workspace().join("target/components")],
        &[],
    );
    let r = http(served.addr, "GET", "/metrics", &[LIMITED], b"");
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(!r.body.contains("restock"), "{}", r.body);
    assert!(r.body.contains("metrics = true"), "{}", r.body);
    let r = http(served.addr, "GET", "/metrics", &[OPS], b"");
    assert_eq!(r.status, 200, "{}", r.body);
    drop(served);
    let marked = two_tokens().replace(
        "tools = [\"lookup_price\"]",
        "tools = [\"lookup_price\"]\nmetrics = true",
    );
    let served = support::http::serve(
        &marked,
        &[support::workspace().join("target/components")],
        &[],
    );
    let r = http(served.addr, "GET", "/metrics", &[LIMITED], b"");
    assert_eq!(r.status, 200, "{}", r.body);
}

/// Two `Authorization` headers are refused whole: a limited token first
/// and the all-tools token second ran a tool the first may not call.
#[test]
fn two_authorization_headers_are_refused() {
    let served = support::http::serve(
        &two_tokens(),
        &[support::workspace().join("target/components")],
        &[],
    );
    let r = http(
        served.addr,
        "POST",
        "/rpc",
        &[JSON, LIMITED, OPS],
        br#"{"jsonrpc":"2.0","id":1,"method":"restock","params":["SKU-1001", 1]}"#,
    );
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body.contains("more than one Authorization"), "{}", r.body);
}
