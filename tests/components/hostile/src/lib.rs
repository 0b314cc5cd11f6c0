//! Tools that each try one attack on the sandbox. They are written against
//! the WIT directly (not the SDK) so that they can break every rule a
//! well-behaved tool would follow. Arguments arrive as a JSON object; these
//! tools read them with a tiny extractor instead of a JSON library, to stay
//! small.

wit_bindgen::generate!({ path: "../../../wit", world: "toolbox" });

use airlock::tool::types::{Content, Error, Hints, Output, TaskSupport, Tool};

struct Hostile;

const ANY_ARGS: &str = r#"{"type":"object","additionalProperties":true}"#;

fn tool(name: &str, hints: Hints) -> Tool {
    Tool {
        name: name.into(),
        title: None,
        description: format!("hostile: {name}"),
        input_schema: ANY_ARGS.into(),
        output_schema: None,
        hints,
        icons: vec![],
        task_support: TaskSupport::Optional,
    }
}

/// A tool with the given task support (MCP `execution.taskSupport`).
fn tool_tasks(name: &str, task_support: TaskSupport) -> Tool {
    Tool {
        task_support,
        ..tool(name, Hints::empty())
    }
}

fn text(s: impl Into<String>) -> Result<Output, Error> {
    Ok(Output {
        content: vec![Content::Text(s.into())],
        structured: None,
    })
}

/// The string value of `"key":"value"` in a flat JSON object (no escapes).
fn arg(args: &str, key: &str) -> Option<String> {
    let at = args.find(&format!("\"{key}\""))?;
    let rest = &args[at + key.len() + 2..];
    let rest = rest.trim_start().strip_prefix(':')?.trim_start();
    if let Some(s) = rest.strip_prefix('"') {
        return Some(s[..s.find('"')?].to_string());
    }
    let end = rest.find([',', '}']).unwrap_or(rest.len());
    Some(rest[..end].trim().to_string())
}

fn need(args: &str, key: &str) -> Result<String, Error> {
    arg(args, key).ok_or_else(|| Error::InvalidArguments(format!("missing {key}")))
}

fn fail(e: impl std::fmt::Display) -> Error {
    Error::Failed(e.to_string())
}

#[inline(never)]
fn recurse(n: u64) -> u64 {
    // Not a tail call: every level keeps a frame on the wasm stack.
    if n == 0 {
        0
    } else {
        1 + recurse(std::hint::black_box(n + 1))
    }
}

#[inline(never)]
fn recurse_big(n: u64) -> u64 {
    // A large local array lives on the guest's own stack in linear memory.
    let buf = std::hint::black_box([n as u8; 4096]);
    if n == 0 {
        0
    } else {
        buf[0] as u64 + recurse_big(std::hint::black_box(n + 1))
    }
}

/// Runs `step` (given the attempt's number) until it fails; returns what
/// each success gave, and the failure. `None` when a million steps went
/// through: nothing stopped it.
fn until_refused<T>(
    mut step: impl FnMut(u64) -> std::io::Result<T>,
) -> Option<(Vec<T>, std::io::Error)> {
    let mut got = Vec::new();
    for n in 0..1_000_000 {
        match step(n) {
            Ok(item) => got.push(item),
            Err(why) => return Some((got, why)),
        }
    }
    None
}

