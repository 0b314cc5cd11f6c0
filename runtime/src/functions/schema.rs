//! JSON Schema of WIT types: what a plain function's parameters and result
//! look like as JSON. One convention per type, the same in both directions
//! ([`super::value`] converts exactly these shapes):
//!
//! | WIT | JSON |
//! | --- | --- |
//! | `bool` | boolean |
//! | `s8` … `u64` | integer, with the type's exact `minimum` and `maximum` |
//! | `f32`, `f64` | number (`f32` within its finite range) |
//! | `char` | a string of exactly one character |
//! | `string` | string |
//! | `list<u8>` | a base64 string (standard alphabet, padded) |
//! | `list<T>` | array of `T`; `list<T, N>` with exactly `N` items |
//! | `map<string, V>` | object of `V` |
//! | `option<T>` | `T` or null; a parameter or record field of an option type is not required |
//! | `result<T, E>` | `{"ok": T}` or `{"err": E}` (a function's own result: see [`super::value`]) |
//! | `tuple<A, B>` | array with `prefixItems` `[A, B]` |
//! | `record` | object; every field not of an option type is required; no other keys |
//! | `variant` | `{"case": payload}`, or the string `"case"` for a case without payload (`oneOf`) |
//! | `enum` | one of its case names (string `enum`) |
//! | `flags` | array of the names of the flags that are set (no repeats) |
//!
//! Names (record fields, cases, flags) are WIT's own kebab-case names.
//! Doc comments of named types, fields and cases become `description`s.

use serde_json::{Map, Value, json};

use super::ty::Ty;

/// The pattern of standard, padded base64.
pub const BASE64_PATTERN: &str = "^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$";

/// The schema of a value of type `ty`.
pub fn of(ty: &Ty) -> Value {
    match ty {
        Ty::Bool => json!({"type": "boolean"}),
        Ty::S8 => integer(i8::MIN.into(), i8::MAX.into()),
        Ty::S16 => integer(i16::MIN.into(), i16::MAX.into()),
        Ty::S32 => integer(i32::MIN.into(), i32::MAX.into()),
        Ty::S64 => integer(i64::MIN.into(), i64::MAX.into()),
        Ty::U8 => integer(0.into(), u8::MAX.into()),
        Ty::U16 => integer(0.into(), u16::MAX.into()),
        Ty::U32 => integer(0.into(), u32::MAX.into()),
        Ty::U64 => integer(0.into(), u64::MAX.into()),
        Ty::F32 => json!({
            "type": "number",
            "minimum": -f64::from(f32::MAX),
            "maximum": f64::from(f32::MAX),
        }),
        Ty::F64 => json!({"type": "number"}),
        Ty::Char => json!({"type": "string", "minLength": 1, "maxLength": 1}),
        Ty::String => json!({"type": "string"}),
        Ty::Bytes => json!({
            "type": "string",
            "contentEncoding": "base64",
            "pattern": BASE64_PATTERN,
        }),
        Ty::List(item) => json!({"type": "array", "items": of(item)}),
        Ty::FixedList(item, n) => json!({
            "type": "array", "items": of(item), "minItems": n, "maxItems": n,
        }),
        Ty::Map(value) => json!({"type": "object", "additionalProperties": of(value)}),
        Ty::Option(inner) => nullable(of(inner)),
        Ty::Result { ok, err } => json!({
            "oneOf": [
                tagged("ok", ok.as_deref().map_or(json!({"type": "null"}), of)),
                tagged("err", err.as_deref().map_or(json!({"type": "null"}), of)),
            ]
        }),
        Ty::Tuple(items) => json!({
            "type": "array",
            "prefixItems": items.iter().map(of).collect::<Vec<_>>(),
            "items": false,
            "minItems": items.len(),
        }),
        Ty::Record { docs, fields } => {
            let mut properties = Map::new();
            let mut required = Vec::new();
            for field in fields {
                properties.insert(field.name.clone(), described(of(&field.ty), &field.docs));
                if !matches!(field.ty, Ty::Option(_)) {
                    required.push(Value::from(field.name.clone()));
                }
            }
            described(
                json!({
                    "type": "object",
                    "properties": properties,
                    "required": required,
                    "additionalProperties": false,
                }),
                docs,
            )
        }
        Ty::Variant { docs, cases } => {
            let one_of: Vec<Value> = cases
                .iter()
                .map(|case| {
                    let schema = match &case.ty {
                        Some(ty) => tagged(&case.name, of(ty)),
                        None => json!({"const": case.name}),
                    };
                    described(schema, &case.docs)
                })
                .collect();
            described(json!({ "oneOf": one_of }), docs)
        }
        Ty::Enum { docs, cases } => {
            let names: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
            described(json!({"type": "string", "enum": names}), docs)
        }
        Ty::Flags { docs, flags } => {
            let names: Vec<&str> = flags.iter().map(|f| f.name.as_str()).collect();
            described(
                json!({
                    "type": "array",
                    "items": {"type": "string", "enum": names},
                    "uniqueItems": true,
                }),
                docs,
            )
        }
    }
}

