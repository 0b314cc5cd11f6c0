//! A tool's requests to the client in revision 2026-07-28: a multi
//! round-trip by REPLAY, not suspension.
//!
//! The call runs; when the guest asks something not answered yet, it is
//! stopped there and the call answers `resultType: "input_required"` with
//! the request in `inputRequests` and a signed `requestState` carrying the
//! responses recorded so far. The client's retry (`inputResponses` +
//! `requestState`) runs the tool again from the start, and its requests
//! are answered, in order, from the recorded responses. A request is found
//! by a key made of its place in the call and its content, so a tool that
//! asks something else on the re-run gets a new round, never another
//! question's answer. A batch (`host.ask`) goes out in one round, each
//! request under the key the tool chose, and is found by that key and its
//! content.
//!
//! What this guarantees: no instance is kept between rounds (nothing held
//! while a person thinks; nothing to bound or lose); any replica sharing
//! the state key can take the retry; a state answers one retry only and
//! is bound to the caller, the tool, the arguments and a 5-minute expiry.
//! What it costs: the work a tool does before its question is done again
//! on each round — a tool should ask before it changes anything.
//!
//! A request the client cannot be asked (it did not declare the
//! capability) is `unavailable` to the tool, which decides; a tool that
//! then fails makes the call answer -32021 naming the capability.
//!
//! A call that became a task (it asked nothing in its first moments) has
//! no more rounds: what it asks then waits in the task ([`super::inputs`])
//! until `tasks/update` answers it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::asks::{for_revision, missing};
use super::inputs::Inputs;
use super::model::{InputRequest, InputRequired, Retry, to_value};
use super::request::{Answer, Client, META_CAPABILITIES, missing_capability};
use super::request_state::{UsedStates, first_use, now_secs, sign_round, verify_round};
use super::revision::Revision;
use crate::observe::{Ask, AskFailure, AskKind};
use crate::protocol::jsonrpc::ErrorObject;
use crate::replicas::SharedState;
use crate::sandbox::CancelToken;
use crate::sync::lock;

/// How long a round's `requestState` stays valid.
const STATE_TTL: Duration = Duration::from_secs(300);
/// The most bytes of responses a `requestState` carries: a tool that
/// gathers more in one call is refused rather than growing every retry.
const MAX_RECORDED: usize = 256 << 10;

/// The responses of the rounds so far, by request key.
#[derive(Debug, Clone)]
pub struct Replay {
    responses: BTreeMap<String, Value>,
    client: Client,
    revision: Revision,
    /// The first request the client could not be asked for want of a
    /// capability (shared by the clones: the observer's and the call's).
    missed: Arc<Mutex<Option<AskKind>>>,
    /// Set once the call became a task: no more rounds then; its requests
    /// wait in the task, until the call's cancellation.
    in_task: Arc<OnceLock<(Arc<Inputs>, CancelToken)>>,
}

/// The key a request's response is recorded under: for a request of a
/// batch, the tool's key and a digest of its method and content; else its
/// place in the call and that digest (a URL elicitation's fresh id left
/// out). A changed question under the same key is thus a new round.
pub fn key_of(ask: &Ask) -> String {
    let mut params = ask.params.clone();
    if let Some(map) = params.as_object_mut() {
        map.remove("elicitationId");
    }
    let content = json!([ask.kind.method(), params]).to_string();
    let digest = hex::encode(Sha256::digest(content.as_bytes()));
    let kind = match ask.kind {
        AskKind::ElicitForm | AskKind::ElicitUrl => "elicit",
        AskKind::Sample => "sample",
        AskKind::Roots => "roots",
    };
    match &ask.key {
        // `#` is in no key a tool may choose: the two kinds never meet.
        Some(key) => format!("{key}#{}", &digest[..12]),
        None => format!("{kind}-{}-{}", ask.index, &digest[..12]),
    }
}

/// The key a request goes out under in `inputRequests`, and the client
/// answers under: the tool's own, or [`key_of`].
pub fn wire_key(ask: &Ask) -> String {
    ask.key.clone().unwrap_or_else(|| key_of(ask))
}