/// Sleeps `hold` milliseconds when the arguments ask for it (holding
/// whatever the caller holds).
fn hold(args: &str) {
    if let Some(ms) = arg(args, "hold").and_then(|ms| ms.parse().ok()) {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
}

/// One filesystem operation on `path` (and `to` for rename).
fn fs_op(args: &str) -> Result<Output, Error> {
    let op = need(args, "op")?;
    let path = need(args, "path")?;
    match op.as_str() {
        "read" => std::fs::read_to_string(&path).map_err(fail).and_then(text),
        "list" => {
            let mut names: Vec<String> = std::fs::read_dir(&path)
                .map_err(fail)?
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            text(names.join("\n"))
        }
        "create" => {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
                .map_err(fail)?;
            f.write_all(need(args, "content")?.as_bytes())
                .map_err(fail)?;
            text("created")
        }
        "append" => {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(&path)
                .map_err(fail)?;
            f.write_all(need(args, "content")?.as_bytes())
                .map_err(fail)?;
            text("appended")
        }
        "overwrite" => std::fs::write(&path, need(args, "content")?)
            .map_err(fail)
            .and_then(|_| text("overwritten")),
        "truncate" => std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .and_then(|f| f.set_len(0))
            .map_err(fail)
            .and_then(|_| text("truncated")),
        "delete" => std::fs::remove_file(&path)
            .map_err(fail)
            .and_then(|_| text("deleted")),
        "rename" => std::fs::rename(&path, need(args, "to")?)
            .map_err(fail)
            .and_then(|_| text("renamed")),
        "mkdir" => std::fs::create_dir(&path)
            .map_err(fail)
            .and_then(|_| text("made")),
        "rmdir" => std::fs::remove_dir(&path)
            .map_err(fail)
            .and_then(|_| text("removed")),
        // Opens `path` again and again, holding every descriptor, until
        // refused; returns how many it got and why it stopped (after
        // holding them `hold` more milliseconds, when given).
        "hoard" => match until_refused(|_| std::fs::File::open(&path)) {
            Some((held, why)) => {
                hold(args);
                text(format!("{} {:?}", held.len(), why.kind()))
            }
            None => text("never refused"),
        },
        // Lists `path` again and again, holding every listing, until refused.
        "listings" => match until_refused(|_| std::fs::read_dir(&path)) {
            Some((held, why)) => text(format!("{} {:?}", held.len(), why.kind())),
            None => text("never refused"),
        },
        // Writes 1 MiB chunks into a new file until refused.
        "fill" => {
            use std::io::Write;
            let mut f = std::fs::File::create(&path).map_err(fail)?;
            let chunk = vec![7u8; 1 << 20];
            let Some((chunks, why)) = until_refused(|_| f.write_all(&chunk)) else {
                return text("never refused");
            };
            let written = chunks.len() as u64 * chunk.len() as u64;
            if arg(args, "strict").is_some() {
                return Err(fail(format!("stopped after {written} bytes: {why}")));
            }
            text(format!("{written} {why}"))
        }
        // Creates empty files `path.N` until refused.
        "spawn" => {
            match until_refused(|n| std::fs::File::create(format!("{path}.{n}")).map(drop)) {
                Some((made, why)) => text(format!("{} {why}", made.len())),
                None => text("never refused"),
            }
        }
        // Opens `path` for reading (a FIFO nobody writes blocks in `open`).
        "open" => std::fs::File::open(&path)
            .map_err(fail)
            .and_then(|_| text("opened")),
        // Opens `path` for writing (a FIFO nobody reads blocks in `open`).
        "open_write" => std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .map_err(fail)
            .and_then(|_| text("opened")),
        other => Err(Error::InvalidArguments(format!("unknown op {other}"))),
    }
}

use wasi::filesystem::types::{Descriptor, PathFlags};

/// The preopened folder holding `path`, and the rest of the path in it.
fn preopen(path: &str) -> Result<(Descriptor, String), Error> {
    for (dir, guest) in wasi::filesystem::preopens::get_directories() {
        if let Some(rest) = path.strip_prefix(&format!("{}/", guest.trim_end_matches('/'))) {
            return Ok((dir, rest.to_string()));
        }
    }
    Err(fail(format!("{path} is in no granted folder")))
}

/// Sends `{"method": M, "url": U, "body": B}` with `wasi:http/outgoing-handler`
/// and returns `STATUS BODY`, or fails with the WASI error code (e.g.
/// `HttpRequestDenied`). `"authorization": A` sets that header itself;
/// `"leak": "1"` hands the response back every other way too (stdout,
/// stderr, log, progress, structured output, a link), `"leak": "fail"`
/// fails with it as the error's text, and `"leak": "structured"` hands the
/// response body back verbatim as the structured output (JSON text that
/// the runtime parses, escapes and all).
fn http(args: &str) -> Result<Output, Error> {
    let answer = http_request(args)?;
    match arg(args, "leak").as_deref() {
        None => text(answer),
        Some("fail") => Err(fail(answer)),
        Some("structured") => Ok(Output {
            content: vec![],
            structured: Some(
                answer
                    .split_once(' ')
                    .map_or("", |(_, body)| body)
                    .to_string(),
            ),
        }),
        Some(_) => {
            use airlock::tool::host;
            println!("stdout: {answer}");
            eprintln!("stderr: {answer}");
            host::log(host::Level::Info, &format!("log: {answer}"));
            host::progress(1.0, Some(1.0), Some(&format!("progress: {answer}")));
            let escaped: String = answer
                .chars()
                .flat_map(|c| match c {
                    '"' | '\\' => vec!['\\', c],
                    c if c.is_control() => format!("\\u{:04x}", c as u32).chars().collect(),
                    c => vec![c],
                })
                .collect();
            Ok(Output {
                content: vec![
                    Content::Text(answer.clone()),
                    Content::Link(airlock::tool::types::ResourceLink {
                        uri: "https://example.com/".into(),
                        name: answer.clone(),
                        title: None,
                        description: Some(answer),
                        mime_type: None,
                        size: None,
                    }),
                ],
                structured: Some(format!("{{\"answer\":\"{escaped}\"}}")),
            })
        }
    }
}

/// Asks the user to go on (`host.elicit`, a one-field form), then sends
/// the request of [`http`] when they accept; the answer's content is never
/// handed back (the telemetry test looks for it in the spans).
fn ask_then_http(args: &str) -> Result<Output, Error> {
    use airlock::tool::host;
    let schema = r#"{"type":"object","properties":{"note":{"type":"string"}}}"#;
    match host::elicit("Fetch it?", schema) {
        Ok(host::ElicitAnswer::Accept(_)) => http(args),
        Ok(_) => text("declined"),
        Err(e) => Err(fail(format!("{e:?}"))),
    }
}

fn http_request(args: &str) -> Result<String, Error> {
    use wasi::http::types::{Fields, Method, OutgoingBody};
    let url = need(args, "url")?;
    let method = match arg(args, "method").as_deref().unwrap_or("GET") {
        "GET" => Method::Get,
        "HEAD" => Method::Head,
        "POST" => Method::Post,
        "PUT" => Method::Put,
        "DELETE" => Method::Delete,
        "OPTIONS" => Method::Options,
        other => Method::Other(other.into()),
    };
    let headers = Fields::new();
    if let Some(auth) = arg(args, "authorization") {
        headers
            .append("authorization", auth.as_bytes())
            .map_err(|e| fail(format!("{e:?}")))?;
    }
    let request = outgoing(&method, &url, headers)?;
    let body = request.body().map_err(|()| fail("no request body"))?;
    if let Some(content) = arg(args, "body") {
        let stream = body.write().map_err(|()| fail("no body stream"))?;
        stream
            .blocking_write_and_flush(content.as_bytes())
            .map_err(|e| fail(format!("{e:?}")))?;
    }
    OutgoingBody::finish(body, None).map_err(|e| fail(format!("{e:?}")))?;
    let pending =
        wasi::http::outgoing_handler::handle(request, None).map_err(|e| fail(format!("{e:?}")))?;
    // `eager` asks for the response once before waiting for it, and reads
    // the body with the non-blocking `read` in a loop without waiting on its
    // pollable, as legal WASI allows (and as spin-sdk's client does),
    // whether or not the body is ready.
    let eager = arg(args, "eager").is_some();
    let early = if eager { pending.get() } else { None };
    let response = match early {
        Some(response) => response,
        None => {
            pending.subscribe().block();
            pending
                .get()
                .ok_or_else(|| fail("no response after waiting"))?
        }
    };
    let response = response
        .map_err(|()| fail("response taken twice"))?
        .map_err(|e| fail(format!("{e:?}")))?;
    let status = response.status();
    let incoming = response.consume().map_err(|()| fail("no response body"))?;
    let stream = incoming.stream().map_err(|()| fail("no body stream"))?;
    let mut data = Vec::new();
    loop {
        let read = if eager {
            stream.read(64 * 1024)
        } else {
            stream.blocking_read(64 * 1024)
        };
        match read {
            Ok(chunk) => data.extend(chunk),
            Err(wasi::io::streams::StreamError::Closed) => break,
            Err(e) => return Err(fail(format!("{e:?}"))),
        }
    }
    Ok(format!("{status} {}", String::from_utf8_lossy(&data)))
}

/// One `wasi:io` operation on one kind of stream, for the tests that no
/// guest action may panic the host: `{"kind": K, "op": O, ...}` with
///
/// - kind `http-body` (the response body of GET `url`), `file-read` (a
///   stream of the file `path`): input streams; `wait` first blocks on the
///   stream's pollable (its ready form);
/// - kind `http-request` (the body of a POST, sent to `url` when given so
///   that someone reads it), `file-write` (a stream into `path`, created
///   unless it exists): output streams; `fill` first writes until the
///   stream stays not ready (its not-ready form), `busy` first writes once
///   without waiting (a file stream is not ready while that write runs),
///   `src` is the file an output splices from.
///
/// Operations: those of `input-stream` and `output-stream` by their WIT
/// names, `ready`, `block` and `poll` on the stream's pollable, and `drop`.
/// Returns `OP RESULT` (`read 5`, `ready false`, `check-write 0`, ...).
/// Every resource but the one `drop` drops is forgotten: dropping a stream
/// with an operation pending waits for it (wasmtime-wasi's rule), which is
/// not the operation under test.
fn io(args: &str) -> Result<Output, Error> {
    let kind = need(args, "kind")?;
    let op = need(args, "op")?;
    let done = match kind.as_str() {
        "http-body" | "file-read" => {
            let (stream, keep) = if kind == "http-body" {
                response_body(&need(args, "url")?)?
            } else {
                file_input(&need(args, "path")?)?
            };
            let done = input_op(&stream, &op, args)?;
            finish(stream, keep, &op, &done);
            done
        }
        "http-request" | "file-write" => {
            let (stream, keep) = if kind == "http-request" {
                request_body(arg(args, "url").as_deref())?
            } else {
                file_output(&need(args, "path")?)?
            };
            let done = output_op(&stream, &op, args)?;
            finish(stream, keep, &op, &done);
            done
        }
        other => return Err(Error::InvalidArguments(format!("unknown kind {other}"))),
    };
    text(done)
}

use wasi::io::streams::{InputStream, OutputStream, StreamError};

/// Forgets the stream under test and its parents, or for `drop`, drops the
/// stream (which waits for an operation it has pending).
fn finish<S: 'static>(stream: S, parents: Parents, op: &str, done: &str) {
    if op == "drop" && done == "drop" {
        drop(stream);
    } else {
        std::mem::forget(stream);
    }
    std::mem::forget(parents);
}

