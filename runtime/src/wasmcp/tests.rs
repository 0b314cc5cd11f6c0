use wasmtime::component::Val;

use super::value::{Page, call_result, message_context, stub_answer, tools_page};
use super::*;

fn s(text: &str) -> Val {
    Val::String(text.into())
}

fn some(v: Val) -> Val {
    Val::Option(Some(Box::new(v)))
}

fn none() -> Val {
    Val::Option(None)
}

fn record(fields: Vec<(&str, Val)>) -> Val {
    Val::Record(fields.into_iter().map(|(n, v)| (n.into(), v)).collect())
}

fn case(name: &str, payload: Val) -> Val {
    Val::Variant(name.into(), Some(Box::new(payload)))
}

fn ok(v: Val) -> Val {
    Val::Result(Ok(Some(Box::new(v))))
}

fn bytes(data: &[u8]) -> Val {
    Val::List(data.iter().map(|b| Val::U8(*b)).collect())
}

fn annotations(read_only: Option<bool>, open_world: Option<bool>) -> Val {
    let hint = |h: Option<bool>| h.map_or_else(none, |b| some(Val::Bool(b)));
    record(vec![
        ("title", some(s("Annotated title"))),
        ("read-only-hint", hint(read_only)),
        ("destructive-hint", none()),
        ("idempotent-hint", none()),
        ("open-world-hint", hint(open_world)),
    ])
}

fn tool(name: &str, options: Val) -> Val {
    record(vec![
        ("name", s(name)),
        ("input-schema", s(r#"{"type":"object"}"#)),
        ("options", options),
    ])
}

fn options(annotations: Val) -> Val {
    some(record(vec![
        ("meta", none()),
        ("annotations", annotations),
        ("description", some(s("Does it."))),
        ("output-schema", none()),
        ("title", none()),
        ("icons", none()),
    ]))
}

fn page(tools: Vec<Val>, next: Option<&str>) -> Val {
    ok(record(vec![
        ("meta", none()),
        ("next-cursor", next.map_or_else(none, |c| some(s(c)))),
        ("tools", Val::List(tools)),
    ]))
}

fn text_block(text: Val) -> Val {
    case("text", record(vec![("text", text), ("options", none())]))
}

fn result(content: Vec<Val>, is_error: Option<bool>, structured: Option<&str>) -> Val {
    ok(some(record(vec![
        ("meta", none()),
        ("content", Val::List(content)),
        (
            "is-error",
            is_error.map_or_else(none, |b| some(Val::Bool(b))),
        ),
        (
            "structured-content",
            structured.map_or_else(none, |j| some(s(j))),
        ),
    ])))
}

#[test]
fn only_the_tools_of_the_2025_11_25_package_at_0_1_are_served() {
    assert!(is_tools_export("wasmcp:mcp-v20251125/tools@0.1.1"));
    assert!(is_tools_export("wasmcp:mcp-v20251125/tools@0.1.0"));
    assert!(!is_tools_export("wasmcp:mcp-v20251125/tools@0.2.0"));
    assert!(!is_tools_export("wasmcp:mcp-v20251125/resources@0.1.1"));
    assert!(!is_tools_export("wasmcp:mcp/tools-capability@0.4.0"));
    assert_eq!(
        interface("wasmcp:mcp-v20251125/server-io@0.1.7"),
        Some("server-io")
    );
    assert_eq!(interface("wasmcp:auth/types@0.1.1"), None);
}

#[test]
fn stubs_only_where_the_contract_allows_a_refusal() {
    let io = "wasmcp:mcp-v20251125/server-io@0.1.1";
    let auth = "wasmcp:mcp-v20251125/server-auth@0.1.0";
    assert_eq!(stub(io, "send-message"), Some(Stub::IoError));
    assert_eq!(stub(auth, "authorize"), Some(Stub::Deny));
    assert_eq!(stub(auth, "decode"), Some(Stub::NoClaims));
    assert_eq!(stub("wasmcp:auth/helpers@0.1.1", "has-scope"), None);
    assert!(check_import(io, "flush-buffer", true).is_ok());
    let err =
        check_import("wasmcp:mcp-v20251125/sessions@0.1.1", "session", false).expect_err("refused");
    assert!(
        err.starts_with("imports resource `session` of `wasmcp:mcp-v20251125/sessions@0.1.1`"),
        "{err}"
    );
    assert!(
        err.contains("sessions live in wasmcp's composition"),
        "{err}"
    );
    let err = check_import("wasmcp:keyvalue/store@0.1.0", "open", true).expect_err("refused");
    assert!(
        err.contains("only wasmcp's composition provides it"),
        "{err}"
    );

    assert_eq!(stub_answer(Stub::Deny), Val::Bool(false));
    assert_eq!(stub_answer(Stub::NoClaims), Val::Result(Err(None)));
    assert_eq!(
        stub_answer(Stub::IoError),
        Val::Result(Err(Some(Box::new(case("unexpected", s(NO_CLIENT_STREAM))))))
    );
}

#[test]
fn the_message_context_names_the_protocol_and_nothing_else() {
    let Val::Record(fields) = message_context() else {
        panic!("a record");
    };
    let names: Vec<&str> = fields.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "client-stream",
            "protocol-version",
            "session",
            "identity",
            "frame",
            "http-context"
        ]
    );
    assert_eq!(fields[1].1, s("2025-11-25"));
    for i in [0, 2, 3, 5] {
        assert_eq!(fields[i].1, none(), "{}", fields[i].0);
    }
}

