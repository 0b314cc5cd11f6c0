//! Outgoing `https` and injected credentials, end to end: the hostile
//! component's HTTP tools against local HTTPS servers whose certificates a
//! throwaway CA signed at test time (`support::tls`). Loopback only.

use crate::support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use airlock::Runtime;
use airlock::call::{CallError, Caller};
use airlock::observe::CallObserver;
use airlock::tool::{Content, Level, Output};
use base64::Engine as _;
use serde_json::json;
use support::servers::Server;
use support::tls::{Ca, Leaf, https_server};
use support::{call, example, test_component, text};

/// The secret the tests inject; the environment variable it comes from.
const SECRET: &str = "tok-3f9a8b7c6d5e4f30";
const VAR: &str = "AIRLOCK_TEST_TOKEN";

/// Names the test servers' certificates are for: the loopback name and
/// both loopback addresses.
const LOOPBACK: &[&str] = &["localhost", "127.0.0.1", "::1"];

/// A policy for the hostile component: `network` and more keys as given,
/// `VAR` set to `SECRET`, the folder for relative paths `dir`.
fn runtime_in(dir: &std::path::Path, section: &str) -> Runtime {
    runtime_timed(dir, "5s", section)
}

/// [`runtime_in`] with the call's time limit.
fn runtime_timed(dir: &std::path::Path, time: &str, section: &str) -> Runtime {
    let text = format!("[components.hostile]\nlimits = {{ time = {time:?} }}\n{section}");
    runtime_with(dir, &text, test_component("hostile"))
}

/// A runtime with the policy `text` (relative paths against `dir`, `VAR`
/// set to `SECRET`, nothing else in its environment) and `file` loaded.
fn runtime_with(dir: &std::path::Path, text: &str, file: std::path::PathBuf) -> Runtime {
    support::runtime_with_var(dir, text, (VAR, SECRET), &[file])
}

/// `[components.NAME.network]` tables that list `localhost:port` (and the
/// loopback addresses it resolves to) with the credential on the name.
fn credential_tables(name: &str, port: u16) -> String {
    format!(
        "[components.{name}.network.\"https://localhost:{port}\"]\n\
         headers = {{ Authorization = {{ from = \"{VAR}\", format = \"Bearer {{}}\" }} }}\n\
         [components.{name}.network.\"127.0.0.1:{port}\"]\n\
         [components.{name}.network.\"[::1]:{port}\"]\n"
    )
}

/// A local HTTPS server with a certificate `leaf` from a throwaway CA, and
/// a folder holding that CA as `ca.pem` (for the policy's `ca`).
fn local(leaf: Leaf) -> (Server, tempfile::TempDir) {
    let ca = Ca::new();
    let server = https_server(&ca, leaf);
    let dir = tempfile::tempdir().expect("dir");
    ca.write_pem(dir.path());
    (server, dir)
}

/// A network list in TOML.
fn list(patterns: &[String]) -> String {
    let quoted: Vec<String> = patterns.iter().map(|p| format!("{p:?}")).collect();
    format!("network = [{}]\n", quoted.join(", "))
}

/// The patterns that let `localhost:port` through the address check.
fn loopback(port: u16) -> Vec<String> {
    vec![format!("127.0.0.1:{port}"), format!("[::1]:{port}")]
}

fn http(runtime: &Runtime, url: &str) -> Result<String, CallError> {
    let args = json!({ "url": url, "method": "GET" });
    support::beside_good_calls(runtime, || call(runtime, "http_open", args)).map(|out| text(&out))
}

#[track_caller]
fn refused(result: Result<String, CallError>, code: &str) {
    let err = result.expect_err("the request must fail");
    assert!(
        err.to_string().contains(code),
        "expected {code}, got: {err}"
    );
}

#[test]
fn get_succeeds_with_the_operator_ca_and_fails_without_it() {
    let (server, dir) = local(Leaf::For(LOOPBACK));
    let port = server.port();
    let mut patterns = vec![format!("https://localhost:{port}")];
    patterns.extend(loopback(port));
    let url = format!("https://localhost:{port}/hello");

    let trusted = runtime_in(dir.path(), &format!("{}ca = \"ca.pem\"\n", list(&patterns)));
    assert_eq!(http(&trusted, &url).expect("trusted"), "200 hello");
    // An IP literal is checked against the certificate's IP addresses.
    let by_ip = format!("https://127.0.0.1:{port}/hello");
    assert_eq!(http(&trusted, &by_ip).expect("by address"), "200 hello");
    assert_eq!(server.seen().len(), 2);

    // Mozilla's roots do not know the test CA, nor does the platform's
    // store (where this machine has one: else `tls = "system"` cannot work).
    let mut sections = vec![list(&patterns)];
    if rustls_native_certs::load_native_certs().certs.is_empty() {
        eprintln!("note: no platform certificate store here; tls = \"system\" not tried");
    } else {
        sections.push(format!("{}tls = \"system\"\n", list(&patterns)));
    }
    for section in sections {
        let untrusted = runtime_in(dir.path(), &section);
        refused(http(&untrusted, &url), "TlsCertificateError");
    }
    assert_eq!(
        server.seen().len(),
        2,
        "no request after a refused certificate"
    );
}

