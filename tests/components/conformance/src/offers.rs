//! The resources, resource template, prompts and completions the conformance
//! suite reads (`resources-*`, `prompts-*`, `completion-complete`, `caching`),
//! with the exact URIs, names and texts its scenarios describe, and a tool
//! that marks the watched resource updated (for the clients' subscription
//! tests).

use crate::RED_PIXEL_PNG;
use airlock_sdk::serde_json::json;
use airlock_sdk::{
    Content, Elicited, EmbeddedResource, Message, complete, prompt, resource, resource_template,
    tool,
};

/// The text of `test://static-text`.
pub const STATIC_TEXT: &str = "This is the content of the static text resource.";
/// The URI `resources-subscribe` and `resources-unsubscribe` watch.
pub const WATCHED_URI: &str = "test://watched-resource";
/// The text of `test://watched-resource`.
pub const WATCHED_TEXT: &str = "This resource is watched for updates.";
/// The text of `test_simple_prompt`.
pub const SIMPLE_PROMPT_TEXT: &str = "This is a simple prompt for testing.";
/// The embedded text of `test_prompt_with_embedded_resource`.
pub const EMBEDDED_TEXT: &str = "Embedded resource content for testing.";
/// What `arg1` of `test_prompt_with_arguments` completes to.
pub const ARG1_VALUES: [&str; 3] = ["paris", "park", "party"];

/// A static text resource (`resources-read-text`).
#[resource(
    uri = "test://static-text",
    name = "static-text",
    title = "Static text",
    mime_type = "text/plain"
)]
pub fn static_text() -> &'static str {
    STATIC_TEXT
}

/// A static binary resource: a 1×1 red PNG (`resources-read-binary`).
#[resource(
    uri = "test://static-binary",
    name = "static-binary",
    title = "Static binary",
    mime_type = "image/png"
)]
pub fn static_binary() -> &'static [u8] {
    RED_PIXEL_PNG
}

/// A resource clients subscribe to (`resources-subscribe`); the tool
/// `test_update_watched_resource` says it changed.
#[resource(
    uri = "test://watched-resource",
    name = "watched-resource",
    title = "Watched resource",
    mime_type = "text/plain"
)]
pub fn watched_resource() -> &'static str {
    WATCHED_TEXT
}

/// Data for one ID, as JSON (`resources-templates-read`).
#[resource_template(
    uri_template = "test://template/{id}/data",
    name = "template-data",
    title = "Template data",
    mime_type = "application/json"
)]
pub fn template_data(id: &str) -> String {
    airlock_sdk::serde_json::json!({
        "id": id,
        "templateTest": true,
        "data": format!("Data for ID: {id}"),
    })
    .to_string()
}

/// A simple prompt without arguments (`prompts-get-simple`).
#[prompt(title = "Simple prompt")]
pub fn test_simple_prompt() -> Message {
    Message::user(SIMPLE_PROMPT_TEXT)
}

/// A prompt with two required arguments (`prompts-get-with-args`).
#[prompt(title = "Prompt with arguments")]
pub fn test_prompt_with_arguments(
    #[arg(description = "First test argument")] arg1: String,
    #[arg(description = "Second test argument")] arg2: String,
) -> Message {
    Message::user(format!(
        "Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"
    ))
}

/// A prompt that embeds the resource it is given (`prompts-get-embedded-resource`).
#[prompt(title = "Prompt with embedded resource")]
pub fn test_prompt_with_embedded_resource(
    #[arg(rename = "resourceUri", description = "URI of the resource to embed")]
    resource_uri: String,
) -> Vec<Message> {
    vec![
        Message::user(
            EmbeddedResource::text(resource_uri, EMBEDDED_TEXT).with_mime_type("text/plain"),
        ),
        Message::user("Please process the embedded resource above."),
    ]
}

/// A prompt with an image (`prompts-get-with-image`).
#[prompt(title = "Prompt with image")]
pub fn test_prompt_with_image() -> Vec<Message> {
    vec![
        Message::user(Content::image(RED_PIXEL_PNG.to_vec(), "image/png")),
        Message::user("Please analyze the image above."),
    ]
}

