//! Dispatch tests: the generated `call` run natively with JSON arguments,
//! through a `Toolbox` and through the contract's `tools` interface.

use airlock_sdk::{Error, Output, Timestamp, ToolSchema, tool};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

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
    title = "Export orders",
    description = "Exports the orders of one customer."
)]
fn export(
    #[arg(rename = "customer_id", description = "Customer")] customer: String,
    #[arg(
        rename = "max_age_days",
        schema_type = "integer",
        default = 90,
        description = "Days"
    )]
    max_age: f64,
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

airlock_sdk::export_tools!(lookup_price, export);

fn call(name: &str, args: Value) -> Result<Output, Error> {
    TOOLS.call(name, &args.to_string())
}

#[test]
fn smoke() {
    let out = call("lookup_price", json!({"sku": "SKU-1001"})).unwrap();
    assert_eq!(out.structured, Some(json!({"result": 12.5})));
    let err = call("lookup_price", json!({"sku": "SKU-9"})).unwrap_err();
    assert_eq!(err, Error::Failed("unknown article \"SKU-9\"".into()));
    let out = call("export_orders", json!({"customer_id": "C1"})).unwrap();
    assert_eq!(out.structured, Some(json!({"result": "C1|90|csv|true"})));
    let err = call(
        "export_orders",
        json!({"customer_id": "C1", "format": "pdf"}),
    )
    .unwrap_err();
    assert_eq!(
        err,
        Error::InvalidArguments("format must be either \"csv\" or \"tsv\"".into())
    );
    let d = TOOLS.describe();
    println!(
        "{}",
        serde_json::to_string_pretty(&d[1].input_schema).unwrap()
    );
}
