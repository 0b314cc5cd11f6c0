//! The serving process's side of one call in a worker: what the worker
//! says during the call goes to the call's observer, within the call's
//! grant — the guest's log and progress messages within `limits.messages`,
//! its questions to the client admitted as the sandbox admits a guest's
//! (the worker checked them too; the server does not take a worker's word
//! for it) — the client's answers and the call's cancellation go back, and
//! its end is checked against the output limit and the questions asked.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc::UnboundedReceiver;

use super::wire::{Done, Ended, FromWorker, Reported, ToWorker};
use crate::observe::{Ask, AskFailure, CallObserver};
use crate::policy::Grant;
use crate::sandbox::asks::AskState;
use crate::sandbox::{CancelToken, Ran, RunError, Teardown};

/// How often a call waiting on its worker looks at its cancel token (it
/// also looks at each message).
const CANCEL_POLL: Duration = Duration::from_millis(10);

/// How long past the call's time limit the server waits for its worker's
/// end of it: the worker stops the guest at the limit itself; one that
/// does not (stuck, or an escaped guest's) holds the call no longer.
const OVERSTAY: Duration = Duration::from_secs(2);

/// Where a call and its answers and cancellation go: its worker.
pub(super) trait Replies: Sync {
    /// Sends `message`; one not taken by `by` fails as timed out.
    fn reply(
        &self,
        message: &ToWorker,
        by: Instant,
    ) -> impl Future<Output = std::io::Result<()>> + Send;
}

/// A call that did not reach its worker.
pub(super) fn unavailable(cordon: &str, err: &str) -> RunError {
    RunError::Setup(format!(
        "the worker of cordon {cordon:?} is not available ({err}); the call did not run — retry \
         it, and see the server's log"
    ))
}

/// One call in flight in a worker, as the server sees it.
pub(super) struct Relay<'a> {
    /// The cordon, for messages.
    cordon: &'a str,
    id: u64,
    observer: Arc<dyn CallObserver>,
    cancel: &'a CancelToken,
    /// What the call may still ask, as its grant says.
    asks: AskState,
    /// Log and progress messages it may still send the client.
    messages_left: u64,
    output_limit: u64,
    /// The call's time limit, and when the server stops waiting for it.
    time: Duration,
    deadline: Instant,
    /// The requests admitted: the only ones its run may wait on.
    admitted: Vec<Ask>,
    cancel_sent: bool,
}

impl<'a> Relay<'a> {
    pub(super) fn new(
        cordon: &'a str,
        id: u64,
        grant: &Grant,
        observer: Arc<dyn CallObserver>,
        cancel: &'a CancelToken,
    ) -> Self {
        Relay {
            cordon,
            id,
            observer,
            cancel,
            asks: AskState::new(grant.asks, &grant.limits)
                .with_elicit_urls(grant.elicit_urls.clone()),
            messages_left: grant.limits.messages,
            output_limit: grant.limits.output,
            time: grant.limits.time,
            deadline: Instant::now() + grant.limits.time,
            admitted: Vec::new(),
            cancel_sent: false,
        }
    }

    /// Relays the call's messages from `rx` (its answers to `worker`)
    /// until it is done, its worker dies, or it overstays its time limit.
    /// Waiting costs no thread: the server's reading of the worker wakes
    /// this future with each message.
    pub(super) async fn until_done(
        mut self,
        run: ToWorker,
        rx: &mut UnboundedReceiver<FromWorker>,
        worker: &impl Replies,
    ) -> (Result<Ran<Done>, RunError>, Teardown) {
        let given_up = self.deadline + OVERSTAY;
        if let Err(err) = worker.reply(&run, given_up).await {
            let failed = match err.kind() {
                std::io::ErrorKind::TimedOut => RunError::TimedOut(self.time),
                _ => unavailable(self.cordon, &err.to_string()),
            };
            return (Err(failed), Teardown::none());
        }
        let given_up_at = tokio::time::Instant::from_std(given_up);
        loop {
            if self.cancel.is_cancelled() && !self.cancel_sent {
                self.cancel_sent = true;
                let (id, shutdown) = (self.id, self.cancel.is_shut_down());
                let _ = worker
                    .reply(&ToWorker::Cancel { id, shutdown }, given_up)
                    .await;
            }
            // One timer: the next look at the cancel token, or the end.
            let wake = match self.cancel_sent {
                true => given_up_at,
                false => given_up_at.min(tokio::time::Instant::now() + CANCEL_POLL),
            };
            let message = tokio::select! {
                biased;
                message = rx.recv() => message,
                () = tokio::time::sleep_until(wake) => match wake < given_up_at {
                    true => continue,
                    false => return self.overstayed(worker).await,
                },
            };
            let Some(message) = message else {
                let died = RunError::Crashed(format!(
                    "the worker process of cordon {:?} died during the call (its log says \
                     why); it is restarted, and no other cordon's calls are affected",
                    self.cordon
                ));
                return (Err(died), Teardown::none());
            };
            match self.hear(message).await {
                Some(Heard::Reply(reply)) => {
                    let _ = worker.reply(&reply, given_up).await;
                }
                Some(Heard::Done(outcome, reported)) => return self.ended(outcome, reported),
                None => {}
            }
        }
    }

