//! Tools in Python and JavaScript: the pinned toolchains under `target/`
//! (and the Debian packages the tests need), the example components in
//! `target/examples/`, and their tests.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::{Tally, cargo, run, run_counted};

/// Python for the toolchain venv (`$AIRLOCK_PYTHON`, else `python3`).
fn python() -> String {
    std::env::var("AIRLOCK_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// Installs `target/py` (componentize-py from `sdk/python/requirements.txt`)
/// and `target/js` (jco + componentize-js by `npm ci` from `sdk/js`'s
/// `package.json` and `package-lock.json`) unless the pins are unchanged.
fn ensure_toolchains(root: &Path) -> Result<()> {
    ensure_venv(&root.join("target/py"), "sdk/python/requirements.txt")?;
    ensure_npm(
        &root.join("target/js"),
        "sdk/js",
        &["ci", "--no-audit", "--no-fund"],
    )
}

/// Runs `install` unless `dir/.airlock-pins` already holds `pins` (the text
/// of the files that pin what is installed there); records them after.
fn ensure_pinned(dir: &Path, pins: String, install: impl FnOnce() -> Result<()>) -> Result<()> {
    let installed = std::fs::read_to_string(dir.join(".airlock-pins")).ok();
    if installed.as_deref() == Some(pins.as_str()) {
        return Ok(());
    }
    install()?;
    std::fs::write(dir.join(".airlock-pins"), pins)?;
    Ok(())
}

/// A Python virtual environment at `venv` with the pinned `requirements`.
pub(crate) fn ensure_venv(venv: &Path, requirements: &str) -> Result<()> {
    let pins = std::fs::read_to_string(requirements)?;
    ensure_pinned(venv, pins, || {
        eprintln!(
            "installing the Python packages of {requirements} into {} (pip; the first time \
             a download, up to a minute)…",
            venv.display()
        );
        run(Command::new(python()).arg("-m").arg("venv").arg(venv))?;
        run(Command::new(venv.join("bin/pip")).args([
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "-r",
            requirements,
        ]))
    })
}

/// Debian's `package` (apt-get, with `sudo -n` when not root) unless
/// `binary` is already there; the package lists are refreshed only when
/// the first attempt fails.
pub(crate) fn ensure_apt(package: &str, binary: &str) -> Result<()> {
    if Path::new(binary).is_file() {
        return Ok(());
    }
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).trim() == "0");
    let apt = |args: &[&str]| {
        let mut cmd = if root {
            Command::new("apt-get")
        } else {
            let mut sudo = Command::new("sudo");
            sudo.args(["-n", "apt-get"]);
            sudo
        };
        cmd.args(args).env("DEBIAN_FRONTEND", "noninteractive");
        run(&mut cmd)
    };
    let install = ["install", "-y", "-q", "--no-install-recommends", package];
    apt(&install)
        .or_else(|_| apt(&["update", "-q"]).and_then(|()| apt(&install)))
        .with_context(|| format!("cannot install {package} with apt-get"))?;
    if !Path::new(binary).is_file() {
        bail!("{package} is installed, but {binary} is missing");
    }
    Ok(())
}

/// `node_modules` in `dir` from the `package.json` and `package-lock.json`
/// in folder `from`, installed with `npm ARGS`.
pub(crate) fn ensure_npm(dir: &Path, from: &str, npm: &[&str]) -> Result<()> {
    let (pkg, lock) = (
        format!("{from}/package.json"),
        format!("{from}/package-lock.json"),
    );
    let pins = std::fs::read_to_string(&pkg)? + &std::fs::read_to_string(&lock)?;
    ensure_pinned(dir, pins, || {
        eprintln!(
            "installing the npm packages of {pkg} into {} (npm; the first time a download, \
             up to a few minutes)…",
            dir.display()
        );
        std::fs::create_dir_all(dir)?;
        std::fs::copy(&pkg, dir.join("package.json"))?;
        std::fs::copy(&lock, dir.join("package-lock.json"))?;
        run(Command::new("npm").current_dir(dir).args(npm))
    })
}

