//! Short human-readable type labels for parameters (`integer`,
//! `string (date-time)`, `array of integer`, `csv | tsv`), shown by
//! `airlock inspect` and `/rpc/describe`.

use serde_json::Value;

use super::error::cut;
use super::schema::resolve;

/// Levels of `items`/`anyOf` a label descends before saying `any`; schemas
/// come from third-party tools, so nothing here recurses unboundedly.
const LABEL_DEPTH: usize = 3;
/// Most enum values shown in a label.
const ENUM_VALUES: usize = 12;

/// The label of `schema`, with `$ref`s resolved against `root`.
pub(crate) fn type_label(root: &Value, schema: &Value) -> String {
    label_at(root, schema, 0)
}

fn label_at(root: &Value, schema: &Value, depth: usize) -> String {
    let schema = resolve(root, schema);
    let Some(obj) = schema.as_object() else {
        return "any".to_owned();
    };
    if let Some(Value::Array(values)) = obj.get("enum")
        && !values.is_empty()
    {
        let mut shown: Vec<String> = values.iter().take(ENUM_VALUES).map(literal).collect();
        if values.len() > ENUM_VALUES {
            shown.push("…".to_owned());
        }
        return shown.join(" | ");
    }
    if let Some(value) = obj.get("const") {
        return literal(value);
    }
    let names: Vec<&str> = match obj.get("type") {
        Some(Value::String(name)) => vec![name.as_str()],
        Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if names.is_empty() {
        return untyped_label(root, obj, depth);
    }
    let labels: Vec<String> = names
        .iter()
        .map(|name| typed_label(root, obj, name, depth))
        .collect();
    labels.join(" | ")
}

/// A label for one `type` name, with its format or item type.
fn typed_label(
    root: &Value,
    obj: &serde_json::Map<String, Value>,
    name: &str,
    depth: usize,
) -> String {
    match name {
        "array" => match obj.get("items") {
            Some(items @ Value::Object(_)) if depth < LABEL_DEPTH => {
                let inner = label_at(root, items, depth + 1);
                if inner == "any" {
                    "array".to_owned()
                } else if inner.contains(" | ") {
                    format!("array of ({inner})")
                } else {
                    format!("array of {inner}")
                }
            }
            _ => "array".to_owned(),
        },
        "string" | "integer" | "number" => match obj.get("format").and_then(Value::as_str) {
            Some(format) => format!("{name} ({})", cut(format, 32)),
            None => name.to_owned(),
        },
        other => cut(other, 32),
    }
}

/// A label for a schema without `type`: inferred from its keywords.
fn untyped_label(root: &Value, obj: &serde_json::Map<String, Value>, depth: usize) -> String {
    if obj.contains_key("properties") {
        return "object".to_owned();
    }
    if obj.contains_key("items") {
        return typed_label(root, obj, "array", depth);
    }
    let alternatives = obj
        .get("anyOf")
        .or_else(|| obj.get("oneOf"))
        .and_then(Value::as_array);
    if let Some(alternatives) = alternatives
        && depth < LABEL_DEPTH
    {
        let mut labels: Vec<String> = Vec::new();
        for alternative in alternatives {
            let label = label_at(root, alternative, depth + 1);
            if label == "any" {
                return label;
            }
            if !labels.contains(&label) {
                labels.push(label);
            }
        }
        if !labels.is_empty() {
            return labels.join(" | ");
        }
    }
    "any".to_owned()
}

/// An enum or const value: strings bare, everything else as JSON.
fn literal(value: &Value) -> String {
    match value {
        Value::String(s) => cut(s, 40),
        other => cut(&super::error::render_value(other), 40),
    }
}
