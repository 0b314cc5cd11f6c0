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

/// An append-only JSON Lines file.
pub struct AuditLog {
    file: Mutex<File>,
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
}

impl AuditLog {
    /// Opens (creating if needed) the file for appending.
    pub fn open(path: &Path) -> std::io::Result<Self> {
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        Ok(AuditLog {
            file: Mutex::new(file),
        })
    }

    /// Appends one line. A failing write is logged, never fatal to the call.
    pub fn record(&self, entry: &Entry<'_>) {
        let mut line = entry.to_json().to_string();
        line.push('\n');
        let mut file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(err) = file.write_all(line.as_bytes()) {
            tracing::error!("cannot write the audit log: {err}");
        }
    }
}

impl Entry<'_> {
    pub fn to_json(&self) -> Value {
        let mut entry = json!({
            "time": humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
            "call_id": self.call,
            "tool": self.tool,
            "component_sha256": self.digest,
            "caller": self.caller,
            "caller_kind": self.caller_kind,
            "grant": self.grant.map(grant_summary),
            "outcome": self.outcome,
            "duration_ms": self.duration.as_secs_f64() * 1000.0,
            "bytes_in": self.bytes_in,
            "bytes_out": self.bytes_out,
            "credentials_used": self.credentials_used,
            "folder_refusals": self.folder_refusals,
        });
        // Only an access token's caller has them.
        if let (Some(identity), Some(fields)) = (self.identity, entry.as_object_mut()) {
            fields.insert("issuer".into(), json!(identity.issuer));
            fields.insert("subject".into(), json!(identity.subject));
            fields.insert("client_id".into(), json!(identity.client_id));
        }
        entry
    }
}

fn grant_summary(grant: &Grant) -> Value {
    let mut summary = json!({
        "folders": grant.mounts.iter()
            .map(|m| format!("{} ({})", m.guest, m.access))
            .collect::<Vec<_>>(),
        "network": grant.network.as_ref().map(|n| {
            n.allow.iter().map(|p| p.to_string()).collect::<Vec<_>>()
        }),
        "env": grant.env.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
        "credentials": grant.network.as_ref().map(|n| {
            n.credentials.iter().map(|c| c.describe()).collect::<Vec<_>>()
        }),
        "memory": grant.limits.memory,
        "time_ms": grant.limits.time.as_millis() as u64,
        "fuel": grant.limits.fuel,
    });
    // Only a destructive tool has a consent rule to record.
    if let (Some(consent), Some(map)) = (grant.consent, summary.as_object_mut()) {
        map.insert("destructive".into(), consent.as_str().into());
    }
    summary
}
