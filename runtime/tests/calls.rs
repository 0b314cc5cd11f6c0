//! Calls through the first-party components, in-process: the argument
//! rules (coercion, defaults, named errors, positional binding), every row
//! of the type table round-tripped, output schemas and tool errors.

use crate::support;

use std::sync::OnceLock;

use airlock::Runtime;
use airlock::call::CallError;
use airlock::sandbox::RunError;
use airlock::tool::Content;
use serde_json::{Value, json};
use support::{call, component};

fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        support::runtime(
            "",
            &[
                component("catalog"),
                component("export"),
                component("types"),
            ],
        )
    })
}

fn structured(tool: &str, args: Value) -> Value {
    support::structured(runtime(), tool, args)
}

fn error(tool: &str, args: Value) -> CallError {
    support::call_error(runtime(), tool, args)
}

#[test]
fn an_integer_in_a_string_is_coerced() {
    let out = structured(
        "export_orders",
        json!({"customer_id": "CUST-42", "max_age_days": "42"}),
    );
    let text = out["result"].as_str().expect("text");
    assert_eq!(
        text,
        "order_id,article,quantity,total,age_days\nORD-5001,SKU-1001,2,25.00,3\n"
    );
}

#[test]
fn a_bad_integer_names_the_parameter_and_the_value() {
    let err = error(
        "export_orders",
        json!({"customer_id": "CUST-42", "max_age_days": "soon"}),
    );
    assert!(err.is_argument_error());
    assert_eq!(
        err.to_string(),
        r#"Parameter "max_age_days" expects an integer, got "soon""#
    );
}

#[test]
fn a_missing_argument_lists_received_and_expected_keys() {
    let err = error("export_orders", json!({"format": "tsv"}));
    assert_eq!(
        err.to_string(),
        "Missing required argument \"customer_id\"; received: [format], \
         expected: [customer_id, max_age_days, format, include_header]"
    );
}

#[test]
fn an_unknown_argument_is_refused() {
    let err = error("lookup_price", json!({"sku": "SKU-1001", "colour": "red"}));
    assert!(
        err.to_string().starts_with("Unknown argument \"colour\""),
        "{err}"
    );
}

#[test]
fn arguments_must_be_an_object_or_an_array() {
    let err = error("lookup_price", json!("SKU-1001"));
    assert!(
        err.to_string()
            .starts_with("Arguments must be a JSON object"),
        "{err}"
    );
}

#[test]
fn defaults_reach_the_tool() {
    // Without format/include_header the tool receives csv and a header.
    let with = structured("export_orders", json!({"customer_id": "CUST-7"}));
    assert!(
        with["result"]
            .as_str()
            .expect("text")
            .starts_with("order_id,")
    );
    let out = structured("echo_defaults", json!({}));
    assert_eq!(
        out,
        json!({"count": 7, "ratio": 0.5, "label": "plain", "flag": false, "colour": "green"})
    );
}

#[test]
fn positional_arguments_bind_in_schema_order() {
    let out = structured("export_orders", json!(["CUST-42", 365, "tsv", false]));
    let text = out["result"].as_str().expect("text");
    assert!(!text.starts_with("order_id"), "no header: {text}");
    assert!(text.contains("ORD-5003\tSKU-2001"), "tab separated: {text}");
}

