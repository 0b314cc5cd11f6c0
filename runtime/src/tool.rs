//! What a tool is, as the runtime sees it: the metadata a component declares
//! through `describe`, in the runtime's own types.

use serde_json::Value;

/// The four behaviour hints. Absent means false.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Hints {
    pub read_only: bool,
    pub destructive: bool,
    pub idempotent: bool,
    pub open_world: bool,
}

impl Hints {
    /// The names of the hints that are on, as the policy file spells them.
    pub fn names(&self) -> Vec<&'static str> {
        let all = [
            (self.read_only, "read-only"),
            (self.destructive, "destructive"),
            (self.idempotent, "idempotent"),
            (self.open_world, "open-world"),
        ];
        all.into_iter()
            .filter_map(|(on, name)| on.then_some(name))
            .collect()
    }

    /// Every combination of the four hints, for table-driven tests.
    pub fn all_combinations() -> impl Iterator<Item = Hints> {
        (0u8..16).map(|bits| Hints {
            read_only: bits & 1 != 0,
            destructive: bits & 2 != 0,
            idempotent: bits & 4 != 0,
            open_world: bits & 8 != 0,
        })
    }
}

/// Whether a tool runs as a background task.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TaskSupport {
    #[default]
    Forbidden,
    Optional,
    Required,
}

impl TaskSupport {
    /// The MCP spelling (`execution.taskSupport`).
    pub fn as_str(self) -> &'static str {
        match self {
            TaskSupport::Forbidden => "forbidden",
            TaskSupport::Optional => "optional",
            TaskSupport::Required => "required",
        }
    }
}

/// An icon a client may show next to the tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Icon {
    pub src: String,
    pub mime_type: Option<String>,
    pub sizes: Vec<String>,
}

/// One tool's metadata, validated: the name follows the rules, the schemas
/// are parsed JSON Schemas with an object root.
#[derive(Debug, Clone)]
pub struct ToolInfo {
    pub name: String,
    pub title: Option<String>,
    pub description: String,
    pub input_schema: Value,
    pub output_schema: Option<Value>,
    pub hints: Hints,
    pub icons: Vec<Icon>,
    pub task_support: TaskSupport,
}

/// The output-schema keyword (an annotation, ignored by validators) that
/// marks a result wrapped as `{"result": value}` by the SDK.
pub const WRAPPED: &str = "x-airlock-wrapped";

/// Severity of a guest log message (the syslog levels MCP uses), lowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    Debug,
    Info,
    Notice,
    Warning,
    Error,
    Critical,
    Alert,
    Emergency,
}

impl Level {
    pub const ALL: [Level; 8] = [
        Level::Debug,
        Level::Info,
        Level::Notice,
        Level::Warning,
        Level::Error,
        Level::Critical,
        Level::Alert,
        Level::Emergency,
    ];

    /// The MCP spelling (`notifications/message` `level`).
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Debug => "debug",
            Level::Info => "info",
            Level::Notice => "notice",
            Level::Warning => "warning",
            Level::Error => "error",
            Level::Critical => "critical",
            Level::Alert => "alert",
            Level::Emergency => "emergency",
        }
    }

    /// Parses the MCP spelling.
    pub fn parse(name: &str) -> Option<Level> {
        Level::ALL.into_iter().find(|l| l.as_str() == name)
    }
}

/// The body of an embedded resource.
#[derive(Debug, Clone, PartialEq)]
pub enum ResourceBody {
    Text(String),
    Blob(Vec<u8>),
}

/// One block of a tool's result.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    Text(String),
    Image {
        data: Vec<u8>,
        mime_type: String,
    },
    Audio {
        data: Vec<u8>,
        mime_type: String,
    },
    Embedded {
        uri: String,
        mime_type: Option<String>,
        body: ResourceBody,
    },
    Link {
        uri: String,
        name: String,
        title: Option<String>,
        description: Option<String>,
        mime_type: Option<String>,
        size: Option<u64>,
    },
}

/// The checked result of a successful call: content blocks and, when the
/// tool has an output schema, structured JSON that matches it. When the tool
/// returned structured JSON and no content, the runtime has added the JSON
/// as one text block.
#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    pub content: Vec<Content>,
    pub structured: Option<Value>,
}

impl Hints {
    /// The four MCP annotations, always explicit so no client falls back to
    /// MCP's own defaults (which assume destructive and open-world).
    pub fn annotations(&self) -> serde_json::Map<String, Value> {
        let mut map = serde_json::Map::new();
        map.insert("readOnlyHint".into(), self.read_only.into());
        map.insert("destructiveHint".into(), self.destructive.into());
        map.insert("idempotentHint".into(), self.idempotent.into());
        map.insert("openWorldHint".into(), self.open_world.into());
        map
    }
}

