//! A tiny HTTP/1.1 client and a served `airlock` for the end-to-end tests
//! over HTTP: what is tested is exactly what a client sees on the wire.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use serde_json::{Value, json};

/// A running `airlock serve`, killed when dropped.
pub struct Served {
    pub child: Child,
    pub addr: SocketAddr,
    /// What it (and its cordons' workers) said before it listened.
    pub start_log: Vec<String>,
    /// Everything it has said so far.
    log: Arc<Mutex<Vec<String>>>,
    _dir: tempfile::TempDir,
}

impl Served {
    /// The first line it said (so far, or within `within`) that holds
    /// `needle`.
    pub fn said(&self, needle: &str, within: Duration) -> Option<String> {
        let until = std::time::Instant::now() + within;
        loop {
            let found = self
                .log
                .lock()
                .ok()
                .and_then(|log| log.iter().find(|line| line.contains(needle)).cloned());
            if found.is_some() || std::time::Instant::now() >= until {
                return found;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Resident memory of the server, in KiB.
    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("/proc/PID/status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .expect("VmRSS")
    }

    /// Files (sockets included) the server has open.
    pub fn open_fds(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.child.id()))
            .expect("/proc/PID/fd")
            .count()
    }

    /// Fails when the server process has exited (crashed).
    pub fn assert_alive(&mut self) {
        if let Some(status) = self.child.try_wait().expect("try_wait") {
            panic!("airlock exited: {status}");
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port that was free a moment ago: only for servers that cannot be told
/// to take port 0 and say which they got (the registry retries on another
/// when it was taken meanwhile); `airlock serve` listens on port 0.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// Starts the server with `policy` (TOML, may be empty), the given
/// components and extra arguments; returns once it listens.
pub fn serve(policy: &str, files: &[PathBuf], extra: &[&str]) -> Served {
    start(
        Command::new(env!("CARGO_BIN_EXE_airlock")),
        policy,
        files,
        extra,
    )
}

/// [`serve`] with the soft limit on open files (`ulimit -Sn`) set to
/// `nofile` for the server.
pub fn serve_with_nofile(policy: &str, files: &[PathBuf], extra: &[&str], nofile: u64) -> Served {
    let mut shell = Command::new("sh");
    shell
        .arg("-c")
        .arg(format!("ulimit -Sn {nofile} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_airlock"));
    start(shell, policy, files, extra)
}

/// [`serve`] with these environment variables set for the server.
pub fn serve_with_env(
    policy: &str,
    files: &[PathBuf],
    extra: &[&str],
    env: &[(&str, &str)],
) -> Served {
    let mut command = Command::new(env!("CARGO_BIN_EXE_airlock"));
    command.envs(env.iter().copied());
    start(command, policy, files, extra)
}

/// [`serve`] with the compile cache in `cache` (a fresh folder makes every
/// component compile).
pub fn serve_with_cache(policy: &str, files: &[PathBuf], extra: &[&str], cache: &Path) -> Served {
    let mut command = Command::new(env!("CARGO_BIN_EXE_airlock"));
    command.env("AIRLOCK_CACHE_DIR", cache);
    start(command, policy, files, extra)
}

/// Runs `command` with `serve` and its arguments appended; unless `extra`
/// says otherwise, every component has loaded when it returns.
fn start(mut command: Command, policy: &str, files: &[PathBuf], extra: &[&str]) -> Served {
    let dir = tempfile::tempdir().expect("tempdir");
    let policy_path = dir.path().join("airlock.toml");
    std::fs::write(&policy_path, policy).expect("policy");
    let mut child = command
        .arg("serve")
        .args(if extra.contains(&"--load-wait") {
            &[][..]
        } else {
            &["--load-wait", "600"][..]
        })
        .arg("--policy")
        .arg(&policy_path)
        // Port 0: the system picks a free one, and the server says which
        // (no race with other tests for a port chosen before it listens).
        .arg("--listen")
        .arg("127.0.0.1:0")
        .args(extra)
        .args(files)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start airlock");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = mpsc::channel();
    let (said, start_log) = mpsc::channel();
    let log = Arc::new(Mutex::new(Vec::new()));
    let all = log.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = said.send(line.clone());
            if let Ok(mut all) = all.lock()
                && !line.contains("connection limit")
            {
                all.push(line.clone());
            }
            // Connection-limit warnings of the keep-alive attack would drown
            // everything else.
            if !line.contains("connection limit") {
                eprintln!("[airlock] {line}");
            }
            if let Some(addr) = listening_address(&line) {
                let _ = tx.send(addr);
            }
        }
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(120))
        .expect("airlock did not start listening");
    Served {
        child,
        addr,
        start_log: start_log.try_iter().collect(),
        log,
        _dir: dir,
    }
}

pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.body))
    }

    /// The JSON messages of an SSE body.
    pub fn events(&self) -> Vec<Value> {
        sse_messages(&self.body)
    }
}

