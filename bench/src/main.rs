//! airlock's benchmark suite. Run it with `cargo xtask bench` (which builds
//! the release binary and the bench component first); it prints one table
//! and writes `BENCHMARKS.md` and the charts in `benchmarks/`.
//!
//! Benchmarks report numbers; nothing here passes or fails on a timing.

mod floor;
mod inproc;
mod languages;
mod net;
mod replicas;
mod stats;
mod svg;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, bail};

use crate::svg::fmt_num;

// The allocator the `airlock` binary uses, so that in-process numbers are
// those of the real path.
airlock::global_allocator!();

struct Paths {
    root: PathBuf,
    airlock: PathBuf,
    wasm: PathBuf,
    tmp: PathBuf,
    cache: PathBuf,
    policy: PathBuf,
}

/// The HTTP stack's cheapest request: the floor for a call.
const PING: &str = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
/// The trivial tool call every HTTP measurement makes.
const CALL_ADD: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":40,"b":2}}}"#;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("memory") {
        let [_, wasm, cache, calls, ms] = args.as_slice() else {
            bail!("usage: airlock-bench memory WASM CACHE CALLS MS");
        };
        return inproc::memory_child(
            Path::new(wasm),
            Path::new(cache),
            calls.parse()?,
            ms.parse()?,
        );
    }
    if args.first().map(String::as_str) == Some("load") {
        // Load against a server started by hand (for profiling it):
        // `airlock-bench load ADDR (ping|call|REQUEST) CONCURRENCY SECONDS`.
        let [_, addr, what, c, secs] = args.as_slice() else {
            bail!("usage: airlock-bench load ADDR (ping|call|REQUEST) CONCURRENCY SECONDS");
        };
        let session = net::mcp_session(addr)?;
        let body = match what.as_str() {
            "ping" => PING,
            "call" => CALL_ADD,
            // Any request, e.g. a tools/call of another component's tool.
            json if json.starts_with('{') => json,
            other => bail!("unknown load {other:?}: use ping, call or a JSON-RPC request"),
        };
        let load = net::load(
            addr,
            "/mcp",
            Some(&session),
            body,
            c.parse()?,
            Duration::from_secs_f64(secs.parse()?),
            &[],
        )?;
        println!(
            "{:.0}/s p50 {} p99 {} errors {}",
            load.per_sec,
            us(load.lat.p50),
            us(load.lat.p99),
            load.errors
        );
        return Ok(());
    }
    if args.first().map(String::as_str) == Some("loop") {
        // The real path alone, over and over (for `perf record`, or to
        // compare pool settings in interleaved runs):
        // `airlock-bench loop (add|echo) SECONDS [LEVER]`, LEVER a part of
        // a lever's name in the pool-settings table.
        // `airlock-bench loop WASM TOOL ARGS SECONDS [LEVER]` runs any
        // component's tool (ARGS its JSON arguments).
        let lever_tune = |part: Option<&String>| -> Result<Option<airlock::sandbox::Tuning>> {
            let Some(part) = part else { return Ok(None) };
            Ok(inproc::levers()
                .into_iter()
                .find(|l| l.name.contains(part.as_str()))
                .with_context(|| format!("no lever named like {part:?}"))?
                .tune)
        };
        let root = std::env::current_dir()?;
        let (wasm, tool, call_args, secs, tune) = match args.as_slice() {
            [_, tool, secs] | [_, tool, secs, _] if !tool.ends_with(".wasm") => {
                let case = inproc::cases()
                    .into_iter()
                    .find(|c| c.tool == tool)
                    .with_context(|| format!("no case for tool {tool:?}: use add or echo"))?;
                (
                    root.join("target/test-components/bench.wasm"),
                    tool.clone(),
                    case.args,
                    secs,
                    lever_tune(args.get(3))?,
                )
            }
            [_, wasm, tool, call_args, secs] | [_, wasm, tool, call_args, secs, _] => (
                PathBuf::from(wasm),
                tool.clone(),
                serde_json::from_str(call_args).context("ARGS must be JSON")?,
                secs,
                lever_tune(args.get(5))?,
            ),
            _ => bail!(
                "usage: airlock-bench loop (add|echo) SECONDS [LEVER]\n   or: airlock-bench loop WASM TOOL ARGS SECONDS [LEVER]"
            ),
        };
        let runtime = inproc::runtime(&wasm, &root.join("target/bench-tmp/cache"), 1000, tune)?;
        let secs: f64 = secs.parse()?;
        let answered =
            inproc::repeat_with(&runtime, &tool, &call_args, Duration::from_secs_f64(secs))?;
        let calls = answered.len();
        let lat = stats::stats(answered);
        println!(
            "{tool}: {:.0} calls/s, to the answer p50 {} p99 {}",
            calls as f64 / secs,
            us(lat.p50),
            us(lat.p99)
        );
        return Ok(());
    }
    let quick = args.iter().any(|a| a == "--quick");
    // `--only SECTION` (inproc, levers, http, lanes, floor, languages,
    // stdio, startup, memory, replicas) runs
    // one part and prints it, without writing BENCHMARKS.md.
    let only = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1).cloned());
    let run = |section: &str| only.as_deref().is_none_or(|o| o == section);
    let root = std::env::current_dir()?;
    let tmp = root.join("target/bench-tmp");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp)?;
    let paths = Paths {
        airlock: root.join("target/release/airlock"),
        wasm: root.join("target/test-components/bench.wasm"),
        cache: tmp.join("cache"),
        policy: tmp.join("airlock.toml"),
        tmp,
        root,
    };
    for needed in [&paths.airlock, &paths.wasm] {
        if !needed.is_file() {
            bail!("{} is missing; run `cargo xtask bench`", needed.display());
        }
    }
    std::fs::write(&paths.policy, inproc::POLICY)?;
    let scale = if quick { 0.3 } else { 1.0 };
    let budget = |secs: f64| Duration::from_secs_f64(secs * scale);
    let load_before = loadavg();
    let ticks_before = stats::cpu_ticks();

    // The machine's speed drifts during a run (a shared VM): the same quick
    // measurement, taken between the sections, shows by how much.
    let probe_runtime = match only {
        None => Some(inproc::runtime(&paths.wasm, &paths.cache, 64, None)?),
        Some(_) => None,
    };
    let mut probes = Vec::new();
    let mut probe = |at: &'static str| -> Result<()> {
        if let Some(runtime) = &probe_runtime {
            probes.push(inproc::probe(runtime, at, budget(1.5))?);
        }
        Ok(())
    };
    probe("start")?;
    // Replicas behind HAProxy with Redis: only on request (it needs
    // Debian's redis-server and haproxy, which `cargo xtask test` installs).
    if only.as_deref() == Some("replicas") {
        eprintln!("== replicas behind HAProxy, sharing Redis");
        let report = replicas::run(&paths, budget(3.0))?;
        print!("{}", replicas::table(&report));
        return Ok(());
    }

    let mut per_call = Vec::new();
    if run("inproc") {
        eprintln!("== per call, in process");
        let runtime = inproc::runtime(&paths.wasm, &paths.cache, 1000, None)?;
        for case in inproc::cases() {
            eprintln!("   {}", case.label);
            per_call.push(inproc::per_call(&runtime, &case, budget(1.2))?);
        }
    }
    probe("after the in-process section")?;
    let mut levers = Vec::new();
    if run("levers") {
        eprintln!("== levers (pool settings)");
        for lever in inproc::levers() {
            eprintln!("   {}", lever.name);
            levers.push(inproc::lever(
                &paths.wasm,
                &paths.cache,
                &lever,
                budget(0.8),
            )?);
        }
    }
    probe("after the levers")?;
    let http = if run("http") {
        eprintln!("== HTTP");
        http(&paths, budget(2.0))
    } else {
        skipped()
    };
    if let Err(err) = &http {
        eprintln!("   HTTP: {err:#}");
    }
    probe("after HTTP")?;
    let lanes = if run("lanes") {
        eprintln!("== lanes (where the server runs calls)");
        lanes(&paths, budget(2.0))
    } else {
        skipped()
    };
    if let Err(err) = &lanes {
        eprintln!("   lanes: {err:#}");
    }
    probe("after the lanes")?;
    let floor = if run("floor") {
        eprintln!("== the unsandboxed floor (rmcp, native add)");
        floor::run(&paths, budget(2.0))
    } else {
        skipped()
    };
    if let Err(err) = &floor {
        eprintln!("   floor: {err:#}");
    }
    let languages = if run("languages") {
        eprintln!("== guests of each language");
        languages::run(&paths, budget(2.0), if quick { 1 } else { 3 })
    } else {
        skipped()
    };
    if let Err(err) = &languages {
        eprintln!("   languages: {err:#}");
    }
    probe("after the floor and the languages")?;
    let calls = if quick { 3000 } else { 10000 };
    let stdio = if run("stdio") {
        eprintln!("== stdio");
        net::stdio(
            &paths.airlock,
            &paths.cache,
            &paths.wasm,
            &paths.policy,
            calls,
            64,
        )
    } else {
        skipped()
    };
    if let Err(err) = &stdio {
        eprintln!("   stdio: {err:#}");
    }
    let startup = if run("startup") {
        eprintln!("== startup with 50 components");
        startup(&paths, if quick { 1 } else { 3 })
    } else {
        skipped()
    };
    if let Err(err) = &startup {
        eprintln!("   startup: {err:#}");
    }
    probe("after stdio and startup")?;
    // Before the memory section: its 1,000 threads at once would count in
    // the load average as if other work had run.
    let load_after = loadavg();
    let steal = stats::steal_percent(ticks_before, stats::cpu_ticks());
    let memory = if run("memory") {
        eprintln!("== memory with 1,000 concurrent sleep(200) calls");
        memory(&paths)
    } else {
        skipped()
    };
    if let Err(err) = &memory {
        eprintln!("   memory: {err:#}");
    }

    let report = Report {
        probes,
        per_call,
        levers,
        http: http.ok(),
        lanes: lanes.ok(),
        floor: floor.ok(),
        languages: languages.ok(),
        stdio: stdio.ok(),
        startup: startup.ok(),
        memory: memory.ok(),
        load: (load_before, load_after),
        steal,
        quick,
    };
    println!("{}", report.summary());
    if only.is_some() {
        if let Some(rows) = &report.floor {
            print!("{}", floor::table(rows));
        }
        if let Some(rows) = &report.languages {
            print!("{}", languages::table(rows));
        }
        for l in &report.levers {
            println!(
                "{:<40} p50 {:>8.1} µs  p99 {:>8.1} µs  {:>7.0}/s  {:>7.0}/s (2 threads)",
                l.name, l.p50, l.p99, l.one_thread, l.two_threads
            );
        }
        for p in &report.per_call {
            for (name, mean, p50) in &p.phases {
                println!(
                    "{:<12} {name:<34} mean {mean:>8.2} µs  p50 {p50:>8.2} µs",
                    p.label
                );
            }
        }
    } else {
        report.write(&paths.root)?;
        eprintln!("wrote BENCHMARKS.md and benchmarks/*.svg");
    }
    let _ = std::fs::remove_dir_all(&paths.tmp);
    Ok(())
}

