//! In-process measurements: the floors, airlock's real call path, the
//! phases of a call, pool settings (levers) and memory under 1,000 calls.

use std::hint::black_box;
use std::path::Path;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use airlock::Runtime;
use airlock::call::Caller;
use airlock::observe::Unobserved;
use airlock::policy::Policy;
use airlock::sandbox::{CompileCache, Sandbox, SandboxConfig, Tuning};
use airlock::tool::Content;
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::stats::{Stats, cpu_ticks, sample, stats, steal_percent};

/// The policy of every benchmark: room for 1,000+ calls at once and a
/// 1 MiB result.
pub const POLICY: &str = r#"[defaults]
limits = { memory = "64MiB", time = "60s", output = "4MiB", concurrency = 2000 }
"#;

/// A runtime with the bench component loaded (and nothing else).
pub fn runtime(wasm: &Path, cache: &Path, instances: u32, tune: Option<Tuning>) -> Result<Runtime> {
    let policy = Policy::parse(POLICY, Path::new("."))?;
    let mut config = SandboxConfig::default()
        .instances(instances)
        .cache(Some(CompileCache::new(cache)))
        // The optimised code's cost is what is measured here.
        .tier_above(None);
    if let Some(tune) = tune {
        config = config.tune(tune);
    }
    let runtime = Runtime::new(Sandbox::new(&config)?, policy);
    let report = runtime.load(&[wasm.to_path_buf()]);
    if let Some(err) = report.refused.first() {
        bail!("cannot load {}: {err}", wasm.display());
    }
    Ok(runtime)
}

/// One case: a tool and its arguments.
pub struct Case {
    pub label: &'static str,
    pub tool: &'static str,
    pub args: Value,
}

pub fn cases() -> Vec<Case> {
    vec![
        Case {
            label: "add(a, b)",
            tool: "add",
            args: json!({"a": 40, "b": 2}),
        },
        Case {
            label: "echo(1 MiB)",
            tool: "echo",
            args: json!({"text": "x".repeat(1 << 20)}),
        },
    ]
}

