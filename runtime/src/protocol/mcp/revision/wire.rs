//! The one interface every revision implements ([`Wire`]): what the
//! revision-independent core asks of a revision — how a result is
//! decorated, lists hinted, a task answered, a destructive call
//! confirmed, a tool's requests carried.

use serde_json::{Map, Value};

use crate::protocol::jsonrpc::ErrorObject;
use crate::protocol::mcp::model::tools::TaskAsked;
use crate::tool::TaskSupport;

/// How a destructive call is confirmed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confirming {
    /// An elicitation request sent while the call waits.
    ByElicitation,
    /// A multi round-trip: `input_required` with a signed `requestState`.
    ByRoundTrip,
}

/// How a running tool's requests reach the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AskingBy {
    /// Requests on the request's stream while the call waits.
    InBand,
    /// Rounds: the call answers `input_required`, and is run again with
    /// the responses.
    Rounds,
}

/// Everything a revision decides, asked by the core.
pub trait Wire: Sync {
    /// Each request stands alone (its revision and the client's
    /// capabilities in its `_meta`), with no session.
    fn stateless(&self) -> bool;

    /// A result as this revision answers it (2026-07-28: `resultType` and
    /// the server's identity in `_meta`).
    fn decorate(&self, result: Value) -> Value;

    /// A list result's caching hints, for `ttl_ms`; `private` when a token
    /// sees only its own.
    fn cache_hints(&self, result: &mut Map<String, Value>, ttl_ms: u64, private: bool);

    /// The code of an unknown resource.
    fn resource_not_found(&self) -> i64;

    /// Whether a `tools/call` of `tool` (whose `taskSupport` is `support`)
    /// runs as a task, with the lifetime asked (`Some(None)`: the
    /// default); `client_tasks`: the request declares the tasks extension.
    fn task_of_call(
        &self,
        tool: &str,
        support: TaskSupport,
        asked: Option<TaskAsked>,
        client_tasks: bool,
    ) -> Result<Option<Option<u64>>, ErrorObject>;

    /// Whether tasks are on for a request (`client_tasks`: it declares the
    /// extension).
    fn tasks_on(&self, client_tasks: bool) -> bool;

    /// Tasks are in the core protocol: a task's logs, progress, requests
    /// and status notifications reach the client while it runs, and a
    /// task-augmented call refused before it runs still answers a task.
    fn core_tasks(&self) -> bool;

    /// How a destructive call is confirmed.
    fn confirming(&self) -> Confirming;

    /// How a running tool (that may ask) asks its client.
    fn asking_by(&self) -> AskingBy;

    /// An elicitation request carries `mode` (older clients do not know
    /// it), so URL mode can be asked.
    fn elicitation_has_mode(&self) -> bool;

    /// What a task is answered as when it is created: the
    /// `CreateTaskResult` of the revision, from the task object.
    fn created_task(&self, task: Value) -> Value;

    /// What `tasks/cancel` answers, from the cancelled task object.
    fn cancelled_task(&self, task: Value) -> Value;

    /// Whether a `tasks/cancel` of a task already ended is an error.
    fn cancelling_an_ended_task_fails(&self) -> bool;

    /// The capabilities only this revision announces, added to those the
    /// method table gives (`reached`: whether a method is served).
    fn announce(&self, capabilities: &mut Map<String, Value>, reached: &dyn Fn(&str) -> bool);
}
