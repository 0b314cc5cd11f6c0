//! A wasmcp component that exports only `resources`, as wasmcp's
//! resources template makes one: no tools, one resource. airlock serves
//! it for what it offers.

wit_bindgen::generate!({
    path: "../wasmcp_tools/wit",
    world: "wasmcp-resources-only",
    with: {
        "wasi:io/error@0.2.12": wasip2::io::error,
        "wasi:io/poll@0.2.12": wasip2::io::poll,
        "wasi:io/streams@0.2.12": wasip2::io::streams,
    },
    generate_all,
});

use exports::wasmcp::mcp_v20251125::resources::Guest;
use wasmcp::mcp_v20251125::mcp::{
    ErrorCode, ListResourceTemplatesRequest, ListResourceTemplatesResult, ListResourcesRequest,
    ListResourcesResult, McpResource, ReadResourceRequest, ReadResourceResult, ResourceContents,
    TextData, TextResourceContents,
};
use wasmcp::mcp_v20251125::server_handler::MessageContext;

struct Resources;

const URI: &str = "memo://only";

impl Guest for Resources {
    fn list_resources(
        _ctx: MessageContext,
        _request: ListResourcesRequest,
    ) -> Result<ListResourcesResult, ErrorCode> {
        Ok(ListResourcesResult {
            meta: None,
            next_cursor: None,
            resources: vec![McpResource {
                uri: URI.into(),
                name: "only".into(),
                options: None,
            }],
        })
    }

    fn read_resource(
        _ctx: MessageContext,
        request: ReadResourceRequest,
    ) -> Result<Option<ReadResourceResult>, ErrorCode> {
        Ok((request.uri == URI).then(|| ReadResourceResult {
            meta: None,
            contents: vec![ResourceContents::Text(TextResourceContents {
                uri: URI.into(),
                text: TextData::Text("the only resource".into()),
                options: None,
            })],
        }))
    }

    fn list_resource_templates(
        _ctx: MessageContext,
        _request: ListResourceTemplatesRequest,
    ) -> Result<ListResourceTemplatesResult, ErrorCode> {
        Ok(ListResourceTemplatesResult {
            meta: None,
            next_cursor: None,
            resource_templates: Vec::new(),
        })
    }
}

export!(Resources);
