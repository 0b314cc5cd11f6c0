//! The fuzz targets of airlock's front door, as plain functions so that both
//! libFuzzer (`cargo +nightly fuzz run TARGET`, see `fuzz_targets/`) and the
//! stable driver (`cargo xtask fuzz`, see `src/bin/driver.rs`) run exactly
//! the same code. Each function panics when an invariant breaks; a crash is
//! a panic (or worse) on some input.
//!
//! - [`jsonrpc_decode`]: bytes → `jsonrpc::parse` (single messages and
//!   batches) → an initialized MCP session and the plain `/rpc` handler,
//!   over a runtime with no tools. Every answer must be a well-formed
//!   JSON-RPC response of bounded size.
//! - [`prepare_arguments`]: the first byte picks one of the real input
//!   schemas (`schemas/*.json`, from `airlock inspect --json` of the
//!   first-party components plus a few richer ones); the rest is argument
//!   JSON for `ArgumentSchema::prepare`. With first byte `0xff` the input is
//!   instead `schema JSON \0 argument JSON`: fuzzed schemas through
//!   `ArgumentSchema::compile`, then `prepare`.

use std::sync::{Arc, OnceLock};

use airlock::Runtime;
use airlock::args::ArgumentSchema;
use airlock::call::Caller;
use airlock::policy::Policy;
use airlock::protocol::jsonrpc::{self, Incoming, MAX_BATCH, Message};
use airlock::protocol::mcp::{self, Server};
use airlock::protocol::outbox::Outbox;
use airlock::protocol::rpc;
use airlock::sandbox::{Sandbox, SandboxConfig};
use serde_json::Value;

/// The names of the targets, for drivers.
pub const TARGETS: [&str; 2] = ["jsonrpc_decode", "prepare_arguments"];

/// Runs the target called `name` on `data`; `false` for an unknown name.
pub fn run(name: &str, data: &[u8]) -> bool {
    match name {
        "jsonrpc_decode" => jsonrpc_decode(data),
        "prepare_arguments" => prepare_arguments(data),
        _ => return false,
    }
    true
}

/// Most bytes one answer may take beyond what the client sent: an answer
/// echoes at most the id and a shortened method name, or is a fixed result
/// (initialize, an empty tool list).
const ANSWER_SLACK: usize = 4096;

struct Decoding {
    tokio: tokio::runtime::Runtime,
    server: Arc<Server>,
}

fn decoding() -> &'static Decoding {
    static STATE: OnceLock<Decoding> = OnceLock::new();
    STATE.get_or_init(|| {
        let sandbox =
            Sandbox::new(&SandboxConfig::default().cache(None).instances(2)).expect("a sandbox");
        let runtime = Arc::new(Runtime::new(sandbox, Policy::default()));
        let tokio = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime");
        Decoding {
            tokio,
            server: Server::new(runtime),
        }
    })
}

const INITIALIZE: &[u8] = br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"fuzz","version":"1"}}}"#;

/// Bytes → JSON-RPC/MCP decoding and dispatch.
pub fn jsonrpc_decode(data: &[u8]) {
    let incoming = jsonrpc::parse(data);
    match &incoming {
        Incoming::Batch(items) => {
            assert!(!items.is_empty() && items.len() <= MAX_BATCH, "batch size");
            items.iter().for_each(check_message);
        }
        Incoming::Single(message) => check_message(message),
        Incoming::Error(error) => {
            assert!(matches!(
                error.code,
                jsonrpc::PARSE_ERROR | jsonrpc::INVALID_REQUEST
            ));
        }
    }

    let state = decoding();
    // Nobody reads the stream: notifications are dropped, as for a client
    // that never reads.
    let out = Outbox::closed();
    let (mcp, rpc) = state.tokio.block_on(async {
        // A fresh session per input; initialized first for inputs of even
        // length, so both the uninitialized and the initialized paths run.
        let server = &state.server;
        let session = server.open_session(None, Caller::Stdio);
        if data.len().is_multiple_of(2) {
            let init = mcp::handle(server, &session, jsonrpc::parse(INITIALIZE), None, &out).await;
            assert!(init.error.is_none() && init.body.is_some());
        }
        let mcp = mcp::handle(server, &session, incoming.clone(), None, &out)
            .await
            .body;
        let peer = std::net::SocketAddr::from(([127, 0, 0, 1], 1));
        let rpc = rpc::handle(&state.server, None, peer, incoming.clone()).await;
        (mcp, rpc)
    });
    for answer in [mcp, rpc].into_iter().flatten() {
        check_answer(&incoming, &answer, data.len());
    }
}

