//! The MCP revisions airlock speaks, and every way they differ, as
//! predicates consulted at the few points where the wire shape differs.
//!
//! Sessions (2025-03-26 … 2025-11-25) start with `initialize`, which
//! negotiates a revision for the session's life. Revision 2026-07-28 has no
//! session: each request carries its revision and the client's
//! capabilities in its own `_meta`, so one server (and one stdio process)
//! serves both kinds of clients side by side.

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

    /// Each request stands alone: per-request `_meta`, no `initialize`,
    /// no session, every result decorated with `resultType`.
    pub fn is_stateless(self) -> bool {
        self >= Revision::V2026_07_28
    }

    /// Tasks are in the core protocol: the `task` parameter of
    /// `tools/call`, `tasks/result`, `tasks/list`, status notifications.
    /// (2026-07-28 has them as an extension the client declares.)
    pub fn has_core_tasks(self) -> bool {
        self == Revision::V2025_11_25
    }

    /// An elicitation request carries `mode` (older clients do not know it).
    pub fn elicitation_has_mode(self) -> bool {
        self >= Revision::V2025_11_25
    }

    /// A destructive call is confirmed through a multi round-trip
    /// (`input_required` with a signed `requestState`), not through an
    /// elicitation request sent while the call waits.
    pub fn confirms_by_round_trip(self) -> bool {
        self.is_stateless()
    }

    /// A task-augmented call refused before it runs still answers a task
    /// (a failed one), as 2025-11-25 asks; 2026-07-28 answers the tool
    /// error itself, whose `resultType` says what it is.
    pub fn refusals_become_tasks(self) -> bool {
        self.has_core_tasks()
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
    fn predicates_per_revision() {
        use Revision::*;
        for (r, stateless, tasks, mode) in [
            (V2025_03_26, false, false, false),
            (V2025_06_18, false, false, false),
            (V2025_11_25, false, true, true),
            (V2026_07_28, true, false, true),
        ] {
            assert_eq!(r.is_stateless(), stateless, "{r:?}");
            assert_eq!(r.confirms_by_round_trip(), stateless, "{r:?}");
            assert_eq!(r.has_core_tasks(), tasks, "{r:?}");
            assert_eq!(r.refusals_become_tasks(), tasks, "{r:?}");
            assert_eq!(r.elicitation_has_mode(), mode, "{r:?}");
        }
    }
}
