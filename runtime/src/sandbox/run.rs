//! One call's store from instantiation to outcome: calling the guest,
//! checking the output's size, and telling why a trap happened — the
//! runtime's own records first (deadline, cancellation, memory), then the
//! trap kind, then a Rust panic's message on the guest's stderr.

use wasmtime::{Store, Trap};

use super::call_state::CallState;
use super::interruption::Interruption;
use super::pipe::CapturedOutput;
use super::{RawOutput, RunError, ToolPre, bindings::types};
use crate::logtext::GuestText;
use crate::policy::Limits;
use crate::tool::{Content, ResourceBody};

/// One store in use, and what is needed to explain how it ended.
pub(super) struct Run {
    pub(super) store: Store<CallState>,
    pub(super) output: CapturedOutput,
    pub(super) limits: Limits,
}

impl Run {
    /// Instantiates the tool's component and calls tool `name`; checks the
    /// output's size against the grant.
    pub(super) fn call(
        &mut self,
        pre: &ToolPre<CallState>,
        name: &str,
        arguments: &str,
    ) -> Result<RawOutput, RunError> {
        let result = pre
            .instantiate_call(&mut self.store)
            .and_then(|(_, call)| call.call(&mut self.store, (name, arguments)))
            .map(|(returned,)| returned);
        self.tool_output(result)
    }

    /// The outcome of a contract call that ended with `result`, either way
    /// it was called: the guest's answer checked, its trap explained.
    pub(super) fn tool_output(
        &mut self,
        result: wasmtime::Result<Result<types::Output, types::Error>>,
    ) -> Result<RawOutput, RunError> {
        self.store.data_mut().flush_notices();
        let returned = self.finish(result)?;
        match returned {
            Ok(out) => self.checked(
                out.content.into_iter().map(Content::from).collect(),
                out.structured.map(Structured::Text),
            ),
            Err(types::Error::InvalidArguments(message)) => {
                Err(RunError::InvalidArguments(message))
            }
            Err(types::Error::Failed(message)) => Err(self.failed(message)),
        }
    }

    /// What the guest returned, unless it is larger than the grant's output
    /// limit; structured output parsed here, so that redaction sees the
    /// decoded values the client will receive (an escaped secret in JSON
    /// text is no longer escaped once parsed).
    pub(super) fn checked(
        &self,
        content: Vec<Content>,
        structured: Option<Structured>,
    ) -> Result<RawOutput, RunError> {
        let size = content_size(&content) + structured.as_ref().map_or(0, Structured::len);
        if size > self.limits.output {
            return Err(RunError::OutputTooLarge {
                actual: size,
                limit: self.limits.output,
            });
        }
        let structured =
            match structured {
                None => None,
                Some(Structured::Value(value)) => Some(value),
                Some(Structured::Text(text)) => Some(serde_json::from_str(&text).map_err(|e| {
                    RunError::BadOutput(format!("structured output is not JSON: {e}"))
                })?),
            };
        Ok(RawOutput {
            content,
            structured,
        })
    }

    /// The tool's own failure, noting the folder limits the call reached
    /// (often the reason it failed).
    pub(super) fn failed(&self, mut message: String) -> RunError {
        let reached = self.store.data().folder_guard.limits_reached();
        if !reached.is_empty() {
            message = format!("{message} (the call reached {})", reached.join(", "));
        }
        RunError::Failed(message)
    }