/// The question of `test_input_required_result_prompt`.
pub const CONTEXT_QUESTION: &str = "What context should the prompt use?";

/// Asks the user which context to use, then returns one user message with
/// it (`input-required-result-non-tool-request`: on 2026-07-28 the first
/// `prompts/get` answers `input_required`, the retry the messages).
#[prompt(title = "Prompt that asks for input")]
pub fn test_input_required_result_prompt() -> Result<Message, String> {
    let schema = json!({
        "type": "object",
        "properties": {"context": {"type": "string"}},
        "required": ["context"],
    });
    match airlock_sdk::elicit(CONTEXT_QUESTION, &schema).map_err(|e| e.to_string())? {
        Elicited::Accept(form) => Ok(Message::user(format!(
            "Use this context: {}",
            form["context"].as_str().unwrap_or_default()
        ))),
        Elicited::Decline | Elicited::Cancel => Ok(Message::user("Use no particular context.")),
    }
}

/// Values for `arg1` of `test_prompt_with_arguments` that start with what
/// was typed (`completion-complete`).
#[complete(prompt = test_prompt_with_arguments, argument = "arg1")]
pub fn complete_arg1(value: &str) -> Vec<&'static str> {
    ARG1_VALUES
        .into_iter()
        .filter(|v| v.starts_with(value))
        .collect()
}

/// IDs for `{id}` of `test://template/{id}/data`.
#[complete(resource_template = template_data, argument = "id")]
pub fn complete_template_id(value: &str) -> Vec<String> {
    (1..=3)
        .map(|i| format!("{i}{i}{i}"))
        .filter(|id| id.starts_with(value))
        .collect()
}

/// Marks `test://watched-resource` updated: subscribed clients get
/// `notifications/resources/updated`.
#[tool(read_only, idempotent, title = "Update watched resource")]
pub fn test_update_watched_resource() -> String {
    airlock_sdk::resource_updated(WATCHED_URI);
    format!("{WATCHED_URI} updated")
}

#[cfg(test)]
mod tests {
    use crate::TOOLS;
    use airlock_sdk::{CompletionRef, Content, ResourceBody};

    #[test]
    fn resources_read_as_the_scenarios_say() {
        let text = TOOLS.read("test://static-text").unwrap();
        assert_eq!(text[0].body, ResourceBody::Text(super::STATIC_TEXT.into()));
        assert_eq!(text[0].mime_type.as_deref(), Some("text/plain"));
        let blob = TOOLS.read("test://static-binary").unwrap();
        assert_eq!(blob[0].mime_type.as_deref(), Some("image/png"));
        assert!(matches!(&blob[0].body, ResourceBody::Blob(b) if b.starts_with(b"\x89PNG")));
        let data = TOOLS.read("test://template/123/data").unwrap();
        assert_eq!(
            data[0].body,
            ResourceBody::Text(
                r#"{"id":"123","templateTest":true,"data":"Data for ID: 123"}"#.into()
            )
        );
        assert_eq!(TOOLS.resources()[0].uri, "test://static-text");
    }

    #[test]
    fn prompts_answer_as_the_scenarios_say() {
        let got = TOOLS
            .get_prompt(
                "test_prompt_with_arguments",
                [("arg1", "hello"), ("arg2", "world")],
            )
            .unwrap();
        assert_eq!(
            got.messages[0].content,
            Content::Text("Prompt with arguments: arg1='hello', arg2='world'".into())
        );
        let got = TOOLS
            .get_prompt(
                "test_prompt_with_embedded_resource",
                [("resourceUri", "test://example-resource")],
            )
            .unwrap();
        assert!(
            matches!(&got.messages[0].content, Content::Embedded(r) if r.uri == "test://example-resource")
        );
        let c = TOOLS
            .complete(
                CompletionRef::Prompt("test_prompt_with_arguments"),
                "arg1",
                "par",
                &[],
            )
            .unwrap();
        assert_eq!(c.values, super::ARG1_VALUES);
        let c = TOOLS
            .complete(
                CompletionRef::ResourceTemplate("test://template/{id}/data"),
                "id",
                "2",
                &[],
            )
            .unwrap();
        assert_eq!(c.values, ["222"]);
    }
}
