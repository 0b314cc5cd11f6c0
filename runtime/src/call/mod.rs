//! One call, end to end: look the tool up, settle its grant, prepare its
//! arguments, apply both consent rules, take its place under the tool's
//! concurrency limit, run it in the sandbox, check its result, and record
//! it in the audit log with its caller.
//!
//! The seam to the protocols is deliberately two-step: [`prepare`]
//! validates everything that needs no guest and says whether the client
//! must confirm; [`PreparedCall::run`] (blocking) or
//! [`PreparedCall::run_on_lane`] (async, on [`crate::lanes`]) then runs the
//! guest. In between, a protocol may ask its client to confirm
//! ([`PreparedCall::confirm`]) and register the call's cancel token under
//! the request that asked for it. Every door — MCP of any revision, tasks,
//! `/rpc`, the CLI — goes through [`prepare`], so every audit entry names
//! its [`Caller`].

mod caller;
mod consent;
mod error;
mod offered;
mod on_lane;
mod output;
mod record;
mod running;
mod updates;

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;

pub use caller::Caller;
pub use consent::Confirmation;
pub use error::{CallError, Refusal};
pub use offered::{OfferError, PreparedOffer, grant_for_offers, prepare_offer};
pub use running::Running;
pub use updates::{ResourceUpdates, UpdateSink};

use crate::audit::AuditLog;
use crate::catalog::{Catalog, Tool};
use crate::observe::CallObserver;
use crate::policy::{self, Grant, Policy};
use crate::sandbox::{CancelToken, RunError, Sandbox, Teardown};
use crate::tool::Output;
use on_lane::{CancelOnDrop, on_a_lane};
use record::{Audited, Entered};
use running::Place;

/// What preparing a call needs of the runtime: where tools are found, the
/// rules that grant them, where calls run, and where they are recorded.
pub struct Setting<'a> {
    /// The catalog as it is now: a call keeps it (it decides which of the
    /// URIs its component announces are its own).
    pub catalog: &'a Arc<Catalog>,
    pub policy: &'a Policy,
    pub sandbox: &'a Arc<Sandbox>,
    pub audit: Option<&'a Arc<AuditLog>>,
    pub running: &'a Arc<Running>,
    /// Where a component's `host.resource-updated` is announced.
    pub updates: &'a Arc<ResourceUpdates>,
}

/// The effective grant of `tool` under `policy`.
pub fn grant_for(policy: &Policy, tool: &Tool) -> Grant {
    let settings = policy.settings_for(&tool.component.name, &tool.info.name);
    policy::effective(&settings, tool.info.hints)
}

/// Everything that can be checked before the guest runs: the tool exists,
/// the arguments fit, the policy permits the call, and the tool has room
/// under its concurrency limit. A refusal is recorded in the audit log
/// here; the outcome of a call that runs is recorded when it ends.
pub fn prepare(
    setting: &Setting<'_>,
    caller: Caller,
    name: &str,
    arguments: Value,
) -> Result<PreparedCall, CallError> {
    let started = Instant::now();
    // Only the audit log needs the size; skip the serialisation without one.
    let bytes_in = match setting.audit {
        Some(_) => crate::json::to_vec(&arguments).len(),
        None => 0,
    };
    let found = setting.catalog.tool(name).cloned();
    let checked = match &found {
        Some(tool) => check(setting, tool, arguments).map(|checked| (tool.clone(), checked)),
        None => Err(CallError::UnknownTool(name.to_string())),
    };
    let (tool, (arguments, grant, id, cancel, place)) = match checked {
        Ok(checked) => checked,
        Err(err) => {
            let label = found.as_ref().map(|t| t.info.name.as_str());
            let digest = found.as_ref().map(|t| t.component.digest.as_str());
            let audited = || (Cow::Borrowed(name), bytes_in);
            let (log, kind) = (setting.audit, err.kind());
            record::refused_before(log, &caller, label, digest, kind, started, audited);
            return Err(err);
        }
    };
    Ok(PreparedCall {
        id,
        tool,
        arguments,
        grant,
        caller,
        answer: None,
        cancel,
        sandbox: setting.sandbox.clone(),
        catalog: setting.catalog.clone(),
        updates: setting.updates.clone(),
        place,
        ending: Some(Ending {
            log: setting.audit.cloned(),
            started,
            bytes_in,
        }),
    })
}

type Checked = (Value, Grant, u64, CancelToken, Place<Tool>);

fn check(setting: &Setting<'_>, tool: &Arc<Tool>, arguments: Value) -> Result<Checked, CallError> {
    let grant = grant_for(setting.policy, tool);
    let arguments = tool.args.prepare(arguments)?;
    consent::check_allowed(&tool.component.name, &tool.info.name, &grant)?;
    let id = next_call_id();
    let cancel = CancelToken::new();
    let place = Place::take(setting.running, id, tool, grant.limits.concurrency, &cancel)?;
    Ok((arguments, grant, id, cancel, place))
}

