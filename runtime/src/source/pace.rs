//! How long fetching a component may take: an overall deadline, and a
//! minimum rate once a grace period has passed — the rule, apart from the
//! I/O that applies it (`http`), so it is tested without a clock.
//!
//! A per-read timeout alone never cuts off a sender that trickles one byte
//! every few seconds; a whole component's fetch (every request: token,
//! manifest, signature, blob) must end within [`FetchLimits::timeout`],
//! and each answer's body must keep up with [`FetchLimits::min_rate`]
//! after [`FetchLimits::grace`]: by `grace + t` seconds, `min_rate × t`
//! bytes, or all of them when the answer says how many (so a small answer
//! must be complete soon after the grace, a big one may take its time at
//! the minimum rate, up to the deadline).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The bounds of one component's fetch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchLimits {
    /// Everything a fetch asks (token, manifest, signatures, component)
    /// must have arrived within this. 300 s: the largest component
    /// accepted (256 MiB) arrives in it at ~1 MiB/s, a usual one (1–40
    /// MiB) in seconds, and it is about what an orchestrator's startup
    /// probe tolerates before it gives up on a replica.
    pub timeout: Duration,
    /// Bytes per second an answer's body must keep up with after `grace`
    /// (0: no minimum). 16 KiB/s (128 kbit/s) is far below any link a
    /// registry is fetched over, and far above a trickle meant to hold a
    /// start: one byte every 0.5 s is cut off right after the grace.
    pub min_rate: u64,
    /// How long an answer's body may take before the rate counts: TCP's
    /// slow start, a registry waking up a cold blob.
    pub grace: Duration,
    /// What these bounds are for, when they are fixed rather than set by
    /// `--fetch-timeout` and `--fetch-min-rate` (an OAuth issuer's keys):
    /// an error then names it instead of flags that would change nothing.
    pub fixed_for: Option<&'static str>,
}

impl Default for FetchLimits {
    fn default() -> Self {
        FetchLimits {
            timeout: Duration::from_secs(300),
            min_rate: 16 * 1024,
            grace: Duration::from_secs(10),
            fixed_for: None,
        }
    }
}

/// Where one answer's transfer stands.
#[derive(Debug, Clone, Copy)]
pub struct Transfer {
    /// Since the fetch began (its first request).
    pub elapsed: Duration,
    /// Since this answer's head arrived.
    pub body_elapsed: Duration,
    /// Body bytes received so far.
    pub received: u64,
    /// The body's size, when the answer declares it.
    pub expected: Option<u64>,
}

/// What ends a transfer that waits too long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// The server said nothing for the per-read timeout.
    Silence,
    /// The fetch's overall deadline.
    Deadline,
    /// The body fell below the minimum rate.
    Rate,
}

/// How long the transfer may wait for its next bytes, and which limit
/// ends it when none come by then (a zero wait: it is over now).
pub fn allowance(limits: &FetchLimits, silence: Duration, now: &Transfer) -> (Duration, Limit) {
    let mut wait = (silence, Limit::Silence);
    let deadline = limits.timeout.saturating_sub(now.elapsed);
    if deadline <= wait.0 {
        wait = (deadline, Limit::Deadline);
    }
    let complete = now.expected.is_some_and(|size| now.received >= size);
    if limits.min_rate > 0 && !complete {
        // `received` bytes satisfy the rate until `grace + received / rate`.
        let covered = Duration::from_secs_f64(now.received as f64 / limits.min_rate as f64);
        let rate = (limits.grace + covered).saturating_sub(now.body_elapsed);
        if rate < wait.0 {
            wait = (rate, Limit::Rate);
        }
    }
    wait
}

/// Why a transfer was ended, for the error: what happened and what to do.
pub fn explain(limit: Limit, limits: &FetchLimits, silence: Duration, now: &Transfer) -> String {
    let received = match now.expected {
        Some(size) => format!("{} of {}", bytes(now.received), bytes(size)),
        None => bytes(now.received),
    };
    match limit {
        Limit::Silence => format!(
            "the server stalled: nothing for {}s ({received} received)",
            silence.as_secs()
        ),
        Limit::Deadline => match limits.fixed_for {
            None => format!(
                "not done after {}s, the fetch's deadline (--fetch-timeout {}; this answer: \
                 {received} so far); raise --fetch-timeout for a slow link",
                now.elapsed.as_secs(),
                limits.timeout.as_secs()
            ),
            Some(what) => format!(
                "not done after {}s, the most airlock waits for {what} (this answer: \
                 {received} so far)",
                now.elapsed.as_secs()
            ),
        },
        Limit::Rate => match limits.fixed_for {
            None => format!(
                "the server sent {received} in {:.0}s, below the minimum rate of {}/s \
                 (--fetch-min-rate) after the first {}s; a server this slow is cut off: check \
                 it, or lower --fetch-min-rate (0 turns the minimum off)",
                now.body_elapsed.as_secs_f64(),
                bytes(limits.min_rate),
                limits.grace.as_secs()
            ),
            Some(what) => format!(
                "the server sent {received} in {:.0}s, below the minimum rate of {}/s for \
                 {what} after the first {}s",
                now.body_elapsed.as_secs_f64(),
                bytes(limits.min_rate),
                limits.grace.as_secs()
            ),
        },
    }
}