/// The newest modification time of the files under `paths`.
fn newest(paths: &[PathBuf]) -> Option<std::time::SystemTime> {
    let mut newest = None;
    for path in paths {
        let meta = std::fs::metadata(path).ok()?;
        let time = if meta.is_dir() {
            let entries: Vec<PathBuf> = std::fs::read_dir(path)
                .ok()?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| !p.ends_with("__pycache__"))
                .collect();
            newest_or(&entries, meta.modified().ok()?)
        } else {
            meta.modified().ok()?
        };
        newest = newest.max(Some(time));
    }
    newest
}

fn newest_or(paths: &[PathBuf], or: std::time::SystemTime) -> std::time::SystemTime {
    newest(paths).unwrap_or(or).max(or)
}

/// Builds `examples/python/NAME/app.py` and `examples/js/NAME/app.js` into
/// `target/examples/NAME.wasm`, and the plain Python and JavaScript test
/// components (`tests/components/plain_py`, `plain_js`, and `p3_py` for
/// WASI 0.3: their own WIT, no SDK) into `target/test-components/`; each skipped when newer than its
/// sources. Each one that builds is announced first with how far along
/// the builds are: a build takes 10–20 s and its tool prints nothing
/// meanwhile.
pub(crate) fn build_examples(root: &Path) -> Result<()> {
    ensure_toolchains(root)?;
    let builds = examples(root)?;
    let stale: Vec<&Build> = builds.iter().filter(|b| b.stale()).collect();
    if stale.is_empty() {
        eprintln!(
            "  the {} Python and JavaScript examples and test components are up to date",
            builds.len()
        );
        return Ok(());
    }
    for (at, build) in stale.iter().enumerate() {
        eprintln!("{}", build.announce(at + 1, stale.len()));
        componentize(root, build)?;
    }
    Ok(())
}

/// One component `build_examples` makes.
struct Build {
    /// `example` or `test component`.
    what: &'static str,
    name: String,
    /// Its folder: `app.py` or `app.js` in it.
    dir: PathBuf,
    wit: PathBuf,
    world: String,
    /// What it is made of: newer files make it stale.
    sources: Vec<PathBuf>,
    out: PathBuf,
}

impl Build {
    fn stale(&self) -> bool {
        let built = std::fs::metadata(&self.out).and_then(|m| m.modified()).ok();
        built.is_none() || built < newest(&self.sources)
    }

    /// What the `at`th of `of` builds says before it starts.
    fn announce(&self, at: usize, of: usize) -> String {
        format!(
            "building {} {at} of {of}: {} ({}; 10-20 s)…",
            self.what,
            self.name,
            self.language()
        )
    }

    fn language(&self) -> &'static str {
        match self.dir.join("app.py").is_file() {
            true => "Python",
            false => "JavaScript",
        }
    }
}

/// The examples and the plain test components, in the order they build.
fn examples(root: &Path) -> Result<Vec<Build>> {
    let out_dir = root.join("target/examples");
    std::fs::create_dir_all(&out_dir)?;
    let mut builds = Vec::new();
    for (lang, entry, sdk) in [
        ("python", "app.py", "sdk/python"),
        ("js", "app.js", "sdk/js"),
    ] {
        let Ok(dirs) = std::fs::read_dir(root.join("examples").join(lang)) else {
            continue;
        };
        let mut dirs: Vec<PathBuf> = dirs
            .map(|d| d.map(|d| d.path()))
            .collect::<std::io::Result<_>>()?;
        dirs.sort();
        for dir in dirs {
            if !dir.join(entry).is_file() {
                continue;
            }
            let name = dir
                .file_name()
                .context("name")?
                .to_string_lossy()
                .into_owned();
            // A Python tool that makes HTTP requests needs `wasi:http`: the
            // world `server-http`. Every SDK component exports resources,
            // prompts and completions too (world `server`), empty or not.
            let http = lang == "python"
                && std::fs::read_to_string(dir.join(entry))?.contains("airlock_http");
            builds.push(Build {
                what: "example",
                out: out_dir.join(format!("{name}.wasm")),
                name,
                sources: vec![dir.clone(), root.join(sdk), root.join("wit")],
                dir,
                wit: root.join("wit"),
                world: if http { "server-http" } else { "server" }.into(),
            });
        }
    }
    let tests = root.join("target/test-components");
    std::fs::create_dir_all(&tests)?;
    for name in ["plain_py", "plain_js", "p3_py"] {
        let dir = root.join("tests/components").join(name);
        builds.push(Build {
            what: "test component",
            name: name.into(),
            out: tests.join(format!("{name}.wasm")),
            sources: vec![dir.clone()],
            wit: dir.join("wit"),
            world: name.replace('_', "-"),
            dir,
        });
    }
    Ok(builds)
}

