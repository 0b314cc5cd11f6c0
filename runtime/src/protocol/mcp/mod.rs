//! MCP, independent of the transport: revisions 2025-03-26, 2025-06-18 and
//! 2025-11-25 (sessions) and 2026-07-28 (stateless), served side by side
//! by one core.
//!
//! The modules, each importing only those listed before it:
//! - [`model`]: every method's params as types, parsed once at the
//!   dispatch (serde);
//! - [`revision`]: the revisions, and what differs between them behind one
//!   interface ([`revision::Wire`]): `sessions` (2025-*), `stateless`
//!   (2026-07-28);
//! - [`request`]: what one request carries and answers, apart from where
//!   it runs: client capabilities, the 2026-07-28 `_meta`, errors, pages;
//! - [`request_state`]: the signed `requestState` of a multi round-trip;
//! - [`answered`]: what a body or line is answered, typed for the transport;
//! - [`session`]: one client's session (who, what `initialize` settled,
//!   its streams and running requests);
//! - [`asks`]: a running tool's requests to the client, in band;
//! - [`replay`]: the same in 2026-07-28, as rounds the call is re-run for;
//! - [`outcome`]: what a call's end becomes, and its observer;
//! - [`listeners`], [`tasks`]: the open subscriptions, the tasks;
//! - [`server`]: what every session and request shares;
//! - [`context`]: the context of one request ([`Ctx`]);
//! - [`running`]: what every request that runs a guest shares — how its
//!   guest asks the client (in band or in rounds), what a stopped run
//!   answers, how a round ends short of an outcome;
//! - the handlers: [`lifecycle`] (`initialize`, `server/discover`,
//!   `logging/setLevel`), [`confirm`] (confirming destructive calls),
//!   [`tools`] (`tools/list`, `tools/call`), the methods of [`tasks`],
//!   [`subscriptions`] (`subscriptions/listen`); [`offers`] (running a
//!   read, prompt or completion), [`skills`] (the Skills extension:
//!   `skills/*`, directory reads and a skill file's read, from memory),
//!   [`resources`] (`resources/*`),
//!   [`prompts`] (`prompts/*`), [`completion`] (`completion/complete`);
//! - [`method`]: what one entry of the method table says of a method, and
//!   whether a request reaches it;
//! - [`traced`]: the span of one request when telemetry is exported (named
//!   and attributed per the MCP conventions), wrapped around every request
//!   by the dispatch;
//! - [`dispatch`]: the one table of methods and the dispatch over it: what
//!   a transport asks of a message (its revision, whether it runs long,
//!   its `Mcp-Name` field) and the answer, typed.
//!
//! A call goes through [`crate::call`] on behalf of the request's caller,
//! so the audit log names it whatever the revision.

pub mod answered;
pub mod asks;
pub mod completion;
pub mod confirm;
pub mod context;
pub mod dispatch;
pub mod inputs;
pub mod lifecycle;
pub mod listeners;
pub mod method;
pub mod mirrored;
pub mod model;
pub mod offers;
pub mod outcome;
pub mod prompts;
pub mod replay;
pub mod request;
pub mod request_state;
pub mod resources;
pub mod revision;
pub mod running;
pub mod server;
pub mod session;
pub mod skills;
pub mod subscriptions;
pub mod tasks;
pub mod tools;
pub mod traced;

pub use context::Ctx;
pub use dispatch::{Answered, Long, Method, handle, method};
pub use revision::Revision;
pub use server::Server;
pub use session::Session;

#[cfg(test)]
mod tests;
