//! Replicas behind a load balancer, sharing state in Redis (`--only
//! replicas`): `/rpc add` at c=16 through HAProxy (configured by
//! `docs/deploy/haproxy.cfg`) to one replica and to three, and what a
//! `tasks/get` costs answered from a replica's own memory and from Redis
//! (the task running on another replica). Costs are CPU per request over
//! every process that served it: the replicas, HAProxy, Redis.

use std::net::TcpStream as StdStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::Paths;
use crate::net::{self, Load};

const REDIS: &str = "/usr/bin/redis-server";
const HAPROXY: &str = "/usr/sbin/haproxy";
const ADD: &str = r#"{"jsonrpc":"2.0","id":1,"method":"add","params":{"a":40,"b":2}}"#;
const MODERN: &str = "2026-07-28";

/// A helper process (Redis, HAProxy), killed on drop.
struct Helper(Child);

impl Drop for Helper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

fn wait_for_port(port: u16, what: &str) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(15);
    while StdStream::connect(("127.0.0.1", port)).is_err() {
        if Instant::now() > deadline {
            bail!("{what} did not listen on {port}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

fn redis() -> Result<(Helper, String)> {
    let port = free_port()?;
    let child = Command::new(REDIS)
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .stdout(Stdio::null())
        .spawn()
        .with_context(|| format!("cannot start {REDIS} (apt-get install redis-server)"))?;
    let helper = Helper(child);
    wait_for_port(port, "redis-server")?;
    Ok((helper, format!("redis://127.0.0.1:{port}/0")))
}

/// HAProxy with the documented configuration, its `bind` and `server`
/// lines pointed at `backends`; its address.
fn balancer(root: &Path, dir: &Path, backends: &[&str]) -> Result<(Helper, String)> {
    let port = free_port()?;
    let documented = std::fs::read_to_string(root.join("docs/deploy/haproxy.cfg"))?;
    let mut config = String::new();
    for line in documented.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.first() {
            Some(&"bind") => config.push_str(&format!("    bind 127.0.0.1:{port}\n")),
            Some(&"server") if words.get(1) == Some(&"r1") => {
                for (n, addr) in backends.iter().enumerate() {
                    config.push_str(&format!(
                        "    server r{n} {addr} {}\n",
                        words[3..].join(" ")
                    ));
                }
            }
            Some(&"server") => {}
            _ => config.push_str(&format!("{line}\n")),
        }
    }
    let file = dir.join("haproxy.cfg");
    std::fs::write(&file, config)?;
    let child = Command::new(HAPROXY)
        .arg("-db")
        .arg("-f")
        .arg(&file)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("cannot start {HAPROXY} (apt-get install haproxy)"))?;
    let helper = Helper(child);
    wait_for_port(port, "haproxy")?;
    // Health checks every 300 ms, two to rise.
    std::thread::sleep(Duration::from_millis(1000));
    Ok((helper, format!("127.0.0.1:{port}")))
}

/// What the section measured, for the report.
pub struct Report {
    /// (label, load) for `/rpc add` at c=16 through the balancer.
    pub balanced: Vec<(String, Load)>,
    /// (label, load) for `tasks/get` at c=16.
    pub tasks: Vec<(String, Load)>,
}

pub fn run(paths: &Paths, budget: Duration) -> Result<Report> {
    let policy = paths.policy.to_string_lossy().to_string();
    let wasm = paths.wasm.to_string_lossy().to_string();
    let (redis, url) = redis()?;
    let redis_pid = redis.0.id();
    let mut balanced = Vec::new();
    // Interleaved rounds: 1, 3, 1, 3 replicas.
    for round in 0..2 {
        for n in [1usize, 3] {
            let replicas = (0..n)
                .map(|_| {
                    net::serve(
                        &paths.airlock,
                        &paths.cache,
                        &["--policy", &policy, "--state", &url, &wasm],
                    )
                })
                .collect::<Result<Vec<_>>>()?;
            let addrs: Vec<&str> = replicas.iter().map(|r| r.addr.as_str()).collect();
            let (lb, lb_addr) = balancer(&paths.root, &paths.tmp, &addrs)?;
            let mut pids: Vec<u32> = replicas.iter().map(|r| r.pid()).collect();
            pids.push(lb.0.id());
            eprintln!(
                "   /rpc add through HAProxy, {n} replica(s), round {}",
                round + 1
            );
            let load = net::load(&lb_addr, "/rpc", None, ADD, 16, budget, &pids)?;
            balanced.push((format!("{n} replica(s), round {}", round + 1), load));
        }
    }
    // tasks/get: a task that runs for minutes, read where it runs (memory)
    // and through another replica (Redis); and without --state at all.
    let conformance = paths.root.join("target/test-components/conformance.wasm");
    let conformance = conformance.to_string_lossy().to_string();
    let mut tasks = Vec::new();
    let alone = net::serve(&paths.airlock, &paths.cache, &[&conformance])?;
    let a = net::serve(
        &paths.airlock,
        &paths.cache,
        &["--state", &url, &conformance],
    )?;
    let b = net::serve(
        &paths.airlock,
        &paths.cache,
        &["--state", &url, &conformance],
    )?;
    for (label, runs_on, asked, pids) in [
        (
            "without --state (memory)",
            &alone,
            &alone,
            vec![alone.pid()],
        ),
        (
            "with --state, where it runs (memory)",
            &a,
            &a,
            vec![a.pid(), redis_pid],
        ),
        (
            "with --state, another replica (Redis)",
            &a,
            &b,
            vec![b.pid(), redis_pid],
        ),
    ] {
        let id = start_task(&runs_on.addr)?;
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{{"taskId":"{id}",{META}}}}}"#
        );
        let req = net::request_with(
            &asked.addr,
            "/mcp",
            &[
                ("MCP-Protocol-Version", MODERN),
                ("Mcp-Method", "tasks/get"),
                ("Mcp-Name", &id),
            ],
            &body,
        );
        eprintln!("   tasks/get {label}");
        tasks.push((
            label.to_string(),
            net::load_request(&asked.addr, req, 16, budget, &pids)?,
        ));
    }
    drop(redis);
    Ok(Report { balanced, tasks })
}

