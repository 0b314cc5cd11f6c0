//! What every run of the clients no one here wrote stands on: the pinned
//! clients installed under `target/clients` ([`ensure_clients`]) and
//! `airlock serve` on a free port ([`Served`]), used by the conformance,
//! Python SDK and Inspector runs ([`crate::clients`]), the OpenRPC tools
//! ([`crate::openrpc`]) and the MCP Apps host ([`crate::apps`]), none of
//! which this module knows.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result};

use crate::toolchains::{ensure_npm, ensure_venv};

/// The fixtures the conformance suite calls (`test_*`), a test component
/// (`tests/components/conformance`), not an example.
pub(crate) const CONFORMANCE: &str = "target/test-components/conformance.wasm";

/// Installs `target/clients` (`npm install` from `tests/clients/package.json` and
/// `package-lock.json`) and `target/clients/venv` (pip from
/// `tests/clients/requirements.txt`) unless the pins are unchanged.
pub(crate) fn ensure_clients(root: &Path) -> Result<PathBuf> {
    let dir = root.join("target/clients");
    // `npm install` with the lock file, not `npm ci`: vite (the Inspector's
    // web UI) names a Windows-only optional package the registry does not
    // serve, which `npm ci`'s sync check refuses.
    ensure_npm(
        &dir,
        "tests/clients",
        &["install", "--no-audit", "--no-fund", "--loglevel=error"],
    )?;
    ensure_venv(&dir.join("venv"), "tests/clients/requirements.txt")?;
    Ok(dir)
}

/// `airlock serve --listen 127.0.0.1:PORT [ARGS] PATHS`, stopped on drop.
pub(crate) struct Served {
    child: std::process::Child,
    /// `http://127.0.0.1:PORT/mcp`.
    pub(crate) url: String,
}

impl Served {
    /// `http://127.0.0.1:PORT`, where `/rpc` and `/mcp` are.
    pub(crate) fn base(&self) -> String {
        self.url.trim_end_matches("/mcp").to_string()
    }

    /// Serves `paths`, with `args` (such as `--policy FILE`) before them,
    /// once airlock says it is listening.
    pub(crate) fn start_with(
        root: &Path,
        log: &Path,
        args: &[&std::ffi::OsStr],
        paths: &[PathBuf],
    ) -> Result<Served> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let mut child = Command::new(root.join("target/debug/airlock"))
            .args([
                "serve",
                "--load-wait",
                "600",
                "--listen",
                &format!("127.0.0.1:{port}"),
            ])
            .args(args)
            .args(paths)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .context("cannot start target/debug/airlock serve")?;
        let stderr = child.stderr.take().context("no stderr")?;
        let mut log = std::fs::File::create(log)?;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            use std::io::Write;
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = writeln!(log, "{line}");
                if line.contains("listening on") {
                    let _ = tx.send(());
                }
            }
        });
        let served = Served {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        };
        rx.recv_timeout(std::time::Duration::from_secs(60))
            .context("airlock serve did not start listening within 60 s")?;
        Ok(served)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