#[test]
fn a_certificate_for_another_name_or_an_expired_one_is_refused() {
    let ca = Ca::new();
    let dir = tempfile::tempdir().expect("dir");
    ca.write_pem(dir.path());
    let other = https_server(&ca, Leaf::For(&["api.example.com"]));
    let expired = https_server(&ca, Leaf::Expired(LOOPBACK));
    for server in [&other, &expired] {
        let port = server.port();
        let mut patterns = vec![format!("localhost:{port}")];
        patterns.extend(loopback(port));
        let runtime = runtime_in(dir.path(), &format!("{}ca = \"ca.pem\"\n", list(&patterns)));
        refused(
            http(&runtime, &format!("https://localhost:{port}/")),
            "TlsCertificateError",
        );
        assert!(server.seen().is_empty());
    }
}

#[test]
fn a_name_resolving_to_loopback_is_refused_unless_an_address_pattern_allows_it() {
    let (server, dir) = local(Leaf::For(LOOPBACK));
    let port = server.port();
    let url = format!("https://localhost:{port}/");
    let by_name = runtime_in(
        dir.path(),
        &format!(
            "{}ca = \"ca.pem\"\n",
            list(&[format!("https://localhost:{port}")])
        ),
    );
    refused(http(&by_name, &url), "DestinationIpProhibited");
    assert!(server.seen().is_empty());
}

#[test]
fn a_scheme_in_a_pattern_is_the_only_scheme_and_no_scheme_allows_both() {
    let (server, dir) = local(Leaf::For(LOOPBACK));
    let port = server.port();
    let https = format!("https://127.0.0.1:{port}/");
    let http_url = format!("http://127.0.0.1:{port}/");

    let only_https = runtime_in(
        dir.path(),
        &format!(
            "{}ca = \"ca.pem\"\n",
            list(&[format!("https://127.0.0.1:{port}")])
        ),
    );
    assert_eq!(http(&only_https, &https).expect("https"), "200 hello");
    refused(http(&only_https, &http_url), "HttpRequestDenied");

    let only_http = runtime_in(
        dir.path(),
        &format!(
            "{}ca = \"ca.pem\"\n",
            list(&[format!("http://127.0.0.1:{port}")])
        ),
    );
    refused(http(&only_http, &https), "HttpRequestDenied");

    let both = runtime_in(
        dir.path(),
        &format!("{}ca = \"ca.pem\"\n", list(&[format!("127.0.0.1:{port}")])),
    );
    assert_eq!(http(&both, &https).expect("https"), "200 hello");
    // Plain http goes out too (and the TLS server cannot make sense of it).
    let plain = http(&both, &http_url).expect_err("a TLS server does not speak http");
    assert!(!plain.to_string().contains("HttpRequestDenied"), "{plain}");
    assert_eq!(server.seen().len(), 2);
}

#[test]
fn a_stalled_handshake_ends_at_the_call_deadline() {
    let server = Server::stalled();
    let port = server.port();
    let dir = tempfile::tempdir().expect("dir");
    let runtime = runtime_timed(
        dir.path(),
        "1s",
        &list(&[format!("https://127.0.0.1:{port}")]),
    );
    let started = Instant::now();
    let result = http(&runtime, &format!("https://127.0.0.1:{port}/"));
    let took = started.elapsed();
    assert!(
        result.is_err(),
        "a stalled server cannot answer: {result:?}"
    );
    assert!(took < Duration::from_secs(3), "the call took {took:?}");
}

/// Two servers: `a` gets the credential (by name, `https://localhost:A`),
/// `b` is listed without one.
struct TwoHosts {
    a: Server,
    b: Server,
    runtime: Runtime,
    _dir: tempfile::TempDir,
}