pub fn sse_messages(text: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str(d).ok())
        .collect()
}

/// Sends one request (Connection: close) and reads the whole response.
/// The address in `airlock: listening on http://ADDR/mcp …`.
pub fn listening_address(line: &str) -> Option<SocketAddr> {
    let rest = line
        .split("listening on http://")
        .nth(1)
        .or_else(|| line.split("listening on https://").nth(1))?;
    rest.split('/').next()?.parse().ok()
}

pub fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Reply {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    let mut head = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        head.push_str(&format!("Host: {addr}\r\n"));
    }
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if !headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("content-length"))
    {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).expect("write head");
    // The server may answer (413) before reading everything.
    let _ = stream.write_all(body);
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    parse_response(&raw)
}

pub fn parse_response(raw: &[u8]) -> Reply {
    let text = String::from_utf8_lossy(raw);
    let (head, rest) = text
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("no response head: {text:?}"));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .expect("status");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    let body = if chunked {
        dechunk(rest)
    } else {
        rest.to_string()
    };
    Reply {
        status,
        headers,
        body,
    }
}

pub fn dechunk(mut text: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = text.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if size == 0 || rest.len() < size {
            break;
        }
        out.push_str(&rest[..size]);
        text = rest[size..].trim_start_matches("\r\n");
    }
    out
}

pub const JSON: (&str, &str) = ("Content-Type", "application/json");
pub const ACCEPT: (&str, &str) = ("Accept", "application/json, text/event-stream");

/// An MCP client session over HTTP.
pub struct Mcp {
    pub addr: SocketAddr,
    pub session: String,
    pub extra: Vec<(String, String)>,
    next: u64,
}

