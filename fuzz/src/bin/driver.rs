//! A fuzz driver for the stable toolchain: runs the same target functions
//! as the libFuzzer targets on random and mutated inputs for a while. It
//! has no coverage feedback, so it makes up for it with JSON-aware
//! generation and a dictionary of the protocol's words.
//!
//! ```text
//! fuzz-driver [TARGET|all] [--seconds N] [--seed S]
//! ```
//!
//! Seeds come from `fuzz/seeds/TARGET/` and, when present, libFuzzer's
//! `fuzz/corpus/TARGET/`. A panic writes the input to
//! `fuzz/artifacts/TARGET/crash-HASH` and exits 1; replay it with the
//! libFuzzer target or with `--replay FILE`. Runs are deterministic for a
//! seed, so a crash that aborts the process (a stack overflow) is found
//! again by running with the printed `--seed`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use airlock_fuzz::TARGETS;

fn main() -> ExitCode {
    let mut target = "all".to_string();
    let mut seconds = 60u64;
    let mut seed = None;
    let mut replay = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--seconds" => seconds = args.next().and_then(|v| v.parse().ok()).unwrap_or(60),
            "--seed" => seed = args.next().and_then(|v| v.parse().ok()),
            "--replay" => replay = args.next().map(PathBuf::from),
            "-h" | "--help" => {
                eprintln!(
                    "usage: fuzz-driver [{}|all] [--seconds N] [--seed S] [--replay FILE]",
                    TARGETS.join("|")
                );
                return ExitCode::SUCCESS;
            }
            name => target = name.to_string(),
        }
    }
    let targets: Vec<&str> = if target == "all" {
        TARGETS.to_vec()
    } else if let Some(t) = TARGETS.iter().find(|t| **t == target) {
        vec![*t]
    } else {
        eprintln!("unknown target {target}; targets: {}", TARGETS.join(", "));
        return ExitCode::from(2);
    };
    if let Some(file) = replay {
        let data = std::fs::read(&file).expect("the file to replay");
        for t in targets {
            airlock_fuzz::run(t, &data);
            eprintln!("{t}: {} ran without a crash", file.display());
        }
        return ExitCode::SUCCESS;
    }
    let seed = seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
    });
    // Time is shared between the targets.
    let each = Duration::from_secs(seconds) / targets.len() as u32;
    let mut failed = false;
    for t in targets {
        failed |= !fuzz(t, each, seed);
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// Runs `target` for `time`; false when an input made it panic.
fn fuzz(target: &str, time: Duration, seed: u64) -> bool {
    let mut rng = Rng(seed ^ 0x9e37_79b9_7f4a_7c15);
    let mut pool = load_seeds(target);
    pool.extend(builtin_seeds(target));
    let dictionary = dictionary();
    eprintln!(
        "{target}: {} seed input(s), {:?}, --seed {seed}",
        pool.len(),
        time
    );
    // Quiet panics: the driver reports the failing input itself.
    std::panic::set_hook(Box::new(|_| {}));
    let started = Instant::now();
    let mut runs = 0u64;
    let mut next_report = Duration::from_secs(60);
    loop {
        // Check the clock every few runs only.
        if runs.is_multiple_of(64) {
            let elapsed = started.elapsed();
            if elapsed >= time {
                break;
            }
            if elapsed >= next_report {
                eprintln!(
                    "{target}: {runs} runs in {}s, pool {}",
                    elapsed.as_secs(),
                    pool.len()
                );
                next_report += Duration::from_secs(60);
            }
        }
        let input = make_input(target, &mut rng, &pool, &dictionary);
        runs += 1;
        let outcome = std::panic::catch_unwind(|| airlock_fuzz::run(target, &input));
        if outcome.is_err() {
            let _ = std::panic::take_hook();
            let path = save_crash(target, &input);
            // Run it again with the normal hook, to show the message.
            let again = std::panic::catch_unwind(|| airlock_fuzz::run(target, &input));
            eprintln!(
                "{target}: CRASH after {runs} runs ({}): input saved to {}{}",
                if again.is_err() {
                    "reproducible"
                } else {
                    "not reproducible"
                },
                path.display(),
                preview(&input)
            );
            return false;
        }
        // Keep some inputs that are still JSON: they carry structure for
        // later mutations.
        if serde_json::from_slice::<serde_json::Value>(skip_pick(target, &input)).is_ok()
            && rng.below(8) == 0
        {
            if pool.len() < 2000 {
                pool.push(input);
            } else {
                let at = rng.below(pool.len());
                pool[at] = input;
            }
        }
    }
    let _ = std::panic::take_hook();
    let secs = started.elapsed().as_secs_f64();
    eprintln!(
        "{target}: done: {runs} runs in {secs:.0}s ({:.0}/s), 0 crashes",
        runs as f64 / secs.max(0.001)
    );
    true
}

fn preview(input: &[u8]) -> String {
    if input.len() <= 400 {
        format!("\n  input: {:?}", String::from_utf8_lossy(input))
    } else {
        format!("\n  input: {} bytes", input.len())
    }
}

fn save_crash(target: &str, input: &[u8]) -> PathBuf {
    let dir = fuzz_dir().join("artifacts").join(target);
    let _ = std::fs::create_dir_all(&dir);
    // FNV-1a names the file after the content.
    let hash = input.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    });
    let path = dir.join(format!("crash-{hash:016x}"));
    let _ = std::fs::write(&path, input);
    path
}

