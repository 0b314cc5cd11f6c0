//! What a running call reports while it runs, and who receives it.
//!
//! The sandbox hands a guest's `host.log` and `host.progress` calls to a
//! [`CallObserver`]; the protocols turn them into notifications, the CLI
//! prints them. A guest's requests to the client (`host.elicit`,
//! `host.sample`, `host.roots`, and each request of a `host.ask` batch),
//! once the grant allowed them, go to the observer too
//! ([`CallObserver::ask`]): only a protocol with a client can answer them.
//! It sits at the bottom of the module graph so that the sandbox needs
//! nothing of the layers that run it.

use std::time::Instant;

use serde_json::Value;

use crate::tool::Level;

/// Which capability of the client a request needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AskKind {
    /// `elicitation/create`, form mode.
    ElicitForm,
    /// `elicitation/create`, URL mode.
    ElicitUrl,
    /// `sampling/createMessage`.
    Sample,
    /// `roots/list`.
    Roots,
}

impl AskKind {
    /// The MCP method of the request.
    pub fn method(self) -> &'static str {
        match self {
            AskKind::ElicitForm | AskKind::ElicitUrl => "elicitation/create",
            AskKind::Sample => "sampling/createMessage",
            AskKind::Roots => "roots/list",
        }
    }
}

/// A request to the client a guest makes during a call, as MCP params
/// (already checked against the grant and its limits).
#[derive(Debug, Clone, PartialEq)]
pub struct Ask {
    pub kind: AskKind,
    pub params: Value,
    /// The call's nth request to the client (from 0): with the params, what
    /// a recorded answer of an earlier round is found by.
    pub index: u32,
    /// The key the tool gave the request in a batch (`host.ask`): with the
    /// params (not the place), what its recorded answer is found by, and
    /// its key among a round's `inputRequests`.
    pub key: Option<String>,
}

/// Why a request to the client got no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AskFailure {
    /// No client can answer here (the CLI), or it did not declare the
    /// capability.
    Unavailable(String),
    /// The client answered with an error, or not before the call's deadline.
    Failed(String),
    /// Not answered yet, and answered only in a later round (a multi
    /// round-trip of 2026-07-28): the guest is stopped, its request sent
    /// with the call's answer, and the call re-run on the retry.
    NextRound,
}

/// Receives what the guest reports while it runs.
pub trait CallObserver: Send + Sync {
    /// A `host.log` call by the guest.
    fn log(&self, level: Level, message: &str);
    /// A `host.progress` call by the guest. The runtime has already dropped
    /// reports that go backwards.
    fn progress(&self, done: f64, total: Option<f64>, message: Option<&str>);
    /// A `host.resource-updated` call: the guest says one of its resources
    /// changed.
    fn resource_updated(&self, _uri: &str) {}
    /// A request to the client (granted, within the call's limits): its
    /// result, as the client sent it. Blocks until the answer, `deadline`
    /// or the call's cancellation, whichever comes first. Where there is no
    /// client to ask (the CLI), the request is unavailable.
    fn ask(&self, _ask: &Ask, _deadline: Instant) -> Result<Value, AskFailure> {
        Err(AskFailure::Unavailable(
            "there is no client to ask here (a call from the command line); serve the \
             component over MCP"
                .into(),
        ))
    }
    /// Requests [`CallObserver::ask`] answered [`AskFailure::NextRound`]
    /// for (one, or a batch's): where the call runs as a task that waits
    /// for its input (2026-07-28), blocks until all are answered, the
    /// deadline or the call's cancellation, and answers them in order;
    /// `None` where they go to a next round instead.
    fn wait_in_task(
        &self,
        _asks: &[Ask],
        _deadline: Instant,
    ) -> Option<Vec<Result<Value, AskFailure>>> {
        None
    }
}

/// An observer that ignores everything.
pub struct Unobserved;

impl CallObserver for Unobserved {
    fn log(&self, _: Level, _: &str) {}
    fn progress(&self, _: f64, _: Option<f64>, _: Option<&str>) {}
}
