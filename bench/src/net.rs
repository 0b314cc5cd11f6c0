//! Out-of-process measurements against `airlock serve`: HTTP with a small
//! keep-alive load generator of our own, stdio with a pipelining client,
//! and startup time.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::stats::{Stats, stats};

/// A running `airlock serve`, stopped on drop.
pub struct Server {
    child: Child,
    pub addr: String,
    pub ready_after: Duration,
}

impl Server {
    /// The server's process id, to watch what requests cost it.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `airlock serve --listen 127.0.0.1:0 ARGS…` and waits for its
/// "listening on" line; `ready_after` is the time from spawn to that line.
pub fn serve(airlock: &Path, cache: &Path, args: &[&str]) -> Result<Server> {
    serve_with(airlock, cache, args, &[])
}

/// Like [`serve`], with extra environment variables for the server.
pub fn serve_with(
    airlock: &Path,
    cache: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> Result<Server> {
    let mut command = serve_command(airlock, cache);
    command
        .args(["--max-calls", "1024"])
        .args(args)
        .envs(env.iter().copied());
    listening(command)
}

/// `airlock serve` on a free loopback port with `cache` as its compile
/// cache, serving once every component is loaded, and otherwise its
/// defaults: start it with [`listening`].
pub fn serve_command(airlock: &Path, cache: &Path) -> Command {
    let mut command = Command::new(airlock);
    command
        .arg("serve")
        // Measured from a start with every component loaded.
        .args(["--load-wait", "600"])
        .args(["--listen", "127.0.0.1:0"])
        .env("AIRLOCK_CACHE_DIR", cache);
    command
}

/// Starts `command` (a server printing "listening on http://ADDR/…" on
/// stderr, as `airlock serve` and the native floor do) and waits for it.
pub fn listening(mut command: Command) -> Result<Server> {
    let started = Instant::now();
    let program = command.get_program().to_string_lossy().into_owned();
    let mut child = command
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start {program}"))?;
    let stderr = child.stderr.take().context("stderr")?;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut sent = false;
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if !sent && let Some(rest) = line.split("listening on http://").nth(1) {
                let addr = rest.split('/').next().unwrap_or_default().to_string();
                let _ = tx.send(Ok(addr));
                sent = true;
            } else if !sent && line.starts_with("error") {
                let _ = tx.send(Err(line));
                sent = true;
            }
        }
    });
    let mut server = Server {
        child,
        addr: String::new(),
        ready_after: Duration::ZERO,
    };
    match rx.recv_timeout(Duration::from_secs(120)) {
        Ok(Ok(addr)) => {
            server.ready_after = started.elapsed();
            server.addr = addr;
            Ok(server)
        }
        Ok(Err(line)) => bail!("{program}: {line}"),
        Err(_) => bail!("{program} did not start within 120 s"),
    }
}

/// One HTTP/1.1 request on a keep-alive connection; returns the status,
/// the headers and the body.
async fn exchange(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
    request: &[u8],
) -> Result<(u16, String, Vec<u8>)> {
    stream.write_all(request).await?;
    buf.clear();
    let mut chunk = [0u8; 16 * 1024];
    let head_end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            bail!("connection closed");
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let header = |name: &str| {
        head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
        })
    };
    // An SSE answer (rmcp's, for the native floor) comes chunked.
    if header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        let body = read_chunked(stream, buf, head_end).await?;
        return Ok((status, head, body));
    }
    let length: usize = match header("content-length") {
        Some(v) => v.parse().context("bad content-length")?,
        None if status == 202 || status == 204 => 0,
        None => bail!("response without content-length or chunked body"),
    };
    while buf.len() < head_end + length {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            bail!("connection closed in the body");
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Ok((status, head, buf[head_end..head_end + length].to_vec()))
}

