//! What a tool is, as the runtime sees it: the metadata a component declares
//! through `describe`, in the runtime's own types.

use serde::{Serialize, Serializer};
use serde_json::Value;

/// The four behaviour hints. Absent means false.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
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

/// Whether a tool runs as a background task (serialised as MCP spells
/// it: `execution.taskSupport`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
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

/// An icon a client may show next to the tool (serialised as MCP's
/// `Icon`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Icon {
    pub src: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
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

/// The body of an embedded resource (serialised as the field MCP gives
/// it beside the URI: `text`, or `blob` in base64).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ResourceBody {
    Text(String),
    #[serde(serialize_with = "base64")]
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
        match to_mcp_value(&ToolAnnotations::of(self, None)) {
            Value::Object(map) => map,
            _ => serde_json::Map::new(),
        }
    }
}

/// A value as MCP JSON: what `to_mcp` answers for callers that need a
/// `Value` (the protocol serialises the types themselves). These types
/// always serialise (string keys, no failing field); a failure would be
/// a bug, logged and answered as `null`.
pub fn to_mcp_value(value: &impl Serialize) -> Value {
    serde_json::to_value(value).unwrap_or_else(|e| {
        tracing::error!("an MCP value did not serialize: {e}");
        Value::Null
    })
}

/// Bytes as base64 text, written straight into the serialiser (no
/// encoded copy first when it writes text).
pub struct Base64<'a>(pub &'a [u8]);

impl Serialize for Base64<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use base64::engine::general_purpose::STANDARD;
        serializer.collect_str(&base64::display::Base64Display::new(self.0, &STANDARD))
    }
}

fn base64<S: Serializer, B: AsRef<[u8]>>(data: &B, serializer: S) -> Result<S::Ok, S::Error> {
    Base64(data.as_ref()).serialize(serializer)
}

fn no_icons(icons: &&[Icon]) -> bool {
    icons.is_empty()
}

impl Icon {
    /// An `icons` list as MCP has it (on a tool, a resource, a template, a
    /// prompt); `None` for none.
    pub fn list_to_mcp(icons: &[Icon]) -> Option<Value> {
        (!icons.is_empty()).then(|| to_mcp_value(&icons))
    }
}

/// A tool's `annotations`: the four hints, always explicit, and its title.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolAnnotations<'a> {
    read_only_hint: bool,
    destructive_hint: bool,
    idempotent_hint: bool,
    open_world_hint: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<&'a str>,
}

impl<'a> ToolAnnotations<'a> {
    fn of(hints: &Hints, title: Option<&'a str>) -> Self {
        ToolAnnotations {
            read_only_hint: hints.read_only,
            destructive_hint: hints.destructive,
            idempotent_hint: hints.idempotent,
            open_world_hint: hints.open_world,
            title,
        }
    }
}

/// A tool's `execution`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Execution {
    task_support: TaskSupport,
}

/// A tool as MCP `tools/list` lists it (`Tool`).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ListedTool<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<&'a str>,
    description: &'a str,
    input_schema: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_schema: Option<&'a Value>,
    annotations: ToolAnnotations<'a>,
    #[serde(skip_serializing_if = "no_icons")]
    icons: &'a [Icon],
    execution: Execution,
}

/// The tool as MCP `tools/list` lists it.
impl Serialize for ToolInfo {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        ListedTool {
            name: &self.name,
            title: self.title.as_deref(),
            description: &self.description,
            input_schema: &self.input_schema,
            output_schema: self.output_schema.as_ref(),
            annotations: ToolAnnotations::of(&self.hints, self.title.as_deref()),
            icons: &self.icons,
            execution: Execution {
                task_support: self.task_support,
            },
        }
        .serialize(serializer)
    }
}

impl ToolInfo {
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

    /// The tool as MCP `tools/list` lists it, as JSON.
    pub fn to_mcp(&self) -> Value {
        to_mcp_value(self)
    }
}

/// A resource's contents as MCP has them (`TextResourceContents` or
/// `BlobResourceContents`): embedded in a tool's result, or read.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Contents<'a> {
    pub uri: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<&'a str>,
    #[serde(flatten)]
    pub body: &'a ResourceBody,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<&'a serde_json::Map<String, Value>>,
}

/// A content block as MCP has it, tagged by its `type`.
#[derive(Serialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
enum Block<'a> {
    Text {
        text: &'a str,
    },
    Image {
        data: Base64<'a>,
        mime_type: &'a str,
    },
    Audio {
        data: Base64<'a>,
        mime_type: &'a str,
    },
    Resource {
        resource: Contents<'a>,
    },
    ResourceLink {
        uri: &'a str,
        name: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        title: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        description: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        mime_type: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        size: Option<u64>,
    },
}

