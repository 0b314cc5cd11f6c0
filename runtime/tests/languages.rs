//! Tools in Python and JavaScript, in-process: the example components
//! (`examples/python/shipping`, `examples/js/wordstats`, built by `cargo
//! xtask build`) are loaded, listed and called, with an argument coercion,
//! a refusal by the runtime and a tool error each.
//!
//! The `new_project_*` tests are heavy (each installs its language's
//! toolchain into the generated project, as its README says) and ignored by
//! a plain `cargo test`; `cargo xtask test` runs them as their own step with
//! `cargo test -p airlock --test runtime languages:: -- --ignored`.

use crate::support;

use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

use airlock::Runtime;
use airlock::call::CallError;
use airlock::sandbox::RunError;
use serde_json::{Value, json};
use support::{call, example, workspace};

fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| support::runtime("", &[example("shipping"), example("wordstats")]))
}

fn structured(tool: &str, args: Value) -> Value {
    support::structured(runtime(), tool, args)
}

fn error(tool: &str, args: Value) -> CallError {
    support::call_error(runtime(), tool, args)
}

fn listed(tool: &str) -> Value {
    runtime()
        .catalog()
        .tool(tool)
        .unwrap_or_else(|| panic!("{tool} is not listed"))
        .info
        .to_mcp()
}

#[test]
fn python_tool_is_listed_with_its_schema_and_hints() {
    let tool = listed("shipping_quote");
    assert_eq!(tool["title"], "Shipping quote");
    assert_eq!(
        tool["description"],
        "Quotes the price and delivery time of sending parcels to a region."
    );
    let schema = &tool["inputSchema"];
    assert_eq!(schema["required"], json!(["destination", "weight_kg"]));
    assert_eq!(
        schema["properties"]["destination"],
        json!({"type": "string", "enum": ["domestic", "eu", "world"], "description": "Where the parcels go"})
    );
    assert_eq!(schema["properties"]["parcels"]["type"], "integer");
    assert_eq!(schema["properties"]["parcels"]["default"], 1);
    assert_eq!(schema["properties"]["express"]["type"], "boolean");
    assert_eq!(
        schema["properties"]["labels"]["items"],
        json!({"type": "string"})
    );
    assert_eq!(tool["outputSchema"]["type"], "object");
    assert_eq!(
        tool["annotations"],
        json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false, "title": "Shipping quote"})
    );
}

#[test]
fn python_tool_is_called_with_a_coerced_integer_and_defaults() {
    let out = structured(
        "shipping_quote",
        json!({"destination": "eu", "weight_kg": "2.5", "parcels": "42", "reference": "PO-7"}),
    );
    assert_eq!(
        out,
        json!({"destination": "eu", "parcels": 42, "total": 472.5, "days": 4, "notes": ["reference: PO-7"]})
    );
    let out = structured(
        "shipping_quote",
        json!({"destination": "world", "weight_kg": 10, "express": "true", "labels": ["fragile"]}),
    );
    assert_eq!(out["days"], 4);
    assert_eq!(out["total"], 68.0);
    assert_eq!(out["notes"], json!(["label: fragile"]));
}

#[test]
fn python_tool_error_reaches_the_caller() {
    let err = error(
        "shipping_quote",
        json!({"destination": "eu", "weight_kg": 50}),
    );
    assert!(
        matches!(err, CallError::Run(RunError::Failed(ref m))
            if m == "a parcel must weigh more than 0 and at most 30 kg, not 50.0"),
        "{err:?}"
    );
}

#[test]
fn python_arguments_are_checked_by_the_runtime() {
    let err = error(
        "shipping_quote",
        json!({"destination": "mars", "weight_kg": 1}),
    );
    assert!(err.is_argument_error(), "{err:?}");
    let err = error(
        "shipping_quote",
        json!({"destination": "eu", "weight_kg": 1, "parcels": "many"}),
    );
    assert_eq!(
        err.to_string(),
        r#"Parameter "parcels" expects an integer, got "many""#
    );
}

#[test]
fn js_tool_is_listed_with_its_schema_and_hints() {
    let tool = listed("word_stats");
    assert_eq!(tool["title"], "Word statistics");
    let schema = &tool["inputSchema"];
    assert_eq!(schema["required"], json!(["text"]));
    assert_eq!(
        schema["properties"]["top"],
        json!({"type": "integer", "description": "How many of the most frequent words to list", "default": 3, "minimum": 0})
    );
    assert_eq!(
        schema["properties"]["order"]["enum"],
        json!(["count", "alphabetical"])
    );
    assert_eq!(schema["properties"]["min_length"]["type"], "integer");
    assert_eq!(tool["annotations"]["readOnlyHint"], true);
    assert_eq!(tool["annotations"]["openWorldHint"], false);
    assert_eq!(
        tool["outputSchema"]["required"],
        json!(["words", "distinct", "top"])
    );
}

