//! A tool's description ([`ToolInfo`]) and the [`Toolbox`] that lists and
//! dispatches the tools of one component.

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
}

/// One entry of a [`Toolbox`]: the functions `#[tool]` generated for a tool.
#[derive(Debug, Clone, Copy)]
pub struct ToolEntry {
    /// The tool's protocol name.
    pub name: &'static str,
    /// Builds its description.
    pub info: fn() -> ToolInfo,
    /// Runs it.
    pub call: fn(&Map<String, Value>) -> Result<Output, Error>,
}

impl ToolEntry {
    /// The entry of tool `T`.
    pub const fn of<T: Tool>() -> Self {
        ToolEntry {
            name: T::NAME,
            info: T::info,
            call: T::call,
        }
    }
}

/// The tools of one component: lists them and runs one by name.
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
    tools: &'static [ToolEntry],
}

impl Toolbox {
    /// A toolbox of the given tools.
    pub const fn new(tools: &'static [ToolEntry]) -> Self {
        Toolbox { tools }
    }

    /// The description of every tool, in order.
    pub fn describe(&self) -> Vec<ToolInfo> {
        self.tools.iter().map(|t| (t.info)()).collect()
    }

    /// Runs the tool `name` with `arguments`, a JSON object as text.
    pub fn call(&self, name: &str, arguments: &str) -> Result<Output, Error> {
        let tool =
            self.tools.iter().find(|t| t.name == name).ok_or_else(|| {
                Error::Failed(format!("this component has no tool named {name:?}"))
            })?;
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
}

/// Builds a [`Toolbox`] of the given `#[tool]` functions, without exporting
/// it: `let tools = toolbox![lookup_price, restock];`.
#[macro_export]
macro_rules! toolbox {
    ($($tool:path),+ $(,)?) => {
        $crate::Toolbox::new(const { &[$($crate::ToolEntry::of::<$tool>()),+] })
    };
}
