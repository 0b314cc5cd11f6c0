//! What a component offers beside its tools (world `server` of the
//! contract): resources, resource templates, prompts and completions, in
//! the runtime's own types, and how each looks in MCP.
//!
//! The catalog checks the declarations at load (`catalog/offers.rs`); the
//! sandbox produces the results of reads, prompts and completions
//! (`sandbox/offers.rs`); the protocol lists and answers them.

use serde_json::{Map, Value, json};

use crate::tool::{Content, Icon, ResourceBody};

/// The most values one completion may hold (MCP's limit).
pub const MAX_COMPLETIONS: usize = 100;

/// Who a message or a resource is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Annotations {
    pub audience: Vec<Role>,
    pub priority: Option<f64>,
    pub last_modified: Option<String>,
}

/// A resource with a fixed URI, as declared (its `_meta` checked to be a
/// JSON object at load).
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceInfo {
    pub uri: String,
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub mime_type: Option<String>,
    pub size: Option<u64>,
    pub annotations: Option<Annotations>,
    pub icons: Vec<Icon>,
    pub meta: Option<Map<String, Value>>,
}

/// Resources whose URIs follow an RFC 6570 level-1 template.
#[derive(Debug, Clone, PartialEq)]
pub struct TemplateInfo {
    pub uri_template: String,
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub mime_type: Option<String>,
    pub annotations: Option<Annotations>,
    pub icons: Vec<Icon>,
}

/// One argument of a prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptArgument {
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub required: bool,
}

/// A prompt: a template of messages a user picks.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptInfo {
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub arguments: Vec<PromptArgument>,
    pub icons: Vec<Icon>,
}

/// One piece of a resource's contents, as read.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceContents {
    pub uri: String,
    pub mime_type: Option<String>,
    pub body: ResourceBody,
    pub meta: Option<Map<String, Value>>,
}

/// One message of a prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptMessage {
    pub role: Role,
    pub content: Content,
}

/// What `prompts/get` answers.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptMessages {
    pub description: Option<String>,
    pub messages: Vec<PromptMessage>,
}

/// What `completion/complete` answers.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Completion {
    pub values: Vec<String>,
    pub total: Option<u32>,
    pub has_more: bool,
}

/// What a completion is for.
#[derive(Debug, Clone, PartialEq, Eq)]
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
        let mut a = Map::new();
        if !self.audience.is_empty() {
            let audience: Vec<&str> = self.audience.iter().map(|r| r.as_str()).collect();
            a.insert("audience".into(), audience.into());
        }
        if let Some(priority) = self.priority {
            a.insert("priority".into(), priority.into());
        }
        if let Some(modified) = &self.last_modified {
            a.insert("lastModified".into(), modified.clone().into());
        }
        Value::Object(a)
    }
}

/// Inserts the optional fields that resources and templates share.
fn insert_common(
    out: &mut Map<String, Value>,
    title: &Option<String>,
    description: &Option<String>,
    mime_type: &Option<String>,
    annotations: &Option<Annotations>,
    icons: &[Icon],
) {
    let optional = [
        ("title", title.clone().map(Value::from)),
        ("description", description.clone().map(Value::from)),
        ("mimeType", mime_type.clone().map(Value::from)),
        ("annotations", annotations.as_ref().map(Annotations::to_mcp)),
        ("icons", Icon::list_to_mcp(icons)),
    ];
    for (key, value) in optional {
        if let Some(value) = value {
            out.insert(key.into(), value);
        }
    }
}

impl ResourceInfo {
    /// The resource as `resources/list` lists it.
    pub fn to_mcp(&self) -> Value {
        let mut r = Map::new();
        r.insert("uri".into(), self.uri.clone().into());
        r.insert("name".into(), self.name.clone().into());
        insert_common(
            &mut r,
            &self.title,
            &self.description,
            &self.mime_type,
            &self.annotations,
            &self.icons,
        );
        if let Some(size) = self.size {
            r.insert("size".into(), size.into());
        }
        if let Some(meta) = &self.meta {
            r.insert("_meta".into(), Value::Object(meta.clone()));
        }
        Value::Object(r)
    }
}