impl Replay {
    /// The recorded response to `ask`, or the next round for it; a client
    /// without the capability is not asked at all.
    pub fn answer(&self, ask: &Ask) -> Result<Value, AskFailure> {
        if let Some(what) = missing(self.client, self.revision, ask.kind) {
            lock(&self.missed).get_or_insert(ask.kind);
            return Err(AskFailure::Unavailable(format!(
                "the request did not declare {what} (_meta clientCapabilities), so the client \
                 cannot be asked"
            )));
        }
        match self.responses.get(&key_of(ask)) {
            Some(response) => Ok(response.clone()),
            None => Err(AskFailure::NextRound),
        }
    }

    /// For requests not answered yet ([`Replay::answer`]): once the call
    /// became a task, blocks until `tasks/update` answers them all (or the
    /// deadline, or a cancel); before, `None` (they go to the next round).
    pub fn wait_in_task(
        &self,
        asks: &[Ask],
        deadline: Instant,
    ) -> Option<Vec<Result<Value, AskFailure>>> {
        let (inputs, cancel) = self.in_task.get()?;
        Some(inputs.wait(asks, deadline, cancel))
    }

    /// A first round: nothing recorded yet.
    pub fn new(client: Client, revision: Revision) -> Replay {
        Replay {
            responses: BTreeMap::new(),
            client,
            revision,
            missed: Arc::default(),
            in_task: Arc::default(),
        }
    }

    /// The call became a task (it asked nothing in its first moments):
    /// what it asks from now on waits in `inputs` (the task's), since a
    /// round is the answer of a `tools/call` and the task's was its
    /// `CreateTaskResult`.
    pub fn escalate(&self, inputs: Arc<Inputs>, cancel: CancelToken) {
        let _ = self.in_task.set((inputs, cancel));
    }

    /// What a call that failed answers when it could not ask the client
    /// for want of a capability: -32021 naming it (the request needed a
    /// capability the client did not declare), rather than the tool's
    /// error; `None` when it asked nothing it could not.
    pub fn missing_capability(&self) -> Option<ErrorObject> {
        let kind = (*lock(&self.missed))?;
        let (what, required) = match kind {
            AskKind::ElicitForm => ("elicitation", json!({ "elicitation": { "form": {} } })),
            AskKind::ElicitUrl => (
                "elicitation (URL mode)",
                json!({ "elicitation": { "url": {} } }),
            ),
            AskKind::Sample => ("sampling", json!({ "sampling": {} })),
            AskKind::Roots => ("roots", json!({ "roots": {} })),
        };
        Some(missing_capability(
            format!(
                "the tool needs the client's {what}: declare it in \
                 _meta[\"{META_CAPABILITIES}\"]"
            ),
            required,
        ))
    }

    /// The `InputRequiredResult` asking for `asks` (one request, or a
    /// batch's not answered yet), with a state bound to the call's `digest`
    /// carrying the responses so far and what this round asks.
    pub fn next_round(&self, digest: &str, asks: &[Ask]) -> Answer {
        let asked: Map<String, Value> = asks
            .iter()
            .map(|ask| (wire_key(ask), key_of(ask).into()))
            .collect();
        let mut data = json!({ "responses": self.responses, "asked": asked });
        // The round's span, which the retry's continues (on any replica).
        if let Some(trace) = crate::telemetry::traceparent() {
            data["trace"] = trace.into();
        }
        let data = data.to_string();
        if data.len() > MAX_RECORDED {
            return Answer::Error(ErrorObject::invalid_params(format!(
                "the tool's requests to the client gathered over {} KiB of answers in one call; \
                 it cannot continue",
                MAX_RECORDED >> 10
            )));
        }
        let expires = now_secs() + STATE_TTL.as_secs();
        let requests = asks
            .iter()
            .map(|ask| {
                let request = InputRequest {
                    method: ask.kind.method(),
                    params: for_revision(self.revision, ask.kind, ask.params.clone()),
                };
                (wire_key(ask), request)
            })
            .collect();
        let state = sign_round(digest, expires, &data);
        Answer::Result(to_value(InputRequired::new(requests, state)))
    }
}

