//! Every entry into a guest, end to end — a tool call, a resource read, a
//! prompt, a completion: find what serves it and check its arguments (its
//! kind's own work: [`prepare`] for a tool, [`prepare_offer`] for the
//! others), then one path for all ([`Prepared`]): settle consent, take a
//! place under the concurrency limit, run the guest in the sandbox on a
//! lane (or inline), check what it hands back, and record it — metrics,
//! log lines, the audit entry with its caller — however it ends.
//!
//! The seam to the protocols is deliberately two-step: preparing validates
//! everything that needs no guest and says whether the client must
//! confirm; [`Prepared::run`] (blocking) or [`Prepared::run_on_lane`]
//! (async, on [`crate::lanes`]) then runs the guest. In between, a protocol
//! may ask its client to confirm ([`Prepared::confirm`]) and register the
//! entry's cancel token under the request that asked for it. Every door —
//! MCP of any revision, tasks, `/rpc`, the CLI — prepares here, so every
//! audit entry names its [`Caller`].
//!
//! ```text
//!  tool_call::prepare ─┐                       ┌─ run (blocking)
//!  offer::prepare ─────┴─ prepared::prepare ───┼─ run_on_lane ─ lane │ inline │ apart
//!   (find, arguments,      (consent, id,       └─ … Entry::run ─ sandbox
//!    grant)                 place)                  record::ended (metrics, log, audit)
//! ```

mod caller;
mod consent;
mod entry;
mod error;
mod offer;
mod on_lane;
mod output;
mod prepared;
mod record;
mod running;
mod tool_call;
mod updates;

use std::sync::Arc;

pub use crate::sandbox::Ran;
pub use caller::Caller;
pub use consent::Confirmation;
pub use entry::{Entering, Entry, Outcome};
pub use error::{CallError, Refusal};
pub use offer::{Offer, grant_for_offers, prepare as prepare_offer};
pub use prepared::{Prepared, settled};
pub use record::answered_from_memory;
pub use running::Running;
pub use tool_call::{ToolCall, grant_for, prepare};
pub use updates::{ResourceUpdates, UpdateSink};

use crate::audit::AuditLog;
use crate::catalog::Catalog;
use crate::policy::Policy;
use crate::sandbox::Sandbox;

/// A tool call ready to run.
pub type PreparedCall = Prepared<ToolCall>;
/// A read, prompt or completion ready to run.
pub type PreparedOffer = Prepared<Offer>;

/// What preparing a call needs of the runtime: where tools are found, the
/// rules that grant them, where calls run, and where they are recorded.
pub struct Setting<'a> {
    /// The catalog as it is now: a call keeps it (it decides which of the
    /// URIs its component announces are its own).
    pub catalog: &'a Arc<Catalog>,
    pub policy: &'a Policy,
    pub sandbox: &'a Arc<Sandbox>,
    /// Where cordoned components' guests run (`None`: all run here).
    pub cordons: Option<&'a Arc<crate::cordon::Cordons>>,
    pub audit: Option<&'a Arc<AuditLog>>,
    pub running: &'a Arc<Running>,
    /// Where a component's `host.resource-updated` is announced.
    pub updates: &'a Arc<ResourceUpdates>,
}
