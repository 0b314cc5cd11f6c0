//! What the process counts for `GET /metrics` (Prometheus / OpenMetrics
//! text): calls by tool and outcome, their durations, refusals by
//! capability, HTTP answers by status; and, read when scraped, what is
//! loaded, what runs and which tasks exist.
//!
//! The counters are process-wide (one registry, as Prometheus clients
//! keep), so every door a call comes through counts the same way. Labels
//! take only values the runtime chose: a tool that is not served counts
//! under `tool=""`, never under the name a client sent, so no client can
//! grow the set of series.

use std::sync::LazyLock;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    tool: String,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabels {
    tool: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CapabilityLabels {
    capability: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabels {
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CordonLabels {
    cordon: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TaskLabels {
    status: &'static str,
}

struct Metrics {
    registry: Registry,
    calls: Family<CallLabels, Counter>,
    durations: Family<ToolLabels, Histogram>,
    refusals: Family<CapabilityLabels, Counter>,
    http: Family<StatusLabels, Counter>,
    tasks: Family<TaskLabels, Gauge>,
    cordon_deaths: Family<CordonLabels, Counter>,
    inline: Counter,
    running: Gauge,
    pool: Gauge,
    components: Gauge,
    tools: Gauge,
    loading: Gauge,
    quick: Gauge,
    http_calls: Gauge,
    http_connections: Gauge,
    http_streams: Gauge,
}

fn durations() -> Histogram {
    // 100 µs to ~26 s, ×4 a bucket.
    Histogram::new(exponential_buckets(0.0001, 4.0, 10))
}

static METRICS: LazyLock<Metrics> = LazyLock::new(|| {
    let mut registry = Registry::with_prefix("airlock");
    let metrics = Metrics {
        calls: Family::default(),
        durations: Family::new_with_constructor(durations),
        refusals: Family::default(),
        http: Family::default(),
        tasks: Family::default(),
        cordon_deaths: Family::default(),
        inline: Counter::default(),
        running: Gauge::default(),
        pool: Gauge::default(),
        components: Gauge::default(),
        tools: Gauge::default(),
        loading: Gauge::default(),
        quick: Gauge::default(),
        http_calls: Gauge::default(),
        http_connections: Gauge::default(),
        http_streams: Gauge::default(),
        registry: Registry::default(),
    };
    registry.register(
        "calls",
        "Tool calls that ended, by tool and outcome (ok, tool-error, refused, busy, timeout, …)",
        metrics.calls.clone(),
    );
    registry.register(
        "call_duration_seconds",
        "How long calls took, from arrival to outcome, by tool",
        metrics.durations.clone(),
    );
    registry.register(
        "refusals",
        "What the policy refused: whole calls (call) and filesystem operations inside calls (folders)",
        metrics.refusals.clone(),
    );
    registry.register(
        "http_requests",
        "HTTP requests answered, by status",
        metrics.http.clone(),
    );
    registry.register("tasks", "Tasks held, by status", metrics.tasks.clone());
    registry.register(
        "cordon_worker_deaths",
        "Cordon worker processes that died (crashed or were killed) and were restarted, by cordon",
        metrics.cordon_deaths.clone(),
    );
    registry.register(
        "calls_inline",
        "Calls run on the async thread that received them, not on a lane (short calls on an otherwise idle server)",
        metrics.inline.clone(),
    );
    registry.register(
        "calls_running",
        "Calls prepared and not finished (running, queued or awaiting confirmation)",
        metrics.running.clone(),
    );
    registry.register(
        "instances_pool",
        "Instances the pool can hold at once",
        metrics.pool.clone(),
    );
    registry.register(
        "components_loaded",
        "Components served",
        metrics.components.clone(),
    );
    registry.register("tools_loaded", "Tools served", metrics.tools.clone());
    registry.register(
        "components_loading",
        "Components still loading (fetching or compiling) after the server started",
        metrics.loading.clone(),
    );
    registry.register(
        "components_quick",
        "Components on quick-tier code while their optimised code compiles",
        metrics.quick.clone(),
    );
    registry.register(
        "http_calls_held",
        "HTTP requests holding one of the calls in flight (--max-calls)",
        metrics.http_calls.clone(),
    );
    registry.register(
        "http_token_connections",
        "HTTP connections counted against a bearer token (each token holds at most a quarter)",
        metrics.http_connections.clone(),
    );
    registry.register(
        "http_streams_open",
        "Long-lived HTTP streams open: GET /mcp, subscriptions/listen, tasks/result waits (--max-streams)",
        metrics.http_streams.clone(),
    );
    Metrics {
        registry,
        ..metrics
    }
});

/// Counts a call that ended with `outcome` after `duration`; `tool` is
/// `None` for a name that is not served.
pub fn call_ended(tool: Option<&str>, outcome: &'static str, duration: Duration) {
    let tool = tool.unwrap_or_default().to_string();
    let m = &*METRICS;
    m.calls
        .get_or_create(&CallLabels {
            tool: tool.clone(),
            outcome,
        })
        .inc();
    m.durations
        .get_or_create(&ToolLabels { tool })
        .observe(duration.as_secs_f64());
}

/// Counts `count` refusals of `capability` (`call`, `folders`).
pub fn refused(capability: &'static str, count: u64) {
    if count > 0 {
        METRICS
            .refusals
            .get_or_create(&CapabilityLabels { capability })
            .inc_by(count);
    }
}

/// Counts a cordon's worker that died (the cordon's name is the policy's).
pub fn cordon_died(cordon: &str) {
    METRICS
        .cordon_deaths
        .get_or_create(&CordonLabels {
            cordon: cordon.to_string(),
        })
        .inc();
}

/// Counts a call that ran inline ([`crate::lanes::Inline`]).
pub fn ran_inline() {
    METRICS.inline.inc();
}

/// Counts an HTTP answer.
pub fn http_answered(status: u16) {
    METRICS.http.get_or_create(&StatusLabels { status }).inc();
}

/// What is read from the server when it is scraped.
#[derive(Debug, Default)]
pub struct Snapshot {
    pub running: usize,
    pub pool: u32,
    pub components: usize,
    pub tools: usize,
    pub loading: usize,
    /// Components on quick-tier code.
    pub quick: usize,
    /// Tasks held, by status (`working`, `completed`, …).
    pub tasks: Vec<(&'static str, usize)>,
    /// HTTP requests holding a call's place.
    pub http_calls: usize,
    /// HTTP connections counted against a token.
    pub http_connections: usize,
    /// Long-lived HTTP streams open.
    pub http_streams: usize,
}

/// Every metric in the OpenMetrics text format, with `now`'s gauges.
pub fn render(now: &Snapshot) -> String {
    let m = &*METRICS;
    let gauge = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
    m.running.set(gauge(now.running));
    m.pool.set(i64::from(now.pool));
    m.components.set(gauge(now.components));
    m.tools.set(gauge(now.tools));
    m.loading.set(gauge(now.loading));
    m.quick.set(gauge(now.quick));
    m.http_calls.set(gauge(now.http_calls));
    m.http_connections.set(gauge(now.http_connections));
    m.http_streams.set(gauge(now.http_streams));
    m.tasks.clear();
    for (status, count) in &now.tasks {
        m.tasks
            .get_or_create(&TaskLabels { status })
            .set(gauge(*count));
    }
    let mut text = String::new();
    if let Err(err) = prometheus_client::encoding::text::encode(&mut text, &m.registry) {
        tracing::error!("cannot encode the metrics: {err}");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_that_is_not_served_counts_without_its_name() {
        call_ended(None, "unknown-tool", Duration::from_millis(1));
        call_ended(Some("metrics_test_tool"), "ok", Duration::from_millis(2));
        let text = render(&Snapshot::default());
        assert!(
            text.contains(r#"airlock_calls_total{tool="",outcome="unknown-tool"}"#),
            "{text}"
        );
        assert!(
            text.contains(r#"airlock_calls_total{tool="metrics_test_tool",outcome="ok"} 1"#),
            "{text}"
        );
        assert!(text.ends_with("# EOF\n"), "{text}");
    }
}
