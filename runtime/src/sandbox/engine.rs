//! The engine's settings: what the runtime fixes for its lifetime (pool
//! size, fuel, memory ceiling, tiered compilation) and how they become a
//! wasmtime `Config` with the pooling allocator.

use std::time::Duration;

use wasmtime::{Config, InstanceAllocationStrategy, PoolingAllocationConfig, Strategy};

use super::CompileCache;
use super::tier::{TIERED_VAR, Tier};

/// The smallest component that starts on the quick tier when its
/// optimised code is not in the compile cache: a Python or JavaScript
/// guest (1.6–20 MB) takes 1–5 s to compile with Cranelift, a Rust tool
/// (50–300 KB) a fraction of a second, and gains nothing from Winch.
pub const TIER_ABOVE: usize = 1 << 20;

/// How much of a linear memory's dirtied pages the pool resets in place
/// (kept resident) rather than decommits, per instance slot.
const LINEAR_MEMORY_KEEP_RESIDENT: usize = 16 << 20;

/// The same for a table: a componentize-py guest's table of ~5,700
/// function references is 45 KiB; larger ones should not fault either.
const TABLE_KEEP_RESIDENT: usize = 1 << 20;

/// How often the epoch ticks; the granularity of time limits and of
/// stopping a cancelled guest.
pub(super) const TICK: Duration = Duration::from_millis(10);

/// Settings of the sandbox, fixed for the runtime's lifetime.
#[derive(Debug, Clone)]
pub struct SandboxConfig {
    pub(super) cache: Option<CompileCache>,
    pub(super) fuel: bool,
    pub(super) max_memory: u64,
    pub(super) instances: u32,
    pub(super) tune: Option<Tuning>,
    pub(super) tier_above: Option<usize>,
}

/// Adjusts the engine and pool settings after the defaults (benchmarks
/// compare pool settings with it; see `bench/`).
pub type Tuning = fn(&mut Config, &mut PoolingAllocationConfig);

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig {
            cache: CompileCache::default_dir()
                .ok()
                .map(|found| CompileCache::new(found.dir)),
            fuel: false,
            max_memory: 1 << 30,
            instances: 1000,
            tune: None,
            tier_above: match std::env::var(TIERED_VAR).as_deref() {
                Ok("0") => None,
                _ => Some(TIER_ABOVE),
            },
        }
    }
}

impl SandboxConfig {
    /// Where compiled components are cached; `None` disables the cache.
    pub fn cache(mut self, cache: Option<CompileCache>) -> Self {
        self.cache = cache;
        self
    }

    /// Meter fuel. Engine-wide and not free, so only on when a policy asks.
    pub fn fuel(mut self, enabled: bool) -> Self {
        self.fuel = enabled;
        self
    }

    /// The largest memory limit any call may be given (sizes pool slots).
    pub fn max_memory(mut self, bytes: u64) -> Self {
        self.max_memory = bytes;
        self
    }

    /// How many instances may exist at once (pool size).
    pub fn instances(mut self, count: u32) -> Self {
        self.instances = count.max(1);
        self
    }

    /// Components of at least this many bytes whose optimised code is not
    /// in the compile cache start on the quick tier (see [`Tier`]); `None`
    /// compiles everything with Cranelift before its first call (what
    /// `pull` does, to fill the cache). Default:
    /// [`TIER_ABOVE`], or `None` when `AIRLOCK_TIERED=0`.
    pub fn tier_above(mut self, bytes: Option<usize>) -> Self {
        self.tier_above = bytes;
        self
    }

    /// Changes engine and pool settings after the defaults (for benchmarks).
    #[doc(hidden)]
    pub fn tune(mut self, tune: Tuning) -> Self {
        self.tune = Some(tune);
        self
    }
}

/// The engine of `tier`. The quick tier's engine allocates on demand: its
/// calls are the first few of a component, and a second pool would
/// reserve as much address space as the first.
pub(super) fn engine_config(config: &SandboxConfig, tier: Tier, pooling: bool) -> Config {
    let mut c = Config::new();
    c.epoch_interruption(true);
    c.consume_fuel(config.fuel);
    c.wasm_component_model(true);
    // No concurrent state in the 0.2 engines' stores: the feature is
    // compiled in for the 0.3 engine (`p3`, which turns it back on for its
    // own), and wasmtime turns it on for every engine by default.
    #[cfg(feature = "p3")]
    c.concurrency_support(false);
    if tier == Tier::Quick {
        c.strategy(Strategy::Winch);
        return c;
    }
    if pooling {
        let mut pool = PoolingAllocationConfig::default();
        let n = config.instances;
        pool.total_component_instances(n)
            .total_core_instances(n.saturating_mul(8))
            .total_memories(n.saturating_mul(2))
            .total_tables(n.saturating_mul(4))
            .total_stacks(n)
            .max_core_instances_per_component(64)
            .max_memories_per_component(8)
            .max_tables_per_component(32)
            .max_memory_size(usize::try_from(config.max_memory).unwrap_or(usize::MAX))
            // Reset up to this much of what a call dirtied in place (a copy
            // from the image, or zeros) instead of handing it back to the
            // kernel: a page handed back is a TLB flush now and a page
            // fault when the next call touches it again. Only dirtied pages
            // stay resident. 16 MiB covers an interpreter guest's heap: the
            // componentize-py guest dirties ~2 MB a call, and with 1 MiB it
            // took 231 faults and 1.51 ms a call, with 16 MiB 0 and 0.91 ms
            // (Rust, JS and `add` unchanged; BENCHMARKS.md, Levers).
            .linear_memory_keep_resident(LINEAR_MEMORY_KEEP_RESIDENT)
            .table_keep_resident(TABLE_KEEP_RESIDENT)
            // Reset only the pages a call dirtied (Linux 6.7+ PAGEMAP_SCAN;
            // off elsewhere): a fresh instance 4× faster, and memory that
            // was never touched stays unresident (see BENCHMARKS.md).
            .pagemap_scan(wasmtime::Enabled::Auto);
        if let Some(tune) = config.tune {
            tune(&mut c, &mut pool);
        }
        c.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    }
    c
}
