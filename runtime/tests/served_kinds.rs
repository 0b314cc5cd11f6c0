//! Components written for other hosts, served by `airlock serve` and used
//! by an MCP client over HTTP: plain WIT functions in JavaScript (jco
//! componentize) and Python (componentize-py), built without any airlock
//! SDK by `cargo xtask build`, and a wasmcp tools component. Each is
//! listed with exact schemas, called, and sandboxed.

use crate::support;

use serde_json::{Value, json};
use support::http::{Mcp, serve};
use support::test_component;

/// The tools of a `tools/list` answer, by name.
fn listed(mcp: &mut Mcp) -> Vec<Value> {
    let answer = mcp.request("tools/list", json!({}));
    answer["result"]["tools"]
        .as_array()
        .expect("tools")
        .to_vec()
}

fn tool<'a>(tools: &'a [Value], name: &str) -> &'a Value {
    tools
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("{name} is not listed"))
}

fn call(mcp: &mut Mcp, name: &str, arguments: Value) -> Value {
    let answer = mcp.request("tools/call", json!({"name": name, "arguments": arguments}));
    answer["result"].clone()
}

/// The annotations of a tool that declares no hints: all four false.
fn no_hints() -> Value {
    json!({
        "readOnlyHint": false,
        "destructiveHint": false,
        "idempotentHint": false,
        "openWorldHint": false,
    })
}

#[test]
fn javascript_plain_functions_are_listed_and_called() {
    let served = serve("", &[test_component("plain_js")], &[]);
    let mut mcp = Mcp::connect(served.addr, json!({}), &[]);
    let tools = listed(&mut mcp);
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    // componentize-js's own `init` export is no tool.
    assert_eq!(names, ["greet", "split", "text.reverse", "text.stats"]);
    assert_eq!(
        tool(&tools, "greet"),
        &json!({
            "name": "greet",
            "description": "`greet: func(name: string, excited: option<bool>) -> string` (no doc comment in its WIT).",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "excited": {"type": ["boolean", "null"]},
                },
                "required": ["name"],
                "additionalProperties": false,
            },
            "outputSchema": {
                "type": "object",
                "properties": {"result": {"type": "string"}},
                "required": ["result"],
            },
            "annotations": no_hints(),
            "execution": {"taskSupport": "forbidden"},
        })
    );
    assert_eq!(
        tool(&tools, "text.stats")["description"],
        "`stats: func(text: string) -> text-stats` of `airlock-test:plain-js/text@0.1.0` (no doc comment in its WIT)."
    );
    assert_eq!(
        tool(&tools, "text.stats")["outputSchema"],
        json!({
            "type": "object",
            "properties": {
                "words": {"type": "integer", "minimum": 0, "maximum": 4294967295u64},
                "chars": {"type": "integer", "minimum": 0, "maximum": 4294967295u64},
            },
            "required": ["words", "chars"],
            "additionalProperties": false,
        })
    );

    assert_eq!(
        call(&mut mcp, "greet", json!({"name": "Ada", "excited": true})),
        json!({
            "content": [{"type": "text", "text": "Hello, Ada!"}],
            "structuredContent": {"result": "Hello, Ada!"},
            "isError": false,
        })
    );
    assert_eq!(
        call(&mut mcp, "greet", json!({"name": "Ada"}))["structuredContent"],
        json!({"result": "Hello, Ada."})
    );
    assert_eq!(
        call(
            &mut mcp,
            "split",
            json!({"text": "a,b,c", "separator": ","})
        )["structuredContent"],
        json!({"result": ["a", "b", "c"]})
    );
    assert_eq!(
        call(&mut mcp, "split", json!({"text": "a,b", "separator": ""})),
        json!({
            "content": [{"type": "text", "text": "the separator is empty"}],
            "isError": true,
        })
    );
    assert_eq!(
        call(&mut mcp, "text.stats", json!({"text": "grüße  aus Köln"}))["structuredContent"],
        json!({"words": 3, "chars": 15})
    );
    assert_eq!(
        call(&mut mcp, "text.reverse", json!({"text": "Köln"}))["structuredContent"],
        json!({"result": "nlöK"})
    );
}

