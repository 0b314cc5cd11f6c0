//! The input a running task of 2026-07-28 waits for: what its guest asked
//! after the call became a task, pending under a key until `tasks/update`
//! answers it (SEP-2322, SEP-2663).
//!
//! The guest's thread posts its requests (one, or a batch's under the
//! tool's keys; a lone request gets a key minted here) and blocks until
//! every one is answered, the call's deadline or its cancellation. Meanwhile
//! the task is `input_required` and `tasks/get` shows the still-pending
//! requests as `inputRequests`; a partial `tasks/update` answers some and
//! leaves the others pending. Keys not pending are ignored.

use std::collections::BTreeMap;
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::observe::{Ask, AskFailure};
use crate::sandbox::CancelToken;
use crate::sync::lock;

/// How often a waiting guest's thread looks at its cancellation.
const CHECK_EVERY: Duration = Duration::from_millis(50);

/// Told the pending `inputRequests` whenever they change (`None`: nothing
/// pending): the task shows them and is `input_required` meanwhile.
pub type OnChange = Box<dyn Fn(Option<Value>) + Send + Sync>;

/// One task's pending requests and the answers delivered for them.
#[derive(Default)]
pub struct Inputs {
    state: Mutex<State>,
    answered: Condvar,
    on_change: OnceLock<OnChange>,
}

impl std::fmt::Debug for Inputs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = lock(&self.state);
        f.debug_struct("Inputs")
            .field("pending", &state.pending.keys().collect::<Vec<_>>())
            .field("answered", &state.answers.keys().collect::<Vec<_>>())
            .finish()
    }
}

#[derive(Default)]
struct State {
    /// Keys minted so far (for lone requests).
    minted: u64,
    /// Waiting for an answer: key -> `{method, params}`.
    pending: BTreeMap<String, Value>,
    /// Delivered, not yet taken by the guest.
    answers: BTreeMap<String, Value>,
}

impl State {
    fn requests(&self) -> Option<Value> {
        (!self.pending.is_empty()).then(|| {
            Value::Object(
                self.pending
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            )
        })
    }
}

impl Inputs {
    /// Starts telling `on_change` of the pending requests (at once, with
    /// what is pending now: the guest may have asked before its task was
    /// made). Only the first call counts.
    pub fn watch(&self, on_change: OnChange) {
        let now = lock(&self.state).requests();
        if self.on_change.set(on_change).is_ok() {
            self.changed(now);
        }
    }

    fn changed(&self, requests: Option<Value>) {
        if let Some(on_change) = self.on_change.get() {
            on_change(requests);
        }
    }

    /// What is pending now, as `inputRequests` (`None`: nothing).
    pub fn requests(&self) -> Option<Value> {
        lock(&self.state).requests()
    }

