//! The stand-in servers the tests talk to in place of the real Internet:
//! one [`Server`], parameterized by what it speaks ([`Server::http`],
//! [`Server::https`], [`Server::canned`], [`Server::holding`],
//! [`Server::stalled`]) and, for HTTP, by what it answers each request
//! ([`Answer`]: at once, late, in paced parts, a trickle, endlessly, never,
//! or by reading whatever is sent).
//!
//! Every server listens on loopback only (127.0.0.1, port 0 unless a test
//! names another loopback address), counts the connections it accepts, and
//! records the head of every request that arrived ([`Server::seen`]). It
//! stops when dropped: the accepting thread ends, every connection still
//! open is shut down (which ends a read or write blocked on it), and every
//! pause ends early, so no thread outlives its server. A server kept in a
//! `static` fixture lives as long as the test process.
//!
//! A client that goes away ends an answer: writing to it fails, and that is
//! what a stand-in expects, not an error of the test.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// How long a server waits for a request's head before giving up on it.
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);

/// How often a server looks whether it was told to stop (between accepts,
/// and during an answer's pauses).
const TICK: Duration = Duration::from_millis(5);

/// What a test server answers to one HTTP request: the head says 200
/// unless given, `Content-Length` as declared, and `Connection: close` (a
/// stand-in answers one request per connection, then closes it).
#[derive(Clone, Debug)]
pub enum Answer {
    /// `status` with `headers` and the whole `body`, then the end.
    Full {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    },
    /// 200 declaring `length` bytes: the head at once, then each part
    /// after its pause, then the end (however many bytes that made).
    Paced {
        length: u64,
        parts: Vec<(Duration, Vec<u8>)>,
    },
    /// 200 declaring `length` bytes, then `bytes` bytes (`x`) every
    /// `every`, for `lasting` at most, or until the client goes.
    Trickle {
        length: u64,
        every: Duration,
        bytes: usize,
        lasting: Duration,
    },
    /// 200 with a chunked body that never ends (until the client goes).
    Endless,
    /// The answer, after a pause.
    Late(Duration, Box<Answer>),
    /// Nothing: the connection held open, silent, for this long.
    Silent(Duration),
    /// Nothing: whatever the client sends is read, until it closes.
    Drain,
}

impl Answer {
    /// 200 with `body`.
    pub fn ok(body: impl Into<Vec<u8>>) -> Answer {
        Answer::status(200, body)
    }

    /// `status` with `body`.
    pub fn status(status: u16, body: impl Into<Vec<u8>>) -> Answer {
        Answer::Full {
            status,
            headers: Vec::new(),
            body: body.into(),
        }
    }

    /// 200 declaring `length` bytes, then four bytes and the end.
    pub fn declares(length: u64) -> Answer {
        Answer::Paced {
            length,
            parts: vec![(Duration::ZERO, b"xxxx".to_vec())],
        }
    }

    /// 200 declaring `length` bytes, then not one byte: the connection is
    /// held open for `hold`, then closed.
    pub fn head_only(length: u64, hold: Duration) -> Answer {
        Answer::Paced {
            length,
            parts: vec![(hold, Vec::new())],
        }
    }
}

/// One request's head as a server read it.
#[derive(Clone, Debug)]
pub struct Request {
    /// The request line: `GET /path HTTP/1.1`.
    pub line: String,
    /// The request target: `/path?query`.
    pub target: String,
    /// Its path: `/path`.
    pub path: String,
    /// Every header line, names lower case, in the order they arrived.
    pub headers: Vec<(String, String)>,
}

impl Request {
    /// Every value of header `name` (lower case).
    pub fn header(&self, name: &str) -> Vec<String> {
        self.headers
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
            .collect()
    }
}

/// What decides a server's answer to each request.
pub type Route = Arc<dyn Fn(&Request) -> Answer + Send + Sync>;

