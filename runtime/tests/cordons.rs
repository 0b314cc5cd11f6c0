//! Cordons: components of different trust run in different worker
//! processes. What one cordon's guest holds in memory is in its worker and
//! nowhere else; a worker killed under load fails only its own calls in
//! flight, is started again and serves; a worker cannot read a folder only
//! another cordon is granted; and what crosses the boundary — asks and
//! their answers, reads and prompts — works as in one process.

use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::http::{Mcp, Reply, http, serve, serve_with_env};
use crate::support::{airlock_command, component, test_component};

/// What the planting guest writes at the start of every 4 KiB page.
const MARKER: &[u8; 16] = b"cordon-marker-A!";
/// Pages of 4 KiB it plants: 1 MiB.
const PLANTED_PAGES: usize = 256;

/// A component of plain functions: `{prefix}plant` grows memory by 1 MiB,
/// writes [`MARKER`] at the start of each 4 KiB page of it and spins until
/// its time limit stops it; `{prefix}ping` answers `version`.
fn planting(prefix: &str, version: u32) -> Vec<u8> {
    let lo = i64::from_le_bytes(MARKER[..8].try_into().expect("8 bytes"));
    let hi = i64::from_le_bytes(MARKER[8..].try_into().expect("8 bytes"));
    wat::parse_str(format!(
        r#"(component
  (core module $m
    (memory 1)
    (func (export "plant")
      (local $p i32) (local $end i32)
      (local.set $p (i32.mul (memory.grow (i32.const 16)) (i32.const 65536)))
      (local.set $end (i32.add (local.get $p) (i32.const 0x100000)))
      (loop $pages
        (i64.store (local.get $p) (i64.const {lo}))
        (i64.store offset=8 (local.get $p) (i64.const {hi}))
        (local.set $p (i32.add (local.get $p) (i32.const 4096)))
        (br_if $pages (i32.lt_u (local.get $p) (local.get $end))))
      (loop $forever (br $forever)))
    (func (export "ping") (result i32) (i32.const {version})))
  (core instance $i (instantiate $m))
  (func (export "{prefix}plant") (canon lift (core func $i "plant")))
  (func (export "{prefix}ping") (result u32) (canon lift (core func $i "ping"))))"#
    ))
    .expect("the planting component assembles")
}

/// `/rpc` call of `method` with `params`.
fn rpc(addr: std::net::SocketAddr, method: &str, params: Value) -> Reply {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    http(
        addr,
        "POST",
        "/rpc",
        &[("content-type", "application/json")],
        body.to_string().as_bytes(),
    )
}

/// The process id of cordon `name`'s worker: a child of `server`'s
/// launcher (itself a child of `server`), never of `server` itself.
pub(crate) fn worker_of(server: u32, name: &str) -> Option<u32> {
    let wanted = format!("--cordon-worker\0{name}\0");
    std::fs::read_dir("/proc").ok()?.find_map(|entry| {
        let pid: u32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        if !String::from_utf8_lossy(&cmdline).contains(&wanted) {
            return None;
        }
        let launcher = parent_of(pid)?;
        assert_ne!(
            launcher, server,
            "a worker is started by the launcher, not the server"
        );
        (parent_of(launcher)? == server).then_some(pid)
    })
}