/// Builds `build`'s `app.py` (componentize-py) or `app.js` (jco) against
/// its world. WASI imports are stubbed, except for a Python tool that uses
/// `airlock_http` and a JavaScript tool that calls `fetch(` (built with
/// StarlingMonkey, whose `fetch` runs over wasi:http; others with QuickJS,
/// synchronous).
fn componentize(root: &Path, build: &Build) -> Result<()> {
    let Build {
        dir,
        wit,
        world,
        out,
        ..
    } = build;
    let mut cmd;
    let python = dir.join("app.py");
    if python.is_file() {
        let source = std::fs::read_to_string(&python)?;
        cmd = Command::new(root.join("target/py/bin/componentize-py"));
        cmd.arg("-d").arg(wit).args(["-w", world, "componentize"]);
        // A world with WASI 0.3 imports keeps WASI too: stubbing would
        // stub its 0.3 imports (`tests/components/p3_py`).
        let wasi_0_3 = std::fs::read_to_string(wit.join("world.wit"))
            .is_ok_and(|world| world.contains("@0.3."));
        if !source.contains("airlock_http") && !wasi_0_3 {
            cmd.arg("-s");
        }
        cmd.args(["-p", "sdk/python", "-p"]).arg(dir).arg("app");
    } else {
        let entry = dir.join("app.js");
        let source = std::fs::read_to_string(&entry)?;
        cmd = Command::new(root.join("target/js/node_modules/.bin/jco"));
        cmd.arg("componentize")
            .arg(entry)
            .arg("--cwd")
            .arg(root)
            .arg("--wit")
            .arg(wit)
            .args(["--world-name", world]);
        if source.contains("fetch(") {
            // The web's `fetch` is StarlingMonkey's (over wasi:http), and it
            // runs the event loop for an async handler.
            cmd.args(["-d", "fetch-event", "--bundle"]);
            return run_bundled(cmd.arg("-o").arg(out));
        } else {
            cmd.args(["--backend", "qjs", "--backend-qjs-disable-async"])
                .arg("--backend-qjs-stub-wasi");
        }
    }
    run(cmd.arg("-o").arg(out))
}

/// Runs a `jco componentize --bundle`: its bundler warns, in a box, that it
/// cannot resolve `airlock:tool/…`, which is as it should be (the WIT world
/// leaves those imports to the host, and airlock provides them). That
/// warning would read as a failure, so it is left out and one line says
/// why; the rest of jco's output is shown, all of it when jco fails.
fn run_bundled(cmd: &mut Command) -> Result<()> {
    eprintln!("+ {cmd:?}");
    let out = cmd
        .output()
        .with_context(|| format!("cannot run {cmd:?}"))?;
    let text = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        eprint!("{text}");
        bail!("{cmd:?} failed with {}", out.status);
    }
    let (kept, left_out) = without_host_import_warnings(&text);
    eprint!("{kept}");
    if left_out {
        eprintln!(
            "  (jco's bundler cannot resolve the airlock:tool imports, as expected: airlock \
             provides them when the tool runs)"
        );
    }
    Ok(())
}

/// `text` without the bundler's boxed `[UNRESOLVED_IMPORT]` warnings about
/// `airlock:` imports, and whether there were any.
fn without_host_import_warnings(text: &str) -> (String, bool) {
    let mut kept = String::new();
    let (mut inside, mut left_out) = (false, false);
    for line in text.lines() {
        if line.contains("UNRESOLVED_IMPORT") && line.contains("airlock:") {
            (inside, left_out) = (true, true);
            continue;
        }
        if inside {
            // The box ends with `───╯`; its arrows (`╰──`) are inside it.
            inside = !(line.contains('╯') || line.trim().is_empty());
            continue;
        }
        kept.push_str(line);
        kept.push('\n');
    }
    (kept, left_out)
}

