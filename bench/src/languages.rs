//! Guests of each language (`--only languages`): the Rust, Python and
//! JavaScript examples side by side, per call in process (to the answer,
//! with the page faults a call costs), over HTTP (`tools/call` at 1 and 16
//! connections), and the time from nothing to the first answer
//! (`airlock call` with an empty compile cache, and with a warm one). The
//! Python guest is also measured against its unsandboxed peer: the same
//! tool behind the official MCP Python SDK (`bench/python/sdk_server.py`),
//! the two servers interleaved in the same run.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::floor::{Side, medians};
use crate::net::{self, Load};
use crate::stats::{Stats, stats};
use crate::{Paths, inproc};

/// How many times the Python guest and its unsandboxed peer are measured,
/// interleaved.
const PEER_ROUNDS: usize = 3;
/// The connections of the comparison with the peer.
const PEER_CONCURRENCY: [usize; 2] = [1, 16];
/// The Python of the pinned clients' venv (`cargo xtask test` makes it),
/// where the official MCP Python SDK is installed.
const PEER_PYTHON: &str = "target/clients/venv/bin/python";
const PEER_SERVER: &str = "bench/python/sdk_server.py";

/// One language's example: where it is built, its tool and arguments.
pub struct Guest {
    pub label: &'static str,
    pub file: &'static str,
    pub tool: &'static str,
    pub args: Value,
}

pub fn guests() -> Vec<Guest> {
    vec![
        Guest {
            label: "Rust (`export.wasm`, airlock SDK)",
            file: "target/components/export.wasm",
            tool: "export_orders",
            args: json!({"customer_id": "CUST-42"}),
        },
        Guest {
            label: "Python (`shipping.wasm`, componentize-py)",
            file: "target/examples/shipping.wasm",
            tool: "shipping_quote",
            args: json!({"destination": "eu", "weight_kg": 2}),
        },
        Guest {
            label: "JavaScript (`wordstats.wasm`, jco, QuickJS)",
            file: "target/examples/wordstats.wasm",
            tool: "word_stats",
            args: json!({"text": "the cat and the hat"}),
        },
    ]
}

pub struct Row {
    pub label: &'static str,
    pub bytes: u64,
    /// Fresh instance to the delivered answer, in process.
    pub inproc: Stats,
    /// Calls per second on one thread, teardown included.
    pub inproc_per_sec: f64,
    /// Minor page faults of this process per call.
    pub faults: f64,
    /// `tools/call` over HTTP at 1 and 16 connections.
    pub http: [Load; 2],
    /// `airlock call` from spawn to exit: empty cache, then warm (median).
    pub cold: Duration,
    pub warm: Duration,
    /// The Python guest only: it and its unsandboxed peer over HTTP.
    pub peer: Option<Peer>,
}

/// The Python guest served by `airlock serve` and the same tool served by
/// the official MCP Python SDK, no sandbox: medians of the interleaved
/// rounds at 1 and 16 connections.
pub struct Peer {
    pub airlock: [Side; 2],
    pub sdk: [Side; 2],
    /// Why the peer was not measured (no venv), if it was not.
    pub missing: Option<String>,
}

/// This process's minor page faults so far (`/proc/self/stat`, field 10).
pub fn minor_faults() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(7)?
        .parse()
        .ok()
}

