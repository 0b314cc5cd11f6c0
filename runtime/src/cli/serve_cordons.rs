//! Cordons at `serve`: the serving process works out which components run
//! in which cordon's worker and how each worker is started (the airlock
//! binary, `serve --cordon-worker NAME` with the same arguments, and only
//! the environment its cordon's sections read); and a worker's own start —
//! read the policy, keep only its cordon's components, confine itself to
//! their grants alone, load them, and serve calls on its stdin and stdout
//! (`crate::cordon::worker`).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::fd::AsFd;
use std::path::Path;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

use super::Exit;
use super::serve_args::Args;
use crate::call;
use crate::catalog::{self, Listing, Loaded};
use crate::confine::{self, Confinement, Scope, Serving};
use crate::cordon::wire::{Done, Work};
use crate::cordon::worker::{self, Runner};
use crate::cordon::{self, Cordons, Launch, Launcher, Link, Start};
use crate::observe::CallObserver;
use crate::policy::Policy;
use crate::runtime::pending::PendingList;
use crate::runtime::{Loader, component};
use crate::sandbox::{CancelToken, Ran, RunError, Sandbox, Teardown};

/// What a worker sees for a variable its cordon's sections do not read:
/// the file parses, and no other cordon's secret is there.
const WITHHELD: &str = "withheld-from-this-cordon";

/// Variables every worker gets (where they are set): where it finds
/// things (its compile cache, CA files), how it logs; and the runtime's own
/// `AIRLOCK_*` and `OTEL_*` settings. A variable the policy reads is never
/// passed for that: only to the cordons whose grants hold its value.
const PASSED: [&str; 7] = [
    "PATH",
    "HOME",
    "LANG",
    "RUST_LOG",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "XDG_CACHE_HOME",
];
const PASSED_PREFIXES: [&str; 2] = ["AIRLOCK_", "OTEL_"];

/// Runtime settings no worker gets: registry logins (the server fetches
/// every component; a worker is sent the bytes).
const NEVER_PASSED: [&str; 1] = ["AIRLOCK_REGISTRY_AUTH"];

/// The cordons of this server, with how each worker starts; empty when
/// every component runs here.
pub(super) fn plan(args: &Args, policy: &Policy) -> BTreeMap<String, (Vec<String>, Launch)> {
    let files = component::expand(&args.paths, policy);
    let placed = cordon::placement(policy, &files);
    if placed.is_empty() {
        return BTreeMap::new();
    }
    let Ok(program) = std::env::current_exe() else {
        return BTreeMap::new();
    };
    let read = variables_read(args);
    let server_env: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    placed
        .into_iter()
        .map(|(name, members)| {
            let components: Vec<String> = members.into_iter().map(|(_, c)| c).collect();
            let mut worker_args: Vec<OsString> = vec![
                "serve".into(),
                "--cordon-worker".into(),
                name.clone().into(),
            ];
            worker_args.extend(serve_arguments());
            let launch = Launch {
                program: program.clone(),
                args: worker_args,
                env: environment(policy, &components, &read, &server_env),
            };
            (name, (components, launch))
        })
        .collect()
}

/// The arguments `serve` was started with (after `serve`).
fn serve_arguments() -> Vec<OsString> {
    let all: Vec<OsString> = std::env::args_os().collect();
    let at = all.iter().position(|a| a == "serve");
    match at {
        Some(at) => all[at + 1..].to_vec(),
        None => all.into_iter().skip(1).collect(),
    }
}

/// The variables the policy file reads (`{ from = "VAR" }`), in order.
fn variables_read(args: &Args) -> Vec<String> {
    let Some(path) = &args.load.policy else {
        return Vec::new();
    };
    let read = RefCell::new(Vec::new());
    let _ = Policy::load_with_env(path, |name| {
        read.borrow_mut().push(name.to_string());
        std::env::var(name)
    });
    let mut read = read.into_inner();
    read.dedup();
    read
}

