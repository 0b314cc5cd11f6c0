//! The signed `requestState` of a multi round-trip (2026-07-28): the
//! server asks the client for input (`input_required`) and binds what the
//! retry may carry to the caller, the tool and the arguments with an
//! HMAC-SHA256 over a payload with an expiry and a nonce. A state answers
//! one retry only: the states answered already are kept until they expire
//! (here, or in the replicas' shared store), so a replay is refused.
//!
//! A replayed call's round (`super::replay`) carries the responses
//! recorded so far in its state, under the same MAC.
//!
//! The key is random per process, or the one the replicas share
//! ([`share_key`]), so a retry may reach any replica.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, PoisonError, RwLock};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::protocol::jsonrpc::{self, ErrorObject};
use crate::replicas::SharedState;
use crate::sync::lock;

type HmacSha256 = Hmac<Sha256>;

static KEY: LazyLock<RwLock<[u8; 32]>> = LazyLock::new(|| RwLock::new(rand::random()));

/// This process's key for request states: random at start, or the one the
/// replicas share ([`share_key`]).
fn state_key() -> [u8; 32] {
    *KEY.read().unwrap_or_else(PoisonError::into_inner)
}

/// Signs and verifies request states with `key` from now on: the one the
/// replicas share. A state signed with the key before no longer verifies.
pub fn share_key(key: [u8; 32]) {
    *KEY.write().unwrap_or_else(PoisonError::into_inner) = key;
}

/// Marks a verified state (valid until `expires`) answered, over every
/// replica when they share state (`shared`), else in `used`; false when it
/// was answered before.
pub async fn first_use(
    shared: Option<&SharedState>,
    used: &UsedStates,
    state: &str,
    expires: u64,
) -> Result<bool, ErrorObject> {
    let Some(shared) = shared else {
        return Ok(used.first_use(state, expires, now_secs()));
    };
    let mark = hex::encode(Sha256::digest(state.as_bytes()));
    shared.first_use(&mark, expires).await.map_err(|err| {
        tracing::warn!("shared state: {err}");
        ErrorObject::new(
            jsonrpc::INTERNAL_ERROR,
            "the shared state is unreachable; try again shortly",
        )
    })
}

fn mac(payload: &[u8]) -> HmacSha256 {
    let mut mac = HmacSha256::new_from_slice(&state_key()).expect("HMAC takes a key of any length");
    mac.update(payload);
    mac
}

/// What a confirmation's (or a round's) `requestState` is bound to.
pub fn call_digest(principal: Option<&str>, tool: &str, arguments: &Value) -> String {
    let bound = json!([principal, tool, arguments]).to_string();
    hex::encode(Sha256::digest(bound.as_bytes()))
}

pub fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// `requestState` for a confirmation: the payload (with a random nonce, so
/// no two are alike) and its HMAC; when traced, it carries the asking
/// round's span, which the retry continues ([`trace_of`]).
pub fn sign_state(digest: &str, expires: u64) -> String {
    let trace = crate::telemetry::traceparent().map(|trace| json!({ "trace": trace }).to_string());
    sign_kind(
        "confirm",
        digest,
        expires,
        trace.as_deref().unwrap_or_default(),
    )
}

/// `requestState` of a replayed call's round (see `super::replay`): like a
/// confirmation's, and carrying `data` (the responses recorded so far).
pub fn sign_round(digest: &str, expires: u64, data: &str) -> String {
    sign_kind("asks", digest, expires, data)
}

fn sign_kind(kind: &str, digest: &str, expires: u64, data: &str) -> String {
    let nonce: u64 = rand::random();
    let mut payload = format!("{kind}.{expires}.{nonce:016x}.{digest}");
    if !data.is_empty() {
        payload = format!("{payload}.{data}");
    }
    let tag = mac(payload.as_bytes()).finalize().into_bytes();
    format!(
        "{}.{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(payload),
        hex::encode(tag)
    )
}

/// The expiry of `state` when it was signed by this process for `digest`
/// and has not expired; `None` otherwise.
pub fn verify_state(state: &str, digest: &str, now: u64) -> Option<u64> {
    read_payload(state, "confirm")
        .filter(|(expires, bound, _)| *expires > now && bound == digest)
        .map(|(expires, _, _)| expires)
}

/// The expiry and the data of a round's `state` when it was signed (by
/// any replica sharing the key) for `digest` and has not expired.
pub fn verify_round(state: &str, digest: &str, now: u64) -> Option<(u64, String)> {
    read_payload(state, "asks")
        .filter(|(expires, bound, _)| *expires > now && bound == digest)
        .map(|(expires, _, data)| (expires, data))
}

/// The `traceparent` a round's or a confirmation's `state` carries (the
/// span of the round that signed it), when its MAC verifies: what its
/// retry continues, on any replica sharing the key. Its expiry and binding
/// are not asked: it only names the trace the retry's span joins, and the
/// retry is checked whole by [`verify_round`] or [`verify_state`].
pub fn trace_of(state: &str) -> Option<String> {
    let (_, _, data) = read_payload(state, "asks").or_else(|| read_payload(state, "confirm"))?;
    let data: Value = serde_json::from_str(&data).ok()?;
    Some(data.get("trace")?.as_str()?.to_string())
}

