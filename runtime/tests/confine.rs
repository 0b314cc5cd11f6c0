//! The serving process confines itself (Linux): what a tool that escaped
//! the WebAssembly sandbox would try first — read a file no grant names,
//! write a folder granted read-only, connect to a port no grant names, run
//! a program — is refused by the kernel, tried by the confined process
//! itself (`serve --confine-probe`: the serving confinement, same code
//! path, then the attempts); and a running server shows its seccomp filter
//! and `no_new_privs` in `/proc/PID/status`, on every thread.

use std::net::TcpListener;
use std::path::Path;

use crate::support::http::{http, serve};
use crate::support::{airlock_command, component};

/// A user's home with a secret, a policy folder with a secrets file beside
/// the policy, and a folder the policy grants read-only.
struct Scene {
    dir: tempfile::TempDir,
}

impl Scene {
    fn new() -> Scene {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        for folder in ["home/.ssh", "etc", "data"] {
            std::fs::create_dir_all(root.join(folder)).expect("folder");
        }
        std::fs::write(root.join("home/.ssh/id_ed25519"), "PRIVATE KEY").expect("key");
        std::fs::write(root.join("etc/secrets.env"), "CATALOG_TOKEN=s3cret-value").expect("env");
        std::fs::write(root.join("data/prices.csv"), "SKU-1001,12.5").expect("data");
        let data = root.join("data");
        std::fs::write(
            root.join("etc/airlock.toml"),
            format!(
                "[components.catalog]\nfolders = [{{ host = {data:?}, guest = \"/data\" }}]\n\
                 network = [\"api.example.com\"]\n"
            ),
        )
        .expect("policy");
        Scene { dir }
    }

    fn path(&self, rel: &str) -> String {
        self.dir.path().join(rel).display().to_string()
    }

    /// `airlock serve … --confine-probe PROBE…` with HOME in the scene;
    /// its stdout lines, one a probe.
    fn probe(&self, extra: &[&str], probes: &[String]) -> Vec<String> {
        let policy = self.path("etc/airlock.toml");
        let catalog = component("catalog").display().to_string();
        let mut args = vec!["serve", "--policy", &policy, "--listen", "127.0.0.1:0"];
        args.extend(extra);
        let probe_args: Vec<String> = probes
            .iter()
            .flat_map(|p| ["--confine-probe".to_string(), p.clone()])
            .collect();
        args.extend(probe_args.iter().map(String::as_str));
        args.push(&catalog);
        let out = airlock_command(&args)
            .env("HOME", self.path("home"))
            .output()
            .expect("airlock");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        let lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect();
        assert_eq!(lines.len(), probes.len(), "{lines:?}\n{stderr}");
        lines
    }
}

/// A loopback port something listens on that no grant names.
fn listening_port() -> (TcpListener, u16) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("listen");
    let port = listener.local_addr().expect("addr").port();
    (listener, port)
}

fn program() -> &'static str {
    ["/bin/true", "/usr/bin/true"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .expect("a `true` program")
}

#[test]
fn what_an_escaped_tool_tries_first_is_refused_by_the_kernel() {
    let scene = Scene::new();
    let (_listener, port) = listening_port();
    let probes = vec![
        format!("read:{}", scene.path("home/.ssh/id_ed25519")),
        format!("read:{}", scene.path("etc/secrets.env")),
        format!("read:{}", scene.path("etc/airlock.toml")),
        format!("read:{}", scene.path("data/prices.csv")),
        format!("write:{}", scene.path("data")),
        format!("connect:127.0.0.1:{port}"),
        format!("exec:{}", program()),
    ];
    // Unconfined, every one of them works: the probes can tell.
    let free = scene.probe(&["--no-confine"], &probes);
    for line in &free {
        assert!(line.ends_with(": allowed"), "{free:#?}");
    }

    let confined = scene.probe(&[], &probes);
    let denied = "refused: Permission denied (os error 13)";
    let expected = [
        format!("read {}: {denied}", scene.path("home/.ssh/id_ed25519")),
        format!("read {}: {denied}", scene.path("etc/secrets.env")),
        // The policy is read before; serving never needs it again.
        format!("read {}: {denied}", scene.path("etc/airlock.toml")),
        // Granted (read-only): readable, not writable.
        format!("read {}: allowed", scene.path("data/prices.csv")),
        format!("write {}: {denied}", scene.path("data")),
        // Landlock's TCP rule: only the grant's 80 and 443 (and DNS).
        format!("connect 127.0.0.1:{port}: {denied}"),
        // seccomp: no execve.
        format!(
            "exec {}: refused: Operation not permitted (os error 1)",
            program()
        ),
    ];
    assert_eq!(confined, expected);
}

