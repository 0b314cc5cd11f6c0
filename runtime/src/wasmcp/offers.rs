//! wasmcp's `resources`, `prompts` and `completions` interfaces as
//! airlock's offers: the requests airlock sends, built as wasmtime's
//! dynamic [`Val`]s in the field order of wasmcp's WIT, and what the
//! component answers read into the runtime's own types
//! ([`crate::offer`]), field by field, so an error names what is missing.
//!
//! - `list-resources`, `list-resource-templates` and `list-prompts` are
//!   called at load (every page); their entries become the same catalog
//!   entries an airlock component's `describe` gives, checked the same way;
//! - `read-resource`, `get-prompt` and `complete` run per request; `none`
//!   means "not mine": not found for a read, a component that does not
//!   know the prompt it listed, and no values for a completion.

use serde_json::{Map, Value};
use wasmtime::component::Val;

use super::Called;
pub use super::value::Page;
use super::value::{
    as_record, blob_data, content, error_code, field, icon, kind, ok, optional, page, record, some,
    string, text_data,
};
use crate::offer::{
    Annotations, Completion, CompletionRef, Offered, PromptArgument, PromptInfo, PromptMessage,
    PromptMessages, ResourceContents, ResourceInfo, Role, TemplateInfo,
};
use crate::tool::{Icon, ResourceBody};

/// The MCP error code of a resource that does not exist; a component that
/// answers it for a read answers "not found", as `none` does.
const RESOURCE_NOT_FOUND: i64 = -32002;

/// What a read, prompt or completion answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Answered {
    Offered(Offered),
    /// A read of a URI the component does not serve: the URI.
    NotFound(String),
    /// `error-code` `invalid-params`: its message.
    InvalidArguments(String),
    /// Any other `error-code`, or a prompt the component does not know.
    Failed(String),
}

/// A resource as listed, with its `_meta` text (the catalog checks it).
pub type ListedResource = (ResourceInfo, Option<String>);

/// One `list-resources` answer.
pub fn resources_page(returned: &Val) -> Result<Page<ListedResource>, String> {
    page(returned, "list-resources-result", "resources", resource)
}

/// One `list-resource-templates` answer.
pub fn templates_page(returned: &Val) -> Result<Page<TemplateInfo>, String> {
    page(
        returned,
        "list-resource-templates-result",
        "resource-templates",
        template,
    )
}

/// One `list-prompts` answer.
pub fn prompts_page(returned: &Val) -> Result<Page<PromptInfo>, String> {
    page(returned, "list-prompts-result", "prompts", prompt)
}

/// The record `options` of `fields`, if set.
fn options<'a>(
    fields: &'a [(String, Val)],
    what: &str,
) -> Result<Option<&'a [(String, Val)]>, String> {
    optional(fields, "options")?
        .map(|o| as_record(o, what))
        .transpose()
}

fn text(fields: Option<&[(String, Val)]>, name: &str) -> Result<Option<String>, String> {
    match fields {
        Some(f) => optional(f, name)?.map(string).transpose(),
        None => Ok(None),
    }
}

fn icons(fields: Option<&[(String, Val)]>) -> Result<Vec<Icon>, String> {
    match fields.map(|f| optional(f, "icons")).transpose()?.flatten() {
        Some(Val::List(icons)) => icons.iter().map(icon).collect(),
        Some(other) => Err(format!("`icons` is not a list: {}", kind(other))),
        None => Ok(Vec::new()),
    }
}

fn role(v: &Val) -> Result<Role, String> {
    match v {
        Val::Enum(case) if case == "user" => Ok(Role::User),
        Val::Enum(case) if case == "assistant" => Ok(Role::Assistant),
        other => Err(format!("`role` is not user or assistant: {}", kind(other))),
    }
}

fn annotations(fields: Option<&[(String, Val)]>) -> Result<Option<Annotations>, String> {
    let Some(a) = fields
        .map(|f| optional(f, "annotations"))
        .transpose()?
        .flatten()
    else {
        return Ok(None);
    };
    let a = as_record(a, "annotations")?;
    let audience = match optional(a, "audience")? {
        Some(Val::List(roles)) => roles.iter().map(role).collect::<Result<_, _>>()?,
        Some(other) => return Err(format!("`audience` is not a list: {}", kind(other))),
        None => Vec::new(),
    };
    let priority = match optional(a, "priority")? {
        Some(Val::Float64(p)) => Some(*p),
        Some(other) => return Err(format!("`priority` is not an f64: {}", kind(other))),
        None => None,
    };
    Ok(Some(Annotations {
        audience,
        priority,
        last_modified: optional(a, "last-modified")?.map(string).transpose()?,
    }))
}

