//! A tool's description ([`ToolInfo`]), the [`Tool`] trait `#[tool]`
//! implements, and its entry in a [`Toolbox`](crate::Toolbox).

use crate::{Error, Output};
use serde_json::{Map, Value};

/// Behaviour hints. Each is a promise by the tool's author that the runtime
/// makes binding; a hint that is absent is false.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Hints {
    /// The tool changes nothing.
    pub read_only: bool,
    /// The tool may modify or delete what exists.
    pub destructive: bool,
    /// Calling it twice with the same arguments has the effect of calling it once.
    pub idempotent: bool,
    /// The tool talks to the world outside (the network).
    pub open_world: bool,
}

/// Whether a client may (or must) run the tool as a background task.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TaskSupport {
    /// The tool is always called synchronously (the default).
    #[default]
    Forbidden,
    /// The client chooses.
    Optional,
    /// The tool must be called as a task.
    Required,
}

/// An icon a client may show next to the tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Icon {
    /// A `https:` or `data:` URI of the image.
    pub src: String,
    /// The image's MIME type, e.g. `image/png`.
    pub mime_type: Option<String>,
    /// Sizes the image is suitable for, e.g. `48x48` or `any`.
    pub sizes: Vec<String>,
}

/// Everything a client needs to know about one tool (what `describe`
/// returns, with the schemas as JSON values).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolInfo {
    /// The tool's protocol name.
    pub name: String,
    /// A short human-readable title.
    pub title: Option<String>,
    /// What the tool does.
    pub description: String,
    /// JSON Schema of the arguments (an object schema).
    pub input_schema: Value,
    /// JSON Schema of the structured result (an object schema).
    pub output_schema: Option<Value>,
    /// Behaviour hints.
    pub hints: Hints,
    /// Icons.
    pub icons: Vec<Icon>,
    /// Whether the tool runs as a task.
    pub task_support: TaskSupport,
}

/// One tool: implemented by `#[tool]` on a type of the same name as the
/// function (a braced struct, which lives beside the function without
/// clashing with it).
pub trait Tool {
    /// The tool's protocol name.
    const NAME: &'static str;

    /// The tool's description and schemas.
    fn info() -> ToolInfo;

    /// Runs the tool with a JSON object of arguments.
    fn call(arguments: &Map<String, Value>) -> Result<Output, Error>;

    /// `_meta` the tool adds to its description (a JSON object), e.g. its
    /// MCP App's `{"ui": {"resourceUri": "ui://…"}}`; none by default.
    fn meta() -> Option<Value> {
        None
    }
}

/// One entry of a [`Toolbox`](crate::Toolbox): the functions `#[tool]` generated for a tool.
#[derive(Debug, Clone, Copy)]
pub struct ToolEntry {
    /// The tool's protocol name.
    pub name: &'static str,
    /// Builds its description.
    pub info: fn() -> ToolInfo,
    /// Runs it.
    pub call: fn(&Map<String, Value>) -> Result<Output, Error>,
    /// Its `_meta`.
    pub meta: fn() -> Option<Value>,
}

impl ToolEntry {
    /// The entry of tool `T`.
    pub const fn of<T: Tool>() -> Self {
        ToolEntry {
            name: T::NAME,
            info: T::info,
            call: T::call,
            meta: T::meta,
        }
    }
}
