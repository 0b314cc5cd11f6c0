//! The benchmark suite's component (`cargo xtask bench`): `add(a, b)`,
//! `echo(text)` and `sleep(ms)`, written against the WIT directly and kept
//! tiny, so that the numbers measure the runtime rather than the guest.
//!
//! The suite makes 50 copies of this file with distinct tool names for the
//! startup benchmark by rewriting the two digits of [`ID`] in the binary:
//! `00` gives `add`, `echo`, `sleep`; `17` gives `add_17`, `echo_17`, `sleep_17`.

wit_bindgen::generate!({ path: "../../../wit", world: "toolbox" });

use airlock::tool::types::{Content, Error, Hints, Output, TaskSupport, Tool};

/// Patched by the suite; read through `black_box` so it stays in the data.
static ID: &[u8; 24] = b"@@AIRLOCK_BENCH_ID=00@@\0";

fn suffix() -> String {
    let id = std::hint::black_box(ID);
    match &id[19..21] {
        b"00" => String::new(),
        digits => format!("_{}", String::from_utf8_lossy(digits)),
    }
}

struct Bench;

fn tool(name: &str, description: &str, schema: &str, output: Option<&str>) -> Tool {
    Tool {
        name: format!("{name}{}", suffix()),
        title: None,
        description: description.into(),
        input_schema: schema.into(),
        output_schema: output.map(str::to_string),
        hints: Hints::READ_ONLY | Hints::IDEMPOTENT,
        icons: vec![],
        task_support: TaskSupport::Forbidden,
    }
}

/// The raw value of `"key":` in a flat JSON object: a number, or a string's
/// characters without unescaping (the suite sends no escapes).
fn arg<'a>(args: &'a str, key: &str) -> Option<&'a str> {
    let at = args.find(&format!("\"{key}\""))?;
    let rest = args[at + key.len() + 2..].trim_start().strip_prefix(':')?;
    let rest = rest.trim_start();
    if let Some(s) = rest.strip_prefix('"') {
        return Some(&s[..s.find('"')?]);
    }
    let end = rest.find([',', '}']).unwrap_or(rest.len());
    Some(rest[..end].trim())
}

fn int(args: &str, key: &str) -> Result<i64, Error> {
    arg(args, key)
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| Error::InvalidArguments(format!("{key} must be an integer")))
}

impl exports::airlock::tool::tools::Guest for Bench {
    fn describe() -> Vec<Tool> {
        vec![
            tool(
                "add",
                "Adds two integers.",
                r#"{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}"#,
                Some(
                    r#"{"type":"object","properties":{"result":{"type":"integer"}},"required":["result"]}"#,
                ),
            ),
            tool(
                "echo",
                "Returns its text.",
                r#"{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}"#,
                None,
            ),
            tool(
                "sleep",
                "Sleeps for ms milliseconds.",
                r#"{"type":"object","properties":{"ms":{"type":"integer","minimum":0,"maximum":10000}},"required":["ms"]}"#,
                None,
            ),
        ]
    }

    fn call(name: String, args: String) -> Result<Output, Error> {
        let base = name.split('_').next().unwrap_or_default();
        match base {
            "add" => {
                let sum = int(&args, "a")?.wrapping_add(int(&args, "b")?);
                Ok(Output {
                    content: vec![],
                    structured: Some(format!("{{\"result\":{sum}}}")),
                })
            }
            "echo" => {
                let text = arg(&args, "text")
                    .ok_or_else(|| Error::InvalidArguments("text is missing".into()))?;
                Ok(Output {
                    content: vec![Content::Text(text.to_string())],
                    structured: None,
                })
            }
            "sleep" => {
                let ms = int(&args, "ms")?.max(0) as u64;
                std::thread::sleep(std::time::Duration::from_millis(ms));
                Ok(Output {
                    content: vec![Content::Text("slept".into())],
                    structured: None,
                })
            }
            _ => Err(Error::Failed(format!("unknown tool {name}"))),
        }
    }
}

export!(Bench);
