//! The plain JSON-RPC 2.0 endpoint: each tool is a method named after it,
//! `params` by name (object) or by position (array, in the schema's
//! property order). The result is the tool's own value: its structured
//! result, unwrapped when the SDK wrapped a non-object value as
//! `{"result": …}` for MCP; else its content blocks. Errors use the
//! standard codes; a tool's own failure is `-32000` with its message.
//! Nothing internal reaches the client.
//!
//! `rpc.discover` answers the OpenRPC document of the methods the caller
//! may use ([`super::openrpc`]). A read-only tool that is not destructive
//! may also be called as `GET /rpc?method=NAME&params=JSON&id=ID`
//! ([`get_call`], [`handle_get`]): the same call as a POST of that
//! request.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::Arc;

use serde_json::{Value, json};

use super::jsonrpc::{self, ErrorObject, Id, Incoming, Message, Request};
use super::mcp::Server;
use super::openrpc;
use crate::call::{CallError, Caller};
use crate::observe::Unobserved;
use crate::policy::Token;
use crate::sandbox::RunError;

/// What a body produced: a response (single or batch), or nothing because
/// every call was a notification.
pub async fn handle(
    server: &Arc<Server>,
    token: Option<&Token>,
    peer: SocketAddr,
    incoming: Incoming,
) -> Option<Value> {
    let caller = Caller::of(token, Caller::Peer(peer));
    match incoming {
        Incoming::Error(error) => Some(jsonrpc::error_response(&Id::null(), &error)),
        Incoming::Single(message) => one(server, token, &caller, message).await,
        Incoming::Batch(messages) => {
            // Calls of a batch run side by side; responses keep the batch order.
            let tasks: Vec<_> = messages
                .into_iter()
                .map(|m| {
                    let server = server.clone();
                    let token = token.cloned();
                    let caller = caller.clone();
                    tokio::spawn(async move { one(&server, token.as_ref(), &caller, m).await })
                })
                .collect();
            let mut responses = Vec::new();
            for task in tasks {
                match task.await {
                    Ok(Some(response)) => responses.push(response),
                    Ok(None) => {}
                    Err(err) => {
                        tracing::error!("a batch call failed: {err}");
                        responses.push(jsonrpc::error_response(
                            &Id::null(),
                            &ErrorObject::internal(),
                        ));
                    }
                }
            }
            (!responses.is_empty()).then_some(Value::Array(responses))
        }
    }
}

async fn one(
    server: &Arc<Server>,
    token: Option<&Token>,
    caller: &Caller,
    message: Message,
) -> Option<Value> {
    let request = match message {
        Message::Request(request) => request,
        Message::Invalid(id, error) => return Some(jsonrpc::error_response(&id, &error)),
        // Nothing here sends requests, so a response is not valid input.
        Message::Reply(reply) => {
            return Some(jsonrpc::error_response(
                &reply.id,
                &ErrorObject::invalid_request("no method"),
            ));
        }
    };
    let result = call(
        server,
        token,
        caller,
        &request.method,
        request.params,
        Door::Post,
    )
    .await;
    let id = request.id?;
    Some(match result {
        Ok(value) => jsonrpc::response(&id, value),
        Err(error) => jsonrpc::error_response(&id, &error),
    })
}

/// How a call came: a POST may call any tool, a GET only one that
/// [`openrpc::allows_get`] (checked on the tool the call runs, so a hot
/// reload between [`get_call`]'s look and the call changes nothing).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Door {
    Post,
    Get,
}

/// Runs one tool as a method, in its span when exporting traces (the tool
/// named, the JSON-RPC error's code; never its arguments or result).
async fn call(
    server: &Arc<Server>,
    token: Option<&Token>,
    caller: &Caller,
    method: &str,
    params: Option<Value>,
    door: Door,
) -> Result<Value, ErrorObject> {
    use crate::telemetry::{self, FutureExt as _, RequestInfo};
    let span = telemetry::on().then(|| {
        telemetry::Request::start(RequestInfo {
            method,
            plain_rpc: true,
            tool: Some(method),
            transport: "tcp",
            ..RequestInfo::default()
        })
    });
    let Some(span) = span.flatten() else {
        return call_tool(server, token, caller, method, params, door).await;
    };
    let result = call_tool(server, token, caller, method, params, door)
        .with_context(span.context())
        .await;
    span.end(result.as_ref().err().map(|e| (e.code.to_string(), None)));
    result
}

