//! The unsandboxed floor (`--only floor`): the bench's `add` served by
//! `airlock serve` (a fresh instance per call, in the sandbox) and by
//! `airlock-floor` (the same function in native Rust behind the official
//! MCP SDK, `rmcp`, in its recommended Streamable HTTP configuration; see
//! `bench/floor/`), the same load generator against both, at 1, 16 and 64
//! connections, rounds interleaved; medians of the rounds and the ratio
//! airlock ÷ native of each. A third server is `airlock serve` with every
//! default (no policy, the default `--max-calls`), which is what a user
//! gets: at 64 connections its calls wait for the tool's 16 places rather
//! than being refused. A fourth is `airlock serve` as the first but with
//! every call handed to a lane (`AIRLOCK_INLINE=0`): what running short
//! calls inline on an idle server does.

use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result};

use crate::net::{self, Load};
use crate::{CALL_ADD, Paths};

/// How many times each server is measured, interleaved with the other.
const ROUNDS: usize = 5;
const CONCURRENCY: [usize; 3] = [1, 16, 64];

/// The medians of one server at one concurrency.
#[derive(Clone, Copy, Default)]
pub struct Side {
    pub per_sec: f64,
    pub p50: f64,
    pub p99: f64,
    pub cpu_us: f64,
    pub errors: u64,
}

pub struct Row {
    pub concurrency: usize,
    /// With the bench's policy and `--max-calls 1024`, as every other
    /// HTTP measurement.
    pub airlock: Side,
    /// As `airlock`, but no call runs inline (`AIRLOCK_INLINE=0`).
    pub lanes: Side,
    /// With no policy and no flags.
    pub defaults: Side,
    pub native: Side,
}

/// Where the native server's binary is built (`cargo xtask bench`).
pub(crate) fn binary(paths: &Paths) -> std::path::PathBuf {
    paths.root.join("target/floor/release/airlock-floor")
}

/// Both servers, [`ROUNDS`] rounds, each round a fresh process of each.
pub fn run(paths: &Paths, budget: Duration) -> Result<Vec<Row>> {
    let native = binary(paths);
    if !native.is_file() {
        anyhow::bail!("{} is missing; run `cargo xtask bench`", native.display());
    }
    let policy = paths.policy.to_string_lossy().to_string();
    let wasm = paths.wasm.to_string_lossy().to_string();
    // runs[server][concurrency] = one Load per round.
    let mut runs = vec![vec![Vec::new(); CONCURRENCY.len()]; 4];
    let names = [
        "airlock",
        "airlock, every call on a lane",
        "airlock with its defaults",
        "native",
    ];
    for round in 1..=ROUNDS {
        for (side, name) in names.iter().enumerate() {
            eprintln!("   round {round}: {name}");
            let bench_args = ["--policy", &policy, &wasm];
            let server = match side {
                0 => net::serve(&paths.airlock, &paths.cache, &bench_args)?,
                1 => net::serve_with(
                    &paths.airlock,
                    &paths.cache,
                    &bench_args,
                    &[(airlock::lanes::INLINE_VAR, "0")],
                )?,
                2 => {
                    let mut defaults = net::serve_command(&paths.airlock, &paths.cache);
                    defaults.arg(&wasm);
                    net::listening(defaults)?
                }
                _ => net::listening(Command::new(&native))?,
            };
            let session = net::mcp_session(&server.addr)
                .with_context(|| format!("{name}: opening a session"))?;
            for (i, c) in CONCURRENCY.into_iter().enumerate() {
                let load = net::load(
                    &server.addr,
                    "/mcp",
                    Some(&session),
                    CALL_ADD,
                    c,
                    budget,
                    &[server.pid()],
                )?;
                runs[side][i].push(load);
            }
        }
    }
    Ok(CONCURRENCY
        .into_iter()
        .enumerate()
        .map(|(i, concurrency)| Row {
            concurrency,
            airlock: medians(&runs[0][i]),
            lanes: medians(&runs[1][i]),
            defaults: medians(&runs[2][i]),
            native: medians(&runs[3][i]),
        })
        .collect())
}

pub fn medians(loads: &[Load]) -> Side {
    let median = |v: Vec<f64>| crate::median(&v).unwrap_or(f64::NAN);
    Side {
        per_sec: median(loads.iter().map(|l| l.per_sec).collect()),
        p50: median(loads.iter().map(|l| l.lat.p50).collect()),
        p99: median(loads.iter().map(|l| l.lat.p99).collect()),
        cpu_us: median(
            loads
                .iter()
                .filter_map(|l| l.server)
                .map(|c| c.cpu_us)
                .collect(),
        ),
        errors: loads.iter().map(|l| l.errors).sum(),
    }
}

