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

use std::time::Duration;

use serde_json::{Value, json};

use super::context::Ctx;
use super::model::client::ElicitAnswer;
use super::model::{InputRequest, InputRequired, Retry, to_value};
use super::request::{Answer, Client, missing_capability};
use super::request_state::{call_digest, first_use, now_secs, sign_state, verify_state};
use super::revision::Revision;
use super::session::Session;
use super::tasks::task::relate;
use crate::call::{Confirmation, PreparedCall};
use crate::protocol::jsonrpc::{self, ErrorObject};
use crate::protocol::outbox::Outbox;

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
    if !revision.wire().elicitation_has_mode()
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
    retry: &Retry,
) -> Result<Confirmation, Answer> {
    let tool = prepared.tool().info.name.as_str();
    let digest = call_digest(ctx.caller().token(), tool, prepared.arguments());
    if let Some(state) = retry.request_state.as_deref() {
        let (state, expires) = verify_state(state, &digest, now_secs())
            .map(|expires| (state, expires))
            .ok_or_else(|| {
                invalid_state(
                    "requestState is invalid, expired, or belongs to another call; \
                     call again without it",
                )
            })?;
        if let Some(response) = retry
            .input_responses
            .as_ref()
            .and_then(|r| r.get(CONFIRM_KEY))
        {
            let server = ctx.server();
            let first = first_use(
                server.shared.as_deref(),
                &server.used_states,
                state,
                expires,
            )
            .await
            .map_err(Answer::Error)?;
            if !first {
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
    let request = InputRequest {
        method: "elicitation/create",
        params: form(tool, prepared.arguments()),
    };
    Err(Answer::Result(to_value(InputRequired::new(
        vec![(CONFIRM_KEY.into(), request)],
        sign_state(&digest, expires),
    ))))
}

fn invalid_state(message: &str) -> Answer {
    Answer::Error(ErrorObject::invalid_param("requestState", message))
}

/// Whether an elicitation result accepts the form.
fn accepted(result: &Value) -> Confirmation {
    if ElicitAnswer::read(result).confirms() {
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

#[cfg(test)]
mod tests {
    use super::*;

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
