//! `airlock publish --server-name`: what listing a component in the
//! official MCP Registry needs, against a real OCI registry (Debian's
//! `docker-registry` on loopback): the ownership mark
//! `io.modelcontextprotocol.server.name` on the pushed manifest and in its
//! config's labels (read back by the ORAS SDK and from the registry's own
//! blob), a `server.json` beside the component that validates against the
//! registry's pinned schema and whose command, run as a client would, serves
//! the published tools over stdio; and refusals that push nothing.
//! Publishing to the MCP Registry itself needs the internet: not tested.

use crate::support;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;
use support::registry::{Registry, oras_tool};
use support::{component, workspace};

const NAME: &str = "io.github.acme/catalog";

/// `airlock ARGS` in `dir`, with its own store and no credentials.
fn airlock(dir: &Path, args: &[&str]) -> Output {
    command(dir, args).output().expect("run airlock")
}

fn command(dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_airlock"));
    command
        .args(args)
        .current_dir(dir)
        .env("AIRLOCK_CACHE_DIR", workspace().join("target/test-cache"))
        .env("AIRLOCK_STORE_DIR", dir.join("store"))
        .env("DOCKER_CONFIG", dir.join("docker"))
        .env_remove("AIRLOCK_REGISTRY_AUTH");
    command
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The catalog component copied into `dir` (server.json goes beside it).
fn catalog_in(dir: &Path) -> PathBuf {
    let file = dir.join("catalog.wasm");
    std::fs::copy(component("catalog"), &file).expect("copy catalog.wasm");
    file
}

/// The value after `name` on a line of `airlock publish` output.
fn field(out: &str, name: &str) -> String {
    out.lines()
        .find_map(|l| l.trim_start().strip_prefix(name))
        .map(|rest| rest.trim().split(' ').next().unwrap_or("").to_string())
        .unwrap_or_else(|| panic!("no {name} in:\n{out}"))
}

/// Every error of `doc` against the pinned schema, compiled here from the
/// file (not through the code under test).
fn schema_errors(doc: &Value) -> Vec<String> {
    let path = workspace().join("runtime/src/cli/publish/server.schema.json");
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("the pinned schema"))
            .expect("schema JSON");
    let validator = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft7)
        .should_validate_formats(true)
        .build(&schema)
        .expect("the schema compiles");
    validator
        .iter_errors(doc)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

/// Runs `airlock ARGS` as an MCP client would from server.json: over
/// stdio, initialize then tools/list; the names listed.
fn tools_over_stdio(dir: &Path, args: &[&str]) -> Vec<String> {
    let mut child = command(dir, args)
        .args(["--load-wait", "600"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start airlock");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin
        .write_all(
            concat!(
                r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
                "\n",
                r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
                "\n",
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
                "\n"
            )
            .as_bytes(),
        )
        .expect("write");
    drop(stdin);
    let stdout = child.stdout.take().expect("stdout");
    let mut names = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let message: Value = serde_json::from_str(&line.expect("line")).expect("JSON");
        if message["id"] == 1 {
            for tool in message["result"]["tools"].as_array().expect("tools") {
                names.push(tool["name"].as_str().unwrap_or_default().to_string());
            }
        }
    }
    assert!(child.wait().expect("wait").success());
    names
}

#[test]
fn a_listing_carries_the_ownership_mark_and_a_server_json_a_client_can_run() {
    let registry = Registry::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let file = catalog_in(dir.path());
    let reference = registry.reference("acme/catalog:1.2.0");
    let out = airlock(
        dir.path(),
        &[
            "publish",
            &file.display().to_string(),
            &reference,
            "--server-name",
            NAME,
            "--annotation",
            "org.opencontainers.image.source=https://github.com/acme/tools",
        ],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}{stderr}");
    // A loopback registry is not one the MCP Registry reads: said, not refused.
    assert!(
        stderr.contains("warning: the MCP Registry takes oci packages only over HTTPS from"),
        "{stderr}"
    );
    let digest = field(&stdout, "digest");
    let pinned = field(&stdout, "pinned");
    assert!(
        stdout.contains(&format!("  listing    {NAME} (")),
        "{stdout}"
    );
    let written = dir.path().join("server.json");
    assert_eq!(field(&stdout, "server.json"), written.display().to_string());
    assert!(
        stdout.contains("mcp-publisher login github, then `mcp-publisher publish`"),
        "{stdout}"
    );

    // The ownership mark, on the manifest (read by another client) and in
    // the config's labels, where the MCP Registry's check reads it.
    let manifest: Value = serde_json::from_str(&oras_tool(&[
        "manifest",
        &registry.addr,
        "acme/catalog:1.2.0",
    ]))
    .expect("manifest JSON");
    assert_eq!(
        manifest["annotations"]["io.modelcontextprotocol.server.name"],
        NAME
    );
    let config_digest = manifest["config"]["digest"]
        .as_str()
        .expect("config digest");
    let config: Value = serde_json::from_slice(
        &std::fs::read(registry.blob_file(config_digest)).expect("the config blob"),
    )
    .expect("config JSON");
    assert_eq!(
        config["config"]["Labels"]["io.modelcontextprotocol.server.name"],
        NAME
    );
    assert_eq!(config["architecture"], "wasm");

    // server.json: valid against the pinned schema, and saying what was
    // published and how a client runs it.
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&written).expect("server.json"))
        .expect("server.json is JSON");
    assert_eq!(schema_errors(&doc), Vec::<String>::new());
    assert_eq!(
        doc["$schema"],
        "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
    );
    assert_eq!(doc["name"], NAME);
    assert_eq!(doc["version"], "1.2.0");
    assert_eq!(doc["title"], "catalog");
    assert_eq!(doc["description"], "airlock tools: lookup_price, restock");
    assert_eq!(doc["repository"]["url"], "https://github.com/acme/tools");
    assert_eq!(doc["repository"]["source"], "github");
    let packages = doc["packages"].as_array().expect("packages");
    assert_eq!(packages.len(), 1);
    let package = &packages[0];
    assert_eq!(package["registryType"], "oci");
    assert_eq!(
        package["identifier"],
        format!("{}/acme/catalog:1.2.0", registry.addr)
    );
    assert!(
        package.get("version").is_none(),
        "the registry refuses an oci package's version"
    );
    assert_eq!(package["transport"], serde_json::json!({ "type": "stdio" }));
    assert_eq!(package["runtimeHint"], "airlock");
    let arguments = package["runtimeArguments"].as_array().expect("arguments");
    let values: Vec<&str> = arguments
        .iter()
        .filter_map(|a| a["value"].as_str())
        .collect();
    assert_eq!(values, ["serve", "--stdio", pinned.as_str()]);
    assert!(pinned.ends_with(&digest), "{pinned}");
    let policy = arguments
        .iter()
        .find(|a| a["name"] == "--policy")
        .expect("the optional --policy argument");
    assert_eq!(policy["isRequired"], false);
    assert_eq!(policy["format"], "filepath");

    // What a client runs from it serves the published tools.
    assert_eq!(
        tools_over_stdio(dir.path(), &values),
        ["lookup_price", "restock"]
    );
}