/// The body of a chunked response whose head ends at `start` of `buf`,
/// reading from `stream` until the last (empty) chunk.
async fn read_chunked(stream: &mut TcpStream, buf: &mut Vec<u8>, start: usize) -> Result<Vec<u8>> {
    let mut body = Vec::new();
    let mut at = start;
    let mut chunk = [0u8; 16 * 1024];
    loop {
        // Complete chunk: "SIZE\r\n" DATA "\r\n".
        if let Some(line) = buf[at..].windows(2).position(|w| w == b"\r\n") {
            let size_text = String::from_utf8_lossy(&buf[at..at + line]).to_string();
            let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
                .with_context(|| format!("bad chunk size {size_text:?}"))?;
            let data = at + line + 2;
            if buf.len() >= data + size + 2 {
                if size == 0 {
                    return Ok(body);
                }
                body.extend_from_slice(&buf[data..data + size]);
                at = data + size + 2;
                continue;
            }
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            bail!("connection closed in a chunked body");
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

fn request(addr: &str, path: &str, session: Option<&str>, body: &str) -> Vec<u8> {
    let session: Vec<(&str, &str)> = session.map(|s| ("Mcp-Session-Id", s)).into_iter().collect();
    request_with(addr, path, &session, body)
}

/// A POST of `body` to `path` with the `headers` given.
pub fn request_with(addr: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Vec<u8> {
    let headers: String = headers
        .iter()
        .map(|(k, v)| format!("{k}: {v}\r\n"))
        .collect();
    format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{headers}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Opens an MCP session (initialize + initialized); returns its id.
pub fn mcp_session(addr: &str) -> Result<String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let mut stream = TcpStream::connect(addr).await?;
        let mut buf = Vec::new();
        let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"airlock-bench","version":"0"}}}"#;
        let (status, head, _) = exchange(&mut stream, &mut buf, &request(addr, "/mcp", None, init)).await?;
        if status != 200 {
            bail!("initialize: HTTP {status}");
        }
        let id = head
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case("mcp-session-id").then(|| v.trim().to_string())
            })
            .context("initialize: no Mcp-Session-Id")?;
        let note = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        exchange(&mut stream, &mut buf, &request(addr, "/mcp", Some(&id), note)).await?;
        Ok(id)
    })
}

/// What a burst of calls at once measured.
pub struct Burst {
    /// From the first request written to the last answer read.
    pub wall: Duration,
    pub errors: u64,
}

/// `n` connections opened first, then one request sent on each at once;
/// waits for every answer. (An answer that is not HTTP 200 or holds an
/// error counts as an error, as in [`load`].)
pub fn burst(addr: &str, session: Option<&str>, body: &str, n: usize) -> Result<Burst> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let req = request(addr, "/mcp", session, body);
    rt.block_on(async {
        let mut streams = Vec::with_capacity(n);
        for _ in 0..n {
            let stream = TcpStream::connect(addr).await?;
            stream.set_nodelay(true)?;
            streams.push(stream);
        }
        let go = std::sync::Arc::new(tokio::sync::Barrier::new(n + 1));
        let mut tasks = Vec::with_capacity(n);
        for mut stream in streams {
            let (req, go) = (req.clone(), go.clone());
            tasks.push(tokio::spawn(async move {
                let mut buf = Vec::new();
                go.wait().await;
                match exchange(&mut stream, &mut buf, &req).await {
                    Ok((status, _, body)) => {
                        status != 200
                            || contains(&body, br#""error":{"#)
                            || contains(&body, br#""isError":true"#)
                    }
                    Err(_) => true,
                }
            }));
        }
        go.wait().await;
        let started = Instant::now();
        let mut errors = 0;
        for task in tasks {
            errors += u64::from(task.await?);
        }
        Ok(Burst {
            wall: started.elapsed(),
            errors,
        })
    })
}

/// A process's `VmHWM` (peak resident set) or `VmRSS` in KiB.
pub fn status_kib(pid: u32, field: &str) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

/// What a load run measured.
#[derive(Debug, Clone, Copy, Default)]
pub struct Load {
    pub per_sec: f64,
    pub lat: Stats,
    pub errors: u64,
    pub calls: u64,
    /// What each request cost the server, when its process was watched.
    pub server: Option<Cost>,
}

/// The server's CPU time and context switches per request, over the
/// measured window. Steadier than calls/s on a shared machine, and free of
/// the load generator's own share of the two cores.
#[derive(Debug, Clone, Copy, Default)]
pub struct Cost {
    pub cpu_us: f64,
    pub switches: f64,
}

/// A process's CPU time (user + system, all threads, ended ones included)
/// and the context switches of each of its live threads so far.
struct Usage {
    cpu_ticks: u64,
    switches: std::collections::HashMap<String, u64>,
}

impl Usage {
    /// Context switches since `before`: of the threads alive now, those
    /// alive then count from then, newer ones from their start. (Threads
    /// that ended in between are missed: the lanes end surplus threads.)
    fn switches_since(&self, before: &Usage) -> u64 {
        self.switches
            .iter()
            .map(|(tid, n)| n - before.switches.get(tid).copied().unwrap_or(0).min(*n))
            .sum()
    }
}

/// `/proc` counts CPU time in USER_HZ ticks, 100 per second on Linux.
const TICKS_PER_SEC: f64 = 100.0;

fn usage(pid: u32) -> Option<Usage> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which may hold spaces: utime and
    // stime are the 14th and 15th fields of the line.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let cpu_ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    let mut switches = std::collections::HashMap::new();
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))
        .ok()?
        .flatten()
    {
        let Ok(status) = std::fs::read_to_string(task.path().join("status")) else {
            continue; // the thread ended meanwhile
        };
        let n = status
            .lines()
            .filter(|l| l.contains("ctxt_switches"))
            .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            .sum::<u64>();
        switches.insert(task.file_name().to_string_lossy().into_owned(), n);
    }
    Some(Usage {
        cpu_ticks,
        switches,
    })
}

