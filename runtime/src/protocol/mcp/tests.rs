//! Sessions end to end without a guest: lifecycle, negotiation, errors,
//! tasks' availability per revision, both revisions on one session,
//! notifications to standing streams and subscriptions.

use std::sync::Arc;

use serde_json::{Value, json};

use super::lifecycle::LIST_TTL_MS;
use super::request::{MISSING_CAPABILITY, UNSUPPORTED_VERSION};
use super::{Server, Session};
use crate::Runtime;
use crate::call::Caller;
use crate::policy::{Policy, Token};
use crate::protocol::jsonrpc;
use crate::protocol::outbox::Outbox;
use crate::sandbox::{Sandbox, SandboxConfig};
use crate::tool::Level;

const LATEST: &str = "2025-11-25";
const META: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

fn empty_runtime() -> Arc<Runtime> {
    let sandbox =
        Sandbox::new(&SandboxConfig::default().cache(None).instances(4)).expect("sandbox");
    Arc::new(Runtime::new(sandbox, Policy::default()))
}

/// A session as a transport opens it, with its server beside it.
#[derive(Clone)]
struct Conn {
    server: Arc<Server>,
    session: Arc<Session>,
}

impl std::ops::Deref for Conn {
    type Target = Session;

    fn deref(&self) -> &Session {
        &self.session
    }
}

impl Conn {
    fn open(server: &Arc<Server>, token: Option<Token>) -> Conn {
        let caller = Caller::of(token.as_ref(), Caller::Stdio);
        Conn {
            server: server.clone(),
            session: server.open_session(token, caller),
        }
    }

    /// Handles `text` as a transport would, with messages going to `out`.
    async fn handle(&self, text: &str, out: &Outbox) -> Option<Value> {
        super::handle(
            &self.server,
            &self.session,
            jsonrpc::parse(text.as_bytes()),
            None,
            out,
        )
        .await
        .body
    }
}

async fn send(conn: &Conn, text: &str) -> Option<Value> {
    let (tx, _rx) = Outbox::channel();
    conn.handle(text, &tx).await
}

fn init(version: &str) -> String {
    json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion": version, "capabilities": {}, "clientInfo": {"name":"t","version":"1"}}})
    .to_string()
}