    /// Turns a guest's trap into the limit or fault that caused it.
    pub(super) fn finish<T>(&self, result: wasmtime::Result<T>) -> Result<T, RunError> {
        let err = match result {
            Ok(value) => return Ok(value),
            Err(err) => err,
        };
        let state = self.store.data();
        // Stopped at a request a later round answers: not a fault, and no
        // trap to explain (`Sandbox::run_granted` makes the wait the run's
        // outcome, whatever error this is).
        if !state.asks.next_round.is_empty() {
            return Err(RunError::Cancelled);
        }
        // Ask the runtime's own records first: they are certain, the trap
        // kind is not (an aborting allocator traps with `unreachable`).
        match state.interruption {
            Some(Interruption::TimedOut) => return Err(RunError::TimedOut(self.limits.time)),
            Some(Interruption::Cancelled) => return Err(RunError::Cancelled),
            None => {}
        }
        if state.limiter.memory_hit {
            return Err(RunError::Memory(self.limits.memory));
        }
        match err.downcast_ref::<Trap>() {
            Some(Trap::StackOverflow) => return Err(RunError::StackOverflow),
            Some(Trap::OutOfFuel) => return Err(RunError::Fuel),
            _ => {}
        }
        if let Some(message) = panic_message(&self.output) {
            return Err(RunError::Panic(message));
        }
        if let Some(exit) = err.downcast_ref::<wasmtime_wasi::I32Exit>() {
            return Err(RunError::Crashed(format!(
                "it exited (status {}) without returning a result",
                exit.0
            )));
        }
        let cause = match err.downcast_ref::<Trap>() {
            // Rust and C guests keep their own stack in linear memory, below
            // the data; overflowing it wraps to an out-of-bounds address.
            Some(Trap::MemoryOutOfBounds) => {
                "out-of-bounds memory access (a guest overflowing its own stack ends like this)"
                    .to_string()
            }
            Some(trap) => trap.to_string(),
            // The cause without the guest's wasm backtrace: that is for the
            // operator's log, not for the client.
            None => err
                .chain()
                .map(ToString::to_string)
                .filter(|e| !e.starts_with(WASM_BACKTRACE))
                .collect::<Vec<_>>()
                .join(": "),
        };
        // Function names in a backtrace are the guest's text too.
        let trap = state.redactor.text(&format!("{err:?}")).into_owned();
        tracing::info!("guest trap: {}", GuestText(&trap));
        Err(RunError::Crashed(cause))
    }
}

/// How wasmtime's `WasmBacktrace` context starts when displayed (it is a
/// context, not an error type, so the chain cannot be asked for its type).
const WASM_BACKTRACE: &str = "error while executing at wasm backtrace";

/// The message of a Rust guest's panic, from the standard panic hook's
/// `panicked at FILE:LINE:COL:\nMESSAGE` on stderr.
fn panic_message(output: &CapturedOutput) -> Option<String> {
    let tail = output.find_line("panicked at ")?;
    let mut lines = tail.lines();
    let first = lines.next()?;
    // Older formats put the message on the same line in quotes.
    let message = match lines.next() {
        Some(line) if first.trim_end().ends_with(':') => line.to_string(),
        _ => first.to_string(),
    };
    Some(message.trim().to_string())
}

/// A guest's structured result as it crossed the boundary: JSON text (WIT
/// tools, wasmcp) or a value already lifted (plain functions).
pub(super) enum Structured {
    Text(String),
    Value(serde_json::Value),
}

impl Structured {
    /// Its size as JSON text, the measure of the output limit.
    fn len(&self) -> u64 {
        match self {
            Structured::Text(text) => text.len() as u64,
            Structured::Value(value) => {
                let mut counter = ByteCount(0);
                // Writing to a counter cannot fail.
                let _ = serde_json::to_writer(&mut counter, value);
                counter.0
            }
        }
    }
}

/// A writer that only counts.
struct ByteCount(u64);

impl std::io::Write for ByteCount {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

pub(super) fn content_size(content: &[Content]) -> u64 {
    let size: usize = content
        .iter()
        .map(|c| match c {
            Content::Text(t) => t.len(),
            Content::Image { data, .. } | Content::Audio { data, .. } => data.len(),
            Content::Embedded { body, uri, .. } => {
                uri.len()
                    + match body {
                        ResourceBody::Text(t) => t.len(),
                        ResourceBody::Blob(b) => b.len(),
                    }
            }
            Content::Link { uri, name, .. } => uri.len() + name.len(),
        })
        .sum();
    size as u64
}
