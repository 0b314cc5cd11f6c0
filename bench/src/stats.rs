//! Percentiles and time-boxed sampling.

use std::time::{Duration, Instant};

/// Latency percentiles in microseconds.
#[derive(Debug, Clone, Copy, Default)]
pub struct Stats {
    pub p50: f64,
    pub p99: f64,
    pub mean: f64,
}

/// Percentiles of samples given in nanoseconds.
pub fn stats(mut ns: Vec<f64>) -> Stats {
    if ns.is_empty() {
        return Stats::default();
    }
    ns.sort_by(f64::total_cmp);
    let at = |q: f64| ns[((ns.len() as f64 * q) as usize).min(ns.len() - 1)] / 1000.0;
    Stats {
        p50: at(0.50),
        p99: at(0.99),
        mean: ns.iter().sum::<f64>() / ns.len() as f64 / 1000.0,
    }
}

/// Runs `f` (one sample: returns how many operations it did) for `budget`
/// after a warm-up of a tenth of it; returns nanoseconds per operation of
/// each sample.
pub fn sample(budget: Duration, max: usize, mut f: impl FnMut() -> u32) -> Vec<f64> {
    let warm = Instant::now() + budget / 10;
    while Instant::now() < warm {
        f();
    }
    let mut out = Vec::with_capacity(max.min(1 << 20));
    let end = Instant::now() + budget;
    while out.len() < max && Instant::now() < end {
        let t = Instant::now();
        let ops = f();
        out.push(t.elapsed().as_nanos() as f64 / f64::from(ops.max(1)));
    }
    out
}

/// The machine's CPU time so far, all CPUs, in clock ticks: (all, stolen).
/// Stolen time is what the hypervisor gave to other guests while this one
/// wanted to run (`steal` in `/proc/stat`); `None` off Linux.
pub fn cpu_ticks() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    // user nice system idle iowait irq softirq steal (guest time is
    // already counted in user).
    let all = fields.iter().take(8).sum();
    Some((all, *fields.get(7)?))
}

/// The share of CPU time stolen between two [`cpu_ticks`] readings, in %.
pub fn steal_percent(before: Option<(u64, u64)>, after: Option<(u64, u64)>) -> Option<f64> {
    let ((all0, steal0), (all1, steal1)) = (before?, after?);
    let all = all1.checked_sub(all0)?;
    (all > 0).then(|| 100.0 * steal1.saturating_sub(steal0) as f64 / all as f64)
}
