//! What a serving feature costs a call (`--only sides`): `tools/call add`
//! over HTTP against servers that differ in one thing — the native floor
//! (`airlock-floor`, rmcp), `airlock serve` as shipped (confined, no
//! export), `--no-confine` (#45), and OTLP export on with every call
//! sampled and with 1 % sampled (#47) — the servers interleaved round by
//! round, a fresh process each, medians of the rounds. Each side is one
//! row of [`SIDES`]; "two cordons" (#45 §2) serves the bench component
//! in one cordon's worker and the catalog in another's, and counts the
//! workers' CPU with the server's.
//!
//! The export goes to [`Sink`], a collector stand-in on a thread of the
//! bench that reads each OTLP/HTTP request whole and answers 200 with an
//! empty export response (what a collector says to a good batch), so the
//! server pays for building, encoding and sending its spans and metrics,
//! and nothing is paid for decoding them.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};

use crate::floor::{Side, medians};
use crate::net::{self, Load};
use crate::{CALL_ADD, Paths};

/// How many times each side is measured, interleaved with the others.
const ROUNDS: usize = 5;
const ALL: &[usize] = &[1, 16, 64];
const SIXTEEN: &[usize] = &[16];

/// How a side's server is started.
pub enum Launch {
    /// The same `add` in native Rust behind rmcp (`bench/floor/`).
    Native,
    /// `airlock serve` with the bench's policy and `--max-calls 1024` (as
    /// every HTTP measurement), plus `flags` and `env`; `policy` is TOML
    /// added to the bench's policy (e.g. `[components.bench]` with `cordon
    /// = "NAME"`); with `export`, OTLP export to the bench's [`Sink`]
    /// (`--otlp-endpoint`); `extra` are more components to serve (paths
    /// under the workspace). Its server's CPU counts its cordons' workers.
    Airlock {
        flags: &'static [&'static str],
        env: &'static [(&'static str, &'static str)],
        policy: &'static str,
        export: bool,
        extra: &'static [&'static str],
    },
}

/// One server measured: its label, how it starts, at which connections.
pub struct SideSpec {
    pub label: &'static str,
    pub launch: Launch,
    pub concurrency: &'static [usize],
}

/// The label of the side the others are compared with (airlock as
/// shipped); the native floor is compared with too.
const SHIPPED: &str = "airlock serve (confined, export off)";

/// The sides the Targets table compares.
const NATIVE: &str = "native floor (rmcp)";
const UNCONFINED: &str = "airlock serve --no-confine";
const CORDONS: &str = "two cordons (add in a worker process)";

/// The sides, in the table's order. A side added here is measured in the
/// same rounds and shown beside the others.
pub const SIDES: &[SideSpec] = &[
    SideSpec {
        label: NATIVE,
        launch: Launch::Native,
        concurrency: ALL,
    },
    SideSpec {
        label: SHIPPED,
        launch: Launch::Airlock {
            flags: &[],
            env: &[],
            policy: "",
            export: false,
            extra: &[],
        },
        concurrency: ALL,
    },
    SideSpec {
        label: UNCONFINED,
        launch: Launch::Airlock {
            flags: &["--no-confine"],
            env: &[],
            policy: "",
            export: false,
            extra: &[],
        },
        concurrency: ALL,
    },
    SideSpec {
        label: CORDONS,
        launch: Launch::Airlock {
            flags: &[],
            env: &[],
            policy: "[components.bench]\ncordon = \"one\"\n[components.catalog]\ncordon = \"two\"\n",
            export: false,
            extra: &["target/components/catalog.wasm"],
        },
        concurrency: ALL,
    },
    SideSpec {
        label: "OTLP export on, every call sampled",
        launch: Launch::Airlock {
            flags: &[],
            env: &[("OTEL_TRACES_SAMPLER", "always_on")],
            policy: "",
            export: true,
            extra: &[],
        },
        concurrency: SIXTEEN,
    },
    SideSpec {
        label: "OTLP export on, 1 % of calls sampled",
        launch: Launch::Airlock {
            flags: &[],
            env: &[
                ("OTEL_TRACES_SAMPLER", "parentbased_traceidratio"),
                ("OTEL_TRACES_SAMPLER_ARG", "0.01"),
            ],
            policy: "",
            export: true,
            extra: &[],
        },
        concurrency: SIXTEEN,
    },
];

/// One side at one concurrency: the medians of its rounds.
pub struct Row {
    pub label: &'static str,
    pub concurrency: usize,
    pub side: Side,
    /// OTLP requests the sink received from this side, over all rounds.
    pub exports: Option<u64>,
}

