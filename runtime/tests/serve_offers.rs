//! Resources, prompts and completions served from a component of world
//! `server` (`tests/components/offers`, written with wit-bindgen against
//! the WIT directly): listing, reading text and blobs and templates,
//! prompts with arguments, completions, subscriptions and
//! `host.resource-updated` (only of URIs a read would take to the
//! component, `tests/components/offers_shadow` beside it), a URL
//! elicitation's URL checked, tokens' `resources` and `prompts`, the
//! read-only grant of reads, a lying declaration refused at load, and a
//! 0.1.0 component that offers nothing else.

use crate::support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use airlock::call::{CallError, Caller};
use airlock::observe::Unobserved;
use airlock::offer::{OfferRequest, Offered};
use airlock::policy::Access;
use airlock::tool::ResourceBody;
use base64::Engine as _;
use serde_json::{Value, json};
use support::http::{Mcp, answer, body, modern, serve};
use support::test_component;

fn offers() -> Vec<std::path::PathBuf> {
    vec![test_component("offers")]
}

const APP_MIME: &str = "text/html;profile=mcp-app";

#[test]
fn a_session_lists_and_reads_text_blobs_and_templates() {
    let served = serve("", &offers(), &[]);
    let mut mcp = Mcp::connect(served.addr, json!({}), &[]);
    let init = &mcp.request("ping", json!({}));
    assert!(init.get("result").is_some());

    let list = mcp.request("resources/list", json!({}));
    let uris: Vec<&str> = list["result"]["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .filter_map(|r| r["uri"].as_str())
        .collect();
    assert_eq!(
        uris,
        [
            "test://note",
            "test://scribble",
            "test://slow",
            "test://static-binary",
            "test://static-text",
            "ui://offers/app"
        ]
    );
    let app = &list["result"]["resources"][5];
    assert_eq!(app["mimeType"], APP_MIME);
    assert_eq!(app["_meta"], json!({"ui": {"csp": {"connectDomains": []}}}));
    assert_eq!(list["result"]["resources"][3]["size"], 10);
    assert!(
        list["result"].get("ttlMs").is_none(),
        "hints are 2026-07-28's"
    );

    // Cursors are checked, and one list's cursor is no other's.
    let bad = mcp.request("resources/list", json!({"cursor": "!!"}));
    assert_eq!(bad["error"]["code"], -32602);
    let tool_cursor = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode("after:echo");
    let other = mcp.request("prompts/list", json!({"cursor": tool_cursor}));
    assert_eq!(other["error"]["code"], -32602);
    let after = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode("after:resource:test://static-text");
    let rest = mcp.request("resources/list", json!({"cursor": after}));
    assert_eq!(
        rest["result"]["resources"][0]["uri"], "ui://offers/app",
        "{rest}"
    );
    assert_eq!(
        rest["result"]["resources"].as_array().map(Vec::len),
        Some(1)
    );

    let text = mcp.request("resources/read", json!({"uri": "test://static-text"}));
    assert_eq!(
        text["result"],
        json!({"contents": [{
            "uri": "test://static-text",
            "mimeType": "text/plain",
            "text": "This is the content of the static text resource."
        }]})
    );
    let blob = mcp.request("resources/read", json!({"uri": "test://static-binary"}));
    let content = &blob["result"]["contents"][0];
    assert_eq!(content["mimeType"], "image/png");
    assert!(content.get("text").is_none());
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(content["blob"].as_str().expect("blob"))
        .expect("base64");
    assert_eq!(
        bytes,
        [0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0xff]
    );

    let templates = mcp.request("resources/templates/list", json!({}));
    assert_eq!(
        templates["result"]["resourceTemplates"],
        json!([{
            "uriTemplate": "test://template/{id}/data",
            "name": "template",
            "title": "Data by id",
            "description": "the data of one id",
            "mimeType": "application/json"
        }])
    );
    let data = mcp.request("resources/read", json!({"uri": "test://template/123/data"}));
    assert_eq!(
        data["result"]["contents"][0]["text"],
        r#"{"id":"123","templateTest":true,"data":"Data for ID: 123"}"#
    );

    // Not served (nor matching a template): -32002 in 2025-11-25, with the URI.
    for uri in [
        "test://nope",
        "test://template//data",
        "test://template/1/2/data",
    ] {
        let missing = mcp.request("resources/read", json!({"uri": uri}));
        assert_eq!(missing["error"]["code"], -32002, "{missing}");
        assert_eq!(missing["error"]["data"]["uri"], uri);
        assert!(
            missing["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("resources/list")),
            "{missing}"
        );
    }

    // The tool with a UI names it in its `_meta` (MCP Apps).
    let tools = mcp.request("tools/list", json!({}));
    let bump = &tools["result"]["tools"][0];
    assert_eq!(bump["name"], "bump");
    assert_eq!(
        bump["_meta"],
        json!({"ui": {"resourceUri": "ui://offers/app"}})
    );
    assert!(tools["result"]["tools"][1].get("_meta").is_none());
    // Counted like calls, under the declared URI or template (never a
    // client's text).
    let metrics = support::http::http(served.addr, "GET", "/metrics", &[], b"");
    for series in [
        r#"airlock_calls_total{tool="resource:test://static-text",outcome="ok"} 1"#,
        r#"airlock_calls_total{tool="resource:test://template/{id}/data",outcome="ok"} 1"#,
    ] {
        assert!(
            metrics.body.lines().any(|l| l == series),
            "no {series} in\n{}",
            metrics.body
        );
    }
    let html = mcp.request("resources/read", json!({"uri": "ui://offers/app"}));
    assert_eq!(html["result"]["contents"][0]["mimeType"], APP_MIME);
    assert!(
        html["result"]["contents"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("<button id=\"bump\">"))
    );
}

#[test]
fn prompts_take_their_arguments_and_completions_complete_them() {
    let served = serve("", &offers(), &[]);
    let mut mcp = Mcp::connect(served.addr, json!({}), &[]);
    let list = mcp.request("prompts/list", json!({}));
    let names: Vec<&str> = list["result"]["prompts"]
        .as_array()
        .expect("prompts")
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert_eq!(
        names,
        ["ask_topic", "greeting", "with_image", "with_resource"]
    );
    assert_eq!(
        list["result"]["prompts"][1]["arguments"],
        json!([
            {"name": "name", "description": "the name", "required": true},
            {"name": "style", "description": "the style", "required": false}
        ])
    );

    let formal = mcp.request(
        "prompts/get",
        json!({"name": "greeting", "arguments": {"name": "Ada", "style": "formal"}}),
    );
    assert_eq!(
        formal["result"],
        json!({
            "description": "the greeting prompt",
            "messages": [{"role": "user", "content": {"type": "text", "text": "Good day, Ada."}}]
        })
    );
    let missing = mcp.request("prompts/get", json!({"name": "greeting"}));
    assert_eq!(missing["error"]["code"], -32602);
    assert_eq!(
        missing["error"]["message"],
        "prompt \"greeting\" needs the argument name: add \"name\": \"…\" to \"arguments\""
    );
    let extra = mcp.request(
        "prompts/get",
        json!({"name": "greeting", "arguments": {"name": "A", "mood": "x"}}),
    );
    assert_eq!(
        extra["error"]["message"],
        "prompt \"greeting\" has no argument \"mood\"; its arguments: name, style"
    );
    let unknown = mcp.request("prompts/get", json!({"name": "nope"}));
    assert_eq!(unknown["error"]["code"], -32602);
    assert_eq!(
        unknown["error"]["message"],
        "unknown prompt \"nope\"; the prompts are: ask_topic, greeting, with_image, with_resource"
    );

    let image = mcp.request("prompts/get", json!({"name": "with_image"}));
    let block = &image["result"]["messages"][0]["content"];
    assert_eq!(block["type"], "image");
    assert_eq!(block["mimeType"], "image/png");
    assert_eq!(block["data"], "iVBORw0KGgoA/w==");
    let embedded = mcp.request(
        "prompts/get",
        json!({"name": "with_resource", "arguments": {"resourceUri": "test://static-text"}}),
    );
    assert_eq!(
        embedded["result"]["messages"][0]["content"],
        json!({"type": "resource", "resource": {
            "uri": "test://static-text", "mimeType": "text/plain", "text": "embedded text"
        }})
    );

    let complete = |mcp: &mut Mcp, reference: Value, name: &str, value: &str| {
        mcp.request(
            "completion/complete",
            json!({"ref": reference, "argument": {"name": name, "value": value}}),
        )
    };
    let names = complete(
        &mut mcp,
        json!({"type": "ref/prompt", "name": "greeting"}),
        "name",
        "al",
    );
    assert_eq!(
        names["result"],
        json!({"completion": {"values": ["alice", "albert"], "total": 2, "hasMore": false}})
    );
    let ids = complete(
        &mut mcp,
        json!({"type": "ref/resource", "uri": "test://template/{id}/data"}),
        "id",
        "12",
    );
    assert_eq!(ids["result"]["completion"]["values"], json!(["12", "123"]));
    let wrong = complete(
        &mut mcp,
        json!({"type": "ref/prompt", "name": "greeting"}),
        "mood",
        "",
    );
    assert_eq!(wrong["error"]["code"], -32602);
    assert_eq!(
        wrong["error"]["message"],
        "prompt \"greeting\" has no argument \"mood\"; its arguments: name, style"
    );
}

#[test]
fn revision_2026_07_28_lists_with_cache_hints_and_has_no_resources_subscribe() {
    let served = serve("", &offers(), &[]);
    let ask = |id, method: &str, params: Value, name: Option<&str>| {
        answer(&modern(
            served.addr,
            &body(id, method, params, json!({})),
            name,
            &[],
        ))
    };
    for (method, key) in [
        ("resources/list", "resources"),
        ("resources/templates/list", "resourceTemplates"),
        ("prompts/list", "prompts"),
    ] {
        let listed = ask(1, method, json!({}), None);
        assert!(listed["result"][key].is_array(), "{listed}");
        assert_eq!(listed["result"]["ttlMs"], 60_000, "{method}");
        assert_eq!(listed["result"]["cacheScope"], "public", "{method}");
    }
    let read = ask(
        2,
        "resources/read",
        json!({"uri": "test://static-text"}),
        Some("test://static-text"),
    );
    assert_eq!(read["result"]["ttlMs"], 0);
    assert_eq!(read["result"]["contents"][0]["uri"], "test://static-text");
    // SEP-2164: an unknown resource is -32602 here, with its URI.
    let missing = ask(
        3,
        "resources/read",
        json!({"uri": "test://nope"}),
        Some("test://nope"),
    );
    assert_eq!(missing["error"]["code"], -32602);
    assert_eq!(missing["error"]["data"]["uri"], "test://nope");
    let subscribe = ask(
        4,
        "resources/subscribe",
        json!({"uri": "test://note"}),
        None,
    );
    assert_eq!(subscribe["error"]["code"], -32601);
    let discover = ask(5, "server/discover", json!({}), None);
    let capabilities = &discover["result"]["capabilities"];
    assert_eq!(
        capabilities["resources"],
        json!({"subscribe": true, "listChanged": true})
    );
    assert_eq!(capabilities["prompts"], json!({"listChanged": true}));
    assert_eq!(capabilities["completions"], json!({}));
}

/// `airlock serve --stdio` with its stdout read line by line on a thread.
struct Stdio2 {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<Value>,
}

impl Stdio2 {
    fn start(policy: Option<&std::path::Path>, files: &[std::path::PathBuf]) -> Stdio2 {
        Self::start_with(policy, files, &[])
    }

    fn start_with(
        policy: Option<&std::path::Path>,
        files: &[std::path::PathBuf],
        extra: &[&str],
    ) -> Stdio2 {
        Self::spawn(policy, files, extra, None)
    }

    /// Like [`Self::start_with`]; with a `log`, the runtime's log goes
    /// there, from `info` up.
    fn spawn(
        policy: Option<&std::path::Path>,
        files: &[std::path::PathBuf],
        extra: &[&str],
        log: Option<std::fs::File>,
    ) -> Stdio2 {
        let mut command = Command::new(env!("CARGO_BIN_EXE_airlock"));
        command
            .args(["serve", "--stdio", "--load-wait", "600"])
            .args(extra);
        if let Some(policy) = policy {
            command.arg("--policy").arg(policy);
        }
        match log {
            Some(log) => command.env("AIRLOCK_LOG", "info").stderr(log),
            None => command.stderr(Stdio::null()),
        };
        let mut child = command
            .args(files)
            .env(
                "AIRLOCK_CACHE_DIR",
                support::workspace().join("target/test-cache"),
            )
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start airlock");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Ok(value) = serde_json::from_str::<Value>(&line)
                    && tx.send(value).is_err()
                {
                    return;
                }
            }
        });
        Stdio2 {
            child,
            stdin,
            lines,
        }
    }

    fn send(&mut self, message: Value) {
        writeln!(self.stdin, "{message}").expect("write");
        self.stdin.flush().expect("flush");
    }

    /// Every message until one `want`s (that one last); panics after 30 s.
    fn until(&self, want: impl Fn(&Value) -> bool) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no such message; saw {seen:?}"));
            let done = want(&message);
            seen.push(message);
            if done {
                return seen;
            }
        }
    }

    fn request(&mut self, id: u64, method: &str, params: Value) -> Vec<Value> {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.until(|m| m["id"] == json!(id))
    }
}