fn two_hosts() -> TwoHosts {
    let ca = Ca::new();
    let a = https_server(&ca, Leaf::For(LOOPBACK));
    let b = https_server(&ca, Leaf::For(LOOPBACK));
    let dir = tempfile::tempdir().expect("dir");
    ca.write_pem(dir.path());
    let (pa, pb) = (a.port(), b.port());
    let section = format!(
        "ca = \"ca.pem\"\n{}[components.hostile.network.\"https://127.0.0.1:{pb}\"]\n",
        credential_tables("hostile", pa)
    );
    let runtime = runtime_in(dir.path(), &section);
    TwoHosts {
        a,
        b,
        runtime,
        _dir: dir,
    }
}

#[test]
fn the_injected_header_reaches_its_host_and_no_other() {
    let t = two_hosts();
    let (pa, pb) = (t.a.port(), t.b.port());
    http(&t.runtime, &format!("https://localhost:{pa}/")).expect("to a");
    http(&t.runtime, &format!("https://127.0.0.1:{pb}/")).expect("to b");
    // The same server by address: another pattern, so no credential.
    http(&t.runtime, &format!("https://127.0.0.1:{pa}/")).expect("to a by address");
    let a = t.a.seen();
    assert_eq!(a.len(), 2);
    assert_eq!(a[0].header("authorization"), [format!("Bearer {SECRET}")]);
    assert!(a[1].header("authorization").is_empty(), "{:?}", a[1]);
    let b = t.b.seen();
    assert_eq!(b.len(), 1);
    assert!(b[0].header("authorization").is_empty(), "{:?}", b[0]);
}

#[test]
fn the_guests_own_header_of_that_name_is_replaced() {
    let t = two_hosts();
    let args = json!({
        "url": format!("https://localhost:{}/", t.a.port()),
        "authorization": "Basic guest-chosen",
    });
    call(&t.runtime, "http_open", args).expect("request");
    let seen = t.a.seen();
    assert_eq!(
        seen[0].header("authorization"),
        [format!("Bearer {SECRET}")]
    );
}

/// Everything a call sent its client through the observer.
#[derive(Default)]
struct Recorder(Mutex<Vec<String>>);

impl CallObserver for Recorder {
    fn log(&self, _: Level, message: &str) {
        self.0.lock().expect("log").push(message.to_string());
    }
    fn progress(&self, _: f64, _: Option<f64>, message: Option<&str>) {
        if let Some(m) = message {
            self.0.lock().expect("progress").push(m.to_string());
        }
    }
}

/// Every text of an output, as the client would receive it.
fn everything(out: &Output) -> String {
    let mut all = serde_json::to_string(&out.to_mcp()).expect("json");
    for c in &out.content {
        if let Content::Link {
            name, description, ..
        } = c
        {
            all.push_str(name);
            all.push_str(description.as_deref().unwrap_or_default());
        }
    }
    all
}

#[track_caller]
fn assert_no_secret(text: &str) {
    let b64 = base64::engine::general_purpose::STANDARD.encode(SECRET);
    assert!(!text.contains(SECRET), "the secret leaked: {text}");
    assert!(!text.contains(&b64), "the secret's base64 leaked: {text}");
    assert!(
        !text.contains(&SECRET[4..]),
        "part of the secret leaked: {text}"
    );
}

#[test]
fn an_echoed_secret_is_redacted_from_everything_the_tool_hands_back() {
    let t = two_hosts();
    let url = format!("https://localhost:{}/echo", t.a.port());
    let observer = Arc::new(Recorder::default());
    let out = t
        .runtime
        .call(
            Caller::CommandLine,
            "http_open",
            json!({ "url": url, "leak": "1" }),
            observer.clone(),
        )
        .expect("the echo");
    // The endpoint did echo it: the server saw the secret.
    assert_eq!(
        t.a.seen()[0].header("authorization"),
        [format!("Bearer {SECRET}")]
    );
    let all = everything(&out);
    assert_no_secret(&all);
    assert!(all.contains("authorization: Bearer [redacted]"), "{all}");
    assert!(
        out.structured.as_ref().is_some_and(|s| s["answer"]
            .as_str()
            .is_some_and(|a| a.contains("[redacted]"))),
        "{:?}",
        out.structured
    );
    let sent = observer.0.lock().expect("messages").join("\n");
    assert!(
        sent.contains("log: 200") && sent.contains("progress: 200"),
        "{sent}"
    );
    assert_no_secret(&sent);

    // The same echo as the text of a tool error.
    let err = call(
        &t.runtime,
        "http_open",
        json!({ "url": url, "leak": "fail" }),
    )
    .expect_err("a tool error");
    let err = err.to_string();
    assert!(err.contains("Bearer [redacted]"), "{err}");
    assert_no_secret(&err);
}