/// What a server does with each connection it accepts.
enum Speaks {
    /// HTTP/1.1: reads a request's head, records it, answers the route's
    /// [`Answer`] for it.
    Http(Route),
    /// The same over TLS with these settings (a client that refuses the
    /// certificate, or speaks plain HTTP, ends at the handshake).
    Https(Arc<rustls::ServerConfig>, Route),
    /// Whatever arrives first (one read of at most 1 KiB), then these
    /// bytes and the end: for clients that do not speak HTTP.
    Canned(Vec<u8>),
    /// Reads and drops whatever arrives until the client closes; says
    /// nothing, records nothing.
    Holding,
    /// Neither reads nor says a word: every connection held open, silent,
    /// until the server stops.
    Stalled,
}

/// What the accepting thread, the connections' threads and the test share.
#[derive(Default)]
struct Shared {
    stop: AtomicBool,
    accepted: AtomicUsize,
    seen: Mutex<Vec<Request>>,
    /// A handle on every connection still open, to shut it down on stop.
    open: Mutex<HashMap<usize, TcpStream>>,
}

impl Shared {
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Waits `pause`, or less when the server stops; whether it did not.
    fn pause(&self, pause: Duration) -> bool {
        let until = Instant::now() + pause;
        while !self.stopped() {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return true;
            }
            thread::sleep(left.min(TICK));
        }
        false
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .expect("a stand-in server's lock (poisoned by a panic)")
}

/// A stand-in server on loopback; stops when dropped (see the module).
pub struct Server {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<usize>>,
}

impl Server {
    /// HTTP on 127.0.0.1: answers each request what `route` says for it.
    pub fn http(route: impl Fn(&Request) -> Answer + Send + Sync + 'static) -> Server {
        Server::start(loopback(), Speaks::Http(Arc::new(route)))
    }

    /// [`Server::http`] on `addr`, a loopback address (another than
    /// 127.0.0.1, or a port another server of the test has).
    pub fn http_on(
        addr: SocketAddr,
        route: impl Fn(&Request) -> Answer + Send + Sync + 'static,
    ) -> Server {
        Server::start(addr, Speaks::Http(Arc::new(route)))
    }

    /// HTTPS on 127.0.0.1 with the TLS settings `tls` (a certificate a
    /// test CA signed, `support::tls`): answers as [`Server::http`].
    pub fn https(
        tls: Arc<rustls::ServerConfig>,
        route: impl Fn(&Request) -> Answer + Send + Sync + 'static,
    ) -> Server {
        Server::start(loopback(), Speaks::Https(tls, Arc::new(route)))
    }

    /// Answers whatever arrives first with `bytes`, whatever the client
    /// speaks (a TLS handshake gets a plain HTTP answer).
    pub fn canned(bytes: impl Into<Vec<u8>>) -> Server {
        Server::start(loopback(), Speaks::Canned(bytes.into()))
    }

    /// Accepts every connection and keeps it open until the other side
    /// closes it, reading whatever arrives and answering nothing.
    pub fn holding() -> Server {
        Server::start(loopback(), Speaks::Holding)
    }

    /// Accepts TCP connections and never says a word (a TLS handshake
    /// with it stalls); holds them until dropped.
    pub fn stalled() -> Server {
        Server::start(loopback(), Speaks::Stalled)
    }

