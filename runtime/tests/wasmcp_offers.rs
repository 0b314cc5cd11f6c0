//! Resources, prompts and completions of a wasmcp component
//! (`tests/components/wasmcp_resources`: exports wasmcp's `tools`,
//! `resources`, `prompts` and `completions` of `wasmcp:mcp-v20251125`),
//! served as an airlock component's are: listed at load (every page),
//! read, got and completed through MCP, each run read-only, audited,
//! counted in /metrics, and seen by a token only where it lists them; and
//! a component that exports only `resources` (`wasmcp_resources_only`).

use crate::support;

use std::sync::Arc;

use airlock::call::{CallError, Caller};
use airlock::catalog::Kind;
use airlock::observe::Unobserved;
use airlock::offer::{OfferRequest, Offered};
use airlock::policy::Access;
use airlock::tool::ResourceBody;
use serde_json::{Value, json};
use support::http::{Mcp, serve};
use support::test_component;

fn wasmcp() -> Vec<std::path::PathBuf> {
    vec![test_component("wasmcp_resources")]
}

fn names<'a>(list: &'a Value, key: &str, field: &str) -> Vec<&'a str> {
    list["result"][key]
        .as_array()
        .unwrap_or_else(|| panic!("no {key} in {list}"))
        .iter()
        .filter_map(|entry| entry[field].as_str())
        .collect()
}

#[test]
fn a_session_lists_every_page_and_reads_text_blobs_and_templates() {
    let served = serve("", &wasmcp(), &[]);
    let mut mcp = Mcp::connect(served.addr, json!({}), &[]);

    let list = mcp.request("resources/list", json!({}));
    // Both pages of `list-resources` (the second starts at the note), in
    // the catalog's order.
    assert_eq!(
        names(&list, "resources", "uri"),
        [
            "file:///data/note.txt",
            "memo://gone",
            "memo://logo",
            "memo://scribble",
            "memo://today"
        ]
    );
    let today = list["result"]["resources"]
        .as_array()
        .and_then(|r| r.iter().find(|r| r["uri"] == "memo://today"))
        .expect("memo://today");
    assert_eq!(
        today,
        &json!({
            "uri": "memo://today",
            "name": "today",
            "title": "Today's memo",
            "description": "What to remember today.",
            "mimeType": "text/plain",
            "size": 17,
            "annotations": {
                "audience": ["user"],
                "priority": 0.5,
                "lastModified": "2025-11-25T00:00:00Z"
            },
            "icons": [{
                "src": "https://example.com/memo.png",
                "mimeType": "image/png",
                "sizes": ["48x48"]
            }],
            "_meta": {"source": "wasmcp"}
        })
    );

    let text = mcp.request("resources/read", json!({"uri": "memo://today"}));
    assert_eq!(
        text["result"],
        json!({"contents": [{
            "uri": "memo://today",
            "mimeType": "text/plain",
            "text": "remember the milk"
        }]})
    );
    let blob = mcp.request("resources/read", json!({"uri": "memo://logo"}));
    assert_eq!(
        blob["result"],
        json!({"contents": [{
            "uri": "memo://logo",
            "mimeType": "image/png",
            "blob": "iVBORw==",
            "_meta": {"width": 1}
        }]})
    );

    let templates = mcp.request("resources/templates/list", json!({}));
    assert_eq!(
        templates["result"]["resourceTemplates"],
        json!([{
            "uriTemplate": "memo://notes/{id}",
            "name": "note-by-id",
            "title": "Note by id",
            "description": "One note by its number.",
            "mimeType": "text/plain"
        }])
    );
    let note = mcp.request("resources/read", json!({"uri": "memo://notes/7"}));
    assert_eq!(note["result"]["contents"][0]["text"], "note number 7");

    // `none` from read-resource is "not found", in MCP's words.
    let gone = mcp.request("resources/read", json!({"uri": "memo://gone"}));
    assert_eq!(gone["error"]["code"], -32002, "{gone}");
    assert_eq!(gone["error"]["message"], "Resource not found: memo://gone");
    let unknown = mcp.request("resources/read", json!({"uri": "memo://nowhere"}));
    assert_eq!(unknown["error"]["code"], -32002, "{unknown}");
    // Any other error-code is a failed read, with its message, case and
    // code (here: nothing is mounted at /data).
    let failed = mcp.request("resources/read", json!({"uri": "memo://scribble"}));
    assert_eq!(failed["error"]["code"], -32000, "{failed}");
    let message = failed["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("resources/read failed: ")
            && message.contains("cannot write /data/scribbled.txt")
            && message.ends_with("(internal-error, code -32603)"),
        "{message}"
    );

    // The tools beside them are served as before.
    let tools = mcp.request("tools/list", json!({}));
    assert_eq!(names(&tools, "tools", "name"), ["hello"]);

    let metrics = support::http::http(served.addr, "GET", "/metrics", &[], b"");
    for series in [
        r#"airlock_calls_total{tool="resource:memo://today",outcome="ok"} 1"#,
        r#"airlock_calls_total{tool="resource:memo://notes/{id}",outcome="ok"} 1"#,
    ] {
        assert!(
            metrics.body.lines().any(|l| l == series),
            "no {series} in\n{}",
            metrics.body
        );
    }
}

