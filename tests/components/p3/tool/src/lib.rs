//! An airlock tool component for WASI 0.3. Its `call` is an `async func`
//! (lifted with the component model's async ABI) that awaits
//! `wasi:http/client@0.3.0` and the 0.3 monotonic clock; its files go through the Rust standard library,
//! which on wasm32-wasip2 imports WASI 0.2 — the mix a 0.3 guest has today.
//! Arguments are read with a tiny extractor instead of a JSON library.

wit_bindgen::generate!({ path: "wit", world: "p3-tool", generate_all });

use airlock::tool::types::{Content, Error, Hints, Output, TaskSupport, Tool};
use wasi::http::types::{ErrorCode, Fields, Method, Request, Response, Scheme};

struct P3Tool;

const ANY_ARGS: &str = r#"{"type":"object","additionalProperties":true}"#;

fn tool(name: &str, hints: Hints) -> Tool {
    Tool {
        name: name.into(),
        title: None,
        description: format!("p3: {name}"),
        input_schema: ANY_ARGS.into(),
        output_schema: None,
        hints,
        icons: vec![],
        task_support: TaskSupport::Optional,
    }
}

fn text(s: impl Into<String>) -> Result<Output, Error> {
    Ok(Output {
        content: vec![Content::Text(s.into())],
        structured: None,
    })
}

/// The value of `"key":value` in a flat JSON object (no escapes).
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

fn number(args: &str, key: &str) -> Result<i64, Error> {
    need(args, key)?
        .parse()
        .map_err(|_| Error::InvalidArguments(format!("{key} is not a number")))
}

fn fail(e: impl std::fmt::Display) -> Error {
    Error::Failed(e.to_string())
}

/// `GET`s (or `method`s) `url` with wasi:http 0.3; answers `STATUS BODY`.
async fn fetch(args: &str) -> Result<String, Error> {
    let url = need(args, "url")?;
    let (scheme, rest) = match url.split_once("://") {
        Some(("http", rest)) => (Scheme::Http, rest),
        Some(("https", rest)) => (Scheme::Https, rest),
        _ => {
            return Err(Error::InvalidArguments(format!(
                "not an http(s) URL: {url}"
            )));
        }
    };
    let (authority, path) = match rest.find('/') {
        Some(at) => (&rest[..at], &rest[at..]),
        None => (rest, "/"),
    };
    let headers = Fields::new();
    if let Some(auth) = arg(args, "authorization") {
        headers
            .append("authorization", auth.as_bytes())
            .map_err(|e| fail(format!("{e:?}")))?;
    }
    let (_trailers, trailers) = wit_future::new::<Result<Option<Fields>, ErrorCode>>(|| Ok(None));
    let (request, _sent) = Request::new(headers, None, trailers, None);
    let method = match arg(args, "method").as_deref().unwrap_or("GET") {
        "GET" => Method::Get,
        "POST" => Method::Post,
        other => Method::Other(other.into()),
    };
    let set = request
        .set_method(&method)
        .and_then(|()| request.set_scheme(Some(&scheme)))
        .and_then(|()| request.set_authority(Some(authority)))
        .and_then(|()| request.set_path_with_query(Some(path)));
    set.map_err(|()| fail("invalid request"))?;
    let response = wasi::http::client::send(request)
        .await
        .map_err(|e| fail(format!("{e:?}")))?;
    let status = response.get_status_code();
    let (_done, done) = wit_future::new::<Result<(), ErrorCode>>(|| Ok(()));
    let (body, _trailers) = Response::consume_body(response, done);
    let bytes = body.collect().await;
    Ok(format!("{status} {}", String::from_utf8_lossy(&bytes)))
}

impl exports::airlock::tool::tools::Guest for P3Tool {
    fn describe() -> Vec<Tool> {
        vec![
            tool("add", Hints::READ_ONLY),
            tool("fetch", Hints::OPEN_WORLD),
            tool("fetch_closed", Hints::empty()),
            tool("sleep", Hints::empty()),
            tool("spin", Hints::empty()),
            tool("allocate", Hints::empty()),
            tool("read_file", Hints::READ_ONLY),
            tool("write_file", Hints::empty()),
        ]
    }

    async fn call(name: String, args: String) -> Result<Output, Error> {
        match name.as_str() {
            "add" => text((number(&args, "a")? + number(&args, "b")?).to_string()),
            "fetch" | "fetch_closed" => text(fetch(&args).await?),
            "sleep" => {
                let ms = number(&args, "ms")?;
                let nanos = u64::try_from(ms).unwrap_or(0) * 1_000_000;
                wasi::clocks::monotonic_clock::wait_for(nanos).await;
                text(format!("slept {ms} ms"))
            }
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
            "read_file" => text(std::fs::read_to_string(need(&args, "path")?).map_err(fail)?),
            "write_file" => {
                let path = need(&args, "path")?;
                std::fs::write(&path, need(&args, "content")?).map_err(fail)?;
                text(format!("wrote {path}"))
            }
            other => Err(Error::InvalidArguments(format!("no tool {other}"))),
        }
    }
}

export!(P3Tool);
