//! A component of world `server` written with wit-bindgen directly (no
//! SDK): what the runtime's tests of resources, prompts and completions
//! read, get and complete.
//!
//! - resources: `test://static-text` (text), `test://static-binary` (a
//!   blob), `test://note` (reads `/data/note.txt`), `test://scribble` (a
//!   read that tries to write `/data/scribbled.txt`: a read runs read-only,
//!   so it fails), `test://slow` (reads until stopped), `ui://offers/app`
//!   (an MCP App's HTML, the UI of `bump`);
//!   the template `test://template/{id}/data`.
//! - prompts: `greeting` (`name` required, `style` optional),
//!   `with_image`, `with_resource`, `ask_topic` (asks the user through
//!   `host.elicit`, where the policy's `ask` grants it).
//! - completions: `greeting`'s `name`, and the template's `id`.
//! - tools: `bump` (says `test://note` changed through
//!   `host.resource-updated`), `echo`, `open_link` (asks the user to open
//!   its `url` through `host.elicit-url`, or with `batch` through
//!   `host.ask`, where the policy's `ask` grants it).

wit_bindgen::generate!({ path: "../../../wit", world: "server" });

use airlock::tool::host;
use airlock::tool::types::{
    Content, EmbeddedResource, Error, Hints, Media, Output, ResourceBody, Role, TaskSupport, Tool,
};
use exports::airlock::tool::completions::{self, Completion, Reference};
use exports::airlock::tool::prompts::{self, Argument, Message, Prompt, PromptMessages};
use exports::airlock::tool::resources::{
    self, Catalog, Contents, ReadError, Resource, ResourceTemplate, ToolMeta,
};

struct Offers;

/// A PNG's first bytes: not UTF-8, so it must travel as a blob.
const BINARY: &[u8] = &[0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0xff];

const APP: &str = "<!doctype html><html><body><button id=\"bump\">Bump</button></body></html>";

fn tool(name: &str, description: &str) -> Tool {
    Tool {
        name: name.into(),
        title: None,
        description: description.into(),
        input_schema: r#"{"type":"object","properties":{"text":{"type":"string"}}}"#.into(),
        output_schema: None,
        hints: Hints::READ_ONLY,
        icons: vec![],
        task_support: TaskSupport::Forbidden,
    }
}

fn resource(uri: &str, name: &str, mime: &str) -> Resource {
    Resource {
        uri: uri.into(),
        name: name.into(),
        title: None,
        description: Some(format!("the {name} resource")),
        mime_type: Some(mime.into()),
        size: None,
        annotations: None,
        icons: vec![],
        meta: None,
    }
}

impl exports::airlock::tool::tools::Guest for Offers {
    fn describe() -> Vec<Tool> {
        vec![
            tool("bump", "Says that test://note changed"),
            tool("echo", "Echoes its text"),
            Tool {
                input_schema: r#"{"type":"object","properties":{"url":{"type":"string"},"batch":{"type":"boolean"}},"required":["url"]}"#.into(),
                ..tool("open_link", "Asks the user to open a URL")
            },
        ]
    }

    fn call(name: String, arguments: String) -> Result<Output, Error> {
        match name.as_str() {
            "bump" => {
                host::resource_updated("test://note");
                // Not this component's: the runtime drops it.
                host::resource_updated("test://elsewhere");
                Ok(text_output("bumped"))
            }
            "open_link" => open_link(&arguments),
            _ => Ok(text_output(&arguments)),
        }
    }
}

