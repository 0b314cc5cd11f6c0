//! A guest's requests to the client — `host.elicit`, `host.elicit-url`,
//! `host.sample`, `host.roots` — as granted, bounded, audited capabilities.
//!
//! Each request: is it granted (`ask` in the policy)? does a URL
//! elicitation send the user only where a client may (https:, or http: to
//! this machine; the hosts of `elicit-url-hosts`: [`ElicitUrls`])? is it
//! within the call's limits (`limits.elicitations`, `samplings`,
//! `sample-tokens`, `roots-requests`)?
//! Then it becomes MCP params, goes to the call's observer (which asks the
//! client, within the call's deadline and cancellation), and the answer
//! comes back as the contract's types. Whatever fails is an `ask-error` the
//! tool sees — never a hang — and the operator's log names the policy key
//! of a refusal. Every request is kept for the call's audit entry (what
//! was asked and how it ended; the answer too, for an audit log that keeps
//! answers).
//!
//! A batch (`host.ask`) is each of its requests asked as it would be alone
//! (granted, counted, audited), under a key the tool chose
//! ([`AskState::ask_batch`]); a batch with a malformed or repeated key, or
//! too many requests, is refused whole.
//!
//! In a multi round-trip (2026-07-28) the observer answers
//! [`AskFailure::NextRound`] for a request not answered yet: the host
//! function then traps, and the sandbox reports the request — or all of a
//! batch's not answered yet — ([`AskState::next_round`]) instead of an
//! outcome. Where the call runs as a task that waits for its input
//! ([`CallObserver::wait_in_task`]), the guest blocks there instead until
//! the requests are answered.

mod wire;

use std::time::Instant;

use serde_json::{Value, json};

use super::bindings::host;
use crate::observe::{Ask, AskFailure, AskKind, CallObserver};
use crate::policy::{Asks, ElicitUrls, Limits};
use crate::telemetry::{self, KeyValue, SpanKind};
pub use wire::{
    batch_answer, elicit_answer, form_params, roots, sampled, sampling_params, url_params,
};

/// The most bytes of a request's params the audit entry keeps (a sampling
/// request may carry images).
const MAX_RECORDED_PARAMS: usize = 4096;

/// What the audit entry keeps of `params`: all of it, or its size when it
/// is larger than [`MAX_RECORDED_PARAMS`].
fn recorded(params: &Value) -> Value {
    let size = crate::json::to_vec(params).len();
    match size <= MAX_RECORDED_PARAMS {
        true => params.clone(),
        false => {
            json!({ "omitted": format!("{size} bytes, over the audit log's {MAX_RECORDED_PARAMS}") })
        }
    }
}

/// The trap that stops a guest whose request is answered in a later round.
#[derive(Debug, thiserror::Error)]
#[error("the call waits for the client's input (a multi round-trip)")]
pub struct NextRound;

/// One request a call made, for its audit entry.
#[derive(Debug, Clone, PartialEq)]
pub struct AskRecord {
    pub method: &'static str,
    /// The tool's key for it, in a batch.
    pub key: Option<String>,
    /// What was asked (the params sent, or that would have been).
    pub params: Value,
    /// `answered`, `denied`, `over-limit`, `unavailable`, `failed`,
    /// `next-round`.
    pub outcome: &'static str,
    /// The client's answer, when there was one.
    pub answer: Option<Value>,
    /// For the operator's log: why it was refused, naming the policy key.
    pub refusal: Option<String>,
}

/// What a call may still ask, and what it asked.
#[derive(Debug, Default)]
pub struct AskState {
    granted: Asks,
    elicitations_left: u32,
    samplings_left: u32,
    sample_tokens: u32,
    roots_left: u32,
    /// Where a URL elicitation may send the user.
    urls: ElicitUrls,
    asked: u32,
    /// The requests made, in order.
    pub records: Vec<AskRecord>,
    /// The requests the guest was stopped at, for the next round: one, or
    /// those of a batch not answered yet.
    pub next_round: Vec<Ask>,
}

/// One request of a batch: the tool's key, its kind, and its params (or
/// why they could not be made).
pub type Keyed = (String, AskKind, Result<Value, host::AskError>);

/// What became of one request.
enum Asked {
    /// The client's answer, or why there is none.
    Answer(Result<Value, host::AskError>),
    /// Answered only in a later round (or, in a task, once it is given):
    /// the request, and its place among the records.
    Later(Ask, usize),
}

/// The most requests one batch (`host.ask`) may hold.
pub const MAX_BATCH: usize = 16;