fn skipped<T>() -> Result<T> {
    Err(anyhow::anyhow!("skipped"))
}

const CONCURRENCY: [usize; 3] = [1, 16, 64];

/// (label, per concurrency level)
type HttpRows = Vec<(&'static str, Vec<net::Load>)>;

fn http(paths: &Paths, budget: Duration) -> Result<HttpRows> {
    let policy = paths.policy.to_string_lossy().to_string();
    let wasm = paths.wasm.to_string_lossy().to_string();
    let server = net::serve(&paths.airlock, &paths.cache, &["--policy", &policy, &wasm])?;
    let session = net::mcp_session(&server.addr)?;
    let requests: [(&str, &str, Option<&str>, &str); 3] = [
        ("MCP ping (floor)", "/mcp", Some(&session), PING),
        ("MCP tools/call add", "/mcp", Some(&session), CALL_ADD),
        (
            "/rpc add",
            "/rpc",
            None,
            r#"{"jsonrpc":"2.0","id":1,"method":"add","params":{"a":40,"b":2}}"#,
        ),
    ];
    let mut rows = Vec::new();
    for (label, path, session, body) in requests {
        let mut row = Vec::new();
        for c in CONCURRENCY {
            eprintln!("   {label} c={c}");
            row.push(net::load(
                &server.addr,
                path,
                session,
                body,
                c,
                budget,
                &[server.pid()],
            )?);
        }
        rows.push((label, row));
    }
    Ok(rows)
}

/// How many times each lane setting is measured, interleaved with the
/// others: single runs on this shared machine differ by up to 1.5×.
const LANE_ROUNDS: usize = 5;

/// One setting measured [`LANE_ROUNDS`] times: medians of calls/s, p50,
/// p99 and of each round's ping ÷ call ratio.
pub struct LaneRow {
    label: String,
    call_per_sec: f64,
    call_p50: f64,
    call_p99: f64,
    ping_per_sec: f64,
    ratio: f64,
    /// tools/call p50 with one connection (the hand-off's latency).
    single_p50: f64,
    /// The server's CPU time and context switches per request, c=16.
    call_cost: net::Cost,
    ping_cost: net::Cost,
    errors: u64,
}

/// MCP ping and tools/call at c=16 against a server per lane setting
/// (`AIRLOCK_LANES`), the settings interleaved round by round.
fn lanes(paths: &Paths, budget: Duration) -> Result<Vec<LaneRow>> {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let fewer = cores.saturating_sub(1).max(1);
    let settings: Vec<(String, Option<String>)> = vec![
        (
            "tokio's blocking pool (`AIRLOCK_LANES=0`)".into(),
            Some("0".into()),
        ),
        (
            format!("lanes, one per core but one ({fewer})"),
            Some(fewer.to_string()),
        ),
        (format!("lanes, default: one per core ({cores})"), None),
    ];
    let policy = paths.policy.to_string_lossy().to_string();
    let wasm = paths.wasm.to_string_lossy().to_string();
    let mut runs: Vec<Vec<(net::Load, net::Load, net::Load)>> = vec![Vec::new(); settings.len()];
    for round in 1..=LANE_ROUNDS {
        for (i, (label, width)) in settings.iter().enumerate() {
            eprintln!("   round {round}: {label}");
            // Every call on the lanes (none inline): the hand-off is what
            // this section measures, its one-connection p50 included.
            let env: Vec<(&str, &str)> = width
                .as_deref()
                .map(|w| ("AIRLOCK_LANES", w))
                .into_iter()
                .chain([(airlock::lanes::INLINE_VAR, "0")])
                .collect();
            let server = net::serve_with(
                &paths.airlock,
                &paths.cache,
                &["--policy", &policy, &wasm],
                &env,
            )?;
            let session = net::mcp_session(&server.addr)?;
            let ping = net::load(
                &server.addr,
                "/mcp",
                Some(&session),
                PING,
                16,
                budget,
                &[server.pid()],
            )?;
            let call = net::load(
                &server.addr,
                "/mcp",
                Some(&session),
                CALL_ADD,
                16,
                budget,
                &[server.pid()],
            )?;
            let single = net::load(
                &server.addr,
                "/mcp",
                Some(&session),
                CALL_ADD,
                1,
                budget / 2,
                &[server.pid()],
            )?;
            runs[i].push((ping, call, single));
        }
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    Ok(settings
        .into_iter()
        .zip(runs)
        .map(|((label, _), runs)| LaneRow {
            label,
            call_per_sec: median(runs.iter().map(|(_, c, _)| c.per_sec).collect()),
            call_p50: median(runs.iter().map(|(_, c, _)| c.lat.p50).collect()),
            call_p99: median(runs.iter().map(|(_, c, _)| c.lat.p99).collect()),
            ping_per_sec: median(runs.iter().map(|(p, _, _)| p.per_sec).collect()),
            ratio: median(runs.iter().map(|(p, c, _)| p.per_sec / c.per_sec).collect()),
            single_p50: median(runs.iter().map(|(_, _, s)| s.lat.p50).collect()),
            call_cost: median_cost(runs.iter().map(|(_, c, _)| c.server)),
            ping_cost: median_cost(runs.iter().map(|(p, _, _)| p.server)),
            errors: runs
                .iter()
                .map(|(p, c, s)| p.errors + c.errors + s.errors)
                .sum(),
        })
        .collect())
}

/// Medians of the costs measured (each field on its own).
fn median_cost(costs: impl Iterator<Item = Option<net::Cost>>) -> net::Cost {
    let costs: Vec<net::Cost> = costs.flatten().collect();
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
    };
    net::Cost {
        cpu_us: median(costs.iter().map(|c| c.cpu_us).collect()),
        switches: median(costs.iter().map(|c| c.switches).collect()),
    }
}

/// "97.1 µs | 0.73": a request's server CPU time and context switches.
fn cost_cells(cost: Option<net::Cost>) -> String {
    cost.map_or("– | –".into(), |c| {
        format!("{} | {:.2}", us(c.cpu_us), c.switches)
    })
}

struct Startup {
    cold_ms: f64,
    warm_ms: f64,
    tools: usize,
}

fn startup(paths: &Paths, warm_runs: usize) -> Result<Startup> {
    let dir = paths.tmp.join("fifty");
    let files = net::fifty_components(&paths.wasm, &dir)?;
    let cache = paths.tmp.join("startup-cache");
    let dir_arg = dir.to_string_lossy().to_string();
    let cold = net::serve(&paths.airlock, &cache, &[&dir_arg])?.ready_after;
    let mut warm: Vec<f64> = (0..warm_runs)
        .map(|_| {
            net::serve(&paths.airlock, &cache, &[&dir_arg])
                .map(|s| s.ready_after.as_secs_f64() * 1000.0)
        })
        .collect::<Result<_>>()?;
    warm.sort_by(f64::total_cmp);
    Ok(Startup {
        cold_ms: cold.as_secs_f64() * 1000.0,
        warm_ms: warm[warm.len() / 2],
        tools: files.len() * 3,
    })
}

struct Memory {
    baseline_mib: f64,
    peak_mib: f64,
    wall_ms: f64,
    errors: u64,
    /// The same calls through `airlock serve`, one HTTP connection each.
    served: Option<Box<Memory>>,
}

/// 1,000 `tools/call sleep(200)` at once over HTTP, each on a connection
/// of its own, against a fresh `airlock serve` (`--max-calls 1024`); the
/// server's peak RSS.
fn served_memory(paths: &Paths) -> Result<Memory> {
    let policy = paths.policy.to_string_lossy().to_string();
    let wasm = paths.wasm.to_string_lossy().to_string();
    let server = net::serve(&paths.airlock, &paths.cache, &["--policy", &policy, &wasm])?;
    let session = net::mcp_session(&server.addr)?;
    let sleep = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":200}}}"#;
    // Warm the path once so that the baseline includes the loaded runtime.
    net::burst(&server.addr, Some(&session), sleep, 1)?;
    let kib = |field| net::status_kib(server.pid(), field).context("the server's /proc status");
    let baseline = kib("VmHWM")?;
    let burst = net::burst(&server.addr, Some(&session), sleep, 1000)?;
    Ok(Memory {
        baseline_mib: baseline as f64 / 1024.0,
        peak_mib: kib("VmHWM")? as f64 / 1024.0,
        wall_ms: burst.wall.as_secs_f64() * 1000.0,
        errors: burst.errors,
        served: None,
    })
}

fn memory(paths: &Paths) -> Result<Memory> {
    let me = std::env::current_exe()?;
    let out = Command::new(me)
        .arg("memory")
        .arg(&paths.wasm)
        .arg(&paths.cache)
        .args(["1000", "200"])
        .output()?;
    if !out.status.success() {
        bail!(
            "memory child failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let v: serde_json::Value =
        serde_json::from_slice(&out.stdout).context("memory child output")?;
    let kib = |k: &str| v[k].as_f64().unwrap_or(0.0);
    Ok(Memory {
        baseline_mib: kib("baseline_kib") / 1024.0,
        peak_mib: kib("peak_kib") / 1024.0,
        wall_ms: kib("wall_ms"),
        errors: v["errors"].as_u64().unwrap_or(0),
        served: match served_memory(paths) {
            Ok(served) => Some(Box::new(served)),
            Err(err) => {
                eprintln!("   memory through airlock serve: {err:#}");
                None
            }
        },
    })
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

fn command_output(cmd: &str, args: &[&str]) -> String {
    Command::new(cmd)
        .args(args)
        .output()
        // Not `trim`: `free`'s header line starts with spaces that align it.
        .map(|o| String::from_utf8_lossy(&o.stdout).trim_end().to_string())
        .unwrap_or_else(|_| "?".into())
}

fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")?
                .split_once(':')
                .map(|(_, m)| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = command_output("nproc", &[]);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!(
        "- CPU: {model}, `nproc` = {cores}\n- kernel: Linux {}\n- {}, wasmtime 48.0.8\n\n`free -m`:\n\n```text\n{}\n```\n",
        kernel.trim(),
        command_output("rustc", &["-V"]),
        command_output("free", &["-m"])
    )
}

struct Report {
    probes: Vec<inproc::Probe>,
    per_call: Vec<inproc::PerCall>,
    levers: Vec<inproc::LeverResult>,
    http: Option<HttpRows>,
    lanes: Option<Vec<LaneRow>>,
    floor: Option<Vec<floor::Row>>,
    languages: Option<Vec<languages::Row>>,
    stdio: Option<(f64, u64)>,
    startup: Option<Startup>,
    memory: Option<Memory>,
    load: (String, String),
    /// CPU time stolen by the hypervisor until the memory section, in %.
    steal: Option<f64>,
    quick: bool,
}

/// The median of `values` (the mean of the middle two for an even count).
fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

fn us(v: f64) -> String {
    format!("{} µs", fmt_num(v))
}

impl Report {
    fn http_at(&self, label: &str, c: usize) -> Option<net::Load> {
        let i = CONCURRENCY.iter().position(|x| *x == c)?;
        self.http
            .as_ref()?
            .iter()
            .find(|(l, _)| *l == label)
            .map(|(_, r)| r[i])
    }

    /// (target, measured, met)
    fn targets(&self) -> Vec<(String, String, Option<bool>)> {
        let mut t = Vec::new();
        // The per-call section and the probes together: one figure alone
        // depends on the moment it was taken.
        let add = self.per_call.first();
        let fresh: Vec<f64> = add
            .map(|a| a.real.p50)
            .into_iter()
            .chain(self.probes.iter().map(|p| p.fresh))
            .collect();
        let fresh_median = median(&fresh);
        t.push((
            "fresh-instance trivial call p50 ≤ 10 µs".to_string(),
            match add {
                None => "not measured".into(),
                Some(a) if self.probes.is_empty() => {
                    format!("{} (p99 {})", us(a.real.p50), us(a.real.p99))
                }
                Some(a) => format!(
                    "{} (p99 {}) in the per-call section; median with the {} probes {} \
                     (range {} – {})",
                    us(a.real.p50),
                    us(a.real.p99),
                    self.probes.len(),
                    us(fresh_median.unwrap_or(f64::NAN)),
                    us(fresh.iter().copied().fold(f64::INFINITY, f64::min)),
                    us(fresh.iter().copied().fold(0.0, f64::max)),
                ),
            },
            fresh_median.map(|m| m <= 10.0),
        ));
        let call = self.http_at("MCP tools/call add", 16);
        let ping = self.http_at("MCP ping (floor)", 16);
        // The medians of the interleaved rounds (default lanes) when they
        // were measured: one run alone swings too much on this machine.
        let rounds = self
            .lanes
            .as_ref()
            .and_then(|rows| rows.iter().find(|l| l.label.contains("default")));
        let single = "(the HTTP table's single run)";
        t.push((
            "tools/call over HTTP ≥ 20,000/s at c=16".into(),
            match (rounds, call) {
                (Some(r), Some(c)) => format!(
                    "{:.0}/s, median of {LANE_ROUNDS} rounds (Lanes); {:.0}/s {single}",
                    r.call_per_sec, c.per_sec
                ),
                (None, Some(c)) => format!("{:.0}/s", c.per_sec),
                _ => "not measured".into(),
            },
            match (rounds, call) {
                (Some(r), _) => Some(r.call_per_sec >= 20000.0),
                (None, c) => c.map(|c| c.per_sec >= 20000.0),
            },
        ));
        t.push((
            "… with p99 ≤ 2 ms".into(),
            match (rounds, call) {
                (Some(r), Some(c)) => format!(
                    "{}, median of {LANE_ROUNDS} rounds; {} {single}",
                    us(r.call_p99),
                    us(c.lat.p99)
                ),
                (None, Some(c)) => us(c.lat.p99),
                _ => "not measured".into(),
            },
            match (rounds, call) {
                (Some(r), _) => Some(r.call_p99 <= 2000.0),
                (None, c) => c.map(|c| c.lat.p99 <= 2000.0),
            },
        ));
        t.push((
            "… within 2× of the ping floor (calls/s)".into(),
            match (call, ping) {
                (Some(c), Some(p)) => {
                    let mut text = String::new();
                    if let Some(r) = rounds {
                        let _ = write!(
                            text,
                            "{:.2}×, median of {LANE_ROUNDS} rounds (Lanes); server CPU per \
                             request: call {} ÷ ping {} = {:.2}×; ",
                            r.ratio,
                            us(r.call_cost.cpu_us),
                            us(r.ping_cost.cpu_us),
                            r.call_cost.cpu_us / r.ping_cost.cpu_us
                        );
                    }
                    let _ = write!(
                        text,
                        "ping {:.0}/s ÷ call {:.0}/s = {:.2}× {single}",
                        p.per_sec,
                        c.per_sec,
                        p.per_sec / c.per_sec
                    );
                    text
                }
                _ => "not measured".into(),
            },
            match rounds {
                Some(r) => Some(r.ratio <= 2.0),
                None => call.zip(ping).map(|(c, p)| p.per_sec / c.per_sec <= 2.0),
            },
        ));
        t.push((
            "warm start with 50 components ≤ 500 ms".into(),
            self.startup.as_ref().map_or("not measured".into(), |s| {
                format!("{:.0} ms (cold {:.0} ms)", s.warm_ms, s.cold_ms)
            }),
            self.startup.as_ref().map(|s| s.warm_ms <= 500.0),
        ));
        t.push((
            "1,000 concurrent calls ≤ 300 MB RSS".into(),
            self.memory.as_ref().map_or("not measured".into(), |m| {
                let mut text = format!(
                    "in process {:.0} MiB peak ({:.0} MB)",
                    m.peak_mib,
                    m.peak_mib * 1.048576
                );
                if let Some(s) = &m.served {
                    let _ = write!(
                        text,
                        "; through `airlock serve` {:.0} MiB ({:.0} MB)",
                        s.peak_mib,
                        s.peak_mib * 1.048576
                    );
                }
                text
            }),
            // The server's figure when it was measured: it is what runs.
            self.memory.as_ref().map(|m| {
                let peak = m.served.as_ref().map_or(m.peak_mib, |s| s.peak_mib);
                peak * 1.048576 <= 300.0
            }),
        ));
        // Issue 19's targets: the guests of other languages per call, and
        // one connection against the native floor.
        t.extend(languages::targets(self.languages.as_deref()));
        t.push(floor::target(self.floor.as_deref()));
        t
    }

    fn summary(&self) -> String {
        let mut rows: Vec<(String, String)> = Vec::new();
        if let Some(steal) = self.steal {
            rows.push((
                "CPU time stolen by the hypervisor".into(),
                format!("{steal:.1}%"),
            ));
        }
        for p in &self.probes {
            rows.push((
                format!("probe {}", p.at),
                format!(
                    "fresh add p50 {}, reused p50 {}, stolen {}",
                    us(p.fresh),
                    us(p.reused),
                    p.steal.map_or("?".into(), |s| format!("{s:.1}%"))
                ),
            ));
        }
        for p in &self.per_call {
            rows.push((format!("{} native p50", p.label), us(p.native.p50)));
            rows.push((format!("{} reused instance p50", p.label), us(p.reused.p50)));
            rows.push((
                format!("{} airlock p50 / p99", p.label),
                format!(
                    "{} / {} (+ teardown {})",
                    us(p.real.p50),
                    us(p.real.p99),
                    us(p.real_total.p50)
                ),
            ));
        }
        if let Some(http) = &self.http {
            for (label, loads) in http {
                for (c, l) in CONCURRENCY.iter().zip(loads) {
                    rows.push((
                        format!("HTTP {label} c={c}"),
                        format!(
                            "{:.0}/s p50 {} p99 {} errors {}, server {}",
                            l.per_sec,
                            us(l.lat.p50),
                            us(l.lat.p99),
                            l.errors,
                            cost_cells(l.server).replace(" | ", " CPU, switches ")
                        ),
                    ));
                }
            }
        }
        if let Some(lanes) = &self.lanes {
            for l in lanes {
                rows.push((
                    format!("c=16 {}", l.label),
                    format!(
                        "call {:.0}/s p99 {}, ping {:.0}/s, ratio {:.2}, errors {}, c=1 p50 {}, server CPU call {} ping {}",
                        l.call_per_sec,
                        us(l.call_p99),
                        l.ping_per_sec,
                        l.ratio,
                        l.errors,
                        us(l.single_p50),
                        us(l.call_cost.cpu_us),
                        us(l.ping_cost.cpu_us)
                    ),
                ));
            }
        }
        if let Some((rate, errors)) = self.stdio {
            rows.push((
                "stdio tools/call, pipelined".into(),
                format!("{rate:.0}/s, errors {errors}"),
            ));
        }
        if let Some(s) = &self.startup {
            rows.push((
                "startup, 50 components".into(),
                format!("cold {:.0} ms, warm {:.0} ms", s.cold_ms, s.warm_ms),
            ));
        }
        if let Some(m) = &self.memory {
            rows.push((
                "1,000 × sleep(200) peak RSS".into(),
                format!(
                    "{:.0} MiB (idle {:.0} MiB), {:.0} ms, errors {}",
                    m.peak_mib, m.baseline_mib, m.wall_ms, m.errors
                ),
            ));
            if let Some(s) = &m.served {
                rows.push((
                    "… through airlock serve".into(),
                    format!(
                        "{:.0} MiB (idle {:.0} MiB), {:.0} ms, errors {}",
                        s.peak_mib, s.baseline_mib, s.wall_ms, s.errors
                    ),
                ));
            }
        }
        let width = rows
            .iter()
            .map(|(k, _)| k.chars().count())
            .max()
            .unwrap_or(0);
        let mut s = String::new();
        for (k, v) in rows {
            let _ = writeln!(s, "{k:<width$}  {v}");
        }
        s
    }

    fn write(&self, root: &Path) -> Result<()> {
        let charts = root.join("benchmarks");
        std::fs::create_dir_all(&charts)?;
        let mut md = String::new();
        let date = command_output("date", &["-u", "+%Y-%m-%d %H:%M UTC"]);
        let _ = writeln!(
            md,
            "# Benchmarks\n\nWritten by `cargo xtask bench`{} on {date}; rerun that command to \
             refresh every number and chart here. Release build, in-process measurements on the \
             real code path, HTTP and stdio against the `airlock serve` binary. Numbers are \
             medians (p50) and 99th percentiles (p99) of one run; ratios compare figures of the \
             same run. Nothing here is a pass/fail test.\n",
            if self.quick { " --quick" } else { "" }
        );
        let _ = writeln!(
            md,
            "## Machine\n\n{}\nLoad average (1, 5, 15 min) before the run: {}; after it (before \
             the memory section): {}. The machine is a shared virtual machine whose speed varies \
             between runs and within one (see the probes below and the notes), so compare \
             ratios within one run rather than absolute values across runs. The HTTP load \
             generator runs on the same two cores as the server.\n",
            machine(),
            self.load.0,
            self.load.1
        );
        if let Some(steal) = self.steal {
            let _ = writeln!(
                md,
                "CPU time stolen by the hypervisor (other guests running on this machine's \
                 cores; `steal` in `/proc/stat`) until the memory section: {steal:.1}% of all \
                 CPU time."
            );
        }
        if !self.probes.is_empty() {
            md.push_str(
                "\nProbes: the same quick measurement taken between the sections of this run \
                 (fresh-instance `add` to the answer, and the reused-instance floor; p50 of \
                 1 s and 0.5 s of calls). How far they drift is how far this run's other \
                 absolute numbers can be off.\n\n\
                 | when | fresh `add` p50 | reused p50 | fresh ÷ reused | CPU time stolen |\n\
                 | --- | --- | --- | --- | --- |\n",
            );
            for p in &self.probes {
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {:.1}× | {} |",
                    p.at,
                    us(p.fresh),
                    us(p.reused),
                    p.fresh / p.reused.max(1e-3),
                    p.steal.map_or("?".into(), |s| format!("{s:.1}%"))
                );
            }
            md.push('\n');
        }
        md.push_str("## Targets\n\n| target | measured | met |\n| --- | --- | --- |\n");
        for (target, measured, met) in self.targets() {
            let met = match met {
                Some(true) => "yes",
                Some(false) => "**no**",
                None => "—",
            };
            let _ = writeln!(md, "| {target} | {measured} | {met} |");
        }

        md.push_str(
            "\n## Per call, in process\n\n\
             *native*: the same function in Rust, no sandbox (the floor). *reused*: one instance \
             kept and called again and again, arguments already as text (the floor for \
             isolation). *airlock*: `Runtime::prepare` + `PreparedCall::run_delivering`, as the \
             server runs a call: lookup, effective grant, argument validation, a fresh store and \
             instance, the call, the result checks, until the outcome is delivered; the instance \
             is torn down after that, on the same thread (*+ teardown*: until the thread is free \
             again).\n\n\
             | tool | native p50 | reused p50 / p99 | airlock p50 / p99 | + teardown p50 / p99 | airlock ÷ native | airlock ÷ reused |\n\
             | --- | --- | --- | --- | --- | --- | --- |\n",
        );
        for p in &self.per_call {
            let _ = writeln!(
                md,
                "| {} | {} | {} / {} | {} / {} | {} / {} | {:.0}× | {:.1}× |",
                p.label,
                us(p.native.p50),
                us(p.reused.p50),
                us(p.reused.p99),
                us(p.real.p50),
                us(p.real.p99),
                us(p.real_total.p50),
                us(p.real_total.p99),
                p.real.p50 / p.native.p50.max(1e-3),
                p.real.p50 / p.reused.p50.max(1e-3)
            );
        }
        md.push_str(
            "\nBreakdown: the real path taken apart phase by phase in a loop that mirrors it \
             (mean / p50 per phase; the first row is the benchmark's own copy of the arguments, \
             which a server gets for free from parsing the request).\n\n| phase |",
        );
        for p in &self.per_call {
            let _ = write!(md, " {} mean / p50 |", p.label);
        }
        md.push_str("\n| --- |");
        for _ in &self.per_call {
            md.push_str(" --- |");
        }
        md.push('\n');
        for (i, phase) in inproc::PHASES.iter().enumerate() {
            let _ = write!(md, "| {phase} |");
            for p in &self.per_call {
                let (_, mean, p50) = p.phases[i];
                let _ = write!(md, " {} / {} |", us(mean), us(p50));
            }
            md.push('\n');
        }
        md.push_str("\n![per-call breakdown](benchmarks/breakdown.svg)\n");
        let rows: Vec<(String, Vec<f64>)> = self
            .per_call
            .iter()
            .map(|p| {
                (
                    p.label.to_string(),
                    p.phases.iter().map(|(_, mean, _)| *mean).collect(),
                )
            })
            .collect();
        std::fs::write(
            charts.join("breakdown.svg"),
            svg::stacked(
                "Per-call breakdown, real path (mean µs per phase)",
                "µs",
                &inproc::PHASES,
                &rows,
            ),
        )?;

        md.push_str(
            "\n## Pool settings (levers)\n\nFresh-instance `add` on the real path with one \
             setting changed from airlock's `engine_config` (`runtime/src/sandbox/mod.rs`): \
             latency on one thread including the teardown (until the thread is free again), and \
             calls/s with one and with two threads calling at once.\n\n\
             | setting | p50 | p99 | calls/s, 1 thread | calls/s, 2 threads |\n| --- | --- | --- | --- | --- |\n",
        );
        for l in &self.levers {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {:.0} | {:.0} |",
                l.name,
                us(l.p50),
                us(l.p99),
                l.one_thread,
                l.two_threads
            );
        }

        md.push_str("\n## HTTP\n\n");
        match &self.http {
            Some(http) => {
                md.push_str(
                    "`airlock serve` (release), keep-alive connections from a small load generator \
                     in `bench/` (one tokio thread, raw HTTP/1.1), each sending the next request \
                     when the answer arrives. An answer that is not HTTP 200, or holds a JSON-RPC \
                     error or `isError: true`, counts as an error. The last two columns are what \
                     each request cost the server process (CPU time of all its threads from \
                     `/proc`, and context switches), over the same window: the load generator \
                     shares the two cores, so calls/s also depend on its own cost per request, \
                     while these do not.\n\n\
                     | request | concurrency | calls/s | p50 | p99 | errors | server CPU / request | context switches / request |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n",
                );
                for (label, loads) in http {
                    for (c, l) in CONCURRENCY.iter().zip(loads) {
                        let _ = writeln!(
                            md,
                            "| {label} | {c} | {:.0} | {} | {} | {} of {} | {} |",
                            l.per_sec,
                            us(l.lat.p50),
                            us(l.lat.p99),
                            l.errors,
                            l.calls,
                            cost_cells(l.server)
                        );
                    }
                }
                md.push_str("\n![HTTP latency vs concurrency](benchmarks/http-latency.svg)\n");
                let mut series = Vec::new();
                for (i, (label, loads)) in http.iter().enumerate() {
                    series.push(svg::Series {
                        name: format!("{label} p50"),
                        values: loads.iter().map(|l| l.lat.p50).collect(),
                        dashed: false,
                        color: i,
                    });
                    series.push(svg::Series {
                        name: format!("{label} p99"),
                        values: loads.iter().map(|l| l.lat.p99).collect(),
                        dashed: true,
                        color: i,
                    });
                }
                let xs: Vec<String> = CONCURRENCY.iter().map(|c| c.to_string()).collect();
                std::fs::write(
                    charts.join("http-latency.svg"),
                    svg::lines(
                        "HTTP latency vs concurrency",
                        "concurrent connections",
                        "latency (µs, log)",
                        &xs,
                        &series,
                    ),
                )?;
            }
            None => md.push_str("Not measured in this run (see the suite's output).\n"),
        }

        md.push_str("\n## Lanes: where the server runs calls\n\n");
        match &self.lanes {
            Some(lanes) => {
                let _ = write!(
                    md,
                    "The same server and load (MCP, c=16) with each way of running the guest \
                     off the async threads (`runtime/src/protocol/lanes.rs`), chosen with the \
                     `AIRLOCK_LANES` environment variable (default: one lane per core); a fresh \
                     server per measurement, the \
                     settings interleaved, {LANE_ROUNDS} rounds. Medians of the rounds (the \
                     ratio is the median of each round's ping ÷ call). The last column is one \
                     connection alone: the latency of the hand-off itself, which on this \
                     virtual machine is mostly the time to wake a sleeping thread.\n\n\
                     | setting | tools/call calls/s, c=16 | p50 | p99 | ping calls/s, c=16 | ping ÷ call | errors | tools/call p50, c=1 | server CPU / call | switches / call | server CPU / ping |\n\
                     | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n",
                );
                for l in lanes {
                    let _ = writeln!(
                        md,
                        "| {} | {:.0} | {} | {} | {:.0} | {:.2}× | {} | {} | {} | {} |",
                        l.label,
                        l.call_per_sec,
                        us(l.call_p50),
                        us(l.call_p99),
                        l.ping_per_sec,
                        l.ratio,
                        l.errors,
                        us(l.single_p50),
                        cost_cells(Some(l.call_cost)),
                        us(l.ping_cost.cpu_us)
                    );
                }
            }
            None => md.push_str("Not measured in this run (see the suite's output).\n"),
        }

        md.push_str(&floor::section(self.floor.as_deref()));
        md.push_str(&languages::section(self.languages.as_deref()));

        md.push_str("\n## stdio\n\n");
        match self.stdio {
            Some((rate, errors)) => {
                let _ = writeln!(
                    md,
                    "`airlock serve --stdio`, one client writing `tools/call add` requests with up \
                     to 64 unanswered at once: **{rate:.0} calls/s**, {errors} errors."
                );
            }
            None => md.push_str("Not measured in this run.\n"),
        }
        md.push_str("\n## Startup\n\n");
        match &self.startup {
            Some(s) => {
                let _ = writeln!(
                    md,
                    "`airlock serve` with 50 components ({} tools; copies of the bench component \
                     with distinct tool names and digests), from spawn to the \"listening on\" \
                     line. Cold: empty compile cache (`AIRLOCK_CACHE_DIR` a new folder); warm: \
                     the cache filled by the cold run (median of the warm runs).\n\n\
                     | cold | warm |\n| --- | --- |\n| {:.0} ms | {:.0} ms |",
                    s.tools, s.cold_ms, s.warm_ms
                );
            }
            None => md.push_str("Not measured in this run.\n"),
        }
        md.push_str("\n## Memory\n\n");
        match &self.memory {
            Some(m) => {
                let _ = writeln!(
                    md,
                    "1,000 calls of `sleep(200)` at once on the real path (one thread each, as the \
                     server's blocking threads run them), in a child process with a 1,016-instance \
                     pool and `limits.concurrency` 2000. Peak RSS (`VmHWM`): **{:.0} MiB** \
                     ({:.0} MiB after loading, before the calls); all calls took {:.0} ms; \
                     {} errors.",
                    m.peak_mib, m.baseline_mib, m.wall_ms, m.errors
                );
                match &m.served {
                    Some(s) => {
                        let _ = writeln!(
                            md,
                            "\nThe same through `airlock serve` (`--max-calls 1024`, so a \
                             1,216-instance pool): 1,000 HTTP connections opened first, then \
                             one `tools/call sleep(200)` sent on each at once. The server's \
                             peak RSS: **{:.0} MiB** ({:.0} MiB after one call, before the \
                             burst); the last answer came {:.0} ms after the first request \
                             went out; {} errors.",
                            s.peak_mib, s.baseline_mib, s.wall_ms, s.errors
                        );
                    }
                    None => md.push_str(
                        "\nThrough `airlock serve`: not measured in this run (see the suite's output).\n",
                    ),
                }
            }
            None => md.push_str("Not measured in this run.\n"),
        }
        md.push_str("\n## Component sizes\n\n| component | bytes |\n| --- | --- |\n");
        for dir in ["target/test-components", "target/components"] {
            let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
                continue;
            };
            let mut files: Vec<_> = entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "wasm"))
                .collect();
            files.sort();
            for f in files {
                let name = f
                    .file_name()
                    .map(|n| n.to_string_lossy().to_string())
                    .unwrap_or_default();
                if dir.ends_with("test-components") && name != "bench.wasm" {
                    continue;
                }
                let size = std::fs::metadata(&f).map(|m| m.len()).unwrap_or(0);
                let _ = writeln!(md, "| {dir}/{name} | {size} |");
            }
        }
        if let Ok(notes) = std::fs::read_to_string(root.join("benchmarks/notes.md")) {
            md.push('\n');
            md.push_str(&notes);
        }
        std::fs::write(root.join("BENCHMARKS.md"), md)?;
        Ok(())
    }
}
