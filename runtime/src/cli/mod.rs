//! The `airlock` command line: parses arguments and hands each subcommand
//! to its module. Exit codes are part of the interface (see [`Exit`]).

mod call;
mod check;
mod confinement;
mod inspect;
mod inspect_offers;
mod new;
mod policy;
mod publish;
mod published;
mod pull;
mod serve;
mod serve_args;
mod serve_config;
mod serve_cordons;
mod serve_load;
mod serve_signals;
mod serve_telemetry;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::Runtime;
use crate::policy::Policy;
use crate::sandbox::{CompileCache, Sandbox, SandboxConfig};
use crate::source::{FetchLimits, Resolver};

/// Exit codes of `airlock`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Exit {
    Ok = 0,
    /// The tool ran and failed, or was stopped by a limit.
    ToolFailed = 1,
    /// The command line itself is wrong (clap's code).
    Usage = 2,
    /// The arguments for the tool were refused.
    BadArguments = 3,
    /// The policy does not permit the call.
    NotPermitted = 4,
    /// A component or the policy could not be loaded, or the tool is unknown.
    LoadFailed = 5,
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> Self {
        ExitCode::from(exit as u8)
    }
}

#[derive(Parser)]
#[command(
    name = "airlock",
    version,
    about = "Runs third-party WebAssembly tools safely and serves them over MCP and JSON-RPC",
    after_help = "Exit codes: 0 ok · 1 the tool failed · 2 usage · 3 arguments refused · \
                  4 not permitted by the policy · 5 a component or the policy could not be loaded\n\
                  Logs go to stderr; set AIRLOCK_LOG (or RUST_LOG; e.g. AIRLOCK_LOG=debug) to see more."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// How log lines on stderr are written: `text` for people, `json` (one
    /// object a line, with the fields of each event) for log collectors.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

/// Options every command that loads components shares.
#[derive(clap::Args, Clone)]
pub struct LoadOptions {
    /// Policy file with the grants for each tool [default: ./airlock.toml
    /// when there is one, as for `airlock check`].
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// Load no policy, not even ./airlock.toml: nothing is granted.
    #[arg(long, conflicts_with = "policy")]
    no_policy: bool,
    /// Serving over stdio: a desktop client may have started airlock.
    #[arg(skip)]
    stdio: bool,
    /// Do not use the on-disk compile cache.
    #[arg(long)]
    no_cache: bool,
    #[command(flatten)]
    fetch: FetchOptions,
}

/// How components named by reference (`oci://…`, `https://…`) are fetched.
#[derive(clap::Args, Clone)]
pub struct FetchOptions {
    /// The lock file recording what each tag resolved to [default:
    /// airlock.lock next to --policy, else in the current folder].
    #[arg(long, value_name = "FILE")]
    lock: Option<PathBuf>,
    /// A registry (HOST or HOST:PORT) spoken to over plain http:// (a local
    /// test registry); an oci+http:// reference says the same.
    #[arg(long, value_name = "HOST")]
    insecure_registry: Vec<String>,
    /// Seconds one component's fetch (every request of it) may take before
    /// it is cut off [default: 300].
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    fetch_timeout: Option<u64>,
    /// Bytes per second a registry or URL must keep up with after a fetch's
    /// first 10 s; a slower one is cut off (0: no minimum) [default: 16384].
    #[arg(long, value_name = "BYTES_PER_SEC")]
    fetch_min_rate: Option<u64>,
}

impl FetchOptions {
    /// A resolver with the default store, this lock file and these hosts.
    fn resolver(&self, policy: Option<&std::path::Path>) -> Resolver {
        let lock = self.lock.clone().unwrap_or_else(|| match policy {
            Some(policy) => policy
                .parent()
                .unwrap_or(std::path::Path::new("."))
                .join("airlock.lock"),
            None => PathBuf::from("airlock.lock"),
        });
        crate::runtime::default_resolver()
            .with_lock(Some(lock))
            .with_insecure(self.insecure_registry.clone())
            .with_fetch_limits(self.limits())
    }

    /// The fetch bounds these flags ask for, the defaults otherwise.
    fn limits(&self) -> FetchLimits {
        let defaults = FetchLimits::default();
        FetchLimits {
            timeout: self
                .fetch_timeout
                .map_or(defaults.timeout, std::time::Duration::from_secs),
            min_rate: self.fetch_min_rate.unwrap_or(defaults.min_rate),
            ..defaults
        }
    }
}

#[derive(Subcommand)]
enum Command {
    Inspect(inspect::Args),
    Call(call::Args),
    Check(check::Args),
    Serve(serve::Args),
    Pull(pull::Args),
    Publish(publish::Args),
    New(new::Args),
    Policy(policy::Args),
}

pub fn main() -> ExitCode {
    use clap::{CommandFactory as _, FromArgMatches as _};
    let parsed = Cli::command()
        .try_get_matches()
        .and_then(|matches| Ok((Cli::from_arg_matches(&matches)?, matches)));
    let (cli, matches) = match parsed {
        Ok(cli) => cli,
        Err(err) => {
            let _ = err.print();
            return if err.use_stderr() {
                Exit::Usage
            } else {
                Exit::Ok
            }
            .into();
        }
    };
    init_logging(cli.log_format);
    let exit = match cli.command {
        Command::Inspect(args) => inspect::run(args),
        Command::Call(args) => call::run(args),
        Command::Check(args) => check::run(args),
        Command::Serve(args) => serve::run(args, matches.subcommand_matches("serve")),
        Command::Pull(args) => pull::run(args),
        Command::Publish(args) => publish::run(args),
        Command::New(args) => new::run(args),
        Command::Policy(args) => policy::run(args),
    };
    exit.into()
}

