//! The one path every entry into a guest takes once its kind has found and
//! checked it: consent, an id, a place under its concurrency limit (or in
//! the queue before it), the run — on a lane, inline, or in a task of its
//! own when it may ask its client —, cancellation when its caller goes
//! away, and its record (metrics, log lines, audit entry) however it ends.
//! A tool call and a read, prompt or completion differ only in their
//! [`Entry`].

use std::sync::Arc;
use std::time::Instant;

use super::consent::{self, Confirmation};
use super::entry::{Entering, Entry, Outcome};
use super::on_lane::{CancelOnDrop, on_a_lane};
use super::record::{self, Audited, Entered};
use super::running::Place;
use super::updates::{Publishing, ResourceUpdates};
use super::{CallError, Caller, Setting};
use crate::audit::AuditLog;
use crate::catalog::Catalog;
use crate::observe::CallObserver;
use crate::policy::Grant;
use crate::sandbox::{CancelToken, Ran, RunError, Sandbox, Teardown};

/// An entry whose guest, arguments and grant are settled; only consent
/// (when the policy asks for confirmation) and the guest's run remain.
/// Dropping it gives its place under the concurrency limit back.
pub struct Prepared<E: Entry> {
    id: u64,
    entry: E,
    grant: Grant,
    caller: Caller,
    /// The client's answer, once asked (only a `confirm` rule asks).
    answer: Option<Confirmation>,
    cancel: CancelToken,
    sandbox: Arc<Sandbox>,
    /// Its component's cordon, when its guests run in a worker process.
    cordon: Option<Arc<crate::cordon::Link>>,
    /// The catalog it was prepared with (it decides which of the URIs its
    /// component announces are its own).
    catalog: Arc<Catalog>,
    updates: Arc<ResourceUpdates>,
    /// Held for its lifetime: its place under the limit (or in the queue
    /// before it) and among the calls in flight (shutdown counts and stops
    /// it).
    place: Place,
    /// Taken when it ends (once).
    ending: Option<Ending>,
    /// The trace of the request it came with, carried to wherever its
    /// guest runs (`None` unless exporting: [`crate::telemetry`]).
    trace: Option<crate::telemetry::Context>,
}

/// What recording an entry when it ends needs.
struct Ending {
    log: Option<Arc<AuditLog>>,
    started: Instant,
    bytes_in: usize,
}

/// Finishes preparing `entry`, found and checked by its kind and granted
/// `grant`, which came `started`: the `deny` consent rule, an id, a place.
/// A refusal is recorded here; the outcome of one that runs when it ends.
pub(super) fn prepare<E: Entry>(
    setting: &Setting<'_>,
    caller: Caller,
    started: Instant,
    bytes_in: usize,
    (entry, grant): (E, Grant),
) -> Result<Prepared<E>, CallError> {
    let component = entry.component();
    let cancel = CancelToken::new();
    let placed = consent::check_allowed(&component.name, entry.label(), &grant).and_then(|()| {
        let id = next_id();
        let limit = grant.limits.concurrency;
        let busy = || entry.busy_name();
        Place::take(setting.running, id, entry.places(), limit, &cancel, busy)
            .map(|place| (id, place))
    });
    let (id, place) = match placed {
        Ok(placed) => placed,
        Err(err) => {
            let outcome = record::Ended::of(&err);
            let audited = || (entry.audit_name(), bytes_in);
            let digest = Some(component.digest.as_str());
            let label = Some(entry.label());
            record::refused_before(
                setting.audit,
                &caller,
                label,
                digest,
                outcome,
                started,
                audited,
            );
            return Err(err);
        }
    };
    let cordon = setting
        .cordons
        .and_then(|cordons| cordons.link(&component.name))
        .cloned();
    Ok(Prepared {
        id,
        entry,
        grant,
        caller,
        answer: None,
        cancel,
        sandbox: setting.sandbox.clone(),
        cordon,
        catalog: setting.catalog.clone(),
        updates: setting.updates.clone(),
        place,
        ending: Some(Ending {
            log: setting.audit.cloned(),
            started,
            bytes_in,
        }),
        trace: crate::telemetry::current(),
    })
}

/// The outcome of a run no round can follow (see [`Ran::settled`]).
pub fn settled<E: Entry>(outcome: Outcome<E>) -> Result<E::Answer, CallError> {
    outcome.and_then(|ran| ran.settled().map_err(CallError::from))
}

