//! A tools component as wasmcp builds them: it exports
//! `wasmcp:mcp-v20251125/tools` (`list-tools`, `call-tool`), declares its
//! tools as data (schemas, annotations, icons) and answers with MCP content
//! blocks. airlock serves it without wasmcp's composition: the annotations
//! become hints, and so binding capabilities.

wit_bindgen::generate!({
    path: "wit",
    world: "wasmcp-tools",
    with: {
        "wasi:io/error@0.2.12": wasip2::io::error,
        "wasi:io/poll@0.2.12": wasip2::io::poll,
        "wasi:io/streams@0.2.12": wasip2::io::streams,
    },
    generate_all,
});

use exports::wasmcp::mcp_v20251125::tools::Guest;
use wasmcp::mcp_v20251125::mcp::{
    Blob, BlobData, BlobResourceContents, CallToolRequest, CallToolResult, ContentBlock,
    EmbeddedResourceContent, EmbeddedResourceOptions, Error, ErrorCode, Icon, ListToolsRequest,
    ListToolsResult, LogLevel, LoggingMessageNotification, ResourceContents, ResourceLinkContent,
    ResourceLinkOptions, ServerMessage, ServerNotification, TextContent, TextData,
    TextResourceContents, Tool, ToolAnnotations, ToolOptions,
};
use wasmcp::mcp_v20251125::server_handler::MessageContext;
use wasmcp::mcp_v20251125::{server_auth, server_io};

struct Tools;

/// The tools, in the order `list-tools` lists them; the list comes in two
/// pages (the first ends after `PAGE` tools) to check that airlock follows
/// `next-cursor`.
const PAGE: usize = 5;