fn invalid_state(message: &str) -> Answer {
    Answer::Error(ErrorObject::invalid_param("requestState", message))
}

/// The responses a retry brings: those recorded in its verified (and not
/// yet used) `requestState`, and its `inputResponses` to what that round
/// asked. A call without a state starts at the first round; responses
/// without a state, or to requests not asked, are ignored.
///
/// `digest` is the call's (`call_digest`); a used state is remembered in
/// `shared` (over the replicas) or `used`.
pub async fn begin(
    mut replay: Replay,
    retry: &Retry,
    digest: &str,
    shared: Option<&SharedState>,
    used: &UsedStates,
) -> Result<Replay, Answer> {
    let Some(state) = retry.request_state.as_deref() else {
        return Ok(replay);
    };
    let refused = || {
        invalid_state(
            "requestState is invalid, tampered with, expired, or belongs to another call; call \
             again without it",
        )
    };
    let (expires, data) = verify_round(state, digest, now_secs()).ok_or_else(refused)?;
    let first = first_use(shared, used, state, expires)
        .await
        .map_err(Answer::Error)?;
    if !first {
        return Err(invalid_state(
            "requestState was answered already; a round is good for one retry: call again \
             without it",
        ));
    }
    let recorded: Value = serde_json::from_str(&data).map_err(|_| refused())?;
    replay.responses = recorded_responses(&recorded, retry.input_responses.as_ref());
    Ok(replay)
}

/// Whether `params` continue a call in rounds: their `requestState` is a
/// round's, valid, for the call of `digest` (not marked used: [`begin`]
/// does that). Such a state was signed after a run of that very call, so a
/// destructive call's confirmation, given in its first round, holds.
pub fn continues(retry: &Retry, digest: &str) -> bool {
    retry
        .request_state
        .as_deref()
        .is_some_and(|state| verify_round(state, digest, now_secs()).is_some())
}

/// A round's `data`, as signed into its `requestState`.
#[derive(Debug, Default, Deserialize)]
struct Recorded {
    #[serde(default)]
    responses: Map<String, Value>,
    #[serde(default)]
    asked: Asked,
}

/// What a round asked: `{key the client answers under: key recorded}`, or
/// (states of before batches) the keys, each both.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Asked {
    ByWire(BTreeMap<String, String>),
    Keys(Vec<String>),
}

impl Default for Asked {
    fn default() -> Self {
        Asked::Keys(Vec::new())
    }
}

