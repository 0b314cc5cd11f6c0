//! The OpenRPC project's own tools on airlock's OpenRPC document (#39), all
//! pinned in `tests/clients/package.json` and run from `tests/clients/openrpc/`:
//!
//! - `@open-rpc/schema-utils-js` validates the document `airlock inspect
//!   --openrpc` prints for every component of `target/components` and
//!   `target/examples`, and for `target/test-components/plain.wasm` (a
//!   plain WIT function of every type of the type table) and
//!   `conformance.wasm` (the conformance suite's fixtures);
//! - `@open-rpc/test-coverage` calls every method that has an example, and
//!   with made-up arguments those listed in `fake-params.txt` (the type
//!   table's echoes), against `airlock serve` of the examples and the
//!   conformance fixtures and checks each answer
//!   against the method's result schema (`expected-failures.txt` lists the
//!   methods it cannot pass, and why); a method that is none of these is a
//!   failure, so none is left out silently. The server's policy
//!   ([`POLICY`]) lets every example call succeed: restock and add_stock
//!   may change a stock folder of their own, and the open-world tools reach a loopback
//!   stand-in ([`stand_in`]) that their example URLs are pointed at;
//! - `@open-rpc/generator` makes a TypeScript client from the document of
//!   `target/components` (before anything is served) exactly as
//!   docs/serving.md says a user does — its `sh` block is run as written
//!   ([`documented_steps`]; README.md's copy of the steps must match it):
//!   the generator, `npm install` of the generated package, `npx tsc`,
//!   and a call of `build/index.js`; then the same `npx tsc` builds
//!   `client-test.ts` beside `src/index.ts`, which calls a tool by
//!   position and by name and checks the typed errors of bad arguments.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::Tally;
use crate::harness::{CONFORMANCE, Served};

/// Runs the three tools; every check counts in `tally`.
pub(crate) fn openrpc_tests(root: &Path, dir: &Path, node_bin: &Path, tally: &mut Tally) {
    let mut record = |what: &str, result: Result<(u64, u64)>| match result {
        Ok((passed, failed)) => {
            tally.passed += passed;
            tally.failed += failed;
            if failed > 0 {
                tally
                    .failures
                    .push(format!("openrpc {what}: {failed} failed"));
            }
        }
        Err(err) => {
            println!("openrpc {what}: FAILED ({err:#})");
            tally.failed += 1;
            tally.failures.push(format!("openrpc {what}: {err:#}"));
        }
    };
    let work = dir.join("openrpc");
    let _ = std::fs::remove_dir_all(&work);
    let node = node_bin.join("node");
    record("documents", documents(root, dir, &work, &node));
    let served = stand_in().and_then(|origin| {
        let policy = policy(&work, &origin)?;
        let served = Served::start_with(
            root,
            &dir.join("serve-openrpc.log"),
            &["--policy".as_ref(), policy.as_os_str()],
            &[
                root.join("target/components"),
                root.join("target/examples"),
                root.join(CONFORMANCE),
            ],
        )?;
        Ok((served, origin))
    });
    let (served, origin) = match served {
        Ok(served) => served,
        Err(err) => {
            record("serve", Err(err));
            return;
        }
    };
    let base = served.base();
    record("test-coverage", coverage(root, dir, &node, &base, &origin));
    record("generated client", client(root, dir, &work, &node, &base));
}

/// The policy test-coverage's server runs with: what the example calls
/// need to succeed (`{data}` and `{address}` filled in by [`policy`]; a
/// loopback address must be listed as an IP to be reached).
const POLICY: &str = r#"# Written by cargo xtask test-openrpc.
[components.catalog]                # restock's example call
destructive = "allow"
folders = [{ host = "{data}", guest = "/data", mode = "read-write" }]

[components.stock_chart]            # stock_levels reads, add_stock changes the same stock
destructive = "allow"
folders = [{ host = "{data}", guest = "/data", mode = "read-write" }]

# The open-world tools' example URLs, pointed at the loopback stand-in.
[components.webfetch]
network = ["{address}"]

[components.linkcheck]
network = ["{address}"]

[components.jsonpick]
network = ["{address}"]
"#;

/// Writes the policy in `work` (with an empty stock folder) and returns
/// its path.
fn policy(work: &Path, origin: &str) -> Result<PathBuf> {
    let data = work.join("catalog-data");
    std::fs::create_dir_all(&data)?;
    let data = data.canonicalize()?;
    let text = POLICY
        .replace("{data}", &data.to_string_lossy())
        .replace("{address}", origin.trim_start_matches("http://"));
    let file = work.join("airlock.toml");
    std::fs::write(&file, text)?;
    Ok(file)
}

