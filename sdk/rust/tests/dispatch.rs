//! Dispatch tests: the generated `call` run natively with JSON arguments,
//! through a `Toolbox` and through the contract's `tools` interface.

use airlock_sdk::bindings::airlock::tool::types as wit;
use airlock_sdk::bindings::exports::airlock::tool::tools::Guest;
use airlock_sdk::{Content, Error, Output, Timestamp, ToolSchema, tool};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::fmt;

/// Returns the current unit price of one catalog article.
#[tool(read_only, idempotent, title = "Look up price")]
fn lookup_price(
    #[arg(description = "Article number, e.g. SKU-1001")] sku: String,
) -> Result<f64, String> {
    match sku.as_str() {
        "SKU-1001" => Ok(12.5),
        _ => Err(format!("unknown article {sku:?}")),
    }
}

#[tool(
    name = "export_orders",
    description = "Exports the orders of one customer."
)]
fn export(
    #[arg(rename = "customer_id")] customer: String,
    #[arg(rename = "max_age_days", schema_type = "integer", default = 90)] max_age: f64,
    #[arg(default = "csv")] format: &str,
    #[arg(default = true)] include_header: bool,
) -> Result<String, Error> {
    if format != "csv" && format != "tsv" {
        return Err(Error::invalid_arguments(
            r#"format must be either "csv" or "tsv""#,
        ));
    }
    Ok(format!("{customer}|{max_age}|{format}|{include_header}"))
}

#[derive(ToolSchema, Serialize, Deserialize, Debug, PartialEq, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum Colour {
    Red,
    Green,
}

#[derive(ToolSchema, Serialize, Deserialize, Debug, PartialEq)]
struct Point {
    x: i32,
    y: i32,
    label: Option<String>,
}

/// Echoes everything it receives.
#[tool]
fn echo(
    when: Timestamp,
    colour: Colour,
    points: Vec<Point>,
    any: Value,
    maybe: Option<u8>,
    #[arg(default = Colour::Green)] fallback: Colour,
) -> Value {
    json!({
        "when": when.as_str(),
        "colour": colour,
        "points": points,
        "any": any,
        "maybe": maybe,
        "fallback": fallback,
    })
}

/// Returns nothing.
#[tool]
fn touch() {}

/// Returns points, one with no label.
#[tool]
fn points() -> Vec<Point> {
    vec![
        Point {
            x: 1,
            y: 2,
            label: Some("a".into()),
        },
        Point {
            x: 3,
            y: 4,
            label: None,
        },
    ]
}

struct Custom;

impl fmt::Display for Custom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("custom failure")
    }
}

/// Fails with a custom error type.
#[tool]
fn custom() -> Result<u8, Custom> {
    Err(Custom)
}

/// Fails with an io error.
#[tool]
fn io() -> Result<u8, std::io::Error> {
    Err(std::io::Error::other("disk on fire"))
}

/// Full control over the output.
#[tool]
fn blocks() -> Result<Output, Error> {
    Ok(Output::text("a").with_image(vec![1, 2], "image/png"))
}

/// Uses the host services (no-ops or stderr natively).
#[tool]
fn host() -> bool {
    airlock_sdk::log(airlock_sdk::Level::Notice, "natively this goes to stderr");
    airlock_sdk::info!("{} + {}", 1, 2);
    airlock_sdk::progress(1.0, Some(2.0), Some("half"));
    airlock_sdk::cancelled()
}

airlock_sdk::export_tools!(
    lookup_price,
    export,
    echo,
    touch,
    points,
    custom,
    io,
    blocks,
    host
);

fn call(name: &str, args: Value) -> Result<Output, Error> {
    TOOLS.call(name, &args.to_string())
}

fn structured(name: &str, args: Value) -> Value {
    call(name, args).unwrap().structured.unwrap()
}

#[test]
fn results_and_tool_errors() {
    assert_eq!(
        structured("lookup_price", json!({"sku": "SKU-1001"})),
        json!({"result": 12.5})
    );
    assert_eq!(
        call("lookup_price", json!({"sku": "SKU-9"})),
        Err(Error::Failed("unknown article \"SKU-9\"".into()))
    );
    assert_eq!(
        call("custom", json!({})),
        Err(Error::Failed("custom failure".into()))
    );
    assert_eq!(
        call("io", json!({})),
        Err(Error::Failed("disk on fire".into()))
    );
}

#[test]
fn defaults_reach_the_function() {
    assert_eq!(
        structured("export_orders", json!({"customer_id": "C1"})),
        json!({"result": "C1|90|csv|true"})
    );
    assert_eq!(
        structured(
            "export_orders",
            json!({"customer_id": "C1", "max_age_days": 7, "format": "tsv", "include_header": false})
        ),
        json!({"result": "C1|7|tsv|false"})
    );
    // `null` counts as omitted.
    assert_eq!(
        structured(
            "export_orders",
            json!({"customer_id": "C1", "format": null})
        ),
        json!({"result": "C1|90|csv|true"})
    );
}

#[test]
fn string_results_are_also_text() {
    let out = call("export_orders", json!({"customer_id": "C1"})).unwrap();
    assert_eq!(out.content, vec![Content::Text("C1|90|csv|true".into())]);
}

#[test]
fn the_author_chooses_invalid_arguments() {
    assert_eq!(
        call(
            "export_orders",
            json!({"customer_id": "C1", "format": "pdf"})
        ),
        Err(Error::InvalidArguments(
            r#"format must be either "csv" or "tsv""#.into()
        ))
    );
}

