//! Tools that ask the client (`host.elicit`, `host.sample`, `host.roots`,
//! `host.ask`), end to end: the conformance component's asking tools under
//! `airlock serve --stdio` and a policy granting `ask`, with this test as
//! the client (2025-11-25: the requests arrive during the call), and from
//! the command line, where there is no client to ask; and over HTTP in
//! 2026-07-28, a task that asks once it runs (`tasks/get` shows the
//! request, `tasks/update` answers it, in part or whole). What the official Python SDK
//! sees of the same tools, in both revisions and over HTTP too, is
//! `tests/clients/python/test_asks.py`.

use crate::support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use serde_json::{Value, json};
use support::{audit_entries, call, runtime, test_component};

/// How long a test waits for a message before it fails (not a timing
/// assertion: a bound on a hang).
const PATIENCE: Duration = Duration::from_secs(60);

/// `airlock serve --stdio --policy POLICY conformance.wasm`, spoken to one
/// message at a time.
struct Stdio2025 {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<Value>,
}

impl Stdio2025 {
    fn start(policy: &std::path::Path, capabilities: Value) -> Stdio2025 {
        let mut child = Command::new(env!("CARGO_BIN_EXE_airlock"))
            .args(["serve", "--stdio", "--load-wait", "600", "--policy"])
            .arg(policy)
            .arg(test_component("conformance"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start airlock");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let value = serde_json::from_str(&line).expect("stdout carries JSON only");
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        let mut server = Stdio2025 {
            child,
            stdin,
            lines,
        };
        server.send(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": capabilities,
                "clientInfo": {"name": "serve_asks", "version": "1"},
            }}),
        );
        assert_eq!(server.next()["id"], 0);
        server.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        server
    }

    fn send(&mut self, message: Value) {
        writeln!(self.stdin, "{message}").expect("write");
        self.stdin.flush().expect("flush");
    }

    /// The next message that is not a notification.
    fn next(&self) -> Value {
        loop {
            let message = self.lines.recv_timeout(PATIENCE).expect("a message");
            if message.get("id").is_some() {
                return message;
            }
        }
    }

    fn call(&mut self, id: u64, tool: &str, arguments: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}}));
    }
}

impl Drop for Stdio2025 {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn write_policy(dir: &tempfile::TempDir, text: &str) -> std::path::PathBuf {
    let path = dir.path().join("airlock.toml");
    std::fs::write(&path, text).expect("policy");
    path
}

const EVERYTHING: &str = r#"{"elicitation": {}, "sampling": {}, "roots": {}}"#;

#[test]
fn a_sampling_request_goes_to_the_client_during_the_call_and_is_audited() {
    let dir = tempfile::tempdir().expect("temp dir");
    let audit = dir.path().join("audit.jsonl");
    let policy = write_policy(
        &dir,
        &format!(
            "audit = {audit:?}\n[components.conformance]\nask = [\"sample\"]\n\
             limits = {{ sample-tokens = 50 }}\n"
        ),
    );
    let mut server = Stdio2025::start(&policy, serde_json::from_str(EVERYTHING).unwrap());
    server.call(1, "test_sampling", json!({"prompt": "Capital of France?"}));
    let request = server.next();
    assert_eq!(request["method"], "sampling/createMessage", "{request}");
    // The tool asked for 100 tokens; the grant caps it at 50.
    assert_eq!(
        request["params"],
        json!({
            "messages": [{"role": "user", "content": {"type": "text", "text": "Capital of France?"}}],
            "maxTokens": 50,
        })
    );
    server.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": {
        "role": "assistant", "content": {"type": "text", "text": "Paris"},
        "model": "m-1", "stopReason": "endTurn",
    }}));
    let answer = server.next();
    assert_eq!(answer["id"], 1);
    assert_eq!(
        answer["result"]["content"],
        json!([{"type": "text", "text": "LLM response: Paris"}])
    );
    drop(server);
    let entries = audit_entries(&audit);
    let entry = entries
        .iter()
        .find(|e| e["tool"] == "test_sampling")
        .expect("the call's entry");
    assert_eq!(entry["grant"]["ask"], json!(["sample"]));
    assert_eq!(
        entry["asks"],
        json!([{
            "method": "sampling/createMessage",
            "params": request["params"],
            "outcome": "answered",
        }]),
        "what was asked, not the answer (audit-answers is off)"
    );
}

