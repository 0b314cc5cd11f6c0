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
                println!("  [components.{}] {source}: {state}", component.name);
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
    let store = resolver.store();
    let pull = "`airlock pull` fetches it";
    match (source, locked) {
        (Source::Oci(oci), _) if oci.digest.is_some() => {
            match oci.digest.as_deref().filter(|d| store.has(d)) {
                Some(_) => "in the store".to_string(),
                None => format!("not in the store yet; {pull}"),
            }
        }
        (Source::Url(_), _) if pin.is_some_and(|p| store.has(&format!("sha256:{p}"))) => {
            "pinned, in the store".to_string()
        }
        (_, Some(locked)) => {
            let digest = locked.manifest.as_deref().unwrap_or(&locked.component);
            let stored =
                locked.manifest.iter().all(|m| store.has(m)) && store.has(&locked.component);
            if stored {
                format!("locked to {digest}, in the store")
            } else {
                format!("locked to {digest}, not in the store yet; {pull}")
            }
        }
        (_, None) => format!("not locked yet; the first start records it (or {pull})"),
    }
}