/// An endpoint that echoes the injected header as JSON with every
/// character `\u`-escaped, handed back verbatim as structured output: the
/// client receives the decoded value, so that is what is redacted.
#[test]
fn an_escaped_secret_in_structured_output_is_redacted_as_the_client_reads_it() {
    let t = two_hosts();
    let url = format!("https://localhost:{}/echo.json", t.a.port());
    let out = call(
        &t.runtime,
        "http_open",
        json!({ "url": url, "leak": "structured" }),
    )
    .expect("the echo");
    assert_eq!(
        t.a.seen()[0].header("authorization"),
        [format!("Bearer {SECRET}")]
    );
    let structured = out.structured.clone().expect("structured output");
    assert_eq!(structured["authorization"], "Bearer [redacted]");
    // What MCP sends (structuredContent and the text block made from it)
    // and what /rpc sends (the value itself).
    let all = everything(&out);
    assert_no_secret(&all);
    assert!(all.contains("Bearer [redacted]"), "{all}");
    assert_no_secret(&structured.to_string());
}

#[test]
fn the_secret_never_reaches_the_log_or_the_audit_file() {
    let (server, dir) = local(Leaf::For(LOOPBACK));
    let port = server.port();
    let policy = dir.path().join("airlock.toml");
    std::fs::write(
        &policy,
        format!(
            "audit = \"audit.jsonl\"\n[components.hostile]\nca = \"ca.pem\"\n{}",
            credential_tables("hostile", port)
        ),
    )
    .expect("policy");
    let wasm = test_component("hostile").display().to_string();
    let url = format!("url=https://localhost:{port}/echo");
    let out = support::airlock_command(&[
        "call",
        "--policy",
        &policy.display().to_string(),
        &wasm,
        "http_open",
        &url,
        "leak=1",
    ])
    .env(VAR, SECRET)
    .env("AIRLOCK_LOG", "trace")
    .output()
    .expect("airlock call");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        server.seen()[0].header("authorization"),
        [format!("Bearer {SECRET}")]
    );
    // The guest printed the echo: its stdout/stderr reach the log, redacted.
    assert!(
        stderr.contains("guest: stdout: 200") && stderr.contains("Bearer [redacted]"),
        "{stderr}"
    );
    assert_no_secret(&stdout);
    assert_no_secret(&stderr);

    let audit = std::fs::read_to_string(dir.path().join("audit.jsonl")).expect("audit");
    assert_no_secret(&audit);
    let entry: serde_json::Value = serde_json::from_str(audit.trim()).expect("one line");
    let described = format!("authorization for https://localhost:{port} (from {VAR})");
    assert_eq!(entry["credentials_used"], json!([described]));
    assert_eq!(entry["grant"]["credentials"], json!([described]));
}

// ---------------------------------------------------------------------------
// One open-world example per language, against a local HTTPS server: the
// operator's CA, the host listed by name, a credential injected.

/// A runtime serving `file` (component `name`) with a grant for `server`
/// by name, and a credential for it.
fn example_runtime(
    name: &str,
    file: std::path::PathBuf,
    server: &Server,
    dir: &std::path::Path,
) -> Runtime {
    let text = format!(
        "[components.{name}]\nlimits = {{ time = \"20s\", memory = \"256MiB\" }}\nca = \"ca.pem\"\n{}",
        credential_tables(name, server.port())
    );
    runtime_with(dir, &text, file)
}

/// A call of `tool` for `https://example.com/`, which no policy here lists:
/// refused inside the tool, with `code` in the error the client gets.
#[track_caller]
fn unlisted_host_refused(runtime: &Runtime, tool: &str, code: &str) {
    let err =
        call(runtime, tool, json!({ "url": "https://example.com/" })).expect_err("not listed");
    assert!(err.to_string().contains(code), "{err}");
}

