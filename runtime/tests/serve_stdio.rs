//! End to end over stdio: starts the real `airlock serve --stdio` and
//! speaks newline-delimited JSON-RPC on its stdin/stdout.

use crate::support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{component, test_component};

/// Starts `airlock serve --stdio ARGS...` with piped stdin and stdout;
/// stderr goes to `stderr`.
/// Every component is loaded before the server answers (`--load-wait`).
fn spawn_stdio(args: &[&std::ffi::OsStr], stderr: Stdio) -> std::process::Child {
    stdio_command(args, stderr)
        .args(["--load-wait", "600"])
        .spawn()
        .expect("start airlock")
}

fn stdio_command(args: &[&std::ffi::OsStr], stderr: Stdio) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_airlock"));
    command
        .args(["serve", "--stdio"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(stderr);
    command
}

/// Runs the server with `input` written to stdin (then closed) and returns
/// every line of stdout as JSON, plus the exit code.
fn session(files: &[std::path::PathBuf], input: &str) -> (Vec<Value>, Option<i32>) {
    let args: Vec<&std::ffi::OsStr> = files.iter().map(|f| f.as_os_str()).collect();
    let mut child = spawn_stdio(&args, Stdio::inherit());
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(input.as_bytes()).expect("write");
    drop(stdin);
    let stdout = child.stdout.take().expect("stdout");
    let mut messages = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.expect("line");
        // stdout carries protocol messages only.
        let value: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line:?}"));
        messages.push(value);
    }
    let status = child.wait().expect("wait");
    (messages, status.code())
}

fn by_id(messages: &[Value], id: Value) -> &Value {
    messages
        .iter()
        .find(|m| m["id"] == id)
        .unwrap_or_else(|| panic!("no response {id} in {messages:?}"))
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

#[test]
fn stdio_session_lists_calls_and_ends_on_eof() {
    let input = [
        INIT,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"lookup_price","arguments":{"sku":"SKU-1001"}}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"export_orders","arguments":{}}}"#,
        "{not json",
        r#"{"jsonrpc":"2.0","id":4,"method":"nope"}"#,
        "",
        // The last line has no newline and is still answered.
        r#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#,
    ]
    .join("\n");
    let (messages, code) = session(&[component("catalog"), component("export")], &input);
    assert_eq!(code, Some(0));
    assert_eq!(
        by_id(&messages, json!(0))["result"]["protocolVersion"],
        "2025-06-18"
    );
    let tools = &by_id(&messages, json!(1))["result"]["tools"];
    assert_eq!(tools.as_array().map(Vec::len), Some(3));
    let price = by_id(&messages, json!(2));
    assert_eq!(price["result"]["isError"], false, "{price}");
    let missing = by_id(&messages, json!(3));
    assert_eq!(missing["result"]["isError"], true);
    assert!(
        missing["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .contains("customer_id")
    );
    assert!(messages.iter().any(|m| m["error"]["code"] == -32700));
    assert_eq!(by_id(&messages, json!(4))["error"]["code"], -32601);
    assert_eq!(by_id(&messages, json!(5))["result"], json!({}));
    // Nothing answered the notification.
    assert_eq!(messages.len(), 7, "{messages:?}");
}

#[test]
fn stdio_cancellation_stops_a_running_call() {
    let hostile = test_component("hostile");
    let mut child = spawn_stdio(&[hostile.as_os_str()], Stdio::inherit());
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let started = Instant::now();
    writeln!(stdin, "{INIT}").expect("write");
    let mut line = String::new();
    stdout.read_line(&mut line).expect("init response");
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{{"name":"sleep","arguments":{{"ms":"20000"}}}}}}"#
    )
    .expect("write");
    std::thread::sleep(Duration::from_millis(300));
    // Other requests are answered while the call runs.
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":"p","method":"ping"}}"#).expect("write");
    line.clear();
    stdout.read_line(&mut line).expect("ping response");
    assert!(line.contains("\"p\""), "{line}");
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":"s"}}}}"#
    )
    .expect("write");
    drop(stdin);
    let mut rest = String::new();
    for l in stdout.lines() {
        rest.push_str(&l.expect("line"));
    }
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(0));
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "the call was not stopped"
    );
    // No response for the cancelled request.
    assert!(!rest.contains("\"s\""), "{rest}");
}