impl Drop for Stdio2 {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn updated(messages: &[Value]) -> Vec<&Value> {
    messages
        .iter()
        .filter(|m| m["method"] == "notifications/resources/updated")
        .collect()
}

#[test]
fn subscribers_hear_of_the_updates_a_component_reports_during_a_call() {
    let mut stdio = Stdio2::start(None, &offers());
    stdio.request(
        0,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "t", "version": "1"}}),
    );
    stdio.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let subscribed = stdio.request(1, "resources/subscribe", json!({"uri": "test://note"}));
    assert_eq!(subscribed.last().expect("answer")["result"], json!({}));
    let unknown = stdio.request(2, "resources/subscribe", json!({"uri": "test://nope"}));
    assert_eq!(unknown.last().expect("answer")["error"]["code"], -32002);
    // `bump` reports test://note and test://elsewhere (not its own: dropped).
    let call = stdio.request(3, "tools/call", json!({"name": "bump", "arguments": {}}));
    let mut seen = call.clone();
    if updated(&seen).is_empty() {
        seen.extend(stdio.until(|m| m["method"] == "notifications/resources/updated"));
    }
    let notes = updated(&seen);
    assert_eq!(notes.len(), 1, "{seen:?}");
    assert_eq!(notes[0]["params"], json!({"uri": "test://note"}));
    stdio.request(4, "resources/unsubscribe", json!({"uri": "test://note"}));
    let after = stdio.request(5, "tools/call", json!({"name": "bump", "arguments": {}}));
    // A ping after the call: anything the call sent came before its answer.
    let after = [after, stdio.request(6, "ping", json!({}))].concat();
    assert!(updated(&after).is_empty(), "{after:?}");
}