/// Every side of [`SIDES`], [`ROUNDS`] rounds, each round a fresh process
/// of each.
pub fn run(paths: &Paths, budget: Duration) -> Result<Vec<Row>> {
    let native = crate::floor::binary(paths);
    if !native.is_file() {
        anyhow::bail!("{} is missing; run `cargo xtask bench`", native.display());
    }
    let policy = paths.policy.to_string_lossy().to_string();
    let wasm = paths.wasm.to_string_lossy().to_string();
    // runs[side][concurrency] = one Load per round.
    let mut runs: Vec<Vec<Vec<Load>>> = SIDES
        .iter()
        .map(|s| vec![Vec::new(); s.concurrency.len()])
        .collect();
    let mut exports: Vec<Option<u64>> = vec![None; SIDES.len()];
    for round in 1..=ROUNDS {
        for (i, spec) in SIDES.iter().enumerate() {
            eprintln!("   round {round}: {}", spec.label);
            let mut sink = None;
            let server = match &spec.launch {
                Launch::Native => net::listening(Command::new(&native))?,
                Launch::Airlock {
                    flags,
                    env,
                    policy: added,
                    export,
                    extra,
                } => {
                    let mut args: Vec<String> = flags.iter().map(|f| f.to_string()).collect();
                    if *export {
                        let started = Sink::start()?;
                        args.extend(["--otlp-endpoint".to_string(), started.url()]);
                        sink = Some(started);
                    }
                    let policy = match added.is_empty() {
                        true => policy.clone(),
                        false => {
                            let own = paths.tmp.join(format!("sides-{i}.toml"));
                            std::fs::write(&own, format!("{}\n{added}", crate::inproc::POLICY))?;
                            own.to_string_lossy().into_owned()
                        }
                    };
                    args.extend(["--policy".to_string(), policy, wasm.clone()]);
                    args.extend(
                        extra
                            .iter()
                            .map(|e| paths.root.join(e).display().to_string()),
                    );
                    let args: Vec<&str> = args.iter().map(String::as_str).collect();
                    net::serve_with(&paths.airlock, &paths.cache, &args, env)?
                }
            };
            let session = net::mcp_session(&server.addr)
                .with_context(|| format!("{}: opening a session", spec.label))?;
            // The server, its launcher and its cordons' workers (the
            // launcher's children), whose CPU a call spends too.
            let pids: Vec<u32> = std::iter::once(server.pid())
                .chain(descendants(server.pid()))
                .collect();
            for (j, &c) in spec.concurrency.iter().enumerate() {
                let load = net::load(
                    &server.addr,
                    "/mcp",
                    Some(&session),
                    CALL_ADD,
                    c,
                    budget,
                    &pids,
                )?;
                runs[i][j].push(load);
            }
            if let Some(sink) = sink {
                *exports[i].get_or_insert(0) += sink.received();
            }
        }
    }
    let mut rows = Vec::new();
    for ((spec, runs), exports) in SIDES.iter().zip(&runs).zip(exports) {
        for (&concurrency, loads) in spec.concurrency.iter().zip(runs) {
            rows.push(Row {
                label: spec.label,
                concurrency,
                side: medians(loads),
                exports,
            });
        }
    }
    Ok(rows)
}

/// The processes `pid` started, and theirs, and so on.
fn descendants(pid: u32) -> Vec<u32> {
    let mut found = children(pid);
    let mut at = 0;
    while at < found.len() {
        let more = children(found[at]);
        found.extend(more);
        at += 1;
    }
    found
}

/// The processes `pid` started.
fn children(pid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| {
            let child: u32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{child}/stat")).ok()?;
            // `pid (comm) state ppid …`; comm may hold spaces, not `)`.
            let parent: u32 = stat
                .rsplit_once(')')?
                .1
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()?;
            (parent == pid).then_some(child)
        })
        .collect()
}

/// A collector stand-in: counts the requests it receives, answers each
/// with 200 and an empty OTLP export response.
struct Sink {
    port: u16,
    received: Arc<AtomicU64>,
}

impl Sink {
    fn start() -> Result<Sink> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let received = Arc::new(AtomicU64::new(0));
        let count = received.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let count = count.clone();
                std::thread::spawn(move || {
                    let _ = answer(stream, &count);
                });
            }
        });
        Ok(Sink { port, received })
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn received(&self) -> u64 {
        self.received.load(Ordering::Relaxed)
    }
}

/// Reads requests on one connection (head, then `content-length` bytes)
/// and answers each; returns when the client closes it.
fn answer(mut stream: TcpStream, count: &AtomicU64) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 64 * 1024];
    loop {
        let end = loop {
            if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break at + 4;
            }
            let n = stream.read(&mut chunk)?;
            if n == 0 {
                return Ok(());
            }
            buf.extend_from_slice(&chunk[..n]);
        };
        let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        while buf.len() < end + length {
            let n = stream.read(&mut chunk)?;
            if n == 0 {
                return Ok(());
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        buf.drain(..end + length);
        count.fetch_add(1, Ordering::Relaxed);
        stream.write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n",
        )?;
    }
}