/// Runs one tool as a method (no one can confirm a destructive call here).
async fn call_tool(
    server: &Arc<Server>,
    token: Option<&Token>,
    caller: &Caller,
    method: &str,
    params: Option<Value>,
    door: Door,
) -> Result<Value, ErrorObject> {
    if method == openrpc::DISCOVER {
        return Ok(openrpc::document(&server.runtime.catalog(), token));
    }
    if token.is_some_and(|t| !t.allows_tool(method)) {
        return Err(ErrorObject::method_not_found(method));
    }
    let prepared = server
        .runtime
        .prepare(caller.clone(), method, params.unwrap_or(Value::Null))
        .map_err(|e| error_for(method, &e))?;
    if door == Door::Get && !openrpc::allows_get(&prepared.tool().info.hints) {
        return Err(post_only(method));
    }
    let wrapped = prepared.tool().info.wraps_result();
    // The HTTP client hanging up drops this future, which stops the guest.
    match prepared.run_on_lane(Arc::new(Unobserved)).await {
        Some(Ok(output)) => Ok(match output.structured {
            Some(Value::Object(mut map)) if wrapped => map.remove("result").unwrap_or(Value::Null),
            Some(structured) => structured,
            None => Value::Array(output.content.iter().map(|c| c.to_mcp()).collect()),
        }),
        Some(Err(err)) => Err(error_for(method, &err)),
        None => {
            tracing::error!(tool = method, "the call's thread failed");
            Err(ErrorObject::internal())
        }
    }
}

/// Maps a call error to the JSON-RPC error the client sees.
pub fn error_for(method: &str, err: &CallError) -> ErrorObject {
    match err {
        CallError::UnknownTool(_) => ErrorObject::method_not_found(method),
        CallError::InvalidArguments(arg) => {
            let error = ErrorObject::invalid_params(arg.to_string());
            match arg.parameter() {
                Some(p) => error.with_data(json!({ "parameter": p })),
                None => error,
            }
        }
        CallError::Run(RunError::InvalidArguments(message))
        | CallError::NotFound(message)
        | CallError::InvalidParams(message) => ErrorObject::invalid_params(message.clone()),
        CallError::Refused(refusal) => {
            ErrorObject::new(jsonrpc::NOT_PERMITTED, refusal.to_string())
        }
        // Like HTTP's Retry-After: a place is usually free again soon.
        CallError::Busy { .. } => ErrorObject::new(jsonrpc::BUSY, err.to_string())
            .with_data(json!({ "retryAfterMs": 1000 })),
        CallError::Run(RunError::Setup(why)) => {
            // Setup errors may name host paths: log them, say less.
            tracing::error!(tool = method, "cannot set up the call: {why}");
            ErrorObject::new(
                jsonrpc::TOOL_FAILED,
                "the call could not be set up; see the server log",
            )
        }
        CallError::Run(run) => ErrorObject::new(jsonrpc::TOOL_FAILED, run.to_string())
            .with_data(json!({ "kind": run.kind() })),
    }
}

/// `GET /rpc/describe`: every method with its parameters, hints and
/// description, as plain text.
pub fn describe(server: &Server, token: Option<&Token>) -> String {
    let catalog = server.runtime.catalog();
    let mut text = String::from(
        "JSON-RPC 2.0 methods (POST /rpc; params by name as an object, or by position as an \
         array in the order below; the methods marked GET also as \
         GET /rpc?method=NAME&params=JSON; rpc.discover or GET /rpc/openrpc.json answers \
         their OpenRPC document)\n",
    );
    let mut any = false;
    for tool in catalog.tools() {
        if token.is_some_and(|t| !t.allows_tool(&tool.info.name)) {
            continue;
        }
        any = true;
        let info = &tool.info;
        let _ = writeln!(text, "\n{}", info.name);
        if let Some(title) = &info.title {
            let _ = writeln!(text, "  title: {title}");
        }
        let hints = info.hints.names();
        let hints = if hints.is_empty() {
            "none".to_string()
        } else {
            hints.join(", ")
        };
        let _ = writeln!(text, "  hints: {hints}");
        let _ = writeln!(
            text,
            "  calls: {}",
            if openrpc::allows_get(&info.hints) {
                "POST, GET"
            } else {
                "POST only (not read-only, or destructive)"
            }
        );
        for line in info.description.lines() {
            let _ = writeln!(text, "  {line}");
        }
        let parameters = tool.args.parameters();
        if parameters.is_empty() {
            let _ = writeln!(text, "  parameters: none");
        } else {
            let _ = writeln!(text, "  parameters:");
        }
        for (i, p) in parameters.iter().enumerate() {
            let _ = write!(
                text,
                "    {}. {}: {} ({})",
                i + 1,
                p.name,
                p.type_label,
                p.requirement()
            );
            match &p.description {
                Some(d) => {
                    let _ = writeln!(text, " — {d}");
                }
                None => text.push('\n'),
            }
        }
    }
    if !any {
        text.push_str("\n(no methods)\n");
    }
    text
}