/// A component announces only URIs a `resources/read` would take to it:
/// `offers_shadow`'s template `test://{name}` matches `test://note`, which
/// `offers` serves as a resource, so the shadow's `resource-updated` for
/// it reaches no subscriber (dropped, with a warning in the runtime's
/// log); for `test://free` (only its template matches) and its own
/// `shadow://own` it does, and `offers` still announces `test://note`.
#[test]
fn a_component_announces_only_the_uris_a_read_would_take_to_it() {
    let files = [test_component("offers"), test_component("offers_shadow")];
    let mut stdio = Stdio2::start(None, &files);
    stdio.request(
        0,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "t", "version": "1"}}),
    );
    stdio.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let uris = ["test://note", "test://free", "shadow://own"];
    for (id, uri) in (1..).zip(uris) {
        let subscribed = stdio.request(id, "resources/subscribe", json!({"uri": uri}));
        assert_eq!(
            subscribed.last().expect("answer")["result"],
            json!({}),
            "{uri}"
        );
    }
    // Reads of the same URIs: test://note reaches offers (which reads
    // /data/note.txt, not granted here), test://free the shadow.
    let note = stdio.request(10, "resources/read", json!({"uri": "test://note"}));
    let note = note.last().expect("answer").to_string();
    assert!(note.contains("cannot read /data/note.txt"), "{note}");
    let free = stdio.request(11, "resources/read", json!({"uri": "test://free"}));
    assert_eq!(
        free.last().expect("answer")["result"]["contents"][0]["text"],
        "the shadow of free"
    );

    let mut seen = Vec::new();
    for (id, uri) in (20..).zip(uris) {
        seen.extend(stdio.request(
            id,
            "tools/call",
            json!({"name": "announce", "arguments": {"uri": uri}}),
        ));
    }
    // A ping after the calls: anything they sent came before their answers.
    seen.extend(stdio.request(30, "ping", json!({})));
    let announced: Vec<&Value> = updated(&seen).iter().map(|m| &m["params"]["uri"]).collect();
    assert_eq!(
        announced,
        [&json!("test://free"), &json!("shadow://own")],
        "{seen:?}"
    );

    // The component a read of test://note reaches may announce it.
    let mut seen = stdio.request(40, "tools/call", json!({"name": "bump", "arguments": {}}));
    seen.extend(stdio.request(41, "ping", json!({})));
    let announced: Vec<&Value> = updated(&seen).iter().map(|m| &m["params"]["uri"]).collect();
    assert_eq!(announced, [&json!("test://note")], "{seen:?}");
}

#[test]
fn a_listen_subscription_carries_updates_of_the_uris_it_names() {
    let mut stdio = Stdio2::start(None, &offers());
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    stdio.send(
        json!({"jsonrpc": "2.0", "id": "listen", "method": "subscriptions/listen",
        "params": {"_meta": meta, "notifications": {
            "resourcesListChanged": true,
            "promptsListChanged": true,
            "resourceSubscriptions": ["test://note", "test://nope", "test://template/7/data"]
        }}}),
    );
    let ack = stdio.until(|m| m["method"] == "notifications/subscriptions/acknowledged");
    let ack = ack.last().expect("ack");
    assert_eq!(
        ack["params"]["notifications"],
        json!({
            "resourcesListChanged": true,
            "promptsListChanged": true,
            "resourceSubscriptions": ["test://note", "test://template/7/data"]
        })
    );
    stdio.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"_meta": meta, "name": "bump", "arguments": {}}}));
    let seen = stdio.until(|m| m["method"] == "notifications/resources/updated");
    let update = seen.last().expect("update");
    assert_eq!(update["params"]["uri"], "test://note");
    assert_eq!(
        update["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "listen"
    );
}