/// The Python helper's unit tests, then the heavy `airlock new` tests
/// (ignored by the plain `cargo test`: they install toolchains per project).
pub(crate) fn language_tests(root: &Path, tally: &mut Tally) -> Result<()> {
    let cmd = Command::new(root.join("target/py/bin/python"))
        .args(["-m", "unittest", "discover", "-s", "sdk/python/tests"])
        .output();
    let ok = match cmd {
        Ok(out) => {
            let text = String::from_utf8_lossy(&out.stderr);
            eprint!("{text}");
            let ran = text
                .lines()
                .find_map(|l| l.strip_prefix("Ran ")?.split(' ').next()?.parse().ok())
                .unwrap_or(0u64);
            tally.passed += if out.status.success() { ran } else { 0 };
            out.status.success()
        }
        Err(_) => false,
    };
    if !ok {
        tally.failed += 1;
        tally
            .failures
            .push("python -m unittest (sdk/python)".into());
    }
    let failed_before = tally.failed;
    let ok = run_counted(
        cargo(root)
            .args(["test", "-p", "airlock", "--test", "runtime", "languages::"])
            .args(["--", "--ignored"]),
        tally,
    )?;
    if !ok && tally.failed == failed_before {
        tally.failed += 1;
        tally
            .failures
            .push("cargo test --test runtime languages:: -- --ignored".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every example and plain test component is found, in a steady
    /// order, and each build says which of how many it is.
    #[test]
    fn example_builds_are_listed_and_announced_with_how_far_along() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .expect("workspace");
        let builds = examples(root).expect("the examples");
        let shown: Vec<String> = builds
            .iter()
            .map(|b| format!("{} ({})", b.name, b.language()))
            .collect();
        for expected in [
            "shipping (Python)",
            "linkcheck (Python)",
            "wordstats (JavaScript)",
            "plain_py (Python)",
            "plain_js (JavaScript)",
            "p3_py (Python)",
        ] {
            assert!(shown.iter().any(|s| s == expected), "{shown:?}");
        }
        let linkcheck = builds
            .iter()
            .find(|b| b.name == "linkcheck")
            .expect("linkcheck");
        assert_eq!(linkcheck.world, "server-http");
        assert_eq!(
            linkcheck.announce(2, 5),
            "building example 2 of 5: linkcheck (Python; 10-20 s)…"
        );
        let plain = builds
            .iter()
            .find(|b| b.name == "plain_js")
            .expect("plain_js");
        assert_eq!(
            plain.announce(6, 6),
            "building test component 6 of 6: plain_js (JavaScript; 10-20 s)…"
        );
        let names: Vec<&str> = builds.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(
            names,
            examples(root)
                .expect("again")
                .iter()
                .map(|b| b.name.as_str())
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn the_expected_unresolved_import_warning_is_left_out() {
        // As jco 1.35's bundler (rolldown) prints it.
        let jco = "airlock-tool.js (32:28) [UNRESOLVED_IMPORT] Could not resolve \
                   'airlock:tool/host@0.1.1' in airlock-tool.js
    \u{256d}\u{2500}[ airlock-tool.js:32:29 ]
    \u{2502}
 32 \u{2502} import * as hostModule from \"airlock:tool/host@0.1.1\";
    \u{2502}          \u{2570}\u{2500}\u{2500} Module not found, treating it as an external dependency
    \u{2502} 
    \u{2502} Help: The \"main\" field here was ignored.
\u{2500}\u{2500}\u{2500}\u{2500}\u{256f}

app.js (1:1) [UNRESOLVED_IMPORT] Could not resolve 'left-pad' in app.js
OK Successfully written jt.wasm.
";
        let (kept, left_out) = without_host_import_warnings(jco);
        assert!(left_out);
        assert_eq!(
            kept,
            "\napp.js (1:1) [UNRESOLVED_IMPORT] Could not resolve 'left-pad' in app.js\n\
             OK Successfully written jt.wasm.\n"
        );
    }
}