/// A new id: unique within this process, in the order entries arrived.
fn next_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl<E: Entry> Prepared<E> {
    /// What is entered.
    pub fn entry(&self) -> &E {
        &self.entry
    }

    /// Its id in this process's log lines and audit entries.
    pub fn id(&self) -> u64 {
        self.id
    }

    pub fn grant(&self) -> &Grant {
        &self.grant
    }

    pub fn caller(&self) -> &Caller {
        &self.caller
    }

    /// Stops it (from anywhere, at any time): before it runs, it will not;
    /// while it runs, the guest is interrupted.
    pub fn cancel_token(&self) -> &CancelToken {
        &self.cancel
    }

    /// True when the client must confirm it (a destructive call) and has
    /// not answered yet.
    pub fn needs_confirmation(&self) -> bool {
        self.answer.is_none() && consent::needs_confirmation(&self.grant)
    }

    /// Records the client's answer to the confirmation request.
    pub fn confirm(&mut self, answer: Confirmation) {
        self.answer = Some(answer);
    }

    /// Runs the guest (blocking), after waiting for a place under the
    /// limit if it has none yet.
    pub fn run(self, observer: Arc<dyn CallObserver>) -> Result<E::Answer, CallError> {
        let mut outcome = None;
        self.run_delivering(observer, |delivered| outcome = Some(delivered));
        // `run_delivering` delivers exactly once, on every path.
        outcome.unwrap_or_else(|| Err(RunError::Cancelled.into()))
    }

    /// Like [`Self::run`], but hands the outcome to `deliver` before the
    /// instance is torn down, so an answer does not wait for the reset of
    /// the instance's memory (see [`crate::sandbox::Teardown`]).
    pub fn run_delivering(
        self,
        observer: Arc<dyn CallObserver>,
        deliver: impl FnOnce(Result<E::Answer, CallError>),
    ) {
        self.deliver_outcome(observer, |outcome| deliver(settled::<E>(outcome)));
    }

    /// Runs the guest and hands its outcome (a wait included) to `deliver`
    /// before the instance is torn down.
    fn deliver_outcome(
        mut self,
        observer: Arc<dyn CallObserver>,
        deliver: impl FnOnce(Outcome<E>),
    ) {
        let (patience, cancel) = (self.grant.limits.time, self.cancel.clone());
        let busy = || self.entry.busy_name();
        if let Err(err) = self.place.hold_blocking(patience, &cancel, busy) {
            deliver(self.refused(err));
            return;
        }
        let (outcome, teardown) = self.run_to_teardown(observer);
        deliver(outcome);
        drop(teardown);
    }

    /// Runs the guest on a lane, where no round of a multi round-trip can
    /// follow (see [`Self::run_in_rounds`] for the rest).
    pub async fn run_on_lane(
        self,
        observer: Arc<dyn CallObserver>,
    ) -> Option<Result<E::Answer, CallError>> {
        Some(settled::<E>(self.run_in_rounds(observer).await?))
    }

    /// Runs the guest on a lane (it blocks its thread while it runs). The
    /// outcome comes back as soon as it is known — an answer, a failure,
    /// or, when `observer` asks in rounds (2026-07-28), a wait for the
    /// client ([`Ran::Waits`]); the instance is torn down afterwards on
    /// that thread, while the answer is on its way. `None` means the thread
    /// died before it had an outcome (a bug).
    ///
    /// A short entry on an otherwise idle server runs on the async thread
    /// instead (see [`crate::lanes::Inline`] for the rule): right here, or
    /// — when its grant lets it ask the client — in a task of its own, so
    /// that this future stays free while the guest waits for an answer
    /// only this future's caller can deliver (see [`Self::run_apart`]).
    /// Its instance is torn down by a task of this thread once the answer
    /// has gone.
    pub async fn run_in_rounds(mut self, observer: Arc<dyn CallObserver>) -> Option<Outcome<E>> {
        // Over the limit: wait here, without a thread, for a place.
        let (patience, cancel) = (self.grant.limits.time, self.cancel.clone());
        let held = self
            .place
            .hold(patience, &cancel, || self.entry.busy_name());
        if let Err(err) = held.await {
            return Some(self.refused(err));
        }
        if self.cordon.is_some() {
            return self.run_in_worker(observer).await;
        }
        if self.grant.asks.any() {
            return self.run_apart(observer).await;
        }
        if let Some(inline) = self.try_inline() {
            return Some(self.run_inline(inline, observer).hand_over());
        }
        self.run_on_a_lane(observer).await
    }

    /// A place on the async thread, when the entry's pace and the server's
    /// load allow it.
    fn try_inline(&self) -> Option<crate::lanes::Inline> {
        let pace = self.entry.pace()?;
        crate::lanes::Inline::try_start(pace, || self.place.alone())
    }

    /// Runs an entry that may ask its client: inline in a task of its own
    /// (when the rule lets it run inline at all), else on a lane — never
    /// inside the future that awaits it. A question waits for what only
    /// that future's callers move: an HTTP POST's SSE answer, which carries
    /// the question, is written by the very task that polls the call, and
    /// a 2026-07-28 call becomes a task after its first moments by a timer
    /// racing it. Polled in place, a guest blocked on its question would
    /// hold them still until its time limit. Costs a task (run next on
    /// this thread, no other thread woken) and only for such entries.
    async fn run_apart(self, observer: Arc<dyn CallObserver>) -> Option<Outcome<E>> {
        if !self.entry.pace().is_some_and(|pace| pace.is_short()) {
            return self.run_on_a_lane(observer).await;
        }
        // Dropping the future (the client went away) stops the guest.
        let stop_on_drop = CancelOnDrop::arm(self.cancel.clone());
        let apart = tokio::spawn(async move {
            if let Some(inline) = self.try_inline() {
                return RanAt::Inline(self.run_inline(inline, observer));
            }
            RanAt::Lane(self.run_on_a_lane(observer).await)
        });
        let ran = apart.await.ok();
        stop_on_drop.disarm();
        match ran? {
            // Torn down from here, where the answer goes on: the task
            // spawned for it then runs next on this thread.
            RanAt::Inline(inline) => Some(inline.hand_over()),
            RanAt::Lane(outcome) => outcome,
        }
    }

    /// Runs the guest on this (async) thread, holding `inline`.
    fn run_inline(
        self,
        inline: crate::lanes::Inline,
        observer: Arc<dyn CallObserver>,
    ) -> Inlined<E> {
        crate::metrics::ran_inline();
        let (outcome, teardown) = self.run_to_teardown(observer);
        drop(inline);
        Inlined { outcome, teardown }
    }

    /// Runs an entry of a cordoned component: its guest runs in the
    /// cordon's worker, and this side only waits for the worker's messages,
    /// in a task (the server's reader of the worker wakes it): no lane and
    /// no blocking thread per call, the async thread free meanwhile. A task
    /// of its own, run next on this thread, so that a caller that goes
    /// away cancels the run rather than drops it: the worker is told, and
    /// the entry's record is written however it ends.
    async fn run_in_worker(self, observer: Arc<dyn CallObserver>) -> Option<Outcome<E>> {
        let stop_on_drop = CancelOnDrop::arm(self.cancel.clone());
        let ran = tokio::spawn(self.run_recorded_in_worker(observer))
            .await
            .ok();
        stop_on_drop.disarm();
        ran
    }

    async fn run_recorded_in_worker(mut self, observer: Arc<dyn CallObserver>) -> Outcome<E> {
        let (outcome, teardown) = self.run_guest_in_worker(observer).await;
        self.record(&outcome, Some(&teardown));
        outcome
    }

    /// Hands the entry to a lane and waits for its outcome.
    async fn run_on_a_lane(self, observer: Arc<dyn CallObserver>) -> Option<Outcome<E>> {
        on_a_lane(self.cancel.clone(), move |tx| {
            self.deliver_outcome(observer, |outcome| {
                let _ = tx.send(outcome);
            });
        })
        .await
    }

    /// One that never ran (it waited for a place in vain): recorded as
    /// such, and its error handed back.
    fn refused(mut self, err: CallError) -> Outcome<E> {
        let result = Err(err);
        self.record(&result, None);
        result
    }

    fn run_to_teardown(mut self, observer: Arc<dyn CallObserver>) -> (Outcome<E>, Teardown) {
        let (result, teardown) = self.run_guest(observer);
        self.record(&result, Some(&teardown));
        (result, teardown)
    }

    /// Writes its record (once), with what its `teardown` (none for one
    /// that never ran) knows: what the guest printed, the credentials its
    /// requests carried, the folder operations refused, its questions.
    fn record(&mut self, result: &Outcome<E>, teardown: Option<&Teardown>) {
        let Some(ending) = self.ending.take() else {
            return;
        };
        let _trace = crate::telemetry::enter(self.trace.as_ref());
        let outcome = match result {
            Ok(Ran::Answered(_)) => record::Ended::OK,
            Ok(Ran::Waits(_)) => record::Ended::INPUT_REQUIRED,
            Err(err) => record::Ended::of(err),
        };
        let entered = Entered {
            id: Some(self.id),
            label: Some(self.entry.label()),
            caller: &self.caller,
            digest: Some(&self.entry.component().digest),
            grant: Some(&self.grant),
        };
        record::ended(
            ending.log.as_deref(),
            &entered,
            outcome,
            ending.started.elapsed(),
            teardown,
            || Audited {
                name: self.entry.audit_name(),
                bytes_in: ending.bytes_in,
                bytes_out: match result {
                    Ok(Ran::Answered(answer)) => E::bytes_out(answer),
                    Ok(Ran::Waits(_)) | Err(_) => 0,
                },
            },
        );
    }

    fn run_guest(&self, observer: Arc<dyn CallObserver>) -> (Outcome<E>, Teardown) {
        if self.cordon.is_some() {
            // Only an embedder's blocking run of a cordoned entry comes
            // here; the server's are async (`run_in_worker`).
            let ran = wait_apart(self.run_guest_in_worker(observer));
            return ran.unwrap_or_else(|| {
                let err = RunError::Setup("cannot wait for its cordon's worker".into());
                (Err(err.into()), Teardown::none())
            });
        }
        let _trace = crate::telemetry::enter(self.trace.as_ref());
        if let Some(refused) = self.refusal() {
            return (Err(refused), Teardown::none());
        }
        let component = self.entry.component();
        let observer = Publishing::wrap(observer, component, &self.catalog, &self.updates);
        self.entry.run(Entering {
            sandbox: &self.sandbox,
            grant: &self.grant,
            observer,
            cancel: self.cancel.clone(),
            id: self.id,
        })
    }

    /// [`Self::run_guest`] for an entry whose guest runs in its cordon's
    /// worker.
    async fn run_guest_in_worker(&self, observer: Arc<dyn CallObserver>) -> (Outcome<E>, Teardown) {
        let Some(cordon) = self.cordon.as_ref() else {
            let err = RunError::Setup("its component is in no cordon".into());
            return (Err(err.into()), Teardown::none());
        };
        if let Some(refused) = self.refusal() {
            return (Err(refused), Teardown::none());
        }
        let work = match self.entry.work() {
            Ok(work) => work,
            Err(answer) => return (Ok(Ran::Answered(answer)), Teardown::none()),
        };
        // The worker continues this entry's trace.
        let trace = {
            let _trace = crate::telemetry::enter(self.trace.as_ref());
            crate::telemetry::traceparent()
        };
        let component = self.entry.component();
        let observer = Publishing::wrap(observer, component, &self.catalog, &self.updates);
        let (name, digest) = (&component.name, &component.digest);
        let cancel = self.cancel.clone();
        let ran = cordon.run(name, digest, work, trace, &self.grant, observer, cancel);
        let (ran, teardown) = ran.await;
        (self.entry.answered(ran), teardown)
    }

    /// Why its guest may not run now: the client did not confirm it, or it
    /// was stopped before it started (while waiting for confirmation, or in
    /// the queue) — then no guest runs at all.
    fn refusal(&self) -> Option<CallError> {
        let confirmed = consent::check_confirmed(self.entry.label(), &self.grant, self.answer);
        if let Err(refused) = confirmed {
            return Some(refused);
        }
        self.cancel
            .is_cancelled()
            .then(|| RunError::Cancelled.into())
    }
}

/// Waits for `run` on a thread of its own with an async runtime of its own,
/// from a thread that may be any; `None` if that failed.
fn wait_apart<T: Send>(run: impl std::future::Future<Output = T> + Send) -> Option<T> {
    std::thread::scope(|scope| {
        let waiting = scope.spawn(|| {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
                .ok()?;
            Some(runtime.block_on(run))
        });
        waiting.join().ok().flatten()
    })
}

/// The outcome of an entry run inline, and its instance still to tear down.
struct Inlined<E: Entry> {
    outcome: Outcome<E>,
    teardown: Teardown,
}

impl<E: Entry> Inlined<E> {
    /// The outcome; the instance is torn down once this task has sent the
    /// answer (a task spawned here runs next on this thread, with no other
    /// thread woken).
    fn hand_over(self) -> Outcome<E> {
        let teardown = self.teardown;
        tokio::spawn(async move { drop(teardown) });
        self.outcome
    }
}

/// Where an entry run apart ([`Prepared::run_apart`]) ran.
enum RanAt<E: Entry> {
    Inline(Inlined<E>),
    Lane(Option<Outcome<E>>),
}