#[test]
fn annotations_become_hints_and_absent_hints_are_false() {
    let Ok(Page::Entries(tools, next)) = tools_page(&page(
        vec![
            tool("annotated", options(some(annotations(Some(true), None)))),
            tool("titled-only", options(some(annotations(None, None)))),
            tool("bare", none()),
        ],
        Some("2"),
    )) else {
        panic!("a page");
    };
    assert_eq!(next.as_deref(), Some("2"));
    assert_eq!(
        tools[0].hints,
        Some(Hints {
            read_only: true,
            ..Hints::default()
        })
    );
    assert_eq!(tools[0].title.as_deref(), Some("Annotated title"));
    assert_eq!(tools[0].description.as_deref(), Some("Does it."));
    // A title alone declares no hint: the policy may declare them.
    assert_eq!(tools[1].hints, None);
    assert_eq!(tools[2].hints, None);
    assert_eq!(
        tools[2].description_or_fallback(),
        "Tool `bare` of a wasmcp component (it declares no description)."
    );
}

#[test]
fn a_malformed_tool_is_named() {
    let broken = record(vec![("name", s("broken")), ("options", none())]);
    let err = tools_page(&page(vec![broken], None)).expect_err("refused");
    assert_eq!(err, "tool \"broken\": `input-schema` is missing");
    // The component's own error is a refusal, not a malformed answer.
    let refused = tools_page(&Val::Result(Err(Some(Box::new(case(
        "internal-error",
        record(vec![
            ("code", Val::S64(-32603)),
            ("message", s("no tools today")),
            ("data", none()),
        ]),
    ))))));
    assert_eq!(
        refused,
        Ok(Page::Refused(
            "no tools today (internal-error, code -32603)".into()
        ))
    );
}

#[test]
fn results_map_to_content_errors_and_refusals() {
    let image = case(
        "image",
        record(vec![
            ("data", case("blob", bytes(&[1, 2]))),
            ("mime-type", s("image/png")),
            ("options", none()),
        ]),
    );
    let called = call_result(&result(
        vec![text_block(case("text", s("hi"))), image],
        None,
        Some(r#"{"n":1}"#),
    ))
    .expect("result");
    assert_eq!(
        called,
        Called::Done {
            content: vec![
                Content::Text("hi".into()),
                Content::Image {
                    data: vec![1, 2],
                    mime_type: "image/png".into()
                }
            ],
            structured: Some(r#"{"n":1}"#.into()),
        }
    );
    let failed = call_result(&result(
        vec![
            text_block(case("text", s("first"))),
            text_block(case("text", s("second"))),
        ],
        Some(true),
        None,
    ));
    assert_eq!(failed, Ok(Called::ToolError("first\nsecond".into())));
    assert_eq!(
        call_result(&ok(none())),
        Ok(Called::NotHandled),
        "none: the tool is not this component's"
    );
    let params = Val::Result(Err(Some(Box::new(case(
        "invalid-params",
        record(vec![
            ("code", Val::S64(-32602)),
            ("message", s("n must be positive")),
            ("data", none()),
        ]),
    )))));
    assert_eq!(
        call_result(&params),
        Ok(Called::InvalidArguments("n must be positive".into()))
    );
}

#[test]
fn streamed_content_is_refused_with_what_to_do() {
    let stream = Val::Variant("text-stream".into(), None);
    let err = call_result(&result(vec![text_block(stream)], None, None)).expect_err("refused");
    assert_eq!(
        err,
        "a text-stream: airlock does not read streamed content; return it inline"
    );
}
