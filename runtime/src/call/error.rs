//! Why a call produced no result, in words for the client; and, for a
//! refusal, the policy key for the operator.

use crate::args::ArgumentError;
use crate::sandbox::RunError;

/// Why an entry into a guest (a tool call, a read, a prompt, a
/// completion) produced no result.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CallError {
    #[error("unknown tool {0:?}")]
    UnknownTool(String),
    /// No such resource or prompt (the text says what exists), or the
    /// component said it has no such resource.
    #[error("{0}")]
    NotFound(String),
    /// The runtime's argument check refused the arguments.
    #[error("{0}")]
    InvalidArguments(#[from] ArgumentError),
    /// A read's, prompt's or completion's arguments do not fit what the
    /// component declares: a required prompt argument is missing, an
    /// argument is unknown.
    #[error("{0}")]
    InvalidParams(String),
    /// The policy does not permit the call.
    #[error("{0}")]
    Refused(Refusal),
    /// The tool runs as many calls as its limit allows and as many more
    /// wait (or this one waited its whole `limits.time`).
    #[error(
        "busy: {tool} runs {limit} calls, its limit, and up to {queue} more wait; retry in a second"
    )]
    Busy {
        tool: String,
        limit: u32,
        queue: u32,
    },
    /// The guest ran and did not produce a result.
    #[error("{0}")]
    Run(#[from] RunError),
}

impl CallError {
    /// The outcome of a call the policy refused ([`CallError::Refused`]).
    pub const REFUSED: &'static str = "refused";

    /// A short machine-readable outcome for the audit log.
    pub fn kind(&self) -> &'static str {
        match self {
            CallError::UnknownTool(_) => "unknown-tool",
            CallError::NotFound(_) => "not-found",
            CallError::InvalidArguments(_) | CallError::InvalidParams(_) => "invalid-arguments",
            CallError::Refused(_) => Self::REFUSED,
            CallError::Busy { .. } => "busy",
            CallError::Run(run) => run.kind(),
        }
    }

    /// True for a refusal (the policy's, or busy: no place under the
    /// limits) or a limit hit while the guest ran ([`RunError::is_limit_hit`]):
    /// what the records count as refused and a trace shows as an
    /// `airlock.refusal` event of its [`Self::kind`]. Declared beside the
    /// kinds: a new variant must say whether it is one.
    pub fn is_refusal(&self) -> bool {
        match self {
            CallError::Refused(_) | CallError::Busy { .. } => true,
            CallError::Run(run) => run.is_limit_hit(),
            CallError::UnknownTool(_)
            | CallError::NotFound(_)
            | CallError::InvalidArguments(_)
            | CallError::InvalidParams(_) => false,
        }
    }

    /// A refusal by the policy, of any entry (a tool call, a read, a
    /// prompt, a completion): logged once here, as a warning, for the
    /// operator with the policy key that would allow it (the client sees
    /// only the message).
    pub fn refused(message: String, operator_hint: String) -> CallError {
        let refusal = Refusal {
            message,
            operator_hint,
        };
        if !refusal.operator_hint.is_empty() {
            tracing::warn!("{refusal}; to allow it: {}", refusal.operator_hint);
        }
        CallError::Refused(refusal)
    }

    /// Whether the arguments are at fault (as opposed to the tool or a limit).
    pub fn is_argument_error(&self) -> bool {
        matches!(
            self,
            CallError::InvalidArguments(_)
                | CallError::InvalidParams(_)
                | CallError::Run(RunError::InvalidArguments(_))
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