#[tokio::test]
async fn lifecycle_and_negotiation() {
    let server = Server::new(empty_runtime());
    let session = Conn::open(&server, None);
    // Before initialize: ping works, the rest does not.
    let r = send(&session, r#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#)
        .await
        .unwrap();
    assert_eq!(r["result"], json!({}));
    let r = send(
        &session,
        r#"{"jsonrpc":"2.0","id":0,"method":"tools/list"}"#,
    )
    .await
    .unwrap();
    assert_eq!(r["error"]["code"], -32600);

    let r = send(&session, &init("2025-06-18")).await.unwrap();
    assert_eq!(r["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(r["result"]["capabilities"]["tools"]["listChanged"], true);
    assert!(r["result"]["capabilities"]["logging"].is_object());
    assert_eq!(r["result"]["serverInfo"]["name"], "airlock");
    // Twice is an error.
    let r = send(&session, &init("2025-06-18")).await.unwrap();
    assert_eq!(r["error"]["code"], -32600);
    assert!(
        send(
            &session,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#
        )
        .await
        .is_none()
    );

    for (asked, answered) in [
        ("2025-11-25", "2025-11-25"),
        ("2025-03-26", "2025-03-26"),
        ("2024-11-05", LATEST),
        ("2026-07-28", LATEST),
        ("1999-01-01", LATEST),
    ] {
        let s = Conn::open(&server, None);
        let r = send(&s, &init(asked)).await.unwrap();
        assert_eq!(r["result"]["protocolVersion"], answered, "{asked}");
    }
}

#[tokio::test]
async fn methods_and_errors() {
    let session = Conn::open(&Server::new(empty_runtime()), None);
    send(&session, &init(LATEST)).await;
    let r = send(
        &session,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
    )
    .await
    .unwrap();
    assert_eq!(r["result"]["tools"], json!([]));
    assert!(r["result"].get("nextCursor").is_none());
    let r = send(
        &session,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":"!!"}}"#,
    )
    .await
    .unwrap();
    assert_eq!(r["error"]["code"], -32602);
    // Served without a component offering any: an empty list.
    let r = send(
        &session,
        r#"{"jsonrpc":"2.0","id":4,"method":"resources/list"}"#,
    )
    .await
    .unwrap();
    assert_eq!(r["result"]["resources"], json!([]));
    let r = send(
        &session,
        r#"{"jsonrpc":"2.0","id":4,"method":"roots/list"}"#,
    )
    .await
    .unwrap();
    assert_eq!(r["error"]["code"], -32601);
    let r = send(
        &session,
        r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"nope"}}"#,
    )
    .await
    .unwrap();
    assert_eq!(r["error"]["code"], -32602);
    assert!(r["error"]["message"].as_str().unwrap().contains("nope"));
    let r = send(
        &session,
        r#"{"jsonrpc":"2.0","id":6,"method":"logging/setLevel","params":{"level":"warning"}}"#,
    )
    .await
    .unwrap();
    assert_eq!(r["result"], json!({}));
    assert_eq!(
        session.level().load(std::sync::atomic::Ordering::Relaxed),
        Level::Warning as u8
    );
    let r = send(
        &session,
        r#"{"jsonrpc":"2.0","id":7,"method":"logging/setLevel","params":{"level":"loud"}}"#,
    )
    .await
    .unwrap();
    assert_eq!(r["error"]["code"], -32602);
    // Notifications, even unknown ones, get no response.
    assert!(
        send(
            &session,
            r#"{"jsonrpc":"2.0","method":"notifications/whatever"}"#
        )
        .await
        .is_none()
    );
    assert!(
        send(
            &session,
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}"#
        )
        .await
        .is_none()
    );
    // Replies to nothing are ignored.
    assert!(
        send(&session, r#"{"jsonrpc":"2.0","id":"x","result":{}}"#)
            .await
            .is_none()
    );
    // Batches: notifications omitted, errors kept.
    let r = send(
        &session,
        r#"[{"jsonrpc":"2.0","id":8,"method":"ping"},{"jsonrpc":"2.0","method":"n"},5]"#,
    )
    .await
    .unwrap();
    assert_eq!(r.as_array().unwrap().len(), 2);
    assert_eq!(r[1]["error"]["code"], -32600);
    let r = send(&session, "[]").await.unwrap();
    assert_eq!(r["error"]["code"], -32600);
    let r = send(&session, "{oops").await.unwrap();
    assert_eq!(r["error"]["code"], -32700);
    assert_eq!(r["id"], Value::Null);
}

#[tokio::test]
async fn tasks_capability_and_methods_follow_the_revision_and_auth() {
    let server = Server::new(empty_runtime());
    // 2025-11-25 without a token: tasks, but no listing.
    let session = Conn::open(&server, None);
    let r = send(&session, &init("2025-11-25")).await.unwrap();
    let tasks = &r["result"]["capabilities"]["tasks"];
    assert_eq!(tasks["requests"]["tools"]["call"], json!({}));
    assert_eq!(tasks["cancel"], json!({}));
    assert!(tasks.get("list").is_none());
    let r = send(
        &session,
        r#"{"jsonrpc":"2.0","id":2,"method":"tasks/list"}"#,
    )
    .await
    .unwrap();
    assert_eq!(r["error"]["code"], -32601);
    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        let text = json!({"jsonrpc":"2.0","id":3,"method":method,
            "params":{"taskId":"0123456789abcdef0123456789abcdef"}})
        .to_string();
        let r = send(&session, &text).await.unwrap();
        assert_eq!(r["error"]["code"], -32602, "{method}");
        let text = json!({"jsonrpc":"2.0","id":3,"method":method,"params":{}}).to_string();
        let r = send(&session, &text).await.unwrap();
        assert_eq!(r["error"]["code"], -32602, "{method} without taskId");
    }
    // Unknown tool in a task-augmented call: still a JSON-RPC error.
    let r = send(
        &session,
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"nope","task":{}}}"#,
    )
    .await
    .unwrap();
    assert_eq!(r["error"]["code"], -32602);

    // With a token: tasks/list is advertised and answers (empty).
    use sha2::Digest as _;
    let token = Token::secret("ci", sha2::Sha256::digest(b"s").into(), None);
    let session = Conn::open(&server, Some(token));
    let r = send(&session, &init("2025-11-25")).await.unwrap();
    assert_eq!(r["result"]["capabilities"]["tasks"]["list"], json!({}));
    let r = send(
        &session,
        r#"{"jsonrpc":"2.0","id":2,"method":"tasks/list"}"#,
    )
    .await
    .unwrap();
    assert_eq!(r["result"]["tasks"], json!([]));
    let r = send(
        &session,
        r#"{"jsonrpc":"2.0","id":2,"method":"tasks/list","params":{"cursor":"bm9wZQ"}}"#,
    )
    .await
    .unwrap();
    assert_eq!(r["error"]["code"], -32602);

    // Older revisions have no tasks at all.
    let session = Conn::open(&server, None);
    let r = send(&session, &init("2025-06-18")).await.unwrap();
    assert!(r["result"]["capabilities"].get("tasks").is_none());
    let r = send(
        &session,
        r#"{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"x"}}"#,
    )
    .await
    .unwrap();
    assert_eq!(r["error"]["code"], -32601);
}

