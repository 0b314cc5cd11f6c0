//! The params types against what clients send: what is read, what is
//! ignored, and the -32602 each malformed field answers; the result types
//! against the text clients read (key order included).

use serde_json::json;

use super::completion::{CompleteParams, Reference};
use super::lifecycle::{InitializeParams, WithStatelessMeta};
use super::prompts::GetParams;
use super::subscriptions::ListenParams;
use super::tasks::UpdateParams;
use super::tools::{CallParams, TaskAsked};
use super::*;

fn error<P: Params + std::fmt::Debug>(params: Value) -> ErrorObject {
    parse::<P>(params).expect_err("refused")
}

#[test]
fn a_call_is_read_once_and_unknown_fields_are_ignored() {
    let call: CallParams = parse(json!({
        "name": "t", "arguments": {"a": 1}, "task": {"ttl": 5000},
        "_meta": {"progressToken": 7, "x.example/other": true},
        "requestState": "s", "inputResponses": {"k": {}}, "extra": [1, 2]
    }))
    .expect("parsed");
    assert_eq!(call.name, "t");
    assert_eq!(call.arguments, json!({"a": 1}));
    assert_eq!(call.task, Some(TaskAsked::Ttl(Some(5000))));
    assert_eq!(call.progress(), Some(json!(7)));
    assert_eq!(call.retry.request_state.as_deref(), Some("s"));
    assert!(call.retry.input_responses.is_some());
    let bare: CallParams = parse(json!({"name": "t", "_meta": "not an object"})).expect("parsed");
    assert_eq!(bare.arguments, json!({}));
    assert_eq!((bare.task, bare.progress()), (None, None));
    // A state that is not a string verifies as no round does.
    let odd: CallParams = parse(json!({"name": "t", "requestState": 3})).expect("parsed");
    assert_eq!(odd.retry.request_state.as_deref(), Some(""));
}

#[test]
fn a_required_string_names_itself_and_what_it_is() {
    for params in [json!({}), json!({"name": 3}), json!([1, 2]), Value::Null] {
        let err = error::<CallParams>(params);
        assert_eq!(err.code, crate::protocol::jsonrpc::INVALID_PARAMS);
        assert_eq!(err.message, "name (the tool to call) is required");
        assert_eq!(err.data, Some(json!({"parameter": "name"})));
    }
    let err = error::<InitializeParams>(json!({"protocolVersion": 2025}));
    assert_eq!(err.message, "protocolVersion (a string) is required");
}

#[test]
fn task_lifetimes() {
    let read = |task: Value| TaskAsked::read(&task, "ttl");
    assert_eq!(read(json!({})), TaskAsked::Ttl(None));
    assert_eq!(read(json!({"ttl": null})), TaskAsked::Ttl(None));
    assert_eq!(read(json!({"ttl": 1e30})), TaskAsked::Ttl(Some(u64::MAX)));
    for bad in [
        json!({"ttl": -1}),
        json!({"ttl": "1"}),
        json!(true),
        Value::Null,
    ] {
        assert_eq!(read(bad.clone()), TaskAsked::Malformed, "{bad}");
    }
}

#[test]
fn malformed_fields_say_what_to_send() {
    let err = error::<ListParams>(json!({"cursor": 3}));
    assert_eq!(
        (err.message.as_str(), err.data),
        ("Invalid cursor", Some(json!({"parameter": "cursor"})))
    );
    assert_eq!(
        parse::<ListParams>(json!({"cursor": null}))
            .expect("first page")
            .cursor,
        None
    );
    let err = error::<GetParams>(json!({"name": "p", "arguments": {"n": 1}}));
    assert_eq!(err.message, "argument \"n\" must be a string");
    let err = error::<GetParams>(json!({"name": "p", "arguments": [1]}));
    assert_eq!(err.message, "arguments must be an object of strings");
    let err = error::<UpdateParams>(json!({"taskId": "t", "inputResponses": 1}));
    assert_eq!(err.data, Some(json!({"parameter": "inputResponses"})));
    let err = error::<CompleteParams>(json!({"ref": {"type": "ref/prompt"}}));
    assert_eq!(
        err.message,
        "name (the prompt whose argument to complete) is required"
    );
    let err = error::<CompleteParams>(json!({"ref": {"type": "ref/other"}}));
    assert_eq!(err.data, Some(json!({"parameter": "ref"})));
}

