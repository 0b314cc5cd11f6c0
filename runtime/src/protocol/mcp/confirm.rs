//! Asking the user to confirm a destructive call, the way each revision
//! can:
//! - sessions: an `elicitation/create` request sent while the call waits
//!   ([`ask`]): on the request's own stream, or — for a task — through the
//!   client waiting in `tasks/result`;
//! - 2026-07-28: a multi round-trip ([`by_round_trip`]): the first call
//!   answers `resultType: "input_required"` with the same form and a
//!   `requestState` signed with HMAC-SHA256 and bound to the caller, the
//!   tool, the arguments and a 5-minute expiry; the retry carrying
//!   `inputResponses` runs (accepted) or refuses (declined). A state
//!   answers one retry only.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, PoisonError, RwLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::request::{Answer, Client, Ctx, missing_capability};
use super::revision::Revision;
use super::session::Session;
use super::tasks::relate;
use crate::call::{Confirmation, PreparedCall};
use crate::protocol::jsonrpc::{self, ErrorObject};
use crate::protocol::outbox::Outbox;
use crate::sync::lock;

/// How long a call waits for the client to answer a confirmation request.
const ASK_TIMEOUT: Duration = Duration::from_secs(300);
/// How long a confirmation's `requestState` stays valid.
const STATE_TTL: Duration = Duration::from_secs(300);
/// The key of the confirmation in `inputRequests`/`inputResponses`.
pub const CONFIRM_KEY: &str = "airlock-confirm";

/// Asks the client to confirm a destructive call with an elicitation
/// request on `out`; for a task, the request names the task in its
/// `_meta`. A client without form elicitation cannot be asked.
pub async fn ask(
    session: &Session,
    revision: Revision,
    client: Client,
    tool: &str,
    arguments: &Value,
    out: &Outbox,
    task: Option<&str>,
) -> Confirmation {
    if !client.elicitation {
        return Confirmation::Unavailable;
    }
    let mut params = form(tool, arguments);
    if !revision.elicitation_has_mode()
        && let Some(form) = params.as_object_mut()
    {
        form.remove("mode");
    }
    if let Some(task) = task {
        relate(&mut params, task);
    }
    match session
        .ask(out, "elicitation/create", params, ASK_TIMEOUT)
        .await
    {
        None => Confirmation::Unavailable,
        Some(Ok(result)) => accepted(&result),
        Some(Err(error)) => {
            tracing::info!(tool, "the client refused to elicit a confirmation: {error}");
            Confirmation::Declined
        }
    }
}

/// The confirmation of a destructive call of revision 2026-07-28, or what
/// to answer instead: an `InputRequiredResult` asking for it, or an error.
pub async fn by_round_trip(
    ctx: &Ctx<'_>,
    prepared: &PreparedCall,
    params: &Value,
) -> Result<Confirmation, Answer> {
    let tool = prepared.tool().info.name.as_str();
    let digest = call_digest(ctx.caller().token(), tool, prepared.arguments());
    if let Some(state) = params.get("requestState") {
        let (state, expires) = state
            .as_str()
            .and_then(|s| Some((s, verify_state(s, &digest, now_secs())?)))
            .ok_or_else(|| {
                invalid_state(
                    "requestState is invalid, expired, or belongs to another call; \
                     call again without it",
                )
            })?;
        if let Some(response) = params
            .get("inputResponses")
            .and_then(|r| r.get(CONFIRM_KEY))
        {
            if !first_use(ctx, state, expires).await? {
                return Err(invalid_state(
                    "requestState was answered already; a confirmation is good for one call: \
                     call again without it",
                ));
            }
            let answer = accepted(response);
            tracing::info!(
                tool,
                accepted = answer == Confirmation::Accepted,
                "confirmation answered"
            );
            return Ok(answer);
        }
        // The state is good but the answer is missing: ask again.
    }
    if !ctx.client.elicitation {
        return Err(Answer::Error(missing_capability(
            format!(
                "{tool} is destructive and runs only after the user confirms it: declare the \
                 elicitation capability (form mode) so the server can ask"
            ),
            json!({ "elicitation": { "form": {} } }),
        )));
    }
    let expires = now_secs() + STATE_TTL.as_secs();
    Err(Answer::Result(json!({
        "resultType": "input_required",
        "inputRequests": {
            CONFIRM_KEY: { "method": "elicitation/create", "params": form(tool, prepared.arguments()) }
        },
        "requestState": sign_state(&digest, expires),
    })))
}

fn invalid_state(message: &str) -> Answer {
    Answer::Error(ErrorObject::invalid_param("requestState", message))
}