fn resource(v: &Val) -> Result<ListedResource, String> {
    let fields = as_record(v, "mcp-resource")?;
    let uri = string(field(fields, "uri")?)?;
    let described = || -> Result<ListedResource, String> {
        let o = options(fields, "resource-options")?;
        let size = match o.map(|o| optional(o, "size")).transpose()?.flatten() {
            Some(Val::U64(n)) => Some(*n),
            Some(other) => return Err(format!("`size` is not a u64: {}", kind(other))),
            None => None,
        };
        let info = ResourceInfo {
            uri: uri.clone(),
            name: string(field(fields, "name")?)?,
            title: text(o, "title")?,
            description: text(o, "description")?,
            mime_type: text(o, "mime-type")?,
            size,
            annotations: annotations(o)?,
            icons: icons(o)?,
            meta: None,
        };
        Ok((info, text(o, "meta")?))
    };
    described().map_err(|why| format!("resource {uri:?}: {why}"))
}

fn template(v: &Val) -> Result<TemplateInfo, String> {
    let fields = as_record(v, "resource-template")?;
    let uri_template = string(field(fields, "uri-template")?)?;
    let described = || -> Result<TemplateInfo, String> {
        let o = options(fields, "resource-template-options")?;
        Ok(TemplateInfo {
            uri_template: uri_template.clone(),
            name: string(field(fields, "name")?)?,
            title: text(o, "title")?,
            description: text(o, "description")?,
            mime_type: text(o, "mime-type")?,
            annotations: annotations(o)?,
            icons: icons(o)?,
        })
    };
    described().map_err(|why| format!("resource template {uri_template:?}: {why}"))
}

fn prompt(v: &Val) -> Result<PromptInfo, String> {
    let fields = as_record(v, "prompt")?;
    let name = string(field(fields, "name")?)?;
    let described = || -> Result<PromptInfo, String> {
        let o = options(fields, "prompt-options")?;
        let arguments = match o.map(|o| optional(o, "arguments")).transpose()?.flatten() {
            Some(Val::List(args)) => args.iter().map(prompt_argument).collect::<Result<_, _>>()?,
            Some(other) => return Err(format!("`arguments` is not a list: {}", kind(other))),
            None => Vec::new(),
        };
        Ok(PromptInfo {
            name: name.clone(),
            title: text(o, "title")?,
            description: text(o, "description")?,
            arguments,
            icons: icons(o)?,
        })
    };
    described().map_err(|why| format!("prompt {name:?}: {why}"))
}

fn prompt_argument(v: &Val) -> Result<PromptArgument, String> {
    let fields = as_record(v, "prompt-argument")?;
    Ok(PromptArgument {
        name: string(field(fields, "name")?)?,
        title: text(Some(fields), "title")?,
        description: text(Some(fields), "description")?,
        required: match optional(fields, "required")? {
            Some(Val::Bool(b)) => *b,
            Some(other) => return Err(format!("`required` is not a bool: {}", kind(other))),
            None => false,
        },
    })
}

/// A `read-resource-request`.
pub fn read_request(uri: &str) -> Val {
    record(&[("uri", Val::String(uri.into()))])
}

/// A JSON object of `pairs`, as text (how wasmcp passes arguments).
fn json_object(pairs: &[(String, String)]) -> String {
    let object: Map<String, Value> = pairs
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    Value::Object(object).to_string()
}

/// A `get-prompt-request`: the prompt's name and its arguments as a JSON
/// object (always given, `{}` when there are none, as a tool's are).
pub fn prompt_request(name: &str, arguments: &[(String, String)]) -> Val {
    record(&[
        ("name", Val::String(name.into())),
        ("arguments", some(Val::String(json_object(arguments)))),
    ])
}

/// A `complete-request`; the context's arguments, when there are any, as
/// a JSON object.
pub fn complete_request(
    reference: &CompletionRef,
    argument: &str,
    value: &str,
    context: &[(String, String)],
) -> Val {
    let reference = match reference {
        CompletionRef::Prompt(name) => Val::Variant(
            "prompt".into(),
            Some(Box::new(record(&[
                ("name", Val::String(name.clone())),
                ("title", Val::Option(None)),
            ]))),
        ),
        CompletionRef::Template(template) => Val::Variant(
            "resource-template".into(),
            Some(Box::new(Val::String(template.clone()))),
        ),
    };
    let context = (!context.is_empty()).then(|| {
        Box::new(record(&[(
            "arguments",
            some(Val::String(json_object(context))),
        )]))
    });
    record(&[
        (
            "argument",
            record(&[
                ("name", Val::String(argument.into())),
                ("value", Val::String(value.into())),
            ]),
        ),
        ("ref", reference),
        ("context", Val::Option(context)),
    ])
}

