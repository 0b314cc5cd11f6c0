//! The flags of `airlock serve`, and how a serve configuration file
//! (`--config`) fills in those not given on the command line.

use std::net::SocketAddr;
use std::path::PathBuf;

use super::LoadOptions;
use super::serve_config::ServeConfig;

/// Serve tools over MCP (stdio or Streamable HTTP) and plain JSON-RPC.
#[derive(clap::Args)]
#[command(
    after_help = "Without --stdio, serves HTTP: MCP at http://ADDR/mcp, JSON-RPC 2.0 at \
                        http://ADDR/rpc, a description of the JSON-RPC methods at \
                        http://ADDR/rpc/describe, and GET /healthz and /readyz (503 until every \
                        component has loaded) for load balancers.\n\n\
                        Examples:\n  \
                        airlock serve target/components/\n  \
                        airlock serve oci://ghcr.io/acme/catalog:1.2.0   (locked in airlock.lock)\n  \
                        airlock serve --policy airlock.toml target/components/ --listen 127.0.0.1:9000\n  \
                        airlock serve --stdio target/components/catalog.wasm target/components/export.wasm\n  \
                        airlock serve --watch tools/\n  \
                        airlock serve --policy airlock.toml tools/ --listen 0.0.0.0:8414 --allow-host tools.internal\n\n\
                        A non-loopback address needs bearer tokens in the policy ([[tokens]]), or \
                        --allow-unauthenticated.\n\n\
                        SIGINT/SIGTERM drain: /readyz turns 503 and new calls get 503 with \
                        Retry-After while running calls get --grace seconds to finish; then the \
                        rest are cancelled and serve exits 0. Several replicas behind a load \
                        balancer share their tasks with --state redis://HOST:PORT/DB.\n\n\
                        On Linux the process confines itself before it loads anything (Landlock: \
                        only the granted folders, its own files and the ports it needs; seccomp: \
                        no new programs, no reaching into other processes); it says to what at \
                        the start, and `airlock check` shows it beforehand. --no-confine turns it off."
)]
pub struct Args {
    /// Component files (.wasm), folders of them, or references
    /// (oci://REGISTRY/NAME:TAG, …@sha256:DIGEST, https://…/tool.wasm).
    #[arg(value_name = "PATH")]
    pub(super) paths: Vec<PathBuf>,
    /// Speak MCP on stdin/stdout instead of HTTP.
    #[arg(long, conflicts_with = "listen")]
    pub(super) stdio: bool,
    /// Address to listen on for HTTP [default: 127.0.0.1:8414].
    #[arg(long, value_name = "ADDR")]
    pub(super) listen: Option<SocketAddr>,
    /// Listen on a non-loopback address although the policy has no tokens.
    #[arg(long)]
    pub(super) allow_unauthenticated: bool,
    /// Another host name accepted in Host/Origin headers (besides loopback).
    #[arg(long, value_name = "NAME")]
    pub(super) allow_host: Vec<String>,
    /// HTTP requests running tool calls at once; more get 503.
    #[arg(long, value_name = "N", default_value_t = 64, value_parser = at_least_one)]
    pub(super) max_calls: usize,
    /// Largest HTTP request body in bytes; larger ones get 413.
    #[arg(long, value_name = "BYTES", default_value_t = 4 * 1024 * 1024)]
    pub(super) max_body: usize,
    /// HTTP connections open at once; more are closed on accept. One bearer
    /// token holds at most a quarter (more get 429).
    #[arg(long, value_name = "N", default_value_t = 1024, value_parser = at_least_one)]
    pub(super) max_connections: usize,
    /// Long-lived HTTP streams open at once (GET /mcp, subscriptions/listen,
    /// tasks/result waits); one bearer token holds at most a quarter.
    /// They take no call's place in --max-calls.
    #[arg(long, value_name = "N", default_value_t = 256, value_parser = at_least_one)]
    pub(super) max_streams: usize,
    /// Seconds an HTTP request body has, plus one per 64 KiB it delivered
    /// (a minimum rate); a slower one gets 408 and its connection closes.
    #[arg(long, value_name = "SECONDS", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    pub(super) body_timeout: u64,
    /// Serve HTTPS: the certificate (PEM: the server's first, then its
    /// chain). Read again when it changes (renewals need no restart).
    #[arg(long, value_name = "FILE")]
    pub(super) tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM: PKCS#8, PKCS#1 RSA or SEC1 EC).
    #[arg(long, value_name = "FILE")]
    pub(super) tls_key: Option<PathBuf>,
    /// Seconds running calls get to finish at shutdown.
    #[arg(long, value_name = "SECONDS", default_value_t = 10)]
    pub(super) grace: u64,
    /// Reload components when a .wasm in PATH is added, replaced or removed
    /// (polls every 500 ms); clients are sent notifications/tools/list_changed.
    #[arg(long)]
    pub(super) watch: bool,
    /// Start even when no tool loaded (without it, and without --watch,
    /// serve refuses to start with nothing to serve).
    #[arg(long)]
    pub(super) allow_empty: bool,
    /// Seconds to wait for components to load before serving; a component
    /// still compiling then (one not in the compile cache) joins when ready,
    /// and clients are sent notifications/tools/list_changed.
    #[arg(long, value_name = "SECONDS", default_value_t = 2.0)]
    pub(super) load_wait: f64,
    /// Share tasks, confirmation states and their signing key with the other
    /// replicas through Redis or Valkey at URL (redis://HOST:PORT/DB), so
    /// that any replica behind a load balancer answers for all.
    #[arg(long, value_name = "URL")]
    pub(super) state: Option<String>,
    /// Export traces and metrics (OpenTelemetry, OTLP/HTTP protobuf) to the
    /// collector at URL (http://HOST:4318); without it, the standard
    /// OTEL_EXPORTER_OTLP_ENDPOINT decides, and with neither nothing is
    /// exported.
    #[arg(long, value_name = "URL")]
    pub(super) otlp_endpoint: Option<String>,
    /// A serve configuration file: these flags as TOML keys (`max-calls =
    /// 64`, `components = ["tools/"]`, `policy = "airlock.toml"`); a flag
    /// given here wins over its key.
    #[arg(long, value_name = "FILE")]
    pub(super) config: Option<PathBuf>,
    /// Serve without confining the process (on Linux, serve restricts itself
    /// with Landlock and seccomp to what the policy grants and serving
    /// needs, so a tool that escapes the WebAssembly sandbox reaches nothing
    /// else). Not advised: say why in the log.
    #[arg(long)]
    pub(super) no_confine: bool,
    /// Confine as serving would, then try each probe (read:PATH,
    /// write:FOLDER, connect:ADDR, exec:PROGRAM), print what the kernel
    /// answered, and exit: how the tests see that an escape is refused.
    #[arg(long, value_name = "PROBE", hide = true)]
    pub(super) confine_probe: Vec<crate::confine::probe::Probe>,
    /// Serve as the worker of this cordon (the serving process starts its
    /// workers so): calls on stdin and stdout, not a listener.
    #[arg(long, value_name = "CORDON", hide = true)]
    pub(super) cordon_worker: Option<String>,
    #[command(flatten)]
    pub(super) load: LoadOptions,
}

