//! The OpenRPC description of `/rpc` (OpenRPC 1.3: the JSON-RPC
//! counterpart of OpenAPI): one document of the tools a caller may use,
//! answered by `rpc.discover`, `GET /rpc/openrpc.json` and
//! `airlock inspect --openrpc`, built from the live catalog each time (so
//! it follows hot reload).
//!
//! Each tool is a method named after it:
//! - `summary` its title (else the first line of its description),
//!   `description` its description;
//! - `params` its input schema's properties in order (the order `/rpc`
//!   binds positional params in), each with its schema (titled
//!   `TOOL_PARAM` unless it has a title, so a generated client's types
//!   have names), its `required` and its description; `paramStructure`
//!   `either`;
//! - `result` the value `/rpc` answers (titled `TOOL_result`): the tool's structured result,
//!   unwrapped when its output schema carries `x-airlock-wrapped`, else its
//!   MCP content blocks;
//! - `errors` what a call can answer besides its result (`-32602` with
//!   `data.parameter`, `-32001`, `-32002` with `data.retryAfterMs`,
//!   `-32000` with `data.kind`);
//! - the four hints as `x-readOnlyHint`, `x-destructiveHint`,
//!   `x-idempotentHint`, `x-openWorldHint`, and `x-allowGet` when the
//!   method may be called with `GET /rpc` ([`allows_get`]);
//! - `examples`: one pairing, "defaults", when every parameter up to the
//!   last one given has a declared value (its `default`, else the first of
//!   its `examples`, `const` or `enum`) and the tool's argument checks
//!   accept those values — so a tester such as
//!   `@open-rpc/test-coverage` can call the method. Its result's value is
//!   not known before the call: it is `null`, and says so; what the call
//!   answers is checked against the result schema.
//!
//! Schemas are rewritten as OpenRPC's draft-07 reads them ([`schema`]).

mod schema;

use serde_json::{Map, Value, json};

use super::jsonrpc;
use crate::catalog::{Catalog, Tool};
use crate::policy::Token;
use crate::tool::{Hints, ToolInfo};

/// The OpenRPC revision the document follows.
pub const VERSION: &str = "1.3.2";

/// The method that answers the document (reserved by OpenRPC).
pub const DISCOVER: &str = "rpc.discover";

/// Whether a tool may be called with `GET /rpc`: only a read-only tool
/// that is not destructive, whatever the policy allows.
pub fn allows_get(hints: &Hints) -> bool {
    hints.read_only && !hints.destructive
}

/// The document of the tools of `catalog` that `token` may use (all of
/// them without a token).
pub fn document(catalog: &Catalog, token: Option<&Token>) -> Value {
    let methods: Vec<Value> = catalog
        .tools()
        .filter(|tool| token.is_none_or(|t| t.allows_tool(&tool.info.name)))
        .map(|tool| method(tool))
        .collect();
    json!({
        "openrpc": VERSION,
        "info": {
            "title": "airlock",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "WebAssembly tools served by airlock as JSON-RPC 2.0 methods at /rpc \
                (POST; params by name or by position; the read-only methods marked \
                x-allowGet also as GET /rpc?method=NAME&params=JSON). The result is the \
                tool's own value.",
        },
        "methods": methods,
    })
}

/// One tool as a method object.
fn method(tool: &Tool) -> Value {
    let info = &tool.info;
    let params = params(info);
    let mut method = Map::new();
    method.insert("name".into(), info.name.clone().into());
    let summary = info
        .title
        .clone()
        .or_else(|| info.description.lines().next().map(str::to_string))
        .filter(|s| !s.trim().is_empty());
    if let Some(summary) = summary {
        method.insert("summary".into(), summary.into());
    }
    if !info.description.is_empty() {
        method.insert("description".into(), info.description.clone().into());
    }
    method.insert("paramStructure".into(), "either".into());
    // Only an example the tool's own argument checks accept (a schema may
    // constrain the parameters together, beyond each one's schema).
    let example = example(&params).filter(|example| {
        let values = example["params"]
            .as_array()
            .map(|p| p.iter().map(|p| p["value"].clone()));
        let values = Value::Array(values.into_iter().flatten().collect());
        tool.args.prepare(values).is_ok()
    });
    if let Some(example) = example {
        method.insert("examples".into(), json!([example]));
    }
    method.insert("params".into(), Value::Array(params));
    method.insert(
        "result".into(),
        json!({
            "name": format!("{}_result", info.name),
            "schema": titled(result_schema(info), &format!("{}_result", info.name)),
        }),
    );
    method.insert("errors".into(), errors(info));
    for (hint, on) in info.hints.annotations() {
        method.insert(format!("x-{hint}"), on);
    }
    method.insert("x-allowGet".into(), allows_get(&info.hints).into());
    Value::Object(method)
}

