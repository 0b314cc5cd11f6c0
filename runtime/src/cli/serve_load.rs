//! The start's loading, as `airlock serve` runs and reports it: what
//! loaded within `--load-wait` and what was refused, what still loads, the
//! policy sections that name nothing, credentials no call could send, and
//! why a start with nothing to serve stops.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::Exit;
use super::serve_args::Args;
use crate::runtime::loading::Loading;
use crate::{LoadReport, Runtime};

/// Warns about policy sections that name no component found in `paths`
/// or the policy's sources (a typo there leaves the intended component with
/// no grant, silently). Tool sections that name no tool refuse their
/// component when it loads.
fn warn_unmatched_sections(runtime: &Runtime, paths: &[PathBuf]) {
    let stems = runtime.component_names(paths);
    let names: Vec<&str> = stems.iter().map(String::as_str).collect();
    for warning in runtime.policy().unmatched_components(&names) {
        eprintln!("warning: {warning}");
    }
}

/// Starts loading `paths`, printing what loaded within `wait`
/// (`--load-wait`) and what was refused. Refused components do not stop
/// the server; the others serve, and those still compiling join later.
pub(super) fn load(args: &Args, runtime: &Arc<Runtime>, wait: Duration) -> Result<Loading, Exit> {
    let mut loading = Loading::start(runtime.clone(), &args.paths);
    let report = loading.wait(runtime, Some(wait));
    print_report(runtime, &report);
    warn_unmatched_sections(runtime, &args.paths);
    let waiting = runtime.loading_now();
    let pending = waiting.len();
    if pending == 0 {
        warn_unused_credentials(runtime);
    }
    let catalog = runtime.catalog();
    let served = !catalog.components().is_empty();
    // Each named with what it waits on (`/readyz` only counts them).
    let still = match pending {
        0 => String::new(),
        n => format!(
            "; {n} component(s) still {}: {}; served when ready",
            crate::runtime::pending::summary(&waiting),
            waiting
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    if served {
        eprintln!("{} ready{still}", catalog.counted());
    } else if pending > 0 {
        eprintln!("no tools ready yet{still}");
    } else if args.watch || args.allow_empty {
        eprintln!("warning: no tools to serve yet");
    } else {
        let named =
            !args.paths.is_empty() || runtime.policy().components().any(|c| c.source.is_some());
        eprintln!(
            "error: no tools to serve: {}",
            nothing_to_serve(named, &report)
        );
        return Err(Exit::LoadFailed);
    }
    Ok(loading)
}

/// Why a start has no tool, and what to do: `named` says whether any
/// component was named (a PATH, or a source in the policy).
fn nothing_to_serve(named: bool, report: &LoadReport) -> String {
    let later = "or pass --watch (tools may arrive later) or --allow-empty";
    if !named {
        format!(
            "no PATH was given and the policy names no component source; name a component \
             file or a folder of them (airlock serve tool.wasm, airlock serve tools/), {later}"
        )
    } else if !report.refused.is_empty() {
        format!("every component was refused; fix the refusals above, {later}")
    } else {
        format!("the PATHs given hold no component file (.wasm); name one, {later}")
    }
}

pub(super) fn print_report(runtime: &Runtime, report: &LoadReport) {
    let catalog = runtime.catalog();
    for (path, tools) in &report.loaded {
        let offers = catalog
            .components()
            .iter()
            .find(|c| &c.path == path)
            .map(|c| offered(c.offers()))
            .unwrap_or_default();
        let tools = match tools.is_empty() {
            true => "no tools".to_string(),
            false => tools.join(", "),
        };
        eprintln!("loaded {}: {tools}{offers}", path.display());
    }
    for err in &report.refused {
        eprintln!("refused {err}");
    }
}

/// `; offers 2 resources, 1 resource template, 1 prompt` (empty when it
/// offers nothing beside its tools).
fn offered(offers: &crate::catalog::Offers) -> String {
    let counts = [
        (offers.resources.len(), "resource"),
        (offers.templates.len(), "resource template"),
        (offers.prompts.len(), "prompt"),
    ];
    let parts: Vec<String> = counts
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}{}", if *n == 1 { "" } else { "s" }))
        .collect();
    match parts.is_empty() {
        true => String::new(),
        false => format!("; offers {}", parts.join(", ")),
    }
}

pub(super) fn warn_unused_credentials(runtime: &Runtime) {
    for line in super::check::unused_credentials(runtime) {
        eprintln!("warning: {line}");
    }
}