/// Whether `key` may name a request of a batch: 1 to 64 characters of
/// `A-Z a-z 0-9 _ - .` (as a tool's name; it becomes a JSON key the client
/// answers under).
pub fn valid_key(key: &str) -> bool {
    (1..=64).contains(&key.len())
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// Checks a batch's keys and size: what the tool sees when it is refused.
pub fn check_batch<'a>(keys: impl ExactSizeIterator<Item = &'a str>) -> Result<(), host::AskError> {
    let refused = |why: String| Err(host::AskError::Failed(format!("{why}; nothing was asked")));
    match keys.len() {
        0 => return refused("the batch is empty".into()),
        n if n > MAX_BATCH => {
            return refused(format!(
                "the batch holds {n} requests, over the {MAX_BATCH} one batch may hold"
            ));
        }
        _ => {}
    }
    let mut seen = std::collections::BTreeSet::new();
    for key in keys {
        if !valid_key(key) {
            return refused(format!(
                "the key {:?} is not 1 to 64 characters of A-Z a-z 0-9 _ - .",
                shorten(key)
            ));
        }
        if !seen.insert(key) {
            return refused(format!("the key {key:?} is used twice in the batch"));
        }
    }
    Ok(())
}

/// `method` with its article, as the log says it: "an elicitation/create",
/// "a sampling/createMessage".
fn a_or_an(method: &str) -> String {
    let vowel = method.starts_with(['a', 'e', 'i', 'o', 'u']);
    format!("{} {method}", if vowel { "an" } else { "a" })
}

/// A key as an error shows it: at most 80 characters.
fn shorten(key: &str) -> String {
    key.chars().take(80).collect()
}

impl AskState {
    /// What a call with `asks` under `limits` may ask.
    pub fn new(granted: Asks, limits: &Limits) -> Self {
        AskState {
            granted,
            elicitations_left: limits.elicitations,
            samplings_left: limits.samplings,
            sample_tokens: limits.sample_tokens,
            roots_left: limits.roots_requests,
            ..AskState::default()
        }
    }

    /// The same, with a URL elicitation sending the user only where `urls`
    /// lets it (the grant's `elicit-url-hosts`).
    pub fn with_elicit_urls(self, urls: ElicitUrls) -> Self {
        AskState { urls, ..self }
    }

    /// Checks `kind` against the grant — and a URL elicitation's URL, put
    /// in `params` as checked — and takes one from its limit; a refusal
    /// comes with what the operator's log says of it. Every request, alone
    /// or in a batch, in either revision, passes here first.
    fn admit(&mut self, kind: AskKind, params: &mut Value) -> Result<(), (host::AskError, String)> {
        let (granted, name) = match kind {
            AskKind::ElicitForm | AskKind::ElicitUrl => (self.granted.elicit, "elicit"),
            AskKind::Sample => (self.granted.sample, "sample"),
            AskKind::Roots => (self.granted.roots, "roots"),
        };
        if !granted {
            let note = format!(
                "refused {} request: the policy does not grant it (add \"{name}\" to `ask` in \
                 the tool's or its component's section)",
                a_or_an(kind.method())
            );
            let error = host::AskError::Denied(format!(
                "the operator's policy does not let this tool ask the client for this \
                 ({name}); it needs `ask = [\"{name}\"]`"
            ));
            return Err((error, note));
        }
        if kind == AskKind::ElicitUrl
            && let Err(why) = checked_url(&self.urls, params)
        {
            let note = format!(
                "refused {} request to open a URL: {why}",
                a_or_an(kind.method())
            );
            let error = host::AskError::Denied(format!("the user may not be sent there: {why}"));
            return Err((error, note));
        }
        let (left, key) = match kind {
            AskKind::ElicitForm | AskKind::ElicitUrl => {
                (&mut self.elicitations_left, "limits.elicitations")
            }
            AskKind::Sample => (&mut self.samplings_left, "limits.samplings"),
            AskKind::Roots => (&mut self.roots_left, "limits.roots-requests"),
        };
        if *left == 0 {
            let note = format!(
                "refused {} request: over the call's limit ({key})",
                a_or_an(kind.method())
            );
            let error = host::AskError::OverLimit(format!(
                "this call has made all the {} requests its grant allows ({key})",
                kind.method()
            ));
            return Err((error, note));
        }
        *left -= 1;
        Ok(())
    }

    /// Checks a request a cordon's worker relays as [`AskState::admit`]
    /// checks a guest's here (the worker checked it too; the server does
    /// not take a worker's word for it): `Err` says why it is refused.
    pub fn admit_relayed(&mut self, kind: AskKind, params: &mut Value) -> Result<(), String> {
        self.admit(kind, params).map_err(|(_, note)| note)
    }