/// The rows of the Targets table (#45): confinement costs nothing
/// measurable on a call (server CPU per call within 5 % of `--no-confine`
/// at every concurrency), and with cordons airlock is at or above the
/// native floor's calls/s at 16 and 64 connections.
pub fn targets(rows: Option<&[Row]>) -> Vec<(String, String, Option<bool>)> {
    let find = |label: &str, c: usize| {
        let rows = rows.unwrap_or_default();
        rows.iter()
            .find(|r| r.label == label && r.concurrency == c)
            .map(|r| r.side)
    };
    let pairs = |label: &str, against: &str, concurrency: &[usize]| -> Vec<(usize, f64, f64)> {
        concurrency
            .iter()
            .filter_map(|&c| {
                let (a, b) = (find(label, c)?, find(against, c)?);
                Some((c, a.per_sec / b.per_sec, a.cpu_us / b.cpu_us))
            })
            .collect()
    };
    let confined = pairs(SHIPPED, UNCONFINED, ALL);
    let cordoned = pairs(CORDONS, NATIVE, &[16, 64]);
    let said = |pairs: &[(usize, f64, f64)], what: fn(&(usize, f64, f64)) -> String| match pairs
        .is_empty()
    {
        true => "not measured".to_string(),
        false => pairs.iter().map(what).collect::<Vec<_>>().join(", "),
    };
    vec![
        (
            "confinement costs nothing measurable on a call (server CPU per call)".to_string(),
            said(&confined, |(c, _, cpu)| {
                format!("c={c} {cpu:.2}× the CPU per call of `--no-confine`")
            }) + " (`--only sides`)",
            (!confined.is_empty()).then(|| confined.iter().all(|(_, _, cpu)| *cpu <= 1.05)),
        ),
        (
            "with cordons, calls/s at or above the native floor at c=16 and c=64".to_string(),
            said(&cordoned, |(c, rate, _)| format!("c={c} {rate:.2}×"))
                + " (\"two cordons\", `--only sides`)",
            (!cordoned.is_empty()).then(|| cordoned.iter().all(|(_, rate, _)| *rate >= 1.0)),
        ),
    ]
}

/// The section of BENCHMARKS.md.
pub fn section(rows: Option<&[Row]>) -> String {
    let mut md = String::from("\n## What confinement and telemetry cost a call\n\n");
    let Some(rows) = rows else {
        md.push_str("Not measured in this run (see the suite's output).\n");
        return md;
    };
    md.push_str(
        "`tools/call add` over HTTP (an MCP 2025-06-18 session, the same load generator as \
         above) against servers that differ in one thing, a fresh process each, the servers \
         interleaved round by round, 5 rounds; medians of the rounds \
         (`cargo xtask bench --only sides`, `bench/src/sides.rs`). *native floor*: \
         `airlock-floor` (rmcp, the same `add` in native Rust; see the floor's section). \
         *airlock serve*: the bench's policy and `--max-calls 1024`, as in the other \
         sections; as shipped it confines itself (Landlock and seccomp, docs/serving.md) and \
         exports nothing; `--no-confine` is the same server unconfined. *OTLP export on*: \
         `--otlp-endpoint` to a collector stand-in on a thread of the bench (it reads each \
         request and answers 200, decoding nothing), with `OTEL_TRACES_SAMPLER=always_on` \
         (every call's spans: the `tools/call` SERVER span and its phases) or \
         `parentbased_traceidratio` with `OTEL_TRACES_SAMPLER_ARG=0.01` (as docs/deploy advises; \
         the load sends no trace context, so 1 % of the calls); the operation metric is \
         recorded for every call either way, and the SDK's batching defaults apply \
         (a full queue drops spans rather than slow calls). ÷ compares calls/s and server \
         CPU per call with the native floor and with airlock as shipped at the same \
         connections; *exports* counts the OTLP requests the stand-in received over the \
         rounds.\n\n",
    );
    md.push_str(&table(rows));
    md
}