/// The section of BENCHMARKS.md.
pub fn section(rows: Option<&[Row]>) -> String {
    let mut md = String::from("\n## The unsandboxed floor\n\n");
    match rows {
        Some(rows) => {
            md.push_str(
                "`tools/call add` over HTTP against `airlock serve` (the bench component, a \
                 fresh instance per call) and against `airlock-floor` (`bench/floor/`: the \
                 same `add` as a native Rust function behind the official MCP Rust SDK, \
                 `rmcp` 3.11, its Streamable HTTP server with the default configuration \
                 and a local session manager, as its examples set it up), with the same \
                 load generator and an MCP 2025-06-18 session each; a fresh server per \
                 round, the servers interleaved, 5 rounds. Medians of the rounds; ÷ is \
                 airlock ÷ native (above 1 is better for calls/s, below 1 is better for the \
                 rest). airlock runs with the bench's policy and `--max-calls 1024`, as in \
                 the other sections. A short call on an otherwise idle server runs on the \
                 async thread that received it (docs/performance.md); the column \
                 \"every call on a lane\" is the same server with that off \
                 (`AIRLOCK_INLINE=0`). The last column is `airlock serve` with every \
                 default (no policy: 16 calls of a tool at once, 64 waiting; `--max-calls` \
                 64), where an error would be a call refused as busy.\n\n",
            );
            md.push_str(&table(rows));
        }
        None => md.push_str("Not measured in this run (see the suite's output).\n"),
    }
    md
}

/// The row of the Targets table: one connection at the native floor.
pub fn target(rows: Option<&[Row]>) -> (String, String, Option<bool>) {
    let single = rows.into_iter().flatten().find(|r| r.concurrency == 1);
    (
        "tools/call at c=1 at or below the native floor (p50 and p99)".to_string(),
        single.map_or("not measured".into(), |r| {
            format!(
                "p50 {:.0} µs vs {:.0} µs ({:.2}×), p99 {:.0} µs vs {:.0} µs ({:.2}×)",
                r.airlock.p50,
                r.native.p50,
                r.airlock.p50 / r.native.p50,
                r.airlock.p99,
                r.native.p99,
                r.airlock.p99 / r.native.p99
            )
        }),
        single.map(|r| r.airlock.p50 <= r.native.p50 && r.airlock.p99 <= r.native.p99),
    )
}

/// The section's table.
pub fn table(rows: &[Row]) -> String {
    let mut out = String::from(
        "| connections | calls/s airlock / native | ÷ | p50 airlock / native | ÷ | p99 airlock / native | ÷ | server CPU per call airlock / native | ÷ | errors | every call on a lane: calls/s, p50, p99 | airlock with its defaults: calls/s, p99, errors |\n\
         | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    // "airlock / native | airlock ÷ native"
    let pair = |a: f64, n: f64, digits: usize, unit: &str| {
        format!("{a:.digits$}{unit} / {n:.digits$}{unit} | {:.2}×", a / n)
    };
    for r in rows {
        let (a, l, d, n) = (&r.airlock, &r.lanes, &r.defaults, &r.native);
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} / {} | {:.0}, {:.0} µs, {:.0} µs | {:.0}, {:.0} µs, {} |\n",
            r.concurrency,
            pair(a.per_sec, n.per_sec, 0, ""),
            pair(a.p50, n.p50, 0, " µs"),
            pair(a.p99, n.p99, 0, " µs"),
            pair(a.cpu_us, n.cpu_us, 1, " µs"),
            a.errors,
            n.errors,
            l.per_sec,
            l.p50,
            l.p99,
            d.per_sec,
            d.p99,
            d.errors,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_puts_airlock_beside_native_with_their_ratio() {
        let side = |per_sec, p50, cpu_us| Side {
            per_sec,
            p50,
            p99: 2.0 * p50,
            cpu_us,
            errors: 0,
        };
        let rows = [Row {
            concurrency: 1,
            airlock: side(5000.0, 200.0, 150.0),
            lanes: side(4000.0, 250.0, 150.0),
            defaults: side(4900.0, 210.0, 150.0),
            native: side(8000.0, 100.0, 100.0),
        }];
        let md = section(Some(&rows));
        assert!(
            md.contains("| 1 | 5000 / 8000 | 0.62× | 200 µs / 100 µs | 2.00× |"),
            "{md}"
        );
        assert!(
            md.contains("| 0 / 0 | 4000, 250 µs, 500 µs | 4900, 420 µs, 0 |"),
            "the lanes-only and defaults columns: {md}"
        );
        let (_, measured, met) = target(Some(&rows));
        assert_eq!(met, Some(false));
        assert!(
            measured.starts_with("p50 200 µs vs 100 µs (2.00×)"),
            "{measured}"
        );
        assert!(section(None).contains("Not measured"));
    }
}
