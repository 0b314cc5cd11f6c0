//! The unsandboxed floor (`--only floor`): the bench's `add` served by
//! `airlock serve` (a fresh instance per call, in the sandbox) and by
//! `airlock-floor` (the same function in native Rust behind the official
//! MCP SDK, `rmcp`, in its recommended Streamable HTTP configuration; see
//! `bench/floor/`), the same load generator against both, at 1, 16 and 64
//! connections, rounds interleaved; medians of the rounds and the ratio
//! airlock ÷ native of each.

use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result};

use crate::net::{self, Load};
use crate::{CALL_ADD, Paths};

/// How many times each server is measured, interleaved with the other.
const ROUNDS: usize = 5;
pub const CONCURRENCY: [usize; 3] = [1, 16, 64];

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
    pub airlock: Side,
    pub native: Side,
}

/// Where the native server's binary is built (`cargo xtask bench`).
pub fn binary(paths: &Paths) -> std::path::PathBuf {
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
    let mut runs = vec![vec![Vec::new(); CONCURRENCY.len()]; 2];
    for round in 1..=ROUNDS {
        for (side, name) in ["airlock", "native"].iter().enumerate() {
            eprintln!("   round {round}: {name}");
            let server = match side {
                0 => net::serve(&paths.airlock, &paths.cache, &["--policy", &policy, &wasm])?,
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
            native: medians(&runs[1][i]),
        })
        .collect())
}

fn medians(loads: &[Load]) -> Side {
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

/// The section's table.
pub fn table(rows: &[Row]) -> String {
    let mut out = String::from(
        "| connections | calls/s airlock / native | ÷ | p50 airlock / native | ÷ | p99 airlock / native | ÷ | server CPU per call airlock / native | ÷ | errors |\n\
         | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    // "airlock / native | airlock ÷ native"
    let pair = |a: f64, n: f64, digits: usize, unit: &str| {
        format!("{a:.digits$}{unit} / {n:.digits$}{unit} | {:.2}×", a / n)
    };
    for r in rows {
        let (a, n) = (&r.airlock, &r.native);
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} / {} |\n",
            r.concurrency,
            pair(a.per_sec, n.per_sec, 0, ""),
            pair(a.p50, n.p50, 0, " µs"),
            pair(a.p99, n.p99, 0, " µs"),
            pair(a.cpu_us, n.cpu_us, 1, " µs"),
            a.errors,
            n.errors,
        ));
    }
    out
}
