//! Shared machinery for input and output schemas: compiling with the
//! `jsonschema` crate under the runtime's fixed options, following local
//! `$ref`s, keeping nesting bounded, and naming the place an error points at.

use jsonschema::paths::{Location, LocationSegment};
use jsonschema::{Draft, Validator};
use serde_json::Value;

use super::error::{MESSAGE_CHARS, SchemaError, cut};

/// Deepest nesting of arguments, results and schemas the runtime accepts.
/// Validation in `jsonschema` recurses along the value, so this bounds the
/// stack it can use. serde_json's own parser stops at 128; real tool
/// arguments are nowhere near either.
pub(crate) const MAX_DEPTH: usize = 64;

/// Compiles `schema` as draft 2020-12 with format assertions on, after
/// checking that its root is an object schema. References are resolved only
/// within the schema: nothing is fetched from files or the network.
pub(crate) fn compile(schema: &Value) -> Result<Validator, SchemaError> {
    if exceeds_depth(schema, MAX_DEPTH) {
        return Err(SchemaError::TooDeep { limit: MAX_DEPTH });
    }
    let root = schema.as_object().ok_or(SchemaError::NotAnObjectSchema)?;
    if root.get("type").and_then(Value::as_str) != Some("object") {
        return Err(SchemaError::NotAnObjectSchema);
    }
    jsonschema::options()
        .with_draft(Draft::Draft202012)
        .should_validate_formats(true)
        .offline()
        .build(schema)
        .map_err(|e| SchemaError::Invalid(cut(&e.to_string(), MESSAGE_CHARS)))
}

/// Follows `$ref`s of the form `#/...` (a JSON pointer into `root`), a few
/// hops at most, so that labels and coercion see the referenced schema.
/// Anything else (remote refs, anchors, cycles) leaves the schema as is.
pub(crate) fn resolve<'a>(root: &'a Value, mut schema: &'a Value) -> &'a Value {
    for _ in 0..8 {
        let Some(pointer) = schema
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix('#'))
        else {
            break;
        };
        match root.pointer(pointer) {
            Some(target) => schema = target,
            None => break,
        }
    }
    schema
}

/// Whether `value` nests containers more than `limit` deep. Iterative, so
/// it is safe on any input.
pub(crate) fn exceeds_depth(value: &Value, limit: usize) -> bool {
    let mut stack = vec![(value, 0usize)];
    while let Some((value, depth)) = stack.pop() {
        let is_container = matches!(value, Value::Array(_) | Value::Object(_));
        if is_container && depth >= limit {
            return true;
        }
        match value {
            Value::Array(items) => stack.extend(items.iter().map(|child| (child, depth + 1))),
            Value::Object(map) => stack.extend(map.values().map(|child| (child, depth + 1))),
            _ => {}
        }
    }
    false
}

/// Drops a value without recursion. serde_json's own drop recurses once
/// per level, which a hostile, very deep value could turn into a stack
/// overflow.
pub(crate) fn dismantle(value: Value) {
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}

/// An instance location as the client would write it: `order.items[2]`.
/// Returns the first property (the top-level parameter) separately.
pub(crate) fn describe_location(location: &Location) -> (Option<String>, String) {
    let mut top = None;
    let mut path = String::new();
    for segment in location.segments() {
        match segment {
            LocationSegment::Property(name) => {
                if top.is_none() && path.is_empty() {
                    top = Some(name.to_string());
                } else {
                    path.push('.');
                }
                path.push_str(&name);
            }
            LocationSegment::Index(i) => {
                path.push('[');
                path.push_str(&i.to_string());
                path.push(']');
            }
        }
    }
    (top, path)
}
