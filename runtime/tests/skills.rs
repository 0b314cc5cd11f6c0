//! The MCP Skills extension (SEP-2640) end to end, with the skill
//! `catalog-pricing` that `components/catalog` carries: the capability,
//! `skills/list` and `skills/get` (the front matter as written, each
//! file's digest and size — recomputed here from the bytes read back),
//! `resources/read` of a skill's file (answered from memory, audited as
//! `resource:URI`), `resources/directory/read`, what a bearer token's
//! `resources` let it see (and which URIs `airlock check` takes there),
//! `airlock check` refusing a component whose skill breaks a rule, and
//! `serve --watch` telling clients when a component with a skill arrives or
//! leaves.

use crate::support;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::component;
use support::http::{ACCEPT, JSON, Mcp, answer, body, http, modern, serve};

const SKILL: &str = "skill://catalog-pricing/SKILL.md";
const ARTICLES: &str = "skill://catalog-pricing/references/articles.md";
const ROOT: &str = "skill://catalog-pricing";
const FOLDER: &str = "skill://catalog-pricing/references";
const EXTENSION: &str = "io.modelcontextprotocol/skills";

fn catalog() -> Vec<PathBuf> {
    vec![component("catalog")]
}

/// A file of the skill as it is in the repository (what the component
/// bundled when it was built).
fn source(file: &str) -> Vec<u8> {
    let path = support::workspace()
        .join("components/catalog/skills/catalog-pricing")
        .join(file);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    format!("sha256:{}", hex::encode(sha2::Sha256::digest(bytes)))
}

fn sha256_hex(text: &str) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(text.as_bytes()))
}

/// The URIs of a list of resources (or skills).
fn uris(list: &Value) -> Vec<&str> {
    list.as_array()
        .unwrap_or_else(|| panic!("not a list: {list}"))
        .iter()
        .filter_map(|r| r["uri"].as_str())
        .collect()
}