/// An interactive stdio client: writes lines, reads until a response.
struct Client {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    lines: std::sync::mpsc::Receiver<Value>,
    /// Everything read that was not the awaited response.
    seen: Vec<Value>,
    _dir: tempfile::TempDir,
}

impl Client {
    fn start(policy: &str, extra: &[&str], files: &[std::path::PathBuf]) -> Client {
        let dir = tempfile::tempdir().expect("tempdir");
        let policy_path = dir.path().join("airlock.toml");
        std::fs::write(&policy_path, policy).expect("policy");
        let mut args = vec![std::ffi::OsStr::new("--policy"), policy_path.as_os_str()];
        args.extend(extra.iter().map(std::ffi::OsStr::new));
        args.extend(files.iter().map(|f| f.as_os_str()));
        Client::attach(spawn_stdio(&args, Stdio::inherit()), dir)
    }

    /// A client of `child` (stdin and stdout piped); `dir` lives as long.
    fn attach(mut child: std::process::Child, dir: tempfile::TempDir) -> Client {
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let value: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line:?}"));
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        Client {
            child,
            stdin,
            lines,
            seen: Vec::new(),
            _dir: dir,
        }
    }

    fn send(&mut self, message: Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{message}").expect("write");
    }

    /// Sends a request and waits for its response.
    fn request(&mut self, id: &str, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}));
        self.wait_for(|m| m["id"] == id && m.get("method").is_none())
    }

    /// Reads until a message matches (others are kept in `seen`).
    fn wait_for(&mut self, want: impl Fn(&Value) -> bool) -> Value {
        self.wait_for_within(Duration::from_secs(60), want)
    }

    fn wait_for_within(&mut self, limit: Duration, want: impl Fn(&Value) -> bool) -> Value {
        if let Some(at) = self.seen.iter().position(&want) {
            return self.seen.remove(at);
        }
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("timed out; seen: {:?}", self.seen));
            if want(&message) {
                return message;
            }
            self.seen.push(message);
        }
    }

    fn initialize(&mut self, version: &str) -> Value {
        let r = self.request(
            "init",
            "initialize",
            json!({"protocolVersion": version, "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}}),
        );
        self.send(json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
        r
    }

    fn close(mut self) -> Option<i32> {
        drop(self.stdin.take());
        self.child.wait().expect("wait").code()
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const ONE_AT_A_TIME: &str = r#"
[components.hostile]
limits = { concurrency = 1, time = "60s" }
"#;

#[test]
fn stdio_tasks_run_in_the_background_and_cancel_stops_the_guest() {
    let mut c = Client::start(ONE_AT_A_TIME, &[], &[test_component("hostile")]);
    let init = c.initialize("2025-11-25");
    assert_eq!(
        init["result"]["capabilities"]["tasks"]["requests"]["tools"]["call"],
        json!({})
    );
    // taskSupport is enforced both ways.
    let r = c.request(
        "req",
        "tools/call",
        json!({"name": "sleep_task", "arguments": {"ms": "1"}}),
    );
    assert_eq!(r["error"]["code"], -32601, "{r}");
    let r = c.request(
        "forb",
        "tools/call",
        json!({"name": "good_inline", "arguments": {}, "task": {}}),
    );
    assert_eq!(r["error"]["code"], -32601, "{r}");
    let r = c.request(
        "inline",
        "tools/call",
        json!({"name": "good_inline", "arguments": {}}),
    );
    assert_eq!(r["result"]["content"][0]["text"], "ok", "{r}");

    // A task: CreateTaskResult at once, then the result.
    let started = Instant::now();
    let r = c.request(
        "t1",
        "tools/call",
        json!({"name": "sleep_task", "arguments": {"ms": "700"}, "task": {"ttl": 60000}}),
    );
    assert!(
        started.elapsed() < Duration::from_millis(600),
        "not at once"
    );
    let task = &r["result"]["task"];
    assert_eq!(task["status"], "working", "{r}");
    assert_eq!(task["ttl"], 60000);
    assert!(task["pollInterval"].as_u64().is_some());
    assert!(task["createdAt"].is_string() && task["lastUpdatedAt"].is_string());
    let id = task["taskId"].as_str().expect("taskId").to_string();
    assert_eq!(id.len(), 32);
    let got = c.request("g1", "tasks/get", json!({"taskId": id}));
    assert_eq!(got["result"]["status"], "working", "{got}");
    let result = c.request("r1", "tasks/result", json!({"taskId": id}));
    assert_eq!(result["result"]["content"][0]["text"], "slept", "{result}");
    assert_eq!(result["result"]["isError"], false);
    assert_eq!(
        result["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        id.as_str()
    );
    let got = c.request("g2", "tasks/get", json!({"taskId": id}));
    assert_eq!(got["result"]["status"], "completed");
    let status = c.wait_for(|m| {
        m["method"] == "notifications/tasks/status" && m["params"]["taskId"] == id.as_str()
    });
    assert_eq!(status["params"]["status"], "completed");
    // A finished task cannot be cancelled.
    let r = c.request("c1", "tasks/cancel", json!({"taskId": id}));
    assert_eq!(r["error"]["code"], -32602, "{r}");
    // Unknown ids are invalid params; there is no listing without a token.
    let r = c.request("g3", "tasks/get", json!({"taskId": "0".repeat(32)}));
    assert_eq!(r["error"]["code"], -32602);
    let r = c.request("l", "tasks/list", json!({}));
    assert_eq!(r["error"]["code"], -32601);

    // Cancel a long task: it is cancelled at once and its guest stops,
    // which frees the tool's only place (concurrency = 1) for the task that
    // waits for it.
    let r = c.request(
        "t2",
        "tools/call",
        json!({"name": "sleep_task", "arguments": {"ms": "30000"}, "task": {}}),
    );
    let long = r["result"]["task"]["taskId"]
        .as_str()
        .expect("id")
        .to_string();
    std::thread::sleep(Duration::from_millis(300));
    let queued = c.request(
        "t3",
        "tools/call",
        json!({"name": "sleep_task", "arguments": {"ms": "1"}, "task": {}}),
    );
    let queued_id = queued["result"]["task"]["taskId"]
        .as_str()
        .expect("id")
        .to_string();
    std::thread::sleep(Duration::from_millis(300));
    let got = c.request("g4", "tasks/get", json!({"taskId": queued_id}));
    assert_eq!(
        got["result"]["status"], "working",
        "waits for a place: {got}"
    );
    let cancelled = c.request("c2", "tasks/cancel", json!({"taskId": long}));
    assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
    let got = c.request("g5", "tasks/get", json!({"taskId": long}));
    assert_eq!(got["result"]["status"], "cancelled");
    let r = c.request("r4", "tasks/result", json!({"taskId": long}));
    assert_eq!(r["result"]["isError"], true);
    // The guest stopped: the waiting task gets the place and runs (were
    // the place held, it would fail `busy` after its 60 s).
    let r = c.request("r3", "tasks/result", json!({"taskId": queued_id}));
    assert_eq!(r["result"]["content"][0]["text"], "slept", "{r}");
    assert_eq!(c.close(), Some(0));
}

fn names(list: &Value) -> Vec<String> {
    list["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect()
}

/// Copies a file by writing a temporary one and renaming it over the
/// target, as deploy tools do.
fn install(from: &std::path::Path, to: &std::path::Path) {
    let tmp = to.with_extension("partial");
    std::fs::copy(from, &tmp).expect("copy");
    std::fs::rename(&tmp, to).expect("rename");
}

#[test]
fn stdio_watch_reloads_components_and_notifies() {
    let dir = tempfile::tempdir().expect("tempdir");
    let hostile = dir.path().join("hostile.wasm");
    install(&test_component("hostile"), &hostile);
    let mut c = Client::start("", &["--watch", dir.path().to_str().expect("utf-8")], &[]);
    c.initialize("2025-11-25");
    let list = c.request("l0", "tools/list", json!({}));
    assert!(names(&list).contains(&"sleep".to_string()), "{list}");
    // A call that outlives the reload finishes on its version.
    c.send(json!({"jsonrpc":"2.0","id":"long","method":"tools/call",
        "params":{"name":"sleep","arguments":{"ms":"2500"}}}));
    std::thread::sleep(Duration::from_millis(200));

    // Added.
    let export = dir.path().join("export.wasm");
    install(&component("export"), &export);
    c.wait_for(|m| m["method"] == "notifications/tools/list_changed");
    let list = c.request("l1", "tools/list", json!({}));
    assert!(
        names(&list).contains(&"export_orders".to_string()),
        "{list}"
    );

    // Replaced: hostile.wasm now holds the catalog's tools.
    install(&component("catalog"), &hostile);
    c.wait_for(|m| m["method"] == "notifications/tools/list_changed");
    let list = c.request("l2", "tools/list", json!({}));
    let now = names(&list);
    assert!(now.contains(&"lookup_price".to_string()), "{list}");
    assert!(!now.contains(&"sleep".to_string()), "{list}");
    let r = c.request(
        "gone",
        "tools/call",
        json!({"name": "sleep", "arguments": {"ms": "1"}}),
    );
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let long = c.wait_for(|m| m["id"] == "long");
    assert_eq!(long["result"]["content"][0]["text"], "slept", "{long}");

    // A broken replacement is refused; the old version keeps serving.
    std::fs::write(dir.path().join("export.partial"), b"not a component").expect("write");
    std::fs::rename(dir.path().join("export.partial"), &export).expect("rename");
    std::thread::sleep(Duration::from_millis(1500));
    let list = c.request("l3", "tools/list", json!({}));
    assert!(
        names(&list).contains(&"export_orders".to_string()),
        "{list}"
    );
    let r = c.request(
        "still",
        "tools/call",
        json!({"name": "export_orders", "arguments": {"customer_id": "C-1"}}),
    );
    assert!(r.get("result").is_some(), "{r}");

    // Removed.
    std::fs::remove_file(&hostile).expect("remove");
    c.wait_for(|m| m["method"] == "notifications/tools/list_changed");
    let list = c.request("l4", "tools/list", json!({}));
    assert!(
        !names(&list).contains(&"lookup_price".to_string()),
        "{list}"
    );
    assert!(
        names(&list).contains(&"export_orders".to_string()),
        "{list}"
    );
    assert_eq!(c.close(), Some(0));
}

/// A Python component not in the compile cache takes seconds to compile:
/// the server answers at once, a call of its tool says that it is loading,
/// the first `tools/list` waits for it (while the next requests are
/// answered), and the tool is announced when it joins.
#[test]
fn a_component_still_compiling_joins_after_the_server_answers() {
    let cache = tempfile::tempdir().expect("cache dir");
    let shipping = support::example("shipping");
    let mut child = stdio_command(&[shipping.as_os_str()], Stdio::piped())
        .args(["--load-wait", "0"])
        .env("AIRLOCK_CACHE_DIR", cache.path())
        .spawn()
        .expect("start airlock");
    let stderr = child.stderr.take().expect("stderr");
    let log = std::thread::spawn(move || {
        BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
            .collect::<Vec<String>>()
    });
    let mut c = Client::attach(child, tempfile::tempdir().expect("tempdir"));
    c.initialize("2025-11-25");
    let early = c.request(
        "early",
        "tools/call",
        json!({"name": "shipping_quote", "arguments": {"destination": "eu", "weight_kg": 2}}),
    );
    let message = early["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("1 component(s) still loading"), "{early}");
    // The list waits for the component; a ping meanwhile is answered.
    c.send(json!({"jsonrpc": "2.0", "id": "l0", "method": "tools/list"}));
    c.request("ping", "ping", json!({}));
    assert!(!c.seen.iter().any(|m| m["id"] == "l0"), "{:?}", c.seen);
    let list = c.wait_for_within(Duration::from_secs(600), |m| m["id"] == "l0");
    assert_eq!(names(&list), ["book_pickup", "shipping_quote"], "{list}");
    c.wait_for(|m| m["method"] == "notifications/tools/list_changed");
    let quote = c.request(
        "quote",
        "tools/call",
        json!({"name": "shipping_quote", "arguments": {"destination": "eu", "weight_kg": 2}}),
    );
    assert_eq!(quote["result"]["isError"], false, "{quote}");
    assert_eq!(c.close(), Some(0));

    let lines = log.join().expect("the log");
    let at = |text: &str| {
        lines
            .iter()
            .position(|l| l.contains(text))
            .unwrap_or_else(|| panic!("no line with {text:?} in {lines:#?}"))
    };
    assert!(
        lines[at("still compiling")].contains("shipping.wasm"),
        "{lines:#?}"
    );
    assert!(at("serving MCP on stdio") < at("loaded "), "{lines:#?}");
    assert!(
        lines[at("loaded ")].contains("shipping_quote"),
        "{lines:#?}"
    );
    assert!(
        lines[at("ready after")].contains("1 client(s) notified"),
        "{lines:#?}"
    );
}

/// A desktop client may start airlock with an empty environment (no HOME,
/// no PATH): the compile cache then lives in a private folder of the user
/// in the temporary folder (said at `info`), the first `tools/list` waits
/// for the Python component that compiles, and the next start finds it
/// compiled. (TMPDIR is set only so that the cache is this test's own,
/// and so cold.)
#[test]
fn an_empty_environment_lists_every_tool_at_first_and_caches_them() {
    let temp = tempfile::tempdir().expect("tempdir");
    let shipping = support::example("shipping");
    let start = |extra: &[&str]| {
        let mut command = stdio_command(&[shipping.as_os_str()], Stdio::piped());
        command
            .args(extra)
            .env_clear()
            .env("TMPDIR", temp.path())
            .env("AIRLOCK_LOG", "info");
        let mut child = command.spawn().expect("start airlock");
        let stderr = child.stderr.take().expect("stderr");
        let log = std::thread::spawn(move || {
            BufReader::new(stderr)
                .lines()
                .map_while(Result::ok)
                .collect::<Vec<String>>()
        });
        (
            Client::attach(child, tempfile::tempdir().expect("tempdir")),
            log,
        )
    };

    // Cold: serving begins before the component compiled.
    let (mut c, log) = start(&["--load-wait", "0"]);
    c.initialize("2025-06-18");
    let list = c.request("l0", "tools/list", json!({}));
    assert_eq!(names(&list), ["book_pickup", "shipping_quote"], "{list}");
    assert_eq!(c.close(), Some(0));
    let lines = log.join().expect("the log").join("\n");
    let uid = std::fs::metadata(temp.path()).map(|m| {
        use std::os::unix::fs::MetadataExt as _;
        m.uid()
    });
    let cache = temp
        .path()
        .join(format!("airlock-cache-{}", uid.expect("uid")));
    assert!(
        lines.contains(&format!("compile cache in {}", cache.display())),
        "{lines}"
    );
    assert!(lines.contains("still compiling"), "{lines}");
    let mode = std::fs::metadata(&cache)
        .expect("the cache folder")
        .permissions();
    use std::os::unix::fs::PermissionsExt as _;
    assert_eq!(mode.mode() & 0o777, 0o700);

    // Warm: ready from the cache before serving.
    let (mut c, log) = start(&[]);
    c.initialize("2025-06-18");
    let list = c.request("l1", "tools/list", json!({}));
    assert_eq!(names(&list), ["book_pickup", "shipping_quote"], "{list}");
    assert_eq!(c.close(), Some(0));
    let lines = log.join().expect("the log").join("\n");
    assert!(!lines.contains("still compiling"), "{lines}");
    assert!(lines.contains("2 tool(s)"), "{lines}");
}

#[test]
fn closing_stdin_during_a_task_stops_cleanly() {
    // A background task is still running when stdin closes: it is
    // cancelled, its blocking thread ends while the async runtime still
    // runs, and the server exits 0 without a panic.
    let hostile = test_component("hostile");
    let mut child = spawn_stdio(&[hostile.as_os_str()], Stdio::piped());
    let mut stdin = child.stdin.take().expect("stdin");
    let input = [
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sleep_task","arguments":{"ms":"5000"},"task":{"ttl":60000}}}"#,
    ]
    .join("\n");
    stdin
        .write_all(format!("{input}\n").as_bytes())
        .expect("write");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    // Wait until the task exists (its CreateTaskResult), then close stdin.
    loop {
        let line = lines.next().expect("a response").expect("line");
        if line.contains("\"taskId\"") {
            break;
        }
    }
    std::thread::sleep(Duration::from_millis(200));
    drop(stdin);
    let output = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(output.status.code(), Some(0), "{stderr}");
}

#[test]
fn a_call_stopped_by_the_shutdown_still_gets_an_answer_over_stdio() {
    let mut c = Client::start(
        ONE_AT_A_TIME,
        &["--grace", "1"],
        &[test_component("hostile")],
    );
    c.initialize("2025-11-25");
    c.send(json!({"jsonrpc":"2.0","id":"long","method":"tools/call",
        "params":{"name":"sleep","arguments":{"ms":60000}}}));
    std::thread::sleep(Duration::from_millis(500));
    support::terminate(c.child.id());
    // Exactly one answer for the request in flight: an error saying why.
    let answer = c.wait_for(|m| m["id"] == "long");
    let message = answer["error"]["message"].as_str().unwrap_or("");
    assert!(message.contains("shutting down"), "{answer}");
    assert_eq!(c.close(), Some(0));
}

/// Resident memory of process `pid`, in KiB.
fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .expect("/proc/PID/status")
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("VmRSS")
}

/// A client that stops reading stdout while tools flood it with logs and
/// progress: stdout is a bounded queue, so the server's memory stays flat,
/// notifications are dropped and counted (logged once, at the end), and
/// every request still gets exactly one answer once the client reads.
#[test]
fn a_client_that_does_not_read_stdout_gets_every_answer_and_bounded_memory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = dir.path().join("airlock.toml");
    // Each call may send 10,000 messages of 1 KiB: 200 MiB for 20 calls,
    // were nothing bounded.
    std::fs::write(
        &policy,
        "[components.hostile]\nlimits = { messages = 10000, log = \"16MiB\", time = \"60s\", concurrency = 64 }\n",
    )
    .expect("policy");
    let hostile = test_component("hostile");
    let args = [
        std::ffi::OsStr::new("--policy"),
        policy.as_os_str(),
        hostile.as_os_str(),
    ];
    let mut child = spawn_stdio(&args, Stdio::piped());
    let pid = child.id();
    let stderr = child.stderr.take().expect("stderr");
    let log = std::thread::spawn(move || {
        let mut text = String::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            text.push_str(&line);
            text.push('\n');
        }
        text
    });
    let mut stdin = child.stdin.take().expect("stdin");
    writeln!(stdin, "{INIT}").expect("write");
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":"level","method":"logging/setLevel","params":{{"level":"debug"}}}}"#
    )
    .expect("write");
    let calls = 20;
    for i in 0..calls {
        writeln!(
            stdin,
            r#"{{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{{"name":"flood","_meta":{{"progressToken":{i}}}}}}}"#,
            100 + i
        )
        .expect("write");
    }
    // Not reading: the floods run and end, their answers wait.
    let mut peak = 0;
    let until = Instant::now() + Duration::from_secs(8);
    while Instant::now() < until {
        peak = peak.max(rss_kib(pid));
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(stdin);
    let mut answers = std::collections::BTreeMap::new();
    let mut notifications = 0;
    for line in BufReader::new(child.stdout.take().expect("stdout")).lines() {
        let message: Value = serde_json::from_str(&line.expect("line")).expect("JSON");
        match message.get("id") {
            Some(id) => *answers.entry(id.to_string()).or_insert(0) += 1,
            None => notifications += 1,
        }
    }
    assert!(child.wait().expect("wait").success());
    for i in 0..calls {
        let id = (100 + i).to_string();
        assert_eq!(answers.get(&id), Some(&1), "call {id}: {answers:?}");
    }
    // 20 calls × 10,000 × 2 KiB would be 400 MiB; a bounded queue holds a
    // few hundred messages.
    assert!(peak < 200 * 1024, "the server grew to {peak} KiB");
    assert!(
        notifications < calls * 10_000,
        "{notifications} notifications arrived: nothing was dropped"
    );
    let log = log.join().expect("stderr");
    assert!(log.contains("notification(s) dropped"), "{log}");
}
