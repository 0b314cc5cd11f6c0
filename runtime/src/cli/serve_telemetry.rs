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
    let Some((exporting, settings)) = export(args, tokio.handle())? else {
        return Ok(None);
    };
    let urls: Vec<&str> = settings.urls().into_iter().collect();
    eprintln!(
        "airlock: exporting traces and metrics (OTLP/HTTP) to {}",
        urls.join(", ")
    );
    Ok(Some(exporting))
}

/// A cordon's worker exports as its server does (the same flag and
/// `OTEL_*` variables, which it is passed; the collector's port is in its
/// confinement), on a small async runtime of its own: its guests' runs and
/// their outbound requests, under each call's trace. Started once the
/// worker is confined; the runtime lives as long as the export.
pub(super) fn start_in_worker(
    args: &Args,
) -> Result<Option<(Exporting, tokio::runtime::Runtime)>, Exit> {
    if Settings::resolve(args.otlp_endpoint.as_deref()).is_ok_and(|s| s.is_none()) {
        return Ok(None);
    }
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("airlock-telemetry")
        .enable_all()
        .build()
        .map_err(|err| {
            eprintln!("error: traces and metrics: {err}");
            Exit::LoadFailed
        })?;
    Ok(export(args, tokio.handle())?.map(|(exporting, _)| (exporting, tokio)))
}

fn export(
    args: &Args,
    handle: &tokio::runtime::Handle,
) -> Result<Option<(Exporting, Settings)>, Exit> {
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
    let exporting = telemetry::start(&settings, handle.clone(), tls).map_err(|err| {
        eprintln!("error: {err}");
        Exit::Usage
    })?;
    Ok(Some((exporting, settings)))
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