#[test]
fn the_rust_example_fetches_over_https_and_never_sees_the_credential() {
    let (server, dir) = local(Leaf::For(LOOPBACK));
    let runtime = example_runtime(
        "webfetch",
        support::component("webfetch"),
        &server,
        dir.path(),
    );
    let base = format!("https://localhost:{}", server.port());

    let out = call(
        &runtime,
        "fetch_url",
        json!({ "url": format!("{base}/json") }),
    )
    .expect("fetch");
    let fetched = out.structured.clone().expect("structured");
    assert_eq!(fetched["status"], 200);
    assert_eq!(fetched["content_type"], "application/json");
    assert_eq!(fetched["body"], support::tls::JSON);
    assert_eq!(fetched["truncated"], false);

    let out = call(
        &runtime,
        "fetch_url",
        json!({ "url": format!("{base}/echo"), "max_bytes": 100000 }),
    )
    .expect("echo");
    assert_eq!(
        server.seen()[1].header("authorization"),
        [format!("Bearer {SECRET}")]
    );
    let all = everything(&out);
    assert!(all.contains("authorization: Bearer [redacted]"), "{all}");
    assert_no_secret(&all);

    unlisted_host_refused(&runtime, "fetch_url", "HTTP-request-denied");
}

#[test]
fn the_python_example_checks_a_link_over_https() {
    let (server, dir) = local(Leaf::For(LOOPBACK));
    let runtime = example_runtime("linkcheck", example("linkcheck"), &server, dir.path());
    let base = format!("https://localhost:{}", server.port());

    let out = call(
        &runtime,
        "check_link",
        json!({ "url": format!("{base}/page") }),
    )
    .expect("check");
    let link = out.structured.clone().expect("structured");
    assert_eq!(link["status"], 200);
    assert_eq!(link["ok"], true);
    assert_eq!(link["title"], "Hello from airlock");
    assert_eq!(link["content_type"], "text/html; charset=utf-8");
    assert_eq!(link["bytes"], support::tls::PAGE.len());
    assert_eq!(
        server.seen()[0].header("authorization"),
        [format!("Bearer {SECRET}")]
    );
    assert_eq!(server.seen()[0].header("accept"), ["text/html, */*"]);

    unlisted_host_refused(&runtime, "check_link", "HTTP-request-denied");
}

#[test]
fn the_javascript_example_picks_from_json_over_https_with_fetch() {
    let (server, dir) = local(Leaf::For(LOOPBACK));
    let runtime = example_runtime("jsonpick", example("jsonpick"), &server, dir.path());
    let url = format!("https://localhost:{}/json", server.port());

    let out = call(
        &runtime,
        "json_pick",
        json!({ "url": url, "path": "release.version" }),
    )
    .expect("pick");
    assert_eq!(
        out.structured,
        Some(json!({ "status": 200, "value": "1.2.3" }))
    );
    let out = call(&runtime, "json_pick", json!({ "url": url })).expect("whole");
    let whole: serde_json::Value = serde_json::from_str(support::tls::JSON).expect("json");
    assert_eq!(out.structured.expect("structured")["value"], whole);
    let seen = server.seen();
    assert_eq!(
        seen[0].header("authorization"),
        [format!("Bearer {SECRET}")]
    );
    assert_eq!(seen[0].header("accept"), ["application/json"]);

    let err = call(
        &runtime,
        "json_pick",
        json!({ "url": url, "path": "release.missing" }),
    )
    .expect_err("no such key");
    assert!(err.to_string().contains("no \"missing\""), "{err}");
    unlisted_host_refused(&runtime, "json_pick", "NetworkError");
}

/// Size of each open-world example and the mean time of a call that makes
/// one HTTPS request to a local server (fresh instance, TLS handshake and
/// all): `cargo test -p airlock --test runtime https::per_request -- --ignored
/// --nocapture`. Measurements, not assertions (docs/authoring.md).
#[test]
#[ignore = "a measurement: run it by name"]
fn per_request_times() {
    let (server, dir) = local(Leaf::For(LOOPBACK));
    let base = format!("https://localhost:{}", server.port());
    let cases = [
        (
            "webfetch",
            support::component("webfetch"),
            "fetch_url",
            json!({ "url": format!("{base}/json") }),
        ),
        (
            "linkcheck",
            example("linkcheck"),
            "check_link",
            json!({ "url": format!("{base}/page") }),
        ),
        (
            "jsonpick",
            example("jsonpick"),
            "json_pick",
            json!({ "url": format!("{base}/json") }),
        ),
    ];
    for (name, file, tool, args) in cases {
        let size = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
        let runtime = example_runtime(name, file, &server, dir.path());
        for _ in 0..3 {
            call(&runtime, tool, args.clone()).expect("warm-up call");
        }
        let started = Instant::now();
        for _ in 0..20 {
            call(&runtime, tool, args.clone()).expect("call");
        }
        eprintln!(
            "{name}: {:.1} MB, {:?} per call with one HTTPS request",
            size as f64 / 1e6,
            started.elapsed() / 20
        );
    }
}
