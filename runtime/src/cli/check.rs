//! `airlock check`: validates a policy file without serving anything.
//!
//! Everything the policy file alone can say is checked when it is parsed
//! (`Policy::load`). With credentials to inject, the components the policy
//! names by `source` are loaded too, to find credentials that no call would
//! ever send: those given to tools that are not open-world (`serve` warns
//! about the same with [`unused_credentials`]). For each source named by
//! reference, it says whether the lock and the store have it (so a start
//! will not need the network).

use std::path::PathBuf;

use super::{Exit, FetchOptions};
use crate::Runtime;
use crate::policy::Policy;
use crate::sandbox::{Sandbox, SandboxConfig};
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
    let policy = match Policy::load(&args.file) {
        Ok(policy) => policy,
        Err(err) => {
            eprintln!("error: {err}");
            return Exit::LoadFailed;
        }
    };
    let components = policy.components().count();
    let resolver = args.fetch.resolver(Some(&args.file));
    let states: Vec<String> = policy
        .components()
        .filter_map(|c| Some((c, c.source.as_ref().filter(|s| s.is_remote())?)))
        .map(|(component, source)| {
            let state = match resolver.locked(source) {
                Err(err) => format!("the lock is unusable: {err}"),
                Ok(locked) => stored_state(&resolver, source, component.sha256.as_deref(), locked),
            };
            format!("  [components.{}] {source}: {state}", component.name)
        })
        .collect();
    if policy.has_credentials() && policy.components().any(|c| c.source.is_some()) {
        match credentials_of_sources(&args, policy) {
            Ok(()) => {}
            Err(exit) => return exit,
        }
    }
    println!(
        "{}: ok ({components} component section{})",
        args.file.display(),
        if components == 1 { "" } else { "s" }
    );
    for state in states {
        println!("{state}");
    }
    Exit::Ok
}

/// Loads the components the policy names by `source` and refuses
/// credentials none of their tools could send.
fn credentials_of_sources(args: &Args, policy: Policy) -> Result<(), Exit> {
    let sandbox = Sandbox::new(&SandboxConfig::default().instances(4)).map_err(|err| {
        eprintln!("error: cannot start the sandbox: {err:#}");
        Exit::LoadFailed
    })?;
    // Sources named by reference load from the lock and the store, as a
    // start would.
    let runtime = Runtime::try_new(sandbox, policy)
        .map(|runtime| runtime.with_resolver(args.fetch.resolver(Some(&args.file))))
        .map_err(|err| {
            eprintln!("error: {err}");
            Exit::LoadFailed
        })?;
    let report = runtime.load(&[]);
    for err in &report.refused {
        eprintln!("error: {}: {err}", args.file.display());
    }
    let unused = unused_credentials(&runtime);
    for line in &unused {
        eprintln!("error: {}: {line}", args.file.display());
    }
    if report.refused.is_empty() && unused.is_empty() {
        Ok(())
    } else {
        Err(Exit::LoadFailed)
    }
}

/// Credentials of a loaded component that none of its tools can send,
/// because none of the tools given them is open-world.
pub(super) fn unused_credentials(runtime: &Runtime) -> Vec<String> {
    let catalog = runtime.catalog();
    let mut unused = Vec::new();
    for component in catalog.components() {
        let tools: Vec<_> = catalog
            .tools()
            .filter(|t| t.component.name == component.name)
            .collect();
        let given: Vec<_> = tools
            .iter()
            .map(|t| {
                let settings = runtime.policy().settings_for(&component.name, &t.info.name);
                (t, settings.credentials)
            })
            .filter(|(_, credentials)| !credentials.is_empty())
            .collect();
        if given.is_empty() || given.iter().any(|(t, _)| t.info.hints.open_world) {
            continue;
        }
        let mut headers: Vec<String> = given
            .iter()
            .flat_map(|(_, cs)| cs.iter().map(|c| c.describe()))
            .collect();
        headers.sort();
        headers.dedup();
        unused.push(format!(
            "[components.{}] injects {}, but none of its tools given it is open-world, so no \
             call can send it (only open-world tools reach the network)",
            component.name,
            headers.join("; ")
        ));
    }
    unused
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
