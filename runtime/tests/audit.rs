//! Every audit entry names its caller, whatever the door the call came
//! through: an MCP session over HTTP (with and without a bearer token), a
//! 2026-07-28 request, a task of either revision, `/rpc` (one call and a
//! batch), stdio, and `airlock call`.

use crate::support;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::component;
use support::http::{JSON, Mcp, answer, body, http, modern, serve};

const TOKEN: &str = "audit-secret";

fn sha256_hex(text: &str) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(text.as_bytes()))
}

/// The audit log's entries, once it has `count` of them (a task's entry is
/// written when the task ends, after its answer).
fn entries(path: &Path, count: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("a JSON line"))
            .collect();
        if lines.len() >= count || Instant::now() > deadline {
            assert_eq!(lines.len(), count, "{text}");
            return lines;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `(caller_kind, caller)` of each entry, in order.
fn callers(entries: &[Value]) -> Vec<(String, String)> {
    entries
        .iter()
        .map(|e| {
            let kind = e["caller_kind"].as_str().expect("caller_kind").to_string();
            let caller = e["caller"].as_str().expect("caller").to_string();
            (kind, caller)
        })
        .collect()
}

fn policy(audit: &Path, tokens: bool) -> String {
    let mut policy = format!("audit = \"{}\"\n", audit.display());
    if tokens {
        policy.push_str(&format!(
            "[[tokens]]\nname = \"agent-1\"\nsha256 = \"{}\"\n",
            sha256_hex(TOKEN)
        ));
    }
    policy
}

fn tools() -> Vec<std::path::PathBuf> {
    vec![component("catalog"), component("export")]
}

const LOOKUP: &str = r#"{"name":"lookup_price","arguments":{"sku":"SKU-1001"}}"#;

/// Calls `lookup_price` through each HTTP door of a server, with `extra`
/// headers (a token or none): a session call, a session task, a
/// 2026-07-28 call, `/rpc` alone and in a batch of two.
fn call_through_every_http_door(addr: std::net::SocketAddr, extra: &[(&str, &str)]) {
    let params: Value = serde_json::from_str(LOOKUP).expect("params");
    let mut session = Mcp::connect(addr, json!({}), extra);
    let r = session.request("tools/call", params.clone());
    assert_eq!(r["result"]["isError"], false, "{r}");
    let task = json!({"name": "export_orders", "arguments": {"customer_id": "CUST-42"},
                      "task": {"ttl": 60000}});
    let r = session.request("tools/call", task);
    let id = r["result"]["task"]["taskId"].as_str().expect("a task");
    let r = session.request("tasks/result", json!({"taskId": id}));
    assert_eq!(r["result"]["isError"], false, "{r}");

    let r = modern(
        addr,
        &body(1, "tools/call", params, json!({})),
        Some("lookup_price"),
        extra,
    );
    assert_eq!(answer(&r)["result"]["isError"], false, "{}", r.body);

    let mut headers = vec![JSON];
    headers.extend_from_slice(extra);
    let one = br#"{"jsonrpc":"2.0","id":1,"method":"lookup_price","params":{"sku":"SKU-1001"}}"#;
    let r = http(addr, "POST", "/rpc", &headers, one);
    assert_eq!(r.json()["result"], 12.5, "{}", r.body);
    let batch = br#"[{"jsonrpc":"2.0","id":1,"method":"lookup_price","params":["SKU-1001"]},
                    {"jsonrpc":"2.0","id":2,"method":"lookup_price","params":["SKU-1002"]}]"#;
    let r = http(addr, "POST", "/rpc", &headers, batch);
    assert_eq!(r.json().as_array().map(Vec::len), Some(2), "{}", r.body);
}

#[test]
fn every_http_door_names_its_caller_without_a_token() {
    let dir = tempfile::tempdir().expect("tempdir");
    let audit = dir.path().join("audit.jsonl");
    let served = serve(&policy(&audit, false), &tools(), &[]);
    call_through_every_http_door(served.addr, &[]);
    let found = callers(&entries(&audit, 6));
    // The session's call and task: its number and the client's address.
    for (kind, caller) in &found[..2] {
        assert_eq!(kind, "session");
        assert!(
            caller.starts_with("session ") && caller.contains(" from 127.0.0.1:"),
            "{caller}"
        );
    }
    assert_eq!(found[0].1, found[1].1, "one session, one caller");
    // Without a session (2026-07-28, /rpc): the client's address.
    for (kind, caller) in &found[2..] {
        assert_eq!(kind, "http");
        assert!(caller.starts_with("127.0.0.1:"), "{caller}");
    }
}

#[test]
fn every_http_door_names_the_token() {
    let dir = tempfile::tempdir().expect("tempdir");
    let audit = dir.path().join("audit.jsonl");
    let served = serve(&policy(&audit, true), &tools(), &[]);
    let bearer = format!("Bearer {TOKEN}");
    call_through_every_http_door(served.addr, &[("Authorization", bearer.as_str())]);
    let found = callers(&entries(&audit, 6));
    assert_eq!(
        found,
        vec![("token".to_string(), "agent-1".to_string()); 6],
        "every door names the token"
    );
    // A refused call is recorded with its caller too.
    let r = http(
        served.addr,
        "POST",
        "/rpc",
        &[JSON, ("Authorization", bearer.as_str())],
        br#"{"jsonrpc":"2.0","id":1,"method":"lookup_price","params":{}}"#,
    );
    assert!(r.json()["error"].is_object(), "{}", r.body);
    let refused = entries(&audit, 7).pop().expect("the refusal");
    assert_eq!(refused["outcome"], "invalid-arguments");
    assert_eq!(refused["caller"], "agent-1");
}

#[test]
fn stdio_and_the_command_line_name_their_caller() {
    let dir = tempfile::tempdir().expect("tempdir");
    let audit = dir.path().join("audit.jsonl");
    let policy_path = dir.path().join("airlock.toml");
    std::fs::write(&policy_path, policy(&audit, false)).expect("policy");

    let mut child = Command::new(env!("CARGO_BIN_EXE_airlock"))
        .args(["serve", "--stdio", "--load-wait", "600", "--policy"])
        .arg(&policy_path)
        .arg(component("catalog"))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start airlock");
    let mut stdin = child.stdin.take().expect("stdin");
    let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}});
    let call = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{LOOKUP}}}"#);
    writeln!(stdin, "{init}\n{call}").expect("write");
    drop(stdin);
    assert!(child.wait().expect("wait").success());

    let out = Command::new(env!("CARGO_BIN_EXE_airlock"))
        .args(["call", "--policy"])
        .arg(&policy_path)
        .arg(component("catalog"))
        .args(["lookup_price", "sku=SKU-1001"])
        .output()
        .expect("airlock call");
    assert!(out.status.success(), "{out:?}");

    let found = callers(&entries(&audit, 2));
    assert_eq!(
        found,
        [
            ("stdio".to_string(), "stdio client".to_string()),
            ("cli".to_string(), "airlock call".to_string()),
        ]
    );
}
