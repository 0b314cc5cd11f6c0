//! WASI 0.3 components beside 0.2 ones: `p3_tool` (the airlock contract,
//! its `call` an `async func` over `wasi:http@0.3.0` and the 0.3 clock) and
//! `p3_plain` (plain functions, `pause` an `async func`), built by `cargo
//! xtask build` from `tests/components/p3`, and `p3_py` (plain functions in
//! Python, componentize-py). They load, are inspected, and run under the
//! same grants (folders, network with its injected and redacted
//! credentials) and limits (time, memory, fuel) as a 0.2 tool, in process,
//! over MCP and over `/rpc`, and in a cordon's worker. A build without the
//! `p3` feature refuses them at load, saying why, cordoned or not.

use crate::support;

#[cfg(feature = "p3")]
use std::time::{Duration, Instant};

#[cfg(feature = "p3")]
use airlock::Runtime;
#[cfg(feature = "p3")]
use serde_json::json;
use support::test_component;
#[cfg(feature = "p3")]
use support::{call, text};

/// A runtime with both 0.3 components and `policy`.
#[cfg(feature = "p3")]
fn runtime(policy: &str) -> Runtime {
    support::runtime(
        policy,
        &[test_component("p3_tool"), test_component("p3_plain")],
    )
}

#[cfg(not(feature = "p3"))]
#[test]
fn without_the_feature_a_0_3_component_is_refused_with_the_reason() {
    let refusal = support::first_refusal("", &[test_component("p3_tool")]);
    assert!(
        refusal.contains("@0.3.0 (WASI 0.3)") && refusal.contains("built without WASI 0.3 support"),
        "{refusal}"
    );
}

/// In a cordon the server compiles the component too (to know its
/// shape), and refuses it there as in process, before its worker's words.
#[cfg(not(feature = "p3"))]
#[test]
fn without_the_feature_a_cordoned_0_3_component_is_refused_with_the_same_reason() {
    let file = test_component("p3_tool");
    let in_process = support::first_refusal("", std::slice::from_ref(&file));
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = dir.path().join("airlock.toml");
    std::fs::write(&policy, "[components.p3_tool]\ncordon = \"x\"\n").expect("policy");
    let (policy, file) = (policy.display().to_string(), file.display().to_string());
    let out = support::airlock_command(&[
        "serve",
        "--policy",
        &policy,
        "--listen",
        "127.0.0.1:0",
        &file,
    ])
    .output()
    .expect("airlock serve");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("airlock: cordon x: worker"), "{said}");
    assert!(said.contains(&format!("refused {in_process}")), "{said}");
}

#[cfg(feature = "p3")]
#[test]
fn both_load_beside_a_0_2_tool_and_their_tools_are_listed() {
    let runtime = support::runtime(
        "",
        &[
            test_component("p3_tool"),
            test_component("p3_plain"),
            test_component("contract_0_1_0"),
        ],
    );
    let names: Vec<String> = runtime
        .catalog()
        .tools()
        .map(|t| t.info.name.clone())
        .collect();
    for name in [
        "add",
        "fetch",
        "sleep",
        "first-line",
        "pause",
        "sum",
        "old_echo",
    ] {
        assert!(names.iter().any(|n| n == name), "{name} in {names:?}");
    }
    // Both engines serve in one runtime.
    assert_eq!(
        text(&call(&runtime, "old_echo", json!({})).expect("0.2")),
        "{}"
    );
    assert_eq!(
        text(&call(&runtime, "add", json!({"a": 40, "b": 2})).expect("0.3")),
        "42"
    );
}

#[cfg(feature = "p3")]
#[test]
fn a_synchronous_export_waits_on_a_0_3_import() {
    let runtime = runtime("");
    let out = call(&runtime, "pause", json!({"ms": 30})).expect("pause");
    let said = out.structured.expect("structured")["result"].clone();
    let waited: u64 = said
        .as_str()
        .and_then(|s| s.strip_prefix("paused "))
        .and_then(|s| s.strip_suffix(" ms"))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{said}"));
    assert!(waited >= 30, "{said}");
}