/// `concurrency` keep-alive connections, each sending `body` to `path` and
/// waiting for the answer, for `budget` after a short warm-up. A response
/// that is not HTTP 200, or whose body holds a JSON-RPC error or an
/// `isError: true` result, counts as an error. The CPU time and context
/// switches of the `server` processes (replicas, a load balancer, Redis:
/// summed) over the measured window are divided among the requests
/// answered in it.
pub fn load(
    addr: &str,
    path: &str,
    session: Option<&str>,
    body: &str,
    concurrency: usize,
    budget: Duration,
    server: &[u32],
) -> Result<Load> {
    load_request(
        addr,
        request(addr, path, session, body),
        concurrency,
        budget,
        server,
    )
}

/// `req` (a request made by [`request_with`]) with its JSON-RPC `"id":1`
/// replaced by `"id":ID` and its Content-Length fixed; unchanged if it has
/// no such id.
fn with_id(req: &[u8], id: usize) -> Vec<u8> {
    let Some(head_end) = req.windows(4).position(|w| w == b"\r\n\r\n") else {
        return req.to_vec();
    };
    let (head, body) = (&req[..head_end], &req[head_end + 4..]);
    let body = String::from_utf8_lossy(body);
    if !body.contains(r#""id":1,"#) {
        return req.to_vec();
    }
    let body = body.replacen(r#""id":1,"#, &format!(r#""id":{id},"#), 1);
    let head: String = String::from_utf8_lossy(head)
        .split("\r\n")
        .map(|line| match line.split_once(':') {
            Some((k, _)) if k.eq_ignore_ascii_case("content-length") => {
                format!("Content-Length: {}", body.len())
            }
            _ => line.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\r\n");
    format!("{head}\r\n\r\n{body}").into_bytes()
}

/// [`load`] with a request made by [`request_with`].
pub fn load_request(
    addr: &str,
    req: Vec<u8>,
    concurrency: usize,
    budget: Duration,
    server: &[u32],
) -> Result<Load> {
    let server = server.to_vec();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let warm_end = Instant::now() + budget / 5;
        let end = warm_end + budget;
        let mut tasks = Vec::new();
        for conn in 0..concurrency {
            // JSON-RPC ids must differ among the requests in flight in one
            // session (rmcp routes answers by id): one per connection.
            let req = with_id(&req, conn + 1);
            let addr = addr.to_string();
            tasks.push(tokio::spawn(async move {
                let mut lat = Vec::new();
                let mut errors = 0u64;
                let mut stream = TcpStream::connect(&addr).await?;
                stream.set_nodelay(true)?;
                let mut buf = Vec::with_capacity(16 * 1024);
                loop {
                    let t = Instant::now();
                    if t >= end {
                        break;
                    }
                    let ok = match exchange(&mut stream, &mut buf, &req).await {
                        Ok((status, _, body)) => {
                            status == 200
                                && !contains(&body, br#""error":{"#)
                                && !contains(&body, br#""isError":true"#)
                        }
                        Err(_) => {
                            stream = TcpStream::connect(&addr).await?;
                            false
                        }
                    };
                    if t >= warm_end {
                        lat.push(t.elapsed().as_nanos() as f64);
                        errors += u64::from(!ok);
                    }
                }
                anyhow::Ok((lat, errors))
            }));
        }
        let watched = (!server.is_empty()).then(|| {
            tokio::spawn(async move {
                tokio::time::sleep_until(warm_end.into()).await;
                let before: Option<Vec<Usage>> = server.iter().map(|&pid| usage(pid)).collect();
                tokio::time::sleep_until(end.into()).await;
                let after: Option<Vec<Usage>> = server.iter().map(|&pid| usage(pid)).collect();
                before.zip(after)
            })
        });
        let mut all = Vec::new();
        let mut errors = 0;
        for task in tasks {
            let (lat, e) = task.await??;
            all.extend(lat);
            errors += e;
        }
        let calls = all.len() as u64;
        let server = match watched {
            Some(task) => task.await?.map(|(before, after)| {
                let (ticks, switches) = before.iter().zip(&after).fold((0, 0), |(t, s), (b, a)| {
                    (t + a.cpu_ticks - b.cpu_ticks, s + a.switches_since(b))
                });
                Cost {
                    cpu_us: ticks as f64 / TICKS_PER_SEC * 1e6 / calls.max(1) as f64,
                    switches: switches as f64 / calls.max(1) as f64,
                }
            }),
            None => None,
        };
        Ok(Load {
            per_sec: calls as f64 / budget.as_secs_f64(),
            lat: stats(all),
            errors,
            calls,
            server,
        })
    })
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// `airlock serve --stdio`: `calls` tools/call requests pipelined with up to
/// `window` in flight; returns calls/s and the number of error responses.
pub fn stdio(
    airlock: &Path,
    cache: &Path,
    wasm: &Path,
    policy: &Path,
    calls: usize,
    window: usize,
) -> Result<(f64, u64)> {
    let mut child = Command::new(airlock)
        .args(["serve", "--stdio", "--load-wait", "600", "--policy"])
        .arg(policy)
        .arg(wasm)
        .env("AIRLOCK_CACHE_DIR", cache)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let mut stdin = std::io::BufWriter::new(child.stdin.take().context("stdin")?);
    let mut stdout = BufReader::new(child.stdout.take().context("stdout")?);
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"2025-06-18","capabilities":{{}},"clientInfo":{{"name":"airlock-bench","version":"0"}}}}}}"#
    )?;
    stdin.flush()?;
    let mut line = String::new();
    stdout.read_line(&mut line)?;
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
    )?;
    let (credit_tx, credit_rx) = mpsc::channel::<()>();
    for _ in 0..window {
        credit_tx.send(())?;
    }
    let reader = std::thread::spawn(move || {
        let mut done = 0usize;
        let mut errors = 0u64;
        let mut line = String::new();
        while done < calls {
            line.clear();
            match stdout.read_line(&mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            if !line.contains(r#""id":"#) {
                continue; // a notification
            }
            done += 1;
            if line.contains(r#""error":{"#) || line.contains(r#""isError":true"#) {
                errors += 1;
            }
            let _ = credit_tx.send(());
        }
        (done, errors)
    });
    let start = Instant::now();
    for id in 1..=calls {
        // Take a credit; when none is left, flush what is written (requests
        // travel in batches) and wait for an answer.
        if credit_rx.try_recv().is_err() {
            stdin.flush()?;
            credit_rx.recv()?;
        }
        writeln!(
            stdin,
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"add","arguments":{{"a":40,"b":2}}}}}}"#
        )?;
    }
    stdin.flush()?;
    let (done, errors) = reader
        .join()
        .map_err(|_| anyhow::anyhow!("reader panicked"))?;
    let elapsed = start.elapsed();
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    if done < calls {
        bail!("stdio: only {done} of {calls} answers");
    }
    Ok((calls as f64 / elapsed.as_secs_f64(), errors))
}