/// A worker's environment, of the server's `server_env`: [`PASSED`], and
/// each variable the policy reads whose value some grant of the cordon's
/// components holds (a credential, an `env` or `config` value) — no other
/// cordon's.
fn environment(
    policy: &Policy,
    components: &[String],
    read: &[String],
    server_env: &[(OsString, OsString)],
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = server_env
        .iter()
        .filter(|(name, _)| {
            let name = name.to_string_lossy();
            let runtime = PASSED.contains(&name.as_ref())
                || PASSED_PREFIXES.iter().any(|p| name.starts_with(p));
            runtime && !NEVER_PASSED.contains(&name.as_ref()) && !read.iter().any(|r| *r == name)
        })
        .cloned()
        .collect();
    let held = |value: &str| {
        components.iter().any(|component| {
            let tools = policy
                .component(component)
                .map(|c| c.tool_sections().map(str::to_string).collect::<Vec<_>>())
                .unwrap_or_default();
            std::iter::once(String::new()).chain(tools).any(|tool| {
                let settings = policy.settings_for(component, &tool);
                settings
                    .credentials
                    .iter()
                    .any(|c| c.secret.expose() == value)
                    || settings.env.iter().any(|(_, v)| v == value)
                    || settings.config.iter().any(|(_, v)| v == value)
            })
        })
    };
    for name in read {
        let value = server_env
            .iter()
            .find(|(n, _)| n.to_str() == Some(name.as_str()));
        if let Some((_, value)) = value
            && value.to_str().is_some_and(held)
        {
            env.push((name.into(), value.clone()));
        }
    }
    env
}

/// What starts the cordons' workers: on Linux the launcher, forked now —
/// while this process is one thread and unconfined (see
/// `crate::cordon::launcher`); elsewhere, where nothing confines the
/// server, the server itself. None without cordons.
pub(super) fn launcher(
    plan: &BTreeMap<String, (Vec<String>, Launch)>,
) -> Result<Option<Arc<dyn Start>>, Exit> {
    if plan.is_empty() {
        return Ok(None);
    }
    let launches: BTreeMap<String, Launch> = plan
        .iter()
        .map(|(name, (_, launch))| (name.clone(), launch.clone()))
        .collect();
    if !confine::SUPPORTED {
        return Ok(Some(Arc::new(Planned(launches))));
    }
    match Launcher::fork(launches) {
        Ok(launcher) => Ok(Some(Arc::new(launcher))),
        Err(err) => {
            eprintln!("error: cannot start the launcher of the cordons' workers: {err}");
            Err(Exit::LoadFailed)
        }
    }
}

/// The cordons' workers started by the server itself, as planned.
struct Planned(BTreeMap<String, Launch>);

impl Start for Planned {
    fn start(&self, cordon: &str) -> std::io::Result<cordon::Started> {
        match self.0.get(cordon) {
            Some(launch) => launch.start(cordon),
            None => Err(std::io::Error::other(format!("no cordon named {cordon:?}"))),
        }
    }
}

/// The serving process's links to its cordons, each worker started (by
/// `launcher`) and ready (confined) before this returns; `members` says
/// which component is where.
pub(super) fn start(
    plan: BTreeMap<String, (Vec<String>, Launch)>,
    launcher: Option<Arc<dyn Start>>,
    tokio: &tokio::runtime::Handle,
) -> Result<Cordons, Exit> {
    let Some(launcher) = launcher else {
        return Ok(Cordons::new(Vec::new(), BTreeMap::new()));
    };
    let mut links = Vec::new();
    let mut members = BTreeMap::new();
    for (name, (components, _)) in plan {
        let link = Link::new(&name, launcher.clone(), tokio.clone());
        if let Err(err) = link.start() {
            eprintln!("error: cordon {name}: its worker did not start: {err}");
            return Err(Exit::LoadFailed);
        }
        eprintln!(
            "airlock: cordon {name}: worker {} runs {}",
            link.pid().unwrap_or_default(),
            components.join(", ")
        );
        for component in components {
            members.insert(component, name.clone());
        }
        links.push(link);
    }
    Ok(Cordons::new(links, members))
}