fn integer(minimum: Value, maximum: Value) -> Value {
    json!({"type": "integer", "minimum": minimum, "maximum": maximum})
}

/// `{"name": payload}` and nothing else.
fn tagged(name: &str, payload: Value) -> Value {
    json!({
        "type": "object",
        "properties": { name: payload },
        "required": [name],
        "additionalProperties": false,
    })
}

/// `schema` with a `description`, when there is one.
fn described(mut schema: Value, docs: &Option<String>) -> Value {
    if let (Some(docs), Value::Object(map)) = (docs, &mut schema) {
        map.insert("description".into(), docs.clone().into());
    }
    schema
}

/// `schema` or null. A plain `type` gains `"null"` (so the argument
/// pipeline still coerces `"42"` for an `option<u32>`); anything else is
/// wrapped in `anyOf`.
fn nullable(mut schema: Value) -> Value {
    let Value::Object(map) = &mut schema else {
        return json!({"anyOf": [schema, {"type": "null"}]});
    };
    let plain = !["oneOf", "anyOf", "const"]
        .iter()
        .any(|k| map.contains_key(*k));
    match map.get_mut("type") {
        Some(Value::String(name)) if plain => {
            let name = std::mem::take(name);
            map.insert("type".into(), json!([name, "null"]));
            if let Some(Value::Array(names)) = map.get_mut("enum") {
                names.push(Value::Null);
            }
            schema
        }
        _ => json!({"anyOf": [schema, {"type": "null"}]}),
    }
}

/// The input schema of a function with `params`: an object with one
/// property per parameter; every parameter not of an option type is
/// required.
pub fn input(params: &[(String, Ty)]) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for (name, ty) in params {
        properties.insert(name.clone(), of(ty));
        if !matches!(ty, Ty::Option(_)) {
            required.push(Value::from(name.clone()));
        }
    }
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

/// What a function's result becomes as structured output, and its schema
/// (see [`super::value::Returned`]): a record as it is, anything else as
/// `{"result": …}`; no result as `{"result": true}`. A `result<T, E>`
/// stands for `T` (its `err` is a tool error).
pub fn output(result: Option<&Ty>) -> Value {
    let ty = match result {
        Some(Ty::Result { ok, .. }) => ok.as_deref(),
        other => other,
    };
    match ty {
        None => wrapped(json!({"type": "boolean"}), true),
        Some(ty @ Ty::Record { .. }) => of(ty),
        Some(ty @ Ty::Option(_)) => wrapped(of(ty), false),
        Some(ty) => wrapped(of(ty), true),
    }
}

fn wrapped(schema: Value, required: bool) -> Value {
    let required: Vec<&str> = if required { vec!["result"] } else { vec![] };
    json!({"type": "object", "properties": {"result": schema}, "required": required})
}
