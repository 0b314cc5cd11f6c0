//! Attribute tests: what `#[tool]` and `#[arg]` put into a tool's
//! description (name, title, description, hints, icons, task support,
//! output schema, rename, default, schema_type).

use airlock_sdk::{Hints, Icon, Output, TaskSupport, Tool, ToolInfo, ToolSchema, tool};
use serde::Serialize;
use serde_json::json;

fn info<T: Tool>() -> ToolInfo {
    T::info()
}

/// Returns the current unit price
/// of one catalog article.
#[tool]
fn plain(sku: String) -> f64 {
    sku.len() as f64
}

#[test]
fn defaults_name_description_and_hints() {
    let t = info::<plain>();
    assert_eq!(t.name, "plain");
    assert_eq!(t.title, None);
    assert_eq!(
        t.description,
        "Returns the current unit price\nof one catalog article."
    );
    assert_eq!(t.hints, Hints::default());
    assert_eq!(t.icons, vec![]);
    assert_eq!(t.task_support, TaskSupport::Forbidden);
    assert_eq!(
        t.input_schema,
        json!({"type": "object", "properties": {"sku": {"type": "string"}}, "required": ["sku"]})
    );
    assert_eq!(
        t.output_schema,
        Some(
            json!({"type": "object", "properties": {"result": {"type": "number"}}, "required": ["result"], "x-airlock-wrapped": true})
        )
    );
}

/// This doc comment loses to the attribute.
#[tool(
    name = "archive.period-v2",
    title = "Archive accounting period",
    description = "Moves one period into the archive.",
    destructive,
    idempotent,
    open_world,
    icon(src = "https://cdn.example.com/archive.svg", mime_type = "image/svg+xml"),
    icon(src = "https://cdn.example.com/archive-48.png", mime_type = "image/png", sizes = ["48x48", "96x96"]),
    icon(src = "data:image/png;base64,AAAA"),
    task_support = "required"
)]
fn archive(period: String) -> String {
    period
}

#[test]
fn every_tool_key() {
    let t = info::<archive>();
    assert_eq!(<archive as Tool>::NAME, "archive.period-v2");
    assert_eq!(t.name, "archive.period-v2");
    assert_eq!(t.title.as_deref(), Some("Archive accounting period"));
    assert_eq!(t.description, "Moves one period into the archive.");
    assert_eq!(
        t.hints,
        Hints {
            read_only: false,
            destructive: true,
            idempotent: true,
            open_world: true
        }
    );
    assert_eq!(
        t.icons,
        vec![
            Icon {
                src: "https://cdn.example.com/archive.svg".into(),
                mime_type: Some("image/svg+xml".into()),
                sizes: vec![]
            },
            Icon {
                src: "https://cdn.example.com/archive-48.png".into(),
                mime_type: Some("image/png".into()),
                sizes: vec!["48x48".into(), "96x96".into()]
            },
            Icon {
                src: "data:image/png;base64,AAAA".into(),
                mime_type: None,
                sizes: vec![]
            },
        ]
    );
    assert_eq!(t.task_support, TaskSupport::Required);
}

/// Read-only and optional task support.
#[tool(read_only, task_support = "optional")]
fn reader() -> bool {
    true
}

/// Forbidden task support, written out.
#[tool(task_support = "forbidden")]
fn sync_only() -> bool {
    true
}

#[test]
fn read_only_and_task_support_values() {
    let t = info::<reader>();
    assert_eq!(
        t.hints,
        Hints {
            read_only: true,
            ..Hints::default()
        }
    );
    assert_eq!(t.task_support, TaskSupport::Optional);
    assert_eq!(info::<sync_only>().task_support, TaskSupport::Forbidden);
    assert_eq!(
        t.input_schema,
        json!({"type": "object", "properties": {}, "required": []})
    );
}

/// Builds a report.
#[tool(
    output_schema = r#"{"type":"object","properties":{"region":{"type":"string"},"orders":{"type":"integer"}},"required":["region","orders"]}"#
)]
fn report(region: String) -> serde_json::Value {
    json!({"region": region, "orders": 3})
}

#[test]
fn explicit_output_schema() {
    let t = info::<report>();
    assert_eq!(
        t.output_schema,
        Some(
            json!({"type": "object", "properties": {"region": {"type": "string"}, "orders": {"type": "integer"}}, "required": ["region", "orders"]})
        )
    );
    let out = <report as Tool>::call(json!({"region": "EU"}).as_object().unwrap()).unwrap();
    assert_eq!(out.structured, Some(json!({"region": "EU", "orders": 3})));
}

