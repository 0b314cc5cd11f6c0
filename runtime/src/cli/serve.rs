//! `airlock serve`: serves the loaded tools over MCP (stdio or HTTP) and
//! plain JSON-RPC (HTTP), until stdin ends or SIGINT/SIGTERM.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::Exit;
pub use super::serve_args::Args;
use super::serve_args::DEFAULT_LISTEN;
use super::serve_config::ServeConfig;
use super::serve_load::{load, print_report, warn_unused_credentials};
use super::serve_signals::shutdown_signal;
use crate::Runtime;
use crate::confine::{self, Confinement, Scope, Serving};
use crate::policy::Policy;
use crate::protocol::mcp::Server;
use crate::runtime::loading::Loading;
use crate::runtime::reload::Watcher;
use crate::transport;
use crate::transport::http::{HttpConfig, ServerTls, TlsFiles};

/// `airlock serve`, phase by phase: settings, the runtime and its policy,
/// loading, the MCP server, the transport, shutdown.
pub fn run(args: Args, matches: Option<&clap::ArgMatches>) -> Exit {
    match serve_until_stopped(args, matches) {
        Ok(()) => {
            eprintln!("airlock: stopped");
            Exit::Ok
        }
        Err(exit) => exit,
    }
}

/// The phases in order; each one that fails has said why and gives the
/// exit status.
fn serve_until_stopped(args: Args, matches: Option<&clap::ArgMatches>) -> Result<(), Exit> {
    // Everything the flags and the policy decide is checked, and the
    // address bound, before anything loads: a mistake there is said at
    // once, not after the components compiled.
    let (args, listen, wait) = settings(args, matches)?;
    if let Some(cordon) = &args.cordon_worker {
        return super::serve_cordons::run_worker(&args, cordon, serving(&args, listen));
    }
    let tls = tls(&args)?;
    let policy = args.load.policy()?;
    check_exposure(&args, listen, &policy)?;
    let socket = bind(&args, listen)?;
    let cordons = super::serve_cordons::plan(&args, &policy);
    // Before confinement: the workers it starts are not in it.
    let launcher = super::serve_cordons::launcher(&cordons)?;
    // Before the first thread starts: every thread after inherits it.
    confine(&args, listen, &policy)?;
    if !args.confine_probe.is_empty() {
        for probe in &args.confine_probe {
            println!("{}", crate::confine::probe::attempt(probe));
        }
        return Ok(());
    }
    let runtime = build_runtime(&args, policy)?;
    let tokio = async_runtime()?;
    let telemetry = super::serve_telemetry::start(&args, &tokio)?;
    let transport = tokio.block_on(open_transport(socket, listen))?;
    // Before loading: a cordoned component is listed by its worker, which
    // the server sends what it fetched and checked.
    // Set even without one: a component that arrives later in a cordon
    // the server did not start is then refused rather than run here.
    runtime.set_cordons(Arc::new(super::serve_cordons::start(
        cordons,
        launcher,
        tokio.handle(),
    )?));
    let loading = load(&args, &runtime, wait)?;
    let server = mcp_server(&args, &runtime, &tokio)?;
    let grace = Duration::from_secs(args.grace);
    keep_loading(&tokio, loading, &runtime, &server, &args);
    let served = tokio.block_on(async {
        // Watched from here on, before "listening" is printed.
        let shutdown = shutdown_signal(runtime.clone(), grace);
        let served = serve_on(
            transport,
            &args,
            tls,
            server.clone(),
            &runtime,
            shutdown,
            grace,
        )
        .await;
        settle(&runtime, &server, grace).await;
        served
    });
    // Blocking threads of cancelled calls end within a few ticks; do not
    // wait on any that are stuck past that.
    if let Some(exporting) = telemetry {
        exporting.stop();
    }
    tokio.shutdown_timeout(Duration::from_secs(1));
    served.map_err(|err| {
        tracing::debug!("serve: {err}");
        Exit::LoadFailed
    })
}

/// Settings: the `--config` file's keys under the flags given, the policy
/// found, the address to listen on and the time loading is waited for.
fn settings(
    mut args: Args,
    matches: Option<&clap::ArgMatches>,
) -> Result<(Args, SocketAddr, Duration), Exit> {
    if let Some(file) = args.config.clone() {
        let config = ServeConfig::load(&file).map_err(|errors| {
            for err in errors {
                eprintln!("error: {err}");
            }
            Exit::Usage
        })?;
        let given = |id: &str| {
            matches
                .is_some_and(|m| m.value_source(id) == Some(clap::parser::ValueSource::CommandLine))
        };
        args.apply(config, given);
    }
    args.load.find_policy();
    args.load.stdio = args.stdio;
    let listen = match args.listen {
        Some(addr) => addr,
        None => DEFAULT_LISTEN.parse().map_err(|_| Exit::Usage)?,
    };
    let Ok(wait) = Duration::try_from_secs_f64(args.load_wait) else {
        eprintln!(
            "error: --load-wait takes a number of seconds (0 or more), not {}",
            args.load_wait
        );
        return Err(Exit::Usage);
    };
    if let Some(url) = args.state.as_ref().filter(|_| args.stdio) {
        eprintln!(
            "error: --state {url} shares state between HTTP replicas; it has no use with --stdio"
        );
        return Err(Exit::Usage);
    }
    Ok((args, listen, wait))
}