    /// The worker did not end the call by its time limit: it is told to
    /// stop it, and the call fails as one that ran out of time does.
    async fn overstayed(&self, worker: &impl Replies) -> (Result<Ran<Done>, RunError>, Teardown) {
        tracing::warn!(
            cordon = %self.cordon,
            "a call's worker did not end it within its time limit ({}s) and {}s more; the \
             call failed as timed out",
            self.time.as_secs_f64(),
            OVERSTAY.as_secs()
        );
        // Its pipe has room for this unless the worker stopped reading.
        let (id, shutdown, now) = (self.id, false, Instant::now());
        let _ = worker
            .reply(&ToWorker::Cancel { id, shutdown }, now + OVERSTAY)
            .await;
        (Err(RunError::TimedOut(self.time)), Teardown::none())
    }

    /// When an answer the worker waits for is due: when it says, but never
    /// after the call's time limit (the worker's word is not taken).
    fn due(&self, within_ms: u64) -> Instant {
        let said = Instant::now().checked_add(Duration::from_millis(within_ms));
        said.map_or(self.deadline, |said| said.min(self.deadline))
    }

    /// One message of the worker: what it asks for back, if anything.
    async fn hear(&mut self, message: FromWorker) -> Option<Heard> {
        let id = self.id;
        match message {
            FromWorker::Log { level, message, .. } => {
                if self.may_say() {
                    self.observer.log(super::convert::level(&level), &message);
                }
                None
            }
            FromWorker::Progress {
                done,
                total,
                message,
                ..
            } => {
                if self.may_say() {
                    self.observer.progress(done, total, message.as_deref());
                }
                None
            }
            FromWorker::ResourceUpdated { uri, .. } => {
                self.observer.resource_updated(&uri);
                None
            }
            FromWorker::Ask {
                seq,
                ask,
                within_ms,
                ..
            } => {
                let deadline = self.due(within_ms);
                let answer = match Ask::try_from(ask) {
                    Ok(ask) => self.ask(ask, deadline).await,
                    Err(err) => Err(AskFailure::Failed(err)),
                };
                let answer = answer.map_err(|f| (&f).into());
                Some(Heard::Reply(ToWorker::Answer { id, seq, answer }))
            }
            FromWorker::WaitInTask {
                seq,
                asks,
                within_ms,
                ..
            } => {
                let deadline = self.due(within_ms);
                // Only requests admitted in this call are waited on.
                let asks: Option<Vec<Ask>> = asks
                    .into_iter()
                    .map(|ask| self.admitted_as(Ask::try_from(ask).ok()?))
                    .collect();
                let answers = match asks {
                    Some(asks) => {
                        let observer = self.observer.clone();
                        off_thread(move || observer.wait_in_task(&asks, deadline))
                            .await
                            .flatten()
                    }
                    None => None,
                };
                let answers = answers.map(|all| {
                    all.into_iter()
                        .map(|a| a.map_err(|f| (&f).into()))
                        .collect()
                });
                Some(Heard::Reply(ToWorker::Waited { id, seq, answers }))
            }
            FromWorker::Done {
                outcome, reported, ..
            } => Some(Heard::Done(outcome, reported)),
            FromWorker::Ready | FromWorker::Listed { .. } => None,
        }
    }

