//! wasmcp's records as wasmtime's dynamic [`Val`]s: the `message-context`
//! and requests airlock sends, the stubs' answers, and the tools and
//! results a component returns.
//!
//! What airlock sends is built in the field order of wasmcp's WIT
//! (wasmtime checks it against the component's own types at the call).
//! What it reads is looked up by field and case name, so an error names
//! exactly what is missing.

use wasmtime::component::Val;

use super::{Called, ListedTool, NO_CLIENT_STREAM, PROTOCOL_VERSION, Stub};
use crate::tool::{Content, Hints, Icon, ResourceBody};

pub(super) type Fields = [(String, Val)];

pub(super) fn none() -> Val {
    Val::Option(None)
}

pub(super) fn some(v: Val) -> Val {
    Val::Option(Some(Box::new(v)))
}

pub(super) fn record(fields: &[(&str, Val)]) -> Val {
    Val::Record(
        fields
            .iter()
            .map(|(name, v)| (name.to_string(), v.clone()))
            .collect(),
    )
}

/// The `message-context` of every call: the protocol version and nothing
/// else (no client stream, session, identity or HTTP context; an empty
/// message frame).
pub fn message_context() -> Val {
    let frame = record(&[("prefix", Val::List(vec![])), ("suffix", Val::List(vec![]))]);
    record(&[
        ("client-stream", none()),
        ("protocol-version", Val::String(PROTOCOL_VERSION.into())),
        ("session", none()),
        ("identity", none()),
        ("frame", frame),
        ("http-context", none()),
    ])
}

/// A `list-tools-request` for the page at `cursor`.
pub fn list_request(cursor: Option<&str>) -> Val {
    record(&[(
        "cursor",
        Val::Option(cursor.map(|c| Box::new(Val::String(c.into())))),
    )])
}

/// A `call-tool-request`: the tool's name and its arguments (JSON text).
pub fn call_request(name: &str, arguments: &str) -> Val {
    record(&[
        ("name", Val::String(name.into())),
        ("arguments", some(Val::String(arguments.into()))),
    ])
}

/// What a stubbed function returns.
pub fn stub_answer(stub: Stub) -> Val {
    match stub {
        Stub::IoError => Val::Result(Err(Some(Box::new(Val::Variant(
            "unexpected".into(),
            Some(Box::new(Val::String(NO_CLIENT_STREAM.into()))),
        ))))),
        Stub::NoClaims => Val::Result(Err(None)),
        Stub::Deny => Val::Bool(false),
    }
}

/// One page of a listing (`list-tools`, `list-resources`, …).
#[derive(Debug, Clone, PartialEq)]
pub enum Page<T> {
    /// Entries, and the cursor of the next page.
    Entries(Vec<T>, Option<String>),
    /// An `error-code`: its message (and case and code).
    Refused(String),
}

/// One `list-tools` answer; an error for one airlock cannot read.
pub fn tools_page(returned: &Val) -> Result<Page<ListedTool>, String> {
    page(returned, "list-tools-result", "tools", listed_tool)
}

/// One answer of a listing whose result record `what` holds its entries
/// in field `list`, each read by `entry`; an error for one airlock cannot
/// read.
pub fn page<T>(
    returned: &Val,
    what: &str,
    list: &str,
    entry: impl Fn(&Val) -> Result<T, String>,
) -> Result<Page<T>, String> {
    if let Val::Result(Err(Some(code))) = returned {
        return Ok(Page::Refused(match error_code(code)? {
            Called::InvalidArguments(message) => format!("{message} (invalid-params)"),
            Called::Failed(message) => message,
            _ => format!("an error ({})", kind(code)),
        }));
    }
    let result = ok(returned)?.ok_or_else(|| format!("no {what}"))?;
    let fields = as_record(result, what)?;
    let next = optional(fields, "next-cursor")?.map(string).transpose()?;
    let entries = match field(fields, list)? {
        Val::List(items) => items.iter().map(entry).collect::<Result<_, _>>()?,
        other => return Err(format!("`{list}` is not a list: {}", kind(other))),
    };
    Ok(Page::Entries(entries, next))
}

fn listed_tool(tool: &Val) -> Result<ListedTool, String> {
    let fields = as_record(tool, "tool")?;
    let name = string(field(fields, "name")?)?;
    tool_fields(fields, &name).map_err(|why| format!("tool {name:?}: {why}"))
}

/// The rest of a `tool` record, after its name.
fn tool_fields(fields: &Fields, name: &str) -> Result<ListedTool, String> {
    let mut tool = ListedTool {
        name: name.to_string(),
        title: None,
        description: None,
        input_schema: string(field(fields, "input-schema")?)?,
        output_schema: None,
        hints: None,
        icons: Vec::new(),
    };
    let Some(options) = optional(fields, "options")? else {
        return Ok(tool);
    };
    let options = as_record(options, "tool-options")?;
    let text = |name: &str| -> Result<Option<String>, String> {
        optional(options, name)?.map(string).transpose()
    };
    if let Some(annotations) = optional(options, "annotations")? {
        let annotations = as_record(annotations, "tool-annotations")?;
        tool.title = optional(annotations, "title")?.map(string).transpose()?;
        tool.hints = hints(annotations)?;
    }
    tool.title = text("title")?.or(tool.title);
    tool.description = text("description")?;
    tool.output_schema = text("output-schema")?;
    tool.icons = match optional(options, "icons")? {
        Some(Val::List(icons)) => icons.iter().map(icon).collect::<Result<_, _>>()?,
        Some(other) => return Err(format!("`icons` is not a list: {}", kind(other))),
        None => Vec::new(),
    };
    Ok(tool)
}