/// 50 copies of the bench component with distinct tool names (`add_01`…):
/// the two digits of its `@@AIRLOCK_BENCH_ID=00@@` marker are rewritten.
pub fn fifty_components(wasm: &Path, dir: &Path) -> Result<Vec<PathBuf>> {
    let bytes = std::fs::read(wasm)?;
    let marker = b"@@AIRLOCK_BENCH_ID=";
    let at = bytes
        .windows(marker.len())
        .position(|w| w == marker)
        .context("the bench component has no ID marker")?
        + marker.len();
    std::fs::create_dir_all(dir)?;
    let mut out = Vec::new();
    for i in 0..50u32 {
        let mut copy = bytes.clone();
        copy[at..at + 2].copy_from_slice(format!("{:02}", i + 1).as_bytes());
        let path = dir.join(format!("bench_{:02}.wasm", i + 1));
        std::fs::write(&path, copy)?;
        out.push(path);
    }
    Ok(out)
}

/// One request on a connection of its own; the status and the body.
pub fn post_once(addr: &str, req: &[u8]) -> Result<(u16, Vec<u8>)> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let mut stream = TcpStream::connect(addr).await?;
        let mut buf = Vec::new();
        let (status, _, body) = exchange(&mut stream, &mut buf, req).await?;
        Ok((status, body))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn with_id_gives_each_connection_its_own_json_rpc_id_and_a_matching_length() {
        let req = request("127.0.0.1:1", "/mcp", Some("s"), crate::CALL_ADD);
        let out = String::from_utf8(with_id(&req, 64)).unwrap();
        let (head, body) = out.split_once("\r\n\r\n").unwrap();
        assert!(body.starts_with(r#"{"jsonrpc":"2.0","id":64,"method":"tools/call""#));
        assert!(head.contains(&format!("Content-Length: {}", body.len())));
        assert!(head.contains("Mcp-Session-Id: s"));
        // Without an id (a notification), the request is left as it is.
        let note = request(
            "127.0.0.1:1",
            "/mcp",
            None,
            r#"{"jsonrpc":"2.0","method":"x"}"#,
        );
        assert_eq!(with_id(&note, 7), note);
    }
}
