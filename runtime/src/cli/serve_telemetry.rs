//! `serve`'s OpenTelemetry export ([`crate::telemetry`]): started once the
//! process is confined and its async runtime runs (the exporters' threads
//! are confined like every other), from `--otlp-endpoint` (key
//! `otlp-endpoint`) or the standard `OTEL_*` variables; the confinement
//! plan gets the collectors' ports from [`endpoints_of`].

use super::Exit;
use super::serve_args::Args;
use crate::telemetry::{self, Exporting, Settings};

/// Starts exporting when asked to, saying where; a setting that cannot
/// work stops the start.
pub(super) fn start(
    args: &Args,
    tokio: &tokio::runtime::Runtime,
) -> Result<Option<Exporting>, Exit> {
    let settings = match Settings::resolve(args.otlp_endpoint.as_deref()) {
        Ok(Some(settings)) => settings,
        Ok(None) => return Ok(None),
        Err(err) => {
            eprintln!("error: --otlp-endpoint: {err}");
            return Err(Exit::Usage);
        }
    };
    let tls = crate::source_tls(None).map_err(|err| {
        eprintln!("error: traces and metrics: {err}");
        Exit::Usage
    })?;
    let exporting = telemetry::start(&settings, tokio.handle().clone(), tls).map_err(|err| {
        eprintln!("error: {err}");
        Exit::Usage
    })?;
    let urls: Vec<&str> = settings.urls().into_iter().collect();
    eprintln!(
        "airlock: exporting traces and metrics (OTLP/HTTP) to {}",
        urls.join(", ")
    );
    Ok(Some(exporting))
}

/// The endpoints `serve` would export to (for its confinement).
pub(super) fn endpoints(args: &Args) -> Vec<String> {
    endpoints_of(args.otlp_endpoint.as_deref())
}

/// The endpoints exported to with `flag` and the environment.
pub(super) fn endpoints_of(flag: Option<&str>) -> Vec<String> {
    match Settings::resolve(flag) {
        Ok(Some(settings)) => settings.urls().into_iter().map(str::to_string).collect(),
        _ => Vec::new(),
    }
}