/// A new call id: unique within this process, in the order calls arrived.
fn next_call_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// A call whose tool, arguments and grant are settled; only consent (when
/// the policy asks for confirmation) and the guest's run remain. Dropping
/// it gives its place under the concurrency limit back.
pub struct PreparedCall {
    id: u64,
    tool: Arc<Tool>,
    arguments: Value,
    grant: Grant,
    caller: Caller,
    /// The client's answer, once asked (only a `confirm` rule asks).
    answer: Option<Confirmation>,
    cancel: CancelToken,
    sandbox: Arc<Sandbox>,
    /// The catalog it was prepared with.
    catalog: Arc<Catalog>,
    updates: Arc<ResourceUpdates>,
    /// Held for the call's lifetime: its place under the tool's limit (or
    /// in the queue before it) and in the registry.
    place: Place<Tool>,
    /// Taken when the call ends (once).
    ending: Option<Ending>,
}

/// What recording a call when it ends needs.
struct Ending {
    log: Option<Arc<AuditLog>>,
    started: Instant,
    bytes_in: usize,
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

    pub fn caller(&self) -> &Caller {
        &self.caller
    }

    /// Stops the call (from anywhere, at any time): before it runs, it will
    /// not; while it runs, the guest is interrupted.
    pub fn cancel_token(&self) -> &CancelToken {
        &self.cancel
    }

    /// True when the client must confirm this (destructive) call and has
    /// not answered yet.
    pub fn needs_confirmation(&self) -> bool {
        self.answer.is_none() && consent::needs_confirmation(&self.grant)
    }

    /// Records the client's answer to the confirmation request.
    pub fn confirm(&mut self, answer: Confirmation) {
        self.answer = Some(answer);
    }

    /// Runs the guest (blocking), after waiting for a place under the
    /// tool's concurrency limit if it has none yet.
    pub fn run(mut self, observer: Arc<dyn CallObserver>) -> Result<Output, CallError> {
        let (patience, cancel) = (self.grant.limits.time, self.cancel.clone());
        if let Err(err) = self.place.hold_blocking(patience, &cancel) {
            return self.refused(err);
        }
        let (outcome, _teardown) = self.run_to_teardown(observer);
        outcome
    }

    /// Like [`Self::run`], but hands the outcome to `deliver` before the
    /// instance is torn down, so an answer does not wait for the reset of
    /// the instance's memory (see [`crate::sandbox::Teardown`]).
    pub fn run_delivering(
        mut self,
        observer: Arc<dyn CallObserver>,
        deliver: impl FnOnce(Result<Output, CallError>),
    ) {
        let (patience, cancel) = (self.grant.limits.time, self.cancel.clone());
        if let Err(err) = self.place.hold_blocking(patience, &cancel) {
            deliver(self.refused(err));
            return;
        }
        let (outcome, teardown) = self.run_to_teardown(observer);
        deliver(outcome);
        drop(teardown);
    }

    /// Runs the guest on a lane (it blocks its thread while it runs). The
    /// outcome comes back as soon as it is known; the instance is torn
    /// down afterwards on that thread, while the answer is on its way.
    /// `None` means the thread died before it had an outcome (a bug).
    ///
    /// A short call on an otherwise idle server runs on the async thread
    /// instead (see [`crate::lanes::Inline`] for the rule): right here, or
    /// — when its grant lets it ask the client — in a task of its own, so
    /// that this future stays free while the guest waits for an answer
    /// only this future's caller can deliver (see [`Self::run_apart`]).
    /// Its instance is torn down by a task of this thread once the answer
    /// has gone.
    pub async fn run_on_lane(
        mut self,
        observer: Arc<dyn CallObserver>,
    ) -> Option<Result<Output, CallError>> {
        // Over the tool's limit: wait here, without a thread, for a place.
        let (patience, cancel) = (self.grant.limits.time, self.cancel.clone());
        if let Err(err) = self.place.hold(patience, &cancel).await {
            return Some(self.refused(err));
        }
        if self.grant.asks.any() {
            return self.run_apart(observer).await;
        }
        if let Some(inline) =
            crate::lanes::Inline::try_start(&self.tool.pace, || self.place.alone())
        {
            return Some(self.run_inline(inline, observer).hand_over());
        }
        self.run_on_a_lane(observer).await
    }

