//! The audit log: one JSON line per call, whatever its outcome.
//!
//! A line is written when a call is refused before it runs (unknown tool,
//! bad arguments, policy, busy) and when it ends (ok, tool error, limit,
//! crash). It records what the call was allowed to touch (folder modes, hosts,
//! environment variable *names*, never their values; the credentials airlock
//! would inject, by header, host and variable name), which of those
//! credentials its requests actually carried (never a value), who asked,
//! how long it took and how many bytes went in and out.
//!
//! A call that asked its client something (`ask`) lists each request:
//! its method, what was asked and how it ended; the user's answers only
//! with `audit-answers = true`.
//!
//! Every entry names its caller (`caller`, with `caller_kind`: `token`,
//! `oauth`, `session`, `stdio`, `http` or `cli`), whatever the door the call
//! came through; an access token's caller also by `issuer`, `subject` and
//! `client_id`.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use crate::policy::{Grant, Identity};
use crate::sandbox::asks::AskRecord;

/// An append-only JSON Lines file.
pub struct AuditLog {
    file: Mutex<File>,
    /// Keep the client's answers to tools' requests (`audit-answers`).
    answers: bool,
}

/// One call as the audit log records it.
pub struct Entry<'a> {
    /// The call's id in the runtime's log lines (absent for a call refused
    /// before it got one).
    pub call: Option<u64>,
    pub tool: &'a str,
    /// SHA-256 of the component, when the tool was found.
    pub digest: Option<&'a str>,
    /// Who asked: a token's name, or what the transport knows of the client.
    pub caller: &'a str,
    /// `token`, `oauth`, `session`, `stdio`, `http` or `cli`.
    pub caller_kind: &'a str,
    /// For an access token: its issuer, subject and client.
    pub identity: Option<&'a Identity>,
    pub grant: Option<&'a Grant>,
    /// `ok`, `tool-error`, `invalid-arguments`, `refused`, `busy`,
    /// `unknown-tool`, or a limit: `timeout`, `memory`, `fuel`, `stack`,
    /// `output`, `panic`, `crash`, `cancelled`, `bad-output`.
    pub outcome: &'a str,
    pub duration: Duration,
    pub bytes_in: usize,
    pub bytes_out: usize,
    /// The injected credentials the call's requests carried
    /// (`HEADER for PATTERN (from VARIABLE)`), never their values.
    pub credentials_used: &'a [String],
    /// Filesystem operations the read-only and create-only rules refused
    /// (`None` for a call refused before it ran).
    pub folder_refusals: Option<u64>,
    /// The requests the tool made of the client (`ask`), in order.
    pub asks: &'a [AskRecord],
    /// The OpenTelemetry trace it belongs to, when traces are exported
    /// (the same id as its spans and its `call ended` line).
    pub trace_id: Option<&'a str>,
}

impl AuditLog {
    /// Opens (creating if needed) the file for appending.
    pub fn open(path: &Path) -> std::io::Result<Self> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(AuditLog {
            file: Mutex::new(file),
            answers: false,
        })
    }

    /// Keeps the client's answers to tools' requests in the entries too
    /// (`audit-answers = true`); without, only what was asked.
    pub fn with_answers(mut self, answers: bool) -> Self {
        self.answers = answers;
        self
    }

    /// Appends one line. A failing write is logged, never fatal to the call.
    /// The client's answers to the tool's requests are in it only with
    /// `audit-answers = true`.
    pub fn record(&self, entry: &Entry<'_>) {
        let mut line = entry.to_json_with(self.answers).to_string();
        line.push('\n');
        let mut file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(err) = file.write_all(line.as_bytes()) {
            tracing::error!("cannot write the audit log: {err}");
        }
    }
}

impl Entry<'_> {
    /// The entry's line, without the client's answers.
    pub fn to_json(&self) -> Value {
        self.to_json_with(false)
    }

    /// The entry's line; with `answers`, the client's answers to the tool's
    /// requests too. Only a call that asked its client has `asks`.
    pub fn to_json_with(&self, answers: bool) -> Value {
        let mut line = self.fields();
        if let (false, Some(fields)) = (self.asks.is_empty(), line.as_object_mut()) {
            fields.insert("asks".into(), asks_shown(self.asks, answers));
        }
        line
    }
}

/// The requests a call made: what was asked and how it ended; with
/// `answers`, the client's answers too.
fn asks_shown(asks: &[AskRecord], answers: bool) -> Value {
    asks.iter()
        .map(|ask| {
            let mut shown = json!({
                "method": ask.method,
                "params": ask.params,
                "outcome": ask.outcome,
            });
            if let Some(key) = &ask.key {
                shown["key"] = key.as_str().into();
            }
            if let (true, Some(answer)) = (answers, &ask.answer) {
                shown["answer"] = answer.clone();
            }
            shown
        })
        .collect()
}

impl Entry<'_> {
    fn fields(&self) -> Value {
        let mut entry = json!({
            "time": humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
            "call_id": self.call,
            "tool": self.tool,
            "component_sha256": self.digest,
            "caller": self.caller,
            "caller_kind": self.caller_kind,
            "grant": self.grant.map(Grant::audited),
            "outcome": self.outcome,
            "duration_ms": millis(self.duration),
            "bytes_in": self.bytes_in,
            "bytes_out": self.bytes_out,
            "credentials_used": self.credentials_used,
            "folder_refusals": self.folder_refusals,
        });
        if let (Some(trace), Some(fields)) = (self.trace_id, entry.as_object_mut()) {
            fields.insert("trace_id".into(), json!(trace));
        }
        // Only an access token's caller has them.
        if let (Some(identity), Some(fields)) = (self.identity, entry.as_object_mut()) {
            fields.insert("issuer".into(), json!(identity.issuer));
            fields.insert("subject".into(), json!(identity.subject));
            fields.insert("client_id".into(), json!(identity.client_id));
        }
        entry
    }
}

/// `duration` in milliseconds to the microsecond (`3.04`, not
/// `3.0401569999999998`), as every log line and audit entry gives one.
pub fn millis(duration: Duration) -> f64 {
    // A whole number of microseconds over 1000 prints with at most three
    // decimals: the division rounds to the closest f64 of that decimal.
    duration.as_micros() as f64 / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_milliseconds_with_at_most_three_decimals() {
        let shown = |nanos| json!(millis(Duration::from_nanos(nanos))).to_string();
        assert_eq!(shown(3_040_156), "3.04");
        assert_eq!(shown(3_040_999), "3.04");
        assert_eq!(shown(123_456_789), "123.456");
        assert_eq!(shown(999), "0.0");
        assert_eq!(
            format!("{:?}", millis(Duration::from_nanos(580_400))),
            "0.58"
        );
    }
}