/// The text of a one-file `resources/read` answer of `uri`.
fn read_text(mcp: &mut Mcp, uri: &str) -> String {
    let read = mcp.request("resources/read", json!({ "uri": uri }));
    let contents = &read["result"]["contents"];
    assert_eq!(contents.as_array().map(Vec::len), Some(1), "{read}");
    assert_eq!(contents[0]["uri"], uri, "{read}");
    assert_eq!(contents[0]["mimeType"], "text/markdown", "{read}");
    contents[0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text: {read}"))
        .to_string()
}

/// The audit log's entries, once it has at least `count` of them.
fn audit_entries(path: &Path, count: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if path.is_file() {
            let entries = support::audit_entries(path);
            if entries.len() >= count || Instant::now() > deadline {
                return entries;
            }
        }
        assert!(
            Instant::now() < deadline,
            "no audit log at {}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn skills_are_listed_got_read_and_audited_with_digests_of_the_bytes_served() {
    let dir = tempfile::tempdir().expect("tempdir");
    let audit = dir.path().join("audit.jsonl");
    let served = serve(&format!("audit = {:?}\n", audit), &catalog(), &[]);

    // The extension is announced, with directory reads.
    let init = http(
        served.addr,
        "POST",
        "/mcp",
        &[JSON, ACCEPT],
        json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion":"2025-11-25","capabilities":{},
            "clientInfo":{"name":"t","version":"1"}}})
        .to_string()
        .as_bytes(),
    );
    assert_eq!(
        init.json()["result"]["capabilities"]["extensions"][EXTENSION],
        json!({"directoryRead": true}),
        "{}",
        init.body
    );

    let mut mcp = Mcp::connect(served.addr, json!({}), &[]);
    let list = mcp.request("skills/list", json!({}));
    let skills = &list["result"]["skills"];
    assert_eq!(uris(skills), [SKILL], "{list}");
    assert!(
        list["result"].get("nextCursor").is_none(),
        "one page: {list}"
    );
    let entry = &skills[0];

    // The front matter as SKILL.md writes it: every field, in its order.
    let frontmatter = &entry["frontmatter"];
    let keys: Vec<&str> = frontmatter
        .as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["name", "description", "license", "metadata"]);
    assert_eq!(
        *frontmatter,
        json!({
            "name": "catalog-pricing",
            "description": "Quote prices and restock articles of the catalog with its tools. Use \
                            it when a user asks what an article costs, what an order would cost, \
                            or to add stock.",
            "license": "Apache-2.0",
            "metadata": {"component": "catalog"},
        })
    );

    // Every file, with the digest and size of the bytes a read gives back,
    // and those bytes are the files the component was built from.
    let files = entry["resources"].as_array().expect("resources");
    assert_eq!(uris(&entry["resources"]), [SKILL, ARTICLES]);
    for (file, path) in files.iter().zip(["SKILL.md", "references/articles.md"]) {
        let uri = file["uri"].as_str().expect("uri");
        let bytes = read_text(&mut mcp, uri).into_bytes();
        assert_eq!(bytes, source(path), "{uri}");
        assert_eq!(file["digest"], sha256(&bytes), "{uri}");
        assert_eq!(file["size"], bytes.len(), "{uri}");
    }

    // skills/get answers the same entry; an unknown skill is -32602.
    let got = mcp.request("skills/get", json!({ "uri": SKILL }));
    assert_eq!(got["result"]["skill"], *entry, "{got}");
    for unknown in ["skill://nope/SKILL.md", ROOT, ARTICLES] {
        let r = mcp.request("skills/get", json!({ "uri": unknown }));
        assert_eq!(r["error"]["code"], -32602, "{unknown}: {r}");
    }

    // Every file is a resource; SKILL.md named and described by its front
    // matter.
    let resources = mcp.request("resources/list", json!({}));
    let listed = &resources["result"]["resources"];
    assert_eq!(uris(listed), [SKILL, ARTICLES], "{resources}");
    assert_eq!(listed[0]["name"], "catalog-pricing");
    assert_eq!(listed[0]["description"], frontmatter["description"]);
    assert_eq!(listed[1]["name"], "articles.md");

    // Directory reads: the root holds SKILL.md and the folder `references`,
    // which holds articles.md; a file or an unknown folder is no directory.
    let root = mcp.request("resources/directory/read", json!({ "uri": ROOT }));
    assert_eq!(
        root["result"]["resources"],
        json!([
            listed[0],
            {"uri": FOLDER, "name": "references", "mimeType": "inode/directory"},
        ]),
        "{root}"
    );
    let folder = mcp.request("resources/directory/read", json!({ "uri": FOLDER }));
    assert_eq!(
        folder["result"]["resources"],
        json!([listed[1]]),
        "{folder}"
    );
    for no_directory in [SKILL, "skill://catalog-pricing/nope", "skill://nope"] {
        let r = mcp.request("resources/directory/read", json!({ "uri": no_directory }));
        assert_eq!(r["error"]["code"], -32602, "{no_directory}: {r}");
    }

    // 2026-07-28: the same entries, with cache hints.
    let modern_list = answer(&modern(
        served.addr,
        &body(1, "skills/list", json!({}), json!({})),
        None,
        &[],
    ));
    assert_eq!(modern_list["result"]["skills"], *skills, "{modern_list}");
    assert!(modern_list["result"]["ttlMs"].is_u64(), "{modern_list}");
    assert_eq!(modern_list["result"]["cacheScope"], "public");

    // Each read is audited like one that ran, as resource:URI with the
    // component's digest: SKILL.md and articles.md once each above.
    let entries = audit_entries(&audit, 2);
    let reads: Vec<&Value> = entries
        .iter()
        .filter(|e| {
            e["tool"]
                .as_str()
                .is_some_and(|t| t.starts_with("resource:"))
        })
        .collect();
    let labels: Vec<&str> = reads.iter().filter_map(|e| e["tool"].as_str()).collect();
    assert_eq!(
        labels,
        [format!("resource:{SKILL}"), format!("resource:{ARTICLES}")],
        "{entries:?}"
    );
    let digest = airlock::catalog::sha256_hex(&std::fs::read(component("catalog")).expect("read"));
    for read in reads {
        assert_eq!(read["outcome"], "ok", "{read}");
        assert_eq!(read["caller_kind"], "session", "{read}");
        assert_eq!(read["component_sha256"], digest.as_str(), "{read}");
        // No guest ran: no call id, no grant.
        assert_eq!(read["call_id"], Value::Null, "{read}");
        assert_eq!(read["grant"], Value::Null, "{read}");
    }
}