/// The listener's certificate and key, read and checked before anything
/// else starts; `None` for plain HTTP.
fn tls(args: &Args) -> Result<Option<ServerTls>, Exit> {
    let (cert, key) = match (&args.tls_cert, &args.tls_key) {
        (None, None) => return Ok(None),
        (Some(cert), Some(key)) => (cert.clone(), key.clone()),
        // Checked here, after a --config file's keys filled in the flags
        // not given (clap's `requires` would refuse a key from the file
        // with the certificate on the command line).
        _ => {
            eprintln!("error: --tls-cert and --tls-key go together");
            return Err(Exit::Usage);
        }
    };
    if args.stdio {
        eprintln!("error: --tls-cert and --tls-key serve HTTPS; they have no use with --stdio");
        return Err(Exit::Usage);
    }
    ServerTls::load(TlsFiles { cert, key })
        .map(Some)
        .map_err(|err| {
            eprintln!("airlock: --tls-cert/--tls-key: {err}");
            Exit::Usage
        })
}

/// Refuses to serve HTTP beyond this machine without bearer tokens, unless
/// `--allow-unauthenticated` says so.
fn check_exposure(args: &Args, listen: SocketAddr, policy: &Policy) -> Result<(), Exit> {
    if !args.stdio
        && !listen.ip().is_loopback()
        && policy.tokens().is_empty()
        && policy.oauth().is_none()
        && !args.allow_unauthenticated
    {
        eprintln!(
            "error: refusing to listen on {listen}, which is not a loopback address, without bearer \
             tokens; add [[tokens]] or [oauth] to the policy, or pass --allow-unauthenticated"
        );
        return Err(Exit::Usage);
    }
    Ok(())
}

/// What serving with `args` needs besides the grants: the paths it
/// serves, its cache, store and lock, certificates, listener and Redis.
pub(super) fn serving(args: &Args, listen: SocketAddr) -> Serving {
    let resolver = args.load.fetch.resolver(args.load.policy.as_deref());
    let cache = match args.load.no_cache {
        true => None,
        false => crate::sandbox::CompileCache::default_dir()
            .ok()
            .map(|c| c.dir),
    };
    let certificates: Vec<PathBuf> = args.tls_cert.iter().chain(&args.tls_key).cloned().collect();
    Serving {
        components: args.paths.clone(),
        watch: args.watch,
        cache,
        store: resolver.store().dir().to_path_buf(),
        lock: resolver.lock_path().map(Path::to_path_buf),
        insecure_registries: args.load.fetch.insecure_registry.clone(),
        certificate_folders: confine::certificate_folders(&certificates),
        listen: (!args.stdio).then_some(listen),
        state: args.state.clone(),
        ca_paths: confine::environment_ca_paths(),
        telemetry: super::serve_telemetry::endpoints(args),
    }
}

/// Confines this process to what serving needs (Linux: Landlock and
/// seccomp), saying to what; `--no-confine` skips it with a warning, a
/// kernel without Landlock gets a warning, and a failure stops the start.
fn confine(args: &Args, listen: SocketAddr, policy: &Policy) -> Result<(), Exit> {
    if args.no_confine {
        eprintln!(
            "warning: --no-confine: this server runs unconfined; a tool that escapes the \
             WebAssembly sandbox reaches everything this user can"
        );
        return Ok(());
    }
    if !confine::SUPPORTED {
        eprintln!(
            "warning: not confined: confinement needs Linux (Landlock, seccomp); a tool that \
             escapes the WebAssembly sandbox reaches everything this user can"
        );
        return Ok(());
    }
    let serving = serving(args, listen);
    let plan = Confinement::plan(policy, &serving, &Scope::Server);
    let applied = confine::apply(&plan).map_err(|err| {
        eprintln!(
            "error: cannot confine the server: {err}; this kernel supports it, so serving \
             stops here (--no-confine serves without, not advised)"
        );
        Exit::LoadFailed
    })?;
    if applied.landlock == confine::Landlock::Unsupported {
        eprintln!(
            "warning: this kernel has no Landlock (Linux 5.13 or later, with landlock in its \
             lsm= list): files and ports are not confined; seccomp still holds"
        );
    }
    let lines = super::confinement::lines(policy, &serving);
    eprintln!("airlock: confined ({}); it may:", applied.summary());
    for line in lines.iter().skip(1) {
        eprintln!("{line}");
    }
    if !applied.skipped.is_empty() {
        tracing::debug!(
            "confinement: not on this system: {}",
            applied.skipped.join(", ")
        );
    }
    Ok(())
}