/// The `option<…>` inside the `ok` of `returned`, or what its `error-code`
/// means; `Err` for an answer airlock cannot read.
fn answer(returned: &Val) -> Result<Result<Option<&Val>, Answered>, String> {
    if let Val::Result(Err(Some(code))) = returned {
        if let Val::Variant(_, Some(error)) = code.as_ref()
            && let Val::Record(fields) = error.as_ref()
            && let Ok(Val::S64(RESOURCE_NOT_FOUND)) = field(fields, "code")
        {
            return Ok(Err(Answered::NotFound(string(field(fields, "message")?)?)));
        }
        return Ok(Err(match error_code(code)? {
            Called::InvalidArguments(message) => Answered::InvalidArguments(message),
            Called::Failed(message) => Answered::Failed(message),
            _ => Answered::Failed(format!("an error ({})", kind(code))),
        }));
    }
    Ok(Ok(ok(returned)?.and_then(|r| match r {
        Val::Option(inner) => inner.as_deref(),
        other => Some(other),
    })))
}

/// What `read-resource` answered for `uri`.
pub fn read_result(returned: &Val, uri: &str) -> Result<Answered, String> {
    let result = match answer(returned)? {
        Ok(Some(result)) => result,
        Ok(None) => return Ok(Answered::NotFound(uri.to_string())),
        Err(answered) => return Ok(answered),
    };
    let fields = as_record(result, "read-resource-result")?;
    let contents = match field(fields, "contents")? {
        Val::List(items) => items.iter().map(contents).collect::<Result<_, _>>()?,
        other => return Err(format!("`contents` is not a list: {}", kind(other))),
    };
    Ok(Answered::Offered(Offered::Contents(contents)))
}

/// One `resource-contents`; a `_meta` that is not a JSON object is dropped
/// (as an airlock component's is).
fn contents(v: &Val) -> Result<ResourceContents, String> {
    let Val::Variant(case, Some(payload)) = v else {
        return Err(format!("resource contents are not a variant: {}", kind(v)));
    };
    let fields = as_record(payload, case)?;
    let body = match case.as_str() {
        "text" => ResourceBody::Text(text_data(field(fields, "text")?)?),
        "blob" => ResourceBody::Blob(blob_data(field(fields, "blob")?)?),
        other => return Err(format!("unknown resource contents `{other}`")),
    };
    let o = options(fields, "embedded-resource-options")?;
    let meta = text(o, "meta")?
        .and_then(|text| serde_json::from_str(&text).ok())
        .and_then(|v: Value| match v {
            Value::Object(m) => Some(m),
            _ => None,
        });
    Ok(ResourceContents {
        uri: string(field(fields, "uri")?)?,
        mime_type: text(o, "mime-type")?,
        body,
        meta,
    })
}

/// What `get-prompt` answered for prompt `name`.
pub fn prompt_result(returned: &Val, name: &str) -> Result<Answered, String> {
    let result = match answer(returned)? {
        Ok(Some(result)) => result,
        Ok(None) => {
            return Ok(Answered::Failed(format!(
                "the component's get-prompt does not handle {name:?}, which its list-prompts \
                 lists"
            )));
        }
        Err(answered) => return Ok(answered),
    };
    let fields = as_record(result, "get-prompt-result")?;
    let messages = match field(fields, "messages")? {
        Val::List(items) => items.iter().map(message).collect::<Result<_, _>>()?,
        other => return Err(format!("`messages` is not a list: {}", kind(other))),
    };
    Ok(Answered::Offered(Offered::Messages(PromptMessages {
        description: text(Some(fields), "description")?,
        messages,
    })))
}

fn message(v: &Val) -> Result<PromptMessage, String> {
    let fields = as_record(v, "prompt-message")?;
    Ok(PromptMessage {
        role: role(field(fields, "role")?)?,
        content: content(field(fields, "content")?)?,
    })
}