/// The section's table.
pub fn table(rows: &[Row]) -> String {
    let mut out = String::from(
        "| server | connections | calls/s | p50 | p99 | server CPU per call | calls/s ÷ native | CPU ÷ native | calls/s ÷ shipped | CPU ÷ shipped | errors | exports |\n\
         | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    let find = |label: &str, c: usize| {
        rows.iter()
            .find(|r| r.label == label && r.concurrency == c)
            .map(|r| r.side)
    };
    let native_label = SIDES
        .iter()
        .find(|s| matches!(s.launch, Launch::Native))
        .map_or("", |s| s.label);
    let ratio = |a: f64, b: Option<f64>| b.map_or("–".to_string(), |b| format!("{:.2}×", a / b));
    for r in rows {
        let s = &r.side;
        let native = find(native_label, r.concurrency).filter(|_| r.label != native_label);
        let shipped = find(SHIPPED, r.concurrency).filter(|_| r.label != SHIPPED);
        out.push_str(&format!(
            "| {} | {} | {:.0} | {:.0} µs | {:.0} µs | {:.1} µs | {} | {} | {} | {} | {} | {} |\n",
            r.label,
            r.concurrency,
            s.per_sec,
            s.p50,
            s.p99,
            s.cpu_us,
            ratio(s.per_sec, native.map(|n| n.per_sec)),
            ratio(s.cpu_us, native.map(|n| n.cpu_us)),
            ratio(s.per_sec, shipped.map(|n| n.per_sec)),
            ratio(s.cpu_us, shipped.map(|n| n.cpu_us)),
            s.errors,
            r.exports.map_or("–".to_string(), |n| n.to_string()),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_side_is_compared_with_the_floor_and_with_airlock_as_shipped() {
        let side = |per_sec, cpu_us| Side {
            per_sec,
            p50: 100.0,
            p99: 200.0,
            cpu_us,
            errors: 0,
        };
        let rows = [
            Row {
                label: "native floor (rmcp)",
                concurrency: 16,
                side: side(20000.0, 60.0),
                exports: None,
            },
            Row {
                label: SHIPPED,
                concurrency: 16,
                side: side(30000.0, 50.0),
                exports: None,
            },
            Row {
                label: "OTLP export on, every call sampled",
                concurrency: 16,
                side: side(24000.0, 62.5),
                exports: Some(40),
            },
        ];
        let md = section(Some(&rows));
        assert!(
            md.contains("| native floor (rmcp) | 16 | 20000 | 100 µs | 200 µs | 60.0 µs | – | – | 0.67× | 1.20× | 0 | – |"),
            "{md}"
        );
        assert!(
            md.contains("| OTLP export on, every call sampled | 16 | 24000 | 100 µs | 200 µs | 62.5 µs | 1.20× | 1.04× | 0.80× | 1.25× | 0 | 40 |"),
            "{md}"
        );
        assert!(section(None).contains("Not measured"));
    }

    #[test]
    fn the_targets_ask_cordons_at_the_floor_at_16_and_64_and_confinement_free() {
        let row = |label, concurrency, per_sec, cpu_us| Row {
            label,
            concurrency,
            side: Side {
                per_sec,
                p50: 100.0,
                p99: 200.0,
                cpu_us,
                errors: 0,
            },
            exports: None,
        };
        let mut rows = vec![
            row(NATIVE, 16, 30000.0, 40.0),
            row(NATIVE, 64, 30000.0, 40.0),
            row(CORDONS, 16, 31000.0, 50.0),
            row(CORDONS, 64, 29000.0, 50.0),
            row(SHIPPED, 1, 10000.0, 70.0),
            row(UNCONFINED, 1, 10000.0, 69.0),
        ];
        let targets = targets(Some(&rows));
        assert_eq!(targets[0].2, Some(true), "{:?}", targets[0]);
        assert_eq!(
            targets[1].1,
            "c=16 1.03×, c=64 0.97× (\"two cordons\", `--only sides`)"
        );
        assert_eq!(targets[1].2, Some(false), "c=64 is under the floor");
        rows[3].side.per_sec = 30000.0;
        rows[4].side.cpu_us = 80.0;
        let targets = super::targets(Some(&rows));
        assert_eq!(targets[1].2, Some(true));
        assert_eq!(targets[0].2, Some(false), "{:?}", targets[0]);
        assert!(super::targets(None).iter().all(|t| t.2.is_none()));
    }

    #[test]
    fn a_sink_counts_and_answers_each_export_on_one_connection() {
        let sink = Sink::start().expect("sink");
        let mut stream = TcpStream::connect(("127.0.0.1", sink.port)).expect("connect");
        for body in [&b"abc"[..], &b"defgh"[..]] {
            let head = format!(
                "POST /v1/traces HTTP/1.1\r\nhost: x\r\ncontent-length: {}\r\n\r\n",
                body.len()
            );
            stream.write_all(head.as_bytes()).expect("head");
            stream.write_all(body).expect("body");
            let mut answer = [0u8; 128];
            let n = stream.read(&mut answer).expect("answer");
            assert!(answer[..n].starts_with(b"HTTP/1.1 200 OK"));
        }
        assert_eq!(sink.received(), 2);
    }
}