fn async_runtime() -> Result<tokio::runtime::Runtime, Exit> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|err| {
            eprintln!("error: cannot start: {err}");
            Exit::LoadFailed
        })
}

/// The MCP server over `runtime`; with `--state`, sharing its tasks with
/// the other replicas (HTTP only).
fn mcp_server(
    args: &Args,
    runtime: &Arc<Runtime>,
    tokio: &tokio::runtime::Runtime,
) -> Result<Arc<Server>, Exit> {
    let Some(url) = &args.state else {
        return Ok(Server::new(runtime.clone()));
    };
    let shared = tokio.block_on(async {
        let state = crate::replicas::SharedState::connect(url).await?;
        let shown = state.shown().to_string();
        let replica = state.replica().to_string();
        let server = Server::sharing(runtime.clone(), state).await?;
        eprintln!("airlock: sharing state at {shown} as replica {replica}");
        Ok::<_, crate::replicas::StateError>(server)
    });
    shared.map_err(|err| {
        eprintln!("error: {err}");
        Exit::LoadFailed
    })
}

/// Loading goes on while the server serves: components still compiling
/// join when ready; then, with `--watch`, the paths are watched.
fn keep_loading(
    tokio: &tokio::runtime::Runtime,
    loading: Loading,
    runtime: &Arc<Runtime>,
    server: &Arc<Server>,
    args: &Args,
) {
    if args.watch {
        eprintln!("airlock: watching {} path(s) for changes", args.paths.len());
    }
    tokio.spawn(finish_loading(
        loading,
        runtime.clone(),
        server.clone(),
        args.watch.then(|| args.paths.clone()),
    ));
}

/// Where requests come from.
enum Transport {
    Stdio,
    /// A bound listener, and the address it is bound to.
    Http(tokio::net::TcpListener, SocketAddr),
}

/// Binds the HTTP address `args` ask for (`None` for stdio): before the
/// process confines itself and before loading, so a port in use is said at
/// once and nothing is compiled or made for a server that cannot start.
fn bind(args: &Args, listen: SocketAddr) -> Result<Option<tokio::net::TcpSocket>, Exit> {
    if args.stdio {
        return Ok(None);
    }
    let socket = match listen {
        SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4(),
        SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6(),
    };
    // As tokio's TcpListener::bind does on Unix.
    let bound = socket.and_then(|socket| {
        #[cfg(unix)]
        socket.set_reuseaddr(true)?;
        socket.bind(listen)?;
        Ok(socket)
    });
    bound.map(Some).map_err(|err| {
        eprintln!("error: cannot listen on {listen}: {err}");
        Exit::LoadFailed
    })
}

/// Opens the transport: listens on the bound socket (connections wait in
/// the backlog until serving begins).
async fn open_transport(
    socket: Option<tokio::net::TcpSocket>,
    listen: SocketAddr,
) -> Result<Transport, Exit> {
    let Some(socket) = socket else {
        return Ok(Transport::Stdio);
    };
    match socket.listen(1024) {
        Ok(listener) => {
            let local = listener.local_addr().unwrap_or(listen);
            Ok(Transport::Http(listener, local))
        }
        Err(err) => {
            eprintln!("error: cannot listen on {listen}: {err}");
            Err(Exit::LoadFailed)
        }
    }
}

/// Serves on `transport` until stdin ends or `shutdown`, then drains.
async fn serve_on(
    transport: Transport,
    args: &Args,
    tls: Option<ServerTls>,
    server: Arc<Server>,
    runtime: &Runtime,
    shutdown: impl std::future::Future<Output = ()>,
    grace: Duration,
) -> std::io::Result<()> {
    let (listener, local) = match transport {
        Transport::Stdio => {
            eprintln!("airlock: serving MCP on stdio");
            let (stdin, stdout) = (tokio::io::stdin(), tokio::io::stdout());
            return transport::stdio::serve(server, stdin, stdout, shutdown, grace).await;
        }
        Transport::Http(listener, local) => (listener, local),
    };
    let scheme = if tls.is_some() { "https" } else { "http" };
    let config = HttpConfig {
        tls,
        ..http_config(args, local)
    };
    let policy = runtime.policy();
    let auth = match (policy.tokens().len(), policy.oauth()) {
        (0, None) => "no authentication".to_string(),
        (n, None) => format!("{n} bearer token(s)"),
        (n, Some(oauth)) => format!(
            "{n} bearer token(s) and access tokens of {} for {}",
            oauth.issuers.join(", "),
            oauth.resource
        ),
    };
    eprintln!(
        "airlock: listening on {scheme}://{local}/mcp (MCP) and {scheme}://{local}/rpc (JSON-RPC); {auth}"
    );
    transport::http::serve(server, listener, config, shutdown, grace).await
}