#[tokio::test]
async fn list_changed_reaches_initialized_sessions_with_a_stream() {
    let server = Server::new(empty_runtime());
    let (tx, mut rx) = Outbox::channel();
    let ready = Conn::open(&server, None);
    ready.set_standing(Some(tx.clone()));
    send(&ready, &init(LATEST)).await;
    // Not initialized: not told.
    let fresh = Conn::open(&server, None);
    fresh.set_standing(Some(tx));
    // Initialized without a stream: cannot be told.
    let silent = Conn::open(&server, None);
    send(&silent, &init(LATEST)).await;
    assert_eq!(server.tools_changed(), 1);
    let message = rx.try_recv().expect("a notification");
    assert_eq!(message["method"], "notifications/tools/list_changed");
    assert!(rx.try_recv().is_err());
    drop((ready, fresh, silent));
    assert_eq!(server.tools_changed(), 0);
}

#[tokio::test]
async fn one_session_serves_both_revisions() {
    let sandbox =
        Sandbox::new(&SandboxConfig::default().cache(None).instances(4)).expect("sandbox");
    let server = Server::new(Arc::new(Runtime::new(sandbox, Policy::default())));
    let session = Conn::open(&server, None);
    let send = |text: String| {
        let session = session.clone();
        async move {
            let (tx, _rx) = Outbox::channel();
            session.handle(&text, &tx).await.expect("a response")
        }
    };
    let modern = |id: u32, method: &str| {
        format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{"_meta":{META}}}}}"#)
    };
    // Modern first, without initialize.
    let r = send(modern(1, "server/discover")).await;
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    assert_eq!(r["result"]["supportedVersions"][1], "2025-11-25");
    let r = send(modern(2, "tools/list")).await;
    assert_eq!(r["result"]["resultType"], "complete");
    assert_eq!(r["result"]["cacheScope"], "public");
    assert_eq!(r["result"]["ttlMs"], LIST_TTL_MS);
    // Removed in this revision.
    for (i, m) in ["ping", "logging/setLevel", "tasks/list", "tasks/result"]
        .iter()
        .enumerate()
    {
        let r = send(modern(10 + i as u32, m)).await;
        assert_eq!(r["error"]["code"], jsonrpc::METHOD_NOT_FOUND, "{m}");
    }
    // Legacy methods still need initialize; then both work side by side.
    let r = send(r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#.into()).await;
    assert_eq!(r["error"]["code"], jsonrpc::INVALID_REQUEST);
    let r = send(
        r#"{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#.into(),
    )
    .await;
    assert_eq!(r["result"]["protocolVersion"], "2025-11-25");
    let r = send(r#"{"jsonrpc":"2.0","id":5,"method":"tools/list"}"#.into()).await;
    assert!(
        r["result"].get("resultType").is_none(),
        "legacy results unchanged"
    );
    let r = send(modern(6, "tools/list")).await;
    assert_eq!(r["result"]["resultType"], "complete");
    let r = send(
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2030-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}"#.into(),
    )
    .await;
    assert_eq!(r["error"]["code"], UNSUPPORTED_VERSION);
    let r = send(r#"{"jsonrpc":"2.0","id":8,"method":"server/discover"}"#.into()).await;
    assert_eq!(r["error"]["code"], jsonrpc::INVALID_PARAMS);
    let r = send(
        format!(r#"{{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{{"name":"nope","_meta":{META}}}}}"#),
    )
    .await;
    assert_eq!(r["error"]["code"], jsonrpc::INVALID_PARAMS, "unknown tool");
    let r = send(
        format!(r#"{{"jsonrpc":"2.0","id":20,"method":"tasks/get","params":{{"taskId":"00","_meta":{META}}}}}"#),
    )
    .await;
    assert_eq!(r["error"]["code"], MISSING_CAPABILITY, "no tasks extension");
    let r = send(
        r#"{"jsonrpc":"2.0","id":21,"method":"tasks/get","params":{"taskId":"00","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}"#.into(),
    )
    .await;
    assert_eq!(r["error"]["code"], jsonrpc::INVALID_PARAMS, "unknown task");
}

#[tokio::test]
async fn listen_acknowledges_and_carries_list_changed() {
    let sandbox =
        Sandbox::new(&SandboxConfig::default().cache(None).instances(4)).expect("sandbox");
    let server = Server::new(Arc::new(Runtime::new(sandbox, Policy::default())));
    let session = Conn::open(&server, None);
    let (tx, mut rx) = Outbox::channel();
    let text = format!(
        r#"{{"jsonrpc":"2.0","id":"l1","method":"subscriptions/listen","params":{{"_meta":{META},"notifications":{{"toolsListChanged":true,"resourceSubscriptions":["x"]}}}}}}"#
    );
    let listening = {
        let session = session.clone();
        tokio::spawn(async move { session.handle(&text, &tx).await })
    };
    let ack = rx.recv().await.expect("ack");
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "l1"
    );
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true})
    );
    assert_eq!(server.tools_changed(), 1);
    let changed = rx.recv().await.expect("list_changed");
    assert_eq!(changed["method"], "notifications/tools/list_changed");
    assert_eq!(
        changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "l1"
    );
    server.end_subscriptions(&session);
    let end = listening.await.expect("joined").expect("a final result");
    assert_eq!(end["id"], "l1");
    assert_eq!(end["result"]["resultType"], "complete");
    assert_eq!(server.tools_changed(), 0);
}