#[test]
fn python_plain_functions_are_listed_and_called() {
    let served = serve("", &[test_component("plain_py")], &[]);
    let mut mcp = Mcp::connect(served.addr, json!({}), &[]);
    let tools = listed(&mut mcp);
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    // componentize-py's own `exports.init` is no tool. Like jco and
    // wit-bindgen, componentize-py does not carry the WIT's doc comments
    // into the component: the descriptions are the signatures.
    assert_eq!(names, ["add", "divide", "norm", "shout"]);
    assert_eq!(
        tool(&tools, "add")["inputSchema"],
        json!({
            "type": "object",
            "properties": {
                "a": {"type": "integer", "minimum": i32::MIN, "maximum": i32::MAX},
                "b": {"type": "integer", "minimum": i32::MIN, "maximum": i32::MAX},
            },
            "required": ["a", "b"],
            "additionalProperties": false,
        })
    );
    assert_eq!(
        tool(&tools, "norm")["inputSchema"],
        json!({
            "type": "object",
            "properties": {
                "p": {
                    "type": "object",
                    "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                    "required": ["x", "y"],
                    "additionalProperties": false,
                },
            },
            "required": ["p"],
            "additionalProperties": false,
        })
    );
    assert_eq!(tool(&tools, "shout")["annotations"], no_hints());
    // A named type is named in the signature.
    assert_eq!(
        tool(&tools, "norm")["description"],
        "`norm: func(p: point) -> f64` (no doc comment in its WIT)."
    );

    assert_eq!(
        call(&mut mcp, "add", json!({"a": "40", "b": 2}))["structuredContent"],
        json!({"result": 42})
    );
    assert_eq!(
        call(&mut mcp, "divide", json!({"a": 1, "b": 0})),
        json!({
            "content": [{"type": "text", "text": "cannot divide 1.0 by zero"}],
            "isError": true,
        })
    );
    assert_eq!(
        call(&mut mcp, "norm", json!({"p": {"x": 3, "y": 4}}))["structuredContent"],
        json!({"result": 5.0})
    );
    assert_eq!(
        call(&mut mcp, "shout", json!({"words": ["a", "b"]}))["structuredContent"],
        json!({"result": ["B", "A"]})
    );
    // Out of the parameter's bounds: refused before the guest runs.
    assert_eq!(
        call(&mut mcp, "add", json!({"a": 1, "b": 1u64 << 40})),
        json!({
            "content": [{
                "type": "text",
                "text": "Parameter \"b\": 1099511627776 is greater than the maximum of 2147483647",
            }],
            "isError": true,
        })
    );
}

/// A wasmcp tools component: its annotations are the published hints, and
/// binding: the read-only `sneaky-write` cannot write the folder the policy
/// grants read-write.
#[test]
fn a_wasmcp_tools_component_is_listed_called_and_sandboxed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = format!(
        "[components.wasmcp_tools]\nfolders = [{{ host = \"{}\", guest = \"/data\", mode = \"read-write\" }}]\n",
        dir.path().display()
    );
    let served = serve(&policy, &[test_component("wasmcp_tools")], &[]);
    let mut mcp = Mcp::connect(served.addr, json!({}), &[]);
    let tools = listed(&mut mcp);
    assert_eq!(tools.len(), 9);
    assert_eq!(
        tool(&tools, "sneaky-write")["annotations"],
        json!({
            "readOnlyHint": true,
            "destructiveHint": false,
            "idempotentHint": false,
            "openWorldHint": false,
        })
    );
    assert_eq!(
        call(&mut mcp, "echo", json!({"text": "hi"})),
        json!({
            "content": [{"type": "text", "text": "hi"}],
            "structuredContent": {"echo": "hi"},
            "isError": false,
        })
    );
    let refused = call(&mut mcp, "sneaky-write", json!({"name": "x.txt"}));
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(
        refused["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("cannot write x.txt:")),
        "{refused}"
    );
    assert!(!dir.path().join("x.txt").exists());
    assert_eq!(
        call(
            &mut mcp,
            "save-note",
            json!({"name": "y.txt", "text": "new"})
        )["isError"],
        false
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("y.txt")).expect("created"),
        "new"
    );
}