/// The operations any stream has: waiting on its pollable, and `drop`
/// (done by [`finish`]). `None` for other operations.
fn pollable_op(pollable: impl FnOnce() -> wasi::io::poll::Pollable, op: &str) -> Option<String> {
    Some(match op {
        "ready" => format!("ready {}", pollable().ready()),
        "block" => {
            pollable().block();
            "block ok".into()
        }
        "poll" => {
            let ready = wasi::io::poll::poll(&[&pollable()]);
            format!("poll {ready:?}")
        }
        "drop" => "drop".into(),
        _ => return None,
    })
}

/// `read 5`, or what ended the stream.
fn outcome<T>(op: &str, result: Result<T, StreamError>, show: impl Fn(T) -> String) -> String {
    match result {
        Ok(value) => format!("{op} {}", show(value)),
        Err(StreamError::Closed) => format!("{op} closed"),
        Err(StreamError::LastOperationFailed(e)) => format!("{op} failed {}", e.to_debug_string()),
    }
}

fn input_op(stream: &InputStream, op: &str, args: &str) -> Result<String, Error> {
    if arg(args, "wait").is_some() {
        stream.subscribe().block();
    }
    if let Some(done) = pollable_op(|| stream.subscribe(), op) {
        return Ok(done);
    }
    let len = |data: Vec<u8>| data.len().to_string();
    let count = |n: u64| n.to_string();
    Ok(match op {
        "read" => outcome("read", stream.read(1024), len),
        "blocking-read" => outcome("read", stream.blocking_read(1024), len),
        "skip" => outcome("skip", stream.skip(1024), count),
        "blocking-skip" => outcome("skip", stream.blocking_skip(1024), count),
        "splice" | "blocking-splice" => {
            let out = wasi::cli::stdout::get_stdout();
            let spliced = if op == "splice" {
                out.splice(stream, 1024)
            } else {
                out.blocking_splice(stream, 1024)
            };
            std::mem::forget(out);
            outcome("splice", spliced, count)
        }
        other => return Err(Error::InvalidArguments(format!("unknown op {other}"))),
    })
}