#[test]
fn tokens_see_and_use_only_the_resources_and_prompts_they_list() {
    let hash = |secret: &str| {
        use sha2::Digest as _;
        hex::encode(sha2::Sha256::digest(secret.as_bytes()))
    };
    let policy = format!(
        r#"
[[tokens]]
name = "reader"
sha256 = "{}"
tools = ["echo"]
resources = ["test://static-text", "test://template/{{id}}/data"]
prompts = ["greeting"]

[[tokens]]
name = "tools-only"
sha256 = "{}"
tools = ["echo"]

[[tokens]]
name = "all"
sha256 = "{}"
"#,
        hash("reader-secret"),
        hash("tools-secret"),
        hash("all-secret")
    );
    let served = serve(&policy, &offers(), &[]);
    let mut reader = Mcp::connect(
        served.addr,
        json!({}),
        &[("Authorization", "Bearer reader-secret")],
    );
    let list = reader.request("resources/list", json!({}));
    assert_eq!(
        list["result"]["resources"]
            .as_array()
            .map(|r| r.iter().map(|r| r["uri"].clone()).collect::<Vec<_>>()),
        Some(vec![json!("test://static-text")])
    );
    let templates = reader.request("resources/templates/list", json!({}));
    assert_eq!(
        templates["result"]["resourceTemplates"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
    let read = reader.request("resources/read", json!({"uri": "test://template/9/data"}));
    assert!(read["result"]["contents"].is_array(), "{read}");
    let hidden = reader.request("resources/read", json!({"uri": "test://static-binary"}));
    assert_eq!(
        hidden["error"]["code"], -32002,
        "a resource it may not see does not exist"
    );
    let prompts = reader.request("prompts/list", json!({}));
    assert_eq!(
        prompts["result"]["prompts"].as_array().map(Vec::len),
        Some(1)
    );
    let image = reader.request("prompts/get", json!({"name": "with_image"}));
    assert_eq!(
        image["error"]["message"],
        "unknown prompt \"with_image\"; the prompts are: greeting"
    );
    let complete = reader.request(
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "with_resource"},
               "argument": {"name": "resourceUri", "value": ""}}),
    );
    assert_eq!(complete["error"]["code"], -32602);
    let tools = reader.request("tools/list", json!({}));
    assert_eq!(tools["result"]["tools"].as_array().map(Vec::len), Some(1));

    // A token that lists tools only gets no resource and no prompt.
    let mut tools_only = Mcp::connect(
        served.addr,
        json!({}),
        &[("Authorization", "Bearer tools-secret")],
    );
    let list = tools_only.request("resources/list", json!({}));
    assert_eq!(list["result"]["resources"], json!([]));
    let prompts = tools_only.request("prompts/list", json!({}));
    assert_eq!(prompts["result"]["prompts"], json!([]));
    // A token that lists nothing may use everything.
    let mut all = Mcp::connect(
        served.addr,
        json!({}),
        &[("Authorization", "Bearer all-secret")],
    );
    let list = all.request("resources/list", json!({}));
    assert_eq!(
        list["result"]["resources"].as_array().map(Vec::len),
        Some(6)
    );
}

#[test]
fn a_read_runs_read_only_and_is_audited_with_its_caller() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    std::fs::create_dir(&data).expect("data");
    std::fs::write(data.join("note.txt"), "note v1").expect("note");
    let audit = dir.path().join("audit.jsonl");
    let policy = format!(
        "audit = {:?}\n[components.offers]\nfolders = [{{ host = {:?}, guest = \"/data\", mode = \"read-write\" }}]\nnetwork = [\"example.com\"]\n",
        audit.display().to_string(),
        data.display().to_string()
    );
    let runtime = support::runtime(&policy, &offers());
    let component = runtime.catalog().components()[0].clone();
    let grant = runtime.grant_for_offers(&component);
    assert_eq!(grant.mounts[0].access, Access::ReadOnly);
    assert!(grant.network.is_none(), "no network without offers-network");
    assert!(!grant.asks.any());
    let reasons: Vec<&str> = grant.narrowings.iter().map(|n| n.reason.as_str()).collect();
    assert_eq!(
        reasons,
        [
            "reads, prompts and completions run read-only",
            "the component's offers-network is not set"
        ]
    );

    let run = |uri: &str| {
        runtime
            .prepare_offer(Caller::CommandLine, OfferRequest::Read { uri: uri.into() })
            .and_then(|prepared| prepared.run(Arc::new(Unobserved)))
    };
    match run("test://note") {
        Ok(Offered::Contents(contents)) => {
            assert_eq!(contents[0].body, ResourceBody::Text("note v1".into()));
        }
        other => panic!("{other:?}"),
    }
    let scribble = run("test://scribble").expect_err("a read may not write");
    let CallError::Run(err) = &scribble else {
        panic!("{scribble:?}");
    };
    assert!(
        err.to_string()
            .contains("cannot write /data/scribbled.txt: Operation not permitted"),
        "{err}"
    );
    assert!(!data.join("scribbled.txt").exists());
    let missing = run("test://nope").expect_err("not served");
    assert!(matches!(missing, CallError::NotFound(_)), "{missing:?}");

    let lines = support::audit_entries(&audit);
    let outcomes = support::audit_outcomes(&lines);
    assert_eq!(
        outcomes,
        [
            ("resource:test://note", "ok"),
            ("resource:test://scribble", "tool-error"),
            ("resource:test://nope", "not-found")
        ]
    );
    assert_eq!(lines[0]["caller_kind"], "cli");
    assert_eq!(lines[1]["folder_refusals"], 1, "{}", lines[1]);

    // With offers-network the network the section grants is theirs, safe
    // methods only.
    let policy = format!("{policy}offers-network = true\n");
    let runtime = support::runtime(&policy, &offers());
    let grant = runtime.grant_for_offers(&runtime.catalog().components()[0]);
    let network = grant.network.expect("network");
    assert_eq!(network.methods, airlock::policy::HttpMethods::SafeOnly);
}

#[test]
fn a_lying_declaration_refuses_the_component() {
    let liar = support::first_refusal("", &[test_component("offers_liar")]);
    assert!(
        liar.contains("tool-meta of \"show\"")
            && liar.contains("\"ui://liar/app\", which this component does not serve"),
        "{liar}"
    );
}

#[test]
fn a_0_1_0_component_serves_no_resources_or_prompts() {
    let served = serve("", &[test_component("contract_0_1_0")], &[]);
    let mut mcp = Mcp::connect(served.addr, json!({}), &[]);
    let tools = mcp.request("tools/list", json!({}));
    assert_eq!(tools["result"]["tools"][0]["name"], "old_echo");
    assert!(tools["result"]["tools"][0].get("_meta").is_none());
    assert_eq!(
        mcp.request("resources/list", json!({}))["result"]["resources"],
        json!([])
    );
    assert_eq!(
        mcp.request("prompts/list", json!({}))["result"]["prompts"],
        json!([])
    );
    let complete = mcp.request(
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "x"}, "argument": {"name": "a", "value": ""}}),
    );
    assert_eq!(complete["error"]["code"], -32602);
}