#[test]
fn a_tool_error_reaches_the_caller() {
    let err = error(
        "export_orders",
        json!({"customer_id": "C", "format": "pdf"}),
    );
    assert!(
        matches!(
            err,
            CallError::Run(RunError::Failed(_)) | CallError::Run(RunError::InvalidArguments(_))
        ),
        "{err:?}"
    );
    assert_eq!(err.to_string(), r#"format must be either "csv" or "tsv""#);
    let err = error("lookup_price", json!({"sku": "SKU-9"}));
    assert_eq!(err.to_string(), r#"unknown article "SKU-9""#);
    let err = error("fail", json!({"kind": "failed", "message": "it broke"}));
    assert!(
        matches!(err, CallError::Run(RunError::Failed(ref m)) if m == "it broke"),
        "{err:?}"
    );
    let err = error(
        "fail",
        json!({"kind": "invalid_arguments", "message": "nope"}),
    );
    assert!(err.is_argument_error(), "{err:?}");
}

#[test]
fn the_type_table_round_trips() {
    let cases = [
        ("echo_u8", json!({"value": 255}), json!({"result": 255})),
        ("echo_u8", json!({"value": "7"}), json!({"result": 7})),
        (
            "echo_u32",
            json!({"value": 4_294_967_295u64}),
            json!({"result": 4_294_967_295u64}),
        ),
        (
            "echo_u64",
            json!({"value": u64::MAX}),
            json!({"result": u64::MAX}),
        ),
        (
            "echo_i32",
            json!({"value": -2_147_483_648i64}),
            json!({"result": -2_147_483_648i64}),
        ),
        ("echo_i64", json!({"value": "-9"}), json!({"result": -9})),
        ("echo_f32", json!({"value": 1.5}), json!({"result": 1.5})),
        (
            "echo_f64",
            json!({"value": "2.25"}),
            json!({"result": 2.25}),
        ),
        ("echo_bool", json!({"value": "1"}), json!({"result": true})),
        (
            "echo_bool",
            json!({"value": "false"}),
            json!({"result": false}),
        ),
        (
            "echo_string",
            json!({"value": "héllo"}),
            json!({"result": "héllo"}),
        ),
        (
            "echo_str",
            json!({"value": "borrowed"}),
            json!({"result": "borrowed"}),
        ),
        (
            "echo_timestamp",
            json!({"value": "1970-01-02T00:00:00Z"}),
            json!({"value": "1970-01-02T00:00:00Z", "unix_seconds": 86400}),
        ),
        (
            "echo_enum",
            json!({"value": "sky_blue"}),
            json!({"result": "sky_blue"}),
        ),
        (
            "echo_json",
            json!({"value": {"a": [1, null]}}),
            json!({"result": {"a": [1, null]}}),
        ),
        (
            "echo_struct",
            json!({"value": {"street": "1 Main St", "postcode": "1000", "city": "Brussels", "notes": []}}),
            json!({"street": "1 Main St", "postcode": "1000", "city": "Brussels", "notes": []}),
        ),
        (
            "echo_vec_i32",
            json!({"values": ["1", 2, -3]}),
            json!({"result": [1, 2, -3]}),
        ),
        (
            "echo_optional",
            json!({"value": "x"}),
            json!({"result": "x"}),
        ),
        (
            "echo_unit",
            json!({"message": "hi"}),
            json!({"result": true}),
        ),
        (
            "echo_integer_override",
            json!({"value": "3"}),
            json!({"result": 3.0}),
        ),
    ];
    for (tool, args, expected) in cases {
        let got = structured(tool, args.clone());
        assert_eq!(got, expected, "{tool}({args})");
    }
}

#[test]
fn the_schema_refuses_what_the_type_cannot_hold() {
    let err = error("echo_u8", json!({"value": 256}));
    assert!(err.to_string().starts_with("Parameter \"value\""), "{err}");
    let err = error("echo_enum", json!({"value": "purple"}));
    assert!(err.to_string().starts_with("Parameter \"value\""), "{err}");
    let err = error("echo_timestamp", json!({"value": "yesterday"}));
    assert!(err.to_string().starts_with("Parameter \"value\""), "{err}");
    let err = error("echo_integer_override", json!({"value": 2.5}));
    assert!(err.to_string().contains("integer"), "{err}");
}

#[test]
fn structured_results_also_come_as_text() {
    let out = call(runtime(), "lookup_price", json!({"sku": "SKU-1001"})).expect("price");
    assert_eq!(out.structured, Some(json!({"result": 12.5})));
    assert_eq!(
        out.content,
        vec![Content::Text(r#"{"result":12.5}"#.into())]
    );
}

#[test]
fn every_content_kind_comes_through() {
    let out = call(runtime(), "content_blocks", json!({})).expect("blocks");
    let kinds: Vec<&str> = out
        .content
        .iter()
        .map(|c| match c {
            Content::Text(_) => "text",
            Content::Image { .. } => "image",
            Content::Audio { .. } => "audio",
            Content::Embedded { .. } => "resource",
            Content::Link { .. } => "resource_link",
        })
        .collect();
    assert_eq!(
        kinds,
        ["text", "image", "audio", "resource", "resource_link"]
    );
    let mcp = out.to_mcp();
    assert_eq!(mcp["content"][1]["data"], "iVBORw0KGgo=");
    assert_eq!(mcp["content"][3]["resource"]["text"], "an embedded note");
    assert_eq!(mcp["isError"], false);
}

#[test]
fn destructive_tools_are_refused_by_default() {
    let err = error("restock", json!({"sku": "SKU-1001", "units": 1}));
    assert!(matches!(err, CallError::Refused(_)), "{err:?}");
    assert_eq!(
        err.to_string(),
        "not permitted: restock is destructive and the operator's policy does not allow destructive calls for it"
    );
}

#[test]
fn hints_become_explicit_annotations() {
    let catalog = runtime().catalog();
    let restock = catalog.tool("restock").expect("restock").info.to_mcp();
    assert_eq!(
        restock["annotations"],
        json!({"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": false, "title": "Restock article"})
    );
    let price = catalog.tool("lookup_price").expect("price").info.to_mcp();
    assert_eq!(price["annotations"]["readOnlyHint"], true);
    assert_eq!(price["execution"]["taskSupport"], "forbidden");
}

/// `run_delivering` answers while the call's instance still exists and has
/// torn it down when it returns: with a pool of one instance, a call made
/// from inside `deliver` finds no free slot, and the next call after it
/// runs normally.
#[test]
fn the_outcome_is_delivered_before_the_teardown() {
    use airlock::call::Caller;
    use airlock::observe::Unobserved;
    use airlock::policy::Policy;
    use airlock::sandbox::{Sandbox, SandboxConfig};
    use std::sync::Arc;

    let config = SandboxConfig::default()
        .instances(1)
        .cache(Some(support::cache()));
    let sandbox = Sandbox::new(&config).expect("sandbox");
    let runtime = Runtime::new(sandbox, Policy::default());
    let report = runtime.load(&[support::test_component("bench")]);
    assert!(report.refused.is_empty(), "{:?}", report.refused.len());
    for round in 0..3 {
        let prepared = runtime
            .prepare(Caller::CommandLine, "add", json!({"a": round, "b": 2}))
            .expect("prepare");
        let mut seen = None;
        prepared.run_delivering(Arc::new(Unobserved), |outcome| {
            let nested = call(&runtime, "add", json!({"a": 1, "b": 1}));
            seen = Some((outcome, nested));
        });
        let (outcome, nested) = seen.expect("deliver was called");
        let out = outcome.unwrap_or_else(|e| panic!("round {round}: {e}"));
        assert_eq!(out.structured, Some(json!({"result": round + 2})));
        assert!(
            matches!(nested, Err(CallError::Run(RunError::Crashed(_)))),
            "round {round}: the pool's only instance should still be in use, got {nested:?}"
        );
    }
}
