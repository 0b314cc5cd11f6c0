//! A wasmcp component that exports every capability wasmcp's templates
//! make: `tools`, `resources`, `prompts` and `completions` of
//! `wasmcp:mcp-v20251125`. airlock serves its resources, templates,
//! prompts and completions as it serves an airlock component's: listed at
//! load (every page), each read, prompt and completion in a fresh,
//! read-only instance.

wit_bindgen::generate!({
    path: "../wasmcp_tools/wit",
    world: "wasmcp-server",
    with: {
        "wasi:io/error@0.2.12": wasip2::io::error,
        "wasi:io/poll@0.2.12": wasip2::io::poll,
        "wasi:io/streams@0.2.12": wasip2::io::streams,
    },
    generate_all,
});

use exports::wasmcp::mcp_v20251125::{completions, prompts, resources, tools};
use wasmcp::mcp_v20251125::mcp::{
    Annotations, BlobData, BlobResourceContents, CallToolRequest, CallToolResult, CompleteRequest,
    CompleteResult, CompletionReference, ContentBlock, EmbeddedResourceContent,
    EmbeddedResourceOptions, Error, ErrorCode, GetPromptRequest, GetPromptResult, Icon,
    ListPromptsRequest, ListPromptsResult, ListResourceTemplatesRequest,
    ListResourceTemplatesResult, ListResourcesRequest, ListResourcesResult, ListToolsRequest,
    ListToolsResult, McpResource, Prompt, PromptArgument, PromptMessage, PromptOptions,
    ReadResourceRequest, ReadResourceResult, ResourceContents, ResourceOptions, ResourceTemplate,
    ResourceTemplateOptions, Role, TextContent, TextData, TextResourceContents, Tool,
};
use wasmcp::mcp_v20251125::server_handler::MessageContext;

struct Server;

fn error(code: i64, message: &str) -> Error {
    Error {
        code,
        message: message.into(),
        data: None,
    }
}

/// The protocol version airlock names, or an error saying what came.
fn check(ctx: &MessageContext) -> Result<(), ErrorCode> {
    if ctx.protocol_version == "2025-11-25" {
        return Ok(());
    }
    Err(ErrorCode::InvalidRequest(error(
        -32600,
        &format!("unexpected protocol version {}", ctx.protocol_version),
    )))
}

fn text(text: &str) -> ContentBlock {
    ContentBlock::Text(TextContent {
        text: TextData::Text(text.into()),
        options: None,
    })
}

impl tools::Guest for Server {
    fn list_tools(
        ctx: MessageContext,
        _request: ListToolsRequest,
    ) -> Result<ListToolsResult, ErrorCode> {
        check(&ctx)?;
        Ok(ListToolsResult {
            meta: None,
            next_cursor: None,
            tools: vec![Tool {
                name: "hello".into(),
                input_schema: r#"{"type":"object","properties":{}}"#.into(),
                options: None,
            }],
        })
    }

    fn call_tool(
        _ctx: MessageContext,
        request: CallToolRequest,
    ) -> Result<Option<CallToolResult>, ErrorCode> {
        Ok((request.name == "hello").then(|| CallToolResult {
            meta: None,
            content: vec![text("hello")],
            is_error: None,
            structured_content: None,
        }))
    }
}

fn resource(uri: &str, name: &str, options: Option<ResourceOptions>) -> McpResource {
    McpResource {
        uri: uri.into(),
        name: name.into(),
        options,
    }
}

fn described(description: &str, mime_type: &str) -> Option<ResourceOptions> {
    Some(ResourceOptions {
        size: None,
        title: None,
        description: Some(description.into()),
        mime_type: Some(mime_type.into()),
        annotations: None,
        meta: None,
        icons: None,
    })
}