#[test]
fn a_serving_process_runs_under_seccomp_and_no_new_privs_on_every_thread() {
    let mut served = serve("", &[component("catalog")], &[]);
    // A call runs (its lane thread started after the confinement).
    let reply = http(
        served.addr,
        "POST",
        "/rpc",
        &[("content-type", "application/json")],
        br#"{"jsonrpc":"2.0","id":1,"method":"lookup_price","params":["SKU-1001"]}"#,
    );
    assert!(reply.body.contains("12.5"), "{}", reply.body);
    served.assert_alive();
    let pid = served.child.id();
    let tasks: Vec<_> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .expect("/proc/PID/task")
        .map(|t| t.expect("task").path())
        .collect();
    assert!(tasks.len() > 1, "{tasks:?}");
    for task in tasks {
        let status = std::fs::read_to_string(task.join("status")).expect("status");
        assert!(status.contains("\nSeccomp:\t2\n"), "{task:?}: {status}");
        assert!(status.contains("\nNoNewPrivs:\t1\n"), "{task:?}: {status}");
    }
}

#[test]
fn the_start_says_what_the_server_is_confined_to_and_no_confine_warns() {
    let scene = Scene::new();
    let out = airlock_command(&[
        "serve",
        "--policy",
        &scene.path("etc/airlock.toml"),
        "--confine-probe",
        "read:/",
        &component("catalog").display().to_string(),
    ])
    .output()
    .expect("airlock");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("airlock: confined (Landlock ABI "),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "  read       {} (granted read-only to catalog)",
            scene.path("data")
        )),
        "{stderr}"
    );
    assert!(stderr.contains("  connect    TCP 53 (name lookups over TCP), 80 (granted to catalog: api.example.com), 443 (granted to catalog: api.example.com)"), "{stderr}");
    assert!(
        stderr.contains("  bind       TCP 8414 (the listener)"),
        "{stderr}"
    );

    let out = airlock_command(&[
        "serve",
        "--no-confine",
        "--policy",
        &scene.path("etc/airlock.toml"),
        "--confine-probe",
        "read:/",
        &component("catalog").display().to_string(),
    ])
    .output()
    .expect("airlock");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("warning: --no-confine: this server runs unconfined"),
        "{stderr}"
    );
    assert!(!stderr.contains("airlock: confined"), "{stderr}");
}

#[test]
fn check_and_inspect_show_the_confinement_before_anything_runs() {
    let scene = Scene::new();
    let policy = scene.path("etc/airlock.toml");
    let catalog = component("catalog").display().to_string();
    let granted = format!(
        "    read       {} (granted read-only to catalog)",
        scene.path("data")
    );
    let out = airlock_command(&["check", &policy, &catalog])
        .output()
        .expect("airlock");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains(
            "\n  confined when served (Landlock and seccomp; serve --no-confine turns it off):\n"
        ),
        "{stdout}"
    );
    assert!(stdout.contains(&format!("\n{granted}\n")), "{stdout}");
    assert!(
        stdout.contains("\n    bind       TCP 8414 (the listener)\n"),
        "{stdout}"
    );

    let out = airlock_command(&["inspect", "--policy", &policy, &catalog])
        .output()
        .expect("airlock");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("\nconfined when served (Landlock and seccomp; "),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("\n  {}\n", granted.trim_start())),
        "{stdout}"
    );
}
