//! The document of the first-party components (`target/components`, built
//! by `cargo xtask build`) and the conformance fixtures
//! (`target/test-components/conformance.wasm`): methods, params, results,
//! errors, hints, examples, and what a token sees.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::{DISCOVER, VERSION, allows_get, document};
use crate::Runtime;
use crate::policy::{Policy, Token};
use crate::sandbox::{CompileCache, Sandbox, SandboxConfig};
use crate::tool::Hints;

fn components() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    [
        "components/catalog",
        "components/export",
        "components/types",
        "test-components/conformance",
        "components/webfetch",
    ]
    .iter()
    .map(|name| {
        let path = root.join(format!("target/{name}.wasm"));
        assert!(
            path.is_file(),
            "{} is missing: run `cargo xtask build` first",
            path.display()
        );
        path
    })
    .collect()
}

fn runtime() -> Runtime {
    let cache =
        CompileCache::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/test-cache"));
    let sandbox =
        Sandbox::new(&SandboxConfig::default().instances(4).cache(Some(cache))).expect("sandbox");
    let runtime = Runtime::new(sandbox, Policy::default());
    let report = runtime.load(&components());
    assert!(report.refused.is_empty(), "{:?}", report.refused.len());
    runtime
}

fn method<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["methods"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["name"] == name))
        .unwrap_or_else(|| panic!("no method {name}"))
}

#[test]
fn every_tool_is_a_method_with_its_params_result_errors_and_hints() {
    let runtime = runtime();
    let catalog = runtime.catalog();
    let doc = document(&catalog, None);
    assert_eq!(doc["openrpc"], VERSION);
    assert_eq!(doc["info"]["title"], "airlock");
    let names: Vec<&str> = doc["methods"]
        .as_array()
        .expect("methods")
        .iter()
        .filter_map(|m| m["name"].as_str())
        .collect();
    let tools: Vec<&str> = catalog.tools().map(|t| t.info.name.as_str()).collect();
    assert_eq!(names, tools);
    assert!(!names.contains(&DISCOVER));

    for m in doc["methods"].as_array().expect("methods") {
        assert_eq!(m["paramStructure"], "either", "{m}");
        let codes: Vec<&Value> = m["errors"]
            .as_array()
            .expect("errors")
            .iter()
            .map(|e| &e["code"])
            .collect();
        assert_eq!(codes, [-32602, -32001, -32002, -32000], "{m}");
        for hint in [
            "readOnlyHint",
            "destructiveHint",
            "idempotentHint",
            "openWorldHint",
        ] {
            assert!(m[format!("x-{hint}")].is_boolean(), "{hint} of {m}");
        }
        assert!(m["result"]["schema"].is_object(), "{m}");
    }

    // A wrapped scalar answers the scalar; the required parameter's
    // declared example makes the example call.
    let price = method(&doc, "lookup_price");
    assert_eq!(price["summary"], "Look up price");
    assert_eq!(
        price["params"],
        json!([{"name": "sku", "description": "Article number, e.g. SKU-1001", "required": true,
                "schema": {"type": "string", "description": "Article number, e.g. SKU-1001",
                           "examples": ["SKU-1001"], "title": "lookup_price_sku"}}])
    );
    assert_eq!(
        price["result"]["schema"],
        json!({"type": "number", "title": "lookup_price_result"})
    );
    assert_eq!(price["errors"][0]["data"], json!({"parameter": "sku"}));
    assert_eq!(price["x-readOnlyHint"], true);
    assert_eq!(price["x-allowGet"], true);
    assert_eq!(
        price["examples"][0]["params"],
        json!([{"name": "sku", "value": "SKU-1001"}])
    );
    // A required parameter without a declared value: no example.
    assert!(method(&doc, "fail").get("examples").is_none());
    assert!(method(&doc, "echo_str").get("examples").is_none());

    let restock = method(&doc, "restock");
    assert_eq!(restock["x-destructiveHint"], true);
    assert_eq!(restock["x-allowGet"], false);
    assert_eq!(
        restock["params"][1]["schema"],
        json!({"type": "integer", "minimum": 0, "maximum": 4294967295u32,
               "description": "Number of units to add (greater than zero)",
               "examples": [5], "title": "restock_units"})
    );
    // A destructive tool gets an example call too (whether the policy lets
    // it run is the server's business).
    assert_eq!(
        restock["examples"][0]["params"],
        json!([{"name": "sku", "value": "SKU-1001"}, {"name": "units", "value": 5}])
    );

    // Params in the order /rpc binds them by position, with defaults.
    let export = method(&doc, "export_orders");
    let order: Vec<&Value> = export["params"]
        .as_array()
        .expect("params")
        .iter()
        .map(|p| &p["name"])
        .collect();
    assert_eq!(
        order,
        ["customer_id", "max_age_days", "format", "include_header"]
    );
    assert_eq!(export["params"][1]["required"], false);
    assert_eq!(export["params"][1]["schema"]["default"], 90);

    // Every parameter with a default: an example pairing of them.
    let defaults = method(&doc, "echo_defaults");
    assert_eq!(
        defaults["examples"][0]["params"],
        json!([{"name": "count", "value": 7}, {"name": "ratio", "value": 0.5},
               {"name": "label", "value": "plain"}, {"name": "flag", "value": false},
               {"name": "colour", "value": "green"}])
    );
    assert_eq!(defaults["result"]["schema"]["type"], "object");
    assert!(defaults["result"]["schema"]["properties"]["colour"]["enum"].is_array());
    // An enum's first case stands for a required parameter.
    assert_eq!(
        method(&doc, "echo_enum")["examples"][0]["params"],
        json!([{"name": "value", "value": "red"}])
    );
    // No parameters: an example with none.
    assert_eq!(
        method(&doc, "test_simple_text")["examples"][0]["params"],
        json!([])
    );
    // A result that may be left out answers null.
    let optional = &method(&doc, "echo_optional")["result"]["schema"];
    assert_eq!(
        optional,
        &json!({"anyOf": [{"type": "string"}, {"type": "null"}], "title": "echo_optional_result"})
    );
    // No output schema: the content blocks.
    let blocks = &method(&doc, "content_blocks")["result"]["schema"];
    assert_eq!(blocks["type"], "array");

    // 2020-12 references and keywords do not reach the document, whose
    // root `#` is not the tool's.
    let text = doc.to_string();
    for gone in [
        "\"$ref\"",
        "\"$defs\"",
        "\"$schema\"",
        "\"$anchor\"",
        "x-airlock-wrapped",
    ] {
        assert!(!text.contains(gone), "{gone} in the document");
    }
    let address = &method(&doc, "json_schema_2020_12_tool")["params"];
    let address = address
        .as_array()
        .and_then(|p| p.iter().find(|p| p["name"] == "address"))
        .expect("address");
    assert_eq!(
        address["schema"]["properties"]["city"],
        json!({"type": "string"})
    );
    // Every parameter optional, but the empty call fails the tool's
    // `anyOf`: the declared examples, by position up to the last, make one
    // the tool's checks accept (an example of the `$ref`'s own place).
    assert_eq!(
        method(&doc, "json_schema_2020_12_tool")["examples"][0]["params"],
        json!([{"name": "name", "value": "Ada Lovelace"},
               {"name": "address", "value": {"street": "12 St James's Square", "city": "London"}},
               {"name": "contactMethod", "value": "phone"},
               {"name": "phone", "value": "+44 20 7946 0958"},
               {"name": "email", "value": "ada@example.com"}])
    );
}

