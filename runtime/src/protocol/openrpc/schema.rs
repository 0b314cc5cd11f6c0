//! A tool's JSON Schema as an OpenRPC document carries it: OpenRPC 1.3's
//! schemas are JSON Schema draft-07, and every schema of the document is
//! read against the document's root. So a tool's schema is rewritten:
//!
//! - local references (`#/$defs/…`, `#/definitions/…`, any `#/…` pointer
//!   into the tool's own schema) are inlined, since `#` would otherwise
//!   mean the OpenRPC document; a recursive type is inlined a few levels
//!   deep, then left open (`{}`), and a reference that cannot be resolved
//!   becomes `{}` with a description that says so;
//! - 2020-12's `prefixItems` becomes draft-07's `items` array, its `items`
//!   `additionalItems`;
//! - `$schema`, `$id`, `$anchor`, `$defs`, `definitions` and airlock's own
//!   `x-airlock-wrapped` are left out (the first two would change how a
//!   validator reads the schema).
//!
//! Only schema keywords are walked: values of `enum`, `const`, `default`
//! and `examples`, and property names, are data and stay as they are.

use serde_json::{Map, Value, json};

use crate::tool::WRAPPED;

/// How many references deep a schema is inlined (a recursive type is open
/// below that).
const MAX_INLINE: usize = 8;

/// Keywords whose value is one schema.
const ONE: [&str; 11] = [
    "additionalProperties",
    "additionalItems",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
];

/// Keywords whose value is an object of schemas (names to schemas).
const NAMED: [&str; 3] = ["properties", "patternProperties", "dependentSchemas"];

/// Keywords whose value is an array of schemas.
const LIST: [&str; 3] = ["allOf", "anyOf", "oneOf"];

/// Keywords left out of the document's copy.
const DROPPED: [&str; 6] = ["$schema", "$id", "$anchor", "$defs", "definitions", WRAPPED];

/// `schema`, a part of the tool schema `root`, as draft-07 with every local
/// reference inlined.
pub fn portable(schema: &Value, root: &Value) -> Value {
    convert(schema, root, 0)
}

fn convert(schema: &Value, root: &Value, depth: usize) -> Value {
    let Value::Object(map) = schema else {
        // `true`, `false`, or something that is not a schema: as it is.
        return schema.clone();
    };
    if let Some(Value::String(reference)) = map.get("$ref") {
        return inlined(reference, map, root, depth);
    }
    let mut out = Map::new();
    for (key, value) in map {
        if DROPPED.contains(&key.as_str()) {
            continue;
        }
        let converted = match key.as_str() {
            k if ONE.contains(&k) => convert(value, root, depth),
            k if NAMED.contains(&k) => match value {
                Value::Object(named) => Value::Object(
                    named
                        .iter()
                        .map(|(name, s)| (name.clone(), convert(s, root, depth)))
                        .collect(),
                ),
                other => other.clone(),
            },
            k if LIST.contains(&k) => list(value, root, depth),
            // Draft-07's tuple: `items` as an array (2020-12's `prefixItems`
            // is handled below, with the `items` that follows it).
            "items" if map.contains_key("prefixItems") => continue,
            "items" => match value {
                Value::Array(_) => list(value, root, depth),
                other => convert(other, root, depth),
            },
            "prefixItems" => {
                if let Some(rest) = map.get("items") {
                    out.insert("additionalItems".into(), convert(rest, root, depth));
                }
                out.insert("items".into(), list(value, root, depth));
                continue;
            }
            _ => value.clone(),
        };
        out.insert(key.clone(), converted);
    }
    Value::Object(out)
}

fn list(value: &Value, root: &Value, depth: usize) -> Value {
    match value {
        Value::Array(items) => {
            Value::Array(items.iter().map(|s| convert(s, root, depth)).collect())
        }
        other => other.clone(),
    }
}

