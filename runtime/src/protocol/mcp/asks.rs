//! A running tool's requests to the client (`host.elicit`, `host.sample`,
//! `host.roots`), once its grant allowed them, as each revision can send
//! them:
//! - sessions (2025-11-25 and before): [`InBand`] sends the request while
//!   the call runs — on the call's own stream (stdout, the POST's SSE
//!   stream), or for a task through the client waiting in `tasks/result`
//!   (the task is `input_required` meanwhile) — and the guest's thread
//!   waits for the answer, the call's deadline or its cancellation;
//! - 2026-07-28: a multi round-trip, replayed ([`super::replay`]).
//!
//! A client that did not declare the capability gets no request: the tool
//! sees `unavailable`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::runtime::Handle;

use super::model::client::ErrorReply;
use super::request::Client;
use super::revision::Revision;
use super::session::Session;
use crate::observe::{Ask, AskFailure, AskKind};
use crate::protocol::outbox::Outbox;
use crate::sandbox::CancelToken;

/// How often a waiting guest's thread looks at its cancellation.
const CHECK_EVERY: Duration = Duration::from_millis(50);

/// Called with `true` when a request starts waiting for the client, and
/// `false` when it stops (a task is `input_required` meanwhile).
pub type OnWait = Arc<dyn Fn(bool) + Send + Sync>;

/// Sends a call's requests to the client of a session, in the call.
pub struct InBand {
    pub session: Arc<Session>,
    /// Where the call's messages go (its stream, or its task's relay).
    pub out: Outbox,
    pub revision: Revision,
    pub client: Client,
    pub cancel: CancelToken,
    pub handle: Handle,
    pub on_wait: Option<OnWait>,
}

/// Whether `client` declared what `kind` needs under `revision`: `None`
/// when it did, else what is missing.
pub fn missing(client: Client, revision: Revision, kind: AskKind) -> Option<&'static str> {
    let declared = match kind {
        AskKind::ElicitForm => client.elicitation,
        AskKind::ElicitUrl => client.elicitation_url && revision.wire().elicitation_has_mode(),
        AskKind::Sample => client.sampling,
        AskKind::Roots => client.roots,
    };
    (!declared).then_some(match kind {
        AskKind::ElicitForm => "the elicitation capability (form mode)",
        AskKind::ElicitUrl => "the elicitation capability in URL mode",
        AskKind::Sample => "the sampling capability",
        AskKind::Roots => "the roots capability",
    })
}

/// `params` as `revision` sends them: before modes existed, a form has no
/// `mode`.
pub fn for_revision(revision: Revision, kind: AskKind, mut params: Value) -> Value {
    if kind == AskKind::ElicitForm
        && !revision.wire().elicitation_has_mode()
        && let Some(form) = params.as_object_mut()
    {
        form.remove("mode");
    }
    params
}

impl InBand {
    /// Sends `ask` and blocks this (guest's) thread until the answer,
    /// `deadline` or the call's cancellation.
    pub fn ask(&self, ask: &Ask, deadline: Instant) -> Result<Value, AskFailure> {
        if let Some(what) = missing(self.client, self.revision, ask.kind) {
            return Err(AskFailure::Unavailable(format!(
                "the client did not declare {what}, so it cannot be asked"
            )));
        }
        let Some(time) = deadline.checked_duration_since(Instant::now()) else {
            return Err(out_of_time());
        };
        let params = for_revision(self.revision, ask.kind, ask.params.clone());
        // A task is input_required before its client can see the question.
        if let Some(on_wait) = &self.on_wait {
            on_wait(true);
        }
        let (tx, rx) = std::sync::mpsc::channel();
        let (session, out, method) = (self.session.clone(), self.out.clone(), ask.kind.method());
        self.handle.spawn(async move {
            let answer = session.ask(&out, method, params, time).await;
            let _ = tx.send(answer);
        });
        let answer = loop {
            match rx.recv_timeout(CHECK_EVERY) {
                Ok(answer) => break answer.map(|a| a.map_err(|e| client_error(&e))),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout)
                    if !self.cancel.is_cancelled() && Instant::now() < deadline =>
                {
                    continue;
                }
                // The sending task ends by itself by the deadline (and
                // forgets the request then): nothing is left waiting.
                Err(_) => break None,
            }
        };
        if let Some(on_wait) = &self.on_wait {
            on_wait(false);
        }
        match answer {
            Some(answer) => answer,
            None if self.cancel.is_cancelled() => {
                Err(AskFailure::Failed("the call was cancelled".into()))
            }
            None => Err(out_of_time()),
        }
    }
}

fn out_of_time() -> AskFailure {
    AskFailure::Failed("the client did not answer within the call's time (limits.time)".into())
}

/// The tool's view of a JSON-RPC error the client answered with.
fn client_error(error: &Value) -> AskFailure {
    let reply = ErrorReply::read(error);
    let message = reply.message.as_deref().unwrap_or("no message");
    let code = reply.code();
    AskFailure::Failed(format!(
        "the client answered with an error ({code}): {}",
        crate::protocol::jsonrpc::shorten(message, 500)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_request_needs_its_capability() {
        let none = Client::default();
        let all = Client {
            elicitation: true,
            elicitation_url: true,
            sampling: true,
            roots: true,
            tasks: false,
        };
        for kind in [
            AskKind::ElicitForm,
            AskKind::ElicitUrl,
            AskKind::Sample,
            AskKind::Roots,
        ] {
            assert!(missing(none, Revision::V2025_11_25, kind).is_some());
            assert_eq!(missing(all, Revision::V2025_11_25, kind), None);
        }
        // URL mode came with modes (2025-11-25).
        assert!(missing(all, Revision::V2025_06_18, AskKind::ElicitUrl).is_some());
    }

    #[test]
    fn forms_lose_their_mode_where_there_is_none() {
        let form = json!({"mode": "form", "message": "m", "requestedSchema": {}});
        let old = for_revision(Revision::V2025_06_18, AskKind::ElicitForm, form.clone());
        assert_eq!(old, json!({"message": "m", "requestedSchema": {}}));
        assert_eq!(
            for_revision(Revision::V2025_11_25, AskKind::ElicitForm, form.clone()),
            form
        );
    }

    #[test]
    fn client_errors_are_failures_with_their_message() {
        assert_eq!(
            client_error(&json!({"code": -1, "message": "User rejected sampling request"})),
            AskFailure::Failed(
                "the client answered with an error (-1): User rejected sampling request".into()
            )
        );
    }
}