#[test]
fn the_audit_log_keeps_answers_only_when_told_to() {
    let dir = tempfile::tempdir().expect("temp dir");
    let audit = dir.path().join("audit.jsonl");
    let policy = write_policy(
        &dir,
        &format!(
            "audit = {audit:?}\naudit-answers = true\n[components.conformance]\n\
             ask = [\"elicit\"]\n"
        ),
    );
    let mut server = Stdio2025::start(&policy, serde_json::from_str(EVERYTHING).unwrap());
    server.call(1, "test_elicitation", json!({"message": "Who?"}));
    let request = server.next();
    assert_eq!(request["method"], "elicitation/create");
    assert_eq!(request["params"]["mode"], "form");
    assert_eq!(request["params"]["message"], "Who?");
    let reply = json!({"action": "accept", "content": {"username": "ada", "email": "a@b.c"}});
    server.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": reply}));
    let answer = server.next();
    assert_eq!(
        answer["result"]["content"][0]["text"],
        r#"User response: action=accept, content={"username":"ada","email":"a@b.c"}"#
    );
    // A request the grant does not cover is denied in the same call's
    // audit entry too: sampling is not granted here.
    server.call(2, "test_sampling", json!({"prompt": "hi"}));
    let denied = server.next();
    assert_eq!(denied["id"], 2, "no request reaches the client: {denied}");
    assert_eq!(denied["result"]["isError"], true);
    drop(server);
    let entries = audit_entries(&audit);
    let asked = entries
        .iter()
        .find(|e| e["tool"] == "test_elicitation")
        .expect("entry");
    assert_eq!(asked["asks"][0]["outcome"], "answered");
    assert_eq!(asked["asks"][0]["answer"], reply);
    let refused = entries
        .iter()
        .find(|e| e["tool"] == "test_sampling")
        .expect("entry");
    assert_eq!(refused["asks"][0]["outcome"], "denied");
    assert!(refused["asks"][0].get("answer").is_none());
}

#[test]
fn a_client_that_never_answers_holds_the_call_no_longer_than_its_time() {
    let dir = tempfile::tempdir().expect("temp dir");
    let policy = write_policy(
        &dir,
        "[components.conformance]\nask = [\"elicit\"]\nlimits = { time = \"1s\" }\n",
    );
    let mut server = Stdio2025::start(&policy, serde_json::from_str(EVERYTHING).unwrap());
    server.call(1, "test_elicitation", json!({"message": "Who?"}));
    let request = server.next();
    assert_eq!(request["method"], "elicitation/create");
    // Never answered: the call ends at its deadline, with the tool's error
    // saying why (the tool decided to fail; its instance is gone).
    let answer = server.next();
    assert_eq!(answer["id"], 1, "{answer}");
    assert_eq!(answer["result"]["isError"], true);
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("");
    assert!(
        text == "failed: the client did not answer within the call's time (limits.time)"
            || text.starts_with("timed out after"),
        "{text}"
    );
    // The server goes on: the next call is answered.
    server.call(2, "greet", json!({"name": "again"}));
    assert_eq!(
        server.next()["result"]["content"][0]["text"],
        "Hello, again!"
    );
}

#[test]
fn a_client_without_the_capability_gets_no_request() {
    let dir = tempfile::tempdir().expect("temp dir");
    let policy = write_policy(&dir, "[components.conformance]\nask = [\"roots\"]\n");
    let mut server = Stdio2025::start(&policy, json!({"elicitation": {}}));
    server.call(1, "test_input_required_result_list_roots", json!({}));
    let answer = server.next();
    assert_eq!(
        answer["id"], 1,
        "no roots/list reaches the client: {answer}"
    );
    assert_eq!(
        answer["result"]["content"][0]["text"],
        "not available: the client did not declare the roots capability, so it cannot be asked"
    );
}

#[test]
fn from_the_command_line_there_is_no_client_to_ask() {
    let runtime = runtime(
        "[components.conformance]\nask = [\"elicit\", \"sample\", \"roots\"]\n",
        &[test_component("conformance")],
    );
    let err = call(&runtime, "test_sampling", json!({"prompt": "hi"})).unwrap_err();
    assert_eq!(
        err.to_string(),
        "not available: there is no client to ask here (a call from the command line); serve \
         the component over MCP"
    );
    // Without the grant, the tool is told so first.
    let runtime = runtime_without_asks();
    let err = call(&runtime, "test_sampling", json!({"prompt": "hi"})).unwrap_err();
    assert_eq!(
        err.to_string(),
        "not granted: the operator's policy does not let this tool ask the client for this \
         (sample); it needs `ask = [\"sample\"]`"
    );
}