/// The three ways of running a case, and the phases of the real path.
pub struct PerCall {
    pub label: &'static str,
    pub native: Stats,
    pub reused: Stats,
    /// Until the outcome is delivered (what a caller waits for).
    pub real: Stats,
    /// Until the instance is torn down as well (what a thread spends).
    pub real_total: Stats,
    /// (phase, mean µs, p50 µs)
    pub phases: Vec<(&'static str, f64, f64)>,
}

#[inline(never)]
fn native_add(a: i64, b: i64) -> i64 {
    a.wrapping_add(b)
}

#[inline(never)]
fn native_echo(text: &str) -> String {
    text.to_owned()
}

/// One call on the real path, as the server runs it: the outcome is
/// delivered before the instance is torn down. Returns the time from the
/// start of the call to the delivery of its outcome (the latency a caller
/// sees); the teardown follows on this thread before this returns. The
/// clock starts after the benchmark's own copy of the arguments, which a
/// server gets by parsing the request.
fn run_real(runtime: &Runtime, tool: &str, args: &Value) -> Result<Duration> {
    let args = args.clone();
    let start = Instant::now();
    let prepared = runtime.prepare(Caller::CommandLine, tool, args)?;
    let mut delivered = None;
    prepared.run_delivering(Arc::new(Unobserved), |outcome| {
        delivered = Some((Instant::now(), outcome.map(black_box)));
    });
    match delivered {
        Some((at, Ok(_))) => Ok(at - start),
        Some((_, Err(e))) => Err(e.into()),
        None => bail!("the call delivered no outcome"),
    }
}

/// Calls `tool` with `text` again and again on one instance (the floor
/// for isolation); nanoseconds per call, as [`sample`] returns them.
fn reused(runtime: &Runtime, tool: &str, text: &str, budget: Duration) -> Result<Vec<f64>> {
    let catalog = runtime.catalog();
    let found = catalog.tool(tool).context("bench tool missing")?;
    let mut store = runtime.sandbox().bench_store(&runtime.grant_for(found))?;
    let (_, call) = found.component.code().instantiate_call(&mut store)?;
    let mut failed = None;
    let times = sample(budget, 1 << 20, || {
        match call.call(&mut store, (tool, text)) {
            Ok((Ok(out),)) => {
                black_box(out);
            }
            Ok((Err(e),)) => failed = Some(format!("{e:?}")),
            Err(e) => failed = Some(format!("{e:#}")),
        }
        1
    });
    match failed {
        Some(why) => bail!("reused-instance call of {tool} failed: {why}"),
        None => Ok(times),
    }
}

pub fn per_call(runtime: &Runtime, case: &Case, budget: Duration) -> Result<PerCall> {
    let text = case.args.to_string();

    // (a) native Rust, in batches (one add is below the clock's resolution).
    let native = match case.tool {
        "add" => sample(budget, 1 << 20, || {
            for i in 0..1000 {
                black_box(native_add(black_box(40), black_box(i)));
            }
            1000
        }),
        _ => {
            let s = case.args["text"].as_str().unwrap_or_default().to_string();
            sample(budget, 1 << 20, || {
                black_box(native_echo(black_box(&s)));
                1
            })
        }
    };

    // (b) one instance, reused: the guest call alone, arguments as text.
    let reused = reused(runtime, case.tool, &text, budget)?;

    // (c) the real path: prepare (lookup, grant, arguments, slot) and run
    // (fresh store and instance, call, output checks).
    let mut failed = None;
    let mut answered = Vec::new();
    let real_total = sample(budget, 1 << 20, || {
        match run_real(runtime, case.tool, &case.args) {
            Ok(latency) => answered.push(latency.as_nanos() as f64),
            Err(e) => failed = Some(format!("{e:#}")),
        }
        1
    });
    if let Some(why) = failed {
        bail!("real call of {} failed: {why}", case.tool);
    }
    // `sample` warms up first; keep the timings of the sampled calls only.
    let real = answered.split_off(answered.len().saturating_sub(real_total.len()));

    let phases = phases(runtime, case.tool, &case.args, budget)?;
    Ok(PerCall {
        label: case.label,
        native: stats(native),
        reused: stats(reused),
        real: stats(real),
        real_total: stats(real_total),
        phases,
    })
}

/// Calls `tool` (a case of [`cases`]) on the real path until `budget` is
/// spent; returns the time to the answer of each call, in ns.
pub fn repeat(runtime: &Runtime, tool: &str, budget: Duration) -> Result<Vec<f64>> {
    let case = cases()
        .into_iter()
        .find(|c| c.tool == tool)
        .with_context(|| format!("no case for tool {tool:?}"))?;
    repeat_with(runtime, case.tool, &case.args, budget)
}

/// [`repeat`] with any tool and arguments (the guests of other languages).
pub fn repeat_with(
    runtime: &Runtime,
    tool: &str,
    args: &Value,
    budget: Duration,
) -> Result<Vec<f64>> {
    let end = Instant::now() + budget;
    let mut answered = Vec::new();
    while Instant::now() < end {
        let latency = run_real(runtime, tool, args)?;
        answered.push(latency.as_nanos() as f64);
    }
    Ok(answered)
}

/// A quick look at the machine's speed at one moment of the run: the
/// fresh-instance `add` to the answer (p50) and the reused-instance floor
/// (p50), both in µs.
pub struct Probe {
    pub at: &'static str,
    pub fresh: f64,
    pub reused: f64,
    /// CPU time the hypervisor stole while the probe ran, in %.
    pub steal: Option<f64>,
}

/// Measures a [`Probe`] for `budget` (two thirds fresh, one third reused).
pub fn probe(runtime: &Runtime, at: &'static str, budget: Duration) -> Result<Probe> {
    let ticks = cpu_ticks();
    let fresh = stats(repeat(runtime, "add", budget * 2 / 3)?).p50;
    let reused = reused(runtime, "add", r#"{"a":40,"b":2}"#, budget / 3)?;
    Ok(Probe {
        at,
        fresh,
        reused: stats(reused).p50,
        steal: steal_percent(ticks, cpu_ticks()),
    })
}

pub const PHASES: [&str; 8] = [
    "copy of the arguments (harness)",
    "lookup + grant",
    "argument handling",
    "store setup",
    "instantiation",
    "call",
    "result check",
    "teardown",
];

/// The real path taken apart, phase by phase, in the order `prepare` and
/// `run` take them (see `Runtime::prepare_as`, `Sandbox::call` and
/// `call::finish_output`): (phase, mean µs, p50 µs) of `tool` called with
/// `args`, any component's (`airlock-bench phases`).
pub fn phases(
    runtime: &Runtime,
    tool: &str,
    args: &Value,
    budget: Duration,
) -> Result<Vec<(&'static str, f64, f64)>> {
    let sandbox = runtime.sandbox();
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); PHASES.len()];
    let mut failed: Option<String> = None;
    let end = Instant::now() + budget;
    let mut first = true;
    while Instant::now() < end || first {
        let mut t = [Instant::now(); 9];
        let args = args.clone();
        t[1] = Instant::now();
        let catalog = runtime.catalog();
        let Some(tool) = catalog.tool(tool).cloned() else {
            bail!("bench tool missing");
        };
        let grant = runtime.grant_for(&tool);
        t[2] = Instant::now();
        let text = airlock::json::to_string(&tool.args.prepare(args)?);
        t[3] = Instant::now();
        let mut store = sandbox.bench_store(&grant)?;
        t[4] = Instant::now();
        let (_, call) = tool.component.code().instantiate_call(&mut store)?;
        t[5] = Instant::now();
        let (out,) = call.call(&mut store, (&tool.info.name, &text))?;
        t[6] = Instant::now();
        match out {
            Ok(out) => {
                let mut content: Vec<Content> =
                    out.content.into_iter().map(Content::from).collect();
                let structured = match out.structured {
                    Some(s) => Some(serde_json::from_str::<Value>(&s)?),
                    None => None,
                };
                if let (Some(schema), Some(value)) = (&tool.output, &structured)
                    && let Err(why) = schema.check(value)
                {
                    failed = Some(why);
                }
                if content.is_empty()
                    && let Some(value) = &structured
                {
                    content.push(Content::Text(value.to_string()));
                }
                black_box((content, structured));
            }
            Err(e) => failed = Some(format!("{e:?}")),
        }
        t[7] = Instant::now();
        drop(store);
        t[8] = Instant::now();
        if !first {
            for (i, phase) in times.iter_mut().enumerate() {
                phase.push((t[i + 1] - t[i]).as_nanos() as f64);
            }
        }
        first = false;
    }
    if let Some(why) = failed {
        bail!("phase loop: {why}");
    }
    Ok(PHASES
        .iter()
        .zip(times)
        .map(|(name, ns)| {
            let s = stats(ns);
            (*name, s.mean, s.p50)
        })
        .collect())
}