    /// Posts `asks` and blocks this (guest's) thread until all are
    /// answered (the answers in their order), `deadline` or `cancel`.
    /// Whatever is left unanswered stops being pending.
    pub fn wait(
        &self,
        asks: &[Ask],
        deadline: Instant,
        cancel: &CancelToken,
    ) -> Vec<Result<Value, AskFailure>> {
        let keys = self.post(asks);
        let mut state = lock(&self.state);
        loop {
            if keys.iter().all(|k| state.answers.contains_key(k)) {
                let answers = keys
                    .iter()
                    .map(|k| Ok(state.answers.remove(k).unwrap_or(Value::Null)))
                    .collect();
                return answers;
            }
            if cancel.is_cancelled() || Instant::now() >= deadline {
                break;
            }
            state = match self.answered.wait_timeout(state, CHECK_EVERY) {
                Ok((state, _)) => state,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
        for key in &keys {
            state.pending.remove(key);
            state.answers.remove(key);
        }
        let now = state.requests();
        drop(state);
        self.changed(now);
        let why = match cancel.is_cancelled() {
            true => "the task was cancelled",
            false => {
                "the client did not answer (tasks/update) within the call's time (limits.time)"
            }
        };
        asks.iter()
            .map(|_| Err(AskFailure::Failed(why.into())))
            .collect()
    }

    /// Makes `asks` pending: under the tool's keys, or minted ones.
    fn post(&self, asks: &[Ask]) -> Vec<String> {
        let mut state = lock(&self.state);
        let keys: Vec<String> = asks
            .iter()
            .map(|ask| {
                let key = ask.key.clone().unwrap_or_else(|| {
                    state.minted += 1;
                    format!("input-{}", state.minted)
                });
                let request = json!({ "method": ask.kind.method(), "params": ask.params });
                state.pending.insert(key.clone(), request);
                key
            })
            .collect();
        let now = state.requests();
        drop(state);
        self.changed(now);
        keys
    }

    /// Delivers `responses` (`inputResponses` of `tasks/update`): each one
    /// whose key is pending answers it; the others are ignored. The keys
    /// it answered.
    pub fn answer(&self, responses: &Map<String, Value>) -> Vec<String> {
        let mut state = lock(&self.state);
        let mut answered = Vec::new();
        for (key, response) in responses {
            if state.pending.remove(key).is_some() {
                state.answers.insert(key.clone(), response.clone());
                answered.push(key.clone());
            }
        }
        if answered.is_empty() {
            return answered;
        }
        let now = state.requests();
        drop(state);
        self.answered.notify_all();
        self.changed(now);
        answered
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::AskKind;
    use std::sync::Arc;

    fn elicit(key: Option<&str>, message: &str) -> Ask {
        Ask {
            kind: AskKind::ElicitForm,
            params: json!({ "mode": "form", "message": message, "requestedSchema": {} }),
            index: 0,
            key: key.map(str::to_string),
        }
    }

    /// Waits (on another thread) for `asks`; the answers when they come.
    fn waiting(
        inputs: &Arc<Inputs>,
        asks: Vec<Ask>,
    ) -> std::thread::JoinHandle<Vec<Result<Value, AskFailure>>> {
        let inputs = inputs.clone();
        std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(30);
            inputs.wait(&asks, deadline, &CancelToken::new())
        })
    }

    fn until_pending(inputs: &Inputs, n: usize) -> Value {
        loop {
            if let Some(requests) = inputs.requests()
                && requests.as_object().map(Map::len) == Some(n)
            {
                return requests;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn a_batch_stays_pending_until_every_key_is_answered() {
        let inputs = Arc::new(Inputs::default());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = seen.clone();
        inputs.watch(Box::new(move |r| lock(&record).push(r)));
        let guest = waiting(
            &inputs,
            vec![elicit(Some("a"), "A?"), elicit(Some("b"), "B?")],
        );
        let requests = until_pending(&inputs, 2);
        assert_eq!(requests["a"]["method"], "elicitation/create");
        assert_eq!(requests["b"]["params"]["message"], "B?");
        // A partial answer (and a key nobody asked) leaves the other pending.
        let mut partial = Map::new();
        partial.insert(
            "a".into(),
            json!({ "action": "accept", "content": {"x": 1} }),
        );
        partial.insert("unknown".into(), json!({}));
        assert_eq!(inputs.answer(&partial), ["a"]);
        let left = inputs.requests().unwrap();
        assert_eq!(left.as_object().unwrap().keys().collect::<Vec<_>>(), ["b"]);
        let mut rest = Map::new();
        rest.insert("b".into(), json!({ "action": "decline" }));
        assert_eq!(inputs.answer(&rest), ["b"]);
        let answers = guest.join().unwrap();
        assert_eq!(
            answers[0],
            Ok(json!({ "action": "accept", "content": {"x": 1} }))
        );
        assert_eq!(answers[1], Ok(json!({ "action": "decline" })));
        assert_eq!(inputs.requests(), None);
        // The watcher saw none, both, one, none.
        let seen = lock(&seen).clone();
        assert_eq!(seen.first(), Some(&None));
        assert_eq!(seen.last(), Some(&None));
        assert!(seen.iter().any(|r| {
            r.as_ref()
                .is_some_and(|r| r.as_object().unwrap().len() == 1)
        }));
    }

    #[test]
    fn lone_requests_get_minted_keys_and_a_cancel_ends_the_wait() {
        let inputs = Arc::new(Inputs::default());
        let cancel = CancelToken::new();
        let (waiter, stop) = (inputs.clone(), cancel.clone());
        let guest = std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(30);
            waiter.wait(&[elicit(None, "Sure?")], deadline, &stop)
        });
        let requests = until_pending(&inputs, 1);
        assert!(requests.get("input-1").is_some());
        cancel.cancel();
        let answers = guest.join().unwrap();
        assert_eq!(
            answers,
            [Err(AskFailure::Failed("the task was cancelled".into()))]
        );
        assert_eq!(inputs.requests(), None);
        // An answer after that answers nothing.
        let mut late = Map::new();
        late.insert("input-1".into(), json!({ "action": "accept" }));
        assert!(inputs.answer(&late).is_empty());
    }
}