/// The resources, in two pages (the first ends after `memo://logo`) to
/// check that airlock follows `next-cursor`.
fn resource_pages(cursor: Option<&str>) -> Result<(Vec<McpResource>, Option<String>), ErrorCode> {
    match cursor {
        None => Ok((
            vec![
                resource(
                    "memo://today",
                    "today",
                    Some(ResourceOptions {
                        size: Some(17),
                        title: Some("Today's memo".into()),
                        description: Some("What to remember today.".into()),
                        mime_type: Some("text/plain".into()),
                        annotations: Some(Annotations {
                            audience: Some(vec![Role::User]),
                            last_modified: Some("2025-11-25T00:00:00Z".into()),
                            priority: Some(0.5),
                        }),
                        meta: Some(r#"{"source":"wasmcp"}"#.into()),
                        icons: Some(vec![Icon {
                            src: "https://example.com/memo.png".into(),
                            mime_type: Some("image/png".into()),
                            sizes: Some(vec!["48x48".into()]),
                            theme: None,
                        }]),
                    }),
                ),
                resource("memo://logo", "logo", described("A tiny PNG.", "image/png")),
            ],
            Some("page-2".into()),
        )),
        Some("page-2") => Ok((
            vec![
                resource(
                    "file:///data/note.txt",
                    "note",
                    described("The note in /data.", "text/plain"),
                ),
                resource(
                    "memo://scribble",
                    "scribble",
                    described(
                        "Reading it tries to write /data/scribbled.txt.",
                        "text/plain",
                    ),
                ),
                resource(
                    "memo://gone",
                    "gone",
                    described("Listed, but read-resource does not know it.", "text/plain"),
                ),
            ],
            None,
        )),
        Some(other) => Err(ErrorCode::InvalidParams(error(
            -32602,
            &format!("unknown cursor {other}"),
        ))),
    }
}

fn text_contents(uri: &str, body: &str) -> ResourceContents {
    ResourceContents::Text(TextResourceContents {
        uri: uri.into(),
        text: TextData::Text(body.into()),
        options: Some(EmbeddedResourceOptions {
            mime_type: Some("text/plain".into()),
            meta: None,
        }),
    })
}

impl resources::Guest for Server {
    fn list_resources(
        ctx: MessageContext,
        request: ListResourcesRequest,
    ) -> Result<ListResourcesResult, ErrorCode> {
        check(&ctx)?;
        let (resources, next_cursor) = resource_pages(request.cursor.as_deref())?;
        Ok(ListResourcesResult {
            meta: None,
            next_cursor,
            resources,
        })
    }

    fn read_resource(
        ctx: MessageContext,
        request: ReadResourceRequest,
    ) -> Result<Option<ReadResourceResult>, ErrorCode> {
        check(&ctx)?;
        let uri = request.uri.as_str();
        let contents = match uri {
            "memo://today" => text_contents(uri, "remember the milk"),
            "memo://logo" => ResourceContents::Blob(BlobResourceContents {
                uri: uri.into(),
                blob: BlobData::Blob(vec![0x89, b'P', b'N', b'G']),
                options: Some(EmbeddedResourceOptions {
                    mime_type: Some("image/png".into()),
                    meta: Some(r#"{"width":1}"#.into()),
                }),
            }),
            "file:///data/note.txt" => match std::fs::read_to_string("/data/note.txt") {
                Ok(note) => text_contents(uri, &note),
                Err(e) => {
                    return Err(ErrorCode::InternalError(error(
                        -32603,
                        &format!("cannot read /data/note.txt: {e}"),
                    )));
                }
            },
            "memo://scribble" => match std::fs::write("/data/scribbled.txt", "scribbled") {
                Ok(()) => text_contents(uri, "scribbled"),
                Err(e) => {
                    return Err(ErrorCode::InternalError(error(
                        -32603,
                        &format!("cannot write /data/scribbled.txt: {e}"),
                    )));
                }
            },
            _ => match uri.strip_prefix("memo://notes/") {
                Some(id) if !id.is_empty() => text_contents(uri, &format!("note number {id}")),
                _ => return Ok(None),
            },
        };
        Ok(Some(ReadResourceResult {
            meta: None,
            contents: vec![contents],
        }))
    }

    fn list_resource_templates(
        ctx: MessageContext,
        request: ListResourceTemplatesRequest,
    ) -> Result<ListResourceTemplatesResult, ErrorCode> {
        check(&ctx)?;
        if request.cursor.is_some() {
            return Err(ErrorCode::InvalidParams(error(-32602, "one page only")));
        }
        Ok(ListResourceTemplatesResult {
            meta: None,
            next_cursor: None,
            resource_templates: vec![ResourceTemplate {
                uri_template: "memo://notes/{id}".into(),
                name: "note-by-id".into(),
                options: Some(ResourceTemplateOptions {
                    description: Some("One note by its number.".into()),
                    title: Some("Note by id".into()),
                    mime_type: Some("text/plain".into()),
                    annotations: None,
                    meta: None,
                    icons: None,
                }),
            }],
        })
    }
}

fn argument(name: &str, required: bool, description: &str) -> PromptArgument {
    PromptArgument {
        name: name.into(),
        description: Some(description.into()),
        required: Some(required),
        title: None,
    }
}

impl prompts::Guest for Server {
    fn list_prompts(
        ctx: MessageContext,
        _request: ListPromptsRequest,
    ) -> Result<ListPromptsResult, ErrorCode> {
        check(&ctx)?;
        Ok(ListPromptsResult {
            meta: None,
            next_cursor: None,
            prompts: vec![
                Prompt {
                    name: "summarize".into(),
                    options: Some(PromptOptions {
                        meta: None,
                        arguments: Some(vec![
                            argument("topic", true, "What to summarize"),
                            argument("style", false, "How (brief, detailed, bullet points)"),
                        ]),
                        description: Some("Asks for a summary of a topic.".into()),
                        title: Some("Summarize".into()),
                        icons: None,
                    }),
                },
                // No options at all.
                Prompt {
                    name: "plain".into(),
                    options: None,
                },
                Prompt {
                    name: "refuses".into(),
                    options: Some(PromptOptions {
                        meta: None,
                        arguments: None,
                        description: Some("Always answers invalid-params.".into()),
                        title: None,
                        icons: None,
                    }),
                },
            ],
        })
    }

    fn get_prompt(
        ctx: MessageContext,
        request: GetPromptRequest,
    ) -> Result<Option<GetPromptResult>, ErrorCode> {
        check(&ctx)?;
        let args: serde_json::Value = match request.arguments.as_deref() {
            Some(text) => serde_json::from_str(text)
                .map_err(|e| ErrorCode::InvalidParams(error(-32602, &e.to_string())))?,
            None => serde_json::json!({}),
        };
        let arg = |name: &str| args[name].as_str().map(str::to_string);
        let message = |role: Role, content: ContentBlock| PromptMessage { content, role };
        Ok(match request.name.as_str() {
            "summarize" => {
                let topic = arg("topic").unwrap_or_default();
                let style = arg("style").unwrap_or_else(|| "brief".into());
                Some(GetPromptResult {
                    meta: None,
                    description: Some(format!("A {style} summary of {topic}")),
                    messages: vec![
                        message(
                            Role::User,
                            text(&format!("Summarize {topic} in a {style} style.")),
                        ),
                        message(
                            Role::Assistant,
                            ContentBlock::EmbeddedResource(EmbeddedResourceContent {
                                resource: text_contents("memo://today", "remember the milk"),
                                options: None,
                            }),
                        ),
                    ],
                })
            }
            "plain" => Some(GetPromptResult {
                meta: None,
                description: None,
                messages: vec![message(Role::User, text("plain"))],
            }),
            "refuses" => {
                return Err(ErrorCode::InvalidParams(error(
                    -32602,
                    "refuses never likes its arguments",
                )));
            }
            _ => None,
        })
    }
}

impl completions::Guest for Server {
    fn complete(
        ctx: MessageContext,
        request: CompleteRequest,
    ) -> Result<Option<CompleteResult>, ErrorCode> {
        check(&ctx)?;
        let candidates: &[&str] = match (&request.ref_, request.argument.name.as_str()) {
            (CompletionReference::Prompt(p), "style") if p.name == "summarize" => {
                &["brief", "bullet points", "detailed"]
            }
            (CompletionReference::ResourceTemplate(t), "id") if t == "memo://notes/{id}" => {
                &["1", "2", "12"]
            }
            _ => return Ok(None),
        };
        // The context's arguments, when given, are echoed as one more value
        // so a test can see they arrived.
        let mut values: Vec<String> = candidates
            .iter()
            .filter(|c| c.starts_with(&request.argument.value))
            .map(|c| c.to_string())
            .collect();
        if let Some(arguments) = request.context.and_then(|c| c.arguments) {
            values.push(format!("context {arguments}"));
        }
        Ok(Some(CompleteResult {
            meta: None,
            has_more: Some(false),
            total: Some(values.len() as u64),
            values,
        }))
    }
}

export!(Server);