/// A pool setting to compare.
pub struct Lever {
    pub name: &'static str,
    pub tune: Option<Tuning>,
}

pub fn levers() -> Vec<Lever> {
    use wasmtime::{Config, Enabled, PoolingAllocationConfig as P};
    fn no_pagemap(_: &mut Config, p: &mut P) {
        // wasmtime's default: reset by `memset` of the kept-resident part
        // and `madvise` of the rest, whatever the call touched.
        p.pagemap_scan(Enabled::No);
    }
    fn no_pagemap_no_resident(_: &mut Config, p: &mut P) {
        p.pagemap_scan(Enabled::No)
            .linear_memory_keep_resident(0)
            .table_keep_resident(0);
    }
    fn resident_0(_: &mut Config, p: &mut P) {
        p.linear_memory_keep_resident(0).table_keep_resident(0);
    }
    fn resident_4m(_: &mut Config, p: &mut P) {
        p.linear_memory_keep_resident(4 << 20);
    }
    fn resident_1m(_: &mut Config, p: &mut P) {
        // airlock's setting until the Python guest was measured.
        p.linear_memory_keep_resident(1 << 20)
            .table_keep_resident(1 << 16);
    }
    fn batch(_: &mut Config, p: &mut P) {
        p.decommit_batch_size(64);
    }
    fn no_warm(_: &mut Config, p: &mut P) {
        p.max_unused_warm_slots(0);
    }
    fn small_reservation(c: &mut Config, p: &mut P) {
        p.max_memory_size(64 << 20);
        c.memory_reservation(64 << 20).memory_guard_size(64 << 10);
    }
    fn no_cow(c: &mut Config, _: &mut P) {
        c.memory_init_cow(false);
    }
    fn eager_tables(c: &mut Config, _: &mut P) {
        c.table_lazy_init(false);
    }
    vec![
        Lever {
            name: "airlock engine_config (as built)",
            tune: None,
        },
        Lever {
            name: "pagemap_scan off (wasmtime default)",
            tune: Some(no_pagemap),
        },
        Lever {
            name: "pagemap_scan off, keep-resident 0",
            tune: Some(no_pagemap_no_resident),
        },
        Lever {
            name: "keep-resident 0",
            tune: Some(resident_0),
        },
        Lever {
            name: "keep-resident 4 MiB",
            tune: Some(resident_4m),
        },
        Lever {
            name: "keep-resident 1 MiB, tables 64 KiB (before)",
            tune: Some(resident_1m),
        },
        Lever {
            name: "decommit_batch_size = 64",
            tune: Some(batch),
        },
        Lever {
            name: "max_unused_warm_slots = 0",
            tune: Some(no_warm),
        },
        Lever {
            name: "64 MiB slots, 64 KiB guard",
            tune: Some(small_reservation),
        },
        Lever {
            name: "no copy-on-write image",
            tune: Some(no_cow),
        },
        Lever {
            name: "tables filled at instantiation (no lazy init)",
            tune: Some(eager_tables),
        },
    ]
}

