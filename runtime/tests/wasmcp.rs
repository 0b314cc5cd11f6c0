//! wasmcp tools components (export `wasmcp:mcp-v20251125/tools`), served
//! without wasmcp's composition: `list-tools` at load (every page), its
//! annotations as binding hints, `call-tool` per call in a fresh instance,
//! results as MCP content; the few imports of wasmcp's composition airlock
//! may answer are stubbed, the others refuse the component by name.

use crate::support;

use airlock::Runtime;
use airlock::call::CallError;
use airlock::catalog::Kind;
use airlock::sandbox::RunError;
use airlock::tool::{Content, Hints, ResourceBody};
use serde_json::json;
use support::{call, call_error, test_component};

fn wasmcp(policy: &str) -> Runtime {
    support::runtime(policy, &[test_component("wasmcp_tools")])
}

#[test]
fn list_tools_at_load_every_page_with_annotations_as_hints() {
    let runtime = wasmcp("");
    let catalog = runtime.catalog();
    assert_eq!(catalog.components()[0].kind, Kind::Wasmcp);
    let names: Vec<&str> = catalog.tools().map(|t| t.info.name.as_str()).collect();
    // Both pages of `list-tools` (the second starts at `reach-out`).
    assert_eq!(
        names,
        [
            "bad-params",
            "bare",
            "echo",
            "fail",
            "ghost",
            "media",
            "reach-out",
            "save-note",
            "sneaky-write"
        ]
    );
    let echo = catalog.tool("echo").expect("echo");
    assert!(echo.own_hints);
    assert_eq!(
        echo.info.hints,
        Hints {
            read_only: true,
            idempotent: true,
            ..Hints::default()
        }
    );
    assert_eq!(
        echo.info.to_mcp(),
        json!({
            "name": "echo",
            "title": "Echo",
            "description": "Echoes the text, as text and as structured content.",
            "inputSchema": {
                "type": "object",
                "properties": {"text": {"type": "string", "description": "What to echo"}},
                "required": ["text"],
            },
            "outputSchema": {
                "type": "object",
                "properties": {"echo": {"type": "string"}},
                "required": ["echo"],
            },
            "annotations": {
                "readOnlyHint": true,
                "destructiveHint": false,
                "idempotentHint": true,
                "openWorldHint": false,
                "title": "Echo",
            },
            "icons": [{"src": "https://example.com/echo.png", "mimeType": "image/png", "sizes": ["48x48"]}],
            "execution": {"taskSupport": "forbidden"},
        })
    );
    // No options at all: a fallback description, and no hints (the
    // strictest sandbox) until the policy declares some.
    let bare = catalog.tool("bare").expect("bare");
    assert!(!bare.own_hints);
    assert_eq!(bare.info.hints, Hints::default());
    assert_eq!(
        bare.info.description,
        "Tool `bare` of a wasmcp component (it declares no description)."
    );
}

#[test]
fn call_tool_results_become_mcp_content() {
    let runtime = wasmcp("");
    let out = call(&runtime, "echo", json!({"text": "grüße"})).expect("echo");
    assert_eq!(out.content, vec![Content::Text("grüße".into())]);
    assert_eq!(out.structured, Some(json!({"echo": "grüße"})));

    let out = call(&runtime, "media", json!({})).expect("media");
    assert_eq!(
        out.content,
        vec![
            Content::Image {
                data: b"\x89PNG".to_vec(),
                mime_type: "image/png".into()
            },
            Content::Audio {
                data: b"RIFF".to_vec(),
                mime_type: "audio/wav".into()
            },
            Content::Link {
                uri: "file:///data/report.csv".into(),
                name: "report".into(),
                title: Some("Report".into()),
                description: None,
                mime_type: Some("text/csv".into()),
                size: Some(42),
            },
            Content::Embedded {
                uri: "memo://today".into(),
                mime_type: Some("text/plain".into()),
                body: ResourceBody::Text("remember the milk".into()),
            },
            Content::Embedded {
                uri: "memo://raw".into(),
                mime_type: None,
                body: ResourceBody::Blob(vec![0, 1, 2]),
            },
        ]
    );
    assert_eq!(out.to_mcp()["content"][0]["data"], "iVBORw==");
}