/// The responses of a verified state's `data`, with the retry's answers to
/// what it `asked` — `{key the client answers under: key recorded}` (a
/// list of keys, each both, in states of before batches) — each a JSON
/// object; anything else is asked again.
fn recorded_responses(
    recorded: &Value,
    input: Option<&Map<String, Value>>,
) -> BTreeMap<String, Value> {
    let recorded = Recorded::deserialize(recorded).unwrap_or_default();
    let mut responses: BTreeMap<String, Value> = recorded.responses.into_iter().collect();
    let asked: Vec<(String, String)> = match recorded.asked {
        Asked::ByWire(asked) => asked.into_iter().collect(),
        Asked::Keys(asked) => asked.into_iter().map(|key| (key.clone(), key)).collect(),
    };
    for (wire, key) in asked {
        if let Some(response) = input.and_then(|i| i.get(&wire)).filter(|r| r.is_object()) {
            responses.insert(key, response.clone());
        }
    }
    responses
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(kind: AskKind, index: u32, params: Value) -> Ask {
        Ask {
            kind,
            params,
            index,
            key: None,
        }
    }

    #[test]
    fn keys_follow_place_and_content() {
        let name = json!({"mode": "form", "message": "Name?", "requestedSchema": {}});
        let first = key_of(&ask(AskKind::ElicitForm, 0, name.clone()));
        assert!(first.starts_with("elicit-0-"), "{first}");
        assert_eq!(first, key_of(&ask(AskKind::ElicitForm, 0, name.clone())));
        assert_ne!(first, key_of(&ask(AskKind::ElicitForm, 1, name)));
        let other = json!({"mode": "form", "message": "Age?", "requestedSchema": {}});
        assert_ne!(first, key_of(&ask(AskKind::ElicitForm, 0, other)));
        // A URL elicitation's id is fresh on every run: not part of its key.
        let url = |id: &str| {
            ask(
                AskKind::ElicitUrl,
                2,
                json!({"mode": "url", "url": "https://x", "message": "m", "elicitationId": id}),
            )
        };
        assert_eq!(key_of(&url("a")), key_of(&url("b")));
        assert!(key_of(&ask(AskKind::Roots, 3, json!({}))).starts_with("roots-3-"));
    }

    #[test]
    fn recorded_answers_are_given_in_order_and_new_questions_get_a_round() {
        let all = Client {
            elicitation: true,
            elicitation_url: true,
            sampling: true,
            roots: true,
            tasks: false,
        };
        let name = ask(AskKind::ElicitForm, 0, json!({"message": "Name?"}));
        let answer = json!({"action": "accept", "content": {"name": "Ada"}});
        let recorded = json!({"responses": {}, "asked": [key_of(&name)]});
        let input = json!({ key_of(&name): answer.clone(), "extra": {"action": "accept"} });
        let responses = recorded_responses(&recorded, input.as_object());
        assert_eq!(responses.len(), 1, "keys not asked are ignored");
        let replay = Replay {
            responses,
            ..Replay::new(all, Revision::V2026_07_28)
        };
        assert_eq!(replay.answer(&name), Ok(answer));
        let changed = ask(AskKind::ElicitForm, 0, json!({"message": "Surname?"}));
        assert_eq!(replay.answer(&changed), Err(AskFailure::NextRound));
        let next = ask(AskKind::Sample, 1, json!({}));
        assert_eq!(replay.answer(&next), Err(AskFailure::NextRound));
        assert!(replay.missing_capability().is_none());
        // Without the capability, the client is not asked at all.
        let no_sampling = Replay {
            client: Client {
                sampling: false,
                ..all
            },
            ..replay
        };
        assert!(matches!(
            no_sampling.answer(&next),
            Err(AskFailure::Unavailable(_))
        ));
        // A tool that then fails answers -32021 naming the capability.
        let error = no_sampling.missing_capability().expect("missed sampling");
        assert_eq!(error.code, super::super::request::MISSING_CAPABILITY);
        assert_eq!(
            error.data,
            Some(json!({"requiredCapabilities": {"sampling": {}}}))
        );
    }

    #[tokio::test]
    async fn a_retry_brings_its_rounds_answers_once() {
        use super::super::request_state::call_digest;
        let retry = |params: &Value| -> Retry {
            serde_json::from_value(params.clone()).expect("a retry's params")
        };
        let digest = call_digest(Some("alice"), "ask", &json!({}));
        let name = ask(AskKind::ElicitForm, 0, json!({"message": "Name?"}));
        let data = json!({"responses": {}, "asked": [key_of(&name)]}).to_string();
        let state = sign_round(&digest, now_secs() + 60, &data);
        let answer = json!({"action": "accept", "content": {"name": "Ada"}});
        let params = json!({"requestState": state, "inputResponses": {key_of(&name): answer}});
        let used = UsedStates::default();
        let first = Replay::new(Client::default(), Revision::V2026_07_28);
        let Ok(replay) = begin(first.clone(), &retry(&params), &digest, None, &used).await else {
            panic!("a good state was refused");
        };
        assert_eq!(replay.responses.get(&key_of(&name)), Some(&answer));
        let refused = |answer: Answer| match answer {
            Answer::Error(error) => error.message,
            _ => panic!("not refused"),
        };
        let Err(again) = begin(first.clone(), &retry(&params), &digest, None, &used).await else {
            panic!("a replay was taken");
        };
        assert!(refused(again).contains("answered already"));
        // Bound to the caller: bob cannot use alice's state.
        let bob = call_digest(Some("bob"), "ask", &json!({}));
        let fresh = sign_round(&digest, now_secs() + 60, &data);
        let foreign = json!({"requestState": fresh, "inputResponses": {}});
        let Err(foreign) = begin(first.clone(), &retry(&foreign), &bob, None, &used).await else {
            panic!("another caller's state was taken");
        };
        assert!(refused(foreign).contains("requestState is invalid"));
        // A round's state continues its own call only.
        let next = sign_round(&digest, now_secs() + 60, &data);
        assert!(continues(&retry(&json!({"requestState": next})), &digest));
        assert!(!continues(&retry(&json!({"requestState": next})), &bob));
        let confirmation = super::super::request_state::sign_state(&digest, now_secs() + 60);
        assert!(!continues(
            &retry(&json!({"requestState": confirmation})),
            &digest
        ));
        assert!(!continues(&retry(&json!({})), &digest));
        // No state: a first round, whatever responses come along.
        let none = json!({"inputResponses": {key_of(&name): answer}});
        let Ok(none) = begin(first, &retry(&none), &digest, None, &used).await else {
            panic!("a call without a state is a first round");
        };
        assert!(none.responses.is_empty());
    }

    #[test]
    fn a_batch_goes_out_in_one_round_under_the_tools_keys() {
        let keyed = |key: &str, kind, index, params| Ask {
            key: Some(key.into()),
            ..ask(kind, index, params)
        };
        let name = json!({"mode": "form", "message": "Name?", "requestedSchema": {}});
        let user_name = keyed("user_name", AskKind::ElicitForm, 0, name.clone());
        let roots = keyed("client_roots", AskKind::Roots, 1, json!({}));
        // Found by key and content, not by place; a changed question under
        // the same key is another.
        assert_eq!(wire_key(&user_name), "user_name");
        assert!(key_of(&user_name).starts_with("user_name#"));
        assert_eq!(
            key_of(&user_name),
            key_of(&keyed("user_name", AskKind::ElicitForm, 5, name))
        );
        let surname = json!({"mode": "form", "message": "Surname?", "requestedSchema": {}});
        let changed = keyed("user_name", AskKind::ElicitForm, 0, surname);
        assert_ne!(key_of(&user_name), key_of(&changed));
        let all = Client {
            elicitation: true,
            elicitation_url: true,
            sampling: true,
            roots: true,
            tasks: false,
        };
        let replay = Replay::new(all, Revision::V2026_07_28);
        let Answer::Result(round) =
            replay.next_round("digest", &[user_name.clone(), roots.clone()])
        else {
            panic!("no round");
        };
        let requests = round["inputRequests"].as_object().expect("inputRequests");
        // In the batch's order.
        assert_eq!(
            requests.keys().collect::<Vec<_>>(),
            ["user_name", "client_roots"]
        );
        assert_eq!(requests["client_roots"]["method"], "roots/list");
        assert_eq!(requests["user_name"]["params"]["message"], "Name?");
        // The retry's answers, under the tool's keys, are recorded under
        // key and content.
        let asked = json!({
            "responses": {},
            "asked": { "user_name": key_of(&user_name), "client_roots": key_of(&roots) },
        });
        let input = json!({
            "user_name": {"action": "accept", "content": {"name": "Ada"}},
            "client_roots": {"roots": []},
        });
        let replay = Replay {
            responses: recorded_responses(&asked, input.as_object()),
            ..replay
        };
        assert_eq!(replay.answer(&user_name), Ok(input["user_name"].clone()));
        assert_eq!(replay.answer(&roots), Ok(input["client_roots"].clone()));
        assert_eq!(replay.answer(&changed), Err(AskFailure::NextRound));
    }

    #[test]
    fn malformed_responses_are_asked_again() {
        let recorded =
            json!({"responses": {"elicit-0-x": {"action": "decline"}}, "asked": ["sample-1-y"]});
        let responses = recorded_responses(&recorded, json!({"sample-1-y": 12345}).as_object());
        assert_eq!(responses.keys().collect::<Vec<_>>(), ["elicit-0-x"]);
        assert_eq!(recorded_responses(&recorded, None).len(), 1);
    }
}