/// `n` bytes for people: `512 B`, `1.2 KiB`, `3.0 MiB`.
pub fn bytes(n: u64) -> String {
    const KIB: f64 = 1024.0;
    let n_f = n as f64;
    if n < 1024 {
        format!("{n} B")
    } else if n_f < KIB * KIB {
        trim(n_f / KIB, "KiB")
    } else if n_f < KIB * KIB * KIB {
        trim(n_f / (KIB * KIB), "MiB")
    } else {
        trim(n_f / (KIB * KIB * KIB), "GiB")
    }
}

/// `16 KiB` rather than `16.0 KiB`; one decimal otherwise.
fn trim(value: f64, unit: &str) -> String {
    if value.fract() == 0.0 {
        format!("{value:.0} {unit}")
    } else {
        format!("{value:.1} {unit}")
    }
}

/// Bytes a fetch received so far, across its requests; read while it runs
/// (`/readyz`, the log) from another thread.
#[derive(Debug, Clone, Default)]
pub struct Progress(Arc<AtomicU64>);

impl Progress {
    pub fn received(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    pub(super) fn add(&self, bytes: u64) {
        self.0.fetch_add(bytes, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SILENCE: Duration = Duration::from_secs(30);

    fn at(elapsed: u64, body: u64, received: u64, expected: Option<u64>) -> Transfer {
        Transfer {
            elapsed: Duration::from_secs(elapsed),
            body_elapsed: Duration::from_secs(body),
            received,
            expected,
        }
    }

    #[test]
    fn within_the_grace_the_rate_waits_for_it_to_end() {
        let limits = FetchLimits::default();
        let (wait, limit) = allowance(&limits, SILENCE, &at(1, 0, 0, None));
        assert_eq!((wait, limit), (Duration::from_secs(10), Limit::Rate));
        let (wait, limit) = allowance(&limits, SILENCE, &at(295, 0, 0, Some(10)));
        assert_eq!((wait, limit), (Duration::from_secs(5), Limit::Deadline));
        let off = FetchLimits {
            min_rate: 0,
            ..limits
        };
        assert_eq!(
            allowance(&off, SILENCE, &at(1, 0, 0, None)),
            (SILENCE, Limit::Silence)
        );
    }

    #[test]
    fn a_trickle_is_over_once_the_grace_has_passed() {
        // One byte every 0.5 s: 20 bytes after 10 s cover ~1 ms of rate.
        let limits = FetchLimits::default();
        let (wait, limit) = allowance(&limits, SILENCE, &at(10, 10, 20, Some(1 << 20)));
        assert_eq!(limit, Limit::Rate);
        assert!(wait < Duration::from_millis(5), "{wait:?}");
        let (wait, limit) = allowance(&limits, SILENCE, &at(12, 12, 24, None));
        assert_eq!((wait, limit), (Duration::ZERO, Limit::Rate));
    }

    #[test]
    fn a_body_that_keeps_up_with_the_rate_goes_on() {
        let limits = FetchLimits::default();
        // 20 s into the body with 16 × 16 KiB: 6 s of credit left.
        let (wait, limit) = allowance(&limits, SILENCE, &at(20, 20, 16 * 16 * 1024, None));
        assert_eq!((wait, limit), (Duration::from_secs(6), Limit::Rate));
        // A complete body owes no rate.
        let (_, limit) = allowance(&limits, SILENCE, &at(20, 20, 100, Some(100)));
        assert_eq!(limit, Limit::Silence);
    }

    #[test]
    fn the_deadline_holds_however_fast_the_body_comes() {
        let limits = FetchLimits {
            timeout: Duration::from_secs(60),
            ..FetchLimits::default()
        };
        let (wait, limit) = allowance(&limits, SILENCE, &at(61, 50, 1 << 30, None));
        assert_eq!((wait, limit), (Duration::ZERO, Limit::Deadline));
    }

    #[test]
    fn the_errors_say_what_happened_and_which_flag_to_turn() {
        let limits = FetchLimits::default();
        let slow = explain(Limit::Rate, &limits, SILENCE, &at(30, 30, 1229, None));
        assert!(
            slow.contains("sent 1.2 KiB in 30s, below the minimum rate of 16 KiB/s"),
            "{slow}"
        );
        assert!(slow.contains("--fetch-min-rate"), "{slow}");
        let late = explain(
            Limit::Deadline,
            &limits,
            SILENCE,
            &at(300, 290, 10, Some(2048)),
        );
        assert!(late.contains("10 B of 2 KiB"), "{late}");
        assert!(late.contains("--fetch-timeout 300"), "{late}");
        let fixed = FetchLimits {
            fixed_for: Some("an issuer's keys"),
            ..FetchLimits::default()
        };
        let late = explain(Limit::Deadline, &fixed, SILENCE, &at(301, 0, 0, None));
        assert!(
            late.contains("the most airlock waits for an issuer's keys"),
            "{late}"
        );
        assert!(!late.contains("--fetch"), "{late}");
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(16 * 1024), "16 KiB");
        assert_eq!(bytes(1229), "1.2 KiB");
        assert_eq!(bytes(3 << 20), "3 MiB");
    }
}