fn airlock_call(paths: &Paths, cache: &Path, guest: &Guest, file: &Path) -> Result<Duration> {
    let started = Instant::now();
    let out = Command::new(&paths.airlock)
        .arg("call")
        .arg(file)
        .arg(guest.tool)
        .arg("--args")
        .arg(guest.args.to_string())
        .env("AIRLOCK_CACHE_DIR", cache)
        .stdin(Stdio::null())
        .output()
        .context("airlock call")?;
    let took = started.elapsed();
    if !out.status.success() {
        bail!(
            "airlock call {} failed: {}",
            guest.tool,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(took)
}

pub fn run(paths: &Paths, budget: Duration, warm_runs: usize) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    for guest in guests() {
        let file: PathBuf = paths.root.join(guest.file);
        if !file.is_file() {
            bail!("{} is missing; run `cargo xtask bench`", file.display());
        }
        eprintln!("   {}", guest.label);
        // Cold first: a cache of its own, empty.
        let cache = paths.tmp.join(format!("cache-{}", guest.tool));
        let _ = std::fs::remove_dir_all(&cache);
        let cold = airlock_call(paths, &cache, &guest, &file)?;
        let mut warm: Vec<Duration> = (0..warm_runs)
            .map(|_| airlock_call(paths, &cache, &guest, &file))
            .collect::<Result<_>>()?;
        warm.sort();
        let warm = warm.get(warm.len() / 2).copied().unwrap_or_default();

        let runtime = inproc::runtime(&file, &cache, 64, None)?;
        let faults_before = minor_faults();
        let started = Instant::now();
        let answered = inproc::repeat_with(&runtime, guest.tool, &guest.args, budget)?;
        let elapsed = started.elapsed().as_secs_f64();
        let calls = answered.len() as f64;
        let faults = match (faults_before, minor_faults()) {
            (Some(a), Some(b)) => (b - a) as f64 / calls,
            _ => f64::NAN,
        };
        drop(runtime);

        let policy = paths.policy.to_string_lossy().to_string();
        let wasm = file.to_string_lossy().to_string();
        let server = net::serve(&paths.airlock, &cache, &["--policy", &policy, &wasm])?;
        let session = net::mcp_session(&server.addr)?;
        let body = json!({
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": guest.tool, "arguments": guest.args},
        })
        .to_string();
        let mut http = [Load::default(); 2];
        for (slot, c) in http.iter_mut().zip([1, 16]) {
            *slot = net::load(
                &server.addr,
                "/mcp",
                Some(&session),
                &body,
                c,
                budget,
                &[server.pid()],
            )?;
        }
        drop(server);
        let peer = match guest.label.contains("shipping") {
            true => Some(peer(paths, &cache, &guest, &file, &body, budget)?),
            false => None,
        };
        rows.push(Row {
            label: guest.label,
            bytes: std::fs::metadata(&file).map_or(0, |m| m.len()),
            inproc_per_sec: calls / elapsed,
            inproc: stats(answered),
            faults,
            http,
            cold,
            warm,
            peer,
        });
    }
    Ok(rows)
}

/// The Python guest over HTTP against the official MCP Python SDK serving
/// the same tool unsandboxed, [`PEER_ROUNDS`] rounds, a fresh process of
/// each per round, the two interleaved.
fn peer(
    paths: &Paths,
    cache: &Path,
    guest: &Guest,
    file: &Path,
    body: &str,
    budget: Duration,
) -> Result<Peer> {
    let python = paths.root.join(PEER_PYTHON);
    if !python.is_file() {
        return Ok(Peer {
            airlock: Default::default(),
            sdk: Default::default(),
            missing: Some(format!(
                "{} is missing (`cargo xtask test` installs the pinned clients' venv)",
                python.display()
            )),
        });
    }
    let policy = paths.policy.to_string_lossy().to_string();
    let wasm = file.to_string_lossy().to_string();
    // runs[side][connections]: one Load per round.
    let mut runs = vec![vec![Vec::new(); PEER_CONCURRENCY.len()]; 2];
    for round in 1..=PEER_ROUNDS {
        for side in 0..2 {
            eprintln!(
                "   round {round}: {} {}",
                guest.tool,
                ["airlock", "the Python SDK"][side]
            );
            let server = match side {
                0 => net::serve(&paths.airlock, cache, &["--policy", &policy, &wasm])?,
                _ => {
                    let mut sdk = Command::new(&python);
                    sdk.arg(paths.root.join(PEER_SERVER));
                    net::listening(sdk)?
                }
            };
            let session = net::mcp_session(&server.addr)?;
            for (i, c) in PEER_CONCURRENCY.into_iter().enumerate() {
                let load = net::load(
                    &server.addr,
                    "/mcp",
                    Some(&session),
                    body,
                    c,
                    budget,
                    &[server.pid()],
                )?;
                runs[side][i].push(load);
            }
        }
    }
    let side = |s: usize| [medians(&runs[s][0]), medians(&runs[s][1])];
    Ok(Peer {
        airlock: side(0),
        sdk: side(1),
        missing: None,
    })
}

/// The section of BENCHMARKS.md.
pub fn section(rows: Option<&[Row]>) -> String {
    let mut md = String::from("\n## Guests of each language\n\n");
    match rows {
        Some(rows) => {
            md.push_str(
                "The examples of each language (`cargo xtask bench` builds them): in \
                 process, a fresh instance per call to the delivered answer on one thread \
                 (calls/s include the teardown; page faults are this process's minor faults \
                 per call, what resetting and re-touching the guest's memory costs); over \
                 HTTP, `tools/call` to `airlock serve`; the first answer is `airlock call` \
                 from spawn to exit, with an empty compile cache (the compile: quick-tier \
                 code for a guest of 1 MiB or more, see docs/serving.md, tiered compilation) \
                 and then with the cache warm (median of the warm runs).\n\n",
            );
            md.push_str(&table(rows));
        }
        None => md.push_str("Not measured in this run (see the suite's output).\n"),
    }
    md
}

/// The Python guest against its unsandboxed peer.
fn peer_section(peer: &Peer) -> String {
    let mut md = String::from(
        "\nThe Python guest against the official MCP Python SDK (`mcp`, as pinned in \
         `tests/clients/requirements.txt`) serving the same `shipping_quote` \
         (`bench/python/sdk_server.py`: the example's function body, `MCPServer` with \
         its Streamable HTTP app under uvicorn's defaults, one process, no sandbox), \
         with the same load generator and `tools/call` request; a fresh server per \
         round, the two interleaved, 3 rounds, medians of the rounds; ÷ is airlock ÷ \
         the SDK (above 1 is better for calls/s, below 1 for the rest).\n\n",
    );
    if let Some(why) = &peer.missing {
        md.push_str(&format!("Not measured: {why}.\n"));
        return md;
    }
    md.push_str(&peer_table(peer));
    md
}

/// The comparison's table.
fn peer_table(peer: &Peer) -> String {
    let mut out = String::from(
        "| connections | calls/s airlock / Python SDK | ÷ | p50 airlock / Python SDK | ÷ | p99 airlock / Python SDK | server CPU per call airlock / Python SDK | errors |\n\
         | --- | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    for (i, c) in PEER_CONCURRENCY.into_iter().enumerate() {
        let (a, p) = (peer.airlock[i], peer.sdk[i]);
        out.push_str(&format!(
            "| {c} | {:.0} / {:.0} | {:.2}× | {:.0} µs / {:.0} µs | {:.2}× | {:.0} µs / {:.0} µs | {:.0} µs / {:.0} µs | {} / {} |\n",
            a.per_sec,
            p.per_sec,
            a.per_sec / p.per_sec,
            a.p50,
            p.p50,
            a.p50 / p.p50,
            a.p99,
            p.p99,
            a.cpu_us,
            p.cpu_us,
            a.errors,
            p.errors,
        ));
    }
    out
}

/// The rows of the Targets table: the first answer of a cold Python
/// component, and a fresh call of the Python and the QuickJS guest in
/// process.
pub fn targets(rows: Option<&[Row]>) -> Vec<(String, String, Option<bool>)> {
    let python = rows
        .into_iter()
        .flatten()
        .find(|r| r.label.contains("shipping"));
    let cold = (
        "cold Python component's first answer ≤ 2 s".to_string(),
        python.map_or("not measured".into(), |r| {
            format!(
                "{:.2} s (`airlock call`, empty cache)",
                r.cold.as_secs_f64()
            )
        }),
        python.map(|r| r.cold.as_secs_f64() <= 2.0),
    );
    let per_call = [
        ("Python", "shipping", 1000.0),
        ("QuickJS", "wordstats", 300.0),
    ]
    .into_iter()
    .map(|(language, file, target_us)| {
        let row = rows.into_iter().flatten().find(|r| r.label.contains(file));
        (
            format!(
                "{language} fresh-instance call p50 ≤ {} ms in process",
                target_us / 1000.0
            ),
            row.map_or("not measured".into(), |r| {
                format!(
                    "{:.0} µs ({:.0} page faults per call)",
                    r.inproc.p50, r.faults
                )
            }),
            row.map(|r| r.inproc.p50 <= target_us),
        )
    });
    let peer = python.and_then(|r| r.peer.as_ref());
    let at_16 = peer
        .filter(|p| p.missing.is_none())
        .map(|p| (p.airlock[1], p.sdk[1]));
    let versus = (
        "Python guest's calls/s at c=16 over HTTP ≥ the unsandboxed Python SDK's".to_string(),
        at_16.map_or("not measured".into(), |(a, p)| {
            format!(
                "{:.0}/s against {:.0}/s ({:.2}×; medians of {PEER_ROUNDS} interleaved rounds)",
                a.per_sec,
                p.per_sec,
                a.per_sec / p.per_sec
            )
        }),
        at_16.map(|(a, p)| a.per_sec >= p.per_sec),
    );
    std::iter::once(cold)
        .chain(per_call)
        .chain(std::iter::once(versus))
        .collect()
}

/// The section's table, and the Python guest against its peer.
pub fn table(rows: &[Row]) -> String {
    let mut out = guests_table(rows);
    if let Some(peer) = rows.iter().find_map(|r| r.peer.as_ref()) {
        out.push_str(&peer_section(peer));
    }
    out
}

fn guests_table(rows: &[Row]) -> String {
    let mut out = String::from(
        "| guest | size | in process p50 / p99 | calls/s, 1 thread | page faults / call | HTTP c=1 p50 / p99 | HTTP c=16 calls/s | server CPU / call (c=16) | first answer, cache empty | … cache warm |\n\
         | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    for r in rows {
        let ms = |d: Duration| format!("{:.0} ms", d.as_secs_f64() * 1e3);
        out.push_str(&format!(
            "| {} | {:.1} MB | {:.0} µs / {:.0} µs | {:.0} | {:.0} | {:.0} µs / {:.0} µs | {:.0} | {} | {} | {} |\n",
            r.label,
            r.bytes as f64 / 1e6,
            r.inproc.p50,
            r.inproc.p99,
            r.inproc_per_sec,
            r.faults,
            r.http[0].lat.p50,
            r.http[0].lat.p99,
            r.http[1].per_sec,
            r.http[1]
                .server
                .map_or("–".into(), |c| format!("{:.0} µs", c.cpu_us)),
            ms(r.cold),
            ms(r.warm),
        ));
    }
    out
}
