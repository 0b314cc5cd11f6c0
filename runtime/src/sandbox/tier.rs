//! Tiered compilation: a big component not yet in the compile cache starts
//! on code Winch compiles in a fraction of Cranelift's time, and
//! Cranelift's optimised code replaces it once compiled (the runtime's
//! `optimize` does that in the background while serving).
//!
//! Each tier has its own engine and linkers, because wasmtime code, stores
//! and instances belong to one engine. Everything a call is granted is
//! set up the same way on both: the linkers come from one place
//! (`linker`), the stores from another (`provision`), and both engines run
//! with epoch interruption (time limits, cancellation) and the same fuel
//! setting; memory is limited per store on both.

use wasmtime::Engine;

use super::linker::Linkers;

/// `AIRLOCK_TIERED=0` compiles every component with Cranelift before its
/// first call (the benchmarks' control).
pub const TIERED_VAR: &str = "AIRLOCK_TIERED";

/// Which compiler made a component's code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    /// Winch: compiled 3–5× faster, runs 10–35% slower.
    Quick,
    /// Cranelift with its optimisations: what every component ends on.
    Optimized,
}

impl Tier {
    /// How the compile cache tells a tier's entries apart.
    pub(super) fn key(self) -> &'static str {
        match self {
            Tier::Quick => "quick",
            Tier::Optimized => "opt",
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Quick => "quick",
            Tier::Optimized => "optimized",
        }
    }
}

/// The tier a component's first calls run on: the quick tier only for a
/// component of at least `tier_above` bytes whose optimised code is not
/// cached (compiling what is cached costs nothing).
pub(super) fn first_tier(size: usize, tier_above: Option<usize>, optimized_cached: bool) -> Tier {
    match tier_above {
        Some(above) if size >= above && !optimized_cached => Tier::Quick,
        _ => Tier::Optimized,
    }
}

/// One tier's engine and what components are linked against on it.
pub(super) struct Backend {
    pub(super) engine: Engine,
    pub(super) linkers: Linkers,
}

impl Backend {
    pub(super) fn new(engine: Engine) -> anyhow::Result<Self> {
        let linkers = Linkers::new(&engine)?;
        Ok(Backend { engine, linkers })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_big_components_missing_from_the_cache_start_quick() {
        let above = Some(1 << 20);
        assert_eq!(first_tier(20 << 20, above, false), Tier::Quick);
        assert_eq!(first_tier(1 << 20, above, false), Tier::Quick);
        // Cached optimised code loads in milliseconds: no reason to wait
        // for it on slower code.
        assert_eq!(first_tier(20 << 20, above, true), Tier::Optimized);
        // A Rust tool compiles fast enough as it is.
        assert_eq!(first_tier(300 << 10, above, false), Tier::Optimized);
        // Tiering off.
        assert_eq!(first_tier(20 << 20, None, false), Tier::Optimized);
        assert_eq!(first_tier(0, Some(0), false), Tier::Quick);
    }
}
