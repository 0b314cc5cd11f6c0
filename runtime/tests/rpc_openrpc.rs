//! `/rpc`'s OpenRPC side over HTTP, end to end against the real binary:
//! `rpc.discover` and `GET /rpc/openrpc.json` answer the same document of
//! the tools a caller may use, it follows hot reload, and
//! `GET /rpc?method=…&params=…` calls a read-only tool through the POST
//! path (grants, errors, audit entry) and never another one, whatever the
//! policy allows.

use crate::support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::component;
use support::http::{JSON, http, serve};

/// `s` with the characters a query value cannot hold escaped.
fn query(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

fn discover(addr: std::net::SocketAddr, headers: &[(&str, &str)]) -> Value {
    let mut all = vec![JSON];
    all.extend_from_slice(headers);
    let r = http(
        addr,
        "POST",
        "/rpc",
        &all,
        br#"{"jsonrpc":"2.0","id":1,"method":"rpc.discover"}"#,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()["result"].clone()
}

fn names(document: &Value) -> Vec<String> {
    document["methods"]
        .as_array()
        .map(|m| {
            m.iter()
                .filter_map(|m| m["name"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn discover_and_the_document_url_answer_the_same_document_per_token() {
    let hash = {
        use sha2::Digest as _;
        hex::encode(sha2::Sha256::digest(b"prices-secret"))
    };
    let policy = format!(
        "[[tokens]]\nname = \"prices\"\nsha256 = \"{hash}\"\ntools = [\"lookup_price\"]\n\n\
         [[tokens]]\nname = \"all\"\nsha256 = \"{}\"\n",
        {
            use sha2::Digest as _;
            hex::encode(sha2::Sha256::digest(b"all-secret"))
        }
    );
    let served = serve(&policy, &[component("catalog"), component("export")], &[]);
    let all = ("Authorization", "Bearer all-secret");
    let prices = ("Authorization", "Bearer prices-secret");

    let r = http(served.addr, "GET", "/rpc/openrpc.json", &[], b"");
    assert_eq!(r.status, 401);
    let r = http(served.addr, "GET", "/rpc/openrpc.json", &[all], b"");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.header("cache-control"), Some("no-store"));
    let document = r.json();
    assert_eq!(document["openrpc"], "1.3.2");
    assert_eq!(
        names(&document),
        ["export_orders", "lookup_price", "restock"]
    );
    assert_eq!(discover(served.addr, &[all]), document);

    // A token limited to some tools sees only those, both ways.
    let limited = discover(served.addr, &[prices]);
    assert_eq!(names(&limited), ["lookup_price"]);
    let r = http(served.addr, "GET", "/rpc/openrpc.json", &[prices], b"");
    assert_eq!(r.json(), limited);
    let price = &limited["methods"][0];
    assert_eq!(price["result"]["schema"]["type"], "number");
    assert_eq!(price["x-allowGet"], true);

    // The text description says which methods allow GET.
    let d = http(served.addr, "GET", "/rpc/describe", &[all], b"").body;
    let section = |name: &str| {
        d.split("\n\n")
            .find(|s| s.starts_with(name))
            .unwrap_or_else(|| panic!("no {name} in {d}"))
            .to_string()
    };
    assert!(section("lookup_price").contains("calls: POST, GET"), "{d}");
    assert!(section("restock").contains("calls: POST only"), "{d}");
}

#[test]
fn get_calls_read_only_tools_through_the_post_path() {
    let audit = tempfile::tempdir().expect("tempdir");
    let log = audit.path().join("audit.jsonl");
    // Destructive calls allowed: GET still refuses them.
    let policy = format!(
        "audit = {:?}\n[defaults]\ndestructive = \"allow\"\n",
        log.display().to_string()
    );
    let served = serve(&policy, &[component("catalog"), component("export")], &[]);
    let get = |path: &str| http(served.addr, "GET", path, &[], b"");

    // By name and by position, with an id; idempotent: cacheable.
    let r = get(&format!(
        "/rpc?method=lookup_price&params={}&id=7",
        query(r#"{"sku":"SKU-1001"}"#)
    ));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json(), json!({"jsonrpc": "2.0", "id": 7, "result": 12.5}));
    assert_eq!(r.header("cache-control"), Some("private, max-age=60"));
    let r = get(&format!(
        "/rpc?method=lookup_price&params={}",
        query(r#"["SKU-1001"]"#)
    ));
    assert_eq!(r.json()["result"], 12.5, "{}", r.body);
    assert_eq!(r.json()["id"], Value::Null);
    let r = get(&format!(
        "/rpc?method=export_orders&params={}&id=%22e%22",
        query(r#"["CUST-42"]"#)
    ));
    assert_eq!(r.json()["id"], "e");
    assert!(r.json()["result"].is_string(), "{}", r.body);

    // The same errors as POST, and never cached.
    let r = get(&format!(
        "/rpc?method=export_orders&params={}",
        query(r#"{"customer_id":"C","max_age_days":"soon"}"#)
    ));
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["error"]["code"], -32602);
    assert_eq!(r.json()["error"]["data"]["parameter"], "max_age_days");
    assert_eq!(r.header("cache-control"), Some("no-store"));
    assert_eq!(get("/rpc?method=nope").json()["error"]["code"], -32601);
    let r = get("/rpc?method=lookup_price&params=%7Bnope");
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["code"], -32602);
    let r = get("/rpc");
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["code"], -32600);
    assert_eq!(get("/rpc?method=a&method=b").status, 400);

    // A destructive tool: only POST, though the policy allows it.
    let r = get(&format!(
        "/rpc?method=restock&params={}",
        query(r#"{"sku":"SKU-1001","units":1}"#)
    ));
    assert_eq!(r.status, 405, "{}", r.body);
    assert_eq!(r.header("allow"), Some("POST"));
    assert_eq!(r.json()["error"]["code"], -32600);
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("POST"))
    );
    // rpc.discover is read-only too.
    let r = get("/rpc?method=rpc.discover");
    assert_eq!(names(&r.json()["result"]).len(), 3, "{}", r.body);
    assert_eq!(r.header("cache-control"), Some("no-store"));
    assert_eq!(
        http(served.addr, "PUT", "/rpc", &[JSON], b"{}").header("allow"),
        Some("GET, POST")
    );

    // Each GET call left its audit entry, as a POST does; the refused
    // GET of restock ran nothing.
    let deadline = Instant::now() + Duration::from_secs(10);
    let entries = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let entries: Vec<Value> = text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        if entries.len() >= 4 || Instant::now() > deadline {
            break entries;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let tools: Vec<&str> = entries.iter().filter_map(|e| e["tool"].as_str()).collect();
    assert_eq!(
        tools.iter().filter(|t| **t == "lookup_price").count(),
        2,
        "{entries:?}"
    );
    assert!(tools.contains(&"export_orders"), "{entries:?}");
    assert!(!tools.contains(&"restock"), "{entries:?}");
}

#[test]
fn a_token_cannot_learn_of_a_tool_through_get() {
    let hash = {
        use sha2::Digest as _;
        hex::encode(sha2::Sha256::digest(b"prices-secret"))
    };
    let policy =
        format!("[[tokens]]\nname = \"prices\"\nsha256 = \"{hash}\"\ntools = [\"lookup_price\"]\n");
    let served = serve(&policy, &[component("catalog")], &[]);
    let auth = ("Authorization", "Bearer prices-secret");
    // restock exists, is destructive, and is not this token's: -32601, as
    // for a tool that is not there, not the 405 that would name it.
    let r = http(served.addr, "GET", "/rpc?method=restock", &[auth], b"");
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["error"]["code"], -32601);
    let r = http(
        served.addr,
        "GET",
        "/rpc?method=lookup_price&params=%5B%22SKU-1001%22%5D",
        &[],
        b"",
    );
    assert_eq!(r.status, 401);
}

#[test]
fn the_document_follows_hot_reload() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::copy(component("catalog"), dir.path().join("catalog.wasm")).expect("copy");
    let folder = dir.path().to_string_lossy().to_string();
    let served = serve("", &[dir.path().to_path_buf()], &["--watch"]);
    let document = || http(served.addr, "GET", "/rpc/openrpc.json", &[], b"").json();
    assert_eq!(names(&document()), ["lookup_price", "restock"], "{folder}");
    std::fs::copy(component("export"), dir.path().join("export.wasm")).expect("copy");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let now = names(&document());
        if now.contains(&"export_orders".to_string()) {
            assert_eq!(names(&discover(served.addr, &[])), now);
            break;
        }
        assert!(
            Instant::now() < deadline,
            "export_orders never appeared: {now:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}
