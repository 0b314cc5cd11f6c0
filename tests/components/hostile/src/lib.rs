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
        // refused; returns how many it got and why it stopped.
        "hoard" => match until_refused(|_| std::fs::File::open(&path)) {
            Some((held, why)) => text(format!("{} {:?}", held.len(), why.kind())),
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
        other => Err(Error::InvalidArguments(format!("unknown op {other}"))),
    }
}

/// Sends `{"method": M, "url": U, "body": B}` with `wasi:http/outgoing-handler`
/// and returns `STATUS BODY`, or fails with the WASI error code (e.g.
/// `HttpRequestDenied`). `"authorization": A` sets that header itself;
/// `"leak": "1"` hands the response back every other way too (stdout,
/// stderr, log, progress, structured output, a link), and `"leak": "fail"`
/// fails with it as the error's text.
fn http(args: &str) -> Result<Output, Error> {
    let answer = http_request(args)?;
    match arg(args, "leak").as_deref() {
        None => text(answer),
        Some("fail") => Err(fail(answer)),
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

fn http_request(args: &str) -> Result<String, Error> {
    use wasi::http::types::{Fields, Method, OutgoingBody, OutgoingRequest, Scheme};
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
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| Error::InvalidArguments("url has no scheme".into()))?;
    let scheme = match scheme {
        "http" => Scheme::Http,
        "https" => Scheme::Https,
        other => Scheme::Other(other.into()),
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let headers = Fields::new();
    if let Some(auth) = arg(args, "authorization") {
        headers
            .append("authorization", auth.as_bytes())
            .map_err(|e| fail(format!("{e:?}")))?;
    }
    let request = OutgoingRequest::new(headers);
    request
        .set_method(&method)
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
            "tcp_closed" | "tcp_open" => {
                let addr = need(&args, "addr")?;
                let mut stream = std::net::TcpStream::connect(&addr).map_err(fail)?;
                use std::io::Write;
                stream.write_all(b"hello from the guest\n").map_err(fail)?;
                text("connected")
            }
            "http_closed" | "http_open" | "http_read_only" => http(&args),
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