#[test]
fn a_token_sees_a_skill_only_when_its_resources_name_it() {
    let policy = format!(
        "[[tokens]]\nname = \"skilled\"\nsha256 = \"{}\"\nresources = [\"{SKILL}\"]\n\n\
         [[tokens]]\nname = \"prices\"\nsha256 = \"{}\"\ntools = [\"lookup_price\"]\n\n\
         [[tokens]]\nname = \"one-file\"\nsha256 = \"{}\"\nresources = [\"{ARTICLES}\"]\n",
        sha256_hex("skilled-secret"),
        sha256_hex("prices-secret"),
        sha256_hex("one-file-secret"),
    );
    let served = serve(&policy, &catalog(), &[]);

    // The skill's URI gives the whole skill: its entry, every file, its
    // folders.
    let mut skilled = Mcp::connect(
        served.addr,
        json!({}),
        &[("Authorization", "Bearer skilled-secret")],
    );
    let list = skilled.request("skills/list", json!({}));
    assert_eq!(uris(&list["result"]["skills"]), [SKILL], "{list}");
    let got = skilled.request("skills/get", json!({ "uri": SKILL }));
    assert_eq!(got["result"]["skill"]["uri"], SKILL, "{got}");
    let resources = skilled.request("resources/list", json!({}));
    assert_eq!(
        uris(&resources["result"]["resources"]),
        [SKILL, ARTICLES],
        "{resources}"
    );
    assert_eq!(
        read_text(&mut skilled, ARTICLES).into_bytes(),
        source("references/articles.md")
    );
    let folder = skilled.request("resources/directory/read", json!({ "uri": FOLDER }));
    assert_eq!(uris(&folder["result"]["resources"]), [ARTICLES], "{folder}");
    let tools = skilled.request("tools/list", json!({}));
    assert_eq!(tools["result"]["tools"], json!([]), "it names no tool");

    // A token whose resources do not name it sees neither the skill nor
    // its files: for it they are not served.
    let mut prices = Mcp::connect(
        served.addr,
        json!({}),
        &[("Authorization", "Bearer prices-secret")],
    );
    let list = prices.request("skills/list", json!({}));
    assert_eq!(list["result"]["skills"], json!([]), "{list}");
    let got = prices.request("skills/get", json!({ "uri": SKILL }));
    assert_eq!(got["error"]["code"], -32602, "{got}");
    let resources = prices.request("resources/list", json!({}));
    assert_eq!(resources["result"]["resources"], json!([]), "{resources}");
    for uri in [SKILL, ARTICLES] {
        let read = prices.request("resources/read", json!({ "uri": uri }));
        assert_eq!(read["error"]["code"], -32002, "{uri}: {read}");
    }
    for uri in [ROOT, FOLDER] {
        let dir = prices.request("resources/directory/read", json!({ "uri": uri }));
        assert_eq!(dir["error"]["code"], -32602, "{uri}: {dir}");
    }

    // A file's own URI gives that file, and not the skill.
    let mut one = Mcp::connect(
        served.addr,
        json!({}),
        &[("Authorization", "Bearer one-file-secret")],
    );
    let resources = one.request("resources/list", json!({}));
    assert_eq!(uris(&resources["result"]["resources"]), [ARTICLES]);
    assert_eq!(
        read_text(&mut one, ARTICLES).into_bytes(),
        source("references/articles.md")
    );
    let read = one.request("resources/read", json!({ "uri": SKILL }));
    assert_eq!(read["error"]["code"], -32002, "{read}");
    let list = one.request("skills/list", json!({}));
    assert_eq!(list["result"]["skills"], json!([]), "{list}");
    let dir = one.request("resources/directory/read", json!({ "uri": ROOT }));
    assert_eq!(dir["error"]["code"], -32602, "{dir}");
}

/// A component whose skill breaks an Agent Skills rule is refused by
/// `airlock check`, with the skill and the rule. The SDKs refuse a bad name
/// when they build, so the bad skill is made the way a hand-written guest
/// could ship it: `catalog.wasm` with one byte of its bundled SKILL.md
/// changed (`name: Catalog-pricing`, not lowercase).
#[test]
fn check_refuses_a_component_whose_skill_breaks_a_rule_with_the_reason() {
    let dir = tempfile::tempdir().expect("tempdir");
    let good = std::fs::read(component("catalog")).expect("catalog.wasm");
    let front = b"\nname: catalog-pricing\n";
    let at: Vec<usize> = good
        .windows(front.len())
        .enumerate()
        .filter(|(_, w)| *w == front)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(
        at.len(),
        1,
        "the skill's front matter, once in catalog.wasm"
    );
    let mut bad = good.clone();
    bad[at[0] + "\nname: ".len()] = b'C';
    let bad_path = dir.path().join("bad.wasm");
    std::fs::write(&bad_path, &bad).expect("write");
    let good_path = dir.path().join("good.wasm");
    std::fs::write(&good_path, &good).expect("write");
    let policy = dir.path().join("airlock.toml");
    std::fs::write(&policy, "").expect("policy");
    let policy = policy.to_str().expect("utf-8");

    let out = support::airlock_command(&["check", policy, good_path.to_str().expect("utf-8")])
        .output()
        .expect("run airlock");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let out = support::airlock_command(&["check", policy, bad_path.to_str().expect("utf-8")])
        .output()
        .expect("run airlock");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{err}");
    assert!(
        err.contains(&format!(
            "error: {}: skill \"catalog-pricing\": `name` \"Catalog-pricing\": a skill's name is \
             1 to 64 lowercase letters, digits and single hyphens, not starting or ending with \
             one",
            bad_path.display()
        )),
        "{err}"
    );
}

