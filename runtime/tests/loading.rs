//! Loading: components that lie in their metadata, or are not tool
//! components at all, are refused whole with an error naming what is wrong.

use crate::support;

use std::path::PathBuf;

use airlock::Runtime;
use airlock::policy::Policy;
use airlock::sandbox::{CompileCache, Sandbox, SandboxConfig};
use support::test_component;

/// Loads `files` and returns the refusals as text.
fn refusals(files: &[PathBuf]) -> Vec<String> {
    let runtime = Runtime::new(support::sandbox(), Policy::default());
    let report = runtime.load(files);
    report.refused.iter().map(|e| e.to_string()).collect()
}

fn refusal(name: &str) -> String {
    let errors = refusals(&[test_component(name)]);
    assert_eq!(errors.len(), 1, "{errors:?}");
    errors.into_iter().next().unwrap_or_default()
}

#[test]
fn invalid_input_schema_is_refused() {
    let err = refusal("liar_schema");
    assert!(err.contains("tool \"bad_schema\": input schema"), "{err}");
}

#[test]
fn schema_root_must_be_an_object() {
    let err = refusal("liar_root");
    assert!(err.contains("tool \"array_root\""), "{err}");
    assert!(err.contains("root must be an object"), "{err}");
}

#[test]
fn duplicate_names_are_refused() {
    let err = refusal("liar_dup");
    assert!(err.contains("tool \"same\": declared twice"), "{err}");
}

#[test]
fn bad_name_characters_are_refused() {
    let err = refusal("liar_name");
    assert!(
        err.contains("tool \"rm -rf /\": name may only contain"),
        "{err}"
    );
}

#[test]
fn missing_description_is_refused() {
    let err = refusal("liar_nodesc");
    assert!(
        err.contains("tool \"silent\": description is missing"),
        "{err}"
    );
}

#[test]
fn a_listing_that_loops_forever_times_out() {
    let err = refusal("liar_loop");
    assert!(
        err.contains("listing its tools failed: timed out after"),
        "{err}"
    );
}

#[test]
fn a_listing_that_allocates_without_bound_hits_the_memory_limit() {
    let err = refusal("liar_alloc");
    assert!(
        err.contains("listing its tools failed: memory limit of"),
        "{err}"
    );
}

#[test]
fn an_unknown_import_is_named() {
    let err = refusal("liar_import");
    assert!(
        err.contains("imports evil:spy/keylogger, which airlock does not provide"),
        "{err}"
    );
}

#[test]
fn files_that_are_not_components_say_what_they_are() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = dir.path().join("notes.wasm");
    std::fs::write(&text, "hello").expect("write");
    let core = dir.path().join("core.wasm");
    std::fs::write(&core, b"\0asm\x01\0\0\0").expect("write");
    let missing = dir.path().join("missing.wasm");
    let errors = refusals(&[text, core, missing]);
    assert_eq!(errors.len(), 3, "{errors:?}");
    assert!(
        errors[0].ends_with("not a WebAssembly file"),
        "{}",
        errors[0]
    );
    assert!(
        errors[1].contains("a core WebAssembly module, not a component"),
        "{}",
        errors[1]
    );
    assert!(errors[2].contains("cannot read"), "{}", errors[2]);
}

#[test]
fn a_name_clash_names_both_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first = dir.path().join("first.wasm");
    let second = dir.path().join("second.wasm");
    std::fs::copy(test_component("hostile"), &first).expect("copy");
    std::fs::copy(test_component("hostile"), &second).expect("copy");
    let errors = refusals(&[first.clone(), second.clone()]);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].contains(&first.display().to_string()),
        "{}",
        errors[0]
    );
    assert!(
        errors[0].contains(&second.display().to_string()),
        "{}",
        errors[0]
    );
    assert!(
        errors[0].contains("rename the tool in one of them"),
        "says what to do: {}",
        errors[0]
    );
}

#[test]
fn a_good_component_loads_beside_a_bad_one() {
    let runtime = Runtime::new(support::sandbox(), Policy::default());
    let report = runtime.load(&[test_component("liar_dup"), test_component("hostile")]);
    assert_eq!(report.refused.len(), 1);
    assert_eq!(report.loaded.len(), 1);
    assert!(runtime.catalog().tool("good").is_some());
}

#[test]
fn the_compile_cache_is_used_and_repaired() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = CompileCache::new(dir.path());
    let sandbox = || {
        Sandbox::new(
            &SandboxConfig::default()
                .instances(4)
                .cache(Some(cache.clone())),
        )
        .expect("sandbox")
    };
    let load = || {
        let runtime = Runtime::new(sandbox(), Policy::default());
        let report = runtime.load(&[test_component("hostile")]);
        assert!(report.refused.is_empty());
    };
    load();
    let entries: Vec<_> = std::fs::read_dir(dir.path())
        .expect("cache dir")
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(entries.len(), 1, "one compiled entry: {entries:?}");
    let entry = &entries[0];
    let compiled = std::fs::read(entry).expect("entry");
    // A damaged entry is replaced by a fresh compilation.
    std::fs::write(entry, b"garbage").expect("damage");
    load();
    assert_eq!(std::fs::read(entry).expect("entry"), compiled);
}

#[test]
fn a_digest_pin_mismatch_names_both_digests() {
    let policy = Policy::parse(
        &format!("[components.hostile]\nsha256 = \"{}\"\n", "0".repeat(64)),
        &support::workspace(),
    )
    .expect("policy");
    let runtime = Runtime::new(support::sandbox(), policy);
    let report = runtime.load(&[test_component("hostile")]);
    let err = report.refused[0].to_string();
    let actual =
        airlock::catalog::sha256_hex(&std::fs::read(test_component("hostile")).expect("read"));
    assert!(err.contains(&actual), "{err}");
    assert!(err.contains(&"0".repeat(64)), "{err}");
}

#[test]
fn a_policy_source_and_the_same_file_on_the_command_line_load_once() {
    // The same file, spelled three ways: absolute on the command line, and
    // relative with `.` and `..` parts in the policy.
    let policy =
        "[components.catalog]\nsource = \"./target/components/../components/catalog.wasm\"\n";
    let runtime = support::runtime(policy, &[support::component("catalog")]);
    assert_eq!(runtime.files(&[support::component("catalog")]).len(), 1);
    assert!(
        runtime
            .catalog()
            .tools()
            .any(|t| t.info.name == "lookup_price")
    );
}

/// A component whose tool listing loops until its time limit (10 s) held
/// back the components listed after it (issue 38). Now they load beside
/// it: the local tool answers while the looping one is still loading.
#[test]
fn a_listing_that_loops_holds_back_no_other_component() {
    use std::time::{Duration, Instant};
    let served = support::http::serve(
        "",
        &[test_component("liar_loop"), support::component("catalog")],
        &["--load-wait", "0"],
    );
    let call = br#"{"jsonrpc":"2.0","id":1,"method":"lookup_price","params":{"sku":"SKU-1001"}}"#;
    let json = [("Content-Type", "application/json")];
    let started = Instant::now();
    let answer = loop {
        let answer = support::http::http(served.addr, "POST", "/rpc", &json, call);
        if answer.body.contains("12.5") || started.elapsed() > Duration::from_secs(60) {
            break answer;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let ready = support::http::http(served.addr, "GET", "/readyz", &[], b"");
    assert!(answer.body.contains(r#""result":12.5"#), "{}", answer.body);
    assert_eq!(
        (ready.status, ready.body.as_str()),
        (503, "loading: 1 component(s) still compiling\n"),
        "the local tool answered only once the looping listing had given up"
    );
}
