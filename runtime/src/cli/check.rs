//! `airlock check`: validates a policy file without serving anything, and
//! says for each source named by reference whether the lock and the store
//! have it (so a start will not need the network).

use std::path::PathBuf;

use super::{Exit, FetchOptions};
use crate::policy::Policy;
use crate::source::Source;

/// Check a policy file: syntax, unknown keys, paths, patterns, pins,
/// references and keys; and whether referenced sources are locked and stored.
#[derive(clap::Args)]
#[command(after_help = "Examples:\n  airlock check\n  airlock check deploy/airlock.toml")]
pub struct Args {
    /// The policy file.
    #[arg(default_value = "airlock.toml", value_name = "FILE")]
    file: PathBuf,
    #[command(flatten)]
    fetch: FetchOptions,
}

pub fn run(args: Args) -> Exit {
    match Policy::load(&args.file) {
        Ok(policy) => {
            let components = policy.components().count();
            println!(
                "{}: ok ({components} component section{})",
                args.file.display(),
                if components == 1 { "" } else { "s" }
            );
            let resolver = args.fetch.resolver(Some(&args.file));
            for component in policy.components() {
                let Some(source) = component.source.as_ref().filter(|s| s.is_remote()) else {
                    continue;
                };
                let state = match resolver.locked(source) {
                    Err(err) => format!("the lock is unusable: {err}"),
                    Ok(locked) => {
                        stored_state(&resolver, source, component.sha256.as_deref(), locked)
                    }
                };
                println!("  {}: {source}: {state}", component.name);
            }
            Exit::Ok
        }
        Err(err) => {
            eprintln!("error: {err}");
            Exit::LoadFailed
        }
    }
}

/// Whether a start can load `source` without the network.
fn stored_state(
    resolver: &crate::source::Resolver,
    source: &Source,
    pin: Option<&str>,
    locked: Option<crate::source::lock::Locked>,
) -> String {
    let wanted = match (source, pin, &locked) {
        (Source::Oci(oci), _, _) if oci.digest.is_some() => oci.digest.clone(),
        (_, Some(pin), _) if !matches!(source, Source::Oci(_)) => Some(format!("sha256:{pin}")),
        (_, _, Some(l)) => l.manifest.clone().or(Some(l.component.clone())),
        _ => None,
    };
    match wanted {
        None => "not locked yet: the first start (or `airlock pull`) resolves it".to_string(),
        Some(digest) if resolver.store().has(&digest) => format!("{digest}, in the store"),
        Some(digest) => format!("{digest}, not in the store: `airlock pull` fetches it"),
    }
}