#[test]
fn completions_read_their_reference_argument_and_context() {
    let complete: CompleteParams = parse(json!({
        "ref": {"type": "ref/resource", "uri": "file:///{x}"},
        "argument": {"name": "x", "value": "a"},
        "context": {"arguments": {"y": "b"}}
    }))
    .expect("parsed");
    assert_eq!(
        complete.reference,
        Reference::Template("file:///{x}".into())
    );
    assert_eq!(complete.argument_name().expect("named"), "x");
    assert_eq!(complete.argument.value, "a");
    assert_eq!(complete.context, vec![("y".to_string(), "b".to_string())]);
    let empty: CompleteParams = parse(json!({})).expect("checked later");
    assert_eq!(empty.reference, Reference::Missing);
    assert!(empty.argument_name().is_err());
}

#[test]
fn the_stateless_meta_and_subscriptions_are_read_leniently() {
    let with: WithStatelessMeta = serde_json::from_value(json!({
        "name": "big", "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": "no",
        }
    }))
    .expect("parsed");
    assert_eq!(with.meta.protocol_version.as_deref(), Some("2026-07-28"));
    assert!(with.meta.client_capabilities.is_none());
    let listen: ListenParams = parse(json!({"notifications": {
        "toolsListChanged": true, "promptsListChanged": "yes",
        "resourceSubscriptions": ["a://x", 3]
    }}))
    .expect("parsed");
    let n = listen.notifications;
    assert!(n.tools_list_changed && !n.prompts_list_changed && !n.resources_list_changed);
    assert_eq!(n.resource_subscriptions, vec!["a://x".to_string()]);
}

/// The JSON text of a result, as the transport writes it.
fn text(result: impl Serialize) -> String {
    crate::json::to_string(&to_value(result))
}

#[test]
fn results_are_written_as_mcp_has_them_key_for_key() {
    use super::lifecycle::{Implementation, InitializeResult};
    use super::tasks::{Lifetime, RelatedTask, TaskObject};
    use super::tools::ToolError;
    assert_eq!(
        text(ToolError::new("no \"x\"".into())),
        r#"{"content":[{"type":"text","text":"no \"x\""}],"isError":true}"#
    );
    let page = Page {
        key: "prompts",
        items: vec![json!({"name": "b"}), json!({"name": "a"})],
        next_cursor: Some("c".into()),
    };
    assert_eq!(
        text(page),
        r#"{"prompts":[{"name":"b"},{"name":"a"}],"nextCursor":"c"}"#
    );
    let last: Page = Page {
        key: "tools",
        items: vec![],
        next_cursor: None,
    };
    assert_eq!(text(last), r#"{"tools":[]}"#);
    let initialized = InitializeResult {
        protocol_version: "2025-11-25",
        capabilities: json!({"logging": {}}),
        server_info: Implementation::AIRLOCK,
        instructions: "i",
    };
    assert_eq!(
        text(initialized),
        format!(
            r#"{{"protocolVersion":"2025-11-25","capabilities":{{"logging":{{}}}},"serverInfo":{{"name":"airlock","title":"airlock","version":"{}"}},"instructions":"i"}}"#,
            env!("CARGO_PKG_VERSION")
        )
    );
    let result = json!({"isError": false});
    let task = |lifetime| TaskObject {
        task_id: "t1",
        status: "completed",
        created_at: "c".into(),
        last_updated_at: "u".into(),
        lifetime,
        status_message: Some("m"),
        input_requests: None,
        result: Some(&result),
        error: None,
    };
    assert_eq!(
        text(task(Lifetime::Sessions {
            ttl: 5,
            poll_interval: 1
        })),
        r#"{"taskId":"t1","status":"completed","createdAt":"c","lastUpdatedAt":"u","ttl":5,"pollInterval":1,"statusMessage":"m","result":{"isError":false}}"#
    );
    assert_eq!(
        text(task(Lifetime::Stateless {
            ttl_ms: 5,
            poll_interval_ms: 1
        })),
        r#"{"taskId":"t1","status":"completed","createdAt":"c","lastUpdatedAt":"u","ttlMs":5,"pollIntervalMs":1,"statusMessage":"m","result":{"isError":false}}"#
    );
    assert_eq!(text(RelatedTask { task_id: "t1" }), r#"{"taskId":"t1"}"#);
    // A round's requests keep the order they were asked in.
    let ask = |method| InputRequest {
        method,
        params: json!({}),
    };
    let round = InputRequired::new(
        vec![
            ("b".into(), ask("sampling/createMessage")),
            ("a".into(), ask("roots/list")),
        ],
        "s".into(),
    );
    assert_eq!(
        text(round),
        r#"{"resultType":"input_required","inputRequests":{"b":{"method":"sampling/createMessage","params":{}},"a":{"method":"roots/list","params":{}}},"requestState":"s"}"#
    );
}
