//! What every entry into a guest leaves behind — a tool call, a resource
//! read, a prompt, a completion —, whether it ran or was refused before:
//! its counters, one log line, what its guest printed, a warning per
//! request to the client it had refused, and its audit entry. One function ([`ended`]) for every kind,
//! parameterised by what was entered ([`Entered`]), so that what one kind
//! records the others do too.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{CallError, Caller};
use crate::audit::{AuditLog, Entry};
use crate::logtext::GuestText;
use crate::policy::{Grant, format_size};
use crate::sandbox::Teardown;
use crate::sandbox::asks::AskRecord;

/// What was entered, as the metrics, the log and the audit entry name it.
pub(super) struct Entered<'a> {
    /// The call's id (`None` for one refused before it got one).
    pub id: Option<u64>,
    /// Its name in the metrics and the log lines: the tool's, or what the
    /// listings call a read, prompt or completion; `None` when it names
    /// nothing served (a client's text never becomes a label).
    pub label: Option<&'a str>,
    pub caller: &'a Caller,
    /// SHA-256 of the component, once found.
    pub digest: Option<&'a str>,
    /// Its grant, once settled.
    pub grant: Option<&'a Grant>,
}

/// How an entry ended, as its records name it: the kind (`ok`,
/// `input-required`, or the error's [`CallError::kind`]) and whether it
/// is a refusal or a limit hit ([`CallError::is_refusal`], declared with
/// the kinds), which a trace shows as an `airlock.refusal` event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Ended {
    pub kind: &'static str,
    pub refusal: bool,
}

impl Ended {
    /// It answered.
    pub const OK: Ended = Ended {
        kind: "ok",
        refusal: false,
    };
    /// It stopped at a question only a later round answers (2026-07-28).
    pub const INPUT_REQUIRED: Ended = Ended {
        kind: "input-required",
        refusal: false,
    };

    /// It ended with `err`.
    pub fn of(err: &CallError) -> Ended {
        Ended {
            kind: err.kind(),
            refusal: err.is_refusal(),
        }
    }
}

/// What only the audit entry needs, worked out only when a log is kept
/// (a call without one pays for none of it).
pub(super) struct Audited<'a> {
    /// Its name in the audit log: the tool asked for, or the URI read.
    pub name: Cow<'a, str>,
    pub bytes_in: usize,
    pub bytes_out: usize,
}

/// Records an entry that ended with `outcome` after `took`: counters, the
/// log line, the warnings of its refused requests to the client and — with
/// a `log` — its audit entry, with what its `teardown` (none for one that
/// never ran) knows: the credentials its requests carried, the folder
/// operations refused, the requests it made of its client.
pub(super) fn ended<'a>(
    log: Option<&AuditLog>,
    entered: &Entered<'_>,
    outcome: Ended,
    took: Duration,
    teardown: Option<&Teardown>,
    audited: impl FnOnce() -> Audited<'a>,
) {
    let Ended {
        kind: outcome,
        refusal,
    } = outcome;
    let folder_refusals = teardown.and_then(Teardown::folder_refusals);
    let what = entered.label.unwrap_or_default();
    if let Some(teardown) = teardown {
        guest_printed(teardown, what, entered.id, entered.grant);
    }
    let asks = asks_made(teardown, what, entered.id);
    crate::metrics::call_ended(entered.label, outcome, took);
    let trace_id = traced(refusal.then_some(outcome), folder_refusals, asks);
    tracing::info!(
        call = entered.id,
        trace_id = trace_id.as_deref(),
        tool = entered.label.unwrap_or_default(),
        caller = %entered.caller,
        caller_kind = entered.caller.kind(),
        outcome,
        duration_ms = crate::audit::millis(took),
        "call ended"
    );
    crate::metrics::refused("folders", folder_refusals.unwrap_or(0));
    if outcome == CallError::REFUSED {
        crate::metrics::refused("call", 1);
    }
    let Some(log) = log else {
        return;
    };
    let audited = audited();
    log.record(&Entry {
        call: entered.id,
        tool: &audited.name,
        digest: entered.digest,
        caller: &entered.caller.to_string(),
        caller_kind: entered.caller.kind(),
        identity: entered.caller.identity(),
        grant: entered.grant,
        outcome,
        duration: took,
        bytes_in: audited.bytes_in,
        bytes_out: audited.bytes_out,
        credentials_used: &teardown.map(Teardown::credentials_used).unwrap_or_default(),
        folder_refusals,
        // One refused before any guest ran asked nothing.
        asks,
        trace_id: trace_id.as_deref(),
    });
}

/// When exporting traces: the refusals and limit hits of an entry as events
/// of its span (the current one) — `refused`, the kind of the outcome when
/// it was one —, and the trace's id for its records.
fn traced(
    refused: Option<&str>,
    folder_refusals: Option<u64>,
    asks: &[AskRecord],
) -> Option<String> {
    if !crate::telemetry::on() {
        return None;
    }
    if let Some(kind) = refused {
        crate::telemetry::refused(kind, "call");
    }
    if folder_refusals.unwrap_or(0) > 0 {
        crate::telemetry::refused("folders", "folders");
    }
    for _ in asks.iter().filter(|ask| ask.refusal.is_some()) {
        crate::telemetry::refused("ask", "ask");
    }
    crate::telemetry::trace_id()
}

