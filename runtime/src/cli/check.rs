//! `airlock check`: validates a policy file without serving anything, and,
//! with the components at hand, that its sections match them.
//!
//! Everything the policy file alone can say is checked when it is parsed
//! (`Policy::load`), every error reported. With components (the PATHs, or
//! the sources the policy names) they are loaded too, to find sections that
//! match no component or no tool, and credentials that no call would ever
//! send: those given to tools that are not open-world (`serve` warns about
//! the same with [`unused_credentials`]). Sources named by reference load
//! from the lock and the store, as a start would; for each, it says whether
//! they have it (so a start will not need the network).

use std::path::PathBuf;

use super::serve_config::ServeConfig;
use super::{Exit, FetchOptions};
use crate::Runtime;
use crate::policy::{Gives, Policy};
use crate::source::Source;

/// Check a policy file: syntax, unknown keys, paths, patterns, pins,
/// references and keys; whether referenced sources are locked and stored;
/// with components (PATHs, or the sources the policy names), also that each
/// component and tool section names one of them.
#[derive(clap::Args)]
#[command(
    after_help = "Examples:\n  airlock check\n  airlock check deploy/airlock.toml\n  \
                        airlock check airlock.toml tools/\n  \
                        airlock check --config deploy/serve.toml\n\n\
                        Every error is reported, one a line. With components at hand, a \
                        [components.NAME] section that matches none of them and a \
                        [components.NAME.tools.TOOL] section for a tool the component does not \
                        declare are errors (`serve` warns about the first and refuses the \
                        component for the second)."
)]
pub struct Args {
    /// The policy file.
    #[arg(default_value = "airlock.toml", value_name = "FILE")]
    file: PathBuf,
    /// Component files or folders to check the policy against (besides the
    /// sources the policy names).
    #[arg(value_name = "PATH")]
    paths: Vec<PathBuf>,
    /// Do not use the on-disk compile cache.
    #[arg(long)]
    no_cache: bool,
    /// A serve configuration file (`airlock serve --config`) to check, and
    /// with it the policy and components it names.
    #[arg(long, value_name = "SERVE_FILE", conflicts_with = "file")]
    config: Option<PathBuf>,
    #[command(flatten)]
    fetch: FetchOptions,
}

pub fn run(mut args: Args) -> Exit {
    // What the confinement shown depends on besides the policy and PATHs.
    let mut keys = (None, None, false);
    if let Some(file) = args.config.clone() {
        let config = match ServeConfig::load(&file) {
            Ok(config) => config,
            Err(errors) => return refuse(&args, &errors),
        };
        keys = (
            config.listen,
            config.state.clone(),
            config.watch.unwrap_or(false),
        );
        let Some(policy) = config.policy else {
            println!(
                "{}: ok (it names no policy: nothing is granted)",
                file.display()
            );
            return Exit::Ok;
        };
        println!("{}: ok; its policy:", file.display());
        args.file = policy;
        if args.paths.is_empty() {
            args.paths = config.components.unwrap_or_default();
        }
        args.no_cache |= config.no_cache.unwrap_or(false);
        if args.fetch.lock.is_none() {
            args.fetch.lock = config.lock;
        }
        args.fetch
            .insecure_registry
            .extend(config.insecure_registry.unwrap_or_default());
        args.fetch.fetch_timeout = args.fetch.fetch_timeout.or(config.fetch_timeout);
        args.fetch.fetch_min_rate = args.fetch.fetch_min_rate.or(config.fetch_min_rate);
    }
    // With errors, the rest of the policy is still checked against the
    // components: one run reports every error there is.
    let (policy, policy_errors) = match Policy::load_with_errors(&args.file) {
        Ok(read) => read,
        Err(err) => return refuse(&args, err.errors()),
    };
    let mut errors: Vec<String> = policy_errors.iter().map(ToString::to_string).collect();
    let sections = policy.components().count();
    let sections = format!(
        "{sections} component section{}",
        if sections == 1 { "" } else { "s" }
    );
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
    let has_sources = policy.components().any(|c| c.source.is_some());
    if args.paths.is_empty() && !has_sources {
        if !errors.is_empty() {
            return refuse(&args, &errors);
        }
        // A misspelt section name is only found against the components.
        let hint = if policy.components().next().is_some() {
            format!(
                "; name the components to check the sections against them: airlock check {} tools/",
                args.file.display()
            )
        } else {
            String::new()
        };
        println!("{}: ok ({sections}{hint})", args.file.display());
        print_states(&states);
        print_confinement(&args, &policy, keys);
        return Exit::Ok;
    }
    // Only the components' tools are needed: no audit log is opened.
    let runtime = match runtime(policy.clone().without_audit(), args.no_cache) {
        Ok(runtime) => runtime.with_resolver(resolver),
        Err(exit) => return exit,
    };
    let report = runtime.load(&args.paths);
    errors.extend(report.refused.iter().map(ToString::to_string));
    let stems = runtime.component_names(&args.paths);
    let names: Vec<&str> = stems.iter().map(String::as_str).collect();
    errors.extend(
        policy
            .unmatched_components(&names)
            .iter()
            .map(ToString::to_string),
    );
    errors.extend(
        unused_credentials(&runtime)
            .into_iter()
            .map(|line| format!("{}: {line}", args.file.display())),
    );
    errors.extend(unknown_granted_tools(&runtime, &args.file));
    if !errors.is_empty() {
        return refuse(&args, &errors);
    }
    let tools = runtime.catalog().tools().count();
    println!(
        "{}: ok ({sections}; {} component{} with {tools} tool{} checked against it)",
        args.file.display(),
        names.len(),
        if names.len() == 1 { "" } else { "s" },
        if tools == 1 { "" } else { "s" },
    );
    print_states(&states);
    print_declared_hints(&runtime);
    print_asks(&runtime);
    print_confinement(&args, &policy, keys);
    Exit::Ok
}