#[test]
fn wrong_values_name_the_parameter() {
    let err = call(
        "export_orders",
        json!({"customer_id": "C1", "max_age_days": "soon"}),
    )
    .unwrap_err();
    assert_eq!(
        err,
        Error::InvalidArguments(
            "parameter \"max_age_days\": invalid type: string \"soon\", expected f64".into()
        )
    );
    let err = call(
        "echo",
        json!({"when": "yesterday", "colour": "red", "points": [], "any": 1}),
    )
    .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArguments(m) if m.starts_with("parameter \"when\": \"yesterday\" is not an RFC 3339 date-time")),
        "{err:?}"
    );
    let err = call(
        "echo",
        json!({"when": "2025-01-01T00:00:00Z", "colour": "blue", "points": [], "any": 1}),
    )
    .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidArguments(m) if m.starts_with("parameter \"colour\": unknown variant `blue`")),
        "{err:?}"
    );
}

#[test]
fn missing_required_parameters_list_what_arrived() {
    assert_eq!(
        call("lookup_price", json!({"skew": "SKU-1001"})),
        Err(Error::InvalidArguments(
            "missing required parameter \"sku\" (received: [\"skew\"])".into()
        ))
    );
}

#[test]
fn arguments_must_be_an_object() {
    assert_eq!(
        TOOLS.call("lookup_price", "[1]"),
        Err(Error::InvalidArguments(
            "the arguments must be a JSON object".into()
        ))
    );
    assert!(
        matches!(TOOLS.call("lookup_price", "{"), Err(Error::InvalidArguments(m)) if m.starts_with("the arguments are not valid JSON"))
    );
    // No arguments at all is an empty object.
    assert_eq!(
        TOOLS.call("touch", "null").unwrap().structured,
        Some(json!({"result": true}))
    );
}

#[test]
fn unknown_tool() {
    assert_eq!(
        call("nope", json!({})),
        Err(Error::Failed(
            "this component has no tool named \"nope\"".into()
        ))
    );
}

#[test]
fn every_row_of_the_table_is_decoded() {
    let got = structured(
        "echo",
        json!({
            "when": "2025-11-25T09:30:00+01:00",
            "colour": "red",
            "points": [{"x": 1, "y": -2}],
            "any": {"nested": [true, null]},
        }),
    );
    assert_eq!(
        got,
        json!({"result": {
            "when": "2025-11-25T09:30:00+01:00",
            "colour": "red",
            "points": [{"x": 1, "y": -2, "label": null}],
            "any": {"nested": [true, null]},
            "maybe": null,
            "fallback": "green",
        }})
    );
    let got = structured(
        "echo",
        json!({"when": "2025-11-25T09:30:00Z", "colour": "green", "points": [], "any": 1, "maybe": 3, "fallback": "red"}),
    );
    assert_eq!(got["result"]["maybe"], 3);
    assert_eq!(got["result"]["fallback"], "red");
}

#[test]
fn unit_results_are_true() {
    let out = call("touch", json!({})).unwrap();
    assert_eq!(out.structured, Some(json!({"result": true})));
    assert!(out.content.is_empty());
}

#[test]
fn none_fields_are_left_out_of_results() {
    assert_eq!(
        structured("points", json!({})),
        json!({"result": [{"x": 1, "y": 2, "label": "a"}, {"x": 3, "y": 4}]})
    );
}

#[test]
fn output_returns_are_passed_through() {
    let out = call("blocks", json!({})).unwrap();
    assert_eq!(out.structured, None);
    assert_eq!(out.content.len(), 2);
}

#[test]
fn host_services_work_natively() {
    assert_eq!(structured("host", json!({})), json!({"result": false}));
}

#[test]
fn the_contract_interface() {
    let tools = <AirlockComponent as Guest>::describe();
    assert_eq!(tools.len(), 9);
    let t = &tools[0];
    assert_eq!(t.name, "lookup_price");
    assert_eq!(t.title.as_deref(), Some("Look up price"));
    assert_eq!(t.hints, wit::Hints::READ_ONLY | wit::Hints::IDEMPOTENT);
    assert!(matches!(t.task_support, wit::TaskSupport::Forbidden));
    let schema: Value = serde_json::from_str(&t.input_schema).unwrap();
    assert_eq!(schema["required"], json!(["sku"]));
    assert_eq!(
        t.output_schema.as_deref(),
        Some(
            r#"{"type":"object","properties":{"result":{"type":"number"}},"required":["result"],"x-airlock-wrapped":true}"#
        )
    );

    let out =
        <AirlockComponent as Guest>::call("lookup_price".into(), r#"{"sku":"SKU-1001"}"#.into())
            .unwrap();
    assert_eq!(out.structured.as_deref(), Some(r#"{"result":12.5}"#));
    match <AirlockComponent as Guest>::call(
        "export_orders".into(),
        r#"{"customer_id":"C","format":"x"}"#.into(),
    ) {
        Err(wit::Error::InvalidArguments(m)) => assert!(m.starts_with("format must be")),
        other => panic!("{other:?}"),
    }
    match <AirlockComponent as Guest>::call("custom".into(), "{}".into()) {
        Err(wit::Error::Failed(m)) => assert_eq!(m, "custom failure"),
        other => panic!("{other:?}"),
    }
    let out = <AirlockComponent as Guest>::call("blocks".into(), "{}".into()).unwrap();
    assert!(matches!(&out.content[0], wit::Content::Text(t) if t == "a"));
    assert!(
        matches!(&out.content[1], wit::Content::Image(m) if m.mime_type == "image/png" && m.data == [1, 2])
    );
}