#[test]
fn a_uri_served_twice_refuses_the_later_component() {
    // The conformance component serves test://static-text too.
    let clash = support::first_refusal(
        "",
        &[test_component("conformance"), test_component("offers")],
    );
    assert!(
        clash.starts_with("resource \"test://static-text\" is declared by both")
            && clash.contains("conformance.wasm")
            && clash.contains("offers.wasm"),
        "{clash}"
    );
}

#[test]
fn the_policy_reads_offers_network_and_tokens_lists_where_written() {
    use airlock::policy::Policy;
    let root = support::workspace();
    let err = Policy::parse("[components.offers]\noffers-network = \"yes\"\n", &root)
        .expect_err("not a boolean")
        .to_string();
    assert!(
        err.contains("2:18") && err.contains("expected a boolean"),
        "{err}"
    );
    let err = Policy::parse(
        "[[tokens]]\nname = \"t\"\nsha256 = \"00\"\nresource = [\"x:y\"]\n",
        &root,
    )
    .expect_err("unknown key")
    .to_string();
    assert!(
        err.contains("`resources`") && err.contains("`prompts`"),
        "{err}"
    );
    let sha = "0".repeat(64);
    let policy = Policy::parse(
        &format!(
            "[[tokens]]\nname = \"t\"\nsha256 = \"{sha}\"\nresources = [\"file:///{{name}}\"]\n\n\
             [components.offers]\noffers-network = true\n"
        ),
        &root,
    )
    .expect("policy");
    assert!(policy.offers_network("offers"));
    assert!(!policy.offers_network("other"));
    let token = &policy.tokens()[0];
    assert!(token.allows_resource("file:///a", Some("file:///{name}")));
    assert!(!token.allows_resource("file:///a", None));
    assert!(
        !token.allows_prompt("greeting"),
        "a token that lists anything lists prompts too"
    );
    assert!(!token.allows_tool("echo"));
    assert!(!token.allows_metrics());
}

#[test]
fn check_names_unknown_entries_and_inspect_shows_what_is_offered() {
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = dir.path().join("airlock.toml");
    std::fs::write(
        &policy,
        format!(
            "[[tokens]]\nname = \"r\"\nsha256 = \"{}\"\nresources = [\"test://static-text\", \"test://typo\"]\nprompts = [\"greting\"]\n",
            "0".repeat(64)
        ),
    )
    .expect("policy");
    let offers = test_component("offers");
    let check = support::airlock_command(&["check"])
        .arg(&policy)
        .arg(&offers)
        .output()
        .expect("check");
    let stderr = String::from_utf8_lossy(&check.stderr);
    assert!(!check.status.success());
    assert!(
        stderr.contains(
            "[[tokens]] \"r\" gives the resource \"test://typo\", which no component at hand serves"
        ) && stderr.contains("[[tokens]] \"r\" gives the prompt \"greting\""),
        "{stderr}"
    );
    assert!(
        !stderr.contains("\"test://static-text\", which"),
        "{stderr}"
    );

    std::fs::write(
        &policy,
        "[components.offers]\nnetwork = [\"example.com\"]\n",
    )
    .expect("policy");
    let inspect = support::airlock_command(&["inspect", "--policy"])
        .arg(&policy)
        .arg(&offers)
        .output()
        .expect("inspect");
    let text = String::from_utf8_lossy(&inspect.stdout);
    assert!(inspect.status.success(), "{text}");
    for line in [
        "  resource ui://offers/app — app (text/html;profile=mcp-app)",
        "  resource template test://template/{id}/data — template (application/json)",
        "  prompt greeting(name, style?)",
        "    _meta: {\"ui\":{\"resourceUri\":\"ui://offers/app\"}}",
        "  reads, prompts and completions:",
        "      narrowed network: example.com → none (the component's offers-network is not set)",
    ] {
        assert!(text.lines().any(|l| l == line), "no {line:?} in\n{text}");
    }
    let json = support::airlock_command(&["inspect", "--json", "--policy"])
        .arg(&policy)
        .arg(&offers)
        .output()
        .expect("inspect --json");
    let shown: Value = serde_json::from_slice(&json.stdout).expect("json");
    let offered = &shown["components"][0]["offers"];
    assert_eq!(offered["resources"].as_array().map(Vec::len), Some(6));
    assert_eq!(offered["prompts"][0]["name"], "greeting");
    assert_eq!(offered["completions"], true);
    assert!(offered["grant"].is_object());
}

#[test]
fn a_reload_that_brings_resources_and_prompts_tells_the_clients() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::copy(
        test_component("contract_0_1_0"),
        dir.path().join("contract_0_1_0.wasm"),
    )
    .expect("copy");
    let mut stdio = Stdio2::start_with(None, &[dir.path().to_path_buf()], &["--watch"]);
    stdio.request(
        0,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "t", "version": "1"}}),
    );
    stdio.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let before = stdio.request(1, "resources/list", json!({}));
    assert_eq!(
        before.last().expect("answer")["result"]["resources"],
        json!([])
    );
    std::fs::copy(test_component("offers"), dir.path().join("offers.wasm")).expect("copy");
    let mut seen = Vec::new();
    for method in [
        "notifications/resources/list_changed",
        "notifications/prompts/list_changed",
    ] {
        if !seen.iter().any(|m: &Value| m["method"] == method) {
            seen.extend(stdio.until(|m| m["method"] == method));
        }
    }
    assert!(
        seen.iter()
            .any(|m| m["method"] == "notifications/tools/list_changed"),
        "{seen:?}"
    );
    let after = stdio.request(2, "resources/list", json!({}));
    assert_eq!(
        after.last().expect("answer")["result"]["resources"]
            .as_array()
            .map(Vec::len),
        Some(6)
    );
    // A reload that changes no resource or prompt says nothing of them.
    std::fs::copy(test_component("plain"), dir.path().join("plain.wasm")).expect("copy");
    let more = stdio.until(|m| m["method"] == "notifications/tools/list_changed");
    let more = [more, stdio.request(3, "ping", json!({}))].concat();
    assert!(
        !more
            .iter()
            .any(|m| m["method"] == "notifications/resources/list_changed"),
        "{more:?}"
    );
}

