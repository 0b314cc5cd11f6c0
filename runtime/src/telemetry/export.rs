//! Starting the export: a tracer provider with a batching exporter (the
//! SDK reads `OTEL_TRACES_SAMPLER`/`_ARG` and `OTEL_BSP_*`), a meter
//! provider with a periodic exporter (`OTEL_METRIC_EXPORT_INTERVAL`), both
//! OTLP/HTTP protobuf through [`super::client`], under one resource
//! (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`; `airlock` when unset).
//! Started once, after the process confined itself (the processors' threads
//! are confined like every other); [`Exporting`] flushes them at the stop.

use opentelemetry::metrics::{Histogram, MeterProvider as _};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};

use super::client::Client;
use super::config::Settings;

/// What the hooks use while exporting.
pub(super) struct State {
    pub tracer: SdkTracer,
    /// `mcp.server.operation.duration` (s).
    pub operation: Histogram<f64>,
    /// `mcp.server.session.duration` (s).
    pub session: Histogram<f64>,
}

/// The running exporters; [`Exporting::stop`] (or dropping it) sends what
/// is still batched.
pub struct Exporting {
    traces: SdkTracerProvider,
    metrics: SdkMeterProvider,
}

/// Why the export could not start.
#[derive(Debug, thiserror::Error)]
#[error("cannot export to the OTLP endpoint: {0}; check otlp-endpoint / OTEL_EXPORTER_OTLP_*")]
pub struct StartError(String);

/// Starts exporting as `settings` say, sending from `runtime` with `tls`
/// for https endpoints. Once per process: a second start is refused.
pub fn start(
    settings: &Settings,
    runtime: tokio::runtime::Handle,
    tls: tokio_rustls::TlsConnector,
) -> Result<Exporting, StartError> {
    let client = Client { runtime, tls };
    let failed = |e: &dyn std::fmt::Display| StartError(e.to_string());
    let mut resource = Resource::builder();
    if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
        resource = resource.with_service_name("airlock");
    }
    let resource = resource
        .with_attribute(opentelemetry::KeyValue::new(
            "service.version",
            env!("CARGO_PKG_VERSION"),
        ))
        .build();
    let mut spans = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(client.clone())
        .with_protocol(Protocol::HttpBinary);
    if let Some(url) = settings.traces_url() {
        spans = spans.with_endpoint(url);
    }
    let spans = spans.build().map_err(|e| failed(&e))?;
    let mut measures = opentelemetry_otlp::MetricExporter::builder()
        .with_http()
        .with_http_client(client)
        .with_protocol(Protocol::HttpBinary);
    if let Some(url) = settings.metrics_url() {
        measures = measures.with_endpoint(url);
    }
    let measures = measures.build().map_err(|e| failed(&e))?;
    let traces = SdkTracerProvider::builder()
        .with_batch_exporter(spans)
        .with_resource(resource.clone())
        .build();
    let metrics = SdkMeterProvider::builder()
        .with_periodic_exporter(measures)
        .with_resource(resource)
        .build();
    let meter = metrics.meter("airlock");
    let state = State {
        tracer: traces.tracer("airlock"),
        operation: super::measures::operation(&meter),
        session: super::measures::session(&meter),
    };
    super::STATE
        .set(state)
        .map_err(|_| StartError("it was started already".into()))?;
    Ok(Exporting { traces, metrics })
}

impl Exporting {
    /// Sends what is batched and stops the exporters.
    pub fn stop(self) {
        if let Err(err) = self.traces.shutdown() {
            tracing::warn!("telemetry: the last spans were not exported: {err}");
        }
        if let Err(err) = self.metrics.shutdown() {
            tracing::warn!("telemetry: the last metrics were not exported: {err}");
        }
    }
}
