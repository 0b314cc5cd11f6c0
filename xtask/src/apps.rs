//! MCP Apps as a user's host shows them: `tests/clients/apps/run.mjs` serves
//! `target/components/stock_chart.wasm` with `airlock serve`, renders the
//! tool's UI with `@modelcontextprotocol/ext-apps`' host bridge in Debian's
//! chromium (headless, driven by playwright-core), clicks its button and
//! checks the call went through airlock. Screenshots land in
//! `target/mcp-apps/`.

use std::path::Path;
use std::process::Command;

use crate::Tally;
use crate::toolchains::ensure_apt;

/// Runs the MCP Apps test with the Node and the packages in `clients`
/// (`target/clients`); its checks count in `tally`.
pub(crate) fn apps_tests(root: &Path, clients: &Path, node_bin: &Path, tally: &mut Tally) {
    let fail = |tally: &mut Tally, what: String| {
        tally.failed += 1;
        tally.failures.push(what);
    };
    if let Err(err) = ensure_apt("chromium", "/usr/bin/chromium") {
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
        .env("CHROMIUM", "/usr/bin/chromium")
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