fn runtime_without_asks() -> airlock::Runtime {
    runtime("", &[test_component("conformance")])
}

#[test]
fn inspect_shows_the_grant() {
    let dir = tempfile::tempdir().expect("temp dir");
    let policy = write_policy(
        &dir,
        "[components.conformance]\nask = [\"elicit\", \"roots\"]\nlimits = { elicitations = 2 }\n\
         [components.conformance.tools.greet]\nask = []\n",
    );
    let output = support::airlock_command(&["inspect", "--policy"])
        .arg(&policy)
        .arg(test_component("conformance"))
        .output()
        .expect("inspect");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{text}");
    assert!(
        text.contains("ask: elicit, roots (per call: 2 elicitation(s), 10 roots request(s))\n"),
        "{text}"
    );
    assert!(
        text.contains("ask: none (the tool may not ask the client anything)"),
        "greet's own section takes it away: {text}"
    );
}

#[test]
fn a_tasks_question_reaches_the_client_waiting_for_its_result() {
    let dir = tempfile::tempdir().expect("temp dir");
    let policy = write_policy(&dir, "[components.conformance]\nask = [\"elicit\"]\n");
    let mut server = Stdio2025::start(&policy, serde_json::from_str(EVERYTHING).unwrap());
    server.send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "confirm_delete", "arguments": {"filename": "a.txt"}, "task": {},
        }}),
    );
    let created = server.next();
    let task = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task: {created}"))
        .to_string();
    server.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/result",
        "params": {"taskId": task}}));
    // The question comes to the client waiting in tasks/result, naming the
    // task; the task is input_required meanwhile.
    let request = server.next();
    assert_eq!(request["method"], "elicitation/create", "{request}");
    assert_eq!(request["params"]["message"], "Delete a.txt?");
    assert_eq!(
        request["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        task
    );
    server.send(json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/get",
        "params": {"taskId": task}}));
    let status = server.next();
    assert_eq!(status["id"], 3);
    assert_eq!(status["result"]["status"], "input_required", "{status}");
    server.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": {
        "action": "accept", "content": {"confirm": true},
    }}));
    let result = server.next();
    assert_eq!(result["id"], 2, "{result}");
    assert_eq!(
        result["result"]["content"][0]["text"],
        r#"a.txt: action=accept, content={"confirm":true}"#
    );
}

#[test]
fn a_call_cancelled_while_it_waits_for_the_client_ends() {
    let dir = tempfile::tempdir().expect("temp dir");
    let policy = write_policy(&dir, "[components.conformance]\nask = [\"elicit\"]\n");
    let mut server = Stdio2025::start(&policy, serde_json::from_str(EVERYTHING).unwrap());
    server.call(1, "test_elicitation", json!({"message": "Who?"}));
    let request = server.next();
    assert_eq!(request["method"], "elicitation/create");
    server.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 1, "reason": "changed my mind"}}),
    );
    // A cancelled request gets no answer (MCP); the next one is answered,
    // and nothing of the cancelled call comes before it.
    server.call(2, "greet", json!({"name": "again"}));
    let next = server.next();
    assert_eq!(next["id"], 2, "{next}");
    assert_eq!(next["result"]["content"][0]["text"], "Hello, again!");
}

