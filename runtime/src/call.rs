//! One call, end to end: look the tool up, prepare its arguments, check
//! consent, run it in the sandbox, check its result.
//!
//! The seam to the protocols is deliberately synchronous and two-step:
//! [`crate::Runtime::prepare`] validates everything that needs no guest
//! (tool name, arguments, consent rule) and says whether the client must
//! confirm; [`PreparedCall::run`] then blocks while the guest runs. Protocol
//! code runs it on a lane (`protocol::lanes`) and handles confirmation (MCP
//! elicitation) in between.

use crate::tool::Level;

/// Receives what the guest reports while it runs.
pub trait CallObserver: Send + Sync {
    /// A `host.log` call by the guest.
    fn log(&self, level: Level, message: &str);
    /// A `host.progress` call by the guest. The runtime has already dropped
    /// reports that go backwards.
    fn progress(&self, done: f64, total: Option<f64>, message: Option<&str>);
}

/// An observer that ignores everything.
pub struct Unobserved;

impl CallObserver for Unobserved {
    fn log(&self, _: Level, _: &str) {}
    fn progress(&self, _: f64, _: Option<f64>, _: Option<&str>) {}
}

use std::sync::Arc;

use serde_json::Value;

use crate::args::ArgumentError;
use crate::catalog::Tool;
use crate::logtext::GuestText;
use crate::policy::{Consent, Grant};
use crate::sandbox::{CancelToken, RawOutput, RunError, Sandbox, Teardown, format_size};
use crate::tool::{Content, Output};

/// Why a call produced no result.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CallError {
    #[error("unknown tool {0:?}")]
    UnknownTool(String),
    /// The runtime's argument check refused the arguments.
    #[error("{0}")]
    InvalidArguments(#[from] ArgumentError),
    /// The policy does not permit the call.
    #[error("{0}")]
    Refused(Refusal),
    /// The tool already runs as many calls as its limit allows.
    #[error("busy: {tool} already runs {limit} calls, its limit; retry later")]
    Busy { tool: String, limit: u32 },
    /// The guest ran and did not produce a result.
    #[error("{0}")]
    Run(#[from] RunError),
}

impl CallError {
    /// A short machine-readable outcome for the audit log.
    pub fn kind(&self) -> &'static str {
        match self {
            CallError::UnknownTool(_) => "unknown-tool",
            CallError::InvalidArguments(_) => "invalid-arguments",
            CallError::Refused(_) => "refused",
            CallError::Busy { .. } => "busy",
            CallError::Run(run) => run.kind(),
        }
    }

    /// Whether the arguments are at fault (as opposed to the tool or a limit).
    pub fn is_argument_error(&self) -> bool {
        matches!(
            self,
            CallError::InvalidArguments(_) | CallError::Run(RunError::InvalidArguments(_))
        )
    }
}

/// A call the policy does not permit. `Display` is what the client sees:
/// which capability and why, nothing of the runtime's machine; `operator_hint`
/// names the policy key that would allow it and goes to the runtime's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub message: String,
    pub operator_hint: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "not permitted: {}", self.message)
    }
}

/// The client's answer when asked to confirm a destructive call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confirmation {
    Accepted,
    Declined,
    /// The client cannot be asked (no elicitation capability, a CLI call…).
    Unavailable,
}

/// A call whose tool, arguments and grant are settled; only consent (when
/// the policy asks for confirmation) and the guest's run remain.
pub struct PreparedCall {
    /// This process's number for the call, in its log lines and audit entry.
    pub(crate) id: u64,
    pub(crate) tool: Arc<Tool>,
    pub(crate) arguments: Value,
    pub(crate) grant: Grant,
    /// Held for the call's lifetime: the place in the tool's concurrency limit.
    pub(crate) _slot: Option<crate::runtime::Slot>,
    pub(crate) audit: Option<Audit>,
}

/// A new call id: unique within this process, in the order calls arrived.
pub(crate) fn next_call_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// What the audit log needs to record a call when it ends.
pub(crate) struct Audit {
    pub log: Arc<crate::audit::AuditLog>,
    pub caller: Option<String>,
    pub started: std::time::Instant,
    pub bytes_in: usize,
}

impl PreparedCall {
    pub fn tool(&self) -> &Arc<Tool> {
        &self.tool
    }

    /// The call's id in this process's log lines and audit entries.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The validated arguments the guest will receive.
    pub fn arguments(&self) -> &Value {
        &self.arguments
    }

    pub fn grant(&self) -> &Grant {
        &self.grant
    }

    /// True when the client must confirm this (destructive) call first.
    pub fn needs_confirmation(&self) -> bool {
        self.grant.consent == Some(Consent::Confirm)
    }

    /// Runs the guest (blocking). `confirmation` matters only when
    /// [`Self::needs_confirmation`] is true.
    pub fn run(
        self,
        sandbox: &Sandbox,
        observer: Arc<dyn CallObserver>,
        cancel: CancelToken,
        confirmation: Confirmation,
    ) -> Result<Output, CallError> {
        let (outcome, _teardown) = self.run_to_teardown(sandbox, observer, cancel, confirmation);
        outcome
    }

