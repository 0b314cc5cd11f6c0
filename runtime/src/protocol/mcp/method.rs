//! What one entry of the method table ([`super::dispatch`]) says of a
//! method: the revisions that have it, what its caller needs, what it
//! holds while it runs, the field its `Mcp-Name` header mirrors, what a
//! transport does with it first, and how it is answered; and whether a
//! request reaches it.

use std::future::Future;
use std::pin::Pin;

use serde_json::{Value, json};

use super::context::Ctx;
use super::request::{Answer, TASKS_EXTENSION, missing_capability};
use super::revision::Revision;
use super::server::Server;
use crate::policy::Token;
use crate::protocol::jsonrpc::{ErrorObject, Request};

/// What a request that may take long holds while it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Long {
    /// It runs a guest: one of the server's calls in flight.
    Call,
    /// It only waits (for a task, for notifications): a stream, no call.
    Wait,
}

/// The revisions that have a method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Revisions {
    /// Sessions (2025-03-26 … 2025-11-25).
    Sessions,
    /// Revision 2026-07-28 only.
    Stateless,
    Both,
}

/// What a caller needs for a method, besides its revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    Nothing,
    /// Tasks on: in the core protocol, or the extension the request
    /// declares (-32021 when a 2026-07-28 request does not).
    Tasks,
    /// Tasks on, and a bearer token (listing needs an owner worth the name).
    TasksAndToken,
}

pub(super) type Handled<'c> = Pin<Box<dyn Future<Output = Answer> + Send + 'c>>;
pub(super) type Handler = for<'c> fn(&'c Ctx<'c>, Value) -> Handled<'c>;

/// How a method is answered.
#[derive(Clone, Copy)]
pub(super) enum Handling {
    Handler(Handler),
    /// By the session itself, in any state (`initialize`, `ping`).
    Session,
}

/// A check of a request's HTTP headers against its params (2026-07-28):
/// `Err` is the error a transport answers with 400.
pub type HeaderCheck = for<'h> fn(
    &Server,
    Option<&Token>,
    &Request,
    &'h dyn Fn(&str) -> Option<&'h str>,
) -> Result<(), ErrorObject>;

/// What a transport does with a request of a method before the dispatch
/// runs it: asked of the table, so no transport matches a method's name.
#[derive(Clone, Copy)]
pub enum Before {
    /// Nothing: the dispatch runs it.
    Nothing,
    /// It opens a session (`initialize`): the transport makes the session
    /// and names it in the answer.
    OpensSession,
    /// It lists what the components offer: while the start's components
    /// still load it waits for them (bounded), so a first list is not
    /// empty.
    AwaitsLoading,
    /// Over HTTP its headers mirror some of its params, checked before it
    /// runs.
    ChecksHeaders(HeaderCheck),
}

/// One MCP method: everything the server knows of it.
pub struct Method {
    pub name: &'static str,
    pub revisions: Revisions,
    pub needs: Needs,
    /// What it holds while it runs, when it may take long.
    pub long: Option<Long>,
    /// The params field its `Mcp-Name` header mirrors (2026-07-28).
    pub name_field: Option<&'static str>,
    /// What a transport does with it before it runs.
    pub before: Before,
    pub(super) handling: Handling,
}

impl Method {
    /// Whether a request of `revision` reaches this method (with `tasks`
    /// on and a `token` or not); `Err` says what to answer instead.
    pub(super) fn reached(
        &self,
        revision: Revision,
        client_tasks: bool,
        token: bool,
    ) -> Result<(), ErrorObject> {
        let not_found = || ErrorObject::method_not_found(self.name);
        let stateless = revision.is_stateless();
        let in_revision = match self.revisions {
            Revisions::Sessions => !stateless,
            Revisions::Stateless => stateless,
            Revisions::Both => true,
        };
        if !in_revision {
            return Err(not_found());
        }
        if self.needs == Needs::Nothing {
            return Ok(());
        }
        // A task of the 2026-07-28 extension is reached only by requests
        // that declare it.
        if stateless && !client_tasks {
            return Err(missing_capability(
                format!(
                    "{} belongs to the {TASKS_EXTENSION} extension, which the request does not declare",
                    self.name
                ),
                json!({ "extensions": { TASKS_EXTENSION: {} } }),
            ));
        }
        if !revision.wire().tasks_on(client_tasks) || (self.needs == Needs::TasksAndToken && !token)
        {
            return Err(not_found());
        }
        Ok(())
    }
}