/// Asks the user to open the `url` of `arguments`, alone or (`"batch":
/// true`) as the one request of a `host.ask` batch.
fn open_link(arguments: &str) -> Result<Output, Error> {
    let url = string_argument(arguments, "url")
        .ok_or_else(|| Error::InvalidArguments("no url".into()))?;
    let message = "Open this link";
    let answer = match arguments.contains(r#""batch":true"#) {
        false => host::elicit_url(message, &url),
        true => {
            let link = host::ElicitLink {
                message: message.into(),
                url,
            };
            host::ask(&[("link".into(), host::Request::ElicitUrl(link))]).and_then(|mut answers| {
                match answers.pop() {
                    Some(Ok(host::Answer::Elicited(answer))) => Ok(answer),
                    Some(Err(e)) => Err(e),
                    _ => Err(host::AskError::Failed("no answer to the link".into())),
                }
            })
        }
    };
    match answer {
        Ok(host::ElicitAnswer::Accept(_)) => Ok(text_output("opened")),
        Ok(_) => Ok(text_output("not opened")),
        Err(e) => Err(Error::Failed(format!("cannot ask: {e:?}"))),
    }
}

/// The string `key` of a flat JSON object, without escapes (enough for the
/// URLs the tests send).
fn string_argument(arguments: &str, key: &str) -> Option<String> {
    let after = arguments.split_once(&format!(r#""{key}":""#))?.1;
    Some(after.split_once('"')?.0.to_string())
}

fn text_output(text: &str) -> Output {
    Output {
        content: vec![Content::Text(text.into())],
        structured: None,
    }
}

impl resources::Guest for Offers {
    fn describe() -> Catalog {
        let mut app = resource("ui://offers/app", "app", "text/html;profile=mcp-app");
        app.meta = Some(r#"{"ui":{"csp":{"connectDomains":[]}}}"#.into());
        let mut binary = resource("test://static-binary", "static-binary", "image/png");
        binary.size = Some(BINARY.len() as u64);
        Catalog {
            resources: vec![
                resource("test://static-text", "static-text", "text/plain"),
                binary,
                resource("test://note", "note", "text/plain"),
                resource("test://scribble", "scribble", "text/plain"),
                resource("test://slow", "slow", "text/plain"),
                app,
            ],
            templates: vec![ResourceTemplate {
                uri_template: "test://template/{id}/data".into(),
                name: "template".into(),
                title: Some("Data by id".into()),
                description: Some("the data of one id".into()),
                mime_type: Some("application/json".into()),
                annotations: None,
                icons: vec![],
            }],
            tool_meta: vec![ToolMeta {
                tool: "bump".into(),
                meta: r#"{"ui":{"resourceUri":"ui://offers/app"}}"#.into(),
            }],
        }
    }

    fn read(uri: String) -> Result<Vec<Contents>, ReadError> {
        let body = match uri.as_str() {
            "test://static-text" => {
                ResourceBody::Text("This is the content of the static text resource.".into())
            }
            "test://static-binary" => ResourceBody::Blob(BINARY.to_vec()),
            "ui://offers/app" => ResourceBody::Text(APP.into()),
            "test://note" => ResourceBody::Text(
                std::fs::read_to_string("/data/note.txt")
                    .map_err(|e| ReadError::Failed(format!("cannot read /data/note.txt: {e}")))?,
            ),
            "test://slow" => {
                // Until the runtime stops it (its time limit, shutdown).
                while !host::cancelled() {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                ResourceBody::Text("stopped".into())
            }
            "test://scribble" => {
                std::fs::write("/data/scribbled.txt", "a read wrote this").map_err(|e| {
                    ReadError::Failed(format!("cannot write /data/scribbled.txt: {e}"))
                })?;
                ResourceBody::Text("scribbled".into())
            }
            other => match other
                .strip_prefix("test://template/")
                .and_then(|rest| rest.strip_suffix("/data"))
            {
                Some(id) => ResourceBody::Text(format!(
                    r#"{{"id":"{id}","templateTest":true,"data":"Data for ID: {id}"}}"#
                )),
                None => return Err(ReadError::NotFound(format!("no resource {other}"))),
            },
        };
        let mime = match &body {
            ResourceBody::Blob(_) => "image/png",
            _ if uri.starts_with("ui://") => "text/html;profile=mcp-app",
            _ if uri.starts_with("test://template/") => "application/json",
            _ => "text/plain",
        };
        Ok(vec![Contents {
            uri,
            mime_type: Some(mime.into()),
            body,
            meta: None,
        }])
    }
}

fn argument(name: &str, required: bool) -> Argument {
    Argument {
        name: name.into(),
        title: None,
        description: Some(format!("the {name}")),
        required,
    }
}

fn prompt(name: &str, arguments: Vec<Argument>) -> Prompt {
    Prompt {
        name: name.into(),
        title: None,
        description: Some(format!("the {name} prompt")),
        arguments,
        icons: vec![],
    }
}

fn user(content: Content) -> Message {
    Message {
        role: Role::User,
        content,
    }
}

impl prompts::Guest for Offers {
    fn describe() -> Vec<Prompt> {
        vec![
            prompt(
                "greeting",
                vec![argument("name", true), argument("style", false)],
            ),
            prompt("with_image", vec![]),
            prompt("with_resource", vec![argument("resourceUri", false)]),
            prompt("ask_topic", vec![]),
        ]
    }

    fn get(name: String, arguments: Vec<(String, String)>) -> Result<PromptMessages, Error> {
        let arg = |key: &str| {
            arguments
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.clone())
        };
        let messages = match name.as_str() {
            "greeting" => {
                let name = arg("name").unwrap_or_default();
                let text = match arg("style").as_deref() {
                    Some("formal") => format!("Good day, {name}."),
                    _ => format!("Hello, {name}!"),
                };
                vec![user(Content::Text(text))]
            }
            "with_image" => vec![user(Content::Image(Media {
                data: BINARY.to_vec(),
                mime_type: "image/png".into(),
            }))],
            "with_resource" => vec![
                user(Content::Embedded(EmbeddedResource {
                    uri: arg("resourceUri").unwrap_or_else(|| "test://static-text".into()),
                    mime_type: Some("text/plain".into()),
                    body: ResourceBody::Text("embedded text".into()),
                })),
                user(Content::Text("Please read the resource above.".into())),
            ],
            "ask_topic" => {
                let schema = r#"{"type":"object","properties":{"topic":{"type":"string"}},"required":["topic"]}"#;
                let text = match host::elicit("What should the prompt be about?", schema) {
                    Ok(host::ElicitAnswer::Accept(content)) => format!("Write about {content}"),
                    Ok(_) => "Write about anything".to_string(),
                    Err(e) => return Err(Error::Failed(format!("cannot ask: {e:?}"))),
                };
                vec![user(Content::Text(text))]
            }
            other => return Err(Error::InvalidArguments(format!("no prompt {other}"))),
        };
        Ok(PromptMessages {
            description: Some(format!("the {name} prompt")),
            messages,
        })
    }
}

impl completions::Guest for Offers {
    fn complete(
        reference: Reference,
        argument: String,
        value: String,
        _context: Vec<(String, String)>,
    ) -> Result<Completion, Error> {
        let all: &[&str] = match (&reference, argument.as_str()) {
            (Reference::Prompt(p), "name") if p == "greeting" => &["alice", "albert", "bob"],
            (Reference::Prompt(p), "style") if p == "greeting" => &["formal", "casual"],
            (Reference::ResourceTemplate(t), "id") if t == "test://template/{id}/data" => {
                &["1", "12", "123", "2"]
            }
            _ => &[],
        };
        let values: Vec<String> = all
            .iter()
            .filter(|v| v.starts_with(&value))
            .map(|v| v.to_string())
            .collect();
        Ok(Completion {
            total: Some(values.len() as u32),
            has_more: false,
            values,
        })
    }
}

/// No skills: world `server` exports the interface since 0.1.2.
impl exports::airlock::tool::skills::Guest for Offers {
    fn describe() -> Vec<exports::airlock::tool::skills::Skill> {
        Vec::new()
    }
}

export!(Offers);