#[test]
fn a_prompt_asks_the_user_where_the_policy_grants_it_in_both_revisions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = dir.path().join("airlock.toml");
    let audit = dir.path().join("audit.jsonl");
    std::fs::write(
        &policy,
        format!("audit = {audit:?}\n[components.offers]\nask = [\"elicit\"]\n"),
    )
    .expect("policy");
    let mut stdio = Stdio2::start(Some(&policy), &offers());
    stdio.request(
        0,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
               "clientInfo": {"name": "t", "version": "1"}}),
    );
    stdio.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    // In a session the request goes to the client while the prompt runs.
    stdio.send(json!({"jsonrpc": "2.0", "id": 1, "method": "prompts/get",
                      "params": {"name": "ask_topic"}}));
    let asked = stdio.until(|m| m["method"] == "elicitation/create");
    let asked = asked.last().expect("elicitation");
    assert_eq!(
        asked["params"]["message"],
        "What should the prompt be about?"
    );
    stdio.send(json!({"jsonrpc": "2.0", "id": asked["id"],
                      "result": {"action": "accept", "content": {"topic": "tides"}}}));
    let got = stdio.until(|m| m["id"] == json!(1));
    assert_eq!(
        got.last().expect("answer")["result"]["messages"][0]["content"]["text"],
        r#"Write about {"topic":"tides"}"#
    );

    // In 2026-07-28 it is a round: input_required, then the retry.
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    });
    let first = stdio.request(
        2,
        "prompts/get",
        json!({"_meta": meta, "name": "ask_topic"}),
    );
    let round = &first.last().expect("answer")["result"];
    assert_eq!(round["resultType"], "input_required", "{round}");
    let requests = round["inputRequests"].as_object().expect("inputRequests");
    let (key, request) = requests.iter().next().expect("one request");
    assert_eq!(request["method"], "elicitation/create");
    let retry = stdio.request(
        3,
        "prompts/get",
        json!({"_meta": meta, "name": "ask_topic",
               "inputResponses": {key.as_str(): {"action": "accept", "content": {"topic": "waves"}}},
               "requestState": round["requestState"]}),
    );
    let done = &retry.last().expect("answer")["result"];
    assert_eq!(done["resultType"], "complete", "{done}");
    assert_eq!(
        done["messages"][0]["content"]["text"],
        r#"Write about {"topic":"waves"}"#
    );
    // The state answered its retry: a second one is refused.
    let again = stdio.request(
        4,
        "prompts/get",
        json!({"_meta": meta, "name": "ask_topic",
               "inputResponses": {key.as_str(): {"action": "accept", "content": {"topic": "x"}}},
               "requestState": round["requestState"]}),
    );
    assert_eq!(again.last().expect("answer")["error"]["code"], -32602);

    // Every request to the client is in the audit log, as a tool call's
    // are: in the prompt's own entry, what was asked and how it ended.
    let entries = support::audit_entries(&audit);
    let asked: Vec<(&str, Vec<(&str, &str)>)> = entries
        .iter()
        .filter(|e| e["tool"] == "prompt:ask_topic")
        .map(|e| {
            let asks = e["asks"]
                .as_array()
                .unwrap_or_else(|| panic!("no asks in {e}"))
                .iter()
                .map(|a| {
                    assert_eq!(
                        a["params"]["message"], "What should the prompt be about?",
                        "{a}"
                    );
                    (
                        a["method"].as_str().unwrap_or(""),
                        a["outcome"].as_str().unwrap_or(""),
                    )
                })
                .collect();
            (e["outcome"].as_str().unwrap_or(""), asks)
        })
        .collect();
    assert_eq!(
        asked,
        [
            ("ok", vec![("elicitation/create", "answered")]),
            ("input-required", vec![("elicitation/create", "next-round")]),
            ("ok", vec![("elicitation/create", "answered")]),
        ],
        "{entries:?}"
    );
}

/// A URL elicitation goes out only as a web page the user may be sent to:
/// `https:` (or `http:` to this machine) on a host `elicit-url-hosts`
/// lists. Anything else — `javascript:` in any case, `data:`, `file:`,
/// `vbscript:`, a user:pass@ URL, a host not listed — is refused before the
/// client hears of it, alone or in a `host.ask` batch, in a session and in
/// a 2026-07-28 round alike, and the audit log records the refusal.
#[test]
fn a_url_elicitation_sends_the_user_only_to_a_web_page_in_both_revisions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = dir.path().join("airlock.toml");
    let audit = dir.path().join("audit.jsonl");
    std::fs::write(
        &policy,
        format!(
            "audit = {audit:?}\n[components.offers]\nask = [\"elicit\"]\n\
             elicit-url-hosts = [\"*.example.org\"]\n"
        ),
    )
    .expect("policy");
    let mut stdio = Stdio2::start(Some(&policy), &offers());
    stdio.request(
        0,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"url": {}}},
               "clientInfo": {"name": "t", "version": "1"}}),
    );
    stdio.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let refused = [
        "javascript:alert(document.cookie)",
        "JaVaScRiPt:alert(1)",
        "data:text/html,<script>alert(1)</script>",
        "file:///etc/passwd",
        "vbscript:msgbox(1)",
        "http://pay.example.org/",
        "https://user:pass@pay.example.org/",
        "https://evil.example/",
    ];
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"url": {}}},
    });
    let mut id = 100;
    for url in refused {
        for batch in [false, true] {
            let arguments = json!({"url": url, "batch": batch});
            // In a session: the call ends, and no request went out.
            id += 1;
            stdio.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                              "params": {"name": "open_link", "arguments": arguments}}));
            let seen = stdio.until(|m| m["id"] == json!(id) && m.get("method").is_none());
            assert!(
                !seen.iter().any(|m| m["method"] == "elicitation/create"),
                "{url}: {seen:?}"
            );
            let result = &seen.last().expect("answer")["result"];
            assert_eq!(result["isError"], true, "{url}: {result}");
            let text = result["content"][0]["text"].as_str().unwrap_or("");
            assert!(
                text.starts_with("cannot ask: AskError::Denied(\"the user may not be sent there: "),
                "{url}: {text}"
            );
            // In 2026-07-28: no input_required round, the call's own answer.
            id += 1;
            let first = stdio.request(
                id,
                "tools/call",
                json!({"_meta": meta, "name": "open_link", "arguments": arguments}),
            );
            let round = &first.last().expect("answer")["result"];
            assert_eq!(round["resultType"], "complete", "{url}: {round}");
            assert_eq!(round["isError"], true, "{url}: {round}");
        }
    }

    // A page on a listed host goes out, as it was checked.
    stdio.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "open_link",
                                 "arguments": {"url": "HTTPS://Pay.Example.org/checkout"}}}));
    let asked = stdio.until(|m| m["method"] == "elicitation/create");
    let asked = asked.last().expect("elicitation");
    assert_eq!(asked["params"]["mode"], "url");
    assert_eq!(asked["params"]["url"], "https://pay.example.org/checkout");
    stdio.send(json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept"}}));
    let done = stdio.until(|m| m["id"] == json!(1) && m.get("method").is_none());
    assert_eq!(
        done.last().expect("answer")["result"]["content"][0]["text"],
        "opened"
    );
    let first = stdio.request(
        2,
        "tools/call",
        json!({"_meta": meta, "name": "open_link",
               "arguments": {"url": "https://pay.example.org/checkout", "batch": true}}),
    );
    let round = &first.last().expect("answer")["result"];
    assert_eq!(round["resultType"], "input_required", "{round}");
    assert_eq!(
        round["inputRequests"]["link"]["params"]["url"], "https://pay.example.org/checkout",
        "{round}"
    );
    drop(stdio);

    // The audit log keeps each refused request, as asked, and its outcome.
    let entries = support::audit_entries(&audit);
    let denied: Vec<&str> = entries
        .iter()
        .filter(|e| e["tool"] == "open_link")
        .flat_map(|e| e["asks"].as_array().cloned().unwrap_or_default())
        .filter(|a| a["outcome"] == "denied")
        .filter_map(|a| a["params"]["url"].as_str().map(str::to_string))
        .map(|url| refused.iter().find(|r| **r == url).copied().unwrap_or(""))
        .collect();
    assert_eq!(denied.len(), refused.len() * 4, "{entries:?}");
    assert!(!denied.contains(&""), "{entries:?}");
}