    fn start(addr: SocketAddr, speaks: Speaks) -> Server {
        assert!(
            addr.ip().is_loopback(),
            "stand-in servers listen on loopback only, not {addr}"
        );
        let listener = TcpListener::bind(addr)
            .unwrap_or_else(|e| panic!("bind a stand-in server on {addr}: {e}"));
        let addr = listener.local_addr().expect("a stand-in server's address");
        // Not blocking, so that the accepting thread sees the stop.
        listener
            .set_nonblocking(true)
            .expect("a non-blocking listener");
        let shared = Arc::new(Shared::default());
        let state = shared.clone();
        let acceptor = thread::Builder::new()
            .name(format!("stand-in {addr}"))
            .spawn(move || accept(&listener, speaks, &state))
            .expect("spawn a stand-in server");
        Server {
            addr,
            shared,
            acceptor: Some(acceptor),
        }
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The requests whose head arrived so far, in order.
    pub fn seen(&self) -> Vec<Request> {
        lock(&self.shared.seen).clone()
    }

    /// The request lines of [`Server::seen`]: `GET /path HTTP/1.1`.
    pub fn lines(&self) -> Vec<String> {
        self.seen().into_iter().map(|r| r.line).collect()
    }

    /// Connections accepted so far (each counted at once, whether or not
    /// a request followed).
    pub fn connections(&self) -> usize {
        self.shared.accepted.load(Ordering::SeqCst)
    }

    /// Fails when anyone connected. A refused request is refused before
    /// any connection; a stray one is given time to arrive, so that the
    /// check means something.
    #[track_caller]
    pub fn assert_not_reached(&self) {
        thread::sleep(Duration::from_millis(50));
        assert_eq!(
            self.connections(),
            0,
            "server was reached: {:?}",
            self.lines()
        );
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        let Some(acceptor) = self.acceptor.take() else {
            return;
        };
        let panicked = acceptor.join().unwrap_or(1);
        if panicked > 0 && !thread::panicking() {
            panic!(
                "{panicked} thread(s) of the stand-in server on {} panicked",
                self.addr
            );
        }
    }
}

fn loopback() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

/// Accepts connections until the server stops, one thread each (none for
/// a stalled server); then shuts down those still open and waits for
/// every thread. Returns how many of them panicked.
fn accept(listener: &TcpListener, speaks: Speaks, shared: &Arc<Shared>) -> usize {
    let mut threads: Vec<JoinHandle<()>> = Vec::new();
    let mut panicked = 0;
    let mut next = 0;
    while !shared.stopped() {
        let stream = match listener.accept() {
            Ok((stream, _)) => stream,
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                thread::sleep(TICK);
                continue;
            }
            // A connection that went before it was accepted.
            Err(_) => continue,
        };
        shared.accepted.fetch_add(1, Ordering::SeqCst);
        // Accepted sockets do not inherit the listener's mode on Linux;
        // made sure of here, as every connection reads and writes blocking.
        if stream.set_nonblocking(false).is_err() {
            continue;
        }
        let id = next;
        next += 1;
        if let Ok(handle) = stream.try_clone() {
            lock(&shared.open).insert(id, handle);
        }
        if let Speaks::Stalled = speaks {
            // Held in `open` (and nowhere else) until the server stops.
            drop(stream);
            continue;
        }
        let (speaks, shared) = (speaks.clone_for_connection(), shared.clone());
        let (finished, running): (Vec<_>, Vec<_>) =
            threads.into_iter().partition(|t| t.is_finished());
        panicked += joined_panicking(finished);
        threads = running;
        let spawned = thread::Builder::new()
            .name(format!("stand-in connection {id}"))
            .spawn(move || {
                converse(stream, &speaks, &shared);
                lock(&shared.open).remove(&id);
            });
        match spawned {
            Ok(thread) => threads.push(thread),
            Err(e) => panic!("spawn a stand-in server's connection thread: {e}"),
        }
    }
    for (_, stream) in lock(&shared.open).drain() {
        // Ends every read or write blocked on it; it may have closed already.
        let _ = stream.shutdown(Shutdown::Both);
    }
    panicked + joined_panicking(threads)
}

/// Waits for `threads`; how many of them panicked.
fn joined_panicking(threads: Vec<JoinHandle<()>>) -> usize {
    threads
        .into_iter()
        .map(JoinHandle::join)
        .filter(Result::is_err)
        .count()
}

impl Speaks {
    /// What a connection's thread needs of it (the stalled server has none).
    fn clone_for_connection(&self) -> Speaks {
        match self {
            Speaks::Http(route) => Speaks::Http(route.clone()),
            Speaks::Https(tls, route) => Speaks::Https(tls.clone(), route.clone()),
            Speaks::Canned(bytes) => Speaks::Canned(bytes.clone()),
            Speaks::Holding => Speaks::Holding,
            Speaks::Stalled => Speaks::Stalled,
        }
    }
}