/// A loopback HTTP server standing in for the hosts of the open-world
/// tools' example URLs (the test has no network): it answers every request
/// with the same small JSON document, until xtask exits. Returns its
/// origin, `http://127.0.0.1:PORT`.
fn stand_in() -> Result<String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let origin = format!("http://{}", listener.local_addr()?);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                // The request head (there is no body: GET).
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let body = r#"{"name": "airlock stand-in", "release": {"version": "1.0.0"}}"#;
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
                     content-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
    Ok(origin)
}

/// The documents of every example component, validated.
fn documents(root: &Path, dir: &Path, work: &Path, node: &Path) -> Result<(u64, u64)> {
    let docs = work.join("documents");
    std::fs::create_dir_all(&docs)?;
    let mut components = Vec::new();
    for folder in ["target/components", "target/examples"] {
        for entry in std::fs::read_dir(root.join(folder)).with_context(|| folder.to_string())? {
            let path = entry?.path();
            if path.extension().is_some_and(|e| e == "wasm") {
                components.push(path);
            }
        }
    }
    components.push(root.join("target/test-components/plain.wasm"));
    components.push(root.join(CONFORMANCE));
    components.sort();
    let mut files = Vec::new();
    for component in &components {
        let name = component
            .file_stem()
            .context("a file name")?
            .to_string_lossy();
        let file = docs.join(format!("{name}.json"));
        inspect(root, std::slice::from_ref(component), &file)?;
        files.push(file);
    }
    let out = node_output(
        node_command(node, dir)
            .arg(root.join("tests/clients/openrpc/validate.cjs"))
            .args(&files)
            .current_dir(dir),
    )?;
    Ok(count(&out, "valid", "INVALID"))
}

