//! The context of one request being answered: the server, the session it
//! came through, its id, its revision, the client's capabilities, the log
//! level it asked for, and where its messages go. Every handler takes a
//! [`Ctx`]; what differs between revisions is asked of
//! `ctx.revision.wire()` ([`super::revision::Wire`]), never decided again
//! by a handler.

use std::sync::Arc;
use std::sync::atomic::AtomicU8;

use super::asks::InBand;
use super::model::Retry;
use super::replay::{self, Replay};
use super::request::{Answer, Client};
use super::revision::Revision;
use super::server::Server;
use super::session::Session;
use super::tasks::task::Owner;
use crate::call::Caller;
use crate::protocol::jsonrpc::Id;
use crate::protocol::outbox::Outbox;
use crate::sandbox::CancelToken;

/// The context of one request with an id.
pub struct Ctx<'a> {
    pub server: &'a Arc<Server>,
    pub session: &'a Arc<Session>,
    pub id: &'a Id,
    pub revision: Revision,
    pub client: Client,
    /// Guest log messages below this level (an index into `Level::ALL`) are
    /// not sent: the session's (`logging/setLevel`, read live) or the
    /// request's own.
    pub log_level: Arc<AtomicU8>,
    /// Where messages sent while the request runs go.
    pub out: &'a Outbox,
}

impl Ctx<'_> {
    pub fn server(&self) -> &Arc<Server> {
        self.server
    }

    /// Who the audit log names for calls of this request.
    pub fn caller(&self) -> &Caller {
        self.session.caller()
    }

    /// Who owns the tasks this request creates and may see: the bearer
    /// token; else the session, or — without a session — anyone holding
    /// the (unguessable) id.
    pub fn owner(&self) -> Owner {
        match self.session.caller().token() {
            Some(name) => Owner::Token(name.to_string()),
            None if self.revision.is_stateless() => Owner::Anyone,
            None => Owner::Session(self.session.key()),
        }
    }

    /// Whether tasks are on for this request: in the core protocol, or
    /// through the extension the request declares.
    pub fn tasks_on(&self) -> bool {
        self.revision.wire().tasks_on(self.client.tasks)
    }

    /// Sends what a call asks its client on this request's own stream
    /// (sessions), until the call's `cancel`.
    pub fn in_band(&self, cancel: CancelToken) -> InBand {
        InBand {
            session: self.session.clone(),
            out: self.out.clone(),
            revision: self.revision,
            client: self.client,
            cancel,
            handle: tokio::runtime::Handle::current(),
            on_wait: None,
        }
    }

    /// The rounds of a 2026-07-28 call bound to `digest`: a first round,
    /// or the one its `requestState` continues (refused when the state is
    /// not good for it).
    pub async fn replay(&self, retry: &Retry, digest: &str) -> Result<Replay, Answer> {
        let server = self.server();
        replay::begin(
            Replay::new(self.client, self.revision),
            retry,
            digest,
            server.shared.as_deref(),
            &server.used_states,
        )
        .await
    }

    /// Whether the caller may see and call `tool` (a token may be limited).
    pub fn allows(&self, tool: &str) -> bool {
        self.session.allows(tool)
    }

    /// Whether the caller may see and read the resource `uri` (matching
    /// the template `template`, its text, when it is not a resource of its
    /// own), as a token's `resources` say.
    pub fn allows_resource(&self, uri: &str, template: Option<&str>) -> bool {
        self.session.allows_resource(uri, template)
    }

    /// Whether the caller may see and get `prompt`, as a token's `prompts`
    /// say.
    pub fn allows_prompt(&self, prompt: &str) -> bool {
        self.session.allows_prompt(prompt)
    }
}