fn load_seeds(target: &str) -> Vec<Vec<u8>> {
    let mut seeds = Vec::new();
    for dir in ["seeds", "corpus"] {
        let Ok(entries) = std::fs::read_dir(fuzz_dir().join(dir).join(target)) else {
            continue;
        };
        for entry in entries.flatten() {
            if let Ok(data) = std::fs::read(entry.path())
                && data.len() <= 64 * 1024
            {
                seeds.push(data);
            }
        }
    }
    seeds
}

fn builtin_seeds(target: &str) -> Vec<Vec<u8>> {
    let texts: &[&str] = match target {
        "jsonrpc_decode" => &[
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":"a","method":"tools/list","params":{"cursor":"YWZ0ZXI6eA"}}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"lookup_price","arguments":{"sku":"SKU-1"},"_meta":{"progressToken":1}}}"#,
            r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"}]"#,
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
            r#"{"jsonrpc":"2.0","id":"e","result":{"action":"accept","content":{"confirm":true}}}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"logging/setLevel","params":{"level":"debug"}}"#,
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{}}}"#,
        ],
        _ => &[],
    };
    let mut seeds: Vec<Vec<u8>> = texts.iter().map(|t| t.as_bytes().to_vec()).collect();
    if target == "prepare_arguments" {
        for pick in 0..airlock_fuzz::schema_count() as u8 {
            for args in [&b"{}"[..], b"null", b"[]", br#"["1", 2, true]"#] {
                let mut seed = vec![pick];
                seed.extend_from_slice(args);
                seeds.push(seed);
            }
        }
        let mut own = vec![0xff];
        own.extend_from_slice(br#"{"type":"object","properties":{"a":{"type":"integer"}}}"#);
        own.push(0);
        own.extend_from_slice(br#"{"a":"7"}"#);
        seeds.push(own);
    }
    seeds
}

/// The JSON part of an input (after the schema choice byte).
fn skip_pick<'a>(target: &str, input: &'a [u8]) -> &'a [u8] {
    match (target, input.split_first()) {
        ("prepare_arguments", Some((_, rest))) => rest,
        _ => input,
    }
}

