//! Plain components (no airlock contract): every exported function is a
//! tool with a schema from its WIT types, called in a fresh instance with
//! JSON converted on the host; hints come only from the policy; components
//! airlock cannot serve are refused before compiling, saying why.

use crate::support;

use airlock::Runtime;
use airlock::call::CallError;
use airlock::catalog::Kind;
use airlock::policy::Policy;
use airlock::sandbox::RunError;
use serde_json::{Value, json};
use support::{call, test_component};

fn plain() -> Runtime {
    support::runtime("", &[test_component("plain")])
}

fn description(runtime: &Runtime, tool: &str) -> String {
    let catalog = runtime.catalog();
    catalog.tool(tool).expect("tool").info.description.clone()
}

fn structured(runtime: &Runtime, tool: &str, args: Value) -> Value {
    let out = call(runtime, tool, args).unwrap_or_else(|e| panic!("{tool}: {e}"));
    out.structured.expect("structured output")
}

#[test]
fn every_exported_function_is_a_tool_named_by_the_rule() {
    let runtime = plain();
    let catalog = runtime.catalog();
    let names: Vec<&str> = catalog.tools().map(|t| t.info.name.as_str()).collect();
    for name in [
        "add",
        "write-file",
        "read-file",
        "undocumented",
        "types.echo-u8",
        "types.area",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    assert_eq!(catalog.components()[0].kind, Kind::Functions);
    let add = catalog.tool("add").expect("add");
    assert_eq!(
        add.info.input_schema,
        json!({
            "type": "object",
            "properties": {
                "a": {"type": "integer", "minimum": i64::MIN, "maximum": i64::MAX},
                "b": {"type": "integer", "minimum": i64::MIN, "maximum": i64::MAX},
            },
            "required": ["a", "b"],
            "additionalProperties": false,
        })
    );
    // No doc comment reaches a component built by wit-bindgen: the
    // signature says what to send.
    assert_eq!(
        description(&runtime, "undocumented"),
        "`undocumented: func(x: u8) -> u8` (no doc comment in its WIT)."
    );
    assert!(
        description(&runtime, "types.echo-point").contains("of `airlock-test:plain/types@0.1.0`")
    );
}

#[test]
fn every_row_of_the_type_table_round_trips_through_a_real_call() {
    let runtime = plain();
    let rows = [
        ("bool", json!(true)),
        ("s8", json!(-128)),
        ("s16", json!(-32768)),
        ("s32", json!(2147483647)),
        ("s64", json!(i64::MIN)),
        ("u8", json!(255)),
        ("u16", json!(65535)),
        ("u32", json!(4294967295u64)),
        ("u64", json!(u64::MAX)),
        ("f32", json!(1.5)),
        ("f64", json!(-0.125)),
        ("char", json!("ß")),
        ("string", json!("grüße, \"quoted\"\n")),
        ("bytes", json!("AP8Qgg==")),
        ("list", json!([0, 1, 4294967295u64])),
        ("option", json!(9)),
        ("result", json!({"err": 3})),
        ("tuple", json!(["x", 7, false])),
        ("point", json!({"x": 1.5, "y": -2.0})),
        ("shape", json!({"circle": 2.0})),
        ("shape", json!("dot")),
        ("color", json!("blue")),
        ("perms", json!(["read", "exec"])),
        (
            "profile",
            json!({"name": "ada", "nickname": null, "tags": ["a", "b"], "home": {"x": 0.0, "y": 1.0}}),
        ),
    ];
    for (ty, v) in rows {
        let tool = format!("types.echo-{ty}");
        let out = structured(&runtime, &tool, json!({ "v": v.clone() }));
        let expected = match ty {
            // A record is the structured result as it is.
            "point" | "profile" => v.clone(),
            // `echo-result` returns `result<result<string, u32>, string>`: the
            // outer ok is the result.
            _ => json!({ "result": v.clone() }),
        };
        assert_eq!(out, expected, "{tool}");
    }
    // An omitted option is none, and a none result is an empty object.
    assert_eq!(
        structured(&runtime, "types.echo-option", json!({})),
        json!({})
    );
}

#[test]
fn arguments_are_coerced_and_refused_like_every_tool() {
    let runtime = plain();
    assert_eq!(
        structured(&runtime, "add", json!({"a": "40", "b": 2})),
        json!({"result": 42})
    );
    let err = call(&runtime, "add", json!({"a": "soon", "b": 1})).expect_err("refused");
    assert_eq!(
        err.to_string(),
        r#"Parameter "a" expects an integer, got "soon""#
    );
    let err = call(&runtime, "types.echo-u8", json!({"v": 256})).expect_err("refused");
    assert!(
        err.to_string().starts_with(r#"Parameter "v": 256"#),
        "{err}"
    );
    let err = call(&runtime, "types.echo-color", json!({"v": "mauve"})).expect_err("refused");
    assert!(err.is_argument_error(), "{err}");
    // Positional arguments bind in the WIT order.
    assert_eq!(
        structured(&runtime, "add", json!([1, 2])),
        json!({"result": 3})
    );
}

#[test]
fn an_err_is_a_tool_error_with_its_text_or_json() {
    let runtime = plain();
    assert_eq!(
        structured(&runtime, "types.divide", json!({"a": 7, "b": 2})),
        json!({"result": 3})
    );
    match call(&runtime, "types.divide", json!({"a": 7, "b": 0})) {
        Err(CallError::Run(RunError::Failed(text))) => assert_eq!(text, "cannot divide 7 by 0"),
        other => panic!("expected a tool error, got {other:?}"),
    }
    match call(
        &runtime,
        "types.out-of-bounds",
        json!({"p": {"x": 1.0, "y": 2.0}}),
    ) {
        Err(CallError::Run(RunError::Failed(text))) => assert_eq!(text, r#"{"x":1.0,"y":2.0}"#),
        other => panic!("expected a tool error, got {other:?}"),
    }
    match call(&runtime, "types.not-a-number", json!({})) {
        Err(CallError::Run(RunError::BadOutput(text))) => assert!(text.contains("NaN"), "{text}"),
        other => panic!("expected bad output, got {other:?}"),
    }
    // A string result is a text block too.
    let out = call(&runtime, "types.echo-string", json!({"v": "plain text"})).expect("call");
    assert_eq!(support::text(&out), "plain text");
}

/// `write-file` declares no hints: without a policy's hints it is
/// create-only, so it may create a file but not overwrite one; declared
/// destructive (and allowed), it may.
#[test]
fn hints_come_from_the_policy_and_are_enforced() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("old.txt"), "before").expect("seed");
    let folders = format!(
        "folders = [{{ host = \"{}\", guest = \"/data\", mode = \"read-write\" }}]",
        dir.path().display()
    );
    let strict = support::runtime(
        &format!("[components.plain]\n{folders}\n"),
        &[test_component("plain")],
    );
    let tool = strict.catalog().tool("write-file").expect("tool").clone();
    assert_eq!(tool.info.hints, Default::default());
    assert!(
        call(
            &strict,
            "write-file",
            json!({"name": "new.txt", "text": "x"})
        )
        .is_ok()
    );
    match call(
        &strict,
        "write-file",
        json!({"name": "old.txt", "text": "after"}),
    ) {
        Err(CallError::Run(RunError::Failed(text))) => {
            assert!(text.contains("not permitted"), "{text}")
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(
        std::fs::read_to_string(dir.path().join("old.txt")).expect("read"),
        "before"
    );

    let declared = format!(
        "[components.plain]\n{folders}\n\n[components.plain.tools.write-file]\n\
         hints = [\"destructive\"]\ndestructive = \"allow\"\n"
    );
    let allowed = support::runtime(&declared, &[test_component("plain")]);
    let tool = allowed.catalog().tool("write-file").expect("tool").clone();
    assert!(tool.info.hints.destructive);
    assert_eq!(tool.info.to_mcp()["annotations"]["destructiveHint"], true);
    assert!(
        call(
            &allowed,
            "write-file",
            json!({"name": "old.txt", "text": "after"})
        )
        .is_ok()
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("old.txt")).expect("read"),
        "after"
    );

    // Destructive without the policy's consent is refused before running.
    let denied = support::runtime(
        &format!(
            "[components.plain]\n{folders}\n\n[components.plain.tools.write-file]\n\
             hints = [\"destructive\"]\n"
        ),
        &[test_component("plain")],
    );
    let err = call(
        &denied,
        "write-file",
        json!({"name": "old.txt", "text": "x"}),
    )
    .expect_err("denied");
    assert!(matches!(err, CallError::Refused(_)), "{err}");
}

/// `wasi:config/store` answers exactly the policy's `config` (a tool
/// section replaces the component's), and nothing without one.
#[test]
fn config_values_come_from_the_policy() {
    let runtime = support::runtime(
        "[components.plain]\nconfig = { region = \"eu-west\", tier = \"gold\" }\n\n\
         [components.plain.tools.add]\nconfig = {}\n",
        &[test_component("plain")],
    );
    let value = |key: &str| structured(&runtime, "config-value", json!({ "key": key }));
    assert_eq!(value("region"), json!({"result": "eu-west"}));
    assert_eq!(value("missing"), json!({}));
    assert_eq!(
        runtime
            .grant_for(runtime.catalog().tool("add").expect("add"))
            .config,
        vec![]
    );
    let bare = plain();
    assert_eq!(
        structured(&bare, "config-value", json!({"key": "region"})),
        json!({})
    );
}

#[test]
fn hints_for_a_tool_that_declares_its_own_are_refused() {
    let err = support::first_refusal(
        "[components.hostile.tools.good]\nhints = [\"read-only\"]\n",
        &[test_component("hostile")],
    );
    assert!(err.contains("declares its own"), "{err}");
    assert!(err.contains("[components.hostile.tools.good]"), "{err}");
}

#[test]
fn a_resource_parameter_refuses_the_component_naming_the_function() {
    let err = support::first_refusal("", &[test_component("plain_resource")]);
    assert!(
        err.contains("function airlock-test:counters/counters@0.1.0#peek cannot be a tool"),
        "{err}"
    );
    assert!(
        err.contains("parameter `c` is a resource handle (borrow<counter>)"),
        "{err}"
    );
}

#[test]
fn a_component_with_nothing_to_serve_is_refused_before_compiling() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = airlock::sandbox::CompileCache::new(dir.path());
    let sandbox = airlock::sandbox::Sandbox::new(
        &airlock::sandbox::SandboxConfig::default()
            .instances(2)
            .cache(Some(cache)),
    )
    .expect("sandbox");
    let runtime = Runtime::new(sandbox, Policy::default());
    let report = runtime.load(&[test_component("nothing")]);
    let err = report.refused[0].to_string();
    assert!(
        err.contains("exports nothing airlock can serve (only wasi:cli/run@"),
        "{err}"
    );
    assert!(err.contains("Tools without the airlock SDK"), "{err}");
    // Refused before compiling: nothing reached the compile cache.
    assert_eq!(
        std::fs::read_dir(dir.path())
            .map(|d| d.count())
            .unwrap_or(0),
        0
    );
}

/// Appends a custom section to a component (it lands at the top level).
fn with_custom_section(mut wasm: Vec<u8>, name: &str, data: &[u8]) -> Vec<u8> {
    fn leb(mut n: usize, out: &mut Vec<u8>) {
        loop {
            let byte = (n & 0x7f) as u8;
            n >>= 7;
            out.push(if n == 0 { byte } else { byte | 0x80 });
            if n == 0 {
                break;
            }
        }
    }
    let mut body = Vec::new();
    leb(name.len(), &mut body);
    body.extend_from_slice(name.as_bytes());
    body.extend_from_slice(data);
    wasm.push(0);
    leb(body.len(), &mut wasm);
    wasm.extend_from_slice(&body);
    wasm
}

/// Doc comments reach airlock through the `package-docs` custom section
/// (the one `wit-component` writes for a WIT package; wit-bindgen does not
/// carry docs into a component, so this test adds the section itself).
#[test]
fn doc_comments_become_descriptions() {
    let wasm = std::fs::read(test_component("plain")).expect("read");
    // Version 0 of the section: a byte, then JSON keyed by the component's
    // own world (`root`).
    let json = br#"{"worlds":{"root":{"funcs":{"add":"Adds two integers."}}}}"#;
    let docs = [b"\0".as_slice(), json.as_slice()].concat();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("documented.wasm");
    std::fs::write(&path, with_custom_section(wasm, "package-docs", &docs)).expect("write");
    let runtime = support::runtime("", &[path]);
    assert_eq!(description(&runtime, "add"), "Adds two integers.");
    assert!(description(&runtime, "undocumented").contains("no doc comment"));
}