/// One connection, from its first byte to its end.
fn converse(mut stream: TcpStream, speaks: &Speaks, shared: &Shared) {
    match speaks {
        Speaks::Http(route) => {
            if stream.set_read_timeout(Some(HEAD_TIMEOUT)).is_ok() {
                exchange(stream, route, shared);
            }
        }
        Speaks::Https(tls, route) => {
            if stream.set_read_timeout(Some(HEAD_TIMEOUT)).is_err() {
                return;
            }
            let Ok(connection) = rustls::ServerConnection::new(tls.clone()) else {
                return;
            };
            let mut tls = exchange(rustls::StreamOwned::new(connection, stream), route, shared);
            // Says the answer is complete, as an HTTPS server does.
            tls.conn.send_close_notify();
            let _ = tls.flush();
        }
        Speaks::Canned(bytes) => {
            let mut buf = [0u8; 1024];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(bytes);
        }
        Speaks::Holding => {
            let _ = std::io::copy(&mut stream, &mut std::io::sink());
        }
        Speaks::Stalled => {}
    }
}

/// Reads one request's head and answers it; hands the stream back.
fn exchange<S: Read + Write>(stream: S, route: &Route, shared: &Shared) -> S {
    let mut reader = BufReader::new(stream);
    if let Some(request) = read_head(&mut reader) {
        lock(&shared.seen).push(request.clone());
        respond(&mut reader, route(&request), shared);
        let _ = reader.get_mut().flush();
    }
    reader.into_inner()
}

/// A request's head; `None` when the client sent none (it closed, or its
/// TLS handshake failed).
fn read_head(reader: &mut impl BufRead) -> Option<Request> {
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return None;
    }
    let line = line.trim_end().to_string();
    if line.is_empty() {
        return None;
    }
    let mut headers = Vec::new();
    let mut header = String::new();
    while reader.read_line(&mut header).is_ok_and(|n| n > 2) {
        if let Some((name, value)) = header.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
        }
        header.clear();
    }
    let target = line.split(' ').nth(1).unwrap_or("/").to_string();
    let path = target.split('?').next().unwrap_or_default().to_string();
    Some(Request {
        line,
        target,
        path,
        headers,
    })
}

/// Writes `answer` (or, for [`Answer::Drain`], reads) on the connection.
fn respond<S: Read + Write>(reader: &mut BufReader<S>, answer: Answer, shared: &Shared) {
    match answer {
        Answer::Full {
            status,
            headers,
            body,
        } => {
            let mut head = head(status, Some(body.len() as u64));
            for (name, value) in headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str("\r\n");
            let stream = reader.get_mut();
            let _ = stream
                .write_all(head.as_bytes())
                .and_then(|()| stream.write_all(&body));
        }
        Answer::Paced { length, parts } => {
            let stream = reader.get_mut();
            let head = head(200, Some(length)) + "\r\n";
            if stream
                .write_all(head.as_bytes())
                .and_then(|()| stream.flush())
                .is_err()
            {
                return;
            }
            for (pause, part) in parts {
                if !shared.pause(pause)
                    || stream
                        .write_all(&part)
                        .and_then(|()| stream.flush())
                        .is_err()
                {
                    return;
                }
            }
        }
        Answer::Trickle {
            length,
            every,
            bytes,
            lasting,
        } => {
            let stream = reader.get_mut();
            let head = head(200, Some(length)) + "\r\n";
            let part = vec![b'x'; bytes];
            let until = Instant::now() + lasting;
            let mut sent = stream.write_all(head.as_bytes());
            while sent.is_ok() && Instant::now() < until {
                sent = stream.write_all(&part).and_then(|()| stream.flush());
                if sent.is_ok() && !shared.pause(every) {
                    return;
                }
            }
        }
        Answer::Endless => {
            let stream = reader.get_mut();
            let head = head(200, None) + "Transfer-Encoding: chunked\r\n\r\n";
            let chunk = format!("{:x}\r\n{}\r\n", 64 * 1024, "x".repeat(64 * 1024));
            let mut sent = stream.write_all(head.as_bytes());
            while sent.is_ok() && !shared.stopped() {
                sent = stream.write_all(chunk.as_bytes());
            }
        }
        Answer::Late(pause, answer) => {
            if shared.pause(pause) {
                respond(reader, *answer, shared);
            }
        }
        Answer::Silent(hold) => {
            shared.pause(hold);
        }
        Answer::Drain => {
            // Until the client closes (or sends nothing for as long as
            // a head may take).
            let _ = std::io::copy(reader, &mut std::io::sink());
        }
    }
}