#[cfg(feature = "p3")]
#[test]
fn a_python_component_for_0_3_runs_its_async_and_its_synchronous_export() {
    // componentize-py's 0.3 bindings (`tests/components/p3_py`).
    let runtime = support::runtime("", &[test_component("p3_py")]);
    let twice = support::structured(&runtime, "twice", json!({"n": 21}));
    assert_eq!(twice["result"], 42);
    let paused = support::structured(&runtime, "pause", json!({"ms": 20}));
    assert!(
        paused["result"]
            .as_str()
            .is_some_and(|s| s.starts_with("paused ")),
        "{paused}"
    );
}

#[cfg(feature = "p3")]
#[test]
fn folders_are_granted_and_bounded_as_for_a_0_2_tool() {
    let data = tempfile::tempdir().expect("dir");
    std::fs::write(data.path().join("in.txt"), "first\nsecond\n").expect("write");
    let host = data.path().display();
    let runtime = runtime(&format!(
        "[components.p3_tool]\n\
         folders = [{{ host = \"{host}\", guest = \"/data\", mode = \"read-only\" }}]\n\
         [components.p3_plain]\n\
         folders = [{{ host = \"{host}\", guest = \"/data\", mode = \"read-only\" }}]\n"
    ));
    let read = call(&runtime, "read_file", json!({"path": "/data/in.txt"})).expect("read");
    assert_eq!(text(&read), "first\nsecond\n");
    let line = call(&runtime, "first-line", json!({"path": "/data/in.txt"})).expect("line");
    assert_eq!(line.structured.expect("structured")["result"], "first");
    let refused = call(
        &runtime,
        "write_file",
        json!({"path": "/data/new.txt", "content": "x"}),
    )
    .expect_err("a read-only folder");
    // The guest's own write failed (a tool error), not the runtime.
    assert_eq!(refused.kind(), "tool-error", "{refused}");
    assert!(!data.path().join("new.txt").exists());
    // Outside the granted folder nothing exists.
    let outside = call(&runtime, "read_file", json!({"path": "/etc/passwd"}));
    assert!(outside.is_err(), "{outside:?}");
}

#[cfg(feature = "p3")]
#[test]
fn the_time_limit_stops_a_guest_waiting_on_an_async_host_call() {
    let runtime = runtime("[components.p3_tool]\nlimits = { time = \"300ms\" }\n");
    let started = Instant::now();
    let err = call(&runtime, "sleep", json!({"ms": 10_000})).expect_err("timed out");
    assert_eq!(err.to_string(), "timed out after 300ms");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    // And one spinning in wasm (the epoch check).
    let err = call(&runtime, "spin", json!({})).expect_err("timed out");
    assert_eq!(err.to_string(), "timed out after 300ms");
    let out = call(&runtime, "sleep", json!({"ms": 10})).expect("a short sleep");
    assert_eq!(text(&out), "slept 10 ms");
}

#[cfg(feature = "p3")]
#[test]
fn the_memory_and_fuel_limits_hold() {
    let limited = runtime("[components.p3_tool]\nlimits = { memory = \"32MiB\", time = \"5s\" }\n");
    let err = call(&limited, "allocate", json!({})).expect_err("memory");
    assert_eq!(err.to_string(), "memory limit of 32 MiB exceeded");
    let runtime = runtime("[components.p3_tool]\nlimits = { fuel = 1000000, time = \"5s\" }\n");
    let err = call(&runtime, "spin", json!({})).expect_err("fuel");
    assert_eq!(err.to_string(), "fuel exhausted");
    assert_eq!(
        text(&call(&runtime, "add", json!({"a": 1, "b": 2})).expect("add")),
        "3"
    );
}

#[cfg(feature = "p3")]
mod network {
    //! wasi:http 0.3 requests through the same filter as 0.2 ones.

    use super::*;
    use support::servers::{Answer, Server};
    use support::tls::{Ca, Leaf, https_server};