#[test]
fn a_token_sees_only_its_tools() {
    let runtime = runtime();
    let token = Token::secret(
        "shop",
        [0; 32],
        Some(vec!["lookup_price".into(), "restock".into()]),
    );
    let doc = document(&runtime.catalog(), Some(&token));
    let names: Vec<&Value> = doc["methods"]
        .as_array()
        .expect("methods")
        .iter()
        .map(|m| &m["name"])
        .collect();
    assert_eq!(names, ["lookup_price", "restock"]);
}

#[test]
fn get_only_for_read_only_tools_that_are_not_destructive() {
    for hints in Hints::all_combinations() {
        assert_eq!(
            allows_get(&hints),
            hints.read_only && !hints.destructive,
            "{hints:?}"
        );
    }
}

/// The GET door checks the tool the call runs, not only the query's look
/// at the catalog: a destructive tool handed to it is refused, whatever
/// the policy (here: destructive calls allowed), and a read-only one runs.
#[tokio::test]
async fn the_get_door_refuses_what_it_may_not_run() {
    use crate::protocol::jsonrpc::{Id, Request};
    use crate::protocol::{mcp::Server, rpc};

    let policy =
        Policy::parse("[defaults]\ndestructive = \"allow\"\n", Path::new(".")).expect("policy");
    let cache =
        CompileCache::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/test-cache"));
    let sandbox =
        Sandbox::new(&SandboxConfig::default().instances(4).cache(Some(cache))).expect("sandbox");
    let runtime = Runtime::new(sandbox, policy);
    let report = runtime.load(&components()[..1]);
    assert!(report.refused.is_empty());
    let server = Server::new(std::sync::Arc::new(runtime));
    let peer = "127.0.0.1:1".parse().expect("address");
    let request = |method: &str, params: Value| Request {
        id: Id::from_value(json!(1)),
        method: method.into(),
        params: Some(params),
    };
    let answer = rpc::handle_get(
        &server,
        None,
        peer,
        request("restock", json!({"sku": "SKU-1001", "units": 1})),
    )
    .await;
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("POST"))
    );
    let answer = rpc::handle_get(
        &server,
        None,
        peer,
        request("lookup_price", json!(["SKU-1001"])),
    )
    .await;
    assert_eq!(answer["result"], 12.5, "{answer}");
}
