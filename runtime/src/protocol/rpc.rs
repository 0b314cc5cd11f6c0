//! The plain JSON-RPC 2.0 endpoint: each tool is a method named after it,
//! `params` by name (object) or by position (array, in the schema's
//! property order). The result is the tool's own value: its structured
//! result, unwrapped when the SDK wrapped a non-object value as
//! `{"result": …}` for MCP; else its content blocks. Errors use the
//! standard codes; a tool's own failure is `-32000` with its message.
//! Nothing internal reaches the client.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::Arc;

use serde_json::{Value, json};

use super::jsonrpc::{self, ErrorObject, Id, Incoming, Message};
use super::mcp::Server;
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
    let caller = match token {
        Some(token) => Caller::Token(token.name.clone()),
        None => Caller::Peer(peer),
    };
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
    let result = call(server, token, caller, &request.method, request.params).await;
    let id = request.id?;
    Some(match result {
        Ok(value) => jsonrpc::response(&id, value),
        Err(error) => jsonrpc::error_response(&id, &error),
    })
}

/// Runs one tool as a method (no one can confirm a destructive call here).
async fn call(
    server: &Arc<Server>,
    token: Option<&Token>,
    caller: &Caller,
    method: &str,
    params: Option<Value>,
) -> Result<Value, ErrorObject> {
    if token.is_some_and(|t| !t.allows_tool(method)) {
        return Err(ErrorObject::method_not_found(method));
    }
    let prepared = server
        .runtime
        .prepare(caller.clone(), method, params.unwrap_or(Value::Null))
        .map_err(|e| error_for(method, &e))?;
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
        CallError::Run(RunError::InvalidArguments(message)) => {
            ErrorObject::invalid_params(message.clone())
        }
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
         array in the order below)\n",
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