    const SECRET: &str = "tok-p3-8c7d6e5f4a3b";
    const VAR: &str = "AIRLOCK_TEST_TOKEN";

    fn runtime_with(dir: &std::path::Path, text: &str) -> Runtime {
        support::runtime_with_var(dir, text, (VAR, SECRET), &[test_component("p3_tool")])
    }

    #[test]
    fn a_listed_address_is_reached_and_an_unlisted_one_or_a_closed_tool_is_refused() {
        let server = Server::http(|_| Answer::ok("hello"));
        let port = server.port();
        let runtime = super::runtime(&format!(
            "[components.p3_tool]\nnetwork = [\"127.0.0.1:{port}\"]\nlimits = {{ time = \"5s\" }}\n"
        ));
        let url = format!("http://127.0.0.1:{port}/path?q=1");
        let out = call(&runtime, "fetch", json!({"url": url})).expect("allowed");
        assert_eq!(text(&out), "200 hello");
        assert_eq!(server.lines(), vec!["GET /path?q=1 HTTP/1.1".to_string()]);
        let err = call(&runtime, "fetch_closed", json!({"url": url})).expect_err("closed");
        assert!(err.to_string().contains("HttpRequestDenied"), "{err}");
        let other = format!("http://127.0.0.2:{port}/");
        let err = call(&runtime, "fetch", json!({"url": other})).expect_err("unlisted");
        assert!(err.to_string().contains("HttpRequestDenied"), "{err}");
        assert_eq!(server.lines().len(), 1, "only the allowed request arrived");
    }

    #[test]
    fn the_credential_is_injected_and_redacted_as_for_a_0_2_tool() {
        let ca = Ca::new();
        let server = https_server(&ca, Leaf::For(&["localhost", "127.0.0.1", "::1"]));
        let dir = tempfile::tempdir().expect("dir");
        ca.write_pem(dir.path());
        let port = server.port();
        let policy = format!(
            "[components.p3_tool]\nca = \"ca.pem\"\nlimits = {{ time = \"5s\" }}\n\
             [components.p3_tool.network.\"https://localhost:{port}\"]\n\
             headers = {{ Authorization = {{ from = \"{VAR}\", format = \"Bearer {{}}\" }} }}\n\
             [components.p3_tool.network.\"127.0.0.1:{port}\"]\n\
             [components.p3_tool.network.\"[::1]:{port}\"]\n"
        );
        let runtime = runtime_with(dir.path(), &policy);
        let url = format!("https://localhost:{port}/echo");
        let out = call(&runtime, "fetch", json!({"url": url})).expect("the echo");
        // The server saw the secret; the client sees it redacted.
        assert_eq!(
            server.seen()[0].header("authorization"),
            [format!("Bearer {SECRET}")]
        );
        let said = text(&out);
        assert!(said.contains("authorization: Bearer [redacted]"), "{said}");
        assert!(!said.contains(SECRET), "{said}");
    }
}

#[cfg(feature = "p3")]
mod served {
    //! Over MCP and `/rpc`, from `airlock serve`.

    use super::*;
    use support::http::{Mcp, http, serve};

    #[test]
    fn tools_are_called_over_mcp_and_rpc() {
        let served = serve(
            "[components.p3_tool]\nlimits = { time = \"300ms\" }\n",
            &[test_component("p3_tool"), test_component("p3_plain")],
            &[],
        );
        let mut mcp = Mcp::connect(served.addr, json!({}), &[]);
        let answer = mcp.request(
            "tools/call",
            json!({"name": "add", "arguments": {"a": 40, "b": 2}}),
        );
        assert_eq!(answer["result"]["content"][0]["text"], "42", "{answer}");
        let answer = mcp.request(
            "tools/call",
            json!({"name": "pause", "arguments": {"ms": 5}}),
        );
        assert_eq!(answer["result"]["isError"], false, "{answer}");
        let answer = mcp.request(
            "tools/call",
            json!({"name": "sleep", "arguments": {"ms": 10000}}),
        );
        assert_eq!(answer["result"]["isError"], true, "{answer}");
        assert!(
            answer["result"]["content"][0]["text"]
                .as_str()
                .is_some_and(|t| t.contains("timed out after 300ms")),
            "{answer}"
        );
        let body = br#"{"jsonrpc":"2.0","id":1,"method":"add","params":{"a":40,"b":2}}"#;
        let reply = http(
            served.addr,
            "POST",
            "/rpc",
            &[("Content-Type", "application/json")],
            body,
        );
        assert_eq!(reply.status, 200);
        assert_eq!(
            reply.json()["result"][0]["text"],
            "42",
            "{:?}",
            reply.json()
        );
    }

