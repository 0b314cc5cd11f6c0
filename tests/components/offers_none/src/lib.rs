//! A component of world `server` that declares nothing at all: no tool,
//! resource, template or prompt. The runtime refuses it, saying what to
//! export.

wit_bindgen::generate!({ path: "../../../wit", world: "server" });

use airlock::tool::types::{Error, Output, Tool};
use exports::airlock::tool::completions::{self, Completion, Reference};
use exports::airlock::tool::prompts::{self, Prompt, PromptMessages};
use exports::airlock::tool::resources::{self, Catalog, Contents, ReadError};

struct Nothing;

impl exports::airlock::tool::tools::Guest for Nothing {
    fn describe() -> Vec<Tool> {
        Vec::new()
    }

    fn call(name: String, _arguments: String) -> Result<Output, Error> {
        Err(Error::InvalidArguments(format!("no tool {name}")))
    }
}

impl resources::Guest for Nothing {
    fn describe() -> Catalog {
        Catalog {
            resources: vec![],
            templates: vec![],
            tool_meta: vec![],
        }
    }

    fn read(uri: String) -> Result<Vec<Contents>, ReadError> {
        Err(ReadError::NotFound(uri))
    }
}

impl prompts::Guest for Nothing {
    fn describe() -> Vec<Prompt> {
        Vec::new()
    }

    fn get(name: String, _arguments: Vec<(String, String)>) -> Result<PromptMessages, Error> {
        Err(Error::InvalidArguments(format!("no prompt {name}")))
    }
}

impl completions::Guest for Nothing {
    fn complete(
        _reference: Reference,
        _argument: String,
        _value: String,
        _context: Vec<(String, String)>,
    ) -> Result<Completion, Error> {
        Ok(Completion {
            total: Some(0),
            has_more: false,
            values: vec![],
        })
    }
}

/// No skills: world `server` exports the interface since 0.1.2.
impl exports::airlock::tool::skills::Guest for Nothing {
    fn describe() -> Vec<exports::airlock::tool::skills::Skill> {
        Vec::new()
    }
}

export!(Nothing);