/// `serve --cordon-worker NAME`: one cordon's worker, until its stdin ends.
pub(super) fn run_worker(args: &Args, name: &str, serving: Serving) -> Result<(), Exit> {
    let policy = match &args.load.policy {
        None => Policy::default(),
        Some(path) => {
            let withheld = |var: &str| std::env::var(var).or_else(|_| Ok(WITHHELD.to_string()));
            match Policy::load_with_env(path, withheld) {
                Ok((policy, errors)) if errors.is_empty() => policy,
                Ok((_, errors)) => {
                    for err in errors {
                        eprintln!("error: cordon {name}: {err}");
                    }
                    return Err(Exit::LoadFailed);
                }
                Err(err) => {
                    eprintln!("error: cordon {name}: {err}");
                    return Err(Exit::LoadFailed);
                }
            }
        }
    };
    let files = component::expand(&args.paths, &policy);
    // What it serves, the server sends; its confinement is worked out from
    // the components its cordon holds now.
    let Some(mine) = cordon::placement(&policy, &files).remove(name) else {
        eprintln!("error: cordon {name}: no component served is in it");
        return Err(Exit::Usage);
    };
    let names: Vec<String> = mine.iter().map(|(_, c)| c.clone()).collect();
    confine_worker(args, name, &policy, names, serving)?;
    // What an escaped guest of this cordon would try, tried by the worker
    // confined as it serves (the tests' proof; see `confine::probe`).
    if !args.confine_probe.is_empty() {
        for probe in &args.confine_probe {
            println!("{}", crate::confine::probe::attempt(probe));
        }
        return Ok(());
    }
    let sandbox = super::sandbox_for(&policy, args.load.no_cache, 1024, false)?;
    let resolver = args.load.fetch.resolver(args.load.policy.as_deref());
    let runner = Arc::new(InWorker {
        sandbox,
        policy,
        resolver,
        loaded: RwLock::new(BTreeMap::new()),
    });
    // Its guests' runs and their requests are traced under each call's
    // trace, exported as the server exports.
    let exporting = super::serve_telemetry::start_in_worker(args)?;
    // Unbuffered (the worker's frames are its buffer): each message is one
    // write (the standard stdout would cut a frame at each byte 10 in it).
    let unbuffered = |fd: std::os::fd::BorrowedFd<'_>| {
        fd.try_clone_to_owned()
            .map(std::fs::File::from)
            .map_err(|err| {
                eprintln!("error: cordon {name}: {err}");
                Exit::LoadFailed
            })
    };
    let stdin = unbuffered(std::io::stdin().as_fd())?;
    let stdout = unbuffered(std::io::stdout().as_fd())?;
    let served = worker::serve(runner, stdin, stdout);
    if let Some((exporting, _runtime)) = exporting {
        exporting.stop();
    }
    served.map_err(|err| {
        eprintln!("error: cordon {name}: {err}");
        Exit::LoadFailed
    })
}

/// The worker confines itself to its components' grants alone, before it
/// starts a thread.
fn confine_worker(
    args: &Args,
    name: &str,
    policy: &Policy,
    components: Vec<String>,
    mut serving: Serving,
) -> Result<(), Exit> {
    if args.no_confine || !confine::SUPPORTED {
        return Ok(());
    }
    serving.listen = None;
    serving.state = None;
    let plan = Confinement::plan(policy, &serving, &Scope::Components(components));
    let applied = confine::apply(&plan).map_err(|err| {
        eprintln!("error: cordon {name}: cannot confine its worker: {err}");
        Exit::LoadFailed
    })?;
    // Said at every start: the proof on a running server that a worker
    // holds its own confinement, not only the server's.
    eprintln!(
        "airlock: cordon {name}: worker {} confined ({}) to its components' grants",
        std::process::id(),
        applied.summary()
    );
    if applied.landlock == confine::Landlock::Unsupported {
        eprintln!(
            "warning: cordon {name}: this kernel has no Landlock: the worker's files and ports \
             are not confined; seccomp still holds"
        );
    }
    Ok(())
}

/// The worker's side: its sandbox and policy, and the components the
/// server sent it, by name.
struct InWorker {
    sandbox: Sandbox,
    policy: Policy,
    /// Unused (the server fetches), but a loader has one.
    resolver: crate::source::Resolver,
    /// By name, its versions: the newest last, and the one before (the
    /// server serves it until its new catalog is in place).
    loaded: RwLock<BTreeMap<String, Vec<Loaded>>>,
}

impl InWorker {
    /// `with` the loaded `component` (the version whose code has `digest`),
    /// under the lock, if it is loaded.
    fn with_loaded<R>(
        &self,
        component: &str,
        digest: &str,
        with: impl FnOnce(&Loaded) -> R,
    ) -> Option<R> {
        let all = self.loaded.read().ok()?;
        let loaded = all
            .get(component)?
            .iter()
            .find(|l| l.component.digest == digest)?;
        Some(with(loaded))
    }

    /// `with` its tool `name`, if it is loaded.
    fn with_tool<R>(
        &self,
        component: &str,
        digest: &str,
        name: &str,
        with: impl FnOnce(&catalog::Tool) -> R,
    ) -> Option<R> {
        self.with_loaded(component, digest, |loaded| {
            loaded.tools.iter().find(|t| t.info.name == name).map(with)
        })
        .flatten()
    }
}