    /// Both 0.3 components in one cordon: the worker (the same binary)
    /// compiles them on its 0.3 engine, lists and runs them, confined to
    /// their grants, and enforces their limits, folders and network.
    #[test]
    fn in_a_cordon_their_calls_run_in_its_worker_under_their_grants() {
        let data = tempfile::tempdir().expect("dir");
        std::fs::write(data.path().join("in.txt"), "first\nsecond\n").expect("write");
        let host = data.path().display();
        let site = support::servers::Server::http(|_| support::servers::Answer::ok("hello"));
        let port = site.port();
        let served = serve(
            &format!(
                "[components.p3_tool]\ncordon = \"x\"\n\
                 limits = {{ time = \"1s\", memory = \"32MiB\" }}\n\
                 network = [\"127.0.0.1:{port}\"]\n\
                 folders = [{{ host = \"{host}\", guest = \"/data\", mode = \"read-only\" }}]\n\
                 [components.p3_plain]\ncordon = \"x\"\n"
            ),
            &[test_component("p3_tool"), test_component("p3_plain")],
            &[],
        );
        assert!(crate::cordons::worker_of(served.child.id(), "x").is_some());
        let mut mcp = Mcp::connect(served.addr, json!({}), &[]);
        let mut call = |name: &str, arguments: serde_json::Value| {
            let answer = mcp.request("tools/call", json!({"name": name, "arguments": arguments}));
            let said = answer["result"]["content"][0]["text"].as_str();
            (
                answer["result"]["isError"] == true,
                said.unwrap_or_default().to_string(),
            )
        };
        assert_eq!(call("add", json!({"a": 40, "b": 2})), (false, "42".into()));
        let (failed, paused) = call("pause", json!({"ms": 5}));
        assert!(!failed && paused.contains("paused"), "{paused}");
        // Limits, in the worker: a guest suspended in a 0.3 host wait, and
        // one growing its memory.
        let (failed, said) = call("sleep", json!({"ms": 10_000}));
        assert!(failed && said.contains("timed out after 1s"), "{said}");
        let (failed, said) = call("allocate", json!({}));
        assert!(
            failed && said.contains("memory limit of 32 MiB exceeded"),
            "{said}"
        );
        // Its folder, read-only, and its host, through wasi:http 0.3.
        let read = call("read_file", json!({"path": "/data/in.txt"}));
        assert_eq!(read, (false, "first\nsecond\n".into()));
        let (failed, said) = call(
            "write_file",
            json!({"path": "/data/new.txt", "content": "x"}),
        );
        assert!(failed, "{said}");
        assert!(!data.path().join("new.txt").exists());
        let url = format!("http://127.0.0.1:{port}/");
        assert_eq!(
            call("fetch", json!({"url": url})),
            (false, "200 hello".into())
        );
        let other = format!("http://127.0.0.2:{port}/");
        let (failed, said) = call("fetch", json!({"url": other}));
        assert!(failed && said.contains("HttpRequestDenied"), "{said}");
        assert_eq!(site.lines().len(), 1, "only the listed request arrived");
    }

    #[test]
    fn inspect_names_the_0_3_imports() {
        let out = support::airlock_command(&[
            "inspect",
            &test_component("p3_tool").display().to_string(),
        ])
        .output()
        .expect("inspect");
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{said}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(said.contains("wasi:http/client@0.3.0"), "{said}");
        assert!(said.contains("fetch"), "{said}");
    }
}