#[test]
fn errors_are_tool_errors_argument_errors_or_refusals() {
    let runtime = wasmcp("");
    match call_error(&runtime, "fail", json!({})) {
        CallError::Run(RunError::Failed(text)) => assert_eq!(text, "the tool failed on purpose"),
        other => panic!("expected a tool error, got {other:?}"),
    }
    let err = call_error(&runtime, "bad-params", json!({}));
    assert!(err.is_argument_error(), "{err:?}");
    assert_eq!(err.to_string(), "bad-params never likes its parameters");
    match call_error(&runtime, "ghost", json!({})) {
        CallError::Run(RunError::Failed(text)) => assert_eq!(
            text,
            "the component's call-tool does not handle \"ghost\", which its list-tools lists"
        ),
        other => panic!("expected a tool error, got {other:?}"),
    }
    // The tool's own schema is checked before the guest runs.
    assert_eq!(
        call_error(&runtime, "echo", json!({})).to_string(),
        "Missing required argument \"text\"; received: [], expected: [text]"
    );
}

/// `sneaky-write` is annotated read-only: the read-write folder the policy
/// grants is read-only for it, so its write fails. `save-note` declares
/// neither read-only nor destructive: it may create a note, not overwrite
/// one.
#[test]
fn annotations_bind_capabilities() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("old.txt"), "before").expect("seed");
    let runtime = wasmcp(&format!(
        "[components.wasmcp_tools]\nfolders = [{{ host = \"{}\", guest = \"/data\", mode = \"read-write\" }}]\n",
        dir.path().display()
    ));
    match call_error(&runtime, "sneaky-write", json!({"name": "new.txt"})) {
        CallError::Run(RunError::Failed(text)) => {
            assert!(text.starts_with("cannot write new.txt:"), "{text}")
        }
        other => panic!("expected a tool error, got {other:?}"),
    }
    assert!(!dir.path().join("new.txt").exists());

    call(
        &runtime,
        "save-note",
        json!({"name": "new.txt", "text": "fresh"}),
    )
    .expect("created");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("new.txt")).expect("read"),
        "fresh"
    );
    match call_error(
        &runtime,
        "save-note",
        json!({"name": "old.txt", "text": "after"}),
    ) {
        CallError::Run(RunError::Failed(text)) => {
            assert!(text.contains("not permitted"), "{text}")
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(
        std::fs::read_to_string(dir.path().join("old.txt")).expect("read"),
        "before"
    );
}

#[test]
fn the_policy_may_declare_hints_only_where_the_tool_declares_none() {
    let runtime = wasmcp("[components.wasmcp_tools.tools.bare]\nhints = [\"read-only\"]\n");
    assert!(
        runtime
            .catalog()
            .tool("bare")
            .expect("bare")
            .info
            .hints
            .read_only
    );
    let err = support::first_refusal(
        "[components.wasmcp_tools.tools.echo]\nhints = [\"open-world\"]\n",
        &[test_component("wasmcp_tools")],
    );
    assert!(
        err.contains(
            "the policy declares hints for it, but the component (wasmcp) declares its own"
        ),
        "{err}"
    );
    assert!(
        err.contains("[components.wasmcp_tools.tools.echo]"),
        "{err}"
    );
}

/// What a tool gets of wasmcp's composition: no client stream; sending
/// and flushing answer an I/O error, a token never decodes, nothing is
/// authorized.
#[test]
fn stubs_answer_only_what_the_contract_allows() {
    let runtime = wasmcp("");
    let out = call(&runtime, "reach-out", json!({})).expect("reach-out");
    let unexpected = "unexpected: airlock serves this tool without wasmcp's transport: there \
                      is no client stream to send to";
    assert_eq!(
        support::text(&out),
        format!(
            "client stream: none\nsend-message: {unexpected}\nflush-buffer: {unexpected}\n\
             decode: error\nauthorize: false"
        )
    );
}

#[test]
fn an_import_only_wasmcp_provides_refuses_the_component_by_name() {
    let err = support::first_refusal("", &[test_component("wasmcp_middleware")]);
    assert!(
        err.contains(
            "imports function `handle` of `wasmcp:mcp-v20251125/server-handler@0.1.1`, which \
             airlock does not provide: it is middleware"
        ),
        "{err}"
    );
}
