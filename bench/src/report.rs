//! The report of a run: BENCHMARKS.md with its sections and charts
//! (the Targets table from [`crate::targets`]), and the one-line summary;
//! the machine's description and load that go with it.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;

use crate::machine::{command_output, machine};
use crate::svg::{self, fmt_num};
use crate::{
    CONCURRENCY, HttpRows, LANE_ROUNDS, LaneRow, Memory, Startup, auth, cost_cells, floor, inproc,
    languages, net, sides,
};

/// What one run measured, and how it is written (BENCHMARKS.md, the SVG
/// charts, the summary line).
pub(crate) struct Report {
    pub(crate) probes: Vec<inproc::Probe>,
    pub(crate) per_call: Vec<inproc::PerCall>,
    pub(crate) levers: Vec<inproc::LeverResult>,
    pub(crate) http: Option<HttpRows>,
    pub(crate) lanes: Option<Vec<LaneRow>>,
    pub(crate) auth: Option<auth::Auth>,
    pub(crate) floor: Option<Vec<floor::Row>>,
    pub(crate) sides: Option<Vec<sides::Row>>,
    pub(crate) languages: Option<Vec<languages::Row>>,
    pub(crate) stdio: Option<(f64, u64)>,
    pub(crate) startup: Option<Startup>,
    pub(crate) memory: Option<Memory>,
    pub(crate) load: (String, String),
    /// CPU time stolen by the hypervisor until the memory section, in %.
    pub(crate) steal: Option<f64>,
    pub(crate) quick: bool,
}

/// The median of `values` (the mean of the middle two for an even count).
pub(crate) fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

pub(crate) fn us(v: f64) -> String {
    format!("{} µs", fmt_num(v))
}

impl Report {
    pub(crate) fn http_at(&self, label: &str, c: usize) -> Option<net::Load> {
        let i = CONCURRENCY.iter().position(|x| *x == c)?;
        self.http
            .as_ref()?
            .iter()
            .find(|(l, _)| *l == label)
            .map(|(_, r)| r[i])
    }

    pub(crate) fn summary(&self) -> String {
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
            // One burst's figures, in process or through the server.
            let cell = |m: &Memory| {
                format!(
                    "{:.0} MiB (idle {:.0} MiB), {:.0} ms, errors {}",
                    m.peak_mib, m.baseline_mib, m.wall_ms, m.errors
                )
            };
            rows.push(("1,000 × sleep(200) peak RSS".into(), cell(m)));
            if let Some(s) = &m.served {
                rows.push(("… through airlock serve".into(), cell(s)));
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

    pub(crate) fn write(&self, root: &Path) -> Result<()> {
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
                     off the async threads (`runtime/src/lanes/`), chosen with the \
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

        md.push_str(&auth::section(self.auth.as_ref()));
        md.push_str(&floor::section(self.floor.as_deref()));
        md.push_str(&sides::section(self.sides.as_deref()));
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