/// The parent of process `pid`.
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid …`; comm may hold spaces, not `)`.
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Waits (bounded) until cordon `name`'s worker runs, and answers its pid.
fn wait_for_worker(server: u32, name: &str, not: Option<u32>) -> u32 {
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(pid) = worker_of(server, name).filter(|pid| Some(*pid) != not) {
            return pid;
        }
        assert!(Instant::now() < until, "no worker of cordon {name} runs");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// How many 4 KiB pages of process `pid`'s private writable memory start
/// with [`MARKER`] (read through `/proc/PID/mem`, as root may).
fn marked_pages(pid: u32) -> usize {
    let mut maps = String::new();
    let opened = std::fs::File::open(format!("/proc/{pid}/maps"))
        .and_then(|mut f| f.read_to_string(&mut maps));
    if opened.is_err() {
        return 0;
    }
    let Ok(mem) = std::fs::File::open(format!("/proc/{pid}/mem")) else {
        return 0;
    };
    let mut found = 0;
    let mut chunk = vec![0u8; 1 << 20];
    for line in maps.lines() {
        let mut fields = line.split_whitespace();
        let (Some(range), Some(perms)) = (fields.next(), fields.next()) else {
            continue;
        };
        if !perms.starts_with("rw") || !perms.ends_with('p') || line.ends_with("[vsyscall]") {
            continue;
        }
        let Some((start, end)) = range.split_once('-') else {
            continue;
        };
        let (Ok(start), Ok(end)) = (u64::from_str_radix(start, 16), u64::from_str_radix(end, 16))
        else {
            continue;
        };
        let mut at = start;
        while at < end {
            let len = ((end - at) as usize).min(chunk.len());
            if mem.read_exact_at(&mut chunk[..len], at).is_ok() {
                found += chunk[..len]
                    .chunks(4096)
                    .filter(|page| page.starts_with(MARKER))
                    .count();
            }
            at += len as u64;
        }
    }
    found
}

fn write_components(dir: &Path) -> Vec<PathBuf> {
    ["a", "b"]
        .iter()
        .map(|name| {
            let path = dir.join(format!("{name}.wasm"));
            std::fs::write(&path, planting(&format!("{name}-"), 1)).expect("component");
            path
        })
        .collect()
}

#[test]
fn a_marker_one_cordon_plants_is_in_its_worker_and_in_no_other_process() {
    let dir = tempfile::tempdir().expect("tempdir");
    let files = write_components(dir.path());
    let policy = "[components.a]\ncordon = \"vendor-a\"\nlimits = { time = \"6s\" }\n\
                  [components.b]\ncordon = \"vendor-b\"\n";
    let served = serve(policy, &files, &[]);
    let server = served.child.id();
    let (a, b) = (
        wait_for_worker(server, "vendor-a", None),
        wait_for_worker(server, "vendor-b", None),
    );
    assert_ne!(a, b, "one process a cordon");
    // Each worker holds a confinement of its own, as the server does (a
    // worker inside the server's could not add its own Landlock layer).
    let landlock = |line: &str| {
        line.split_once('(')
            .and_then(|(_, r)| r.split(',').next())
            .map(str::to_string)
    };
    let front = served
        .start_log
        .iter()
        .find(|l| l.starts_with("airlock: confined ("));
    let front = front
        .and_then(|l| landlock(l))
        .expect("the server says how it is confined");
    for (cordon, pid) in [("vendor-a", a), ("vendor-b", b)] {
        let said = format!("airlock: cordon {cordon}: worker {pid} confined (");
        let line = served.start_log.iter().find(|l| l.starts_with(&said));
        let line = line.unwrap_or_else(|| panic!("no line {said:?}: {:#?}", served.start_log));
        assert_eq!(landlock(line).as_deref(), Some(front.as_str()), "{line}");
    }
    let addr = served.addr;
    let planting = std::thread::spawn(move || rpc(addr, "a-plant", json!({})));
    let until = Instant::now() + Duration::from_secs(30);
    let planted = loop {
        let planted = marked_pages(a);
        if planted >= PLANTED_PAGES || Instant::now() > until || planting.is_finished() {
            break planted;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        planted >= PLANTED_PAGES,
        "cordon vendor-a's worker holds {planted} marked pages while its guest runs ({})",
        match planting.is_finished() {
            true => planting.join().map(|r| r.body).unwrap_or_default(),
            false => "still running".into(),
        }
    );
    // While the marker is in A's memory: not in B's worker, not in the
    // server's process.
    assert_eq!(marked_pages(b), 0, "cordon vendor-b's worker");
    assert_eq!(marked_pages(server), 0, "the serving process");
    let launcher = parent_of(a).expect("the launcher");
    assert_eq!(marked_pages(launcher), 0, "the launcher");
    let stopped = planting.join().expect("the planting call");
    assert!(stopped.body.contains("timeout"), "{}", stopped.body);
    // B serves on, in its own pool.
    let pinged = rpc(addr, "b-ping", json!({}));
    assert!(pinged.body.contains(r#""result":1"#), "{}", pinged.body);
}

#[test]
fn a_killed_worker_fails_only_its_own_calls_in_flight_and_is_started_again() {
    let policy = "[components.bench]\ncordon = \"one\"\nlimits = { time = \"20s\" }\n\
                  [components.catalog]\ncordon = \"two\"\n";
    let served = serve(
        policy,
        &[test_component("bench"), component("catalog")],
        &["--max-calls", "64"],
    );
    let (server, addr) = (served.child.id(), served.addr);
    let one = wait_for_worker(server, "one", None);
    let stop = Arc::new(AtomicBool::new(false));
    // Cordon two under load all along.
    let load: Vec<_> = (0..4)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut answers = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let reply = rpc(addr, "lookup_price", json!(["SKU-1001"]));
                    answers.push(reply.body);
                }
                answers
            })
        })
        .collect();
    // Cordon one's calls in flight when its worker is killed.
    let in_flight: Vec<_> = (0..2)
        .map(|_| std::thread::spawn(move || rpc(addr, "sleep", json!({"ms": 10000}))))
        .collect();
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: a plain kill(2) of the worker this test found.
    let killed = unsafe { libc::kill(one as i32, libc::SIGKILL) };
    assert_eq!(killed, 0, "kill {one}");
    for call in in_flight {
        let reply = call.join().expect("a call of cordon one");
        assert!(
            reply
                .body
                .contains(r#"worker process of cordon \"one\" died during the call"#),
            "{}",
            reply.body
        );
    }
    let again = wait_for_worker(server, "one", Some(one));
    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, Ordering::Relaxed);
    let answers: Vec<String> = load
        .into_iter()
        .flat_map(|t| t.join().expect("a load thread"))
        .collect();
    assert!(answers.len() >= 8, "{} calls of cordon two", answers.len());
    let lost: Vec<&String> = answers.iter().filter(|a| !a.contains("12.5")).collect();
    assert!(lost.is_empty(), "cordon two lost calls: {lost:?}");
    // Cordon one serves again, from a new worker.
    let added = rpc(addr, "add", json!({"a": 2, "b": 3}));
    assert!(added.body.contains(r#""result":5"#), "{}", added.body);
    assert_ne!(again, one);
    let metrics = http(addr, "GET", "/metrics", &[], b"").body;
    assert!(
        metrics.contains(r#"airlock_cordon_worker_deaths_total{cordon="one"} 1"#),
        "{metrics}"
    );
}

#[test]
fn a_worker_cannot_read_a_folder_granted_only_to_another_cordon() {
    let dir = tempfile::tempdir().expect("tempdir");
    let files = write_components(dir.path());
    for (folder, text) in [("mine", "A's data"), ("theirs", "B's data")] {
        std::fs::create_dir(dir.path().join(folder)).expect("folder");
        std::fs::write(dir.path().join(folder).join("data.txt"), text).expect("data");
    }
    let (mine, theirs) = (dir.path().join("mine"), dir.path().join("theirs"));
    let policy_path = dir.path().join("airlock.toml");
    std::fs::write(
        &policy_path,
        format!(
            "[components.a]\ncordon = \"vendor-a\"\n\
             folders = [{{ host = {mine:?}, guest = \"/data\" }}]\n\
             [components.b]\ncordon = \"vendor-b\"\n\
             folders = [{{ host = {theirs:?}, guest = \"/data\" }}]\n"
        ),
    )
    .expect("policy");
    let probes = [
        format!("read:{}", mine.join("data.txt").display()),
        format!("read:{}", theirs.join("data.txt").display()),
        format!("write:{}", mine.display()),
        // Its own binary: the server with cordons starts none itself (its
        // launcher does), so it may not execute even that.
        format!("exec:{}", env!("CARGO_BIN_EXE_airlock")),
    ];
    let attempts = |extra: &[&str]| -> Vec<String> {
        let policy = policy_path.display().to_string();
        let mut args = vec!["serve", "--policy", &policy, "--listen", "127.0.0.1:0"];
        args.extend(extra);
        for probe in &probes {
            args.extend(["--confine-probe", probe]);
        }
        let paths: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
        args.extend(paths.iter().map(String::as_str));
        let out = airlock_command(&args).output().expect("airlock");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect()
    };
    // The worker of cordon vendor-a, confined as it serves.
    let worker = attempts(&["--cordon-worker", "vendor-a"]);
    assert!(worker[0].ends_with(": allowed"), "{worker:?}");
    assert!(worker[1].contains(": refused: "), "{worker:?}");
    assert!(worker[2].contains(": refused: "), "read-only: {worker:?}");
    assert!(worker[3].contains(": refused: "), "{worker:?}");
    // The serving process holds every grant (it checks them), so it may;
    // it runs no program.
    let front = attempts(&[]);
    assert!(front[1].ends_with(": allowed"), "{front:?}");
    assert!(front[3].contains(": refused: "), "{front:?}");
}

/// The conformance component in a cordon: its guest's question reaches
/// the client across the worker's boundary, the client's answer goes back,
/// and the call answers with it; its reads and prompts cross too.
#[test]
fn asks_reads_and_prompts_cross_a_cordon() {
    let policy = "[components.conformance]\ncordon = \"tests\"\n\
                  [components.conformance.tools.test_elicitation]\nask = [\"elicit\"]\n";
    let served = serve(policy, &[test_component("conformance")], &[]);
    assert!(worker_of(served.child.id(), "tests").is_some());
    let caps = json!({"elicitation": {}});
    let mcp = Mcp::connect(served.addr, caps, &[]);
    let body = json!({"jsonrpc": "2.0", "id": "asks", "method": "tools/call",
        "params": {"name": "test_elicitation", "arguments": {"message": "Who?"}}});
    let asked = |m: &Value| m.get("method").is_some() && m.get("id").is_some();
    let reply = json!({"action": "accept", "content": {"username": "ada", "email": "a@b.c"}});
    let (request, response) = mcp.call_answering(&body, Duration::from_secs(60), asked, reply);
    assert_eq!(request["method"], "elicitation/create", "{request}");
    assert_eq!(request["params"]["message"], "Who?", "{request}");
    assert_eq!(
        response["result"]["content"][0]["text"],
        r#"User response: action=accept, content={"username":"ada","email":"a@b.c"}"#,
        "{response}"
    );
    let mut mcp = mcp;
    let read = mcp.request("resources/read", json!({"uri": "test://static-text"}));
    assert!(read["result"]["contents"][0]["text"].is_string(), "{read}");
    let prompt = mcp.request("prompts/get", json!({"name": "test_simple_prompt"}));
    assert!(
        prompt["result"]["messages"][0]["content"]["text"].is_string(),
        "{prompt}"
    );
}

/// A cordoned component replaced on disk while served (`--watch`): the
/// server sends the new version to the worker, and calls run it.
#[test]
fn a_cordoned_component_replaced_while_served_runs_its_new_version() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tools = dir.path().join("tools");
    std::fs::create_dir(&tools).expect("folder");
    let file = tools.join("a.wasm");
    std::fs::write(&file, planting("a-", 1)).expect("component");
    let policy = "[components.a]\ncordon = \"vendor-a\"\n[components.b]\ncordon = \"vendor-b\"\n";
    let served = serve(policy, std::slice::from_ref(&tools), &["--watch"]);
    let pinged = rpc(served.addr, "a-ping", json!({}));
    assert!(pinged.body.contains(r#""result":1"#), "{}", pinged.body);
    let worker = worker_of(served.child.id(), "vendor-a");
    std::fs::write(&file, planting("a-", 2)).expect("new version");
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        let pinged = rpc(served.addr, "a-ping", json!({}));
        if pinged.body.contains(r#""result":2"#) {
            break;
        }
        assert!(
            pinged.body.contains(r#""result":1"#),
            "while the new version loads the old one answers: {}",
            pinged.body
        );
        assert!(Instant::now() < until, "the new version never ran");
        std::thread::sleep(Duration::from_millis(200));
    }
    // The same worker, given the new version.
    assert_eq!(worker_of(served.child.id(), "vendor-a"), worker);
    // A component that arrives later in a cordon the server did not start
    // is refused, not run in the serving process.
    std::fs::write(tools.join("b.wasm"), planting("b-", 1)).expect("a newcomer");
    let refused = served.said("b.wasm", Duration::from_secs(60));
    let refused = refused.expect("the newcomer is said to be refused");
    assert!(refused.contains("cordon \"vendor-b\""), "{refused}");
    assert!(refused.contains("restart `airlock serve`"), "{refused}");
    let pinged = rpc(served.addr, "b-ping", json!({}));
    assert!(!pinged.body.contains(r#""result""#), "{}", pinged.body);
}

/// With lanes off (`AIRLOCK_LANES=0`, a runtime setting every worker is
/// passed), a worker has no async runtime whose blocking pool would take
/// its calls and its reading: they get threads of their own.
#[test]
fn a_worker_serves_with_lanes_off() {
    let served = serve_with_env(
        "[components.bench]\ncordon = \"one\"\n",
        &[test_component("bench")],
        &[],
        &[("AIRLOCK_LANES", "0")],
    );
    wait_for_worker(served.child.id(), "one", None);
    for _ in 0..3 {
        let added = rpc(served.addr, "add", json!({"a": 2, "b": 3}));
        assert!(added.body.contains(r#""result":5"#), "{}", added.body);
    }
}