const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"airlock-bench","version":"0"},"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}"#;

/// Starts `test_long_task` for a minute (its longest) as a task; its id.
fn start_task(addr: &str) -> Result<String> {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"test_long_task","arguments":{{"seconds":60}},{META}}}}}"#
    );
    let req = net::request_with(
        addr,
        "/mcp",
        &[
            ("MCP-Protocol-Version", MODERN),
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "test_long_task"),
        ],
        &body,
    );
    let (status, answer) = net::post_once(addr, &req)?;
    let answer: serde_json::Value = serde_json::from_slice(&answer)?;
    match answer.pointer("/result/taskId").and_then(|v| v.as_str()) {
        Some(id) if status == 200 => Ok(id.to_string()),
        _ => bail!("no task: HTTP {status} {answer}"),
    }
}

/// The section's tables (Markdown).
pub fn table(report: &Report) -> String {
    let mut out = String::from(
        "| `/rpc add`, c=16, through HAProxy | calls/s | p50 µs | p99 µs | CPU µs/call (replicas + HAProxy) | errors |\n|---|---:|---:|---:|---:|---:|\n",
    );
    let row = |out: &mut String, label: &str, load: &Load| {
        out.push_str(&format!(
            "| {label} | {:.0} | {:.0} | {:.0} | {} | {} |\n",
            load.per_sec,
            load.lat.p50,
            load.lat.p99,
            load.server
                .map_or("–".into(), |c| format!("{:.0}", c.cpu_us)),
            load.errors
        ));
    };
    for (label, load) in &report.balanced {
        row(&mut out, label, load);
    }
    out.push_str(
        "\n| `tasks/get` (2026-07-28), c=16 | calls/s | p50 µs | p99 µs | CPU µs/call (replica + Redis) | errors |\n|---|---:|---:|---:|---:|---:|\n",
    );
    for (label, load) in &report.tasks {
        row(&mut out, label, load);
    }
    out
}