impl Runner for InWorker {
    fn load(&self, name: &str, path: &Path, bytes: &[u8]) -> Result<Listing, String> {
        let pending = PendingList::default();
        let loader = Loader {
            policy: &self.policy,
            sandbox: &self.sandbox,
            resolver: &self.resolver,
            pending: &pending,
            cordons: None,
        };
        let listed = Mutex::new(None);
        let loaded = loader.compile_listed(path, name.to_string(), bytes, &|code| {
            let listing = catalog::list(&self.sandbox, code);
            if let Ok(mut listed) = listed.lock() {
                *listed = Some(listing.clone());
            }
            listing
        });
        let listing = listed.into_inner().ok().flatten();
        match (loaded, listing) {
            (Ok(loaded), listing) => {
                if let Ok(mut all) = self.loaded.write() {
                    let versions = all.entry(name.to_string()).or_default();
                    versions.retain(|v| v.component.digest != loaded.component.digest);
                    versions.push(loaded);
                    if versions.len() > 2 {
                        versions.remove(0);
                    }
                }
                // Plain functions list nothing: their types are their tools.
                Ok(listing.unwrap_or(Listing {
                    tools: Ok(Vec::new()),
                    offers: None,
                }))
            }
            // Refused after listing (its tools do not check): the server,
            // checking the same listing, refuses it with the same words.
            (Err(_), Some(listing)) => Ok(listing),
            (Err(err), None) => Err(err.to_string()),
        }
    }

    fn is_short(&self, component: &str, digest: &str, work: &Work) -> bool {
        let Work::Tool { name, .. } = work else {
            return false;
        };
        self.with_tool(component, digest, name, |tool| tool.pace.is_short())
            .unwrap_or(false)
    }

    fn run(
        &self,
        component: &str,
        digest: &str,
        work: &Work,
        observer: Arc<dyn CallObserver>,
        cancel: CancelToken,
    ) -> (Result<Ran<Done>, RunError>, Teardown) {
        // The code and grant, found under the lock; the guest runs after.
        let found = self.with_loaded(component, digest, |loaded| {
            let grant = match work {
                Work::Tool { name, .. } => loaded
                    .tools
                    .iter()
                    .find(|tool| tool.info.name == *name)
                    .map(|tool| call::grant_for(&self.policy, tool)),
                Work::Offer(_) => Some(call::grant_for_offers(&self.policy, &loaded.component)),
            };
            (loaded.component.code(), grant)
        });
        let (code, grant) = match found {
            Some((code, Some(grant))) => (code, grant),
            Some((_, None)) => {
                let unknown = RunError::Setup(format!("{component} has no such tool"));
                return (Err(unknown), Teardown::none());
            }
            None => {
                let stale = RunError::Setup(format!(
                    "this cordon's worker does not hold {component} as the server loaded it; \
                     retry the call"
                ));
                return (Err(stale), Teardown::none());
            }
        };
        match work {
            Work::Tool { name, arguments } => {
                let started = Instant::now();
                let (ran, teardown) = self
                    .sandbox
                    .call(&code, name, arguments, &grant, observer, cancel);
                // Measured as the server measures a call it runs itself.
                let took = started.elapsed();
                self.with_tool(component, digest, name, |tool| tool.pace.record(took));
                (ran.map(|ran| ran.map(Done::Output)), teardown)
            }
            Work::Offer(request) => {
                let (ran, teardown) = self
                    .sandbox
                    .run_offer(&code, request, &grant, observer, cancel);
                (ran.map(|ran| ran.map(Done::Offer)), teardown)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect()
    }

    fn names(env: &[(OsString, OsString)]) -> Vec<String> {
        env.iter()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn a_worker_gets_its_own_cordon_s_secrets_and_the_runtime_s_settings_only() {
        let text = "[components.a.network.\"https://a.example\"]\n\
                    headers = { Authorization = { from = \"A_TOKEN\" } }\n\
                    [components.b]\n\
                    env = { KEY = { from = \"B_KEY\" } }\n";
        let server_env = vars(&[
            ("A_TOKEN", "secret-of-a"),
            ("B_KEY", "secret-of-b"),
            ("PATH", "/usr/bin"),
            ("AIRLOCK_LANES", "2"),
            ("OTEL_SERVICE_NAME", "x"),
            ("AIRLOCK_REGISTRY_AUTH", "ghcr.io=u:p"),
            ("DOCKER_CONFIG", "/home/u/.docker"),
            ("UNRELATED", "1"),
        ]);
        let lookup = |name: &str| {
            let found = server_env.iter().find(|(k, _)| k == name);
            found
                .and_then(|(_, v)| v.to_str().map(str::to_string))
                .ok_or(std::env::VarError::NotPresent)
        };
        let policy = Policy::parse_with_env(text, Path::new("."), lookup).expect("policy");
        let read = vec!["A_TOKEN".to_string(), "B_KEY".to_string()];
        let of_a = names(&environment(&policy, &["a".into()], &read, &server_env));
        assert_eq!(
            of_a,
            ["PATH", "AIRLOCK_LANES", "OTEL_SERVICE_NAME", "A_TOKEN"]
        );
        let of_b = names(&environment(&policy, &["b".into()], &read, &server_env));
        assert_eq!(
            of_b,
            ["PATH", "AIRLOCK_LANES", "OTEL_SERVICE_NAME", "B_KEY"]
        );
    }
}