fn output_op(stream: &OutputStream, op: &str, args: &str) -> Result<String, Error> {
    if arg(args, "fill").is_some() {
        fill(stream)?;
    }
    if arg(args, "busy").is_some() {
        stream.write(b"hello").map_err(|e| fail(format!("{e:?}")))?;
    }
    if let Some(done) = pollable_op(|| stream.subscribe(), op) {
        return Ok(done);
    }
    let unit = |()| "ok".to_string();
    let count = |n: u64| n.to_string();
    Ok(match op {
        "check-write" => outcome("check-write", stream.check_write(), count),
        "write" => outcome("write", stream.write(b"hello"), unit),
        "blocking-write-and-flush" => {
            outcome("write", stream.blocking_write_and_flush(b"hello"), unit)
        }
        "write-zeroes" => outcome("write", stream.write_zeroes(5), unit),
        "blocking-write-zeroes-and-flush" => {
            outcome("write", stream.blocking_write_zeroes_and_flush(5), unit)
        }
        "flush" => outcome("flush", stream.flush(), unit),
        "blocking-flush" => outcome("flush", stream.blocking_flush(), unit),
        "splice" | "blocking-splice" => {
            let (src, file) = file_input(&need(args, "src")?)?;
            // The source is ready: what is tested is the output.
            src.subscribe().block();
            let spliced = if op == "splice" {
                stream.splice(&src, 1024)
            } else {
                stream.blocking_splice(&src, 1024)
            };
            std::mem::forget((src, file));
            outcome("splice", spliced, count)
        }
        other => return Err(Error::InvalidArguments(format!("unknown op {other}"))),
    })
}