/// Exports orders.
#[tool]
#[allow(clippy::too_many_arguments)]
fn export(
    #[arg(rename = "customer_id", description = "Identifier of the customer")] customer: String,
    #[arg(
        rename = "max_age_days",
        schema_type = "integer",
        default = 90,
        description = "Only orders this recent"
    )]
    max_age: f64,
    #[arg(default = "csv")] format: &str,
    #[arg(default = true)] include_header: bool,
    #[arg(default = -1.5)] offset: f32,
    #[arg(default = vec![1, 2], description = "Lists by expression")] pages: Vec<u8>,
    #[arg(schema_type = "string")] code: u32,
    note: Option<String>,
) -> String {
    format!("{customer} {max_age} {format} {include_header} {offset} {pages:?} {code} {note:?}")
}

#[test]
fn parameter_attributes() {
    let t = info::<export>();
    assert_eq!(
        t.input_schema,
        json!({
            "type": "object",
            "properties": {
                "customer_id": {"type": "string", "description": "Identifier of the customer"},
                "max_age_days": {"type": "integer", "description": "Only orders this recent", "default": 90},
                "format": {"type": "string", "default": "csv"},
                "include_header": {"type": "boolean", "default": true},
                "offset": {"type": "number", "default": -1.5},
                "pages": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 255}, "description": "Lists by expression", "default": [1, 2]},
                "code": {"type": "string"},
                "note": {"type": "string"}
            },
            "required": ["customer_id", "code"]
        })
    );
    // Positional arguments bind in this order.
    let keys: Vec<&String> = t.input_schema["properties"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(
        keys,
        [
            "customer_id",
            "max_age_days",
            "format",
            "include_header",
            "offset",
            "pages",
            "code",
            "note"
        ]
    );
}

/// Returns nothing.
#[tool]
fn nothing() {}

/// Returns an optional number.
#[tool]
fn maybe(give: bool) -> Option<u8> {
    give.then_some(7)
}

/// A summary.
#[derive(ToolSchema, Serialize)]
struct Summary {
    /// How many.
    count: u32,
    /// Optional remark.
    remark: Option<String>,
}

/// Returns an object.
#[tool]
fn summary(remark: Option<String>) -> Result<Summary, String> {
    Ok(Summary { count: 2, remark })
}

/// Returns content blocks.
#[tool]
fn blocks() -> Output {
    Output::text("hi")
}

#[test]
fn output_schemas_by_return_type() {
    assert_eq!(
        info::<nothing>().output_schema,
        Some(
            json!({"type": "object", "properties": {"result": {"type": "boolean"}}, "required": ["result"], "x-airlock-wrapped": true})
        )
    );
    assert_eq!(
        info::<maybe>().output_schema,
        Some(
            json!({"type": "object", "properties": {"result": {"type": "integer", "minimum": 0, "maximum": 255}}, "required": [], "x-airlock-wrapped": true})
        )
    );
    assert_eq!(info::<summary>().output_schema, Some(Summary::schema()));
    assert_eq!(info::<blocks>().output_schema, None);
}

/// Has a default that does not fit its parameter.
#[tool]
fn bad_default(#[arg(default = "many")] count: u8) -> u8 {
    count
}

#[test]
#[should_panic(expected = "the default \"many\" of parameter \"count\" does not fit its type")]
fn a_default_that_does_not_fit_stops_describe() {
    info::<bad_default>();
}

/// Quotes a shipment.
#[tool]
fn quote(
    #[arg(example = "SKU-1001", description = "Article number")] sku: String,
    #[arg(example = 3)] weight_kg: f64,
    #[arg(default = 1, example = 4)] parcels: u32,
    #[arg(example = vec!["fragile".to_string()])] labels: Vec<String>,
    #[arg(example = "PO-7")] reference: Option<String>,
) -> String {
    format!("{sku} {weight_kg} {parcels} {labels:?} {reference:?}")
}

#[test]
fn examples_are_advertised_only() {
    let t = info::<quote>();
    assert_eq!(
        t.input_schema["properties"],
        json!({
            "sku": {"type": "string", "description": "Article number", "examples": ["SKU-1001"]},
            "weight_kg": {"type": "number", "examples": [3]},
            "parcels": {"type": "integer", "minimum": 0, "maximum": 4294967295u64, "default": 1, "examples": [4]},
            "labels": {"type": "array", "items": {"type": "string"}, "examples": [["fragile"]]},
            "reference": {"type": "string", "examples": ["PO-7"]}
        })
    );
    // An example makes nothing optional, and is never filled in.
    assert_eq!(
        t.input_schema["required"],
        json!(["sku", "weight_kg", "labels"])
    );
    let out = airlock_sdk::toolbox![quote]
        .call("quote", r#"{"sku": "S", "weight_kg": 1, "labels": []}"#)
        .unwrap();
    assert_eq!(out.structured, Some(json!({"result": "S 1 1 [] None"})));
}

/// Has an example that does not fit its parameter.
#[tool]
fn bad_example(#[arg(example = -3)] count: u8) -> u8 {
    count
}

#[test]
#[should_panic(expected = "the example -3 of parameter \"count\" does not fit its type")]
fn an_example_that_does_not_fit_stops_describe() {
    info::<bad_example>();
}