impl TemplateInfo {
    /// The template as `resources/templates/list` lists it.
    pub fn to_mcp(&self) -> Value {
        let mut t = Map::new();
        t.insert("uriTemplate".into(), self.uri_template.clone().into());
        t.insert("name".into(), self.name.clone().into());
        insert_common(
            &mut t,
            &self.title,
            &self.description,
            &self.mime_type,
            &self.annotations,
            &self.icons,
        );
        Value::Object(t)
    }
}

impl PromptInfo {
    /// The prompt as `prompts/list` lists it.
    pub fn to_mcp(&self) -> Value {
        let mut p = Map::new();
        p.insert("name".into(), self.name.clone().into());
        if let Some(title) = &self.title {
            p.insert("title".into(), title.clone().into());
        }
        if let Some(description) = &self.description {
            p.insert("description".into(), description.clone().into());
        }
        let arguments: Vec<Value> = self
            .arguments
            .iter()
            .map(|a| {
                let mut arg = Map::new();
                arg.insert("name".into(), a.name.clone().into());
                if let Some(title) = &a.title {
                    arg.insert("title".into(), title.clone().into());
                }
                if let Some(description) = &a.description {
                    arg.insert("description".into(), description.clone().into());
                }
                arg.insert("required".into(), a.required.into());
                Value::Object(arg)
            })
            .collect();
        p.insert("arguments".into(), arguments.into());
        if let Some(icons) = Icon::list_to_mcp(&self.icons) {
            p.insert("icons".into(), icons);
        }
        Value::Object(p)
    }
}

impl ResourceContents {
    /// One entry of `resources/read`'s `contents` (a blob in base64).
    pub fn to_mcp(&self) -> Value {
        use base64::Engine as _;
        let mut c = Map::new();
        c.insert("uri".into(), self.uri.clone().into());
        if let Some(mime) = &self.mime_type {
            c.insert("mimeType".into(), mime.clone().into());
        }
        match &self.body {
            ResourceBody::Text(text) => c.insert("text".into(), text.clone().into()),
            ResourceBody::Blob(blob) => c.insert(
                "blob".into(),
                base64::engine::general_purpose::STANDARD
                    .encode(blob)
                    .into(),
            ),
        };
        if let Some(meta) = &self.meta {
            c.insert("_meta".into(), Value::Object(meta.clone()));
        }
        Value::Object(c)
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
    /// The result of `prompts/get`.
    pub fn to_mcp(&self) -> Value {
        let messages: Vec<Value> = self
            .messages
            .iter()
            .map(|m| json!({ "role": m.role.as_str(), "content": m.content.to_mcp() }))
            .collect();
        let mut result = json!({ "messages": messages });
        if let Some(description) = &self.description {
            result["description"] = description.clone().into();
        }
        result
    }
}

impl Completion {
    /// The result of `completion/complete`.
    pub fn to_mcp(&self) -> Value {
        let mut completion = json!({ "values": self.values, "hasMore": self.has_more });
        if let Some(total) = self.total {
            completion["total"] = total.into();
        }
        json!({ "completion": completion })
    }
}

/// What a read, a prompt or a completion answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Offered {
    Contents(Vec<ResourceContents>),
    Messages(PromptMessages),
    Completion(Completion),
}

impl Offered {
    /// The MCP result.
    pub fn to_mcp(&self) -> Value {
        match self {
            Offered::Contents(contents) => {
                json!({ "contents": contents.iter().map(ResourceContents::to_mcp).collect::<Vec<_>>() })
            }
            Offered::Messages(messages) => messages.to_mcp(),
            Offered::Completion(completion) => completion.to_mcp(),
        }
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
#[derive(Debug, Default)]
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
#[derive(Debug, Default, Clone, PartialEq)]
pub struct DescribedSkill {
    pub path: String,
    pub files: Vec<(String, Vec<u8>)>,
}

/// One read, prompt or completion to run in a component.
#[derive(Debug, Clone, PartialEq)]
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