fn dictionary() -> Vec<Vec<u8>> {
    let words = [
        "{",
        "}",
        "[",
        "]",
        ",",
        ":",
        "\"",
        "\\",
        "null",
        "true",
        "false",
        "0",
        "-0",
        "1",
        "-1",
        "0.5",
        "1e400",
        "-1e400",
        "1e-400",
        "1180591620717411303424",
        "18446744073709551616",
        "-9223372036854775809",
        "9007199254740993",
        "1.0",
        "\"\\ud800\"",
        "\"\\u0000\"",
        "\"\"",
        "\"jsonrpc\"",
        "\"2.0\"",
        "\"id\"",
        "\"method\"",
        "\"params\"",
        "\"result\"",
        "\"error\"",
        "\"initialize\"",
        "\"ping\"",
        "\"tools/list\"",
        "\"tools/call\"",
        "\"logging/setLevel\"",
        "\"notifications/initialized\"",
        "\"notifications/cancelled\"",
        "\"requestId\"",
        "\"cursor\"",
        "\"name\"",
        "\"arguments\"",
        "\"_meta\"",
        "\"progressToken\"",
        "\"protocolVersion\"",
        "\"capabilities\"",
        "\"elicitation\"",
        "\"level\"",
        "\"2025-11-25\"",
        "\"2025-06-18\"",
        "\"type\"",
        "\"object\"",
        "\"properties\"",
        "\"required\"",
        "\"items\"",
        "\"$ref\"",
        "\"#/$defs/a\"",
        "\"$defs\"",
        "\"enum\"",
        "\"default\"",
        "\"format\"",
        "\"date-time\"",
        "\"additionalProperties\"",
        "\"anyOf\"",
        "\"integer\"",
        "\"number\"",
        "\"string\"",
        "\"boolean\"",
        "\"array\"",
        "\"sku\"",
        "\"units\"",
        "\"customer_id\"",
        "\"max_age_days\"",
        "\"include_header\"",
        "\"value\"",
        "\"count\"",
        "\"ratio\"",
        "\"colour\"",
        "\"at\"",
        "\"ids\"",
        "\"2024-02-30T25:00:00Z\"",
        "\u{e9}",
        "\u{feff}",
        " ",
        "\n",
    ];
    let mut words: Vec<Vec<u8>> = words.iter().map(|w| w.as_bytes().to_vec()).collect();
    // Not UTF-8.
    words.extend([vec![0xff], vec![0xc3], vec![0xed, 0xa0, 0x80]]);
    words
}

/// A small, fast, seedable generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0.max(1);
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }

    fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }
}

const MAX_INPUT: usize = 1024 * 1024;

fn make_input(target: &str, rng: &mut Rng, pool: &[Vec<u8>], dict: &[Vec<u8>]) -> Vec<u8> {
    let mut input = match rng.below(10) {
        // A fresh, random JSON document.
        0..=2 => {
            let mut out = Vec::new();
            if target == "prepare_arguments" {
                out.push(rng.next() as u8);
            }
            if target == "jsonrpc_decode" && rng.chance(2) {
                envelope(rng, dict, &mut out);
            } else {
                json_value(rng, dict, 0, &mut out);
            }
            out
        }
        // A very deep document (stack safety).
        3 if rng.chance(20) => {
            let depth = 1 + rng.below(200_000);
            let (open, close) = if rng.chance(2) {
                ("[", "]")
            } else {
                ("{\"a\":", "}")
            };
            let mut out = Vec::new();
            if target == "prepare_arguments" {
                out.push(rng.next() as u8);
                out.extend_from_slice(b"{\"x\":");
            }
            out.extend(open.repeat(depth).bytes());
            out.extend(b"1");
            out.extend(close.repeat(depth).bytes());
            if target == "prepare_arguments" {
                out.push(b'}');
            }
            out
        }
        // A mutated pool entry.
        _ if !pool.is_empty() => pool[rng.below(pool.len())].clone(),
        _ => Vec::new(),
    };
    let mutations = 1 + rng.below(6);
    for _ in 0..mutations {
        mutate(rng, pool, dict, &mut input);
    }
    input.truncate(MAX_INPUT);
    input
}