    /// Asks the client through `observer`, once `kind` is admitted; the
    /// answer (the client's result) or why there is none.
    pub fn ask(
        &mut self,
        kind: AskKind,
        params: Value,
        observer: &dyn CallObserver,
        deadline: Instant,
    ) -> Result<Result<Value, host::AskError>, NextRound> {
        match self.request(kind, params, None, observer, deadline) {
            Asked::Answer(answer) => Ok(answer),
            Asked::Later(ask, record) => {
                match self.wait_in_task(vec![(ask, record)], observer, deadline) {
                    Some(mut answers) => Ok(answers.remove(0)),
                    None => Err(NextRound),
                }
            }
        }
    }

    /// Asks a batch (`host.ask`): each request admitted and asked as
    /// [`AskState::ask`] would alone, under the tool's key; the answers in
    /// the requests' order. A batch whose keys or size are wrong is refused
    /// as a whole, before anything is asked. The requests not answered yet
    /// go to the next round together, and stop the guest.
    pub fn ask_batch(
        &mut self,
        requests: Vec<Keyed>,
        observer: &dyn CallObserver,
        deadline: Instant,
    ) -> Result<Result<Vec<Result<Value, host::AskError>>, host::AskError>, NextRound> {
        if let Err(refused) = check_batch(requests.iter().map(|(key, _, _)| key.as_str())) {
            return Ok(Err(refused));
        }
        let mut answers = Vec::with_capacity(requests.len());
        let (mut later, mut places) = (Vec::new(), Vec::new());
        for (key, kind, params) in requests {
            let params = match params {
                Ok(params) => params,
                Err(bad) => {
                    answers.push(Err(bad));
                    continue;
                }
            };
            match self.request(kind, params, Some(key), observer, deadline) {
                Asked::Answer(answer) => answers.push(answer),
                Asked::Later(ask, record) => {
                    places.push(answers.len());
                    answers.push(Ok(Value::Null));
                    later.push((ask, record));
                }
            }
        }
        if !later.is_empty() {
            let given = self
                .wait_in_task(later, observer, deadline)
                .ok_or(NextRound)?;
            for (place, answer) in places.into_iter().zip(given) {
                answers[place] = answer;
            }
        }
        Ok(Ok(answers))
    }

    /// Requests not answered yet, in a call that runs as a task waiting for
    /// its input: blocks until the observer has them answered (their
    /// records updated). `None` where they go to the next round instead
    /// (kept in [`AskState::next_round`]).
    fn wait_in_task(
        &mut self,
        later: Vec<(Ask, usize)>,
        observer: &dyn CallObserver,
        deadline: Instant,
    ) -> Option<Vec<Result<Value, host::AskError>>> {
        let asks: Vec<Ask> = later.iter().map(|(ask, _)| ask.clone()).collect();
        let Some(given) = crate::lanes::blocking(|| observer.wait_in_task(&asks, deadline)) else {
            self.next_round = asks;
            return None;
        };
        let answers = later
            .iter()
            .zip(given)
            .map(|((_, record), answer)| {
                let record = &mut self.records[*record];
                match answer {
                    Ok(answer) => {
                        record.outcome = "answered";
                        record.answer = Some(answer.clone());
                        Ok(answer)
                    }
                    Err(failure) => {
                        let (outcome, error) = match failure {
                            AskFailure::Unavailable(why) => {
                                ("unavailable", host::AskError::Unavailable(why))
                            }
                            AskFailure::Failed(why) => ("failed", host::AskError::Failed(why)),
                            AskFailure::NextRound => (
                                "failed",
                                host::AskError::Failed("the request was not answered".into()),
                            ),
                        };
                        record.outcome = outcome;
                        Err(error)
                    }
                }
            })
            .collect();
        Some(answers)
    }

    /// One request: admitted (or refused, and recorded so), then asked.
    fn request(
        &mut self,
        kind: AskKind,
        mut params: Value,
        key: Option<String>,
        observer: &dyn CallObserver,
        deadline: Instant,
    ) -> Asked {
        let admitted = self.admit(kind, &mut params);
        // Its span names the method and how it ended, never what was asked
        // or answered.
        let asking = telemetry::phase(kind.method(), SpanKind::Client, || {
            vec![KeyValue::new("mcp.method.name", kind.method())]
        });
        let record = |outcome: &'static str, answer| {
            asking.set(|| KeyValue::new("airlock.ask.outcome", outcome));
            AskRecord {
                method: kind.method(),
                key: key.clone(),
                params: recorded(&params),
                outcome,
                answer,
                refusal: None,
            }
        };
        if let Err((refused, note)) = admitted {
            let outcome = match refused {
                host::AskError::OverLimit(_) => "over-limit",
                _ => "denied",
            };
            telemetry::refused(outcome, "ask");
            self.records.push(AskRecord {
                refusal: Some(note),
                ..record(outcome, None)
            });
            return Asked::Answer(Err(refused));
        }
        let ask = Ask {
            kind,
            params: params.clone(),
            index: self.asked,
            key: key.clone(),
        };
        self.asked += 1;
        let answer = crate::lanes::blocking(|| observer.ask(&ask, deadline));
        let (outcome, answer) = match answer {
            Ok(answer) => {
                self.records.push(record("answered", Some(answer.clone())));
                return Asked::Answer(Ok(answer));
            }
            Err(AskFailure::NextRound) => {
                self.records.push(record("next-round", None));
                return Asked::Later(ask, self.records.len() - 1);
            }
            Err(AskFailure::Unavailable(why)) => ("unavailable", host::AskError::Unavailable(why)),
            Err(AskFailure::Failed(why)) => ("failed", host::AskError::Failed(why)),
        };
        self.records.push(record(outcome, None));
        Asked::Answer(Err(answer))
    }

    /// The most tokens a sampling request may ask for.
    pub fn sample_tokens(&self) -> u32 {
        self.sample_tokens
    }
}