#[test]
fn a_prompt_asks_nothing_without_the_grant() {
    let served = serve("", &offers(), &[]);
    let mut mcp = Mcp::connect(served.addr, json!({"elicitation": {}}), &[]);
    let denied = mcp.request("prompts/get", json!({"name": "ask_topic"}));
    assert_eq!(denied["error"]["code"], -32000, "{denied}");
    let message = denied["error"]["message"].as_str().unwrap_or("");
    assert!(
        message.starts_with("prompts/get failed: cannot ask: AskError::Denied(")
            && message.contains("it needs `ask = [\\\"elicit\\\"]`"),
        "{message}"
    );
}

#[test]
fn a_read_in_flight_is_waited_for_and_stopped_by_the_shutdown() {
    let policy = "[components.offers]\nlimits = { time = \"60s\" }\n";
    let mut served = serve(policy, &offers(), &["--grace", "1"]);
    let mcp = Mcp::connect(served.addr, json!({}), &[]);
    let reading = std::thread::spawn(move || {
        mcp.post(
            &json!({"jsonrpc": "2.0", "id": "slow", "method": "resources/read",
                         "params": {"uri": "test://slow"}}),
        )
    });
    std::thread::sleep(Duration::from_millis(500));
    support::terminate(served.child.id());
    let reply = reading.join().expect("thread");
    let answer = reply
        .events()
        .into_iter()
        .chain(serde_json::from_str::<Value>(&reply.body).ok())
        .find(|m| m["id"] == "slow")
        .unwrap_or_else(|| panic!("no answer to the read: {}", reply.body));
    let message = answer["error"]["message"].as_str().unwrap_or("");
    assert!(message.contains("shutting down"), "{answer}");
    assert_eq!(support::wait_for_exit(&mut served.child).code(), Some(0));
}

/// A component of world `server` with no tools (`tests/components/offers_only`)
/// is served for its resources, template, prompt and completions, under its
/// policy section, and counted by `/readyz` and `airlock inspect`; a reload
/// brings it and takes it away. One that declares nothing at all
/// (`offers_none`) is refused, saying what to export.
#[test]
fn a_component_without_tools_is_served_for_what_it_offers() {
    let only = test_component("offers_only");
    let served = serve(
        "[components.offers_only]\noffers-network = false\n",
        std::slice::from_ref(&only),
        &[],
    );
    let ready = support::http::http(served.addr, "GET", "/readyz", &[], b"");
    assert_eq!(
        (ready.status, ready.body.as_str()),
        (
            200,
            "ready: 0 tool(s), 1 resource(s), 1 resource template(s), 1 prompt(s)\n"
        )
    );
    let mut mcp = Mcp::connect(served.addr, json!({}), &[]);
    assert_eq!(
        mcp.request("tools/list", json!({}))["result"]["tools"],
        json!([])
    );
    let list = mcp.request("resources/list", json!({}));
    assert_eq!(list["result"]["resources"][0]["uri"], "only://readme");
    assert_eq!(
        list["result"]["resources"].as_array().map(Vec::len),
        Some(1)
    );
    let templates = mcp.request("resources/templates/list", json!({}));
    assert_eq!(
        templates["result"]["resourceTemplates"][0]["uriTemplate"],
        "only://notes/{name}"
    );
    let read = mcp.request("resources/read", json!({"uri": "only://notes/monday"}));
    assert_eq!(read["result"]["contents"][0]["text"], "the note monday");
    let prompt = mcp.request(
        "prompts/get",
        json!({"name": "summarize", "arguments": {"topic": "the week"}}),
    );
    assert_eq!(
        prompt["result"]["messages"][0]["content"]["text"],
        "Summarize the week."
    );
    let complete = mcp.request(
        "completion/complete",
        json!({"ref": {"type": "ref/resource", "uri": "only://notes/{name}"},
               "argument": {"name": "name", "value": "mo"}}),
    );
    assert_eq!(
        complete["result"]["completion"]["values"],
        json!(["monday", "moving"])
    );
    drop(served);

    let inspect = support::airlock_command(&["inspect", "--json"])
        .arg(&only)
        .output()
        .expect("inspect");
    assert!(inspect.status.success(), "{inspect:?}");
    let shown: Value = serde_json::from_slice(&inspect.stdout).expect("json");
    assert_eq!(shown["components"][0]["tools"], json!([]));
    assert_eq!(
        shown["components"][0]["offers"]["resources"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
    assert_eq!(
        shown["components"][0]["offers"]["prompts"][0]["name"],
        "summarize"
    );

    // A tool section names a tool it does not have: refused, saying why.
    let section = support::first_refusal(
        "[components.offers_only.tools.summarize]\nfolders = []\n",
        std::slice::from_ref(&only),
    );
    assert!(
        section.contains(
            "names no tool of offers_only (it declares none: it offers only \
                          resources or prompts, which [components.offers_only] itself grants)"
        ),
        "{section}"
    );
    let nothing = support::first_refusal("", &[test_component("offers_none")]);
    assert!(
        nothing.contains("offers_none.wasm: declares no tools and offers no resources, templates or prompts; export at least one tool"),
        "{nothing}"
    );

    // Reloads bring it and take it away, telling the clients each time.
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::copy(test_component("plain"), dir.path().join("plain.wasm")).expect("copy");
    let mut stdio = Stdio2::start_with(None, &[dir.path().to_path_buf()], &["--watch"]);
    stdio.request(
        0,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "t", "version": "1"}}),
    );
    stdio.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let listed = |stdio: &mut Stdio2, id: u64| {
        stdio
            .request(id, "resources/list", json!({}))
            .last()
            .expect("answer")["result"]["resources"]
            .clone()
    };
    assert_eq!(listed(&mut stdio, 1), json!([]));
    std::fs::copy(&only, dir.path().join("offers_only.wasm")).expect("copy");
    stdio.until(|m| m["method"] == "notifications/prompts/list_changed");
    assert_eq!(listed(&mut stdio, 2)[0]["uri"], "only://readme");
    std::fs::remove_file(dir.path().join("offers_only.wasm")).expect("remove");
    stdio.until(|m| m["method"] == "notifications/prompts/list_changed");
    assert_eq!(listed(&mut stdio, 3), json!([]));
    let prompts = stdio.request(4, "prompts/list", json!({}));
    assert_eq!(
        prompts.last().expect("answer")["result"]["prompts"],
        json!([])
    );
}