pub(super) const DEFAULT_LISTEN: &str = "127.0.0.1:8414";

/// A count that must be 1 or more (0 would refuse everything).
fn at_least_one(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) => Err("0 would refuse every request; give 1 or more".into()),
        Ok(n) => Ok(n),
        Err(err) => Err(format!("{err}: give a whole number, 1 or more")),
    }
}

impl Args {
    /// Takes each key of `config` whose flag was not given on the command
    /// line (`given` says which were, by argument id).
    pub(super) fn apply(&mut self, config: ServeConfig, given: impl Fn(&str) -> bool) {
        // `key => field` where the flag has a value; `key => Some(field)`
        // where the flag's value is optional.
        macro_rules! take {
            ($($id:literal: $from:expr => $to:expr),* $(,)?) => {$(
                if !given($id) && let Some(value) = $from {
                    $to = value;
                }
            )*};
        }
        take! {
            "paths": config.components => self.paths,
            "stdio": config.stdio => self.stdio,
            "allow_unauthenticated": config.allow_unauthenticated => self.allow_unauthenticated,
            "allow_host": config.allow_host => self.allow_host,
            "max_calls": config.max_calls => self.max_calls,
            "max_body": config.max_body => self.max_body,
            "max_connections": config.max_connections => self.max_connections,
            "max_streams": config.max_streams => self.max_streams,
            "body_timeout": config.body_timeout => self.body_timeout,
            "grace": config.grace => self.grace,
            "watch": config.watch => self.watch,
            "allow_empty": config.allow_empty => self.allow_empty,
            "load_wait": config.load_wait => self.load_wait,
            "no_cache": config.no_cache => self.load.no_cache,
            "insecure_registry": config.insecure_registry => self.load.fetch.insecure_registry,
            "fetch_timeout": config.fetch_timeout.map(Some) => self.load.fetch.fetch_timeout,
            "fetch_min_rate": config.fetch_min_rate.map(Some) => self.load.fetch.fetch_min_rate,
            "listen": config.listen.map(Some) => self.listen,
            "policy": config.policy.map(Some) => self.load.policy,
            "lock": config.lock.map(Some) => self.load.fetch.lock,
            "state": config.state.map(Some) => self.state,
            "tls_cert": config.tls_cert.map(Some) => self.tls_cert,
            "tls_key": config.tls_key.map(Some) => self.tls_key,
            "otlp_endpoint": config.otlp_endpoint.map(Some) => self.otlp_endpoint,
        }
        // `--stdio` and `--listen` exclude each other: the one given here
        // wins over the other's key.
        if given("stdio") {
            self.listen = None;
        }
        if given("listen") {
            self.stdio = false;
        }
    }
}
