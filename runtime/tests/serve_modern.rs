//! End to end, revision 2026-07-28 (stateless) next to 2025-11-25: the real
//! `airlock serve` binary, over HTTP (a tiny std client) and stdio, with a
//! modern client and a legacy (session) client at the same time, and every
//! header and error rule of the stateless revision.

use crate::support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::http::{ACCEPT, JSON, MODERN, Mcp, answer, body, http, modern, serve};
use support::{component, test_component};

const CONFIRM_POLICY: &str = r#"
[components.catalog.tools.restock]
destructive = "confirm"
"#;

#[test]
fn http_modern_and_legacy_clients_share_one_server() {
    let served = serve(
        CONFIRM_POLICY,
        &[component("catalog"), component("export")],
        &[],
    );
    let addr = served.addr;
    let session = Mcp::connect(addr, json!({}), &[]);

    // Both at the same time: a legacy and a modern client, several calls each.
    let legacy = std::thread::spawn(move || {
        for i in 0..5 {
            let r = session.post(&json!({"jsonrpc":"2.0","id":i + 1,"method":"tools/call",
                        "params":{"name":"lookup_price","arguments":{"sku":"SKU-1001"}}}));
            assert_eq!(r.status, 200, "{}", r.body);
            let a = answer(&r);
            assert_eq!(a["result"]["isError"], false, "{a}");
            assert!(
                a["result"].get("resultType").is_none(),
                "legacy results unchanged"
            );
        }
        session
    });
    let modern_client = std::thread::spawn(move || {
        for i in 0..5 {
            let b = body(
                i + 1,
                "tools/call",
                json!({"name":"lookup_price","arguments":{"sku":"SKU-1001"}}),
                json!({}),
            );
            let r = modern(addr, &b, Some("lookup_price"), &[]);
            assert_eq!(r.status, 200, "{}", r.body);
            assert!(
                r.header("mcp-session-id").is_none(),
                "no session in 2026-07-28"
            );
            let a = answer(&r);
            assert_eq!(a["result"]["resultType"], "complete", "{a}");
            assert_eq!(a["result"]["isError"], false, "{a}");
            assert_eq!(
                a["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
                "airlock"
            );
        }
    });
    let session = legacy.join().expect("legacy client");
    modern_client.join().expect("modern client");

    // server/discover and tools/list.
    let r = modern(
        addr,
        &body(10, "server/discover", json!({}), json!({})),
        None,
        &[],
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let d = r.json()["result"].clone();
    assert_eq!(d["resultType"], "complete");
    assert_eq!(
        d["supportedVersions"],
        json!([MODERN, "2025-11-25", "2025-06-18", "2025-03-26"])
    );
    assert!(d["capabilities"]["tools"].is_object());
    assert!(d["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"].is_object());
    let r = modern(
        addr,
        &body(11, "tools/list", json!({}), json!({})),
        None,
        &[],
    );
    let list = r.json()["result"].clone();
    assert_eq!(list["resultType"], "complete");
    assert_eq!(list["cacheScope"], "public");
    assert!(list["ttlMs"].as_u64().is_some());
    assert_eq!(list["tools"].as_array().map(Vec::len), Some(3));

    // Header rules: 400 with -32020.
    let call = body(
        12,
        "tools/call",
        json!({"name":"lookup_price","arguments":{"sku":"SKU-1001"}}),
        json!({}),
    );
    let cases: Vec<(Vec<(&str, &str)>, &str)> = vec![
        (
            vec![
                JSON,
                ACCEPT,
                ("MCP-Protocol-Version", MODERN),
                ("Mcp-Name", "lookup_price"),
            ],
            "missing Mcp-Method",
        ),
        (
            vec![
                JSON,
                ACCEPT,
                ("MCP-Protocol-Version", MODERN),
                ("Mcp-Method", "tools/list"),
                ("Mcp-Name", "lookup_price"),
            ],
            "Mcp-Method mismatch",
        ),
        (
            vec![
                JSON,
                ACCEPT,
                ("MCP-Protocol-Version", MODERN),
                ("Mcp-Method", "tools/call"),
            ],
            "missing Mcp-Name",
        ),
        (
            vec![
                JSON,
                ACCEPT,
                ("MCP-Protocol-Version", MODERN),
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "restock"),
            ],
            "Mcp-Name mismatch",
        ),
        (
            vec![
                JSON,
                ACCEPT,
                ("MCP-Protocol-Version", "2025-11-25"),
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "lookup_price"),
            ],
            "version header mismatch",
        ),
        (
            vec![
                JSON,
                ACCEPT,
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "lookup_price"),
            ],
            "missing version header",
        ),
    ];
    for (headers, why) in cases {
        let r = http(addr, "POST", "/mcp", &headers, call.to_string().as_bytes());
        assert_eq!(r.status, 400, "{why}: {}", r.body);
        assert_eq!(r.json()["error"]["code"], -32020, "{why}: {}", r.body);
        assert_eq!(r.json()["id"], 12, "{why}");
    }
    // Mcp-Name in the base64 sentinel form is decoded before comparing.
    let r = modern(addr, &call, Some("=?base64?bG9va3VwX3ByaWNl?="), &[]);
    assert_eq!(r.status, 200, "{}", r.body);

    // Unsupported version: 400 with -32022, supported and requested in data.
    let mut old = call.clone();
    old["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = "1900-01-01".into();
    let r = http(
        addr,
        "POST",
        "/mcp",
        &[
            JSON,
            ACCEPT,
            ("MCP-Protocol-Version", "1900-01-01"),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "lookup_price"),
        ],
        old.to_string().as_bytes(),
    );
    assert_eq!(r.status, 400, "{}", r.body);
    let e = r.json()["error"].clone();
    assert_eq!(e["code"], -32022, "{e}");
    assert_eq!(e["data"]["requested"], "1900-01-01");
    assert_eq!(e["data"]["supported"][0], MODERN);
    // The same body under a 2026-07-28 header: the header contradicts the
    // body, a header mismatch (SEP-2575) before any version check.
    let r = modern(addr, &old, Some("lookup_price"), &[]);
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["code"], -32020, "{}", r.body);
    assert_eq!(r.json()["id"], old["id"], "{}", r.body);

    // Missing per-request capabilities: 400 with -32602.
    let mut bare = call.clone();
    bare["params"]["_meta"]
        .as_object_mut()
        .expect("meta")
        .remove("io.modelcontextprotocol/clientCapabilities");
    let r = modern(addr, &bare, Some("lookup_price"), &[]);
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.json()["error"]["code"], -32602);

    // Unknown or removed methods: 404 with -32601.
    for method in ["resources/subscribe", "ping", "tasks/list"] {
        let r = modern(addr, &body(13, method, json!({}), json!({})), None, &[]);
        assert_eq!(r.status, 404, "{method}: {}", r.body);
        assert_eq!(r.json()["error"]["code"], -32601);
    }
    // A batch is not a modern message.
    let batch = json!([call.clone()]);
    let r = http(
        addr,
        "POST",
        "/mcp",
        &[
            JSON,
            ACCEPT,
            ("MCP-Protocol-Version", MODERN),
            ("Mcp-Method", "tools/call"),
        ],
        batch.to_string().as_bytes(),
    );
    assert_eq!(r.status, 400, "{}", r.body);

    // Destructive tool with confirm: without elicitation -32021 (400).
    let restock = |id: u64, caps: Value, extra: Value| {
        let mut params = json!({"name":"restock","arguments":{"sku":"SKU-1001","units":1}});
        if let Some(map) = extra.as_object() {
            for (k, v) in map {
                params[k] = v.clone();
            }
        }
        body(id, "tools/call", params, caps)
    };
    let r = modern(
        addr,
        &restock(20, json!({}), json!({})),
        Some("restock"),
        &[],
    );
    assert_eq!(r.status, 400, "{}", r.body);
    let e = r.json()["error"].clone();
    assert_eq!(e["code"], -32021, "{e}");
    assert!(
        e["data"]["requiredCapabilities"]["elicitation"].is_object(),
        "{e}"
    );
    // With elicitation: input_required, then the retry with the answer runs.
    let caps = json!({"elicitation": {"form": {}}});
    let r = modern(
        addr,
        &restock(21, caps.clone(), json!({})),
        Some("restock"),
        &[],
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let ask = r.json()["result"].clone();
    assert_eq!(ask["resultType"], "input_required", "{ask}");
    let question = &ask["inputRequests"]["airlock-confirm"];
    assert_eq!(question["method"], "elicitation/create");
    assert_eq!(question["params"]["mode"], "form");
    assert!(
        question["params"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("restock")
    );
    let state = ask["requestState"]
        .as_str()
        .expect("requestState")
        .to_string();
    let accept = json!({"requestState": state, "inputResponses": {"airlock-confirm":
        {"action": "accept", "content": {"confirm": true}}}});
    let r = modern(
        addr,
        &restock(22, caps.clone(), accept),
        Some("restock"),
        &[],
    );
    let done = answer(&r);
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    // Confirmed, it ran: what stops it now is the grant (no /data folder
    // in this policy), not the confirmation.
    let ran = done["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(ran.contains("/data"), "{done}");
    // The accepted state is good for one call: a replay is refused.
    let replay = json!({"requestState": state, "inputResponses": {"airlock-confirm":
        {"action": "accept", "content": {"confirm": true}}}});
    let r = modern(
        addr,
        &restock(26, caps.clone(), replay),
        Some("restock"),
        &[],
    );
    let e = r.json()["error"].clone();
    assert_eq!(e["code"], -32602, "{}", r.body);
    assert!(
        e["message"]
            .as_str()
            .unwrap_or("")
            .contains("answered already"),
        "{e}"
    );
    // Declined (with a state of its own): refused, not run.
    let r = modern(
        addr,
        &restock(27, caps.clone(), json!({})),
        Some("restock"),
        &[],
    );
    let state = r.json()["result"]["requestState"]
        .as_str()
        .expect("a new requestState")
        .to_string();
    let decline = json!({"requestState": state, "inputResponses": {"airlock-confirm": {"action": "decline"}}});
    let r = modern(
        addr,
        &restock(23, caps.clone(), decline),
        Some("restock"),
        &[],
    );
    let refused = answer(&r);
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    let why = refused["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("");
    assert!(
        !why.contains("/data") && why != ran,
        "declined before it ran: {refused}"
    );
    // A state for other arguments, or forged, is refused.
    let mut other = restock(
        24,
        caps.clone(),
        json!({"requestState": state,
        "inputResponses": {"airlock-confirm": {"action": "accept", "content": {"confirm": true}}}}),
    );
    other["params"]["arguments"]["units"] = 1000.into();
    let r = modern(addr, &other, Some("restock"), &[]);
    assert_eq!(r.json()["error"]["code"], -32602, "{}", r.body);
    let forged = restock(
        25,
        caps,
        json!({"requestState": "Zm9v.00",
        "inputResponses": {"airlock-confirm": {"action": "accept", "content": {"confirm": true}}}}),
    );
    let r = modern(addr, &forged, Some("restock"), &[]);
    assert_eq!(r.json()["error"]["code"], -32602, "{}", r.body);

    // The legacy session still works after all this.
    let r = session.post(&json!({"jsonrpc":"2.0","id":99,"method":"tools/list"}));
    assert_eq!(r.status, 200);
    assert_eq!(
        r.json()["result"]["tools"].as_array().map(Vec::len),
        Some(3)
    );
}

#[test]
fn http_modern_tasks_extension() {
    let served = serve("", &[test_component("hostile")], &[]);
    let addr = served.addr;
    let list = modern(
        addr,
        &body(1, "tools/list", json!({}), json!({})),
        None,
        &[],
    )
    .json();
    let sleep = list["result"]["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "sleep_task"))
        .cloned()
        .expect("sleep_task");
    assert_eq!(sleep["execution"]["taskSupport"], "required", "{sleep}");
    let call = |id: u64, caps: Value| {
        body(
            id,
            "tools/call",
            json!({"name":"sleep_task","arguments":{"ms":"300"}}),
            caps,
        )
    };
    // Without the extension: -32021 naming it.
    let r = modern(addr, &call(2, json!({})), Some("sleep_task"), &[]);
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.json()["error"]["data"]["requiredCapabilities"]["extensions"]["io.modelcontextprotocol/tasks"].is_object());
    let caps = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let r = modern(addr, &call(3, caps.clone()), Some("sleep_task"), &[]);
    assert_eq!(r.status, 200, "{}", r.body);
    let created = r.json()["result"].clone();
    assert_eq!(created["resultType"], "task", "{created}");
    assert_eq!(created["status"], "working");
    assert!(created["ttlMs"].as_u64().is_some() && created["pollIntervalMs"].as_u64().is_some());
    let id = created["taskId"].as_str().expect("taskId").to_string();
    // Mcp-Name carries the task id for tasks/*.
    let get = body(4, "tasks/get", json!({"taskId": id}), caps.clone());
    let r = modern(addr, &get, Some("wrong"), &[]);
    assert_eq!(r.json()["error"]["code"], -32020);
    let deadline = Instant::now() + Duration::from_secs(30);
    let done = loop {
        let r = modern(addr, &get, Some(&id), &[]);
        assert_eq!(r.status, 200, "{}", r.body);
        let t = r.json()["result"].clone();
        assert_eq!(t["resultType"], "complete");
        if t["status"] == "completed" {
            break t;
        }
        assert!(Instant::now() < deadline, "task never finished: {t}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(done["result"]["isError"], false, "{done}");
    // tasks/update acknowledges; tasks/result and tasks/list do not exist.
    let r = modern(
        addr,
        &body(
            5,
            "tasks/update",
            json!({"taskId": id, "inputResponses": {}}),
            caps.clone(),
        ),
        Some(&id),
        &[],
    );
    assert_eq!(r.json()["result"]["resultType"], "complete", "{}", r.body);
    let r = modern(
        addr,
        &body(6, "tasks/result", json!({"taskId": id}), caps.clone()),
        Some(&id),
        &[],
    );
    assert_eq!(r.status, 404);
    // Cancel a running one: acknowledged, then cancelled.
    let r = modern(
        addr,
        &body(
            7,
            "tools/call",
            json!({"name":"sleep_task","arguments":{"ms":"20000"}}),
            caps.clone(),
        ),
        Some("sleep_task"),
        &[],
    );
    let id2 = r.json()["result"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_string();
    let r = modern(
        addr,
        &body(8, "tasks/cancel", json!({"taskId": id2}), caps.clone()),
        Some(&id2),
        &[],
    );
    assert_eq!(r.json()["result"]["resultType"], "complete", "{}", r.body);
    let r = modern(
        addr,
        &body(9, "tasks/get", json!({"taskId": id2}), caps.clone()),
        Some(&id2),
        &[],
    );
    assert_eq!(r.json()["result"]["status"], "cancelled", "{}", r.body);
    // A legacy session cannot see a stateless task.
    let session = Mcp::connect(addr, json!({}), &[]);
    let r = session
        .post(&json!({"jsonrpc":"2.0","id":10,"method":"tasks/get","params":{"taskId": id}}));
    assert!(r.json()["error"].is_object(), "{}", r.body);
}

#[test]
fn http_subscriptions_listen_streams_list_changed() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::copy(component("catalog"), dir.path().join("catalog.wasm")).expect("copy");
    let served = serve("", &[], &["--watch", dir.path().to_str().expect("utf-8")]);
    let listen = body(
        1,
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
        json!({}),
    );
    let mut stream = TcpStream::connect(served.addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let text = listen.to_string();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: {MODERN}\r\nMcp-Method: subscriptions/listen\r\nContent-Length: {}\r\n\r\n{text}",
        served.addr,
        text.len()
    );
    stream.write_all(head.as_bytes()).expect("write");
    let mut seen = String::new();
    let mut buf = [0u8; 4096];
    let mut copied = false;
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        let n = stream.read(&mut buf).expect("read");
        assert!(n > 0, "stream closed: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
        if !copied && seen.contains("notifications/subscriptions/acknowledged") {
            std::fs::copy(component("export"), dir.path().join("export.wasm")).expect("copy");
            copied = true;
        }
        if seen.contains("notifications/tools/list_changed") {
            break;
        }
    }
    assert!(seen.starts_with("HTTP/1.1 200"), "{seen}");
    assert!(
        seen.to_ascii_lowercase()
            .contains("content-type: text/event-stream"),
        "{seen}"
    );
    let messages: Vec<Value> = seen
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str(d).ok())
        .collect();
    assert_eq!(
        messages[0]["method"],
        "notifications/subscriptions/acknowledged"
    );
    assert_eq!(
        messages[0]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        1
    );
    assert_eq!(
        messages[0]["params"]["notifications"]["toolsListChanged"],
        true
    );
    let changed = messages
        .iter()
        .find(|m| m["method"] == "notifications/tools/list_changed")
        .expect("list_changed");
    assert_eq!(
        changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        1
    );
}

#[test]
fn stdio_modern_and_legacy_requests_interleave() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_airlock"))
        .args(["serve", "--stdio", "--load-wait", "600"])
        .arg(component("catalog"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start airlock");
    let mut stdin = child.stdin.take().expect("stdin");
    let stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let (tx, rx) = mpsc::channel::<Value>();
    std::thread::spawn(move || {
        for line in stdout.lines().map_while(Result::ok) {
            if let Ok(v) = serde_json::from_str(&line) {
                let _ = tx.send(v);
            }
        }
    });
    let mut send = |v: Value| {
        writeln!(stdin, "{v}").expect("write");
        stdin.flush().expect("flush");
    };
    // Messages arrive in any order: keep those not asked for yet.
    let seen = std::cell::RefCell::new(Vec::<Value>::new());
    let wait_id = |rx: &mpsc::Receiver<Value>, id: Value| -> Value {
        let found = seen.borrow().iter().position(|m| m["id"] == id);
        if let Some(at) = found {
            return seen.borrow_mut().remove(at);
        }
        loop {
            let m = rx.recv_timeout(Duration::from_secs(60)).expect("a message");
            if m["id"] == id {
                return m;
            }
            seen.borrow_mut().push(m);
        }
    };
    // A dual-era client probes with server/discover first.
    send(body(1, "server/discover", json!({}), json!({})));
    let d = wait_id(&rx, json!(1));
    assert_eq!(d["result"]["supportedVersions"][0], MODERN, "{d}");
    // A subscription stays open while other requests go on.
    send(body(
        2,
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
        json!({}),
    ));
    // A legacy client in the same process: initialize, then calls.
    send(
        json!({"jsonrpc":"2.0","id":3,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"legacy","version":"1"}}}),
    );
    let init = wait_id(&rx, json!(3));
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    send(json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
    send(
        json!({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"lookup_price","arguments":{"sku":"SKU-1001"}}}),
    );
    send(body(
        5,
        "tools/call",
        json!({"name":"lookup_price","arguments":{"sku":"SKU-1001"}}),
        json!({}),
    ));
    send(body(6, "tools/list", json!({}), json!({})));
    let legacy = wait_id(&rx, json!(4));
    assert_eq!(legacy["result"]["isError"], false, "{legacy}");
    assert!(legacy["result"].get("resultType").is_none());
    let modern_call = wait_id(&rx, json!(5));
    assert_eq!(
        modern_call["result"]["resultType"], "complete",
        "{modern_call}"
    );
    assert_eq!(modern_call["result"]["isError"], false);
    let list = wait_id(&rx, json!(6));
    assert!(list["result"]["ttlMs"].as_u64().is_some());
    // Errors of the stateless revision.
    let mut old = body(7, "tools/list", json!({}), json!({}));
    old["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = "2099-01-01".into();
    send(old);
    let e = wait_id(&rx, json!(7));
    assert_eq!(e["error"]["code"], -32022, "{e}");
    assert_eq!(e["error"]["data"]["requested"], "2099-01-01");
    send(json!({"jsonrpc":"2.0","id":8,"method":"server/discover","params":{}}));
    assert_eq!(wait_id(&rx, json!(8))["error"]["code"], -32602);
    // EOF: the subscription ends with its result, then the process exits.
    drop(stdin);
    let end = wait_id(&rx, json!(2));
    assert_eq!(end["result"]["resultType"], "complete", "{end}");
    assert_eq!(
        end["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        2
    );
    let status = child.wait().expect("exit");
    assert!(status.success());
}