/// The schema `reference` points at, converted in its place; the
/// reference's own `description` (draft-07 ignores siblings of `$ref`, but
/// a reader does not) is kept when the target has none, and its own
/// `default` and `examples` (the values for this place: what an example
/// call is made of) replace the target's.
fn inlined(reference: &str, at: &Map<String, Value>, root: &Value, depth: usize) -> Value {
    let target = reference
        .strip_prefix('#')
        .filter(|pointer| pointer.is_empty() || pointer.starts_with('/'))
        .and_then(|pointer| root.pointer(pointer));
    let mut schema = match target {
        Some(_) if depth >= MAX_INLINE => json!({
            "description": format!("(a recursive type, open below {MAX_INLINE} levels: {reference})")
        }),
        Some(target) => convert(target, root, depth + 1),
        None => json!({
            "description": format!("(a reference not resolved here: {reference})")
        }),
    };
    if let Value::Object(map) = &mut schema {
        if let Some(description) = at.get("description") {
            map.entry("description")
                .or_insert_with(|| description.clone());
        }
        for key in ["default", "examples"] {
            if let Some(value) = at.get(key) {
                map.insert(key.into(), value.clone());
            }
        }
    }
    schema
}

/// Whether `schema` already admits null.
pub fn admits_null(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == "null",
        Some(Value::Array(types)) => types.iter().any(|t| t == "null"),
        // No `type`: `{}`, or a combination; `anyOf` with a null member.
        None => match schema.get("anyOf").or_else(|| schema.get("oneOf")) {
            Some(Value::Array(options)) => options.iter().any(admits_null),
            _ => !schema.as_object().is_some_and(|m| {
                m.keys().any(|k| {
                    matches!(
                        k.as_str(),
                        "const" | "enum" | "allOf" | "not" | "properties" | "items"
                    )
                })
            }),
        },
        _ => false,
    }
}

/// `schema` or null.
pub fn or_null(schema: Value) -> Value {
    if admits_null(&schema) {
        schema
    } else {
        json!({"anyOf": [schema, {"type": "null"}]})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_references_are_inlined_and_definitions_left_out() {
        let root = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {"address": {"$anchor": "a", "type": "object",
                                  "properties": {"city": {"type": "string"}}}},
            "properties": {
                "home": {"$ref": "#/$defs/address", "description": "Where one lives",
                         "examples": [{"city": "Oslo"}]},
                "gone": {"$ref": "#/$defs/nowhere"},
            },
        });
        let out = portable(&root, &root);
        assert_eq!(
            out,
            json!({
                "type": "object",
                "properties": {
                    "home": {"type": "object", "properties": {"city": {"type": "string"}},
                             "description": "Where one lives", "examples": [{"city": "Oslo"}]},
                    "gone": {"description": "(a reference not resolved here: #/$defs/nowhere)"},
                },
            })
        );
    }

    #[test]
    fn a_recursive_type_is_open_below_the_limit() {
        let root = json!({
            "definitions": {"node": {"type": "object",
                "properties": {"next": {"$ref": "#/definitions/node"}}}},
            "$ref": "#/definitions/node",
        });
        let out = portable(&root, &root);
        let mut at = &out;
        for _ in 0..MAX_INLINE {
            at = &at["properties"]["next"];
        }
        assert!(
            at["description"]
                .as_str()
                .is_some_and(|d| d.contains("recursive"))
        );
    }

    #[test]
    fn tuples_become_draft_07_and_data_is_untouched() {
        let schema = json!({
            "type": "array",
            "prefixItems": [{"type": "string"}, {"type": "integer"}],
            "items": false,
            "default": ["$ref", 1],
            "enum": [{"$ref": "#/x", "prefixItems": 1}],
            "x-airlock-wrapped": true,
        });
        assert_eq!(
            portable(&schema, &schema),
            json!({
                "type": "array",
                "additionalItems": false,
                "items": [{"type": "string"}, {"type": "integer"}],
                "default": ["$ref", 1],
                "enum": [{"$ref": "#/x", "prefixItems": 1}],
            })
        );
    }

    #[test]
    fn null_is_added_only_where_it_is_missing() {
        assert!(admits_null(&json!({"type": ["string", "null"]})));
        assert!(admits_null(&json!({})));
        assert!(admits_null(
            &json!({"anyOf": [{"type": "string"}, {"type": "null"}]})
        ));
        assert!(!admits_null(&json!({"type": "string"})));
        assert!(!admits_null(&json!({"enum": ["a"]})));
        assert_eq!(
            or_null(json!({"type": "string"})),
            json!({"anyOf": [{"type": "string"}, {"type": "null"}]})
        );
    }
}