    /// A question of the guest, admitted against the grant, then asked
    /// (the wait for the client's answer on a thread of its own).
    async fn ask(
        &mut self,
        mut ask: Ask,
        deadline: Instant,
    ) -> Result<serde_json::Value, AskFailure> {
        match self.asks.admit_relayed(ask.kind, &mut ask.params) {
            Ok(()) => {
                self.admitted.push(ask.clone());
                let observer = self.observer.clone();
                off_thread(move || observer.ask(&ask, deadline))
                    .await
                    .unwrap_or_else(|| Err(AskFailure::Failed("the wait for it failed".into())))
            }
            Err(note) => {
                tracing::warn!(cordon = %self.cordon, "{note} (relayed by its worker)");
                Err(AskFailure::Unavailable(note))
            }
        }
    }

    /// The request as it was admitted in this call, if it was.
    fn admitted_as(&self, ask: Ask) -> Option<Ask> {
        self.admitted
            .iter()
            .find(|a| a.kind == ask.kind && a.index == ask.index && a.key == ask.key)
            .cloned()
    }

    fn may_say(&mut self) -> bool {
        match self.messages_left {
            0 => false,
            _ => {
                self.messages_left -= 1;
                true
            }
        }
    }

    /// The call's end as the worker reported it, with what its teardown
    /// said, checked: within the output limit, waiting only on requests
    /// it asked and the server admitted.
    fn ended(
        &self,
        outcome: Result<Ended, RunError>,
        reported: Reported,
    ) -> (Result<Ran<Done>, RunError>, Teardown) {
        let outcome = outcome.and_then(|ended| match ended {
            Ended::Answered(output) => Ok(Ran::Answered(Done::Output(output.into()))),
            Ended::Offered(offered) => Ok(Ran::Answered(Done::Offer(Ok(offered.into())))),
            Ended::NotFound(missing) => Ok(Ran::Answered(Done::Offer(Err(missing)))),
            Ended::Waits(asks) => asks
                .into_iter()
                .map(|ask| {
                    let ask = Ask::try_from(ask).map_err(RunError::Crashed)?;
                    self.admitted_as(ask).ok_or_else(|| {
                        RunError::Crashed(
                            "its worker says it waits on a request it never asked".into(),
                        )
                    })
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Ran::Waits),
        });
        let outcome = outcome.and_then(|ran| match ran {
            Ran::Answered(done) if done.size() > self.output_limit => {
                Err(RunError::OutputTooLarge {
                    actual: done.size(),
                    limit: self.output_limit,
                })
            }
            ran => Ok(ran),
        });
        let teardown = Teardown::apart(
            (reported.guest_log, reported.log_dropped),
            reported.credentials_used,
            reported.asks.into_iter().map(Into::into).collect(),
            reported.folder_refusals,
        );
        (outcome, teardown)
    }
}

/// Runs `wait`, which blocks until the client answers, on tokio's
/// blocking pool; `None` if it panicked.
async fn off_thread<R: Send + 'static>(wait: impl FnOnce() -> R + Send + 'static) -> Option<R> {
    tokio::task::spawn_blocking(wait).await.ok()
}

/// What a message of the worker calls for.
enum Heard {
    /// An answer to send it.
    Reply(ToWorker),
    /// The call's end.
    Done(Result<Ended, RunError>, Reported),
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Client;
    impl CallObserver for Client {
        fn log(&self, _: crate::tool::Level, _: &str) {}
        fn progress(&self, _: f64, _: Option<f64>, _: Option<&str>) {}
        fn ask(&self, _: &Ask, _: Instant) -> Result<serde_json::Value, AskFailure> {
            Ok(serde_json::Value::Null)
        }
    }

    #[test]
    fn a_worker_may_not_give_the_client_longer_than_the_call_s_time_limit() {
        let mut grant = Grant::default();
        grant.limits.time = Duration::from_secs(5);
        let cancel = CancelToken::new();
        let relay = Relay::new("c", 1, &grant, Arc::new(Client), &cancel);
        // An hour, or more than a clock holds: the call's own end.
        assert_eq!(relay.due(3_600_000), relay.deadline);
        assert_eq!(relay.due(u64::MAX), relay.deadline);
        // Sooner than that: what it says.
        assert!(relay.due(1_000) < relay.deadline);
    }
}
