//! The [`Toolbox`]: everything one component offers — tools, resources,
//! resource templates, prompts and completions — listed and dispatched by
//! name, URI or reference, natively as in a component.

use crate::completion::{Complete, Completion, CompletionContext, CompletionRef};
use crate::prompt::{Prompt, PromptInfo, PromptMessages};
use crate::resource::{
    Contents, ReadError, Resource, ResourceInfo, ResourceTemplate, TemplateInfo, match_template,
};
use crate::{Error, Output, Tool, ToolEntry, ToolInfo};
use serde_json::{Map, Value};

/// A resource's entry: what `#[resource]` generated.
#[derive(Debug, Clone, Copy)]
pub struct ResourceEntry {
    /// Its URI.
    pub uri: &'static str,
    /// Builds its description.
    pub info: fn() -> ResourceInfo,
    /// Reads it.
    pub read: fn() -> Result<Vec<Contents>, ReadError>,
}

/// A resource template's entry: what `#[resource_template]` generated.
#[derive(Debug, Clone, Copy)]
pub struct TemplateEntry {
    /// Its URI template.
    pub uri_template: &'static str,
    /// Builds its description.
    pub info: fn() -> TemplateInfo,
    /// Reads one of its resources.
    #[allow(clippy::type_complexity)]
    pub read: fn(&str, &[(String, String)]) -> Result<Vec<Contents>, ReadError>,
}

/// A prompt's entry: what `#[prompt]` generated.
#[derive(Debug, Clone, Copy)]
pub struct PromptEntry {
    /// Its name.
    pub name: &'static str,
    /// Builds its description.
    pub info: fn() -> PromptInfo,
    /// Builds its messages.
    #[allow(clippy::type_complexity)]
    pub get: fn(&[(String, String)]) -> Result<PromptMessages, Error>,
}

/// A completion's entry: what `#[complete]` generated.
#[derive(Debug, Clone, Copy)]
pub struct CompletionEntry {
    /// What it completes.
    pub reference: CompletionRef<'static>,
    /// The argument it completes.
    pub argument: &'static str,
    /// Completes it.
    pub complete: fn(&str, CompletionContext<'_>) -> Result<Completion, Error>,
}

/// One thing a component offers.
#[derive(Debug, Clone, Copy)]
pub enum Entry {
    /// A tool.
    Tool(ToolEntry),
    /// A resource with a fixed URI.
    Resource(ResourceEntry),
    /// Resources of a URI template.
    Template(TemplateEntry),
    /// A prompt.
    Prompt(PromptEntry),
    /// Completions of one argument.
    Completion(CompletionEntry),
    /// The files of the skills `#[skills]` bundled.
    Skills(&'static [crate::SkillFile]),
}

/// What [`toolbox!`](crate::toolbox) and [`export_tools!`](crate::export_tools)
/// accept: a `#[tool]`, `#[resource]`, `#[resource_template]`, `#[prompt]`
/// or `#[complete]` function (every [`Tool`] is one).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not something a component can export",
    note = "list functions marked `#[tool]`, `#[resource]`, `#[resource_template]`, `#[prompt]` or `#[complete]`, or a struct marked `#[skills]`"
)]
pub trait Export {
    /// Its entry.
    const ENTRY: Entry;
}

impl<T: Tool> Export for T {
    const ENTRY: Entry = Entry::Tool(ToolEntry::of::<T>());
}

impl ResourceEntry {
    /// The entry of resource `R`.
    pub const fn of<R: Resource>() -> Self {
        ResourceEntry {
            uri: R::URI,
            info: R::info,
            read: R::read,
        }
    }
}

impl TemplateEntry {
    /// The entry of template `T`.
    pub const fn of<T: ResourceTemplate>() -> Self {
        TemplateEntry {
            uri_template: T::URI_TEMPLATE,
            info: T::info,
            read: T::read,
        }
    }
}

impl PromptEntry {
    /// The entry of prompt `P`.
    pub const fn of<P: Prompt>() -> Self {
        PromptEntry {
            name: P::NAME,
            info: P::info,
            get: P::get,
        }
    }
}

impl CompletionEntry {
    /// The entry of completion `C`.
    pub const fn of<C: Complete>() -> Self {
        CompletionEntry {
            reference: C::REFERENCE,
            argument: C::ARGUMENT,
            complete: C::complete,
        }
    }
}

/// Everything one component offers: lists it and runs one piece by name.
///
/// [`export_tools!`](crate::export_tools) builds one and exports it;
/// [`toolbox!`](crate::toolbox) builds one without exporting anything, which
/// is handy in native tests.
///
/// ```
/// use airlock_sdk::tool;
/// /// Adds two numbers.
/// #[tool(read_only)]
/// fn add(a: i64, b: i64) -> i64 { a + b }
///
/// # fn main() {
/// let tools = airlock_sdk::toolbox![add];
/// assert_eq!(tools.describe()[0].name, "add");
/// let out = tools.call("add", r#"{"a": 2, "b": 3}"#).unwrap();
/// assert_eq!(out.structured, Some(serde_json::json!({"result": 5})));
/// # }
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Toolbox {
    entries: &'static [Entry],
}

impl Toolbox {
    /// A toolbox of the given entries.
    pub const fn new(entries: &'static [Entry]) -> Self {
        Toolbox { entries }
    }