/// What a server of these components under this policy would be confined
/// to (`airlock serve` shows the same at its start).
fn print_confinement(
    args: &Args,
    policy: &Policy,
    keys: (Option<std::net::SocketAddr>, Option<String>, bool),
) {
    let serving = super::confinement::serving_of(
        &args.paths,
        Some(&args.file),
        &args.fetch,
        args.no_cache,
        keys,
    );
    for line in super::confinement::lines(policy, &serving) {
        println!("  {line}");
    }
}

/// A `[[tokens]]`, `[[oauth.scopes]]` or `[[oauth.claims]]` entry: named
/// as a message names it, where it is written (line, column), and what it
/// lists.
type Entry = (String, Option<(usize, usize)>, Gives);

/// Every entry that gives something.
fn granting_entries(policy: &Policy) -> Vec<Entry> {
    let tokens = policy.tokens().iter().map(|t| {
        let gives = Gives {
            tools: t.tools.clone(),
            resources: t.resources.clone(),
            prompts: t.prompts.clone(),
        };
        (format!("[[tokens]] {:?}", t.name), t.position, gives)
    });
    let scopes = policy.oauth().into_iter().flat_map(|o| &o.scopes).map(|g| {
        let name = format!("[[oauth.scopes]] {:?}", g.scope);
        (name, Some(g.position), g.gives.clone())
    });
    let claims = policy.oauth().into_iter().flat_map(|o| &o.claims).map(|g| {
        let name = format!("[[oauth.claims]] {} = {:?}", g.claim, g.value);
        (name, Some(g.position), g.gives.clone())
    });
    tokens.chain(scopes).chain(claims).collect()
}

/// Tools, resources and prompts a `[[tokens]]`, `[[oauth.scopes]]` or
/// `[[oauth.claims]]` entry gives that no component at hand declares: a
/// misspelt name gives nothing, silently. Each message names the policy
/// `file` and the entry's line and column, as every policy error does, in
/// file order.
fn unknown_granted_tools(runtime: &Runtime, file: &std::path::Path) -> Vec<String> {
    let catalog = runtime.catalog();
    let known: Vec<&str> = catalog.tools().map(|t| t.info.name.as_str()).collect();
    let entries = granting_entries(runtime.policy());
    let mut unknown = unknown_granted_offers(&catalog, &entries);
    for (entry, at, gives) in &entries {
        for tool in gives.tools.iter().flatten() {
            if !known.contains(&tool.as_str()) {
                let message = format!(
                    "{entry} gives the tool {tool:?}, which no component at hand declares \
                     (they declare {}); correct the name",
                    known.join(", ")
                );
                unknown.push((*at, message));
            }
        }
    }
    unknown.sort_by_key(|(at, _)| *at);
    let policy = runtime.policy();
    unknown
        .into_iter()
        .map(|(at, message)| match at {
            Some(at) => policy.error_at(at, message).to_string(),
            None => format!("{}: {message}", file.display()),
        })
        .collect()
}