/// The content descriptors of the tool's parameters, in property order.
fn params(info: &ToolInfo) -> Vec<Value> {
    let root = &info.input_schema;
    let required: Vec<&str> = root
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(Value::Object(properties)) = root.get("properties") else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(name, property)| {
            let mut param = Map::new();
            param.insert("name".into(), name.clone().into());
            if let Some(Value::String(description)) = property.get("description") {
                param.insert("description".into(), description.clone().into());
            }
            param.insert("required".into(), required.contains(&name.as_str()).into());
            let schema = schema::portable(property, root);
            param.insert(
                "schema".into(),
                titled(schema, &format!("{}_{name}", info.name)),
            );
            Value::Object(param)
        })
        .collect()
}

/// `schema` with `title` when it has none: what a generator names its type
/// after (`lookup_price_sku` becomes `LookupPriceSku`, not a hash).
fn titled(mut schema: Value, title: &str) -> Value {
    if let Value::Object(map) = &mut schema {
        map.entry("title").or_insert_with(|| title.into());
    }
    schema
}

/// What `/rpc` answers for the tool, as a schema.
fn result_schema(info: &ToolInfo) -> Value {
    let Some(output) = &info.output_schema else {
        return json!({
            "description": "The tool's MCP content blocks (it declares no output schema).",
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "type": {
                        "type": "string",
                        "enum": ["text", "image", "audio", "resource", "resource_link"],
                    },
                },
                "required": ["type"],
            },
        });
    };
    if !info.wraps_result() {
        return schema::portable(output, output);
    }
    // `{"result": value}` answers `value`; a result that may be left out
    // (an option) answers null.
    let inner = output
        .pointer("/properties/result")
        .map_or_else(|| json!({}), |s| schema::portable(s, output));
    let required = output
        .get("required")
        .and_then(Value::as_array)
        .is_some_and(|names| names.iter().any(|n| n == "result"));
    if required {
        inner
    } else {
        schema::or_null(inner)
    }
}

/// The errors a call of the tool may answer (besides `-32601`, for a
/// method that is not there).
fn errors(info: &ToolInfo) -> Value {
    let parameter = info
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
        .and_then(|p| p.keys().next().cloned());
    let mut invalid = json!({
        "code": jsonrpc::INVALID_PARAMS,
        "message": "Invalid params: an argument is missing, unknown, or not of its schema \
                    (data.parameter names it, when it is one)",
    });
    if let (Some(parameter), Value::Object(map)) = (parameter, &mut invalid) {
        map.insert("data".into(), json!({ "parameter": parameter }));
    }
    json!([
        invalid,
        {
            "code": jsonrpc::NOT_PERMITTED,
            "message": "Not permitted: the policy refuses this call",
        },
        {
            "code": jsonrpc::BUSY,
            "message": "Busy: the tool runs as many calls as it may; retry after data.retryAfterMs",
            "data": { "retryAfterMs": 1000 },
        },
        {
            "code": jsonrpc::TOOL_FAILED,
            "message": "The tool failed: data.kind says how (tool-error, timeout, memory, fuel, \
                        stack, panic, crash, cancelled, output, bad-output, invalid-arguments)",
            "data": { "kind": "tool-error" },
        },
    ])
}

/// A declared value for a parameter: its `default`, else the first of its
/// `examples`, its `const`, or the first non-null of its `enum`.
fn declared(schema: &Value) -> Option<Value> {
    let first = |key: &str| {
        schema
            .get(key)
            .and_then(Value::as_array)
            .and_then(|values| values.iter().find(|v| !v.is_null()).cloned())
    };
    schema
        .get("default")
        .cloned()
        .or_else(|| first("examples"))
        .or_else(|| schema.get("const").cloned())
        .or_else(|| first("enum"))
}

/// The "defaults" pairing: each parameter at its declared value, up to the
/// first one without (the rest take their defaults on the server); none
/// when a required parameter has no declared value.
fn example(params: &[Value]) -> Option<Value> {
    let mut values = Vec::new();
    let mut complete = true;
    for param in params {
        let required = param["required"] == true;
        match (declared(&param["schema"]), required) {
            (Some(value), _) if complete => values.push(json!({
                "name": param["name"],
                "value": value,
            })),
            // A required parameter that cannot be given (or placed).
            (_, true) => return None,
            (Some(_), false) => {}
            (None, false) => complete = false,
        }
    }
    Some(json!({
        "name": "defaults",
        "description": "Each parameter at its declared value (its default, else its first \
                        example or allowed value).",
        "params": values,
        "result": {
            "name": "any",
            "description": "Not known before the call: any value of the result schema.",
            "value": null,
        },
    }))
}

#[cfg(test)]
mod tests;