/// Whether an elicitation result accepts the form.
fn accepted(result: &Value) -> Confirmation {
    let yes = result.get("action").and_then(Value::as_str) == Some("accept")
        && result.pointer("/content/confirm") == Some(&Value::Bool(true));
    if yes {
        Confirmation::Accepted
    } else {
        Confirmation::Declined
    }
}

/// The yes/no elicitation form naming a destructive tool and its arguments.
fn form(tool: &str, arguments: &Value) -> Value {
    let args = jsonrpc::shorten(&arguments.to_string(), 2000);
    json!({
        "mode": "form",
        "message": format!(
            "The tool \"{tool}\" is destructive: it may modify or delete data. \
             Run it with these arguments?\n{args}"
        ),
        "requestedSchema": {
            "type": "object",
            "properties": {
                "confirm": {
                    "type": "boolean",
                    "title": format!("Run {tool}"),
                    "description": format!("Run the destructive tool {tool} with {args}"),
                    "default": false,
                }
            },
            "required": ["confirm"],
        },
    })
}

// --- signed request states ---------------------------------------------------

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
/// replica when they share state; false when it was answered before.
async fn first_use(ctx: &Ctx<'_>, state: &str, expires: u64) -> Result<bool, Answer> {
    let server = ctx.server();
    let Some(shared) = &server.shared else {
        return Ok(server.used_states.first_use(state, expires, now_secs()));
    };
    let mark = hex::encode(Sha256::digest(state.as_bytes()));
    shared.first_use(&mark, expires).await.map_err(|err| {
        tracing::warn!("shared state: {err}");
        Answer::Error(ErrorObject::new(
            jsonrpc::INTERNAL_ERROR,
            "the shared state is unreachable; try again shortly",
        ))
    })
}

fn mac(payload: &[u8]) -> HmacSha256 {
    let mut mac = HmacSha256::new_from_slice(&state_key()).expect("HMAC takes a key of any length");
    mac.update(payload);
    mac
}

/// What a confirmation's `requestState` is bound to.
fn call_digest(principal: Option<&str>, tool: &str, arguments: &Value) -> String {
    let bound = json!([principal, tool, arguments]).to_string();
    hex::encode(Sha256::digest(bound.as_bytes()))
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// `requestState` for a confirmation: the payload (with a random nonce, so
/// no two are alike) and its HMAC.
fn sign_state(digest: &str, expires: u64) -> String {
    let nonce: u64 = rand::random();
    let payload = format!("confirm.{expires}.{nonce:016x}.{digest}");
    let tag = mac(payload.as_bytes()).finalize().into_bytes();
    format!(
        "{}.{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(payload),
        hex::encode(tag)
    )
}

/// The expiry of `state` when it was signed by this process for `digest`
/// and has not expired; `None` otherwise.
fn verify_state(state: &str, digest: &str, now: u64) -> Option<u64> {
    read_payload(state)
        .filter(|(expires, bound)| *expires > now && bound == digest)
        .map(|(expires, _)| expires)
}

/// The expiry and the bound digest of a state whose MAC verifies.
fn read_payload(state: &str) -> Option<(u64, String)> {
    let (encoded, tag) = state.split_once('.')?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(encoded)
        .ok()?;
    mac(&bytes).verify_slice(&hex::decode(tag).ok()?).ok()?;
    let payload = String::from_utf8(bytes).ok()?;
    let mut parts = payload.splitn(4, '.');
    let (Some("confirm"), Some(expires), Some(_nonce), Some(bound)) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    Some((expires.parse().ok()?, bound.to_string()))
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
        // Tampering with the payload breaks the MAC.
        let forged = state.replacen('A', "B", 1);
        assert!(verify_state(&forged, &digest, 999).is_none() || forged == state);
        assert!(verify_state("nonsense", &digest, 0).is_none());
        assert!(verify_state("a.b", &digest, 0).is_none());
        // No two states are alike, even for the same call and second.
        assert_ne!(sign_state(&digest, 1_000), state);
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

    #[test]
    fn answers_are_accepted_only_with_a_yes() {
        assert_eq!(
            accepted(&json!({"action": "accept", "content": {"confirm": true}})),
            Confirmation::Accepted
        );
        for no in [
            json!({"action": "accept", "content": {"confirm": false}}),
            json!({"action": "accept"}),
            json!({"action": "decline", "content": {"confirm": true}}),
            json!({"action": "cancel"}),
        ] {
            assert_eq!(accepted(&no), Confirmation::Declined, "{no}");
        }
    }
}