/// The HTTP server's limits from the flags; the address it listens on is
/// an allowed host name when it is a specific, non-loopback one.
fn http_config(args: &Args, local: SocketAddr) -> HttpConfig {
    let mut config = HttpConfig {
        max_calls: args.max_calls.max(1),
        max_body: args.max_body,
        max_connections: args.max_connections.max(1),
        max_streams: args.max_streams.max(1),
        body_timeout: Duration::from_secs(args.body_timeout.max(1)),
        ..HttpConfig::default()
    };
    if !local.ip().is_loopback() && !local.ip().is_unspecified() {
        config.allowed_hosts.push(local.ip().to_string());
    }
    config.allowed_hosts.extend(args.allow_host.iter().cloned());
    config
}

/// After the transport stopped: cancelled calls and background tasks end
/// within a few ticks; let them finish (their answers go through the async
/// runtime), bounded by one more grace period. Then the other replicas
/// answer for this one's tasks.
async fn settle(runtime: &Runtime, server: &Server, grace: Duration) {
    let stopping = tokio::time::Instant::now();
    while runtime.running().count() > 0 && stopping.elapsed() < grace {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    server.settle_tasks(Duration::from_secs(2)).await;
}

/// The runtime and its policy, with nothing loaded yet.
fn build_runtime(args: &Args, policy: Policy) -> Result<Arc<Runtime>, Exit> {
    // The pool must hold every call the HTTP limit lets in, plus room for
    // background tasks and stdio calls, which that limit does not count.
    let instances = u32::try_from(args.max_calls)
        .unwrap_or(u32::MAX)
        .saturating_add(192)
        .max(256);
    let runtime = Arc::new(args.load.runtime_with(policy, instances, true)?);
    // Big components start on quick-tier code; their optimised code is
    // compiled behind them as they load.
    if let Err(err) = runtime.optimize_in_background() {
        tracing::warn!(
            "cannot start optimising in the background ({err}); big components stay on quick-tier code"
        );
    }
    Ok(runtime)
}

/// Admits the components still compiling at the start as each is ready,
/// telling the clients; then, with `--watch`, watches `paths`.
async fn finish_loading(
    mut loading: Loading,
    runtime: Arc<Runtime>,
    server: Arc<Server>,
    watch_paths: Option<Vec<PathBuf>>,
) {
    if runtime.still_loading() > 0 {
        let started = std::time::Instant::now();
        loop {
            let rt = runtime.clone();
            let report;
            (loading, report) = match off_the_workers(loading, move |l| l.next(&rt)).await {
                Ok(next) => next,
                Err(err) => {
                    tracing::error!("loading failed: {err}");
                    return;
                }
            };
            let Some(report) = report else {
                if runtime.catalog().components().is_empty() {
                    eprintln!("warning: every component was refused; no tools to serve");
                }
                break;
            };
            print_report(&runtime, &report);
            if !report.loaded.is_empty() {
                let told = server.tools_changed();
                eprintln!(
                    "{} ready after {:.1}s; {told} client(s) notified",
                    runtime.catalog().counted(),
                    started.elapsed().as_secs_f64()
                );
            }
        }
        warn_unused_credentials(&runtime);
    }
    if let Some(paths) = watch_paths {
        watch(Watcher::new(&runtime, &paths), runtime, server).await;
    }
}

/// Runs `work` on `state` on a blocking thread, handing both back: loading
/// compiles and waits, which must not hold up the async workers.
async fn off_the_workers<S: Send + 'static, T: Send + 'static>(
    mut state: S,
    work: impl FnOnce(&mut S) -> T + Send + 'static,
) -> Result<(S, T), tokio::task::JoinError> {
    tokio::task::spawn_blocking(move || {
        let out = work(&mut state);
        (state, out)
    })
    .await
}

/// How often `--watch` looks at the served files.
const WATCH_INTERVAL: Duration = Duration::from_millis(500);

/// Polls the served files for ever; after a change, tells the clients.
async fn watch(mut watcher: Watcher, runtime: Arc<Runtime>, server: Arc<Server>) {
    let mut tick = tokio::time::interval(WATCH_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let rt = runtime.clone();
        let changes;
        (watcher, changes) = match off_the_workers(watcher, move |w| w.poll(&rt)).await {
            Ok(polled) => polled,
            Err(err) => {
                tracing::error!("reload: the watcher failed: {err}; no more reloads");
                return;
            }
        };
        if changes.tools_changed() {
            let told = server.tools_changed();
            eprintln!(
                "{} ready after reload; {told} client(s) notified",
                runtime.catalog().counted()
            );
        }
    }
}
