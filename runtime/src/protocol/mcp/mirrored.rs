//! A 2026-07-28 `tools/call`'s mirrored parameters (`x-mcp-header`): the
//! `Mcp-Param-*` headers a tool's schema asks for must say what its
//! arguments say, checked before the tool runs. The method table names this
//! check for `tools/call` ([`super::dispatch::Before::ChecksHeaders`]); an
//! HTTP transport runs it with its request's headers.

use serde_json::Value;

use super::request::HEADER_MISMATCH;
use super::server::Server;
use crate::args::check_param_headers;
use crate::policy::Token;
use crate::protocol::jsonrpc::{ErrorObject, Request};

/// Checks the headers `header` reads against `request`'s arguments, for the
/// parameters its tool mirrors: -32020 when one is missing or says something
/// else. A tool that is not served, or not to this token, is left to the
/// call, which answers it as unknown (the headers must not tell what the
/// token cannot see).
pub fn check<'h>(
    server: &Server,
    token: Option<&Token>,
    request: &Request,
    header: &'h dyn Fn(&str) -> Option<&'h str>,
) -> Result<(), ErrorObject> {
    let params = request.params.as_ref();
    let Some(name) = params.and_then(|p| p.get("name")).and_then(Value::as_str) else {
        return Ok(());
    };
    let catalog = server.runtime.catalog();
    let Some(tool) = catalog
        .tool(name)
        .filter(|_| token.is_none_or(|t| t.allows_tool(name)))
    else {
        return Ok(());
    };
    let mirrored = tool.args.param_headers();
    if mirrored.is_empty() {
        return Ok(());
    }
    let empty = Value::Object(Default::default());
    let arguments = params.and_then(|p| p.get("arguments")).unwrap_or(&empty);
    check_param_headers(mirrored, arguments, header)
        .map_err(|message| ErrorObject::new(HEADER_MISMATCH, message))
}
