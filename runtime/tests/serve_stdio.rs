//! End to end over stdio: starts the real `airlock serve --stdio` and
//! speaks newline-delimited JSON-RPC on its stdin/stdout.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{component, test_component};

/// Runs the server with `input` written to stdin (then closed) and returns
/// every line of stdout as JSON, plus the exit code.
fn session(files: &[std::path::PathBuf], input: &str) -> (Vec<Value>, Option<i32>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_airlock"))
        .args(["serve", "--stdio"])
        .args(files)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start airlock");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(input.as_bytes()).expect("write");
    drop(stdin);
    let stdout = child.stdout.take().expect("stdout");
    let mut messages = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.expect("line");
        // stdout carries protocol messages only.
        let value: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line:?}"));
        messages.push(value);
    }
    let status = child.wait().expect("wait");
    (messages, status.code())
}

fn by_id(messages: &[Value], id: Value) -> &Value {
    messages
        .iter()
        .find(|m| m["id"] == id)
        .unwrap_or_else(|| panic!("no response {id} in {messages:?}"))
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

#[test]
fn stdio_session_lists_calls_and_ends_on_eof() {
    let input = [
        INIT,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"lookup_price","arguments":{"sku":"SKU-1001"}}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"export_orders","arguments":{}}}"#,
        "{not json",
        r#"{"jsonrpc":"2.0","id":4,"method":"nope"}"#,
        "",
        // The last line has no newline and is still answered.
        r#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#,
    ]
    .join("\n");
    let (messages, code) = session(&[component("catalog"), component("export")], &input);
    assert_eq!(code, Some(0));
    assert_eq!(
        by_id(&messages, json!(0))["result"]["protocolVersion"],
        "2025-06-18"
    );
    let tools = &by_id(&messages, json!(1))["result"]["tools"];
    assert_eq!(tools.as_array().map(Vec::len), Some(3));
    let price = by_id(&messages, json!(2));
    assert_eq!(price["result"]["isError"], false, "{price}");
    let missing = by_id(&messages, json!(3));
    assert_eq!(missing["result"]["isError"], true);
    assert!(
        missing["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .contains("customer_id")
    );
    assert!(messages.iter().any(|m| m["error"]["code"] == -32700));
    assert_eq!(by_id(&messages, json!(4))["error"]["code"], -32601);
    assert_eq!(by_id(&messages, json!(5))["result"], json!({}));
    // Nothing answered the notification.
    assert_eq!(messages.len(), 7, "{messages:?}");
}

#[test]
fn stdio_cancellation_stops_a_running_call() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_airlock"))
        .args(["serve", "--stdio"])
        .arg(test_component("hostile"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start airlock");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let started = Instant::now();
    writeln!(stdin, "{INIT}").expect("write");
    let mut line = String::new();
    stdout.read_line(&mut line).expect("init response");
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{{"name":"sleep","arguments":{{"ms":"20000"}}}}}}"#
    )
    .expect("write");
    std::thread::sleep(Duration::from_millis(300));
    // Other requests are answered while the call runs.
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":"p","method":"ping"}}"#).expect("write");
    line.clear();
    stdout.read_line(&mut line).expect("ping response");
    assert!(line.contains("\"p\""), "{line}");
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":"s"}}}}"#
    )
    .expect("write");
    drop(stdin);
    let mut rest = String::new();
    for l in stdout.lines() {
        rest.push_str(&l.expect("line"));
    }
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(0));
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "the call was not stopped"
    );
    // No response for the cancelled request.
    assert!(!rest.contains("\"s\""), "{rest}");
}