/// Resources and prompts an entry lists that no component at hand serves
/// (a resource by URI or by its template's text), each with where its
/// entry is.
fn unknown_granted_offers(
    catalog: &crate::catalog::Catalog,
    entries: &[Entry],
) -> Vec<(Option<(usize, usize)>, String)> {
    let uris: Vec<&str> = catalog
        .resources()
        .map(|(r, _)| r.uri.as_str())
        .chain(
            catalog
                .templates()
                .map(|(t, _)| t.info.uri_template.as_str()),
        )
        .collect();
    let prompts: Vec<&str> = catalog.prompts().map(|(p, _)| p.name.as_str()).collect();
    let listed = |names: &[&str]| match names.is_empty() {
        true => "none".to_string(),
        false => names.join(", "),
    };
    let mut unknown = Vec::new();
    for (entry, at, gives) in entries {
        for uri in gives.resources.iter().flatten() {
            if !uris.contains(&uri.as_str()) {
                let message = format!(
                    "{entry} gives the resource {uri:?}, which no component at hand \
                     serves (resources and templates: {}); correct the URI",
                    listed(&uris)
                );
                unknown.push((*at, message));
            }
        }
        for prompt in gives.prompts.iter().flatten() {
            if !prompts.contains(&prompt.as_str()) {
                let message = format!(
                    "{entry} gives the prompt {prompt:?}, which no component at hand \
                     declares (prompts: {}); correct the name",
                    listed(&prompts)
                );
                unknown.push((*at, message));
            }
        }
    }
    unknown
}

/// The hints the policy gives tools that declare none, and where.
fn print_declared_hints(runtime: &Runtime) {
    let catalog = runtime.catalog();
    for tool in catalog.tools().filter(|t| !t.own_hints) {
        let declared = runtime
            .policy()
            .hints_declared(&tool.component.name, &tool.info.name);
        if let Some((hints, section)) = declared {
            println!(
                "  {}: hints {} (from {section})",
                tool.info.name,
                super::inspect::hints_list(hints)
            );
        }
    }
}

/// The tools (and components' reads, prompts and completions) the policy
/// lets ask the client: prompting the user or spending the user's model
/// tokens is worth seeing at a glance, like the hints the policy declares.
fn print_asks(runtime: &Runtime) {
    let catalog = runtime.catalog();
    for tool in catalog.tools() {
        let grant = runtime.grant_for(tool);
        if grant.asks.any() {
            println!(
                "  {}: {}",
                tool.info.name,
                super::inspect::asks_line(&grant)
            );
        }
    }
    for component in catalog.components() {
        if component.offers().is_empty() {
            continue;
        }
        let grant = runtime.grant_for_offers(component);
        if grant.asks.any() {
            println!(
                "  {}'s resources, prompts and completions: {}",
                component.name,
                super::inspect::asks_line(&grant)
            );
        }
    }
}

/// Prints each error and how many there were.
fn refuse(args: &Args, errors: &[impl ToString]) -> Exit {
    for err in errors {
        eprintln!("error: {}", err.to_string());
    }
    if errors.len() > 1 {
        eprintln!("{}: {} errors", args.file.display(), errors.len());
    }
    Exit::LoadFailed
}

fn runtime(policy: Policy, no_cache: bool) -> Result<Runtime, Exit> {
    let sandbox = super::sandbox_for(&policy, no_cache, 64, true)?;
    Ok(Runtime::new(sandbox, policy))
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

/// Prints where each referenced source stands (lock, store).
fn print_states(states: &[String]) {
    for state in states {
        println!("{state}");
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
