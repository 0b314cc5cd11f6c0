//! The policy end to end: consent for destructive tools, and the audit log
//! (one line per call, whatever the outcome, never an environment value).

use crate::support;

use airlock::call::{CallError, Confirmation};
use serde_json::{Value, json};
use support::{call, call_answered as confirm, component, test_component};

#[test]
fn destructive_calls_follow_the_consent_setting() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("stock.json"), r#"{"SKU-1001": 4}"#).expect("stock");
    let folders = format!(
        "folders = [{{ host = \"{}\", guest = \"/data\", mode = \"read-write\" }}]",
        dir.path().display()
    );
    let args = json!({"sku": "SKU-1001", "units": 3});

    let allow = support::runtime(
        &format!("[components.catalog]\n{folders}\ndestructive = \"allow\"\n"),
        &[component("catalog")],
    );
    let out = call(&allow, "restock", args.clone()).expect("allowed");
    assert_eq!(out.structured, Some(json!({"result": 7})));

    let confirm_policy = support::runtime(
        &format!(
            "[components.catalog]\n{folders}\n[components.catalog.tools.restock]\ndestructive = \"confirm\"\n"
        ),
        &[component("catalog")],
    );
    let err = confirm(
        &confirm_policy,
        "restock",
        args.clone(),
        Confirmation::Unavailable,
    )
    .expect_err("no way to confirm");
    assert!(
        err.to_string()
            .contains("needs confirmation, which this client cannot give"),
        "{err}"
    );
    let err = confirm(
        &confirm_policy,
        "restock",
        args.clone(),
        Confirmation::Declined,
    )
    .expect_err("declined");
    assert!(err.to_string().contains("declined"), "{err}");
    let out = confirm(
        &confirm_policy,
        "restock",
        args.clone(),
        Confirmation::Accepted,
    )
    .expect("accepted");
    assert_eq!(out.structured, Some(json!({"result": 10})));
    // Read-only tools never need consent, whatever the setting.
    assert!(call(&confirm_policy, "lookup_price", json!({"sku": "SKU-1001"})).is_ok());

    let deny = support::runtime(
        &format!("[components.catalog]\n{folders}\n"),
        &[component("catalog")],
    );
    let err = call(&deny, "restock", args).expect_err("denied by default");
    assert!(matches!(err, CallError::Refused(_)));
    let stock = std::fs::read_to_string(dir.path().join("stock.json")).expect("stock");
    assert!(
        stock.contains("10"),
        "only the permitted calls changed the stock: {stock}"
    );
}

#[test]
fn every_call_leaves_one_audit_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let audit = dir.path().join("audit.jsonl");
    // SAFETY: no other test in this binary reads this variable.
    unsafe { std::env::set_var("AIRLOCK_AUDIT_TEST_SECRET", "s3cr3t-value") };
    let runtime = support::runtime(
        &format!(
            r#"
audit = "{}"
[components.hostile]
limits = {{ time = "300ms" }}
env = {{ TOKEN = {{ from = "AIRLOCK_AUDIT_TEST_SECRET" }} }}
"#,
            audit.display()
        ),
        &[test_component("hostile"), component("export")],
    );
    let _ = call(&runtime, "good", json!({}));
    let _ = call(&runtime, "spin", json!({}));
    let _ = call(&runtime, "panic", json!({}));
    let _ = call(&runtime, "export_orders", json!({"max_age_days": "soon"}));
    let _ = call(
        &runtime,
        "export_orders",
        json!({"customer_id": "C", "format": "pdf"}),
    );
    let _ = call(&runtime, "no_such_tool", json!({}));
    let _ = call(&runtime, "env", json!({}));

    let text = std::fs::read_to_string(&audit).expect("audit log");
    assert!(
        !text.contains("s3cr3t-value"),
        "an env value leaked into the audit log"
    );
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let outcomes = support::audit_outcomes(&lines);
    assert_eq!(
        outcomes,
        [
            ("good", "ok"),
            ("spin", "timeout"),
            ("panic", "panic"),
            ("export_orders", "invalid-arguments"),
            ("export_orders", "invalid-arguments"),
            ("no_such_tool", "unknown-tool"),
            ("env", "ok"),
        ]
    );
    let good = &lines[0];
    assert_eq!(good["component_sha256"].as_str().map(str::len), Some(64));
    assert!(good["time"].as_str().expect("time").ends_with('Z'));
    assert!(good["bytes_out"].as_u64().expect("bytes out") > 0);
    assert!(good["duration_ms"].as_f64().is_some());
    assert_eq!(lines[6]["grant"]["env"], json!(["TOKEN"]));
    assert_eq!(lines[1]["grant"]["time_ms"], 300);
}
