//! airlock's benchmark suite. Run it with `cargo xtask bench` (which builds
//! the release binary and the bench component first); it prints one table
//! and writes `BENCHMARKS.md` and the charts in `benchmarks/`.
//!
//! Benchmarks report numbers; nothing here passes or fails on a timing.

mod auth;
mod floor;
mod inproc;
mod languages;
mod machine;
mod net;
mod replicas;
mod report;
mod sides;
mod stats;
mod svg;
mod targets;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, bail};

use machine::loadavg;
use report::{Report, median, us};

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
/// The same call on `/rpc`, the tool as a JSON-RPC method.
const RPC_ADD: &str = r#"{"jsonrpc":"2.0","id":1,"method":"add","params":{"a":40,"b":2}}"#;

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
    if matches!(args.first().map(String::as_str), Some("loop" | "phases")) {
        // The real path alone, over and over (for `perf record`, or to
        // compare pool settings in interleaved runs):
        // `airlock-bench loop (add|echo) SECONDS [LEVER]`, LEVER a part of
        // a lever's name in the pool-settings table.
        // `airlock-bench loop WASM TOOL ARGS SECONDS [LEVER]` runs any
        // component's tool (ARGS its JSON arguments). `phases` instead of
        // `loop` takes the call apart phase by phase (as the breakdown).
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
        if args[0] == "phases" {
            let phases =
                inproc::phases(&runtime, &tool, &call_args, Duration::from_secs_f64(secs))?;
            for (phase, mean, p50) in phases {
                println!("{phase}: mean {} p50 {}", us(mean), us(p50));
            }
            return Ok(());
        }
        let faults = languages::minor_faults();
        let answered =
            inproc::repeat_with(&runtime, &tool, &call_args, Duration::from_secs_f64(secs))?;
        let calls = answered.len();
        let faults = faults
            .zip(languages::minor_faults())
            .map_or(f64::NAN, |(a, b)| (b - a) as f64 / calls.max(1) as f64);
        let lat = stats::stats(answered);
        println!(
            "{tool}: {:.0} calls/s, to the answer p50 {} p99 {}, {faults:.0} page faults per call",
            calls as f64 / secs,
            us(lat.p50),
            us(lat.p99)
        );
        return Ok(());
    }
    let quick = args.iter().any(|a| a == "--quick");
    // `--only SECTION` (inproc, levers, http, lanes, auth, floor, sides,
    // languages, stdio, startup, memory, replicas) runs
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
    let auth = if run("auth") {
        eprintln!("== authorization: no token, a static token, JWTs");
        auth::run(&paths, budget(1.5))
    } else {
        skipped()
    };
    if let Err(err) = &auth {
        eprintln!("   auth: {err:#}");
    }
    probe("after the lanes and authorization")?;
    let floor = if run("floor") {
        eprintln!("== the unsandboxed floor (rmcp, native add)");
        floor::run(&paths, budget(2.0))
    } else {
        skipped()
    };
    if let Err(err) = &floor {
        eprintln!("   floor: {err:#}");
    }
    let sides = if run("sides") {
        eprintln!("== what confinement and telemetry cost a call (beside the floor)");
        sides::run(&paths, budget(2.0))
    } else {
        skipped()
    };
    if let Err(err) = &sides {
        eprintln!("   sides: {err:#}");
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
        auth: auth.ok(),
        floor: floor.ok(),
        sides: sides.ok(),
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
        if let Some(auth) = &report.auth {
            print!("{}", auth::section(Some(auth)));
        }
        if let Some(rows) = &report.floor {
            print!("{}", floor::table(rows));
        }
        if let Some(rows) = &report.sides {
            print!("{}", sides::section(Some(rows)));
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
        ("/rpc add", "/rpc", None, RPC_ADD),
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