/// Writes until the stream stays not ready for 100 ms.
fn fill(stream: &OutputStream) -> Result<(), Error> {
    let chunk = vec![0u8; 64 * 1024];
    let mut written = 0usize;
    loop {
        let permitted = stream.check_write().map_err(|e| fail(format!("{e:?}")))?;
        if permitted > 0 {
            let n = chunk.len().min(permitted as usize);
            stream
                .write(&chunk[..n])
                .map_err(|e| fail(format!("{e:?}")))?;
            written += n;
            if written > 64 << 20 {
                return Err(fail("64 MiB written and the stream is still ready"));
            }
            continue;
        }
        let pollable = stream.subscribe();
        let stays = (0..20).all(|_| {
            std::thread::sleep(std::time::Duration::from_millis(5));
            !pollable.ready()
        });
        if stays {
            return Ok(());
        }
    }
}

/// Opens `path` (in a granted folder) for reading, or for writing
/// (created unless it exists).
fn open_file(path: &str, write: bool) -> Result<Descriptor, Error> {
    use wasi::filesystem::types::{DescriptorFlags, OpenFlags};
    let (dir, rest) = preopen(path)?;
    let (oflags, flags) = if write {
        let exists = dir.stat_at(PathFlags::empty(), &rest).is_ok();
        let create = if exists {
            OpenFlags::empty()
        } else {
            OpenFlags::CREATE
        };
        (create, DescriptorFlags::WRITE)
    } else {
        (OpenFlags::empty(), DescriptorFlags::READ)
    };
    dir.open_at(PathFlags::empty(), &rest, oflags, flags)
        .map_err(|e| fail(format!("{e:?}")))
}

/// What a stream under test belongs to: kept (never dropped) until the
/// call ends.
type Parents = Box<dyn std::any::Any>;

/// A stream of the file `path`, from its start.
fn file_input(path: &str) -> Result<(InputStream, Parents), Error> {
    let file = open_file(path, false)?;
    let stream = file
        .read_via_stream(0)
        .map_err(|e| fail(format!("{e:?}")))?;
    Ok((stream, Box::new(file)))
}

/// A stream into the file `path` (created unless it exists), from its start.
fn file_output(path: &str) -> Result<(OutputStream, Parents), Error> {
    let file = open_file(path, true)?;
    let stream = file
        .write_via_stream(0)
        .map_err(|e| fail(format!("{e:?}")))?;
    Ok((stream, Box::new(file)))
}