/// Records an entry refused before it ran, `started` when it came: no id,
/// no grant, no guest, nothing out. `label` and `digest` as far as it was
/// found; `audited`, its name in the audit log and the bytes that came in.
pub(super) fn refused_before<'a>(
    log: Option<&Arc<AuditLog>>,
    caller: &Caller,
    label: Option<&str>,
    digest: Option<&str>,
    outcome: Ended,
    started: Instant,
    audited: impl FnOnce() -> (Cow<'a, str>, usize),
) {
    let entered = Entered {
        id: None,
        label,
        caller,
        digest,
        grant: None,
    };
    let took = started.elapsed();
    ended(log.map(|log| &**log), &entered, outcome, took, None, || {
        let (name, bytes_in) = audited();
        Audited {
            name,
            bytes_in,
            bytes_out: 0,
        }
    });
}

/// Records a read the runtime answered from its own memory (a skill's
/// file, read from the component at load), `started` when it came: no
/// guest ran, so no id, no grant; `label` names it (`resource:URI`) in the
/// metrics, the log and the audit entry, `digest` is its component's.
pub fn answered_from_memory(
    log: Option<&Arc<AuditLog>>,
    caller: &Caller,
    label: &str,
    digest: &str,
    started: Instant,
    bytes: (usize, usize),
) {
    let entered = Entered {
        id: None,
        label: Some(label),
        caller,
        digest: Some(digest),
        grant: None,
    };
    let took = started.elapsed();
    ended(
        log.map(|log| &**log),
        &entered,
        Ended::OK,
        took,
        None,
        || Audited {
            name: Cow::Borrowed(label),
            bytes_in: bytes.0,
            bytes_out: bytes.1,
        },
    );
}

/// What the guest printed, one log line per line, escaped and marked as
/// the guest's, so that no guest text reads as the runtime's own line.
fn guest_printed(teardown: &Teardown, what: &str, id: Option<u64>, grant: Option<&Grant>) {
    let (log, dropped) = teardown.guest_log();
    for line in log.trim_end().lines() {
        tracing::info!(tool = %what, call = id, "guest: {}", GuestText(line));
    }
    if dropped > 0 {
        let cap = grant.map_or(0, |grant| grant.limits.log);
        tracing::info!(
            tool = %what,
            call = id,
            "guest output: {} more dropped (log limit {})",
            format_size(dropped),
            format_size(cap)
        );
    }
}

/// The requests an entry made of its client, in order, for its audit
/// entry; the operator's log gets a warning for each one refused, naming
/// the key that would have allowed it. `what` names the entry in the log.
fn asks_made<'t>(teardown: Option<&'t Teardown>, what: &str, id: Option<u64>) -> &'t [AskRecord] {
    let asks = teardown.map(Teardown::asks).unwrap_or_default();
    for refusal in asks.iter().filter_map(|ask| ask.refusal.as_deref()) {
        tracing::warn!(tool = %what, call = id, "{refusal}");
    }
    asks
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::sandbox::RunError;

    /// The refusals and limit hits a trace shows as events are the ones the
    /// errors declare, with their kinds; a failure of the tool or a crash
    /// is none.
    #[test]
    fn refusals_and_limit_hits_are_what_the_errors_declare() {
        let refusal = |err: CallError| {
            let ended = Ended::of(&err);
            ended.refusal.then_some(ended.kind)
        };
        let refused = CallError::Refused(crate::call::Refusal {
            message: "no".into(),
            operator_hint: String::new(),
        });
        let busy = CallError::Busy {
            tool: "t".into(),
            limit: 1,
            queue: 0,
        };
        assert_eq!(refusal(refused), Some("refused"));
        assert_eq!(refusal(busy), Some("busy"));
        let limits = [
            (RunError::TimedOut(Duration::from_secs(1)), "timeout"),
            (RunError::Memory(1), "memory"),
            (RunError::Fuel, "fuel"),
            (RunError::StackOverflow, "stack"),
            (
                RunError::OutputTooLarge {
                    actual: 2,
                    limit: 1,
                },
                "output",
            ),
        ];
        for (run, kind) in limits {
            assert_eq!(refusal(CallError::Run(run)), Some(kind));
        }
        let none = [
            CallError::UnknownTool("x".into()),
            CallError::NotFound("x".into()),
            CallError::InvalidParams("x".into()),
            CallError::Run(RunError::Panic("p".into())),
            CallError::Run(RunError::Crashed("c".into())),
            CallError::Run(RunError::Cancelled),
            CallError::Run(RunError::BadOutput("b".into())),
            CallError::Run(RunError::InvalidArguments("a".into())),
            CallError::Run(RunError::Failed("f".into())),
            CallError::Run(RunError::Setup("s".into())),
        ];
        for err in none {
            let kind = err.kind();
            assert_eq!(refusal(err), None, "{kind}");
        }
        let answered = [Ended::OK, Ended::INPUT_REQUIRED].map(|ended| ended.refusal);
        assert_eq!(answered, [false, false]);
    }
}
