//! `export`: exports the orders of one customer as delimited text (the
//! seeds' `export_orders`: renamed parameters, three optional ones with
//! defaults, a float advertised as an integer, a validated `format`).
//!
//! The orders are `data/orders.json`, built into the component.

use airlock_sdk::{Error, tool};
use serde::Deserialize;

/// The orders, built into the component.
const ORDERS: &str = include_str!("../data/orders.json");

/// One order of `data/orders.json`.
#[derive(Deserialize)]
struct Order {
    order_id: String,
    customer_id: String,
    age_days: f64,
    article: String,
    quantity: u32,
    total: f64,
}

/// Exports the orders of one customer as delimited text (CSV or TSV), one
/// order per line, and returns the text.
#[tool(
    name = "export_orders",
    title = "Export orders",
    read_only,
    idempotent,
    task_support = "optional"
)]
pub fn export(
    #[arg(
        rename = "customer_id",
        description = "Identifier of the customer whose orders to export, e.g. CUST-42",
        example = "CUST-42"
    )]
    customer: String,
    #[arg(
        rename = "max_age_days",
        schema_type = "integer",
        default = 90,
        description = "Only include orders placed within this many days"
    )]
    max_age: f64,
    #[arg(default = "csv", description = "Output format, either csv or tsv")] format: String,
    #[arg(
        default = true,
        description = "Write a column header as the first line"
    )]
    include_header: bool,
) -> Result<String, Error> {
    let separator = match format.to_ascii_lowercase().as_str() {
        "csv" => ",",
        "tsv" => "\t",
        _ => {
            return Err(Error::invalid_arguments(
                r#"format must be either "csv" or "tsv""#,
            ));
        }
    };
    if max_age <= 0.0 {
        return Err(Error::invalid_arguments(
            "max_age_days must be greater than zero",
        ));
    }
    let orders: Vec<Order> = serde_json::from_str(ORDERS)
        .map_err(|e| Error::failed(format!("the order data is damaged: {e}")))?;
    let mut lines = Vec::new();
    if include_header {
        lines.push(["order_id", "article", "quantity", "total", "age_days"].join(separator));
    }
    for o in orders
        .iter()
        .filter(|o| o.customer_id == customer && o.age_days <= max_age)
    {
        lines.push(
            [
                o.order_id.clone(),
                o.article.clone(),
                o.quantity.to_string(),
                format!("{:.2}", o.total),
                o.age_days.to_string(),
            ]
            .join(separator),
        );
    }
    airlock_sdk::info!("exported {} lines for {customer}", lines.len());
    let mut text = lines.join("\n");
    text.push('\n');
    Ok(text)
}

airlock_sdk::export_tools!(export);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(args: serde_json::Value) -> Result<String, Error> {
        let out = TOOLS.call("export_orders", &args.to_string())?;
        Ok(out.structured.unwrap()["result"]
            .as_str()
            .unwrap()
            .to_owned())
    }

    #[test]
    fn exports_with_defaults() {
        assert_eq!(
            text(json!({"customer_id": "CUST-42"})).unwrap(),
            "order_id,article,quantity,total,age_days\nORD-5001,SKU-1001,2,25.00,3\nORD-5002,SKU-1003,1,149.00,45\n"
        );
    }

    #[test]
    fn exports_tsv_without_header() {
        assert_eq!(
            text(json!({"customer_id": "CUST-42", "max_age_days": 10, "format": "tsv", "include_header": false})).unwrap(),
            "ORD-5001\tSKU-1001\t2\t25.00\t3\n"
        );
    }

    #[test]
    fn refuses_other_formats() {
        assert_eq!(
            text(json!({"customer_id": "CUST-42", "format": "pdf"})),
            Err(Error::InvalidArguments(
                r#"format must be either "csv" or "tsv""#.into()
            ))
        );
    }

    #[test]
    fn advertises_the_seed_schema() {
        let info = &TOOLS.describe()[0];
        assert_eq!(info.name, "export_orders");
        let props = info.input_schema["properties"].as_object().unwrap();
        let names: Vec<&str> = props.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            ["customer_id", "max_age_days", "format", "include_header"]
        );
        assert_eq!(props["max_age_days"]["type"], "integer");
        assert_eq!(props["max_age_days"]["default"], 90);
        assert_eq!(info.input_schema["required"], json!(["customer_id"]));
    }
}
