//! A component of world `server` that declares no tools and offers a
//! resource (`only://readme`), a template (`only://notes/{name}`), a
//! prompt (`summarize`, `topic` required) and completions of the
//! template's `name`: served like any other, for the runtime's tests of
//! a component without tools.

wit_bindgen::generate!({ path: "../../../wit", world: "server" });

use airlock::tool::types::{Content, Error, Output, ResourceBody, Role, Tool};
use exports::airlock::tool::completions::{self, Completion, Reference};
use exports::airlock::tool::prompts::{self, Argument, Message, Prompt, PromptMessages};
use exports::airlock::tool::resources::{
    self, Catalog, Contents, ReadError, Resource, ResourceTemplate,
};

struct OffersOnly;

const NOTES: &[&str] = &["monday", "moving", "tuesday"];

impl exports::airlock::tool::tools::Guest for OffersOnly {
    fn describe() -> Vec<Tool> {
        Vec::new()
    }

    fn call(name: String, _arguments: String) -> Result<Output, Error> {
        Err(Error::InvalidArguments(format!("no tool {name}")))
    }
}

impl resources::Guest for OffersOnly {
    fn describe() -> Catalog {
        Catalog {
            resources: vec![Resource {
                uri: "only://readme".into(),
                name: "readme".into(),
                title: None,
                description: Some("what this component is".into()),
                mime_type: Some("text/plain".into()),
                size: None,
                annotations: None,
                icons: vec![],
                meta: None,
            }],
            templates: vec![ResourceTemplate {
                uri_template: "only://notes/{name}".into(),
                name: "note".into(),
                title: None,
                description: Some("one note by name".into()),
                mime_type: Some("text/plain".into()),
                annotations: None,
                icons: vec![],
            }],
            tool_meta: vec![],
        }
    }

    fn read(uri: String) -> Result<Vec<Contents>, ReadError> {
        let text = match uri.strip_prefix("only://notes/") {
            Some(name) if NOTES.contains(&name) => format!("the note {name}"),
            Some(name) => return Err(ReadError::NotFound(format!("no note {name}"))),
            None if uri == "only://readme" => "No tools here, only what is read.".to_string(),
            None => return Err(ReadError::NotFound(format!("no resource {uri}"))),
        };
        Ok(vec![Contents {
            uri,
            mime_type: Some("text/plain".into()),
            body: ResourceBody::Text(text),
            meta: None,
        }])
    }
}

impl prompts::Guest for OffersOnly {
    fn describe() -> Vec<Prompt> {
        vec![Prompt {
            name: "summarize".into(),
            title: None,
            description: Some("summarize a topic".into()),
            arguments: vec![Argument {
                name: "topic".into(),
                title: None,
                description: Some("what to summarize".into()),
                required: true,
            }],
            icons: vec![],
        }]
    }

    fn get(name: String, arguments: Vec<(String, String)>) -> Result<PromptMessages, Error> {
        if name != "summarize" {
            return Err(Error::InvalidArguments(format!("no prompt {name}")));
        }
        let topic = arguments
            .iter()
            .find(|(k, _)| k == "topic")
            .map(|(_, v)| v.as_str())
            .unwrap_or("anything");
        Ok(PromptMessages {
            description: None,
            messages: vec![Message {
                role: Role::User,
                content: Content::Text(format!("Summarize {topic}.")),
            }],
        })
    }
}

impl completions::Guest for OffersOnly {
    fn complete(
        reference: Reference,
        argument: String,
        value: String,
        _context: Vec<(String, String)>,
    ) -> Result<Completion, Error> {
        let values: Vec<String> = match (&reference, argument.as_str()) {
            (Reference::ResourceTemplate(t), "name") if t == "only://notes/{name}" => NOTES
                .iter()
                .filter(|n| n.starts_with(&value))
                .map(|n| n.to_string())
                .collect(),
            _ => Vec::new(),
        };
        Ok(Completion {
            total: Some(values.len() as u32),
            has_more: false,
            values,
        })
    }
}

/// No skills: world `server` exports the interface since 0.1.2.
impl exports::airlock::tool::skills::Guest for OffersOnly {
    fn describe() -> Vec<exports::airlock::tool::skills::Skill> {
        Vec::new()
    }
}

export!(OffersOnly);