/// The four hints of `tool-annotations`; `None` when none is set.
fn hints(annotations: &Fields) -> Result<Option<Hints>, String> {
    let hint = |name: &str| -> Result<Option<bool>, String> {
        match optional(annotations, name)? {
            None => Ok(None),
            Some(Val::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(format!("`{name}` is not a bool: {}", kind(other))),
        }
    };
    let read_only = hint("read-only-hint")?;
    let destructive = hint("destructive-hint")?;
    let idempotent = hint("idempotent-hint")?;
    let open_world = hint("open-world-hint")?;
    if [read_only, destructive, idempotent, open_world]
        .iter()
        .all(Option::is_none)
    {
        return Ok(None);
    }
    Ok(Some(Hints {
        read_only: read_only.unwrap_or(false),
        destructive: destructive.unwrap_or(false),
        idempotent: idempotent.unwrap_or(false),
        open_world: open_world.unwrap_or(false),
    }))
}

pub(super) fn icon(icon: &Val) -> Result<Icon, String> {
    let fields = as_record(icon, "icon")?;
    let sizes = match optional(fields, "sizes")? {
        Some(Val::List(sizes)) => sizes.iter().map(string).collect::<Result<_, _>>()?,
        Some(other) => return Err(format!("icon `sizes` is not a list: {}", kind(other))),
        None => Vec::new(),
    };
    Ok(Icon {
        src: string(field(fields, "src")?)?,
        mime_type: optional(fields, "mime-type")?.map(string).transpose()?,
        sizes,
    })
}

/// What a `call-tool` answer means for the call.
pub fn call_result(returned: &Val) -> Result<Called, String> {
    let result = match returned {
        Val::Result(Err(Some(code))) => return error_code(code),
        Val::Result(Err(None)) => return Ok(Called::Failed("the tool failed".into())),
        _ => ok(returned)?,
    };
    let Some(result) = result.and_then(|r| match r {
        Val::Option(inner) => inner.as_deref(),
        other => Some(other),
    }) else {
        return Ok(Called::NotHandled);
    };
    let fields = as_record(result, "call-tool-result")?;
    let content = match field(fields, "content")? {
        Val::List(blocks) => blocks.iter().map(content).collect::<Result<Vec<_>, _>>()?,
        other => return Err(format!("`content` is not a list: {}", kind(other))),
    };
    let is_error = matches!(optional(fields, "is-error")?, Some(Val::Bool(true)));
    if is_error {
        let texts: Vec<&str> = content
            .iter()
            .filter_map(|c| match c {
                Content::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        return Ok(Called::ToolError(if texts.is_empty() {
            "the tool reported an error, without text".into()
        } else {
            texts.join("\n")
        }));
    }
    Ok(Called::Done {
        content,
        structured: optional(fields, "structured-content")?
            .map(string)
            .transpose()?,
    })
}

/// A JSON-RPC `error-code` from `call-tool`.
pub(super) fn error_code(code: &Val) -> Result<Called, String> {
    let Val::Variant(case, Some(error)) = code else {
        return Err(format!(
            "`error-code` is not a variant with an error: {}",
            kind(code)
        ));
    };
    let fields = as_record(error, "error")?;
    let message = string(field(fields, "message")?)?;
    if case == "invalid-params" {
        return Ok(Called::InvalidArguments(message));
    }
    let number = match field(fields, "code")? {
        Val::S64(n) => n.to_string(),
        other => kind(other).to_string(),
    };
    Ok(Called::Failed(format!("{message} ({case}, code {number})")))
}

/// One `content-block`.
pub(super) fn content(block: &Val) -> Result<Content, String> {
    let Val::Variant(case, Some(payload)) = block else {
        return Err(format!("a content block is not a variant: {}", kind(block)));
    };
    let fields = as_record(payload, case)?;
    Ok(match case.as_str() {
        "text" => Content::Text(text_data(field(fields, "text")?)?),
        "image" | "audio" => {
            let data = blob_data(field(fields, "data")?)?;
            let mime_type = string(field(fields, "mime-type")?)?;
            if case == "image" {
                Content::Image { data, mime_type }
            } else {
                Content::Audio { data, mime_type }
            }
        }
        "resource-link" => {
            let options = optional(fields, "options")?
                .map(|o| as_record(o, "resource-link-options"))
                .transpose()?;
            let text = |name: &str| -> Result<Option<String>, String> {
                match options {
                    Some(o) => optional(o, name)?.map(string).transpose(),
                    None => Ok(None),
                }
            };
            let size = match options.map(|o| optional(o, "size")).transpose()?.flatten() {
                Some(Val::U64(n)) => Some(*n),
                Some(other) => {
                    return Err(format!("a link's `size` is not a u64: {}", kind(other)));
                }
                None => None,
            };
            Content::Link {
                uri: string(field(fields, "uri")?)?,
                name: string(field(fields, "name")?)?,
                title: text("title")?,
                description: text("description")?,
                mime_type: text("mime-type")?,
                size,
            }
        }
        "embedded-resource" => embedded(field(fields, "resource")?)?,
        other => return Err(format!("unknown content block `{other}`")),
    })
}

/// `resource-contents`: text or a blob, with its URI and MIME type.
fn embedded(resource: &Val) -> Result<Content, String> {
    let Val::Variant(case, Some(payload)) = resource else {
        return Err(format!("`resource` is not a variant: {}", kind(resource)));
    };
    let fields = as_record(payload, case)?;
    let body = match case.as_str() {
        "text" => ResourceBody::Text(text_data(field(fields, "text")?)?),
        "blob" => ResourceBody::Blob(blob_data(field(fields, "blob")?)?),
        other => return Err(format!("unknown resource contents `{other}`")),
    };
    let mime_type = match optional(fields, "options")? {
        Some(options) => optional(
            as_record(options, "embedded-resource-options")?,
            "mime-type",
        )?
        .map(string)
        .transpose()?,
        None => None,
    };
    Ok(Content::Embedded {
        uri: string(field(fields, "uri")?)?,
        mime_type,
        body,
    })
}

const STREAMED: &str = "airlock does not read streamed content; return it inline";

/// `text-data`: inline text (a stream is refused).
pub(super) fn text_data(v: &Val) -> Result<String, String> {
    match v {
        Val::Variant(case, Some(text)) if case == "text" => string(text),
        Val::Variant(case, _) if case == "text-stream" => Err(format!("a text-stream: {STREAMED}")),
        other => Err(format!("`text-data` is not inline text: {}", kind(other))),
    }
}

/// `blob-data`: inline bytes (a stream is refused).
pub(super) fn blob_data(v: &Val) -> Result<Vec<u8>, String> {
    match v {
        Val::Variant(case, Some(bytes)) if case == "blob" => match bytes.as_ref() {
            Val::List(items) => items
                .iter()
                .map(|b| match b {
                    Val::U8(b) => Ok(*b),
                    other => Err(format!("a blob holds a non-byte: {}", kind(other))),
                })
                .collect(),
            other => Err(format!("a blob is not a list of bytes: {}", kind(other))),
        },
        Val::Variant(case, _) if case == "blob-stream" => Err(format!("a blob-stream: {STREAMED}")),
        other => Err(format!("`blob-data` is not inline bytes: {}", kind(other))),
    }
}

/// The `ok` of a `result`.
pub(super) fn ok(v: &Val) -> Result<Option<&Val>, String> {
    match v {
        Val::Result(Ok(inner)) => Ok(inner.as_deref()),
        Val::Result(Err(_)) => Err("an error airlock cannot read".into()),
        other => Err(format!("expected a result, got {}", kind(other))),
    }
}

pub(super) fn as_record<'a>(v: &'a Val, what: &str) -> Result<&'a Fields, String> {
    match v {
        Val::Record(fields) => Ok(fields),
        other => Err(format!("`{what}` is not a record: {}", kind(other))),
    }
}

pub(super) fn field<'a>(fields: &'a Fields, name: &str) -> Result<&'a Val, String> {
    fields
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v)
        .ok_or_else(|| format!("`{name}` is missing"))
}