    fn tools(&self) -> impl Iterator<Item = &ToolEntry> {
        self.entries.iter().filter_map(|e| match e {
            Entry::Tool(t) => Some(t),
            _ => None,
        })
    }

    /// The description of every tool, in order.
    pub fn describe(&self) -> Vec<ToolInfo> {
        self.tools().map(|t| (t.info)()).collect()
    }

    /// Runs the tool `name` with `arguments`, a JSON object as text.
    pub fn call(&self, name: &str, arguments: &str) -> Result<Output, Error> {
        let tool = self
            .tools()
            .find(|t| t.name == name)
            .ok_or_else(|| Error::Failed(format!("this component has no tool named {name:?}")))?;
        let arguments = match serde_json::from_str::<Value>(arguments) {
            Ok(Value::Object(map)) => map,
            Ok(Value::Null) => Map::new(),
            Ok(_) => {
                return Err(Error::InvalidArguments(
                    "the arguments must be a JSON object".into(),
                ));
            }
            Err(e) => {
                return Err(Error::InvalidArguments(format!(
                    "the arguments are not valid JSON: {e}"
                )));
            }
        };
        (tool.call)(&arguments)
    }

    /// The `_meta` of every tool that declares one: (tool name, JSON object).
    pub fn tool_meta(&self) -> Vec<(String, Value)> {
        self.tools()
            .filter_map(|t| (t.meta)().map(|m| (t.name.to_owned(), m)))
            .collect()
    }

    /// Every resource with a fixed URI, in order.
    pub fn resources(&self) -> Vec<ResourceInfo> {
        self.entries
            .iter()
            .filter_map(|e| match e {
                Entry::Resource(r) => Some((r.info)()),
                _ => None,
            })
            .collect()
    }

    /// Every resource template, in order.
    pub fn templates(&self) -> Vec<TemplateInfo> {
        self.entries
            .iter()
            .filter_map(|e| match e {
                Entry::Template(t) => Some((t.info)()),
                _ => None,
            })
            .collect()
    }

    /// Reads the resource `uri`: a resource of that URI, else the first
    /// template it matches.
    pub fn read(&self, uri: &str) -> Result<Vec<Contents>, ReadError> {
        for entry in self.entries {
            if let Entry::Resource(r) = entry
                && r.uri == uri
            {
                return (r.read)();
            }
        }
        for entry in self.entries {
            if let Entry::Template(t) = entry
                && let Some(variables) = match_template(t.uri_template, uri)
            {
                return (t.read)(uri, &variables);
            }
        }
        let known: Vec<&str> = self
            .entries
            .iter()
            .filter_map(|e| match e {
                Entry::Resource(r) => Some(r.uri),
                Entry::Template(t) => Some(t.uri_template),
                _ => None,
            })
            .collect();
        Err(ReadError::NotFound(format!(
            "this component has no resource {uri:?} (it serves {known:?})"
        )))
    }

    /// Every prompt, in order.
    pub fn prompts(&self) -> Vec<PromptInfo> {
        self.entries
            .iter()
            .filter_map(|e| match e {
                Entry::Prompt(p) => Some((p.info)()),
                _ => None,
            })
            .collect()
    }

    /// The messages of prompt `name` with `arguments` (name, value).
    pub fn get_prompt<K: Into<String>, V: Into<String>>(
        &self,
        name: &str,
        arguments: impl IntoIterator<Item = (K, V)>,
    ) -> Result<PromptMessages, Error> {
        let arguments: Vec<(String, String)> = arguments
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        let prompt = self
            .entries
            .iter()
            .find_map(|e| match e {
                Entry::Prompt(p) if p.name == name => Some(p),
                _ => None,
            })
            .ok_or_else(|| {
                Error::InvalidArguments(format!("this component has no prompt named {name:?}"))
            })?;
        (prompt.get)(&arguments)
    }

    /// Every skill bundled with `#[skills]`, in order.
    pub fn skills(&self) -> Vec<crate::Skill> {
        let files = self.entries.iter().flat_map(|e| match e {
            Entry::Skills(files) => *files,
            _ => &[],
        });
        crate::skill::group(files.copied())
    }

    /// Values for `argument` of `reference` starting from `value`, with
    /// `context` the arguments already given; none when nothing completes
    /// that argument.
    pub fn complete(
        &self,
        reference: CompletionRef<'_>,
        argument: &str,
        value: &str,
        context: &[(String, String)],
    ) -> Result<Completion, Error> {
        let entry = self.entries.iter().find_map(|e| match e {
            Entry::Completion(c) if c.reference == reference && c.argument == argument => Some(c),
            _ => None,
        });
        match entry {
            Some(c) => (c.complete)(value, CompletionContext::new(context)),
            None => Ok(Completion::default()),
        }
    }
}

/// Builds a [`Toolbox`] of the given `#[tool]`, `#[resource]`,
/// `#[resource_template]`, `#[prompt]` and `#[complete]` functions, without
/// exporting it: `let tools = toolbox![lookup_price, restock];`.
#[macro_export]
macro_rules! toolbox {
    ($($item:path),+ $(,)?) => {
        $crate::Toolbox::new(const { &[$(<$item as $crate::Export>::ENTRY),+] })
    };
}