impl Icon {
    /// An `icons` list as MCP has it (on a tool, a resource, a template, a
    /// prompt); `None` for none.
    pub fn list_to_mcp(icons: &[Icon]) -> Option<Value> {
        (!icons.is_empty()).then(|| icons.iter().map(Icon::to_mcp).collect())
    }

    fn to_mcp(&self) -> Value {
        let mut icon = serde_json::Map::new();
        icon.insert("src".into(), self.src.clone().into());
        if let Some(mime) = &self.mime_type {
            icon.insert("mimeType".into(), mime.clone().into());
        }
        if !self.sizes.is_empty() {
            icon.insert("sizes".into(), self.sizes.clone().into());
        }
        Value::Object(icon)
    }
}

impl ToolInfo {
    /// The tool as MCP `tools/list` lists it.
    /// Whether the tool's structured result is a non-object value wrapped
    /// as `{"result": …}` (MCP wants an object root): its output schema
    /// carries [`WRAPPED`], as the SDKs write it.
    pub fn wraps_result(&self) -> bool {
        self.output_schema
            .as_ref()
            .and_then(|s| s.get(WRAPPED))
            .and_then(Value::as_bool)
            == Some(true)
    }

    pub fn to_mcp(&self) -> Value {
        let mut tool = serde_json::Map::new();
        tool.insert("name".into(), self.name.clone().into());
        if let Some(title) = &self.title {
            tool.insert("title".into(), title.clone().into());
        }
        tool.insert("description".into(), self.description.clone().into());
        tool.insert("inputSchema".into(), self.input_schema.clone());
        if let Some(output) = &self.output_schema {
            tool.insert("outputSchema".into(), output.clone());
        }
        let mut annotations = self.hints.annotations();
        if let Some(title) = &self.title {
            annotations.insert("title".into(), title.clone().into());
        }
        tool.insert("annotations".into(), Value::Object(annotations));
        if let Some(icons) = Icon::list_to_mcp(&self.icons) {
            tool.insert("icons".into(), icons);
        }
        tool.insert(
            "execution".into(),
            serde_json::json!({ "taskSupport": self.task_support.as_str() }),
        );
        Value::Object(tool)
    }
}

impl Content {
    /// The block as an MCP content object.
    pub fn to_mcp(&self) -> Value {
        use base64::Engine as _;
        let b64 = |data: &[u8]| base64::engine::general_purpose::STANDARD.encode(data);
        match self {
            Content::Text(text) => serde_json::json!({ "type": "text", "text": text }),
            Content::Image { data, mime_type } => {
                serde_json::json!({ "type": "image", "data": b64(data), "mimeType": mime_type })
            }
            Content::Audio { data, mime_type } => {
                serde_json::json!({ "type": "audio", "data": b64(data), "mimeType": mime_type })
            }
            Content::Embedded {
                uri,
                mime_type,
                body,
            } => {
                let mut resource = serde_json::Map::new();
                resource.insert("uri".into(), uri.clone().into());
                if let Some(mime) = mime_type {
                    resource.insert("mimeType".into(), mime.clone().into());
                }
                match body {
                    ResourceBody::Text(text) => resource.insert("text".into(), text.clone().into()),
                    ResourceBody::Blob(blob) => resource.insert("blob".into(), b64(blob).into()),
                };
                serde_json::json!({ "type": "resource", "resource": resource })
            }
            Content::Link {
                uri,
                name,
                title,
                description,
                mime_type,
                size,
            } => {
                let mut link = serde_json::Map::new();
                link.insert("type".into(), "resource_link".into());
                link.insert("uri".into(), uri.clone().into());
                link.insert("name".into(), name.clone().into());
                let optional = [
                    ("title", title.clone().map(Value::from)),
                    ("description", description.clone().map(Value::from)),
                    ("mimeType", mime_type.clone().map(Value::from)),
                    ("size", size.map(Value::from)),
                ];
                for (key, value) in optional {
                    if let Some(value) = value {
                        link.insert(key.into(), value);
                    }
                }
                Value::Object(link)
            }
        }
    }
}

impl Output {
    /// The result as an MCP `CallToolResult` (`isError: false`).
    pub fn to_mcp(&self) -> Value {
        let mut result = serde_json::Map::new();
        result.insert(
            "content".into(),
            Value::Array(self.content.iter().map(Content::to_mcp).collect()),
        );
        if let Some(structured) = &self.structured {
            result.insert("structuredContent".into(), structured.clone());
        }
        result.insert("isError".into(), false.into());
        Value::Object(result)
    }
}