/// `airlock inspect --openrpc PATHS > file`.
fn inspect(root: &Path, paths: &[PathBuf], file: &Path) -> Result<()> {
    let output = Command::new(root.join("target/debug/airlock"))
        .args(["inspect", "--openrpc"])
        .args(paths)
        .output()
        .context("cannot run target/debug/airlock inspect")?;
    if !output.status.success() {
        bail!(
            "airlock inspect --openrpc {paths:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    std::fs::write(file, &output.stdout)?;
    Ok(())
}

/// test-coverage against the server; its own summary line is counted.
fn coverage(
    root: &Path,
    dir: &Path,
    node: &Path,
    base: &str,
    stand_in: &str,
) -> Result<(u64, u64)> {
    let out = node_output(
        node_command(node, dir)
            .arg(root.join("tests/clients/openrpc/coverage.cjs"))
            .arg(base)
            .arg(root.join("tests/clients/openrpc/expected-failures.txt"))
            .arg(root.join("tests/clients/openrpc/fake-params.txt"))
            .arg(stand_in)
            .current_dir(dir),
    )?;
    let summary = out
        .lines()
        .find_map(|l| l.strip_prefix("openrpc test-coverage: "))
        .context("test-coverage printed no summary")?;
    let number = |what: &str| {
        summary
            .split(", ")
            .find_map(|part| part.strip_suffix(what))
            .and_then(|n| n.trim().parse::<u64>().ok())
            .unwrap_or(0)
    };
    let (passed, failed) = (number(" passed"), number(" failed"));
    if passed == 0 && failed == 0 {
        bail!("test-coverage made no calls");
    }
    Ok((passed, failed))
}

/// Where docs/serving.md's steps make the client; the test runs them in a
/// folder of its own instead.
const DOC_FOLDER: &str = "/tmp/airlock-client";

/// The port the documented steps' last call goes to (`cargo xtask serve`'s).
const DOC_PORT: &str = "port: 8414";

/// The generated TypeScript client, made, built and run against the server
/// by the documented steps, then built and run with `client-test.ts`.
fn client(root: &Path, dir: &Path, work: &Path, node: &Path, base: &str) -> Result<(u64, u64)> {
    let folder = work.join("client");
    let port = base.rsplit(':').next().context("a port in the base URL")?;
    let steps = documented_steps(root)?
        .replace(DOC_FOLDER, &folder.to_string_lossy())
        .replace(DOC_PORT, &format!("port: {port}"));
    let node_bin = node.parent().context("node's folder")?;
    // `airlock` is this build's; `npx` and `npm` run on the pinned Node.
    let path = std::env::join_paths(
        [root.join("target/debug"), node_bin.to_path_buf()]
            .into_iter()
            .chain(std::env::split_paths(
                &std::env::var_os("PATH").unwrap_or_default(),
            )),
    )?;
    let out = node_output(
        Command::new("bash")
            .args(["-e", "-c", &steps])
            .current_dir(root)
            .env("PATH", &path)
            .env("npm_config_yes", "true")
            .env("npm_config_fund", "false")
            .env("npm_config_audit", "false"),
    )?;
    let called = out.lines().last() == Some("12.5");
    println!(
        "generated client: docs/serving.md's steps, build/index.js called: {}",
        if called { "passed" } else { "FAILED" }
    );
    let project = folder.join("generated/client/typescript");
    std::fs::copy(
        root.join("tests/clients/openrpc/client-test.ts"),
        project.join("src/client-test.ts"),
    )?;
    node_output(
        Command::new("npx")
            .arg("tsc")
            .current_dir(&project)
            .env("PATH", &path),
    )?;
    let out = node_output(
        node_command(node, dir)
            .arg("build/client-test.js")
            .arg(base)
            .current_dir(&project),
    )?;
    let (passed, failed) = count(&out, "passed", "FAILED");
    Ok((passed + u64::from(called), failed + u64::from(!called)))
}

/// The `sh` block of docs/serving.md that makes the client (the one that
/// runs `@open-rpc/generator`). Every step README.md shows of it must be
/// one of its lines, so the two cannot say different things.
fn documented_steps(root: &Path) -> Result<String> {
    let serving = std::fs::read_to_string(root.join("docs/serving.md"))?;
    let block = sh_blocks(&serving)
        .into_iter()
        .find(|b| b.contains("@open-rpc/generator"))
        .context("docs/serving.md has no sh block that runs @open-rpc/generator")?;
    let steps: Vec<&str> = block.lines().map(command_of).collect();
    let readme = std::fs::read_to_string(root.join("README.md"))?;
    for line in sh_blocks(&readme)
        .iter()
        .flat_map(|b| b.lines())
        .map(command_of)
        .filter(|l| {
            l.contains(DOC_FOLDER)
                || l.contains("generated/client")
                || l.contains("@open-rpc/generator")
                || l.starts_with("npm install")
                || l.starts_with("npx tsc")
        })
    {
        if !steps.contains(&line) {
            bail!(
                "README.md shows `{line}`, which docs/serving.md's steps (the ones \
                 cargo xtask test runs) do not have: make them say the same"
            );
        }
    }
    Ok(block)
}

/// The bodies of a Markdown text's ```` ```sh ```` blocks.
fn sh_blocks(text: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut open: Option<String> = None;
    for line in text.lines() {
        match open.as_mut() {
            None if line.trim_end() == "```sh" => open = Some(String::new()),
            None => {}
            Some(_) if line.trim_end() == "```" => blocks.extend(open.take()),
            Some(block) => {
                block.push_str(line);
                block.push('\n');
            }
        }
    }
    blocks
}

/// A line of a block without its trailing comment (`  # …`).
fn command_of(line: &str) -> &str {
    line.split("  #").next().unwrap_or(line).trim_end()
}

/// `node` finding the pinned packages from scripts kept in `tests/clients/`.
fn node_command(node: &Path, dir: &Path) -> Command {
    let mut cmd = Command::new(node);
    cmd.env("NODE_PATH", dir.join("node_modules"));
    cmd
}

/// Lines ending in `pass` and lines holding `fail`.
fn count(out: &str, pass: &str, fail: &str) -> (u64, u64) {
    let passed = out.lines().filter(|l| l.ends_with(pass)).count() as u64;
    let failed = out.lines().filter(|l| l.contains(fail)).count() as u64;
    (passed, failed)
}

/// Runs `cmd`, shows its output, fails when it does.
fn node_output(cmd: &mut Command) -> Result<String> {
    eprintln!("+ {cmd:?}");
    let output = cmd
        .output()
        .with_context(|| format!("cannot run {cmd:?}"))?;
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    print!("{text}");
    eprint!("{}", String::from_utf8_lossy(&output.stderr));
    if !output.status.success() && !text.contains("INVALID") && !text.contains("FAILED") {
        bail!("{cmd:?} failed with {}", output.status);
    }
    Ok(text)
}
