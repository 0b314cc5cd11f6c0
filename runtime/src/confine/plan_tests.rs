use std::path::Path;

use super::*;

/// A policy read from `text` in `dir`, whose folders `a`, `b` and `c`
/// exist.
fn policy(dir: &Path, text: &str) -> Policy {
    for folder in ["a", "b", "c"] {
        std::fs::create_dir_all(dir.join(folder)).expect("folder");
    }
    Policy::parse(text, dir).expect("policy")
}

fn serving() -> Serving {
    Serving {
        components: vec!["tools/".into()],
        cache: Some("/home/u/.cache/airlock".into()),
        store: "/home/u/.cache/airlock/store".into(),
        lock: Some("/etc/airlock/airlock.lock".into()),
        listen: Some("127.0.0.1:8414".parse().expect("addr")),
        ..Serving::default()
    }
}

fn ports(rules: &[PortRule]) -> Vec<u16> {
    rules.iter().map(|p| p.port).collect()
}

const TWO_COMPONENTS: &str = r#"
[components.reader]
folders = [{ host = "a", guest = "/a" }, { host = "b", guest = "/b", mode = "read-write" }]
network = ["api.example.com:8443"]

[components.writer]
folders = [{ host = "b", guest = "/b" }]
network = ["https://uploads.example.com"]

[components.writer.tools.dump]
folders = [{ host = "c", guest = "/c", mode = "read-write" }]
"#;

#[test]
fn a_folder_gets_the_widest_access_some_grant_gives_and_no_more() {
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = policy(dir.path(), TWO_COMPONENTS);
    let plan = Confinement::plan(&policy, &serving(), &Scope::Server);
    let access = |folder: &str| plan.path(&dir.path().join(folder)).map(|r| r.access);
    assert_eq!(access("a"), Some(Access::Read));
    // Read-write to reader, read-only to writer: read-write.
    assert_eq!(access("b"), Some(Access::ReadWrite));
    // Only a tool section grants it.
    assert_eq!(access("c"), Some(Access::ReadWrite));
    let b = plan.path(&dir.path().join("b")).expect("b");
    assert_eq!(b.needs.len(), 2, "{b:?}");
    // Nothing else of the policy's folder: not the policy, not its secrets.
    assert_eq!(plan.path(dir.path()), None);
}

#[test]
fn ports_are_those_of_the_grants_and_the_listener() {
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = policy(dir.path(), TWO_COMPONENTS);
    let plan = Confinement::plan(&policy, &serving(), &Scope::Server);
    // 8443 and 443 granted, 53 for name lookups over TCP.
    assert_eq!(ports(&plan.connect), vec![53, 443, 8443]);
    assert_eq!(ports(&plan.bind), vec![8414]);
}

#[test]
fn a_scope_of_components_gets_only_their_grants_and_nothing_of_the_front() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = format!("audit = \"audit.jsonl\"\n{TWO_COMPONENTS}");
    let policy = policy(dir.path(), &text);
    let serving = Serving {
        state: Some("redis://127.0.0.1:6380/0".into()),
        certificate_folders: vec!["/etc/tls".into()],
        ..serving()
    };
    let server = Confinement::plan(&policy, &serving, &Scope::Server);
    assert!(server.path(&dir.path().join("audit.jsonl")).is_some());
    assert!(ports(&server.connect).contains(&6380));
    assert!(server.path(Path::new("/etc/tls")).is_some());

    let worker = Confinement::plan(&policy, &serving, &Scope::Components(vec!["reader".into()]));
    assert_eq!(
        worker.path(&dir.path().join("b")).map(|r| r.access),
        Some(Access::ReadWrite)
    );
    assert_eq!(worker.path(&dir.path().join("c")), None, "writer's");
    assert_eq!(worker.path(&dir.path().join("audit.jsonl")), None);
    assert_eq!(worker.path(Path::new("/etc/tls")), None);
    assert_eq!(ports(&worker.connect), vec![53, 8443]);
    assert!(worker.bind.is_empty());
    // What every process needs, a worker too.
    assert!(worker.path(Path::new("/home/u/.cache/airlock")).is_some());
    assert!(worker.path(Path::new("/etc/resolv.conf")).is_some());
}