fn check_message(message: &Message) {
    match message {
        Message::Request(request) => {
            if let Some(params) = &request.params {
                assert!(params.is_object() || params.is_array(), "params shape");
            }
            if let Some(id) = &request.id {
                check_id(id.as_value());
            }
        }
        Message::Reply(reply) => check_id(reply.id.as_value()),
        Message::Invalid(id, error) => {
            check_id(id.as_value());
            assert_eq!(error.code, jsonrpc::INVALID_REQUEST);
        }
    }
}

fn check_id(id: &Value) {
    assert!(
        id.is_string() || id.is_number() || id.is_null(),
        "id type: {id}"
    );
}

/// An answer is one response, or a non-empty array of them for a batch;
/// each has `jsonrpc`, an allowed id and exactly one of result/error; none
/// is much larger than the input.
fn check_answer(incoming: &Incoming, answer: &Value, input: usize) {
    let responses: Vec<&Value> = match (incoming, answer) {
        (Incoming::Batch(items), Value::Array(responses)) => {
            assert!(!responses.is_empty() && responses.len() <= items.len());
            responses.iter().collect()
        }
        (Incoming::Batch(_), other) => panic!("a batch answered with {other}"),
        (_, single) => vec![single],
    };
    for response in responses {
        let object = response.as_object().expect("a response object");
        assert_eq!(object.get("jsonrpc"), Some(&Value::from("2.0")));
        check_id(object.get("id").expect("an id"));
        assert!(
            object.contains_key("result") != object.contains_key("error"),
            "exactly one of result and error: {response}"
        );
        if let Some(error) = object.get("error") {
            assert!(error["code"].is_i64(), "{error}");
            assert!(error["message"].is_string(), "{error}");
        }
        let size = response.to_string().len();
        assert!(
            size <= input + ANSWER_SLACK,
            "a {size}-byte answer to a {input}-byte input: {response}"
        );
    }
}

struct Schemas {
    compiled: Vec<(String, ArgumentSchema)>,
}

fn schemas() -> &'static Schemas {
    static SCHEMAS: OnceLock<Schemas> = OnceLock::new();
    SCHEMAS.get_or_init(|| {
        let mut compiled = Vec::new();
        for text in [
            include_str!("../schemas/components.json"),
            include_str!("../schemas/extra.json"),
        ] {
            let all: serde_json::Map<String, Value> =
                serde_json::from_str(text).expect("schemas/*.json");
            for (name, schema) in all {
                let schema = ArgumentSchema::compile(&schema)
                    .unwrap_or_else(|e| panic!("schema {name}: {e}"));
                compiled.push((name, schema));
            }
        }
        Schemas { compiled }
    })
}

/// How many schemas the first byte chooses from.
pub fn schema_count() -> usize {
    schemas().compiled.len()
}

/// The longest argument error message accepted: values, names and lists in
/// messages are cut, so messages stay short whatever the client sends.
const MESSAGE_LIMIT: usize = 16 * 1024;

/// (schema choice, argument JSON) → `ArgumentSchema::prepare`; or, after a
/// `0xff` byte, (schema JSON, `\0`, argument JSON) → `compile` + `prepare`.
pub fn prepare_arguments(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    if pick == 0xff {
        let (schema_text, args_text) = match rest.iter().position(|&b| b == 0) {
            Some(at) => (&rest[..at], &rest[at + 1..]),
            None => (rest, &b"{}"[..]),
        };
        let Ok(schema_json) = serde_json::from_slice::<Value>(schema_text) else {
            return;
        };
        let Ok(schema) = ArgumentSchema::compile(&schema_json) else {
            return;
        };
        for parameter in schema.parameters() {
            assert!(!parameter.type_label.is_empty());
            let _ = parameter.requirement();
        }
        prepare_with(&schema, args_text);
        return;
    }
    let schemas = &schemas().compiled;
    let (_, schema) = &schemas[usize::from(pick) % schemas.len()];
    prepare_with(schema, rest);
}

fn prepare_with(schema: &ArgumentSchema, args_text: &[u8]) {
    let Ok(raw) = serde_json::from_slice::<Value>(args_text) else {
        return;
    };
    match schema.prepare(raw) {
        Ok(prepared) => {
            assert!(prepared.is_object(), "prepared arguments are an object");
            // What prepare produced is accepted again, unchanged.
            match schema.prepare(prepared.clone()) {
                Ok(again) => assert_eq!(again, prepared, "prepare is idempotent"),
                Err(err) => panic!("prepared arguments {prepared} refused: {err}"),
            }
        }
        Err(err) => {
            let message = err.to_string();
            assert!(!message.is_empty());
            assert!(
                message.len() <= MESSAGE_LIMIT,
                "a {}-byte message",
                message.len()
            );
        }
    }
}
