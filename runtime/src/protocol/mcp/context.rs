//! The context of one request being answered: the server, the session it
//! came through, its id, its revision, the client's capabilities, the log
//! level it asked for, and where its messages go. Every handler takes a
//! [`Ctx`]; what differs between revisions is read from `ctx.revision`'s
//! predicates, never decided again by a handler.

use std::sync::Arc;
use std::sync::atomic::AtomicU8;

use super::request::Client;
use super::revision::Revision;
use super::server::Server;
use super::session::Session;
use super::tasks::task::Owner;
use crate::call::Caller;
use crate::protocol::jsonrpc::Id;
use crate::protocol::outbox::Outbox;

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
        self.revision.has_core_tasks() || (self.revision.is_stateless() && self.client.tasks)
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