#[test]
fn js_tool_is_called_with_a_coerced_integer_and_defaults() {
    let out = structured(
        "word_stats",
        json!({"text": "the cat and the hat and the bat", "top": "42"}),
    );
    assert_eq!(out["words"], 8);
    assert_eq!(out["distinct"], 5);
    assert_eq!(out["top"][0], json!({"word": "the", "count": 3}));
    assert_eq!(out["top"].as_array().map(Vec::len), Some(5));
    let out = structured(
        "word_stats",
        json!({"text": "b a B c", "case_sensitive": "true", "order": "alphabetical", "ignore": ["c"]}),
    );
    assert_eq!(
        out["top"],
        json!([{"word": "B", "count": 1}, {"word": "a", "count": 1}, {"word": "b", "count": 1}])
    );
}

#[test]
fn js_tool_error_reaches_the_caller() {
    let err = error("word_stats", json!({"text": "   "}));
    assert!(
        matches!(err, CallError::Run(RunError::Failed(ref m))
            if m == "the text is empty: there is nothing to count"),
        "{err:?}"
    );
}

#[test]
fn js_arguments_are_checked_by_the_runtime() {
    let err = error("word_stats", json!({"text": "x", "top": "soon"}));
    assert_eq!(
        err.to_string(),
        r#"Parameter "top" expects an integer, got "soon""#
    );
    let err = error("word_stats", json!({"text": "x", "order": "random"}));
    assert!(err.is_argument_error(), "{err:?}");
}

// ---------------------------------------------------------------------------
// `airlock new`, then the README's build commands, then `airlock inspect`
// and `airlock call` on the result. Heavy: run with `-- --ignored`.

fn airlock() -> Command {
    Command::new(env!("CARGO_BIN_EXE_airlock"))
}

