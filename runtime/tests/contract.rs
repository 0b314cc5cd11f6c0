//! The contract's compatibility promise: a component built with plain
//! wit-bindgen against the frozen `airlock:tool@0.1.0`
//! (`tests/components/contract_0_1_0`) loads, lists and runs unchanged under
//! the 0.1.1 host — its `host.log` reaches the observer — and `airlock
//! inspect` shows that it imports the 0.1.0 interfaces.

use crate::support;

use std::sync::{Arc, Mutex};

use airlock::call::Caller;
use airlock::catalog::Kind;
use airlock::observe::CallObserver;
use airlock::tool::Level;
use serde_json::{Value, json};
use support::test_component;

/// Remembers the log messages of a call.
#[derive(Default)]
struct Logs(Mutex<Vec<(Level, String)>>);

impl CallObserver for Logs {
    fn log(&self, level: Level, message: &str) {
        if let Ok(mut logs) = self.0.lock() {
            logs.push((level, message.to_owned()));
        }
    }
    fn progress(&self, _: f64, _: Option<f64>, _: Option<&str>) {}
}

#[test]
fn a_0_1_0_component_loads_lists_and_runs_unchanged() {
    let runtime = support::runtime("", &[test_component("contract_0_1_0")]);
    let catalog = runtime.catalog();
    let tools: Vec<_> = catalog.tools().map(|t| &t.info).collect();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["old_echo"]);
    assert_eq!(
        tools[0].description,
        "Echoes its arguments (built against 0.1.0)"
    );
    assert_eq!(catalog.components()[0].kind, Kind::Tool);

    let logs = Arc::new(Logs::default());
    let out = runtime
        .call(Caller::CommandLine, "old_echo", json!({}), logs.clone())
        .expect("old_echo runs under the 0.1.1 host");
    assert_eq!(support::text(&out), "{}");
    let logs = logs.0.lock().expect("logs").clone();
    assert_eq!(logs, [(Level::Info, "old_echo ran".to_owned())]);
}

#[test]
fn inspect_shows_its_0_1_0_imports() {
    let file = test_component("contract_0_1_0");
    let out = support::airlock_command(&["inspect", "--json", "--no-policy"])
        .arg(&file)
        .output()
        .expect("airlock inspect");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).expect("inspect --json prints JSON");
    let component = &doc["components"][0];
    assert_eq!(component["kind"], "airlock tool");
    let airlock_imports: Vec<&str> = component["imports"]
        .as_array()
        .expect("imports")
        .iter()
        .filter_map(Value::as_str)
        .filter(|i| i.starts_with("airlock:"))
        .collect();
    assert_eq!(
        airlock_imports,
        ["airlock:tool/host@0.1.0", "airlock:tool/types@0.1.0"]
    );
    assert_eq!(doc["tools"][0]["name"], "old_echo");

    let text = support::airlock_command(&["inspect", "--no-policy"])
        .arg(&file)
        .output()
        .expect("airlock inspect");
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("imports  airlock:tool/host@0.1.0\n           airlock:tool/types@0.1.0"),
        "{text}"
    );
}