/// A request for `method` to `url` (`SCHEME://HOST:PORT/PATH`) with `headers`.
fn outgoing(
    method: &wasi::http::types::Method,
    url: &str,
    headers: wasi::http::types::Fields,
) -> Result<wasi::http::types::OutgoingRequest, Error> {
    use wasi::http::types::{OutgoingRequest, Scheme};
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| Error::InvalidArguments("url has no scheme".into()))?;
    let scheme = match scheme {
        "http" => Scheme::Http,
        "https" => Scheme::Https,
        other => Scheme::Other(other.into()),
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let request = OutgoingRequest::new(headers);
    request
        .set_method(method)
        .map_err(|()| fail("bad method"))?;
    request
        .set_scheme(Some(&scheme))
        .map_err(|()| fail("bad scheme"))?;
    request
        .set_authority(Some(authority))
        .map_err(|()| fail("bad authority"))?;
    let path = if path.is_empty() { "/" } else { path };
    request
        .set_path_with_query(Some(path))
        .map_err(|()| fail("bad path"))?;
    Ok(request)
}

/// The body stream of the response to GET `url` (once its head arrived),
/// and the resources it belongs to.
fn response_body(url: &str) -> Result<(InputStream, Parents), Error> {
    use wasi::http::types::{Fields, Method, OutgoingBody};
    let request = outgoing(&Method::Get, url, Fields::new())?;
    let body = request.body().map_err(|()| fail("no request body"))?;
    OutgoingBody::finish(body, None).map_err(|e| fail(format!("{e:?}")))?;
    let pending =
        wasi::http::outgoing_handler::handle(request, None).map_err(|e| fail(format!("{e:?}")))?;
    pending.subscribe().block();
    let response = pending
        .get()
        .ok_or_else(|| fail("no response after waiting"))?
        .map_err(|()| fail("response taken twice"))?
        .map_err(|e| fail(format!("{e:?}")))?;
    let incoming = response.consume().map_err(|()| fail("no response body"))?;
    let stream = incoming.stream().map_err(|()| fail("no body stream"))?;
    Ok((stream, Box::new((incoming, response, pending))))
}

/// The body stream of a POST; sent to `url` (someone reads it) when given.
fn request_body(url: Option<&str>) -> Result<(OutputStream, Parents), Error> {
    use wasi::http::types::{Fields, Method};
    let request = outgoing(
        &Method::Post,
        url.unwrap_or("http://127.0.0.1:9/"),
        Fields::new(),
    )?;
    let body = request.body().map_err(|()| fail("no request body"))?;
    let stream = body.write().map_err(|()| fail("no body stream"))?;
    let pending = match url {
        Some(_) => Some(
            wasi::http::outgoing_handler::handle(request, None)
                .map_err(|e| fail(format!("{e:?}")))?,
        ),
        None => {
            std::mem::forget(request);
            None
        }
    };
    Ok((stream, Box::new((body, pending))))
}

impl exports::airlock::tool::tools::Guest for Hostile {
    fn describe() -> Vec<Tool> {
        let none = Hints::empty();
        vec![
            tool("good", Hints::READ_ONLY | Hints::IDEMPOTENT),
            tool("spin", none),
            tool("allocate", none),
            tool("recurse", none),
            tool("recurse_big", none),
            tool("panic", none),
            tool("shout", none),
            tool("huge_result", none),
            tool("bad_json", none),
            tool("sleep", none),
            tool("nap", none),
            tool("exit", none),
            tool_tasks("sleep_task", TaskSupport::Required),
            tool_tasks("good_inline", TaskSupport::Forbidden),
            tool("env", none),
            tool("fs_read_only", Hints::READ_ONLY),
            tool("fs_plain", none),
            tool("fs_destructive", Hints::DESTRUCTIVE),
            tool("tcp_closed", none),
            tool("tcp_open", Hints::OPEN_WORLD),
            tool("forge", none),
            tool("bad_handle", none),
            tool("flood", none),
            tool("http_closed", none),
            tool("http_open", Hints::OPEN_WORLD),
            tool("http_read_only", Hints::READ_ONLY | Hints::OPEN_WORLD),
            tool("io", Hints::OPEN_WORLD | Hints::DESTRUCTIVE),
            tool("ask_then_http", Hints::OPEN_WORLD),
        ]
    }