fn mutate(rng: &mut Rng, pool: &[Vec<u8>], dict: &[Vec<u8>], input: &mut Vec<u8>) {
    let len = input.len();
    match rng.below(10) {
        0 if len > 0 => {
            let at = rng.below(len);
            input[at] ^= 1 << rng.below(8);
        }
        1 if len > 0 => {
            let at = rng.below(len);
            input[at] = rng.next() as u8;
        }
        2 => {
            let at = rng.below(len + 1);
            input.insert(at, rng.next() as u8);
        }
        3 if len > 0 => {
            let at = rng.below(len);
            let n = 1 + rng.below((len - at).min(32));
            input.drain(at..at + n);
        }
        4 | 5 => {
            let at = rng.below(len + 1);
            let word = &dict[rng.below(dict.len())];
            input.splice(at..at, word.iter().copied());
        }
        6 if len > 0 => {
            // Duplicate a range, sometimes many times.
            let at = rng.below(len);
            let n = 1 + rng.below((len - at).min(64));
            let chunk = input[at..at + n].to_vec();
            let times = if rng.chance(8) { 1 + rng.below(200) } else { 1 };
            for _ in 0..times {
                input.splice(at..at, chunk.iter().copied());
            }
        }
        7 if !pool.is_empty() => {
            // Splice with another input.
            let other = &pool[rng.below(pool.len())];
            let from = rng.below(other.len() + 1);
            let at = rng.below(len + 1);
            input.truncate(at);
            input.extend_from_slice(&other[from..]);
        }
        8 if len > 0 => input.truncate(rng.below(len)),
        9 => {
            // Wrap in an array (a batch, for the protocol).
            input.insert(0, b'[');
            input.push(b']');
        }
        _ => {}
    }
}

fn envelope(rng: &mut Rng, dict: &[Vec<u8>], out: &mut Vec<u8>) {
    let batch = rng.chance(4);
    let count = if batch { 1 + rng.below(8) } else { 1 };
    if batch {
        out.push(b'[');
    }
    for i in 0..count {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"jsonrpc\":\"2.0\"");
        if !rng.chance(4) {
            out.extend_from_slice(b",\"id\":");
            json_scalar(rng, dict, out);
        }
        let methods = [
            "initialize",
            "ping",
            "tools/list",
            "tools/call",
            "logging/setLevel",
            "notifications/initialized",
            "notifications/cancelled",
            "resources/list",
        ];
        out.extend_from_slice(b",\"method\":\"");
        out.extend_from_slice(methods[rng.below(methods.len())].as_bytes());
        out.push(b'"');
        if !rng.chance(4) {
            out.extend_from_slice(b",\"params\":");
            json_value(rng, dict, 1, out);
        }
        out.push(b'}');
    }
    if batch {
        out.push(b']');
    }
}

fn json_scalar(rng: &mut Rng, dict: &[Vec<u8>], out: &mut Vec<u8>) {
    match rng.below(6) {
        0 => out.extend_from_slice(b"null"),
        1 => out.extend_from_slice(if rng.chance(2) { b"true" } else { b"false" }),
        2 => out.extend_from_slice((rng.next() as i64 >> rng.below(64)).to_string().as_bytes()),
        3 => out.extend_from_slice(format!("{}", f64::from_bits(rng.next())).as_bytes()),
        4 => {
            // A dictionary word that is itself a JSON scalar, or a string.
            let word = &dict[rng.below(dict.len())];
            if serde_json::from_slice::<serde_json::Value>(word).is_ok() {
                out.extend_from_slice(word);
            } else {
                out.extend_from_slice(format!("{:?}", String::from_utf8_lossy(word)).as_bytes());
            }
        }
        _ => {
            let n = rng.below(12);
            let text: String = (0..n)
                .map(|_| char::from_u32(rng.below(0x11_0000) as u32).unwrap_or('x'))
                .collect();
            out.extend_from_slice(serde_json::Value::String(text).to_string().as_bytes());
        }
    }
}

fn json_value(rng: &mut Rng, dict: &[Vec<u8>], depth: usize, out: &mut Vec<u8>) {
    let container = depth < 5 && rng.below(3 + depth) < 2;
    if !container {
        return json_scalar(rng, dict, out);
    }
    let n = rng.below(6);
    if rng.chance(2) {
        out.push(b'[');
        for i in 0..n {
            if i > 0 {
                out.push(b',');
            }
            json_value(rng, dict, depth + 1, out);
        }
        out.push(b']');
    } else {
        out.push(b'{');
        for i in 0..n {
            if i > 0 {
                out.push(b',');
            }
            // Keys from the dictionary's strings, mostly.
            let word = &dict[rng.below(dict.len())];
            if word.first() == Some(&b'"') && serde_json::from_slice::<String>(word).is_ok() {
                out.extend_from_slice(word);
            } else {
                out.extend_from_slice(b"\"k\"");
            }
            out.push(b':');
            json_value(rng, dict, depth + 1, out);
        }
        out.push(b'}');
    }
}