#[test]
fn a_listing_the_mcp_registry_would_refuse_pushes_nothing() {
    let registry = Registry::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let file = catalog_in(dir.path()).display().to_string();
    let refused = |reference: &str, extra: &[&str]| {
        let mut args = vec!["publish", &file, reference];
        args.extend_from_slice(extra);
        let out = airlock(dir.path(), &args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stdout)
        );
        text(&out.stderr)
    };
    let tagged = registry.reference("acme/catalog:1.2.0");
    let err = refused(&tagged, &["--server-name", "acme/catalog"]);
    assert!(err.contains("is not reverse-DNS"), "{err}");
    assert!(err.contains("io.github.USER/catalog"), "{err}");

    let latest = registry.reference("acme/catalog:latest");
    let err = refused(&latest, &["--server-name", NAME]);
    assert!(
        err.contains("the tag `latest` is not a semantic version"),
        "{err}"
    );
    assert!(err.contains("pass --server-version 1.2.0"), "{err}");

    let err = refused(&tagged, &["--server-name", NAME, "--server-version", "1.2"]);
    assert!(
        err.contains("--server-version 1.2: not a semantic version"),
        "{err}"
    );

    let long = "x".repeat(101);
    let err = refused(
        &tagged,
        &["--server-name", NAME, "--server-description", &long],
    );
    assert!(err.contains("has 101 characters"), "{err}");

    let err = refused(
        &tagged,
        &[
            "--server-name",
            NAME,
            "--annotation",
            "io.modelcontextprotocol.server.name=io.github.other/catalog",
        ],
    );
    assert!(err.contains("names another server"), "{err}");

    // The flags need the name they describe.
    let err = refused(&tagged, &["--server-version", "1.2.0"]);
    assert!(err.contains("--server-name"), "{err}");

    // Nothing was pushed, and no server.json written.
    let inspect = airlock(dir.path(), &["inspect", &tagged]);
    assert!(!inspect.status.success(), "{}", text(&inspect.stdout));
    assert!(!dir.path().join("server.json").exists());
}

#[test]
fn server_version_and_description_override_the_tag_and_the_manifest() {
    let registry = Registry::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let file = catalog_in(dir.path()).display().to_string();
    let elsewhere = dir.path().join("listing/server.json");
    std::fs::create_dir_all(elsewhere.parent().expect("folder")).expect("folder");
    let reference = registry.reference("acme/catalog:v2");
    let out = airlock(
        dir.path(),
        &[
            "publish",
            &file,
            &reference,
            "--server-name",
            "com.example/catalog",
            "--server-version",
            "2.0.0-rc.1",
            "--server-description",
            "Prices and stock of the catalog",
            "--server-json",
            &elsewhere.display().to_string(),
        ],
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("mcp-publisher login dns --domain example.com"),
        "{stdout}"
    );
    assert!(!dir.path().join("server.json").exists());
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(&elsewhere).expect("server.json"))
            .expect("JSON");
    assert_eq!(schema_errors(&doc), Vec::<String>::new());
    assert_eq!(doc["name"], "com.example/catalog");
    assert_eq!(doc["version"], "2.0.0-rc.1");
    assert_eq!(doc["description"], "Prices and stock of the catalog");
    assert_eq!(
        doc["packages"][0]["identifier"],
        format!("{}/acme/catalog:v2", registry.addr)
    );
    assert!(doc.get("repository").is_none(), "{doc}");
}