/// The lines of the first ```sh block under the README's `## Build`.
fn build_commands(readme: &str) -> Vec<String> {
    let build = readme
        .split("\n## Build")
        .nth(1)
        .expect("the README has a ## Build section");
    let block = build
        .split("```sh\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("the Build section has a ```sh block");
    block
        .lines()
        .map(|l| l.split(" #").next().unwrap_or(l).trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

fn run_in(dir: &Path, line: &str) {
    eprintln!("+ (in {}) {line}", dir.display());
    // The generated project builds into its own `target/`, as its README
    // says, not into the one `cargo xtask` sets for this checkout.
    let status = Command::new("sh")
        .arg("-c")
        .arg(line)
        .current_dir(dir)
        .env_remove("CARGO_TARGET_DIR")
        .status()
        .unwrap_or_else(|e| panic!("cannot run {line}: {e}"));
    assert!(status.success(), "{line} failed with {status}");
}

/// A tool that imports a PyPI package (pinned in the project's
/// `requirements.txt`) lazily, inside the function, and looks up a codec by
/// name: both only work if the build put them into the component. And one
/// that imports a module nothing imported at build time.
const PYTHON_DEPENDENCY: (&str, &str) = (
    "tabulate==0.9.0\n",
    r#"

@tool(read_only=True, idempotent=True)
def table(rows: Annotated[list[str], "Rows of comma-separated cells"]) -> str:
    """Formats rows as a text table."""
    from tabulate import tabulate

    escaped = rows[0].encode("unicode_escape").decode("ascii")
    return tabulate([r.split(",") for r in rows[1:]], headers=escaped.split(","))


@tool(read_only=True, idempotent=True)
def late_import() -> str:
    """Imports a module that is not in the component."""
    import xml.dom.minidom

    return xml.dom.minidom.__name__


Tools = toolbox(order_total, pricing, price_order, table, late_import, skills("skills"))
"#,
);

/// Adds a PyPI dependency and two tools to a generated Python project.
fn add_python_dependency(project: &Path) {
    let (requirement, tools) = PYTHON_DEPENDENCY;
    let requirements = project.join("requirements.txt");
    let mut text = std::fs::read_to_string(&requirements).expect("requirements.txt");
    text.push_str(requirement);
    std::fs::write(&requirements, text).expect("requirements.txt");
    let app = project.join("app.py");
    let text = std::fs::read_to_string(&app).expect("app.py");
    let line = "Tools = toolbox(order_total, pricing, price_order, skills(\"skills\"))\n";
    assert!(
        text.contains(line),
        "the template's app.py ends with {line}"
    );
    let text = text.replace(line, "");
    std::fs::write(&app, text + tools).expect("app.py");
}

/// `airlock call WASM TOOL ARGS…`: its exit code, stdout and stderr.
fn call_tool(wasm: &Path, tool: &str, args: &[&str]) -> (Option<i32>, String, String) {
    let out = airlock()
        .arg("call")
        .arg(wasm)
        .arg(tool)
        .args(args)
        .output()
        .expect("airlock call");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn new_project(lang: &str) {
    let dir = tempfile::tempdir().expect("temp dir");
    let name = format!("my-{lang}-tool");
    let project = dir.path().join(&name);
    let out = airlock()
        .args(["new", project.to_str().unwrap(), "--lang", lang])
        .output()
        .expect("airlock new");
    assert!(
        out.status.success(),
        "airlock new: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    // A second `new` into the same folder is refused and changes nothing.
    let again = airlock()
        .args(["new", project.to_str().unwrap(), "--lang", lang])
        .output()
        .expect("airlock new");
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("already exists"));

    let readme = std::fs::read_to_string(project.join("README.md")).expect("README");
    assert!(
        readme.contains("airlock call"),
        "the README tells how to call"
    );
    assert!(
        readme.contains("airlock serve"),
        "the README tells how to serve"
    );
    if lang == "python" {
        add_python_dependency(&project);
    }
    for line in build_commands(&readme) {
        run_in(&project, &line);
    }
    let wasm = project.join(format!("{name}.wasm"));
    let out = airlock()
        .arg("inspect")
        .arg(&wasm)
        .arg("--no-cache")
        .output()
        .expect("airlock inspect");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "inspect: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("order_total — Order total"), "{text}");
    // The template's resource and prompt, in each language.
    assert!(
        text.contains("resource file:///pricing.md — pricing (text/markdown)"),
        "{text}"
    );
    assert!(
        text.contains("prompt price_order(item, quantity?)"),
        "{text}"
    );
    for param in [
        "item",
        "unit_price",
        "quantity",
        "gift_wrap",
        "currency",
        "notes",
        "coupon",
    ] {
        assert!(text.contains(param), "{param} missing in {text}");
    }

    let out = airlock()
        .arg("call")
        .arg(&wasm)
        .args([
            "order_total",
            "item=green tea",
            "unit_price=2.25",
            "quantity=3",
            "gift_wrap=true",
        ])
        .output()
        .expect("airlock call");
    assert!(
        out.status.success(),
        "call: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result: Value = serde_json::from_slice(&out.stdout).expect("call prints JSON");
    assert_eq!(
        result["structuredContent"],
        json!({"total": 9.25, "summary": "3 x green tea: 9.25 EUR"})
    );
    let out = airlock()
        .arg("call")
        .arg(&wasm)
        .args(["order_total", "item=tea", "unit_price=1", "quantity=0"])
        .output()
        .expect("airlock call");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("quantity must be 1 to 1000, not 0"));

    if lang == "python" {
        let (code, stdout, stderr) = call_tool(&wasm, "table", &["rows:=[\"né,qty\",\"tea,3\"]"]);
        assert_eq!(code, Some(0), "{stderr}");
        let result: Value = serde_json::from_str(&stdout).expect("call prints JSON");
        assert_eq!(
            result["structuredContent"]["result"],
            "n\\xe9      qty\n-------  -----\ntea          3"
        );
        let (code, _, stderr) = call_tool(&wasm, "late_import", &[]);
        assert_eq!(code, Some(1), "{stderr}");
        assert!(
            stderr.contains("No module named 'xml' in this component")
                && stderr.contains("Import it at the top of app.py"),
            "{stderr}"
        );
    }
}

#[test]
#[ignore = "heavy: builds a generated project (cargo xtask test runs it)"]
fn new_project_rust_builds_and_passes_inspect() {
    new_project("rust");
}

#[test]
#[ignore = "heavy: installs componentize-py and a PyPI package into the generated project (cargo xtask test runs it)"]
fn new_project_python_with_a_pypi_dependency_builds_and_passes_inspect() {
    new_project("python");
}

#[test]
#[ignore = "heavy: installs jco into the generated project (cargo xtask test runs it)"]
fn new_project_js_builds_and_passes_inspect() {
    new_project("js");
}

/// Per-call cost of each language, in-process: one runtime per component,
/// three warm-up calls, then the mean of 50 calls (each a fresh instance).
/// Prints the numbers that `docs/authoring.md` quotes.
#[test]
#[ignore = "measurement: cargo test -p airlock --test runtime languages::per_call -- --ignored --nocapture"]
fn per_call_times() {
    let cases = [
        (
            workspace().join("target/components/export.wasm"),
            "export_orders",
            json!({"customer_id": "CUST-42"}),
        ),
        (
            example("shipping"),
            "shipping_quote",
            json!({"destination": "eu", "weight_kg": 2}),
        ),
        (
            example("wordstats"),
            "word_stats",
            json!({"text": "the cat and the hat"}),
        ),
    ];
    for (file, tool, args) in cases {
        let size = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
        let started = std::time::Instant::now();
        let runtime = support::runtime("", std::slice::from_ref(&file));
        let load = started.elapsed();
        for _ in 0..3 {
            call(&runtime, tool, args.clone()).expect("warm-up call");
        }
        let started = std::time::Instant::now();
        for _ in 0..50 {
            call(&runtime, tool, args.clone()).expect("call");
        }
        let per_call = started.elapsed() / 50;
        eprintln!(
            "{}: {:.1} MB, load {:?} (compile cache warm unless first run), {:?} per call",
            file.file_name().unwrap().to_string_lossy(),
            size as f64 / 1e6,
            load,
            per_call
        );
    }
}