/// A prompt's request to the client that its grant refuses leaves in the
/// runtime's log what a tool call's leaves: a warning naming what was
/// entered, its call id and the key that would allow it, and the line of
/// its end — one path records every entry into a guest.
#[test]
fn a_refused_request_of_a_prompt_is_a_warning_in_the_log_as_a_tool_calls_is() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log_path = dir.path().join("airlock.log");
    let log = std::fs::File::create(&log_path).expect("log file");
    let mut stdio = Stdio2::spawn(None, &offers(), &[], Some(log));
    stdio.request(
        0,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
               "clientInfo": {"name": "t", "version": "1"}}),
    );
    stdio.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let prompt = stdio.request(1, "prompts/get", json!({"name": "ask_topic"}));
    assert_eq!(
        prompt.last().expect("answer")["error"]["code"],
        -32000,
        "{prompt:?}"
    );
    let call = stdio.request(
        2,
        "tools/call",
        json!({"name": "open_link", "arguments": {"url": "https://example.com/"}}),
    );
    assert_eq!(
        call.last().expect("answer")["result"]["isError"],
        true,
        "{call:?}"
    );
    // Both are logged before they are answered: the log is complete.
    drop(stdio);
    let text = std::fs::read_to_string(&log_path).expect("log");
    for entered in ["prompt:ask_topic", "open_link"] {
        let lines: Vec<&str> = text.lines().filter(|l| l.contains(entered)).collect();
        let warning = lines
            .iter()
            .find(|l| l.contains("WARN"))
            .unwrap_or_else(|| panic!("no warning naming {entered} in:\n{text}"));
        assert!(
            warning.contains("refused an elicitation/create request")
                && warning.contains("add \"elicit\" to `ask`")
                && warning.contains("call="),
            "{warning}"
        );
        assert!(
            lines.iter().any(|l| l.contains("call ended")),
            "no end of {entered} in:\n{text}"
        );
    }
}

/// A component's reads, prompts and completions share one place under its
/// section's `limits.concurrency`, as a tool's calls share the tool's: over
/// it they wait in a queue of four times the limit; one that finds the
/// queue full, or waits its whole `limits.time`, is refused `busy` (and
/// audited so); a place given back lets the next one run.
#[test]
fn reads_and_prompts_take_places_under_the_components_concurrency_limit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let audit = dir.path().join("audit.jsonl");
    let policy = format!(
        "audit = {:?}\n[components.offers]\nlimits = {{ concurrency = 1, time = \"1s\" }}\n",
        audit.display().to_string()
    );
    let runtime = support::runtime(&policy, &offers());
    let read = || {
        runtime.prepare_offer(
            Caller::CommandLine,
            OfferRequest::Read {
                uri: "test://static-text".into(),
            },
        )
    };
    let first = read().expect("the one place");
    let mut queued: Vec<_> = (0..4)
        .map(|n| read().unwrap_or_else(|e| panic!("{n}: {e}")))
        .collect();
    let full = read().map(|_| ()).expect_err("the queue is full");
    assert!(
        full.to_string()
            .starts_with("busy: offers (reads, prompts and completions) runs 1 calls"),
        "{full}"
    );
    // A prompt takes a place among the same.
    let prompt = runtime
        .prepare_offer(
            Caller::CommandLine,
            OfferRequest::Prompt {
                name: "greeting".into(),
                arguments: vec![("name".into(), "Ada".into())],
            },
        )
        .map(|_| ())
        .expect_err("the queue is full for prompts too");
    assert_eq!(prompt.kind(), "busy", "{prompt}");
    // One that waits its whole limits.time never runs.
    let waited = queued
        .pop()
        .expect("queued")
        .run(Arc::new(Unobserved))
        .expect_err("it waited in vain");
    assert_eq!(waited.kind(), "busy", "{waited}");
    // The place given back, the next in the queue runs.
    drop(first);
    match queued.pop().expect("queued").run(Arc::new(Unobserved)) {
        Ok(Offered::Contents(contents)) => {
            assert_eq!(
                contents[0].body,
                ResourceBody::Text("This is the content of the static text resource.".into())
            );
        }
        other => panic!("{other:?}"),
    }
    drop(queued);
    let entries = support::audit_entries(&audit);
    let outcomes: Vec<&str> = entries
        .iter()
        .map(|e| e["outcome"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(outcomes, ["busy", "busy", "busy", "ok"], "{entries:?}");
    assert_eq!(
        entries[0]["tool"], "resource:test://static-text",
        "{}",
        entries[0]
    );
}