/// What `GET /rpc` asks for, read from its query.
pub enum GetCall {
    /// The request to run through [`handle_get`]; `cacheable` when the tool
    /// is idempotent (read-only it is, or it would not be here).
    Run { request: Request, cacheable: bool },
    /// A tool that is not read-only, or is destructive: only POST calls it,
    /// whatever the policy allows. The error response says so.
    PostOnly(Value),
    /// A query that names no method, or repeats or garbles a key.
    Bad(Value),
}

/// Reads `method=NAME&params=JSON&id=ID` (URL-encoded; `params` and `id`
/// may be left out, `id` is JSON or else a string, null when absent). A
/// method the caller may not see goes on to [`handle_get`], which answers
/// it as a POST is answered (`-32601`).
pub fn get_call(server: &Server, token: Option<&Token>, query: &str) -> GetCall {
    let (mut method, mut params, mut id) = (None, None, None);
    for (key, value) in url::form_urlencoded::parse(query.as_bytes()) {
        let slot = match key.as_ref() {
            "method" => &mut method,
            "params" => &mut params,
            "id" => &mut id,
            other => return bad(&format!("unknown query key {:?}", shorten(other))),
        };
        if slot.replace(value.into_owned()).is_some() {
            return bad(&format!("{key} given twice"));
        }
    }
    let Some(method) = method else {
        return bad("GET /rpc needs ?method=NAME (and &params=JSON, &id=ID when wanted)");
    };
    let id = match id {
        None => Id::null(),
        Some(text) => serde_json::from_str(&text)
            .ok()
            .and_then(Id::from_value)
            .unwrap_or_else(|| Id::from_value(Value::String(text)).unwrap_or_else(Id::null)),
    };
    let params = match params.map(|text| serde_json::from_str::<Value>(&text)) {
        None => None,
        Some(Ok(params @ (Value::Object(_) | Value::Array(_)))) => Some(params),
        Some(_) => {
            let error = ErrorObject::invalid_params("params must be a JSON object or array");
            return GetCall::Bad(jsonrpc::error_response(&id, &error));
        }
    };
    let catalog = server.runtime.catalog();
    let visible = token.is_none_or(|t| t.allows_tool(&method));
    let mut cacheable = false;
    if let Some(tool) = catalog.tool(&method).filter(|_| visible) {
        if !openrpc::allows_get(&tool.info.hints) {
            return GetCall::PostOnly(jsonrpc::error_response(&id, &post_only(&method)));
        }
        cacheable = tool.info.hints.idempotent;
    }
    let request = Request {
        id: Some(id),
        method,
        params,
    };
    GetCall::Run { request, cacheable }
}

/// Runs a request of `GET /rpc` as [`handle`] runs a POSTed one, but only
/// a tool [`openrpc::allows_get`] (`rpc.discover` too).
pub async fn handle_get(
    server: &Arc<Server>,
    token: Option<&Token>,
    peer: SocketAddr,
    request: Request,
) -> Value {
    let caller = Caller::of(token, Caller::Peer(peer));
    let id = request.id.unwrap_or_else(Id::null);
    let method = request.method;
    match call(server, token, &caller, &method, request.params, Door::Get).await {
        Ok(value) => jsonrpc::response(&id, value),
        Err(error) => jsonrpc::error_response(&id, &error),
    }
}

/// The error a GET of a tool that is not read-only, or is destructive, gets.
fn post_only(method: &str) -> ErrorObject {
    ErrorObject::invalid_request(&format!(
        "{} is not read-only, or is destructive: call it with POST /rpc",
        shorten(method)
    ))
}

fn bad(why: &str) -> GetCall {
    GetCall::Bad(jsonrpc::error_response(
        &Id::null(),
        &ErrorObject::invalid_request(why),
    ))
}

/// At most 100 characters of a name a client sent.
fn shorten(text: &str) -> String {
    text.chars().take(100).collect()
}
