//! A component of world `server` that lies in its declaration: its tool
//! `show` names `ui://liar/app` as its UI, which it does not serve. The
//! runtime must refuse it at load, naming the tool and the URI.

wit_bindgen::generate!({ path: "../../../wit", world: "server" });

use airlock::tool::types::{Error, Hints, Output, TaskSupport, Tool};
use exports::airlock::tool::completions::{self, Completion, Reference};
use exports::airlock::tool::prompts::{self, Prompt, PromptMessages};
use exports::airlock::tool::resources::{self, Catalog, Contents, ReadError, ToolMeta};

struct Liar;

impl exports::airlock::tool::tools::Guest for Liar {
    fn describe() -> Vec<Tool> {
        vec![Tool {
            name: "show".into(),
            title: None,
            description: "shows a UI it does not have".into(),
            input_schema: r#"{"type":"object"}"#.into(),
            output_schema: None,
            hints: Hints::READ_ONLY,
            icons: vec![],
            task_support: TaskSupport::Forbidden,
        }]
    }

    fn call(_name: String, _arguments: String) -> Result<Output, Error> {
        Err(Error::Failed("a liar never runs".into()))
    }
}

impl resources::Guest for Liar {
    fn describe() -> Catalog {
        Catalog {
            resources: vec![],
            templates: vec![],
            tool_meta: vec![ToolMeta {
                tool: "show".into(),
                meta: r#"{"ui":{"resourceUri":"ui://liar/app"}}"#.into(),
            }],
        }
    }

    fn read(uri: String) -> Result<Vec<Contents>, ReadError> {
        Err(ReadError::NotFound(uri))
    }
}

impl prompts::Guest for Liar {
    fn describe() -> Vec<Prompt> {
        vec![]
    }

    fn get(name: String, _arguments: Vec<(String, String)>) -> Result<PromptMessages, Error> {
        Err(Error::Failed(name))
    }
}

impl completions::Guest for Liar {
    fn complete(
        _reference: Reference,
        _argument: String,
        _value: String,
        _context: Vec<(String, String)>,
    ) -> Result<Completion, Error> {
        Err(Error::Failed("none".into()))
    }
}

/// No skills: world `server` exports the interface since 0.1.2.
impl exports::airlock::tool::skills::Guest for Liar {
    fn describe() -> Vec<exports::airlock::tool::skills::Skill> {
        Vec::new()
    }
}

export!(Liar);