/// The block as an MCP content object.
impl Serialize for Content {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let block = match self {
            Content::Text(text) => Block::Text { text },
            Content::Image { data, mime_type } => Block::Image {
                data: Base64(data),
                mime_type,
            },
            Content::Audio { data, mime_type } => Block::Audio {
                data: Base64(data),
                mime_type,
            },
            Content::Embedded {
                uri,
                mime_type,
                body,
            } => Block::Resource {
                resource: Contents {
                    uri,
                    mime_type: mime_type.as_deref(),
                    body,
                    meta: None,
                },
            },
            Content::Link {
                uri,
                name,
                title,
                description,
                mime_type,
                size,
            } => Block::ResourceLink {
                uri,
                name,
                title: title.as_deref(),
                description: description.as_deref(),
                mime_type: mime_type.as_deref(),
                size: *size,
            },
        };
        block.serialize(serializer)
    }
}

impl Content {
    /// The block as an MCP content object, as JSON.
    pub fn to_mcp(&self) -> Value {
        to_mcp_value(self)
    }
}

/// A successful call's `CallToolResult`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CallToolResult<'a> {
    content: &'a [Content],
    #[serde(skip_serializing_if = "Option::is_none")]
    structured_content: Option<&'a Value>,
    is_error: bool,
}

/// The result as an MCP `CallToolResult` (`isError: false`).
impl Serialize for Output {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        CallToolResult {
            content: &self.content,
            structured_content: self.structured.as_ref(),
            is_error: false,
        }
        .serialize(serializer)
    }
}

impl Output {
    /// The result as an MCP `CallToolResult` (`isError: false`), as JSON.
    pub fn to_mcp(&self) -> Value {
        to_mcp_value(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The MCP text of a tool's listing, key order included (clients and
    /// transcripts compare it): every optional field present.
    #[test]
    fn a_tool_lists_as_mcp_has_it_key_for_key() {
        let info = ToolInfo {
            name: "restock".into(),
            title: Some("Restock".into()),
            description: "Orders more".into(),
            input_schema: json!({"type": "object"}),
            output_schema: Some(json!({"type": "object"})),
            hints: Hints {
                destructive: true,
                ..Hints::default()
            },
            icons: vec![Icon {
                src: "i.png".into(),
                mime_type: Some("image/png".into()),
                sizes: vec!["48x48".into()],
            }],
            task_support: TaskSupport::Optional,
        };
        assert_eq!(
            crate::json::to_string(&info.to_mcp()),
            r#"{"name":"restock","title":"Restock","description":"Orders more","inputSchema":{"type":"object"},"outputSchema":{"type":"object"},"annotations":{"readOnlyHint":false,"destructiveHint":true,"idempotentHint":false,"openWorldHint":false,"title":"Restock"},"icons":[{"src":"i.png","mimeType":"image/png","sizes":["48x48"]}],"execution":{"taskSupport":"optional"}}"#
        );
        let bare = ToolInfo {
            title: None,
            output_schema: None,
            icons: vec![],
            task_support: TaskSupport::Forbidden,
            ..info
        };
        assert_eq!(
            crate::json::to_string(&bare.to_mcp()),
            r#"{"name":"restock","description":"Orders more","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":false,"destructiveHint":true,"idempotentHint":false,"openWorldHint":false},"execution":{"taskSupport":"forbidden"}}"#
        );
    }

    /// Every kind of block, and a result with structured content, as MCP
    /// text: binary data in base64, absent fields left out.
    #[test]
    fn a_result_and_its_blocks_serialise_as_mcp_has_them() {
        let output = Output {
            content: vec![
                Content::Text("hi".into()),
                Content::Image {
                    data: vec![0x89, b'P', b'N', b'G'],
                    mime_type: "image/png".into(),
                },
                Content::Embedded {
                    uri: "file:///a".into(),
                    mime_type: None,
                    body: ResourceBody::Blob(vec![1, 2, 3]),
                },
                Content::Link {
                    uri: "file:///b".into(),
                    name: "b".into(),
                    title: None,
                    description: Some("d".into()),
                    mime_type: None,
                    size: Some(3),
                },
            ],
            structured: Some(json!({"n": 1})),
        };
        assert_eq!(
            crate::json::to_string(&output.to_mcp()),
            r#"{"content":[{"type":"text","text":"hi"},{"type":"image","data":"iVBORw==","mimeType":"image/png"},{"type":"resource","resource":{"uri":"file:///a","blob":"AQID"}},{"type":"resource_link","uri":"file:///b","name":"b","description":"d","size":3}],"structuredContent":{"n":1},"isError":false}"#
        );
        // Written straight to text, the same bytes as through a Value.
        assert_eq!(
            serde_json::to_string(&output).expect("serialises"),
            crate::json::to_string(&output.to_mcp())
        );
    }
}
