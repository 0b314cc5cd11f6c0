//! The MCP revisions airlock speaks, and everything that differs between
//! them, behind one interface ([`Wire`]) over the revision-independent
//! core: [`sessions`] (2025-03-26, 2025-06-18, 2025-11-25) and
//! [`stateless`] (2026-07-28), the way wasmtime-wasi keeps p1 and p2 over
//! one core. A handler asks `revision.wire()` how its answer is shaped,
//! never which revision it serves.
//!
//! Sessions (2025-03-26 … 2025-11-25) start with `initialize`, which
//! negotiates a revision for the session's life. Revision 2026-07-28 has no
//! session: each request carries its revision and the client's
//! capabilities in its own `_meta`, so one server (and one stdio process)
//! serves both kinds of clients side by side.

pub mod sessions;
pub mod stateless;
pub mod wire;

pub use wire::{AskingBy, Confirming, Wire};

use serde_json::Value;

/// One MCP revision, by its date.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Revision {
    V2025_03_26,
    V2025_06_18,
    V2025_11_25,
    V2026_07_28,
}

/// The `_meta` key naming a request's revision (2026-07-28).
pub const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";

impl Revision {
    /// Every revision served, newest first (`server/discover`, -32022).
    pub const ALL: [Revision; 4] = [
        Revision::V2026_07_28,
        Revision::V2025_11_25,
        Revision::V2025_06_18,
        Revision::V2025_03_26,
    ];
    /// The newest revision a session negotiates at `initialize`.
    pub const NEWEST_SESSION: Revision = Revision::V2025_11_25;

    pub fn parse(text: &str) -> Option<Revision> {
        Self::ALL.into_iter().find(|r| r.as_str() == text)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Revision::V2025_03_26 => "2025-03-26",
            Revision::V2025_06_18 => "2025-06-18",
            Revision::V2025_11_25 => "2025-11-25",
            Revision::V2026_07_28 => "2026-07-28",
        }
    }

    /// The revision `initialize` answers: the one asked when a session
    /// revision, else the newest.
    pub fn negotiate(asked: &str) -> Revision {
        Self::parse(asked)
            .filter(|r| !r.is_stateless())
            .unwrap_or(Self::NEWEST_SESSION)
    }

    /// What the revision's wire is: how its answers are shaped.
    pub fn wire(self) -> &'static dyn Wire {
        match self {
            Revision::V2025_03_26 => &sessions::BEFORE_TASKS,
            Revision::V2025_06_18 => &sessions::BEFORE_TASKS,
            Revision::V2025_11_25 => &sessions::WITH_TASKS,
            Revision::V2026_07_28 => &stateless::STATELESS,
        }
    }

    /// Each request stands alone: per-request `_meta`, no `initialize`,
    /// no session ([`Wire::stateless`]).
    pub fn is_stateless(self) -> bool {
        self.wire().stateless()
    }
}

/// The revisions served, newest first, as JSON strings.
pub fn all_as_json() -> Value {
    Value::from(Revision::ALL.iter().map(|r| r.as_str()).collect::<Vec<_>>())
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn names_round_trip_and_negotiation_stays_with_sessions() {
        for r in Revision::ALL {
            assert_eq!(Revision::parse(r.as_str()), Some(r));
        }
        assert_eq!(Revision::parse("2024-11-05"), None);
        for (asked, answered) in [
            ("2025-11-25", "2025-11-25"),
            ("2025-06-18", "2025-06-18"),
            ("2025-03-26", "2025-03-26"),
            ("2026-07-28", "2025-11-25"),
            ("2024-11-05", "2025-11-25"),
            ("nonsense", "2025-11-25"),
        ] {
            assert_eq!(Revision::negotiate(asked).as_str(), answered, "{asked}");
        }
    }

    #[test]
    fn each_revision_has_its_wire() {
        use Revision::*;
        for (r, stateless, tasks, mode) in [
            (V2025_03_26, false, false, false),
            (V2025_06_18, false, false, false),
            (V2025_11_25, false, true, true),
            (V2026_07_28, true, false, true),
        ] {
            let wire = r.wire();
            assert_eq!(wire.stateless(), stateless, "{r:?}");
            let confirming = match stateless {
                true => Confirming::ByRoundTrip,
                false => Confirming::ByElicitation,
            };
            assert_eq!(wire.confirming(), confirming, "{r:?}");
            assert_eq!(wire.core_tasks(), tasks, "{r:?}");
            assert_eq!(wire.elicitation_has_mode(), mode, "{r:?}");
            assert_eq!(wire.tasks_on(false), tasks, "{r:?}");
            assert_eq!(wire.tasks_on(true), tasks || stateless, "{r:?}");
        }
    }
}