/// What `complete` answered; `none` is no values.
pub fn complete_result(returned: &Val) -> Result<Answered, String> {
    let result = match answer(returned)? {
        Ok(Some(result)) => result,
        Ok(None) => {
            return Ok(Answered::Offered(
                Offered::Completion(Completion::default()),
            ));
        }
        Err(answered) => return Ok(answered),
    };
    let fields = as_record(result, "complete-result")?;
    let values = match field(fields, "values")? {
        Val::List(items) => items.iter().map(string).collect::<Result<_, _>>()?,
        other => return Err(format!("`values` is not a list: {}", kind(other))),
    };
    let total = match optional(fields, "total")? {
        Some(Val::U64(n)) => Some(u32::try_from(*n).unwrap_or(u32::MAX)),
        Some(other) => return Err(format!("`total` is not a u64: {}", kind(other))),
        None => None,
    };
    let has_more = matches!(optional(fields, "has-more")?, Some(Val::Bool(true)));
    Ok(Answered::Offered(Offered::Completion(Completion {
        values,
        total,
        has_more,
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(text: &str) -> Val {
        Val::String(text.into())
    }

    fn opt(v: Option<Val>) -> Val {
        Val::Option(v.map(Box::new))
    }

    fn rec(fields: Vec<(&str, Val)>) -> Val {
        Val::Record(fields.into_iter().map(|(n, v)| (n.into(), v)).collect())
    }

    fn ok_some(v: Val) -> Val {
        Val::Result(Ok(Some(Box::new(opt(Some(v))))))
    }

    fn error(case: &str, code: i64, message: &str) -> Val {
        let error = rec(vec![
            ("code", Val::S64(code)),
            ("message", s(message)),
            ("data", opt(None)),
        ]);
        Val::Result(Err(Some(Box::new(Val::Variant(
            case.into(),
            Some(Box::new(error)),
        )))))
    }

    #[test]
    fn none_and_error_codes_mean_what_mcp_says() {
        let none = Val::Result(Ok(Some(Box::new(opt(None)))));
        assert_eq!(
            read_result(&none, "memo://x"),
            Ok(Answered::NotFound("memo://x".into()))
        );
        assert_eq!(
            read_result(
                &error("mcp", RESOURCE_NOT_FOUND, "no such memo"),
                "memo://x"
            ),
            Ok(Answered::NotFound("no such memo".into()))
        );
        assert_eq!(
            prompt_result(&error("invalid-params", -32602, "topic?"), "p"),
            Ok(Answered::InvalidArguments("topic?".into()))
        );
        assert_eq!(
            read_result(&error("internal-error", -32603, "disk"), "memo://x"),
            Ok(Answered::Failed(
                "disk (internal-error, code -32603)".into()
            ))
        );
        assert!(matches!(
            prompt_result(&none, "summarize"),
            Ok(Answered::Failed(m)) if m.contains("does not handle \"summarize\"")
        ));
        assert_eq!(
            complete_result(&none),
            Ok(Answered::Offered(
                Offered::Completion(Completion::default())
            ))
        );
    }

    #[test]
    fn contents_keep_their_type_and_an_object_meta() {
        let options = |meta: &str| {
            opt(Some(rec(vec![
                ("mime-type", opt(Some(s("text/plain")))),
                ("meta", opt(Some(s(meta)))),
            ])))
        };
        let text = |meta: &str| {
            Val::Variant(
                "text".into(),
                Some(Box::new(rec(vec![
                    ("uri", s("memo://a")),
                    ("text", Val::Variant("text".into(), Some(Box::new(s("hi"))))),
                    ("options", options(meta)),
                ]))),
            )
        };
        let result = ok_some(rec(vec![
            ("meta", opt(None)),
            ("contents", Val::List(vec![text(r#"{"k":1}"#), text("[1]")])),
        ]));
        let Ok(Answered::Offered(Offered::Contents(contents))) = read_result(&result, "memo://a")
        else {
            panic!("not contents");
        };
        assert_eq!(contents[0].body, ResourceBody::Text("hi".into()));
        assert_eq!(contents[0].mime_type.as_deref(), Some("text/plain"));
        assert_eq!(contents[0].meta, serde_json::from_str(r#"{"k":1}"#).ok());
        assert_eq!(
            contents[1].meta, None,
            "a meta that is no object is dropped"
        );
    }

    #[test]
    fn a_malformed_listing_names_the_entry_and_the_field() {
        let page = Val::Result(Ok(Some(Box::new(rec(vec![
            ("meta", opt(None)),
            ("next-cursor", opt(None)),
            (
                "resources",
                Val::List(vec![rec(vec![
                    ("uri", s("memo://a")),
                    ("name", s("a")),
                    (
                        "options",
                        opt(Some(rec(vec![("size", opt(Some(s("big"))))]))),
                    ),
                ])]),
            ),
        ])))));
        assert_eq!(
            resources_page(&page),
            Err("resource \"memo://a\": `size` is not a u64: a string".into())
        );
    }

    #[test]
    fn requests_carry_arguments_and_context_as_json_objects() {
        let pairs = vec![("topic".to_string(), "WASI".to_string())];
        assert_eq!(
            prompt_request("p", &[]),
            rec(vec![("name", s("p")), ("arguments", opt(Some(s("{}"))))])
        );
        let request = complete_request(
            &CompletionRef::Template("memo://{id}".into()),
            "id",
            "1",
            &pairs,
        );
        let Val::Record(fields) = request else {
            panic!("not a record");
        };
        let names: Vec<&str> = fields.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["argument", "ref", "context"]);
        assert_eq!(
            fields[1].1,
            Val::Variant("resource-template".into(), Some(Box::new(s("memo://{id}"))))
        );
        assert_eq!(
            fields[2].1,
            opt(Some(rec(vec![(
                "arguments",
                opt(Some(s(r#"{"topic":"WASI"}"#)))
            )])))
        );
    }
}