impl Mcp {
    /// Opens a 2025-11-25 session (`initialize`, `notifications/initialized`)
    /// with `capabilities`, sending `extra` headers with every request.
    pub fn connect(addr: SocketAddr, capabilities: Value, extra: &[(&str, &str)]) -> Mcp {
        let extra: Vec<(String, String)> = extra
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let body = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
            "protocolVersion":"2025-11-25","capabilities":capabilities,
            "clientInfo":{"name":"test","version":"1"}}});
        let mut headers: Vec<(&str, &str)> = vec![JSON, ACCEPT];
        headers.extend(extra.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        let reply = http(addr, "POST", "/mcp", &headers, body.to_string().as_bytes());
        assert_eq!(reply.status, 200, "{}", reply.body);
        assert_eq!(reply.json()["result"]["protocolVersion"], "2025-11-25");
        let session = reply
            .header("mcp-session-id")
            .expect("Mcp-Session-Id")
            .to_string();
        assert!(session.len() >= 32, "session ids are long and random");
        let mcp = Mcp {
            addr,
            session,
            extra,
            next: 1,
        };
        let r = mcp.post(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}));
        assert_eq!(r.status, 202);
        mcp
    }

    pub fn post(&self, body: &Value) -> Reply {
        self.post_raw(body.to_string().as_bytes())
    }

    /// POSTs `body` as it is (it need not be valid JSON) in the session.
    pub fn post_raw(&self, body: &[u8]) -> Reply {
        let mut headers: Vec<(&str, &str)> = vec![
            JSON,
            ACCEPT,
            ("Mcp-Session-Id", &self.session),
            ("MCP-Protocol-Version", "2025-11-25"),
        ];
        headers.extend(self.extra.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        http(self.addr, "POST", "/mcp", &headers, body)
    }

    /// POSTs `body` (a request, or a batch) in the session, with its
    /// `extra` headers, on a connection of its own and reads its answer as
    /// it streams, at most `patience` between
    /// reads; the first message `asked` picks from it (a request to the
    /// client) is answered with `reply` by a POST of its own, as a client
    /// does. That request, and the response to `body`.
    pub fn call_answering(
        &self,
        body: &Value,
        patience: Duration,
        asked: impl Fn(&Value) -> bool,
        reply: Value,
    ) -> (Value, Value) {
        let mut stream = TcpStream::connect(self.addr).expect("connect");
        stream.set_read_timeout(Some(patience)).expect("timeout");
        let text = body.to_string();
        let extra: String = self
            .extra
            .iter()
            .map(|(name, value)| format!("{name}: {value}\r\n"))
            .collect();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMcp-Session-Id: {}\r\n\
             MCP-Protocol-Version: 2025-11-25\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n{text}",
            self.addr,
            self.session,
            text.len()
        );
        stream.write_all(head.as_bytes()).expect("write");
        let mut seen = Vec::new();
        let request = loop {
            let mut buf = [0u8; 4096];
            let n = stream.read(&mut buf).expect("read");
            assert!(
                n > 0,
                "no request reached the client; the call answered: {}",
                parse_response(&seen).body
            );
            seen.extend_from_slice(&buf[..n]);
            let found = sse_messages(&String::from_utf8_lossy(&seen))
                .into_iter()
                .find(|m| asked(m));
            if let Some(request) = found {
                break request;
            }
        };
        let answered = self.post(&json!({"jsonrpc": "2.0", "id": request["id"], "result": reply}));
        assert_eq!(answered.status, 202, "{}", answered.body);
        let _ = stream.read_to_end(&mut seen);
        let response = parse_response(&seen)
            .events()
            .into_iter()
            .find(|m| m.get("method").is_none() && m["id"] == body["id"])
            .unwrap_or_else(|| panic!("no response: {}", String::from_utf8_lossy(&seen)));
        (request, response)
    }

    /// Sends a request and returns its response (from JSON or SSE).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        let reply = self.post(&json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}));
        assert_eq!(reply.status, 200, "{}", reply.body);
        let ct = reply.header("content-type").unwrap_or("").to_string();
        let messages = if ct.starts_with("text/event-stream") {
            reply.events()
        } else {
            vec![reply.json()]
        };
        messages
            .into_iter()
            .find(|m| m["id"] == json!(id))
            .expect("a response")
    }
}

// --- revision 2026-07-28 -------------------------------------------------------

/// The stateless revision.
pub const MODERN: &str = "2026-07-28";

/// The per-request `_meta` of a 2026-07-28 request.
pub fn meta(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "modern-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    })
}

/// A modern request body.
pub fn body(id: u64, method: &str, mut params: Value, capabilities: Value) -> Value {
    params["_meta"] = meta(capabilities);
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// POSTs a modern request with the headers its body calls for
/// (`name` is the Mcp-Name value, if any), plus `extra`.
pub fn modern(addr: SocketAddr, body: &Value, name: Option<&str>, extra: &[(&str, &str)]) -> Reply {
    let method = body["method"].as_str().unwrap_or("").to_string();
    let mut headers: Vec<(&str, &str)> = vec![
        JSON,
        ACCEPT,
        ("MCP-Protocol-Version", MODERN),
        ("Mcp-Method", &method),
    ];
    if let Some(name) = name {
        headers.push(("Mcp-Name", name));
    }
    headers.extend_from_slice(extra);
    http(addr, "POST", "/mcp", &headers, body.to_string().as_bytes())
}

/// The response message of a reply (JSON or the last SSE event).
pub fn answer(reply: &Reply) -> Value {
    if reply
        .header("content-type")
        .is_some_and(|c| c.starts_with("text/event-stream"))
    {
        reply.events().pop().expect("an SSE response")
    } else {
        reply.json()
    }
}

/// How many calls ran on the async thread that received them, from
/// `/metrics`.
pub fn calls_inline(addr: std::net::SocketAddr) -> u64 {
    let metrics = http(addr, "GET", "/metrics", &[], b"");
    assert_eq!(metrics.status, 200, "{}", metrics.body);
    metrics
        .body
        .lines()
        .find_map(|l| l.strip_prefix("airlock_calls_inline_total "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no inline counter in {}", metrics.body))
}
