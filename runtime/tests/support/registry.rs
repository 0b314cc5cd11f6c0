//! Real parts for the registry tests, started on loopback by the tests:
//! Debian's `docker-registry` (CNCF distribution) on a random port with a
//! temporary storage folder, and `tests/registry/oras_tool.py` (the ORAS
//! Python SDK, cosign-compatible signing with `cryptography`) from the
//! venv `cargo xtask test` installs in `target/registry-venv`.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::http::free_port;
use super::workspace;

/// The registry binary (`apt-get install docker-registry`).
fn registry_binary() -> PathBuf {
    let path = PathBuf::from("/usr/bin/docker-registry");
    assert!(
        path.is_file(),
        "{} is missing: run `cargo xtask test` (it installs Debian's docker-registry), or \
         `apt-get install -y docker-registry`",
        path.display()
    );
    path
}

/// A running registry, stopped when dropped.
pub struct Registry {
    child: Option<Child>,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    auth: String,
    /// Sent by this registry (and no other) in every answer's
    /// `X-Airlock-Test` header, so a port another test's registry took
    /// first is noticed.
    mark: String,
    dir: tempfile::TempDir,
}

impl Registry {
    /// An anonymous registry.
    pub fn start() -> Registry {
        Registry::with_auth("")
    }

    /// A registry whose `auth:` section is `auth` (YAML, indented by two).
    pub fn with_auth(auth: &str) -> Registry {
        let dir = tempfile::tempdir().expect("tempdir");
        let mark = dir
            .path()
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut registry = Registry {
            child: None,
            addr: format!("127.0.0.1:{}", free_port()),
            auth: auth.to_string(),
            mark,
            dir,
        };
        registry.resume();
        registry
    }

    /// Starts the registry process (again, after [`Registry::stop`]); when
    /// its port was taken meanwhile, on another one.
    pub fn resume(&mut self) {
        for _ in 0..5 {
            if self.start_on_port() {
                return;
            }
            self.stop();
            self.addr = format!("127.0.0.1:{}", free_port());
        }
        panic!(
            "docker-registry did not start: {}",
            std::fs::read_to_string(self.dir.path().join("registry.log")).unwrap_or_default()
        );
    }

    /// Starts the registry on `self.addr`; whether it is the one answering.
    fn start_on_port(&mut self) -> bool {
        let config = self.dir.path().join("config.yml");
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\n\
                 storage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\n\
                 http:\n  addr: {}\n  headers:\n    X-Airlock-Test: [{}]\n{}",
                self.dir.path().join("data").display(),
                self.addr,
                self.mark,
                self.auth
            ),
        )
        .expect("registry config");
        let log = std::fs::File::create(self.dir.path().join("registry.log")).expect("log");
        let child = Command::new(registry_binary())
            .arg("serve")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start docker-registry");
        self.child = Some(child);
        let addr: std::net::SocketAddr = self.addr.parse().expect("address");
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            let exited = self
                .child
                .as_mut()
                .is_none_or(|c| c.try_wait().ok().flatten().is_some());
            if exited {
                return false;
            }
            // An empty answer: the registry accepts before it serves (or
            // the port is someone else's who closed): look again.
            if let Some(ours) = self.answers_with_mark(addr) {
                return ours;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    /// Whether the server on `addr` answers `GET /v2/` with this
    /// registry's mark; `None` when nothing answers (yet).
    fn answers_with_mark(&self, addr: std::net::SocketAddr) -> Option<bool> {
        use std::io::{Read, Write};
        let mut stream = TcpStream::connect(addr).ok()?;
        stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        let request = format!("GET /v2/ HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).ok()?;
        let mut raw = Vec::new();
        let _ = stream.read_to_end(&mut raw);
        let text = String::from_utf8_lossy(&raw);
        let (head, _) = text.split_once("\r\n\r\n")?;
        let mark = format!("x-airlock-test: {}", self.mark).to_ascii_lowercase();
        Some(head.lines().any(|l| l.trim().to_ascii_lowercase() == mark))
    }

    /// Stops the registry (the registry is down).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// `oci+http://ADDR/REPO` (plain HTTP, as the reference says).
    pub fn reference(&self, repo: &str) -> String {
        format!("oci+http://{}/{repo}", self.addr)
    }

    /// The registry's own file of blob `digest` (to damage it).
    pub fn blob_file(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").expect("a sha256 digest");
        self.dir
            .path()
            .join("data/docker/registry/v2/blobs/sha256")
            .join(&hex[..2])
            .join(hex)
            .join("data")
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Runs `tests/registry/oras_tool.py ARGS` with the venv's Python; returns
/// its stdout, panics with its stderr when it fails.
pub fn oras_tool(args: &[&str]) -> String {
    let python = workspace().join("target/registry-venv/bin/python");
    assert!(
        python.is_file(),
        "{} is missing: run `cargo xtask test` (it installs tests/registry/requirements.txt \
         into target/registry-venv)",
        python.display()
    );
    let out = Command::new(python)
        .arg(workspace().join("tests/registry/oras_tool.py"))
        .args(args)
        .output()
        .expect("run oras_tool.py");
    assert!(
        out.status.success(),
        "oras_tool.py {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A cosign-compatible key pair made by `cryptography` in `dir`:
/// (`cosign.key`, `cosign.pub`).
pub fn keygen(dir: &Path) -> (PathBuf, PathBuf) {
    std::fs::create_dir_all(dir).expect("key dir");
    oras_tool(&["keygen", &dir.display().to_string()]);
    (dir.join("cosign.key"), dir.join("cosign.pub"))
}

/// Signs manifest `digest` of `repo` with `key` (the payload names
/// `claims`, or `digest`), as `cosign sign --key` does.
pub fn sign(registry: &Registry, repo: &str, digest: &str, key: &Path, claims: Option<&str>) {
    let key = key.display().to_string();
    let mut args = vec!["sign", &registry.addr, repo, digest, &key];
    if let Some(claims) = claims {
        args.extend(["--claims", claims]);
    }
    oras_tool(&args);
}
