//! A tools component that hands every call on to the next handler of
//! wasmcp's middleware chain (`server-handler.handle`). Only wasmcp's
//! composition provides that handler, so airlock refuses the component at
//! load, naming the import.

wit_bindgen::generate!({
    path: "../wasmcp_tools/wit",
    world: "wasmcp-middleware",
    with: {
        "wasi:io/error@0.2.12": wasip2::io::error,
        "wasi:io/poll@0.2.12": wasip2::io::poll,
        "wasi:io/streams@0.2.12": wasip2::io::streams,
    },
    generate_all,
});

use exports::wasmcp::mcp_v20251125::tools::Guest;
use wasmcp::mcp_v20251125::mcp::{
    CallToolRequest, CallToolResult, ClientMessage, ErrorCode, ListToolsRequest, ListToolsResult,
    RequestId,
};
use wasmcp::mcp_v20251125::server_handler::{self, MessageContext};

struct Middleware;

impl Guest for Middleware {
    fn list_tools(
        _ctx: MessageContext,
        _request: ListToolsRequest,
    ) -> Result<ListToolsResult, ErrorCode> {
        Ok(ListToolsResult {
            meta: None,
            next_cursor: None,
            tools: vec![],
        })
    }

    fn call_tool(
        ctx: MessageContext,
        request: CallToolRequest,
    ) -> Result<Option<CallToolResult>, ErrorCode> {
        let message = ClientMessage::Request((RequestId::Number(1), request));
        server_handler::handle(&ctx, &message).transpose()
    }
}

export!(Middleware);
