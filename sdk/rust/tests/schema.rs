//! Schema tests: the exact JSON Schema of every row of the type table, as a
//! parameter, a struct field and a result.

use airlock_sdk::{Timestamp, ToolSchema};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, HashMap};

fn schema<T: ToolSchema>() -> Value {
    T::schema()
}

#[test]
fn integers_carry_their_bounds() {
    assert_eq!(
        schema::<u8>(),
        json!({"type": "integer", "minimum": 0, "maximum": 255})
    );
    assert_eq!(
        schema::<u16>(),
        json!({"type": "integer", "minimum": 0, "maximum": 65535})
    );
    assert_eq!(
        schema::<u32>(),
        json!({"type": "integer", "minimum": 0, "maximum": 4294967295u32})
    );
    assert_eq!(
        schema::<u64>(),
        json!({"type": "integer", "minimum": 0, "maximum": u64::MAX})
    );
    assert_eq!(
        schema::<usize>(),
        json!({"type": "integer", "minimum": 0, "maximum": usize::MAX})
    );
    assert_eq!(
        schema::<i8>(),
        json!({"type": "integer", "minimum": -128, "maximum": 127})
    );
    assert_eq!(
        schema::<i16>(),
        json!({"type": "integer", "minimum": -32768, "maximum": 32767})
    );
    assert_eq!(
        schema::<i32>(),
        json!({"type": "integer", "minimum": -2147483648i64, "maximum": 2147483647})
    );
    assert_eq!(
        schema::<i64>(),
        json!({"type": "integer", "minimum": i64::MIN, "maximum": i64::MAX})
    );
    assert_eq!(
        schema::<isize>(),
        json!({"type": "integer", "minimum": isize::MIN, "maximum": isize::MAX})
    );
    assert_eq!(schema::<i128>(), json!({"type": "integer"}));
    assert_eq!(schema::<u128>(), json!({"type": "integer", "minimum": 0}));
    // The bounds are exact JSON integers, not floats.
    assert_eq!(
        schema::<u64>().to_string(),
        r#"{"type":"integer","minimum":0,"maximum":18446744073709551615}"#
    );
}

#[test]
fn floats_booleans_strings() {
    assert_eq!(schema::<f32>(), json!({"type": "number"}));
    assert_eq!(schema::<f64>(), json!({"type": "number"}));
    assert_eq!(schema::<bool>(), json!({"type": "boolean"}));
    assert_eq!(schema::<String>(), json!({"type": "string"}));
    assert_eq!(
        schema::<char>(),
        json!({"type": "string", "minLength": 1, "maxLength": 1})
    );
}

#[test]
fn timestamp_is_a_date_time_string() {
    assert_eq!(
        schema::<Timestamp>(),
        json!({"type": "string", "format": "date-time"})
    );
}

#[test]
fn json_values() {
    assert_eq!(schema::<Value>(), json!({}));
    assert_eq!(schema::<Map<String, Value>>(), json!({"type": "object"}));
}

#[test]
fn containers() {
    assert_eq!(
        schema::<Vec<i8>>(),
        json!({"type": "array", "items": {"type": "integer", "minimum": -128, "maximum": 127}})
    );
    assert_eq!(
        schema::<Vec<Vec<String>>>(),
        json!({"type": "array", "items": {"type": "array", "items": {"type": "string"}}})
    );
    assert_eq!(schema::<Option<bool>>(), json!({"type": "boolean"}));
    const { assert!(<Option<bool>>::OPTIONAL) };
    const { assert!(!<bool>::OPTIONAL) };
    assert_eq!(schema::<Box<f64>>(), json!({"type": "number"}));
    assert_eq!(
        schema::<BTreeMap<String, u8>>(),
        json!({"type": "object", "additionalProperties": {"type": "integer", "minimum": 0, "maximum": 255}})
    );
    assert_eq!(
        schema::<HashMap<String, bool>>(),
        json!({"type": "object", "additionalProperties": {"type": "boolean"}})
    );
}

/// How an order is shipped.
#[derive(ToolSchema, Deserialize, Serialize)]
#[allow(dead_code)]
enum Shipping {
    Standard,
    Express,
    #[serde(rename = "pickup")]
    PickUp,
}

#[derive(ToolSchema, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[allow(dead_code)]
enum Priority {
    VeryLow,
    Normal,
    #[serde(skip)]
    Internal,
}

#[test]
fn unit_only_enums_are_string_enums() {
    assert_eq!(
        schema::<Shipping>(),
        json!({"type": "string", "enum": ["Standard", "Express", "pickup"], "description": "How an order is shipped."})
    );
    assert_eq!(
        schema::<Priority>(),
        json!({"type": "string", "enum": ["very-low", "normal"]})
    );
    // The advertised names are the ones serde reads.
    let p: Priority = serde_json::from_value(json!("very-low")).unwrap();
    assert!(matches!(p, Priority::VeryLow));
}

/// A line of an order.
#[derive(ToolSchema, Deserialize)]
#[allow(dead_code)]
struct Line {
    /// Article number.
    sku: String,
    /// Units ordered.
    quantity: u32,
    /// A note for the packer.
    note: Option<String>,
    #[serde(default)]
    gift: bool,
    #[serde(skip)]
    internal: u8,
    #[serde(rename = "type")]
    kind: Shipping,
}

#[test]
fn structs_are_objects() {
    assert_eq!(
        schema::<Line>(),
        json!({
            "type": "object",
            "description": "A line of an order.",
            "properties": {
                "sku": {"type": "string", "description": "Article number."},
                "quantity": {"type": "integer", "minimum": 0, "maximum": 4294967295u32, "description": "Units ordered."},
                "note": {"type": "string", "description": "A note for the packer."},
                "gift": {"type": "boolean"},
                "type": {"type": "string", "enum": ["Standard", "Express", "pickup"], "description": "How an order is shipped."}
            },
            "required": ["sku", "quantity", "type"]
        })
    );
    // Property order follows the declaration.
    let keys: Vec<String> = schema::<Line>()["properties"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(keys, ["sku", "quantity", "note", "gift", "type"]);
}

#[derive(ToolSchema, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[allow(dead_code)]
struct Order {
    order_id: String,
    lines: Vec<Line>,
}

#[test]
fn nested_structs_rename_all_and_deny_unknown_fields() {
    let s = schema::<Order>();
    assert_eq!(s["additionalProperties"], json!(false));
    assert_eq!(s["required"], json!(["orderId", "lines"]));
    assert_eq!(s["properties"]["lines"]["type"], "array");
    assert_eq!(s["properties"]["lines"]["items"], schema::<Line>());
}

/// An article number.
#[derive(ToolSchema, Deserialize)]
#[allow(dead_code)]
struct Sku(String);

#[derive(ToolSchema, Deserialize)]
#[allow(dead_code)]
struct Page<T> {
    items: Vec<T>,
}

#[test]
fn newtypes_and_generic_structs() {
    assert_eq!(
        schema::<Sku>(),
        json!({"type": "string", "description": "An article number."})
    );
    assert_eq!(
        schema::<Page<bool>>(),
        json!({"type": "object", "properties": {"items": {"type": "array", "items": {"type": "boolean"}}}, "required": ["items"]})
    );
}