    /// Like [`Self::run`], but hands the outcome to `deliver` before the
    /// instance is torn down, so an answer does not wait for the reset of
    /// the instance's memory (see [`crate::sandbox::Teardown`]).
    pub fn run_delivering(
        self,
        sandbox: &Sandbox,
        observer: Arc<dyn CallObserver>,
        cancel: CancelToken,
        confirmation: Confirmation,
        deliver: impl FnOnce(Result<Output, CallError>),
    ) {
        let (outcome, teardown) = self.run_to_teardown(sandbox, observer, cancel, confirmation);
        deliver(outcome);
        drop(teardown);
    }

    fn run_to_teardown(
        mut self,
        sandbox: &Sandbox,
        observer: Arc<dyn CallObserver>,
        cancel: CancelToken,
        confirmation: Confirmation,
    ) -> (Result<Output, CallError>, Teardown) {
        let audit = self.audit.take();
        let (result, teardown) = self.run_guest(sandbox, observer, cancel, confirmation);
        if let Some(audit) = audit {
            let bytes_out = match &result {
                Ok(output) => crate::json::to_vec(&output.to_mcp()).len(),
                Err(_) => 0,
            };
            audit.log.record(&crate::audit::Entry {
                call: Some(self.id),
                tool: &self.tool.info.name,
                digest: Some(&self.tool.component.digest),
                caller: audit.caller.as_deref(),
                grant: Some(&self.grant),
                outcome: match &result {
                    Ok(_) => "ok",
                    Err(err) => err.kind(),
                },
                duration: audit.started.elapsed(),
                bytes_in: audit.bytes_in,
                bytes_out,
                credentials_used: &teardown.credentials_used(),
            });
        }
        (result, teardown)
    }

    fn run_guest(
        &self,
        sandbox: &Sandbox,
        observer: Arc<dyn CallObserver>,
        cancel: CancelToken,
        confirmation: Confirmation,
    ) -> (Result<Output, CallError>, Teardown) {
        if let Err(refused) = self.consent(confirmation) {
            return (Err(refused), Teardown::none());
        }
        let text = crate::json::to_string(&self.arguments);
        let (raw, teardown) = sandbox.call(
            &self.tool.component.pre,
            &self.tool.info.name,
            &text,
            &self.grant,
            observer,
            cancel,
        );
        let outcome = raw
            .map_err(CallError::from)
            .and_then(|raw| self.check_output(raw));
        (outcome, teardown)
    }

    /// Refuses a destructive call the client did not confirm.
    fn consent(&self, confirmation: Confirmation) -> Result<(), CallError> {
        if self.needs_confirmation() {
            let name = &self.tool.info.name;
            match confirmation {
                Confirmation::Accepted => {}
                Confirmation::Declined => {
                    return Err(CallError::Refused(Refusal {
                        message: format!(
                            "{name} is destructive and the client declined to confirm it"
                        ),
                        operator_hint: String::new(),
                    }));
                }
                Confirmation::Unavailable => {
                    return Err(CallError::Refused(Refusal {
                        message: format!(
                            "{name} is destructive and needs confirmation, which this client cannot give"
                        ),
                        operator_hint: format!(
                            "the policy says destructive = \"confirm\" for {name}; use a client with \
                             elicitation, or set destructive = \"allow\" for it"
                        ),
                    }));
                }
            }
        }
        Ok(())
    }

    /// Logs what the guest printed and checks its result.
    fn check_output(&self, raw: RawOutput) -> Result<Output, CallError> {
        let (log, dropped) = &raw.guest_log;
        // One log line per line the guest printed, escaped and marked as the
        // tool's, so that no guest text reads as the runtime's own line.
        for line in log.trim_end().lines() {
            tracing::info!(tool = %self.tool.info.name, call = self.id, "guest: {}", GuestText(line));
        }
        if *dropped > 0 {
            tracing::info!(
                tool = %self.tool.info.name,
                call = self.id,
                "guest output: {} more dropped (log limit {})",
                format_size(*dropped),
                format_size(self.grant.limits.log)
            );
        }
        finish_output(&self.tool, raw.content, raw.structured)
    }
}

/// Checks structured output against the tool's own output schema and adds
/// the JSON as text when the tool gave no content.
fn finish_output(
    tool: &Tool,
    mut content: Vec<Content>,
    structured: Option<String>,
) -> Result<Output, CallError> {
    let structured = match structured {
        None => None,
        Some(text) => Some(
            serde_json::from_str::<Value>(&text)
                .map_err(|e| RunError::BadOutput(format!("structured output is not JSON: {e}")))?,
        ),
    };
    if let Some(schema) = &tool.output {
        let Some(value) = &structured else {
            return Err(RunError::BadOutput(
                "the tool declares an output schema but returned no structured output".into(),
            )
            .into());
        };
        schema.check(value).map_err(|why| {
            RunError::BadOutput(format!("it does not match the tool's output schema: {why}"))
        })?;
    }
    if content.is_empty()
        && let Some(value) = &structured
    {
        content.push(Content::Text(crate::json::to_string(value)));
    }
    Ok(Output {
        content,
        structured,
    })
}