/// Writes a command's result to stdout. A reader that went away (`| head`)
/// is not an error of ours, so a broken pipe is ignored rather than a panic.
fn print_result(text: &str) {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

/// Logs to stderr at `AIRLOCK_LOG` (or, when that is not set, `RUST_LOG`;
/// default `warn`), in colour only on a terminal and never with `NO_COLOR`
/// set, so a log written to a file holds no escape codes; or, with
/// `--log-format json`, as one JSON object a line.
fn init_logging(format: LogFormat) {
    use std::io::IsTerminal as _;
    let filter = tracing_subscriber::EnvFilter::try_from_env("AIRLOCK_LOG")
        .or_else(|_| tracing_subscriber::EnvFilter::try_from_env("RUST_LOG"))
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let colour = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false);
    let _ = match format {
        LogFormat::Text => builder.with_ansi(colour).try_init(),
        LogFormat::Json => builder.json().with_ansi(false).try_init(),
    };
}

/// The sandbox for `policy`, its pool sized for `instances` calls at once;
/// `tiered: false` compiles every component optimised at once (what
/// `pull` does, to have the compile cache ready for serving).
fn sandbox_for(
    policy: &Policy,
    no_cache: bool,
    instances: u32,
    tiered: bool,
) -> Result<Sandbox, Exit> {
    let mut config = SandboxConfig::default()
        .instances(instances)
        .fuel(policy.uses_fuel())
        .cache(compile_cache(no_cache));
    if !tiered {
        config = config.tier_above(None);
    }
    Sandbox::new(&config).map_err(|err| {
        eprintln!("error: cannot start the sandbox: {err:#}");
        Exit::LoadFailed
    })
}

/// The compile cache (none with `--no-cache`), and where it is said at
/// `info`: a start that compiles every time is otherwise a mystery; a
/// cache that cannot be used is said at `warn`.
fn compile_cache(no_cache: bool) -> Option<CompileCache> {
    if no_cache {
        tracing::info!("compile cache off (--no-cache): every component compiles");
        return None;
    }
    match CompileCache::default_dir() {
        Ok(found) => {
            tracing::info!("compile cache in {found}");
            Some(CompileCache::new(found.dir))
        }
        Err(err) => {
            tracing::warn!("{err}");
            None
        }
    }
}

/// The policy every subcommand reads when none is named.
const DEFAULT_POLICY: &str = "airlock.toml";

impl LoadOptions {
    /// Without `--policy` (or a serve file's `policy`) and `--no-policy`,
    /// takes ./airlock.toml when there is one, as `check` does, and says
    /// so on stderr: one rule for every subcommand, so that a call is
    /// never refused for a grant that the file beside it gives.
    fn find_policy(&mut self) {
        if self.policy.is_some() || self.no_policy {
            return;
        }
        let found = PathBuf::from(DEFAULT_POLICY);
        if found.is_file() {
            eprintln!(
                "airlock: using the policy ./{DEFAULT_POLICY} (found in the current folder; \
                 --policy FILE names another, --no-policy uses none)"
            );
            self.policy = Some(found);
        }
    }

    /// Loads the policy (or the default: nothing granted).
    fn policy(&self) -> Result<Policy, Exit> {
        match &self.policy {
            None => Ok(Policy::default()),
            Some(path) => Policy::load(path).map_err(|err| {
                for err in err.errors() {
                    eprintln!("error: {err}");
                }
                let unset = err
                    .errors()
                    .iter()
                    .any(|e| e.to_string().contains(crate::policy::UNSET));
                if unset && self.stdio {
                    eprintln!(
                        "error: if a desktop client starts airlock, set it in the client's `env` \
                         (\"env\": {{ \"NAME\": \"…\" }} beside \"command\" and \"args\" in \
                         its mcpServers entry): a client does not pass on your shell's variables"
                    );
                }
                Exit::LoadFailed
            }),
        }
    }

    /// A runtime with the policy and an empty catalog; `instances` sizes
    /// the sandbox's pool (calls that may run at once), `tiered` is as for
    /// [`sandbox_for`].
    fn empty_runtime(&self, instances: u32, tiered: bool) -> Result<Runtime, Exit> {
        self.runtime_with(self.policy()?, instances, tiered)
    }

    /// As [`LoadOptions::empty_runtime`], with the policy already read
    /// (`serve` confines itself between the two).
    fn runtime_with(&self, policy: Policy, instances: u32, tiered: bool) -> Result<Runtime, Exit> {
        let sandbox = sandbox_for(&policy, self.no_cache, instances, tiered)?;
        let resolver = self.fetch.resolver(self.policy.as_deref());
        Runtime::try_new(sandbox, policy)
            .map(|runtime| runtime.with_resolver(resolver))
            .map_err(|err| {
                eprintln!("error: {err}");
                Exit::LoadFailed
            })
    }

    /// A runtime with the policy and `paths` loaded; any refusal is printed
    /// and fails the command.
    fn runtime(&self, paths: &[PathBuf]) -> Result<Runtime, Exit> {
        let runtime = self.empty_runtime(64, true)?;
        let report = runtime.load(paths);
        if !report.refused.is_empty() {
            for err in &report.refused {
                eprintln!("error: {err}");
            }
            return Err(Exit::LoadFailed);
        }
        Ok(runtime)
    }
}