/// Puts the URL of URL-mode `params` as [`ElicitUrls::check`] wrote it
/// back, or says why it may not go out.
fn checked_url(urls: &ElicitUrls, params: &mut Value) -> Result<(), String> {
    let url = params
        .get("url")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let checked = urls.check(url)?;
    if let Some(url) = params.get_mut("url") {
        *url = Value::String(checked);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::bindings::types;
    use crate::tool::Level;
    use std::sync::Mutex;

    /// Answers every request with `answer`, and keeps what it was asked.
    struct Client {
        answer: Result<Value, AskFailure>,
        asked: Mutex<Vec<Ask>>,
    }

    impl CallObserver for Client {
        fn log(&self, _: Level, _: &str) {}
        fn progress(&self, _: f64, _: Option<f64>, _: Option<&str>) {}
        fn ask(&self, ask: &Ask, _: Instant) -> Result<Value, AskFailure> {
            self.asked.lock().unwrap().push(ask.clone());
            self.answer.clone()
        }
    }

    fn client(answer: Result<Value, AskFailure>) -> Client {
        Client {
            answer,
            asked: Mutex::new(Vec::new()),
        }
    }

    fn limits(elicitations: u32, samplings: u32) -> Limits {
        Limits {
            elicitations,
            samplings,
            ..Limits::default()
        }
    }

    #[test]
    fn a_request_not_granted_is_denied_and_never_reaches_the_client() {
        let client = client(Ok(json!({"action": "accept"})));
        let mut state = AskState::new(Asks::default(), &Limits::default());
        let later = Instant::now();
        for kind in [AskKind::ElicitForm, AskKind::Sample, AskKind::Roots] {
            let answer = state.ask(kind, json!({}), &client, later).unwrap();
            assert!(
                matches!(&answer, Err(host::AskError::Denied(why)) if why.contains("ask = [")),
                "{kind:?}: {answer:?}"
            );
        }
        assert!(client.asked.lock().unwrap().is_empty());
        let outcomes: Vec<_> = state.records.iter().map(|r| r.outcome).collect();
        assert_eq!(outcomes, ["denied", "denied", "denied"]);
    }

    /// The log's note takes the article its method needs.
    #[test]
    fn a_refusal_note_reads_as_english() {
        let client = client(Ok(json!({})));
        let mut state = AskState::new(Asks::default(), &Limits::default());
        for kind in [AskKind::ElicitForm, AskKind::Sample] {
            let _ = state.ask(kind, json!({}), &client, Instant::now());
        }
        let notes: Vec<&str> = state
            .records
            .iter()
            .filter_map(|r| r.refusal.as_deref())
            .map(|note| note.split(':').next().unwrap_or(note))
            .collect();
        assert_eq!(
            notes,
            [
                "refused an elicitation/create request",
                "refused a sampling/createMessage request"
            ]
        );
    }

    #[test]
    fn requests_over_the_limit_are_refused_per_kind() {
        let client = client(Ok(json!({"action": "decline"})));
        let granted = Asks {
            elicit: true,
            sample: true,
            roots: true,
        };
        let mut state = AskState::new(granted, &limits(2, 1));
        let now = Instant::now();
        let params = json!({"url": "https://example.com/"});
        let mut ask = |kind| state.ask(kind, params.clone(), &client, now).unwrap();
        assert!(ask(AskKind::ElicitForm).is_ok());
        assert!(ask(AskKind::ElicitUrl).is_ok());
        assert!(matches!(
            ask(AskKind::ElicitForm),
            Err(host::AskError::OverLimit(why)) if why.contains("limits.elicitations")
        ));
        assert!(ask(AskKind::Sample).is_ok());
        assert!(matches!(
            ask(AskKind::Sample),
            Err(host::AskError::OverLimit(why)) if why.contains("limits.samplings")
        ));
        // Roots cost the user nothing: not counted.
        assert!(ask(AskKind::Roots).is_ok());
        assert!(ask(AskKind::Roots).is_ok());
        let indices: Vec<u32> = client
            .asked
            .lock()
            .unwrap()
            .iter()
            .map(|a| a.index)
            .collect();
        assert_eq!(indices, [0, 1, 2, 3, 4], "refused requests take no index");
    }

    /// `limits.roots-requests` below its default (10) is what a call gets:
    /// read from the policy, merged into the tool's settings, enforced here.
    #[test]
    fn a_policy_s_roots_requests_limit_is_enforced() {
        let policy = crate::policy::Policy::parse(
            "[components.c]\nask = [\"roots\"]\nlimits = { roots-requests = 2 }\n",
            std::path::Path::new("."),
        )
        .expect("policy");
        let settings = policy.settings_for("c", "t");
        let grant = crate::policy::effective(&settings, crate::tool::Hints::default());
        assert_eq!(grant.limits.roots_requests, 2);
        let client = client(Ok(json!({"roots": []})));
        let mut state = AskState::new(grant.asks, &grant.limits);
        let now = Instant::now();
        let mut ask = || state.ask(AskKind::Roots, json!({}), &client, now).unwrap();
        assert!(ask().is_ok());
        assert!(ask().is_ok());
        assert!(matches!(
            ask(),
            Err(host::AskError::OverLimit(why)) if why.contains("limits.roots-requests")
        ));
        assert_eq!(client.asked.lock().unwrap().len(), 2);
    }

    #[test]
    fn a_url_elicitation_sends_the_user_only_to_a_web_page_alone_or_in_a_batch() {
        let client = client(Ok(json!({"action": "accept"})));
        let granted = Asks {
            elicit: true,
            ..Asks::default()
        };
        let hosts = ElicitUrls {
            hosts: Some(vec!["example.com".parse().expect("pattern")]),
        };
        let mut state = AskState::new(granted, &limits(2, 0)).with_elicit_urls(hosts);
        let now = Instant::now();
        let link = |url: &str| url_params("Open this", url);
        let refused = [
            "javascript:alert(1)",
            "JaVaScRiPt:alert(document.cookie)",
            "data:text/html,<script>alert(1)</script>",
            "file:///etc/passwd",
            "vbscript:msgbox(1)",
            "http://example.com/",
            "https://example.com@evil.example/",
            "https://evil.example/",
            "no URL at all",
        ];
        for url in refused {
            let answer = state.ask(AskKind::ElicitUrl, link(url), &client, now);
            assert!(
                matches!(&answer, Ok(Err(host::AskError::Denied(why))) if why.starts_with("the user may not be sent there")),
                "{url}: {answer:?}"
            );
        }
        // In a batch, each request is checked as alone.
        let batch = vec![
            (
                "bad".to_string(),
                AskKind::ElicitUrl,
                Ok(link("javascript:alert(1)")),
            ),
            (
                "good".to_string(),
                AskKind::ElicitUrl,
                Ok(link(" HTTPS://Example.COM/pay")),
            ),
        ];
        let Ok(Ok(answers)) = state.ask_batch(batch, &client, now) else {
            panic!("the batch was refused whole");
        };
        assert!(matches!(&answers[0], Err(host::AskError::Denied(_))));
        assert!(answers[1].is_ok());
        // Nothing refused reached the client, nor took from the limit (2).
        let again = state.ask(
            AskKind::ElicitUrl,
            link("https://example.com/2"),
            &client,
            now,
        );
        assert!(matches!(again, Ok(Ok(_))), "{again:?}");
        let sent: Vec<Value> = client
            .asked
            .lock()
            .unwrap()
            .iter()
            .map(|a| a.params["url"].clone())
            .collect();
        assert_eq!(
            sent,
            [
                json!("https://example.com/pay"),
                json!("https://example.com/2")
            ],
            "the URL goes out as checked"
        );
        let records: Vec<_> = state.records.iter().map(|r| r.outcome).collect();
        assert_eq!(records.len(), refused.len() + 3);
        assert!(records[..refused.len()].iter().all(|o| *o == "denied"));
        assert_eq!(records[refused.len()..], ["denied", "answered", "answered"]);
        // The operator's log says why; the audit entry keeps what was asked.
        let first = &state.records[0];
        assert!(
            first
                .refusal
                .as_deref()
                .is_some_and(|n| n.contains("a javascript: URL")),
            "{first:?}"
        );
        assert_eq!(first.params["url"], "javascript:alert(1)");
    }

    #[test]
    fn failures_and_next_rounds_are_reported_as_such() {
        let granted = Asks {
            elicit: true,
            ..Asks::default()
        };
        let now = Instant::now();
        let unavailable = client(Err(AskFailure::Unavailable("no elicitation".into())));
        let mut state = AskState::new(granted, &Limits::default());
        let answer = state.ask(AskKind::ElicitForm, json!({}), &unavailable, now);
        assert!(
            matches!(answer, Ok(Err(host::AskError::Unavailable(why))) if why == "no elicitation")
        );
        let later = client(Err(AskFailure::NextRound));
        let answer = state.ask(AskKind::ElicitForm, json!({"m": 1}), &later, now);
        assert!(answer.is_err(), "the guest is stopped");
        let stopped: Vec<u32> = state.next_round.iter().map(|a| a.index).collect();
        assert_eq!(stopped, [1]);
        assert_eq!(state.records[1].outcome, "next-round");
    }

    #[test]
    fn batch_keys_are_checked_before_anything_is_asked() {
        assert!(valid_key("user_name"));
        assert!(valid_key("a.b-c_9"));
        assert!(valid_key(&"k".repeat(64)));
        for bad in ["", "has space", "a#b", "ключ", &"k".repeat(65)] {
            assert!(!valid_key(bad), "{bad:?}");
        }
        let refused = |keys: &[&str]| match check_batch(keys.iter().copied()) {
            Err(host::AskError::Failed(why)) => why,
            other => panic!("{keys:?} was not refused: {other:?}"),
        };
        assert!(check_batch(["a", "b", "c"].into_iter()).is_ok());
        assert!(refused(&["a", "b", "a"]).contains("\"a\" is used twice"));
        assert!(refused(&["a", "b c"]).contains("not 1 to 64 characters"));
        assert!(refused(&[]).contains("empty"));
        let many: Vec<String> = (0..=MAX_BATCH).map(|i| format!("k{i}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        assert!(refused(&many).contains("17 requests, over the 16"));
        // A refused batch asks nothing and takes nothing from the limits.
        let client = client(Ok(json!({"action": "accept"})));
        let granted = Asks {
            elicit: true,
            ..Asks::default()
        };
        let mut state = AskState::new(granted, &limits(1, 0));
        let form = || (AskKind::ElicitForm, Ok(json!({"message": "?"})));
        let batch = ["k", "k"]
            .map(|key| {
                let (kind, params) = form();
                (key.to_string(), kind, params)
            })
            .into();
        let answer = state.ask_batch(batch, &client, Instant::now()).unwrap();
        assert!(
            matches!(answer, Err(host::AskError::Failed(why)) if why.ends_with("nothing was asked"))
        );
        assert!(client.asked.lock().unwrap().is_empty());
        assert!(state.records.is_empty());
        let (kind, params) = form();
        let one = vec![("k".to_string(), kind, params)];
        assert!(matches!(
            state.ask_batch(one, &client, Instant::now()),
            Ok(Ok(answers)) if answers.len() == 1 && answers[0].is_ok()
        ));
    }

    #[test]
    fn each_request_of_a_batch_is_granted_and_counted_as_alone() {
        let client = client(Ok(json!({"action": "accept"})));
        let granted = Asks {
            elicit: true,
            roots: true,
            ..Asks::default()
        };
        let mut state = AskState::new(granted, &limits(2, 5));
        let now = Instant::now();
        let single = state.ask(AskKind::ElicitForm, json!({}), &client, now);
        assert!(matches!(single, Ok(Ok(_))));
        let batch = vec![
            ("a".to_string(), AskKind::ElicitForm, Ok(json!({"n": 1}))),
            (
                "b".to_string(),
                AskKind::ElicitUrl,
                Ok(json!({"n": 2, "url": "https://example.com/"})),
            ),
            ("c".to_string(), AskKind::Sample, Ok(json!({}))),
            ("d".to_string(), AskKind::Roots, Ok(json!({}))),
            (
                "e".to_string(),
                AskKind::ElicitForm,
                Err(host::AskError::Failed("bad schema".into())),
            ),
        ];
        let Ok(Ok(answers)) = state.ask_batch(batch, &client, now) else {
            panic!("the batch was refused");
        };
        // One elicitation was left: the batch's second is over the limit.
        assert!(answers[0].is_ok());
        assert!(
            matches!(&answers[1], Err(host::AskError::OverLimit(why)) if why.contains("limits.elicitations"))
        );
        assert!(matches!(&answers[2], Err(host::AskError::Denied(why)) if why.contains("sample")));
        assert!(answers[3].is_ok());
        assert!(matches!(&answers[4], Err(host::AskError::Failed(why)) if why == "bad schema"));
        let keys: Vec<_> = client
            .asked
            .lock()
            .unwrap()
            .iter()
            .map(|a| (a.index, a.key.clone()))
            .collect();
        assert_eq!(
            keys,
            [(0, None), (1, Some("a".into())), (2, Some("d".into()))]
        );
        let outcomes: Vec<_> = state
            .records
            .iter()
            .map(|r| (r.key.as_deref(), r.outcome))
            .collect();
        assert_eq!(
            outcomes,
            [
                (None, "answered"),
                (Some("a"), "answered"),
                (Some("b"), "over-limit"),
                (Some("c"), "denied"),
                (Some("d"), "answered"),
            ]
        );
    }

    #[test]
    fn a_batch_stops_at_all_its_requests_not_answered_yet() {
        /// Answers roots, and leaves the rest to the next round.
        struct Rounds;
        impl CallObserver for Rounds {
            fn log(&self, _: Level, _: &str) {}
            fn progress(&self, _: f64, _: Option<f64>, _: Option<&str>) {}
            fn ask(&self, ask: &Ask, _: Instant) -> Result<Value, AskFailure> {
                match ask.kind {
                    AskKind::Roots => Ok(json!({"roots": []})),
                    _ => Err(AskFailure::NextRound),
                }
            }
        }
        let granted = Asks {
            elicit: true,
            sample: true,
            roots: true,
        };
        let mut state = AskState::new(granted, &limits(3, 3));
        let batch = vec![
            ("name".to_string(), AskKind::ElicitForm, Ok(json!({}))),
            ("where".to_string(), AskKind::Roots, Ok(json!({}))),
            ("greeting".to_string(), AskKind::Sample, Ok(json!({}))),
        ];
        assert!(state.ask_batch(batch, &Rounds, Instant::now()).is_err());
        let later: Vec<_> = state.next_round.iter().map(|a| a.key.as_deref()).collect();
        assert_eq!(later, [Some("name"), Some("greeting")]);
    }

    #[test]
    fn in_a_task_a_batch_waits_for_its_requests_and_answers_them_in_place() {
        /// Answers roots; a running task that waits for the rest, answering
        /// each with its key (the first left unanswered by the deadline).
        struct Task;
        impl CallObserver for Task {
            fn log(&self, _: Level, _: &str) {}
            fn progress(&self, _: f64, _: Option<f64>, _: Option<&str>) {}
            fn ask(&self, ask: &Ask, _: Instant) -> Result<Value, AskFailure> {
                match ask.kind {
                    AskKind::Roots => Ok(json!({"roots": []})),
                    _ => Err(AskFailure::NextRound),
                }
            }
            fn wait_in_task(
                &self,
                asks: &[Ask],
                _: Instant,
            ) -> Option<Vec<Result<Value, AskFailure>>> {
                let keys: Vec<_> = asks.iter().map(|a| a.key.clone()).collect();
                assert_eq!(keys, [Some("name".into()), Some("greeting".into())]);
                Some(vec![
                    Err(AskFailure::Failed("no answer in time".into())),
                    Ok(json!({"given": "greeting"})),
                ])
            }
        }
        let granted = Asks {
            elicit: true,
            sample: true,
            roots: true,
        };
        let mut state = AskState::new(granted, &limits(3, 3));
        let batch = vec![
            ("name".to_string(), AskKind::ElicitForm, Ok(json!({}))),
            ("where".to_string(), AskKind::Roots, Ok(json!({}))),
            ("greeting".to_string(), AskKind::Sample, Ok(json!({}))),
        ];
        let answers = state
            .ask_batch(batch, &Task, Instant::now())
            .expect("no next round in a task")
            .expect("a good batch");
        assert!(
            matches!(&answers[0], Err(host::AskError::Failed(why)) if why == "no answer in time")
        );
        assert_eq!(answers[1].as_ref().ok(), Some(&json!({"roots": []})));
        assert_eq!(
            answers[2].as_ref().ok(),
            Some(&json!({"given": "greeting"}))
        );
        assert!(state.next_round.is_empty());
        let outcomes: Vec<_> = state.records.iter().map(|r| r.outcome).collect();
        assert_eq!(outcomes, ["failed", "answered", "answered"]);
        assert_eq!(state.records[2].answer, Some(json!({"given": "greeting"})));
    }

    #[test]
    fn the_audit_record_keeps_small_params_and_the_size_of_large_ones() {
        let small = json!({"message": "Name?"});
        assert_eq!(recorded(&small), small);
        let large = json!({"data": "x".repeat(MAX_RECORDED_PARAMS)});
        let omitted = recorded(&large);
        assert!(
            omitted["omitted"]
                .as_str()
                .is_some_and(|o| o.ends_with("bytes, over the audit log's 4096")),
            "{omitted}"
        );
    }

    #[test]
    fn a_form_needs_a_schema_object() {
        assert_eq!(
            form_params("Name?", r#"{"type":"object"}"#).unwrap(),
            json!({"mode": "form", "message": "Name?", "requestedSchema": {"type": "object"}})
        );
        assert!(form_params("Name?", "[1]").is_err());
        assert!(form_params("Name?", "not json").is_err());
        let url = url_params("Sign in", "https://example.com/login");
        assert_eq!(url["mode"], "url");
        assert_eq!(url["url"], "https://example.com/login");
        assert_eq!(url["elicitationId"].as_str().map(str::len), Some(16));
    }

    #[test]
    fn elicitation_answers_convert() {
        assert!(matches!(
            elicit_answer(&json!({"action": "accept", "content": {"name": "Ada"}})),
            Ok(host::ElicitAnswer::Accept(form)) if form == r#"{"name":"Ada"}"#
        ));
        assert!(matches!(
            elicit_answer(&json!({"action": "accept"})),
            Ok(host::ElicitAnswer::Accept(form)) if form == "{}"
        ));
        assert!(matches!(
            elicit_answer(&json!({"action": "decline"})),
            Ok(host::ElicitAnswer::Decline)
        ));
        assert!(matches!(
            elicit_answer(&json!({"action": "cancel"})),
            Ok(host::ElicitAnswer::Cancel)
        ));
        assert!(elicit_answer(&json!({})).is_err());
    }

    #[test]
    fn sampling_requests_convert_and_tokens_are_capped() {
        let request = host::SamplingRequest {
            messages: vec![
                host::SamplingMessage {
                    role: types::Role::User,
                    content: types::Content::Text("Capital of France?".into()),
                },
                host::SamplingMessage {
                    role: types::Role::User,
                    content: types::Content::Image(types::Media {
                        data: vec![1, 2, 3],
                        mime_type: "image/png".into(),
                    }),
                },
            ],
            system_prompt: Some("Be brief.".into()),
            max_tokens: 5000,
            temperature: Some(0.5),
            stop_sequences: vec!["\n".into()],
            model_preferences: Some(host::ModelPreferences {
                hints: vec!["claude".into()],
                cost_priority: Some(0.2),
                speed_priority: Some(7.0),
                intelligence_priority: None,
            }),
        };
        assert_eq!(
            sampling_params(&request, 1024).unwrap(),
            json!({
                "messages": [
                    {"role": "user", "content": {"type": "text", "text": "Capital of France?"}},
                    {"role": "user", "content": {"type": "image", "data": "AQID", "mimeType": "image/png"}},
                ],
                "maxTokens": 1024,
                "systemPrompt": "Be brief.",
                "temperature": 0.5,
                "stopSequences": ["\n"],
                "modelPreferences": {"hints": [{"name": "claude"}], "costPriority": 0.2},
            })
        );
        let link = host::SamplingRequest {
            messages: vec![host::SamplingMessage {
                role: types::Role::User,
                content: types::Content::Link(types::ResourceLink {
                    uri: "x:y".into(),
                    name: "y".into(),
                    title: None,
                    description: None,
                    mime_type: None,
                    size: None,
                }),
            }],
            max_tokens: 10,
            ..request
        };
        assert!(sampling_params(&link, 1024).is_err());
    }

    #[test]
    fn sampling_answers_convert() {
        let answer = sampled(&json!({
            "role": "assistant",
            "content": {"type": "text", "text": "Paris"},
            "model": "m-1",
            "stopReason": "endTurn",
        }))
        .unwrap();
        assert!(matches!(answer.role, types::Role::Assistant));
        assert!(matches!(&answer.content, types::Content::Text(text) if text == "Paris"));
        assert_eq!(answer.model, "m-1");
        assert_eq!(answer.stop_reason.as_deref(), Some("endTurn"));
        let listed = sampled(&json!({
            "content": [{"type": "image", "data": "AQID", "mimeType": "image/png"}],
            "model": "m",
        }))
        .unwrap();
        assert!(matches!(listed.content, types::Content::Image(m) if m.data == [1, 2, 3]));
        assert!(sampled(&json!({"model": "m"})).is_err());
        assert!(sampled(&json!({"content": {"type": "image", "data": "%"}})).is_err());
    }

    #[test]
    fn roots_convert_and_skip_what_is_not_a_root() {
        let listed = roots(&json!({"roots": [
            {"uri": "file:///home/ada/project", "name": "project"},
            {"uri": "file:///tmp"},
            {"name": "no uri"},
        ]}))
        .unwrap();
        let listed: Vec<(&str, Option<&str>)> = listed
            .iter()
            .map(|r| (r.uri.as_str(), r.name.as_deref()))
            .collect();
        assert_eq!(
            listed,
            [
                ("file:///home/ada/project", Some("project")),
                ("file:///tmp", None)
            ]
        );
        assert!(roots(&json!({})).is_err());
    }
}