/// An `option` field's value; an absent field counts as `none`.
pub(super) fn optional<'a>(fields: &'a Fields, name: &str) -> Result<Option<&'a Val>, String> {
    match fields.iter().find(|(n, _)| n == name).map(|(_, v)| v) {
        None | Some(Val::Option(None)) => Ok(None),
        Some(Val::Option(Some(v))) => Ok(Some(v)),
        Some(other) => Err(format!("`{name}` is not an option: {}", kind(other))),
    }
}

pub(super) fn string(v: &Val) -> Result<String, String> {
    match v {
        Val::String(s) => Ok(s.clone()),
        other => Err(format!("expected a string, got {}", kind(other))),
    }
}

/// What kind of value `v` is, for errors (never the value itself: it is
/// the tool's data, and may be large).
pub(super) fn kind(v: &Val) -> &'static str {
    match v {
        Val::Bool(_) => "a bool",
        Val::String(_) => "a string",
        Val::Char(_) => "a char",
        Val::Float32(_) | Val::Float64(_) => "a float",
        Val::List(_) | Val::FixedLengthList(_) => "a list",
        Val::Map(_) => "a map",
        Val::Record(_) => "a record",
        Val::Tuple(_) => "a tuple",
        Val::Variant(..) => "a variant",
        Val::Enum(_) => "an enum",
        Val::Option(_) => "an option",
        Val::Result(_) => "a result",
        Val::Flags(_) => "flags",
        Val::Resource(_) => "a resource",
        Val::Future(_) | Val::Stream(_) | Val::ErrorContext(_) => "an async value",
        _ => "an integer",
    }
}