/// A response's status line and the headers every answer has.
fn head(status: u16, length: Option<u64>) -> String {
    let reason = hyper::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("Other");
    let mut head = format!("HTTP/1.1 {status} {reason}\r\nConnection: close\r\n");
    if let Some(length) = length {
        head.push_str(&format!("Content-Length: {length}\r\n"));
    }
    head
}

/// The stand-ins themselves: they answer what they are told, and a dropped
/// one leaves nothing behind, whatever it was doing.
mod tests {
    use super::{Answer, Server};
    use crate::support::http::http;
    use std::io::{Read, Write};
    use std::net::TcpStream;
    use std::thread;
    use std::time::{Duration, Instant};

    #[test]
    fn an_http_server_answers_what_its_route_says_and_records_the_request() {
        let server = Server::http(|request| match request.path.as_str() {
            "/teapot" => Answer::status(418, "short and stout"),
            _ => Answer::ok(request.header("x-probe").join(",")),
        });
        let reply = http(server.addr, "GET", "/echo?q=1", &[("X-Probe", "one")], b"");
        assert_eq!((reply.status, reply.body.as_str()), (200, "one"));
        let reply = http(server.addr, "GET", "/teapot", &[], b"");
        assert_eq!(
            (reply.status, reply.body.as_str()),
            (418, "short and stout")
        );
        assert_eq!(
            server.lines(),
            ["GET /echo?q=1 HTTP/1.1", "GET /teapot HTTP/1.1"]
        );
        let first = &server.seen()[0];
        assert_eq!(
            (first.target.as_str(), first.path.as_str()),
            ("/echo?q=1", "/echo")
        );
        assert_eq!(server.connections(), 2);
    }

    #[test]
    fn a_dropped_server_closes_every_connection_at_once() {
        let hour = Duration::from_secs(3600);
        let servers = [
            ("silent", Server::http(move |_| Answer::Silent(hour))),
            (
                "head only",
                Server::http(move |_| Answer::head_only(5, hour)),
            ),
            (
                "late",
                Server::http(move |_| Answer::Late(hour, Box::new(Answer::ok("late")))),
            ),
            ("drain", Server::http(|_| Answer::Drain)),
            ("holding", Server::holding()),
            ("stalled", Server::stalled()),
        ];
        for (name, server) in servers {
            let mut client = TcpStream::connect(server.addr).expect("connect");
            client
                .write_all(b"GET / HTTP/1.1\r\nHost: stand-in\r\n\r\n")
                .expect("send a request");
            let until = Instant::now() + Duration::from_secs(5);
            while server.connections() == 0 && Instant::now() < until {
                thread::sleep(Duration::from_millis(5));
            }
            assert_eq!(server.connections(), 1, "{name}: accepted");
            let started = Instant::now();
            drop(server);
            assert!(
                started.elapsed() < Duration::from_secs(2),
                "{name}: stopping took {:?}",
                started.elapsed()
            );
            // The client sees the end (its answer's head at most), not a
            // connection held open until its read times out.
            client
                .set_read_timeout(Some(Duration::from_secs(5)))
                .expect("a read timeout");
            let mut rest = Vec::new();
            let read = client.read_to_end(&mut rest);
            assert!(
                read.is_ok()
                    || read
                        .as_ref()
                        .is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionReset),
                "{name}: {read:?} after {:?}",
                started.elapsed()
            );
        }
    }
}