#[test]
fn prompts_get_their_arguments_and_completions_complete_them() {
    let served = serve("", &wasmcp(), &[]);
    let mut mcp = Mcp::connect(served.addr, json!({}), &[]);
    let list = mcp.request("prompts/list", json!({}));
    assert_eq!(
        names(&list, "prompts", "name"),
        ["plain", "refuses", "summarize"]
    );
    let summarize = list["result"]["prompts"]
        .as_array()
        .and_then(|p| p.iter().find(|p| p["name"] == "summarize"))
        .expect("summarize");
    assert_eq!(
        summarize,
        &json!({
            "name": "summarize",
            "title": "Summarize",
            "description": "Asks for a summary of a topic.",
            "arguments": [
                {"name": "topic", "description": "What to summarize", "required": true},
                {"name": "style", "description": "How (brief, detailed, bullet points)", "required": false}
            ]
        })
    );

    let got = mcp.request(
        "prompts/get",
        json!({"name": "summarize", "arguments": {"topic": "WASI", "style": "detailed"}}),
    );
    assert_eq!(
        got["result"],
        json!({
            "description": "A detailed summary of WASI",
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "Summarize WASI in a detailed style."}},
                {"role": "assistant", "content": {"type": "resource", "resource": {
                    "uri": "memo://today", "mimeType": "text/plain", "text": "remember the milk"
                }}}
            ]
        })
    );
    // The catalog checks the declared arguments before the guest runs.
    let missing = mcp.request("prompts/get", json!({"name": "summarize"}));
    assert_eq!(missing["error"]["code"], -32602);
    assert_eq!(
        missing["error"]["message"],
        "prompt \"summarize\" needs the argument topic: add \"topic\": \"…\" to \"arguments\""
    );
    let plain = mcp.request("prompts/get", json!({"name": "plain"}));
    assert_eq!(
        plain["result"],
        json!({"messages": [{"role": "user", "content": {"type": "text", "text": "plain"}}]})
    );
    // The guest's invalid-params is the client's error.
    let refuses = mcp.request("prompts/get", json!({"name": "refuses"}));
    assert_eq!(refuses["error"]["code"], -32602, "{refuses}");
    assert!(
        refuses["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("refuses never likes its arguments")),
        "{refuses}"
    );

    let complete = |mcp: &mut Mcp, reference: Value, name: &str, value: &str, context: Value| {
        let mut params = json!({"ref": reference, "argument": {"name": name, "value": value}});
        if !context.is_null() {
            params["context"] = context;
        }
        mcp.request("completion/complete", params)
    };
    let styles = complete(
        &mut mcp,
        json!({"type": "ref/prompt", "name": "summarize"}),
        "style",
        "b",
        Value::Null,
    );
    assert_eq!(
        styles["result"],
        json!({"completion": {"values": ["brief", "bullet points"], "total": 2, "hasMore": false}})
    );
    let ids = complete(
        &mut mcp,
        json!({"type": "ref/resource", "uri": "memo://notes/{id}"}),
        "id",
        "1",
        json!({"arguments": {"owner": "ada"}}),
    );
    assert_eq!(
        ids["result"]["completion"]["values"],
        json!(["1", "12", r#"context {"owner":"ada"}"#])
    );
    // `none` from complete is no values.
    let topics = complete(
        &mut mcp,
        json!({"type": "ref/prompt", "name": "summarize"}),
        "topic",
        "",
        Value::Null,
    );
    assert_eq!(topics["result"]["completion"]["values"], json!([]));
}

#[test]
fn a_read_runs_read_only_and_is_audited() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    std::fs::create_dir(&data).expect("data");
    std::fs::write(data.join("note.txt"), "note v1").expect("note");
    let audit = dir.path().join("audit.jsonl");
    let policy = format!(
        "audit = {:?}\n[components.wasmcp_resources]\nfolders = [{{ host = {:?}, guest = \"/data\", mode = \"read-write\" }}]\n",
        audit.display().to_string(),
        data.display().to_string()
    );
    let runtime = support::runtime(&policy, &wasmcp());
    let component = runtime.catalog().components()[0].clone();
    assert_eq!(component.kind, Kind::Wasmcp);
    let grant = runtime.grant_for_offers(&component);
    assert_eq!(grant.mounts[0].access, Access::ReadOnly);

    let run = |request: OfferRequest| {
        runtime
            .prepare_offer(Caller::CommandLine, request)
            .and_then(|prepared| prepared.run(Arc::new(Unobserved)))
    };
    let read = |uri: &str| run(OfferRequest::Read { uri: uri.into() });
    match read("file:///data/note.txt") {
        Ok(Offered::Contents(contents)) => {
            assert_eq!(contents[0].body, ResourceBody::Text("note v1".into()));
        }
        other => panic!("{other:?}"),
    }
    let scribble = read("memo://scribble").expect_err("a read may not write");
    let CallError::Run(err) = &scribble else {
        panic!("{scribble:?}");
    };
    assert!(
        err.to_string()
            .contains("cannot write /data/scribbled.txt: Operation not permitted"),
        "{err}"
    );
    assert!(!data.join("scribbled.txt").exists());
    let gone = read("memo://gone").expect_err("not served");
    assert!(matches!(gone, CallError::NotFound(_)), "{gone:?}");
    let got = run(OfferRequest::Prompt {
        name: "plain".into(),
        arguments: Vec::new(),
    });
    assert!(matches!(got, Ok(Offered::Messages(_))), "{got:?}");

    let lines = support::audit_entries(&audit);
    let outcomes = support::audit_outcomes(&lines);
    assert_eq!(
        outcomes,
        [
            ("resource:file:///data/note.txt", "ok"),
            ("resource:memo://scribble", "tool-error"),
            ("resource:memo://gone", "not-found"),
            ("prompt:plain", "ok")
        ]
    );
    assert_eq!(lines[1]["folder_refusals"], 1, "{}", lines[1]);
}

#[test]
fn a_token_sees_only_the_resources_and_prompts_it_lists() {
    use sha2::Digest as _;
    let policy = format!(
        "[[tokens]]\nname = \"reader\"\nsha256 = \"{}\"\ntools = [\"hello\"]\nresources = [\"memo://today\"]\nprompts = [\"plain\"]\n",
        hex::encode(sha2::Sha256::digest(b"reader-secret"))
    );
    let served = serve(&policy, &wasmcp(), &[]);
    let mut reader = Mcp::connect(
        served.addr,
        json!({}),
        &[("Authorization", "Bearer reader-secret")],
    );
    let list = reader.request("resources/list", json!({}));
    assert_eq!(names(&list, "resources", "uri"), ["memo://today"]);
    let prompts = reader.request("prompts/list", json!({}));
    assert_eq!(names(&prompts, "prompts", "name"), ["plain"]);
    let read = reader.request("resources/read", json!({"uri": "memo://today"}));
    assert_eq!(read["result"]["contents"][0]["text"], "remember the milk");
    let hidden = reader.request("resources/read", json!({"uri": "memo://logo"}));
    assert!(hidden.get("error").is_some(), "{hidden}");
    let summarize = reader.request(
        "prompts/get",
        json!({"name": "summarize", "arguments": {"topic": "x"}}),
    );
    assert!(summarize.get("error").is_some(), "{summarize}");
}

/// A component of wasmcp's resources template exports only `resources`:
/// served for what it offers, with no tools.
#[test]
fn a_wasmcp_component_without_tools_is_served_for_its_resources() {
    let only = test_component("wasmcp_resources_only");
    let runtime = support::runtime("", std::slice::from_ref(&only));
    let catalog = runtime.catalog();
    assert_eq!(catalog.components()[0].kind, Kind::Wasmcp);
    assert_eq!(catalog.tools().count(), 0);

    let served = serve("", &[only], &[]);
    let mut mcp = Mcp::connect(served.addr, json!({}), &[]);
    let tools = mcp.request("tools/list", json!({}));
    assert_eq!(tools["result"]["tools"], json!([]), "{tools}");
    let list = mcp.request("resources/list", json!({}));
    assert_eq!(names(&list, "resources", "uri"), ["memo://only"]);
    let read = mcp.request("resources/read", json!({"uri": "memo://only"}));
    assert_eq!(
        read["result"],
        json!({"contents": [{"uri": "memo://only", "text": "the only resource"}]})
    );
}
