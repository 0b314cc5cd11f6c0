//! A component of world `server` served beside `offers`, for the runtime's
//! tests of which URIs a component may announce as updated: its template
//! `test://{name}` matches `test://note`, which `offers` serves as a
//! resource, and `test://free`, which no one else serves; its own resource
//! is `shadow://own`. Its tool `announce` calls `host.resource-updated`
//! with the `uri` it is given, whatever it is.

wit_bindgen::generate!({ path: "../../../wit", world: "server" });

use airlock::tool::host;
use airlock::tool::types::{Content, Error, Hints, Output, ResourceBody, TaskSupport, Tool};
use exports::airlock::tool::completions::{self, Completion, Reference};
use exports::airlock::tool::prompts::{self, Prompt, PromptMessages};
use exports::airlock::tool::resources::{
    self, Catalog, Contents, ReadError, Resource, ResourceTemplate,
};

struct Shadow;

impl exports::airlock::tool::tools::Guest for Shadow {
    fn describe() -> Vec<Tool> {
        vec![Tool {
            name: "announce".into(),
            title: None,
            description: "Says that the resource `uri` changed".into(),
            input_schema:
                r#"{"type":"object","properties":{"uri":{"type":"string"}},"required":["uri"]}"#
                    .into(),
            output_schema: None,
            hints: Hints::READ_ONLY,
            icons: vec![],
            task_support: TaskSupport::Forbidden,
        }]
    }

    fn call(name: String, arguments: String) -> Result<Output, Error> {
        if name != "announce" {
            return Err(Error::InvalidArguments(format!("no tool {name}")));
        }
        // `{"uri":"…"}`, without escapes: enough for the tests' URIs.
        let uri = arguments
            .split_once(r#""uri":""#)
            .and_then(|(_, rest)| rest.split_once('"'))
            .map(|(uri, _)| uri.to_string())
            .ok_or_else(|| Error::InvalidArguments("no uri".into()))?;
        host::resource_updated(&uri);
        Ok(Output {
            content: vec![Content::Text(format!("announced {uri}"))],
            structured: None,
        })
    }
}

impl resources::Guest for Shadow {
    fn describe() -> Catalog {
        Catalog {
            resources: vec![Resource {
                uri: "shadow://own".into(),
                name: "own".into(),
                title: None,
                description: Some("this component's own resource".into()),
                mime_type: Some("text/plain".into()),
                size: None,
                annotations: None,
                icons: vec![],
                meta: None,
            }],
            templates: vec![ResourceTemplate {
                uri_template: "test://{name}".into(),
                name: "any".into(),
                title: None,
                description: Some("any test:// name".into()),
                mime_type: Some("text/plain".into()),
                annotations: None,
                icons: vec![],
            }],
            tool_meta: vec![],
        }
    }

    fn read(uri: String) -> Result<Vec<Contents>, ReadError> {
        let text = match uri.strip_prefix("test://") {
            Some(name) => format!("the shadow of {name}"),
            None if uri == "shadow://own" => "the shadow's own".to_string(),
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

impl prompts::Guest for Shadow {
    fn describe() -> Vec<Prompt> {
        Vec::new()
    }

    fn get(name: String, _arguments: Vec<(String, String)>) -> Result<PromptMessages, Error> {
        Err(Error::InvalidArguments(format!("no prompt {name}")))
    }
}

impl completions::Guest for Shadow {
    fn complete(
        _reference: Reference,
        _argument: String,
        _value: String,
        _context: Vec<(String, String)>,
    ) -> Result<Completion, Error> {
        Ok(Completion {
            total: Some(0),
            has_more: false,
            values: Vec::new(),
        })
    }
}

/// No skills: world `server` exports the interface since 0.1.2.
impl exports::airlock::tool::skills::Guest for Shadow {
    fn describe() -> Vec<exports::airlock::tool::skills::Skill> {
        Vec::new()
    }
}

export!(Shadow);