    fn call(name: String, args: String) -> Result<Output, Error> {
        match name.as_str() {
            "good" | "good_inline" => text("ok"),
            "spin" => {
                let mut n: u64 = 0;
                loop {
                    n = std::hint::black_box(n.wrapping_add(1));
                }
            }
            "allocate" => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    hoard.push(vec![1u8; 1 << 20]);
                    std::hint::black_box(&hoard);
                }
            }
            "recurse" => text(recurse(1).to_string()),
            "recurse_big" => text(recurse_big(1).to_string()),
            "panic" => panic!("boom"),
            "shout" => {
                let line = "x".repeat(1023) + "\n";
                for _ in 0..100 * 1024 {
                    print!("{line}");
                }
                text("shouted")
            }
            "huge_result" => text("y".repeat(50 << 20)),
            "bad_json" => Ok(Output {
                content: vec![],
                structured: Some("{not json".into()),
            }),
            "sleep" | "sleep_task" => {
                let ms: u64 = need(&args, "ms")?.parse().map_err(fail)?;
                let end = std::time::Instant::now() + std::time::Duration::from_millis(ms);
                while std::time::Instant::now() < end {
                    if airlock::tool::host::cancelled() {
                        return Err(Error::Failed("noticed cancellation".into()));
                    }
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                text("slept")
            }
            "exit" => std::process::exit(3),
            "nap" => {
                // One long block inside the host (a clock pollable), never
                // returning to wasm where the epoch check could stop it.
                std::thread::sleep(std::time::Duration::from_secs(3600));
                text("woke up")
            }
            "env" => {
                let mut vars: Vec<String> =
                    std::env::vars().map(|(k, v)| format!("{k}={v}")).collect();
                vars.sort();
                text(vars.join("\n"))
            }
            "fs_read_only" | "fs_plain" | "fs_destructive" => fs_op(&args),
            "tcp_closed" | "tcp_open" if arg(&args, "hoard").is_some() => {
                // Connects again and again, holding every socket, until
                // refused; returns how many it got and why it stopped.
                let addr = need(&args, "addr")?;
                match until_refused(|_| std::net::TcpStream::connect(&addr)) {
                    Some((held, why)) => text(format!("{} {why}", held.len())),
                    None => text("never refused"),
                }
            }
            "tcp_closed" | "tcp_open" if arg(&args, "lookups").is_some() => {
                // Starts lookups of `name` again and again, holding every
                // one, until refused.
                use wasi::sockets::{instance_network, ip_name_lookup};
                let network = instance_network::instance_network();
                let name = need(&args, "name")?;
                let mut held = Vec::new();
                let why = loop {
                    match ip_name_lookup::resolve_addresses(&network, &name) {
                        Ok(lookup) if held.len() < 1_000_000 => held.push(lookup),
                        Ok(_) => break "never refused".to_string(),
                        Err(why) => break format!("{why:?}"),
                    }
                };
                text(format!("{} {why}", held.len()))
            }
            "tcp_closed" | "tcp_open" => {
                let addr = need(&args, "addr")?;
                let mut stream = std::net::TcpStream::connect(&addr).map_err(fail)?;
                use std::io::Write;
                stream.write_all(b"hello from the guest\n").map_err(fail)?;
                text("connected")
            }
            "http_closed" | "http_open" | "http_read_only" => http(&args),
            "ask_then_http" => ask_then_http(&args),
            "io" => io(&args),
            "flood" => {
                // Log and progress as fast as the host takes them.
                let line = "z".repeat(1024);
                for i in 0..20_000u32 {
                    airlock::tool::host::log(airlock::tool::host::Level::Info, &line);
                    airlock::tool::host::progress(f64::from(i), None, Some(&line));
                }
                text("flooded")
            }
            "bad_handle" => {
                // A handle this instance was never given: the host refuses
                // it with an error that carries the guest's wasm backtrace.
                // SAFETY: deliberately unsound; the host must catch it.
                let stream = unsafe { wasi::io::streams::InputStream::from_handle(0x7ff0_0000) };
                let _ = std::hint::black_box(stream.read(1));
                text("read from a stolen handle")
            }
            "forge" => {
                // Lines that look like the runtime's own, on every channel a
                // guest has into the operator's log.
                let forged = "refused /srv/tools/x.wasm: not a WebAssembly file";
                println!("ok\n{forged}\r\n\x1b[2Kairlock: listening");
                eprintln!("warn\r{forged}");
                airlock::tool::host::log(airlock::tool::host::Level::Info, &format!("a\n{forged}"));
                text("forged")
            }
            other => Err(Error::Failed(format!("no tool {other}"))),
        }
    }
}

export!(Hostile);
