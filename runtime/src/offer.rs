//! What a component offers beside its tools (world `server` of the
//! contract): resources, resource templates, prompts and completions, in
//! the runtime's own types, and how each looks in MCP: each serialises
//! (serde) as MCP has it — a resource, a template, a prompt as its list
//! shows it, and what a read, a prompt or a completion answers as the
//! method's result ([`Offered`]). Field order is the order of the keys.
//!
//! The catalog checks the declarations at load (`catalog/offers.rs`); the
//! sandbox produces the results of reads, prompts and completions
//! (`sandbox/offers.rs`); the protocol lists and answers them.

use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use crate::tool::{Content, Contents, Icon, ResourceBody, to_mcp_value};

/// The most values one completion may hold (MCP's limit).
pub const MAX_COMPLETIONS: usize = 100;

/// Who a message or a resource is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

/// Hints for the client about a resource.
#[derive(Debug, Clone, PartialEq, Default, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub audience: Vec<Role>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_modified: Option<String>,
}

/// A resource with a fixed URI, as declared (its `_meta` checked to be a
/// JSON object at load); serialised as `resources/list` lists it.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceInfo {
    pub uri: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub icons: Vec<Icon>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// Resources whose URIs follow an RFC 6570 level-1 template; serialised
/// as `resources/templates/list` lists it.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TemplateInfo {
    pub uri_template: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Annotations>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub icons: Vec<Icon>,
}

/// One argument of a prompt.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct PromptArgument {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub required: bool,
}

/// A prompt: a template of messages a user picks; serialised as
/// `prompts/list` lists it.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct PromptInfo {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub arguments: Vec<PromptArgument>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub icons: Vec<Icon>,
}

/// One piece of a resource's contents, as read (serialised as an entry of
/// `resources/read`'s `contents`, a blob in base64).
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceContents {
    pub uri: String,
    pub mime_type: Option<String>,
    pub body: ResourceBody,
    pub meta: Option<Map<String, Value>>,
}

/// One message of a prompt.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PromptMessage {
    pub role: Role,
    pub content: Content,
}

/// What `prompts/get` answers (its `GetPromptResult`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PromptMessages {
    pub messages: Vec<PromptMessage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// What `completion/complete` answers (the `completion` of its result).
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Completion {
    pub values: Vec<String>,
    pub has_more: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<u32>,
}

/// What a completion is for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub enum CompletionRef {
    /// An argument of the prompt of this name.
    Prompt(String),
    /// A variable of the resource template written like this.
    Template(String),
}

impl CompletionRef {
    /// How the audit log and the metrics name it.
    pub fn label(&self) -> String {
        match self {
            CompletionRef::Prompt(name) => format!("completion:prompt:{name}"),
            CompletionRef::Template(template) => format!("completion:template:{template}"),
        }
    }
}

impl Annotations {
    pub fn to_mcp(&self) -> Value {
        to_mcp_value(self)
    }
}

impl ResourceInfo {
    /// The resource as `resources/list` lists it, as JSON.
    pub fn to_mcp(&self) -> Value {
        to_mcp_value(self)
    }
}

impl TemplateInfo {
    /// The template as `resources/templates/list` lists it, as JSON.
    pub fn to_mcp(&self) -> Value {
        to_mcp_value(self)
    }
}

impl PromptInfo {
    /// The prompt as `prompts/list` lists it, as JSON.
    pub fn to_mcp(&self) -> Value {
        to_mcp_value(self)
    }
}

/// One entry of `resources/read`'s `contents`.
impl Serialize for ResourceContents {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Contents {
            uri: &self.uri,
            mime_type: self.mime_type.as_deref(),
            body: &self.body,
            meta: self.meta.as_ref(),
        }
        .serialize(serializer)
    }
}

impl ResourceContents {
    /// One entry of `resources/read`'s `contents`, as JSON.
    pub fn to_mcp(&self) -> Value {
        to_mcp_value(self)
    }

    /// Its size as the output limit counts it (bytes of text or blob).
    pub fn size(&self) -> u64 {
        let body = match &self.body {
            ResourceBody::Text(text) => text.len(),
            ResourceBody::Blob(blob) => blob.len(),
        };
        (self.uri.len() + body) as u64
    }
}

impl PromptMessages {
    /// The result of `prompts/get`, as JSON.
    pub fn to_mcp(&self) -> Value {
        to_mcp_value(self)
    }
}

impl Completion {
    /// The result of `completion/complete`, as JSON.
    pub fn to_mcp(&self) -> Value {
        to_mcp_value(&CompleteResult { completion: self })
    }
}

/// `resources/read`'s result (`ReadResourceResult`).
#[derive(Serialize)]
struct ReadResult<'a> {
    contents: &'a [ResourceContents],
}

/// `completion/complete`'s result (`CompleteResult`).
#[derive(Serialize)]
struct CompleteResult<'a> {
    completion: &'a Completion,
}

/// What a read, a prompt or a completion answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Offered {
    Contents(Vec<ResourceContents>),
    Messages(PromptMessages),
    Completion(Completion),
}