/// The expiry, the bound digest and the data of a state of `kind` whose
/// MAC verifies.
fn read_payload(state: &str, kind: &str) -> Option<(u64, String, String)> {
    let (encoded, tag) = state.split_once('.')?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(encoded)
        .ok()?;
    mac(&bytes).verify_slice(&hex::decode(tag).ok()?).ok()?;
    let payload = String::from_utf8(bytes).ok()?;
    let mut parts = payload.splitn(5, '.');
    let (Some(read_kind), Some(expires), Some(_nonce), Some(bound)) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    if read_kind != kind {
        return None;
    }
    let data = parts.next().unwrap_or_default().to_string();
    Some((expires.parse().ok()?, bound.to_string(), data))
}

/// Confirmation states already answered, each kept until it expires: a
/// state is good for one answer, never for a replay of the same call.
#[derive(Default)]
pub struct UsedStates {
    used: Mutex<HashMap<String, u64>>,
}

impl UsedStates {
    /// Marks `state` (verified, valid until `expires`) as answered; false
    /// when it was answered before.
    pub fn first_use(&self, state: &str, expires: u64, now: u64) -> bool {
        let mut used = lock(&self.used);
        used.retain(|_, expires| *expires > now);
        used.insert(state.to_string(), expires).is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_state_is_bound_and_expires() {
        let digest = call_digest(Some("alice"), "rm", &json!({"path": "/x"}));
        let state = sign_state(&digest, 1_000);
        assert_eq!(verify_state(&state, &digest, 999), Some(1_000));
        assert!(verify_state(&state, &digest, 1_000).is_none(), "expired");
        let other = call_digest(Some("bob"), "rm", &json!({"path": "/x"}));
        assert!(
            verify_state(&state, &other, 999).is_none(),
            "another caller"
        );
        let args = call_digest(Some("alice"), "rm", &json!({"path": "/y"}));
        assert!(
            verify_state(&state, &args, 999).is_none(),
            "other arguments"
        );
        // Tampering with the payload breaks the MAC: its first character
        // changed to another, whatever it was.
        let first = if state.starts_with('A') { "B" } else { "A" };
        let forged = format!("{first}{}", &state[1..]);
        assert_ne!(forged, state);
        assert!(verify_state(&forged, &digest, 999).is_none());
        assert!(verify_state("nonsense", &digest, 0).is_none());
        assert!(verify_state("a.b", &digest, 0).is_none());
        // No two states are alike, even for the same call and second.
        assert_ne!(sign_state(&digest, 1_000), state);
    }

    #[test]
    fn a_round_carries_its_data_and_is_no_confirmation() {
        let digest = call_digest(None, "ask", &json!({}));
        let data = r#"{"responses":{"a.b":1}}"#;
        let round = sign_round(&digest, 1_000, data);
        assert_eq!(
            verify_round(&round, &digest, 999),
            Some((1_000, data.to_string()))
        );
        assert!(verify_round(&round, &digest, 1_000).is_none(), "expired");
        let other = call_digest(None, "ask", &json!({"x": 1}));
        assert!(
            verify_round(&round, &other, 999).is_none(),
            "other arguments"
        );
        assert!(
            verify_state(&round, &digest, 999).is_none(),
            "not a confirmation"
        );
        let confirmation = sign_state(&digest, 1_000);
        assert!(verify_round(&confirmation, &digest, 999).is_none());
        let tampered = format!("{round}-TAMPERED");
        assert!(verify_round(&tampered, &digest, 999).is_none());
    }

    #[test]
    fn a_round_names_its_trace_only_when_signed() {
        let digest = call_digest(None, "ask", &json!({}));
        let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let data = json!({"responses": {}, "trace": traceparent}).to_string();
        let round = sign_round(&digest, 1_000, &data);
        assert_eq!(trace_of(&round).as_deref(), Some(traceparent));
        assert_eq!(trace_of(&sign_round(&digest, 1_000, "{}")), None);
        assert_eq!(trace_of(&format!("{round}0")), None, "tampered");
        assert_eq!(trace_of(&sign_state(&digest, 1_000)), None, "not traced");
    }

    #[test]
    fn a_request_state_is_answered_once_and_forgotten_after_it_expires() {
        let digest = call_digest(None, "rm", &json!({}));
        let used = UsedStates::default();
        let state = sign_state(&digest, 1_000);
        assert!(used.first_use(&state, 1_000, 10));
        assert!(!used.first_use(&state, 1_000, 11), "a replay");
        let other = sign_state(&digest, 1_000);
        assert!(
            used.first_use(&other, 1_000, 12),
            "another state of the same call"
        );
        // Past its expiry a state is no longer kept (and no longer valid).
        let later = sign_state(&digest, 2_000);
        assert!(used.first_use(&later, 2_000, 1_500));
        assert_eq!(lock(&used.used).len(), 1);
    }
}