#[test]
fn a_worker_reaches_the_collectors_and_ca_files_as_the_server_does() {
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = policy(dir.path(), TWO_COMPONENTS);
    let serving = Serving {
        telemetry: vec!["http://127.0.0.1:4318".into()],
        ca_paths: vec!["/etc/ssl/extra.pem".into()],
        ..serving()
    };
    // A worker exports its guests' spans itself (not started inside the
    // server's confinement, it has nothing of the server's to lean on).
    let worker = Confinement::plan(&policy, &serving, &Scope::Components(vec!["reader".into()]));
    assert!(ports(&worker.connect).contains(&4318));
    assert!(worker.path(Path::new("/etc/ssl/extra.pem")).is_some());
    let server = Confinement::plan(&policy, &serving, &Scope::Server);
    assert!(ports(&server.connect).contains(&4318));
}

#[test]
fn without_grants_nothing_is_reached_but_the_servers_own() {
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = policy(dir.path(), "");
    let serving = Serving {
        listen: None,
        ..serving()
    };
    let plan = Confinement::plan(&policy, &serving, &Scope::Server);
    assert!(plan.connect.is_empty(), "{:?}", plan.connect);
    assert!(plan.bind.is_empty());
    let own: Vec<&Path> = plan
        .paths
        .iter()
        .filter(|r| !r.needs.iter().all(|n| matches!(n, Need::System(_))))
        .map(|r| r.path.as_path())
        .collect();
    assert_eq!(
        own,
        vec![Path::new("/home/u/.cache/airlock"), Path::new("tools/")]
    );
    // No store and no lock: nothing is fetched.
    assert!(plan.path(Path::new("/etc/airlock")).is_none());
}

#[test]
fn fetched_components_bring_the_store_the_lock_and_their_registries() {
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = policy(
        dir.path(),
        "[components.export]\nsource = \"oci://127.0.0.1:5000/acme/export:1.0\"\n",
    );
    let serving = Serving {
        components: vec!["https://tools.example.com/t.wasm".into()],
        insecure_registries: vec!["127.0.0.1:5000".into()],
        ..serving()
    };
    let plan = Confinement::plan(&policy, &serving, &Scope::Server);
    assert_eq!(ports(&plan.connect), vec![53, 443, 5000]);
    let store = plan.path(Path::new("/home/u/.cache/airlock/store"));
    assert_eq!(store.map(|r| r.access), Some(Access::ReadWrite));
    let lock = plan.path(Path::new("/etc/airlock"));
    assert_eq!(lock.map(|r| r.access), Some(Access::ReadWrite));
}

#[test]
fn watched_files_are_read_through_their_folder() {
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = policy(dir.path(), "");
    let serving = Serving {
        components: vec!["tools/catalog.wasm".into(), "more".into()],
        watch: true,
        ..serving()
    };
    let plan = Confinement::plan(&policy, &serving, &Scope::Server);
    assert!(plan.path(Path::new("tools")).is_some());
    assert!(plan.path(Path::new("more")).is_some());
    assert!(plan.path(Path::new("tools/catalog.wasm")).is_none());
}

#[test]
fn oauth_issuers_and_system_roots_are_in_the_plan() {
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = policy(
        dir.path(),
        "[defaults]\ntls = \"system\"\nnetwork = [\"api.example.com\"]\n\n\
         [oauth]\nresource = \"http://127.0.0.1:8414/mcp\"\n\
         issuers = [\"http://127.0.0.1:9090\"]\nplain-http = true\n\n\
         [[oauth.scopes]]\nscope = \"all\"\n",
    );
    let plan = Confinement::plan(&policy, &serving(), &Scope::Server);
    assert_eq!(ports(&plan.connect), vec![53, 80, 443, 9090]);
    assert!(plan.path(Path::new("/etc/ssl")).is_some());
}

#[test]
fn the_lines_name_each_path_and_port_and_the_system_files_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = policy(dir.path(), TWO_COMPONENTS);
    let lines = Confinement::plan(&policy, &serving(), &Scope::Server).lines();
    let a = format!(
        "read       {} (granted read-only to reader)",
        dir.path().join("a").display()
    );
    assert!(lines.contains(&a), "{lines:#?}");
    assert!(
        lines.contains(&"bind       TCP 8414 (the listener)".to_string()),
        "{lines:#?}"
    );
    let system = lines.last().expect("a line");
    assert!(system.starts_with("system     /dev/null, "), "{system}");
    assert!(system.contains("/etc/resolv.conf"), "{system}");
    assert_eq!(
        lines.iter().filter(|l| l.contains("resolv.conf")).count(),
        1
    );
}