/// Opens the session's standing SSE stream (GET /mcp); its messages arrive
/// on the returned channel.
fn standing_stream(mcp: &Mcp) -> mpsc::Receiver<Value> {
    let mut stream = TcpStream::connect(mcp.addr).expect("connect");
    let head = format!(
        "GET /mcp HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\nMcp-Session-Id: {}\r\n\r\n",
        mcp.addr, mcp.session
    );
    stream.write_all(head.as_bytes()).expect("write");
    // Open once the server has answered: nothing sent later is missed.
    let mut reader = BufReader::new(stream);
    let mut status = String::new();
    reader.read_line(&mut status).expect("status line");
    assert!(status.contains(" 200 "), "GET /mcp: {status}");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in reader.lines().map_while(Result::ok) {
            if let Some(data) = line.strip_prefix("data: ")
                && let Ok(value) = serde_json::from_str::<Value>(data)
                && tx.send(value).is_err()
            {
                return;
            }
        }
    });
    rx
}

/// The methods of the notifications on `rx` until `method` arrives.
fn until(rx: &mpsc::Receiver<Value>, method: &str) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut seen = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let message = rx
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("no {method} on the GET stream; saw {seen:?}"));
        let name = message["method"].as_str().unwrap_or("").to_string();
        seen.push(name.clone());
        if name == method {
            return seen;
        }
    }
}

/// A skill's files are resources of its component, so a reload that
/// brings or takes a component with a skill tells the clients
/// `notifications/resources/list_changed` (the extension has no
/// notification of its own), and skills/list follows.
#[test]
fn a_reload_that_brings_or_takes_a_skill_sends_resources_list_changed() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Tools, and no resource: what changes the resources is the skill.
    std::fs::copy(component("export"), dir.path().join("export.wasm")).expect("copy");
    let served = serve("", &[], &["--watch", dir.path().to_str().expect("utf-8")]);
    let mut mcp = Mcp::connect(served.addr, json!({}), &[]);
    let events = standing_stream(&mcp);
    let list = mcp.request("skills/list", json!({}));
    assert_eq!(list["result"]["skills"], json!([]), "{list}");
    let resources = mcp.request("resources/list", json!({}));
    assert_eq!(resources["result"]["resources"], json!([]), "{resources}");

    let added = dir.path().join("catalog.wasm");
    std::fs::copy(component("catalog"), &added).expect("copy");
    until(&events, "notifications/resources/list_changed");
    let list = mcp.request("skills/list", json!({}));
    assert_eq!(uris(&list["result"]["skills"]), [SKILL], "{list}");
    assert!(read_text(&mut mcp, SKILL).starts_with("---\nname: catalog-pricing\n"));

    std::fs::remove_file(&added).expect("remove");
    until(&events, "notifications/resources/list_changed");
    let list = mcp.request("skills/list", json!({}));
    assert_eq!(list["result"]["skills"], json!([]), "{list}");
    let read = mcp.request("resources/read", json!({ "uri": SKILL }));
    assert_eq!(read["error"]["code"], -32002, "{read}");
}

/// A token names a skill by its SKILL.md (or a file by its URI); a skill's
/// root is no resource, and `airlock check` says so with what is served.
#[test]
fn check_takes_a_skills_files_in_a_tokens_resources_and_refuses_its_root() {
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = dir.path().join("airlock.toml");
    let catalog = component("catalog");
    let catalog = catalog.to_str().expect("utf-8");
    let token = |resources: &str| {
        format!(
            "[[tokens]]\nname = \"a\"\nsha256 = \"{}\"\nresources = [{resources}]\n",
            sha256_hex("a-secret")
        )
    };
    let check = |text: &str| {
        std::fs::write(&policy, text).expect("policy");
        support::airlock_command(&["check", policy.to_str().expect("utf-8"), catalog])
            .output()
            .expect("run airlock")
    };

    let out = check(&token(&format!("\"{SKILL}\", \"{ARTICLES}\"")));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let out = check(&token(&format!("\"{ROOT}\"")));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{err}");
    assert!(
        err.contains(&format!(
            "[[tokens]] \"a\" gives the resource \"{ROOT}\", which no component at hand serves \
             (resources and templates: {SKILL}, {ARTICLES}); correct the URI"
        )),
        "{err}"
    );
}