pub struct LeverResult {
    pub name: &'static str,
    pub p50: f64,
    pub p99: f64,
    pub one_thread: f64,
    pub two_threads: f64,
}

/// Fresh-instance `add` on the real path: latency on one thread, and calls/s
/// on one and on two threads.
pub fn lever(wasm: &Path, cache: &Path, lever: &Lever, budget: Duration) -> Result<LeverResult> {
    let runtime = runtime(wasm, cache, 1000, lever.tune)?;
    let args = json!({"a": 40, "b": 2});
    let lat = stats(sample(budget, 1 << 20, || {
        let _ = run_real(&runtime, "add", &args);
        1
    }));
    let throughput = |threads: usize| -> f64 {
        let start = Instant::now();
        let end = start + budget;
        let total: u64 = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    s.spawn(|| {
                        let mut n = 0u64;
                        while Instant::now() < end {
                            let _ = run_real(&runtime, "add", &args);
                            n += 1;
                        }
                        n
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap_or(0)).sum()
        });
        total as f64 / start.elapsed().as_secs_f64()
    };
    Ok(LeverResult {
        name: lever.name,
        p50: lat.p50,
        p99: lat.p99,
        one_thread: throughput(1),
        two_threads: throughput(2),
    })
}

/// Peak RSS (KiB) of this process, from `/proc/self/status`.
pub fn vm_hwm_kib() -> u64 {
    status_kib("VmHWM:")
}

fn status_kib(key: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// `airlock-bench memory WASM CACHE N MS` (a child process, so that its
/// peak RSS is this measurement's alone): N calls of `sleep(MS)` at once on
/// the real path, one thread each. Prints one JSON line.
pub fn memory_child(wasm: &Path, cache: &Path, calls: usize, ms: u64) -> Result<()> {
    let runtime = runtime(wasm, cache, calls as u32 + 16, None)?;
    // Warm the path once so that the baseline includes the loaded runtime.
    run_real(&runtime, "add", &json!({"a": 1, "b": 2}))?;
    let baseline = vm_hwm_kib();
    let barrier = Barrier::new(calls + 1);
    let args = json!({ "ms": ms });
    let (errors, start): (usize, Instant) = {
        let runtime = &runtime;
        let (barrier, args) = (&barrier, &args);
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..calls)
                .map(|_| {
                    std::thread::Builder::new().spawn_scoped(s, move || {
                        barrier.wait();
                        usize::from(run_real(runtime, "sleep", args).is_err())
                    })
                })
                .collect();
            barrier.wait();
            let started = Instant::now();
            let errors: usize = handles
                .into_iter()
                .map(|h| match h {
                    Ok(h) => h.join().unwrap_or(1),
                    Err(_) => 1,
                })
                .sum();
            (errors, started)
        })
    };
    let wall = start.elapsed();
    println!(
        "{}",
        json!({
            "baseline_kib": baseline,
            "peak_kib": vm_hwm_kib(),
            "wall_ms": wall.as_secs_f64() * 1000.0,
            "errors": errors,
        })
    );
    Ok(())
}
