//! The Targets table: each goal of the project's issues beside what this
//! run measured, and whether it was met (`None`: not measured, or not a
//! pass/fail figure).

use std::fmt::Write as _;

use crate::report::{Report, median, us};
use crate::{LANE_ROUNDS, floor, languages, sides};

impl Report {
    /// (target, measured, met)
    pub(crate) fn targets(&self) -> Vec<(String, String, Option<bool>)> {
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
        // Issue 45's: what the second layer costs a call.
        t.extend(sides::targets(self.sides.as_deref()));
        t
    }
}