    /// Runs a call that may ask its client: inline in a task of its own
    /// (when the rule lets it run inline at all), else on a lane — never
    /// inside the future that awaits it. A question waits for what only
    /// that future's callers move: an HTTP POST's SSE answer, which carries
    /// the question, is written by the very task that polls the call, and
    /// a 2026-07-28 call becomes a task after its first moments by a timer
    /// racing it. Polled in place, a guest blocked on its question would
    /// hold them still until its time limit. Costs a task (run next on
    /// this thread, no other thread woken) and only for such calls.
    async fn run_apart(self, observer: Arc<dyn CallObserver>) -> Option<Result<Output, CallError>> {
        if !self.tool.pace.is_short() {
            return self.run_on_a_lane(observer).await;
        }
        // Dropping the future (the client went away) stops the guest.
        let stop_on_drop = CancelOnDrop::arm(self.cancel.clone());
        let apart = tokio::spawn(async move {
            if let Some(inline) =
                crate::lanes::Inline::try_start(&self.tool.pace, || self.place.alone())
            {
                return Ran::Inline(self.run_inline(inline, observer));
            }
            Ran::Lane(self.run_on_a_lane(observer).await)
        });
        let ran = apart.await.ok();
        stop_on_drop.disarm();
        match ran? {
            // Torn down from here, where the answer goes on: the task
            // spawned for it then runs next on this thread.
            Ran::Inline(inline) => Some(inline.hand_over()),
            Ran::Lane(outcome) => outcome,
        }
    }

    /// Runs the guest on this (async) thread, holding `inline`.
    fn run_inline(self, inline: crate::lanes::Inline, observer: Arc<dyn CallObserver>) -> Inlined {
        crate::metrics::ran_inline();
        let (outcome, teardown) = self.run_to_teardown(observer);
        drop(inline);
        Inlined { outcome, teardown }
    }

    /// Hands the call to a lane and waits for its outcome.
    async fn run_on_a_lane(
        self,
        observer: Arc<dyn CallObserver>,
    ) -> Option<Result<Output, CallError>> {
        on_a_lane(self.cancel.clone(), move |tx| {
            self.run_delivering(observer, |outcome| {
                let _ = tx.send(outcome);
            });
        })
        .await
    }

    /// A call that never ran (it waited for a place in vain): recorded as
    /// such, and its error handed back.
    fn refused(mut self, err: CallError) -> Result<Output, CallError> {
        let result = Err(err);
        self.record(&result, None);
        result
    }

    fn run_to_teardown(
        mut self,
        observer: Arc<dyn CallObserver>,
    ) -> (Result<Output, CallError>, Teardown) {
        let (result, teardown) = self.run_guest(observer);
        self.record(&result, Some(&teardown));
        (result, teardown)
    }

    /// Writes the call's audit entry (once), with what its `teardown` (none
    /// for a call that never ran) knows: the credentials its requests
    /// carried, the folder operations refused.
    fn record(&mut self, result: &Result<Output, CallError>, teardown: Option<&Teardown>) {
        let Some(ending) = self.ending.take() else {
            return;
        };
        let outcome = match result {
            Ok(_) => "ok",
            Err(err) => err.kind(),
        };
        let entered = Entered {
            id: Some(self.id),
            label: Some(&self.tool.info.name),
            caller: &self.caller,
            digest: Some(&self.tool.component.digest),
            grant: Some(&self.grant),
        };
        record::ended(
            ending.log.as_deref(),
            &entered,
            outcome,
            ending.started.elapsed(),
            teardown,
            || Audited {
                name: Cow::Borrowed(&self.tool.info.name),
                bytes_in: ending.bytes_in,
                bytes_out: match result {
                    Ok(output) => crate::json::to_vec(&output.to_mcp()).len(),
                    Err(_) => 0,
                },
            },
        );
    }

    fn run_guest(&self, observer: Arc<dyn CallObserver>) -> (Result<Output, CallError>, Teardown) {
        if let Err(refused) =
            consent::check_confirmed(&self.tool.info.name, &self.grant, self.answer)
        {
            return (Err(refused), Teardown::none());
        }
        // Stopped before it started (while waiting for confirmation, or in
        // the queue): no guest runs at all.
        if self.cancel.is_cancelled() {
            return (Err(RunError::Cancelled.into()), Teardown::none());
        }
        let text = crate::json::to_string(&self.arguments);
        let observer =
            updates::Publishing::wrap(observer, &self.tool.component, &self.catalog, &self.updates);
        let started = Instant::now();
        let (raw, teardown) = self.sandbox.call(
            &self.tool.component.code(),
            &self.tool.info.name,
            &text,
            &self.grant,
            observer,
            self.cancel.clone(),
        );
        self.tool.pace.record(started.elapsed());
        let outcome = raw
            .map_err(CallError::from)
            .and_then(|raw| output::check(&self.tool, self.id, &self.grant, raw));
        (outcome, teardown)
    }
}

/// The outcome of a call run inline, and its instance still to tear down.
struct Inlined {
    outcome: Result<Output, CallError>,
    teardown: Teardown,
}

impl Inlined {
    /// The outcome; the instance is torn down once this task has sent the
    /// answer (a task spawned here runs next on this thread, with no other
    /// thread woken).
    fn hand_over(self) -> Result<Output, CallError> {
        let teardown = self.teardown;
        tokio::spawn(async move { drop(teardown) });
        self.outcome
    }
}

/// Where a call run apart ([`PreparedCall::run_apart`]) ran.
enum Ran {
    Inline(Inlined),
    Lane(Option<Result<Output, CallError>>),
}
