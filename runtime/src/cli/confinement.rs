//! What `check`, `inspect --policy` and `serve` show of the confinement a
//! server would have (`crate::confine`): the settings it is worked out from
//! beside the policy, and its lines.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use super::FetchOptions;
use super::serve_args::DEFAULT_LISTEN;
use crate::confine::{self, Confinement, Scope, Serving};
use crate::policy::Policy;

/// What a serve of `paths` under the policy `file` needs, as `check` and
/// `inspect --policy` show it: the defaults of `serve`, and `keys` of a
/// serve file (listen, state, watch) when one is given.
pub(super) fn serving_of(
    paths: &[PathBuf],
    file: Option<&Path>,
    fetch: &FetchOptions,
    no_cache: bool,
    keys: (Option<SocketAddr>, Option<String>, bool),
) -> Serving {
    let resolver = fetch.resolver(file);
    let (listen, state, watch) = keys;
    Serving {
        components: paths.to_vec(),
        watch,
        cache: match no_cache {
            true => None,
            false => crate::sandbox::CompileCache::default_dir()
                .ok()
                .map(|c| c.dir),
        },
        store: resolver.store().dir().to_path_buf(),
        lock: resolver.lock_path().map(Path::to_path_buf),
        insecure_registries: fetch.insecure_registry.clone(),
        certificate_folders: Vec::new(),
        listen: listen.or_else(|| DEFAULT_LISTEN.parse().ok()),
        state,
        ca_paths: confine::environment_ca_paths(),
        telemetry: super::serve_telemetry::endpoints_of(None),
    }
}

/// What `check` and `inspect --policy` show of the confinement of a server
/// with `serving`'s settings under `policy`, indented under a heading.
pub(super) fn lines(policy: &Policy, serving: &Serving) -> Vec<String> {
    let files = crate::runtime::component::expand(&serving.components, policy);
    let cordons = crate::cordon::placement(policy, &files);
    let plan = Confinement::plan(policy, serving, &Scope::Server);
    let heading = match confine::SUPPORTED {
        true => "confined when served (Landlock and seccomp; serve --no-confine turns it off):",
        false => "not confined when served: confinement needs Linux (Landlock, seccomp)",
    };
    let mut lines = vec![heading.to_string()];
    if confine::SUPPORTED {
        lines.extend(plan.lines().into_iter().map(|line| format!("  {line}")));
        for (cordon, members) in &cordons {
            let names: Vec<&str> = members.iter().map(|(_, c)| c.as_str()).collect();
            lines.push(format!(
                "  {:<10} {cordon} ({}): a worker process of its own, confined to their grants alone",
                "cordon",
                names.join(", ")
            ));
        }
        lines.push(format!("  {:<10} {REFUSED}", "refused"));
    }
    lines
}

/// The system calls seccomp refuses whatever the plan, in words.
const REFUSED: &str = "running programs, reaching into other processes, mounts, namespaces, \
                       kernel modules, keyrings, BPF (seccomp)";