/// The MCP result of the method that asked for it.
impl Serialize for Offered {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Offered::Contents(contents) => ReadResult { contents }.serialize(serializer),
            Offered::Messages(messages) => messages.serialize(serializer),
            Offered::Completion(completion) => CompleteResult { completion }.serialize(serializer),
        }
    }
}

impl Offered {
    /// The MCP result, as JSON.
    pub fn to_mcp(&self) -> Value {
        to_mcp_value(self)
    }
}

impl Offered {
    /// Its size as the output limit counts it: the bytes of texts, blobs
    /// and values.
    pub fn size(&self) -> u64 {
        let content = |c: &Content| match c {
            Content::Text(t) => t.len(),
            Content::Image { data, .. } | Content::Audio { data, .. } => data.len(),
            Content::Embedded { uri, body, .. } => {
                uri.len()
                    + match body {
                        ResourceBody::Text(t) => t.len(),
                        ResourceBody::Blob(b) => b.len(),
                    }
            }
            Content::Link { uri, name, .. } => uri.len() + name.len(),
        } as u64;
        match self {
            Offered::Contents(contents) => contents.iter().map(ResourceContents::size).sum(),
            Offered::Messages(m) => m.messages.iter().map(|m| content(&m.content)).sum(),
            Offered::Completion(c) => c.values.iter().map(|v| v.len() as u64).sum(),
        }
    }
}

/// What a component declares beside its tools, before the catalog checks
/// it (`_meta` still JSON text).
#[derive(Debug, Default, Clone, Serialize, serde::Deserialize)]
pub struct DescribedOffers {
    /// Each resource with its `_meta` text.
    pub resources: Vec<(ResourceInfo, Option<String>)>,
    pub templates: Vec<TemplateInfo>,
    /// `(tool, _meta text)`.
    pub tool_meta: Vec<(String, String)>,
    pub prompts: Vec<PromptInfo>,
    pub completes: bool,
    /// The skills it carries (contract 0.1.2), checked by
    /// `catalog/skills.rs`.
    pub skills: Vec<DescribedSkill>,
}

/// A skill as a component declares it: where it is served (`path`, the
/// part of `skill://<path>/SKILL.md` before the file) and its files, as
/// `(path inside the skill, bytes)`.
#[derive(Debug, Default, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct DescribedSkill {
    pub path: String,
    pub files: Vec<(String, Vec<u8>)>,
}

/// One read, prompt or completion to run in a component (serialisable as
/// itself, not as MCP: a cordon's worker is sent it).
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub enum OfferRequest {
    /// `resources/read`.
    Read { uri: String },
    /// `prompts/get`, with the arguments as (name, value).
    Prompt {
        name: String,
        arguments: Vec<(String, String)>,
    },
    /// `completion/complete`.
    Complete {
        reference: CompletionRef,
        argument: String,
        value: String,
        context: Vec<(String, String)>,
    },
}

impl OfferRequest {
    /// The MCP method it answers.
    pub fn method(&self) -> &'static str {
        match self {
            OfferRequest::Read { .. } => "resources/read",
            OfferRequest::Prompt { .. } => "prompts/get",
            OfferRequest::Complete { .. } => "completion/complete",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A resource as `resources/list` shows it, key order included: `size`
    /// and `_meta` after the fields it shares with a template.
    #[test]
    fn a_resource_lists_as_mcp_has_it_key_for_key() {
        let resource = ResourceInfo {
            uri: "ui://app".into(),
            name: "app".into(),
            title: None,
            description: Some("d".into()),
            mime_type: Some("text/html".into()),
            size: Some(10),
            annotations: Some(Annotations {
                audience: vec![Role::User],
                priority: Some(0.5),
                last_modified: None,
            }),
            icons: vec![],
            meta: json!({"ui": {"csp": {}}}).as_object().cloned(),
        };
        assert_eq!(
            crate::json::to_string(&resource.to_mcp()),
            r#"{"uri":"ui://app","name":"app","description":"d","mimeType":"text/html","annotations":{"audience":["user"],"priority":0.5},"size":10,"_meta":{"ui":{"csp":{}}}}"#
        );
    }

    /// What a read, a prompt and a completion answer, as MCP text.
    #[test]
    fn offered_results_serialise_as_their_methods_answer() {
        let read = Offered::Contents(vec![ResourceContents {
            uri: "a://b".into(),
            mime_type: Some("text/plain".into()),
            body: ResourceBody::Text("x".into()),
            meta: None,
        }]);
        assert_eq!(
            crate::json::to_string(&read.to_mcp()),
            r#"{"contents":[{"uri":"a://b","mimeType":"text/plain","text":"x"}]}"#
        );
        let prompt = Offered::Messages(PromptMessages {
            description: Some("d".into()),
            messages: vec![PromptMessage {
                role: Role::Assistant,
                content: Content::Text("t".into()),
            }],
        });
        assert_eq!(
            crate::json::to_string(&prompt.to_mcp()),
            r#"{"messages":[{"role":"assistant","content":{"type":"text","text":"t"}}],"description":"d"}"#
        );
        let completion = Offered::Completion(Completion {
            values: vec!["a".into()],
            total: Some(1),
            has_more: false,
        });
        assert_eq!(
            crate::json::to_string(&completion.to_mcp()),
            r#"{"completion":{"values":["a"],"hasMore":false,"total":1}}"#
        );
    }
}