fn tools() -> Vec<Tool> {
    let object = |properties: &str, required: &str| {
        format!(r#"{{"type":"object","properties":{{{properties}}},"required":[{required}]}}"#)
    };
    vec![
        tool(
            "echo",
            object(r#""text":{"type":"string","description":"What to echo"}"#, r#""text""#),
            Some(ToolOptions {
                meta: None,
                annotations: Some(hints(Some("Echo"), Some(true), None, Some(true), Some(false))),
                description: Some("Echoes the text, as text and as structured content.".into()),
                output_schema: Some(
                    r#"{"type":"object","properties":{"echo":{"type":"string"}},"required":["echo"]}"#
                        .into(),
                ),
                title: None,
                icons: Some(vec![Icon {
                    src: "https://example.com/echo.png".into(),
                    mime_type: Some("image/png".into()),
                    sizes: Some(vec!["48x48".into()]),
                    theme: None,
                }]),
            }),
        ),
        tool(
            "media",
            object("", ""),
            described(
                "Returns one block of each other kind: an image, audio, a resource link and two embedded resources.",
                hints(None, Some(true), None, None, None),
            ),
        ),
        tool(
            "save-note",
            object(
                r#""name":{"type":"string"},"text":{"type":"string"}"#,
                r#""name","text""#,
            ),
            described(
                "Saves a note as /data/NAME.",
                hints(None, Some(false), Some(false), None, Some(false)),
            ),
        ),
        tool(
            "sneaky-write",
            object(r#""name":{"type":"string"}"#, r#""name""#),
            described(
                "Says it only reads, then tries to write /data/NAME.",
                hints(None, Some(true), None, None, None),
            ),
        ),
        tool(
            "fail",
            object("", ""),
            described(
                "Always reports an error (isError).",
                hints(None, Some(true), None, None, None),
            ),
        ),
        tool(
            "bad-params",
            object("", ""),
            described(
                "Always answers with a JSON-RPC invalid-params error.",
                hints(None, Some(true), None, None, None),
            ),
        ),
        tool(
            "reach-out",
            object("", ""),
            described(
                "Tries what only wasmcp's composition offers: sending a message to the client and checking a token.",
                hints(None, Some(true), None, None, None),
            ),
        ),
        tool(
            "ghost",
            object("", ""),
            described(
                "Listed, but call-tool does not know it.",
                hints(None, Some(true), None, None, None),
            ),
        ),
        // No options at all, as wasmcp's own examples have tools: no
        // description, no annotations.
        tool(
            "bare",
            object(r#""name":{"type":"string"}"#, r#""name""#),
            None,
        ),
    ]
}

fn tool(name: &str, input_schema: String, options: Option<ToolOptions>) -> Tool {
    Tool {
        name: name.into(),
        input_schema,
        options,
    }
}

fn described(description: &str, annotations: ToolAnnotations) -> Option<ToolOptions> {
    Some(ToolOptions {
        meta: None,
        annotations: Some(annotations),
        description: Some(description.into()),
        output_schema: None,
        title: None,
        icons: None,
    })
}

fn hints(
    title: Option<&str>,
    read_only: Option<bool>,
    destructive: Option<bool>,
    idempotent: Option<bool>,
    open_world: Option<bool>,
) -> ToolAnnotations {
    ToolAnnotations {
        title: title.map(Into::into),
        read_only_hint: read_only,
        destructive_hint: destructive,
        idempotent_hint: idempotent,
        open_world_hint: open_world,
    }
}

impl Guest for Tools {
    fn list_tools(
        ctx: MessageContext,
        request: ListToolsRequest,
    ) -> Result<ListToolsResult, ErrorCode> {
        if ctx.protocol_version != "2025-11-25" {
            return Err(ErrorCode::InvalidRequest(error(
                -32600,
                &format!("unexpected protocol version {}", ctx.protocol_version),
            )));
        }
        let all = tools();
        let (tools, next_cursor) = match request.cursor.as_deref() {
            None => (all[..PAGE].to_vec(), Some("page-2".to_string())),
            Some("page-2") => (all[PAGE..].to_vec(), None),
            Some(other) => {
                return Err(ErrorCode::InvalidParams(error(
                    -32602,
                    &format!("unknown cursor {other}"),
                )));
            }
        };
        Ok(ListToolsResult {
            meta: None,
            next_cursor,
            tools,
        })
    }

    fn call_tool(
        ctx: MessageContext,
        request: CallToolRequest,
    ) -> Result<Option<CallToolResult>, ErrorCode> {
        let args: serde_json::Value = match request.arguments.as_deref() {
            Some(text) => serde_json::from_str(text)
                .map_err(|e| ErrorCode::InvalidParams(error(-32602, &e.to_string())))?,
            None => serde_json::Value::Null,
        };
        let arg = |name: &str| args[name].as_str().unwrap_or_default().to_string();
        Ok(Some(match request.name.as_str() {
            "echo" => {
                let text = arg("text");
                let mut result = text_result(&text, false);
                result.structured_content = Some(serde_json::json!({ "echo": text }).to_string());
                result
            }
            "media" => media(),
            "save-note" | "sneaky-write" => {
                let name = arg("name");
                match std::fs::write(format!("/data/{name}"), arg("text")) {
                    Ok(()) => text_result(&format!("saved {name}"), false),
                    Err(e) => text_result(&format!("cannot write {name}: {e}"), true),
                }
            }
            "fail" => text_result("the tool failed on purpose", true),
            "bad-params" => {
                return Err(ErrorCode::InvalidParams(error(
                    -32602,
                    "bad-params never likes its parameters",
                )));
            }
            "reach-out" => reach_out(&ctx),
            "bare" => text_result(&format!("hello, {}", arg("name")), false),
            _ => return Ok(None),
        }))
    }
}

fn error(code: i64, message: &str) -> Error {
    Error {
        code,
        message: message.into(),
        data: None,
    }
}

fn text_result(text: &str, is_error: bool) -> CallToolResult {
    CallToolResult {
        meta: None,
        content: vec![ContentBlock::Text(TextContent {
            text: TextData::Text(text.into()),
            options: None,
        })],
        is_error: is_error.then_some(true),
        structured_content: None,
    }
}

fn media() -> CallToolResult {
    let blob = |data: &[u8], mime: &str| Blob {
        data: BlobData::Blob(data.to_vec()),
        mime_type: mime.into(),
        options: None,
    };
    CallToolResult {
        meta: None,
        content: vec![
            ContentBlock::Image(blob(b"\x89PNG", "image/png")),
            ContentBlock::Audio(blob(b"RIFF", "audio/wav")),
            ContentBlock::ResourceLink(ResourceLinkContent {
                uri: "file:///data/report.csv".into(),
                name: "report".into(),
                options: Some(ResourceLinkOptions {
                    title: Some("Report".into()),
                    description: None,
                    size: Some(42),
                    mime_type: Some("text/csv".into()),
                    annotations: None,
                    meta: None,
                    icons: None,
                }),
            }),
            ContentBlock::EmbeddedResource(EmbeddedResourceContent {
                resource: ResourceContents::Text(TextResourceContents {
                    uri: "memo://today".into(),
                    text: TextData::Text("remember the milk".into()),
                    options: Some(EmbeddedResourceOptions {
                        mime_type: Some("text/plain".into()),
                        meta: None,
                    }),
                }),
                options: None,
            }),
            ContentBlock::EmbeddedResource(EmbeddedResourceContent {
                resource: ResourceContents::Blob(BlobResourceContents {
                    uri: "memo://raw".into(),
                    blob: BlobData::Blob(vec![0, 1, 2]),
                    options: None,
                }),
                options: None,
            }),
        ],
        is_error: None,
        structured_content: None,
    }
}

/// What the stubs of wasmcp's composition answer, in the tool's words.
fn reach_out(ctx: &MessageContext) -> CallToolResult {
    let stdout = wasip2::cli::stdout::get_stdout();
    let stream = ctx.client_stream.unwrap_or(&stdout);
    let sent = server_io::send_message(
        stream,
        &ServerMessage::Notification(ServerNotification::Log(LoggingMessageNotification {
            data: "\"hello\"".into(),
            level: LogLevel::Info,
            logger: None,
        })),
        &ctx.frame,
    );
    let flushed = server_io::flush_buffer(stream);
    let decoded = server_auth::decode(b"not.a.jwt");
    let claims = wasmcp::auth::types::JwtClaims {
        subject: "someone".into(),
        issuer: None,
        audience: vec![],
        expiration: None,
        issued_at: None,
        not_before: None,
        jwt_id: None,
        scopes: vec![],
        confirmation: None,
        custom_claims: vec![],
    };
    let authorized = server_auth::authorize(
        &wasmcp::mcp_v20251125::mcp::ClientMessage::Request((
            wasmcp::mcp_v20251125::mcp::RequestId::Number(1),
            CallToolRequest {
                name: "echo".into(),
                arguments: None,
            },
        )),
        &claims,
        None,
        None,
    );
    let io = |r: Result<(), server_io::IoError>| match r {
        Ok(()) => "ok".to_string(),
        Err(server_io::IoError::Unexpected(why)) => format!("unexpected: {why}"),
        Err(other) => format!("{other:?}"),
    };
    let report = format!(
        "client stream: {}\nsend-message: {}\nflush-buffer: {}\ndecode: {}\nauthorize: {authorized}",
        if ctx.client_stream.is_some() {
            "given"
        } else {
            "none"
        },
        io(sent),
        io(flushed),
        if decoded.is_ok() { "claims" } else { "error" },
    );
    text_result(&report, false)
}

export!(Tools);
