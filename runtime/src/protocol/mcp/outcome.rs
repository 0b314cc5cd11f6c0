//! What a tool call's end becomes in MCP — its result, a tool error the
//! model can read, the answer when the server shuts down — and the
//! observer that turns a running guest's logs and progress into
//! notifications. Shared by calls answered at once ([`super::tools`]) and
//! calls run as tasks ([`super::tasks`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Instant;

use serde_json::{Value, json};

use super::asks::InBand;
use super::model::to_value;
use super::model::tools::ToolError;
use super::replay::Replay;
use crate::call::CallError;
use crate::observe::{Ask, AskFailure, CallObserver};
use crate::protocol::jsonrpc::{self, ErrorObject};
use crate::protocol::outbox::Outbox;
use crate::tool::{Level, Output};

/// What a call's run answers: its result, a tool error the model can read
/// (`isError`), or an internal error when its thread failed.
pub fn outcome_of(
    tool: &str,
    run: Option<Result<Output, CallError>>,
) -> Result<Value, ErrorObject> {
    match run {
        Some(Ok(output)) => Ok(to_value(&output)),
        Some(Err(err)) => Ok(tool_error(&err)),
        None => {
            tracing::error!(tool, "the call's thread failed");
            Err(ErrorObject::internal())
        }
    }
}

/// The error for a tool that is not served; `loading` components are still
/// loading, and the tool may be one of theirs.
pub fn unknown_tool(name: &str, loading: usize) -> ErrorObject {
    let name = jsonrpc::shorten(name, 100);
    let message = match loading {
        0 => format!("Unknown tool: {name}"),
        n => format!(
            "Unknown tool: {name} ({n} component(s) still loading; \
             notifications/tools/list_changed follows when their tools are ready)"
        ),
    };
    ErrorObject::invalid_params(message).with_data(json!({ "tool": name }))
}

/// A `CallToolResult` with `isError: true`: the model sees the message and
/// can correct itself.
pub fn tool_error(err: &CallError) -> Value {
    to_value(ToolError::new(err.to_string()))
}

/// The answer to a request whose call the shutdown stopped: every request
/// gets exactly one answer, even then.
pub fn shutting_down() -> ErrorObject {
    ErrorObject::new(
        jsonrpc::TOOL_FAILED,
        "the server is shutting down; the call was stopped before it finished",
    )
}

/// Turns the guest's log and progress reports into MCP notifications, and
/// its requests to the client into requests (or rounds) of the revision.
/// One for every entry into a guest (a tool call, at once or as a task;
/// a read, a prompt, a completion): made by [`Observer::new`].
pub struct Observer {
    out: Outbox,
    /// Index into `Level::ALL` of the lowest level sent.
    level: Arc<AtomicU8>,
    /// The `logger` of its log messages: the tool, the URI read, the prompt.
    logger: String,
    /// The request's `progressToken`; no progress is sent without one.
    progress: Option<Value>,
    /// How the guest's requests reach the client; `None` for an entry that
    /// may ask nothing (the grant has no `ask`).
    asking: Option<Asking>,
}

impl Observer {
    /// The observer of an entry whose messages go to `out`, its log
    /// messages from `level` up, named `logger`.
    pub fn new(
        out: &Outbox,
        level: &Arc<AtomicU8>,
        logger: String,
        progress: Option<Value>,
        asking: Option<Asking>,
    ) -> Arc<Observer> {
        Arc::new(Observer {
            out: out.clone(),
            level: level.clone(),
            logger,
            progress,
            asking,
        })
    }
}

/// How a call's requests to the client are answered.
pub enum Asking {
    /// Sent to the client while the call runs (sessions).
    InBand(InBand),
    /// Answered from an earlier round's responses, or in the next round
    /// (2026-07-28).
    Replay(Replay),
}

impl CallObserver for Observer {
    fn log(&self, level: Level, message: &str) {
        if (level as u8) < self.level.load(Ordering::Relaxed) {
            return;
        }
        self.out.notify(jsonrpc::notification(
            "notifications/message",
            json!({ "level": level.as_str(), "logger": self.logger, "data": message }),
        ));
    }

    fn progress(&self, done: f64, total: Option<f64>, message: Option<&str>) {
        let Some(token) = &self.progress else { return };
        let mut params = json!({ "progressToken": token, "progress": done });
        if let Some(total) = total {
            params["total"] = total.into();
        }
        if let Some(message) = message {
            params["message"] = message.into();
        }
        self.out
            .notify(jsonrpc::notification("notifications/progress", params));
    }

    fn ask(&self, ask: &Ask, deadline: Instant) -> Result<Value, AskFailure> {
        match &self.asking {
            Some(Asking::InBand(in_band)) => in_band.ask(ask, deadline),
            Some(Asking::Replay(replay)) => replay.answer(ask),
            None => Err(AskFailure::Unavailable("nothing may be asked here".into())),
        }
    }

    fn wait_in_task(
        &self,
        asks: &[Ask],
        deadline: Instant,
    ) -> Option<Vec<Result<Value, AskFailure>>> {
        match &self.asking {
            Some(Asking::Replay(replay)) => replay.wait_in_task(asks, deadline),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn guest_logs_and_progress_become_notifications() {
        let (out, mut rx) = Outbox::channel();
        let level = Arc::new(AtomicU8::new(Level::Warning as u8));
        let observer = Observer::new(&out, &level, "t".into(), Some(json!("tok")), None);
        observer.log(Level::Info, "quiet");
        observer.log(Level::Error, "loud");
        observer.progress(1.0, Some(4.0), Some("a quarter"));
        let log = rx.try_recv().expect("a log notification");
        assert_eq!(log["method"], "notifications/message");
        assert_eq!(
            log["params"],
            json!({"level":"error","logger":"t","data":"loud"})
        );
        let progress = rx.try_recv().expect("a progress notification");
        assert_eq!(progress["method"], "notifications/progress");
        assert_eq!(
            progress["params"],
            json!({"progressToken":"tok","progress":1.0,"total":4.0,"message":"a quarter"})
        );
        assert!(rx.try_recv().is_err());
        // Without a progress token, progress is not reported.
        let (out, mut rx) = Outbox::channel();
        let observer = Observer::new(&out, &level, "t".into(), None, None);
        observer.progress(1.0, None, None);
        assert!(rx.try_recv().is_err());
    }

    #[test]
    fn tool_errors_are_results_with_is_error() {
        let err = CallError::Busy {
            tool: "t".into(),
            limit: 2,
            queue: 8,
        };
        let result = tool_error(&err);
        assert_eq!(result["isError"], true);
        assert!(
            result["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains("busy")
        );
    }
}