#[test]
fn a_batch_is_asked_one_request_after_another_each_under_its_grant() {
    let dir = tempfile::tempdir().expect("temp dir");
    let audit = dir.path().join("audit.jsonl");
    // Sampling is not granted: the batch's sampling request is denied, and
    // the others are asked all the same.
    let policy = write_policy(
        &dir,
        &format!("audit = {audit:?}\n[components.conformance]\nask = [\"elicit\", \"roots\"]\n"),
    );
    let mut server = Stdio2025::start(&policy, serde_json::from_str(EVERYTHING).unwrap());
    server.call(1, "test_input_required_result_multiple_inputs", json!({}));
    let elicit = server.next();
    assert_eq!(elicit["method"], "elicitation/create", "{elicit}");
    assert_eq!(elicit["params"]["message"], "What is your name?");
    server.send(json!({"jsonrpc": "2.0", "id": elicit["id"], "result": {
        "action": "accept", "content": {"name": "Ada"},
    }}));
    let roots = server.next();
    assert_eq!(
        roots["method"], "roots/list",
        "no sampling request: {roots}"
    );
    server.send(json!({"jsonrpc": "2.0", "id": roots["id"], "result": {
        "roots": [{"uri": "file:///work", "name": "work"}],
    }}));
    let answer = server.next();
    assert_eq!(answer["id"], 1, "{answer}");
    assert_eq!(answer["result"]["isError"], true);
    assert_eq!(
        answer["result"]["content"][0]["text"],
        "not granted: the operator's policy does not let this tool ask the client for this \
         (sample); it needs `ask = [\"sample\"]`"
    );
    drop(server);
    let entries = audit_entries(&audit);
    let entry = entries
        .iter()
        .find(|e| e["tool"] == "test_input_required_result_multiple_inputs")
        .expect("the call's entry");
    let asked: Vec<(&str, &str, &str)> = entry["asks"]
        .as_array()
        .expect("asks")
        .iter()
        .map(|a| {
            (
                a["key"].as_str().unwrap_or(""),
                a["method"].as_str().unwrap_or(""),
                a["outcome"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        asked,
        [
            ("user_name", "elicitation/create", "answered"),
            ("greeting", "sampling/createMessage", "denied"),
            ("client_roots", "roots/list", "answered"),
        ]
    );
}

/// Polls `tasks/get` (2026-07-28, over HTTP) until `done` says the task is
/// as wanted; the last state.
fn poll_task(
    addr: std::net::SocketAddr,
    id: &str,
    caps: &Value,
    done: impl Fn(&Value) -> bool,
) -> Value {
    use support::http::{body, modern};
    let deadline = std::time::Instant::now() + PATIENCE;
    loop {
        let reply = modern(
            addr,
            &body(90, "tasks/get", json!({"taskId": id}), caps.clone()),
            Some(id),
            &[],
        );
        let task = reply.json()["result"].clone();
        if done(&task) {
            return task;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the task never got there: {task}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_task_asks_once_it_runs_and_tasks_update_answers_it_in_part_or_whole() {
    use support::http::{body, modern, serve};
    let policy = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/conformance/policy.toml"),
    )
    .expect("the conformance policy");
    let served = serve(&policy, &[test_component("conformance")], &[]);
    let addr = served.addr;
    let caps = json!({"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}});
    let update = |id: &str, responses: Value| {
        let params = json!({"taskId": id, "inputResponses": responses});
        let reply = modern(
            addr,
            &body(91, "tasks/update", params, caps.clone()),
            Some(id),
            &[],
        );
        reply.json()["result"].clone()
    };
    let start = |tool: &str, arguments: Value| {
        let params = json!({"name": tool, "arguments": arguments});
        let reply = modern(
            addr,
            &body(1, "tools/call", params, caps.clone()),
            Some(tool),
            &[],
        );
        let created = reply.json()["result"].clone();
        assert_eq!(created["resultType"], "task", "{created}");
        created["taskId"].as_str().expect("taskId").to_string()
    };
    let asking = |t: &Value, n: usize| {
        t["status"] == "input_required"
            && t["inputRequests"].as_object().is_some_and(|r| r.len() == n)
    };

    // confirm_delete works first, becomes a task, then asks inside it.
    let id = start("confirm_delete", json!({"filename": "a.txt"}));
    let task = poll_task(addr, &id, &caps, |t| {
        asking(t, 1) || t["status"] == "completed"
    });
    let requests = task["inputRequests"].as_object().expect("inputRequests");
    let (key, request) = requests.iter().next().expect("one request");
    assert_eq!(request["method"], "elicitation/create", "{task}");
    assert_eq!(request["params"]["message"], "Delete a.txt?");
    let ack = update(
        &id,
        json!({ key: {"action": "accept", "content": {"confirm": true}} }),
    );
    assert_eq!(
        ack,
        json!({"resultType": "complete", "_meta": ack["_meta"]})
    );
    let done = poll_task(addr, &id, &caps, |t| t["status"] == "completed");
    assert_eq!(
        done["result"]["content"][0]["text"], r#"a.txt: action=accept, content={"confirm":true}"#,
        "{done}"
    );

    // multi_input asks two at once, under its keys: one answer leaves the
    // other pending, and the task input_required.
    let id = start("multi_input", json!({}));
    poll_task(addr, &id, &caps, |t| {
        asking(t, 2) || t["status"] == "completed"
    });
    let ack = update(
        &id,
        json!({"first": {"action": "accept", "content": {"name": "Ada"}}}),
    );
    assert_eq!(ack["resultType"], "complete");
    let task = poll_task(addr, &id, &caps, |_| true);
    assert_eq!(task["status"], "input_required", "{task}");
    let left: Vec<&String> = task["inputRequests"]
        .as_object()
        .expect("left")
        .keys()
        .collect();
    assert_eq!(left, ["last"]);
    update(
        &id,
        json!({"last": {"action": "accept", "content": {"name": "Lovelace"}}}),
    );
    let done = poll_task(addr, &id, &caps, |t| t["status"] == "completed");
    assert_eq!(
        done["result"]["content"][0]["text"], "Ada Lovelace",
        "{done}"
    );

    // tasks/cancel stops a task waiting for its input.
    let id = start("confirm_delete", json!({"filename": "b.txt"}));
    poll_task(addr, &id, &caps, |t| asking(t, 1));
    let params = json!({"taskId": id});
    modern(
        addr,
        &body(92, "tasks/cancel", params, caps.clone()),
        Some(&id),
        &[],
    );
    let task = poll_task(addr, &id, &caps, |t| t["status"] != "input_required");
    assert_eq!(task["status"], "cancelled", "{task}");
}

// --- a call run inline asks (#43) ---------------------------------------------
//
// A short tool on an idle server runs on the async thread that received
// its call (`lanes::Inline`). One that may ask its client must not run
// inside the future awaiting it: over HTTP that future's task also writes
// the POST's SSE answer, which carries the question, and in 2026-07-28 it
// races the call against the timer that makes it a task.

/// Whether a call runs inline depends on how long its tool's last runs
/// took, which a loaded machine (a debug build beside other tests)
/// stretches past `lanes::SHORT`: the servers of these tests run inline
/// every call that may run there, whatever its pace.
const ALWAYS_INLINE: &[(&str, &str)] = &[("AIRLOCK_INLINE", "always")];

/// Fresh servers a test of an inline call tries: a call runs inline only
/// when it is alone and the lanes are idle; a try where the asking call did
/// not shows nothing and the next starts afresh.
const TRIES: usize = 10;

/// Calls `tool` (2026-07-28, declaring `caps`) one call after another
/// until one ran inline: a round stops the guest where it asks, so every
/// run is short. The number of calls run inline then.
fn until_inline(addr: std::net::SocketAddr, tool: &str, arguments: &Value, caps: &Value) -> u64 {
    use support::http::{body, modern};
    let start = support::http::calls_inline(addr);
    for n in 1..=300 {
        let params = json!({"name": tool, "arguments": arguments});
        let reply = modern(
            addr,
            &body(n, "tools/call", params, caps.clone()),
            Some(tool),
            &[],
        );
        assert!(reply.json()["result"].is_object(), "{}", reply.body);
        let inline = support::http::calls_inline(addr);
        if inline > start {
            return inline;
        }
    }
    panic!("300 short calls of {tool} one after the other: none ran inline");
}

/// POSTs a `tools/call` of `tool` in `mcp`'s session and reads its answer
/// as it streams; the first request to the client on it is answered with
/// `reply` (by a POST of its own, as a client does). That request, and the
/// call's response.
fn call_answering(
    mcp: &support::http::Mcp,
    tool: &str,
    arguments: Value,
    reply: Value,
) -> (Value, Value) {
    let body = json!({"jsonrpc": "2.0", "id": "asks", "method": "tools/call",
        "params": {"name": tool, "arguments": arguments}});
    let asked = |m: &Value| m.get("method").is_some() && m.get("id").is_some();
    mcp.call_answering(&body, PATIENCE, asked, reply)
}

/// The policy letting `tool` of the conformance component ask `grant`.
fn granting(tool: &str, grant: &str) -> String {
    format!("[components.conformance.tools.{tool}]\nask = [\"{grant}\"]\n")
}

/// Over HTTP in a 2025-11-25 session, a call of `tool` that runs inline
/// asks its client: `method` reaches the client on the POST's SSE answer,
/// the client answers `reply`, and the call answers `text`. A try whose
/// asking call did not run inline after all (a stall made the tool's last
/// short run long) shows nothing, so a fresh server tries again.
fn asks_inline_over_http(
    tool: &str,
    arguments: Value,
    grant: &str,
    method: &str,
    reply: Value,
    text: &str,
) {
    let caps: Value = serde_json::from_str(EVERYTHING).expect("capabilities");
    for _try in 0..TRIES {
        let served = support::http::serve_with_env(
            &granting(tool, grant),
            &[test_component("conformance")],
            &[],
            ALWAYS_INLINE,
        );
        let asking = support::http::Mcp::connect(served.addr, caps.clone(), &[]);
        let before = until_inline(served.addr, tool, &arguments, &caps);
        let (request, response) = call_answering(&asking, tool, arguments.clone(), reply.clone());
        assert_eq!(request["method"], method, "{request}");
        assert_eq!(response["result"]["content"][0]["text"], text, "{response}");
        if support::http::calls_inline(served.addr) == before + 1 {
            return;
        }
    }
    panic!(
        "in {TRIES} tries the asking call of {tool} never ran inline, though the server was idle"
    );
}

#[test]
fn a_call_run_inline_elicits_over_http() {
    asks_inline_over_http(
        "test_elicitation",
        json!({"message": "Who?"}),
        "elicit",
        "elicitation/create",
        json!({"action": "accept", "content": {"username": "ada", "email": "a@b.c"}}),
        r#"User response: action=accept, content={"username":"ada","email":"a@b.c"}"#,
    );
}

#[test]
fn a_call_run_inline_samples_over_http() {
    asks_inline_over_http(
        "test_sampling",
        json!({"prompt": "Capital of France?"}),
        "sample",
        "sampling/createMessage",
        json!({"role": "assistant", "content": {"type": "text", "text": "Paris"},
            "model": "m-1", "stopReason": "endTurn"}),
        "LLM response: Paris",
    );
}

/// The same over stdio, where a writer task of its own carries the
/// question. Forty short rounds (2026-07-28 requests in the same process)
/// are far more than it takes to run inline: six short runs of the tool,
/// after eight calls that came alone.
#[test]
fn a_call_run_inline_elicits_over_stdio() {
    let dir = tempfile::tempdir().expect("temp dir");
    let policy = write_policy(&dir, &granting("test_elicitation", "elicit"));
    let caps: Value = serde_json::from_str(EVERYTHING).expect("capabilities");
    let mut server = Stdio2025::start(&policy, caps.clone());
    for id in 1..=40 {
        server.send(
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
                "name": "test_elicitation", "arguments": {"message": "Who?"},
                "_meta": support::http::meta(caps.clone()),
            }}),
        );
        let round = server.next();
        assert_eq!(round["result"]["resultType"], "input_required", "{round}");
    }
    server.call(100, "test_elicitation", json!({"message": "Who?"}));
    let request = server.next();
    assert_eq!(request["method"], "elicitation/create", "{request}");
    let reply = json!({"action": "accept", "content": {"username": "ada", "email": "a@b.c"}});
    server.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": reply}));
    let answer = server.next();
    assert_eq!(answer["id"], 100, "{answer}");
    assert_eq!(
        answer["result"]["content"][0]["text"],
        r#"User response: action=accept, content={"username":"ada","email":"a@b.c"}"#
    );
}

/// A 2026-07-28 call that may ask, runs inline and goes on past its first
/// moments becomes a task then, as on a lane: its `CreateTaskResult` says
/// `working` (run in place, the timer that makes the task raced the call
/// in the same poll, and the task was made only once the call had ended).
#[test]
fn a_call_run_inline_that_may_ask_becomes_a_task_while_it_runs() {
    use support::http::{body, modern};
    let plain = json!({"elicitation": {}});
    let caps = json!({"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}});
    for _try in 0..TRIES {
        let served = support::http::serve_with_env(
            &granting("slow_compute", "elicit"),
            &[test_component("conformance")],
            &[],
            ALWAYS_INLINE,
        );
        let addr = served.addr;
        let before = until_inline(addr, "slow_compute", &json!({"seconds": 0}), &plain);
        let params = json!({"name": "slow_compute", "arguments": {"seconds": 2}});
        let reply = modern(
            addr,
            &body(1, "tools/call", params, caps.clone()),
            Some("slow_compute"),
            &[],
        );
        let created = reply.json()["result"].clone();
        assert_eq!(created["resultType"], "task", "{created}");
        assert_eq!(
            created["status"], "working",
            "the task was made only once the call had ended: {created}"
        );
        let id = created["taskId"].as_str().expect("taskId").to_string();
        let done = poll_task(addr, &id, &caps, |t| t["status"] == "completed");
        assert_eq!(
            done["result"]["content"][0]["text"], "computed after 2 s",
            "{done}"
        );
        if support::http::calls_inline(addr) == before + 1 {
            return;
        }
    }
    panic!("in {TRIES} tries the call never ran inline, though the server was idle");
}
