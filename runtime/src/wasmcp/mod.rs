//! wasmcp components: components that export wasmcp's
//! `wasmcp:mcp-v20251125/tools` (`list-tools`, `call-tool`) and declare
//! their tools as data, or its resources, prompts and completions (see
//! below), served without wasmcp's composition.
//!
//! - `list-tools` is called once at load (every page); each tool's
//!   `tool-annotations` become its airlock [`Hints`], and so its binding
//!   capabilities, exactly as an airlock tool's own hints do;
//! - `call-tool` is called per call in a fresh instance, with the call's
//!   arguments as JSON text; its `call-tool-result` becomes MCP content
//!   ([`value`] converts both ways with wasmtime's dynamic `Val`).
//!
//! # What a call gets of wasmcp's server
//!
//! The `message-context` of every call is [`PROTOCOL_VERSION`] and nothing
//! else: no client stream, no session, no identity, no HTTP context (what
//! wasmcp's own transport gives a tool when it has none of them).
//!
//! Of the functions wasmcp's composition provides to a tools component,
//! airlock answers only those whose contract lets it say no ([`stub`]):
//! `server-io`'s `send-message`, `parse-message` and `flush-buffer` answer
//! an `unexpected` I/O error, `server-auth`'s `decode` an error and
//! `authorize` false. Any other function, and any resource, of a `wasmcp:`
//! package (sessions, key-value stores, middleware's `server-handler`)
//! refuses the component at load, naming it ([`check_import`]).
//!
//! # Resources, prompts and completions
//!
//! A component may also export wasmcp's `resources`, `prompts` and
//! `completions` interfaces, beside `tools` or without it
//! (as wasmcp's resources and prompts templates make them); airlock serves
//! them as it serves an airlock component's offers ([`offers`] converts),
//! through the same exports table ([`SERVED`]): listed at load,
//! checked by the catalog, each read, prompt and completion run in a fresh
//! instance with the component's read-only grant.

pub mod offers;
pub mod value;

use crate::tool::{Content, Hints, Icon};

/// The interfaces of a wasmcp component airlock serves — `tools`, and
/// beside it (or instead of it) resources, prompts and completions —,
/// each with the functions airlock calls (all of them are needed).
pub const SERVED: [(&str, &[&str]); 4] = [
    ("tools", &["list-tools", "call-tool"]),
    (
        "resources",
        &["list-resources", "read-resource", "list-resource-templates"],
    ),
    ("prompts", &["list-prompts", "get-prompt"]),
    ("completions", &["complete"]),
];

/// The package of that export, and the versions of it airlock serves.
const PACKAGE: &str = "wasmcp:mcp-v20251125/";
const VERSION_TRACK: &str = "0.1.";

/// The protocol version every call's `message-context` names.
pub const PROTOCOL_VERSION: &str = "2025-11-25";

/// The version of wasmcp's package the stubs are defined at; wasmtime
/// links any `0.1.x` import to them.
pub const STUB_VERSION: &str = "0.1.1";

/// The short name of an interface of wasmcp's MCP 2025-11-25 package
/// (`server-io` for `wasmcp:mcp-v20251125/server-io@0.1.1`), for any
/// version airlock serves.
pub fn interface(name: &str) -> Option<&str> {
    let rest = name.strip_prefix(PACKAGE)?;
    let (interface, version) = rest.split_once('@')?;
    version.starts_with(VERSION_TRACK).then_some(interface)
}

/// True for the export of a wasmcp tools component that airlock serves.
pub fn is_tools_export(name: &str) -> bool {
    interface(name) == Some("tools")
}

/// True for any export airlock serves of a wasmcp component: an
/// interface of [`SERVED`] (wasmcp's templates make a component of each
/// capability, e.g. one that exports only `resources`).
pub fn is_served_export(name: &str) -> bool {
    interface(name).is_some_and(|i| SERVED.iter().any(|(served, _)| *served == i))
}

/// How a stubbed function of wasmcp's composition answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stub {
    /// `result<_, io-error>` (or `result<T, io-error>`): `err(unexpected(…))`.
    IoError,
    /// `result<jwt-claims>`: `err`; no token is ever valid here.
    NoClaims,
    /// `bool`: false; nothing is authorized here.
    Deny,
}

/// The functions airlock answers in place of wasmcp's composition, by
/// interface and function.
pub const STUBS: [(&str, &str, Stub); 5] = [
    ("server-io", "parse-message", Stub::IoError),
    ("server-io", "send-message", Stub::IoError),
    ("server-io", "flush-buffer", Stub::IoError),
    ("server-auth", "decode", Stub::NoClaims),
    ("server-auth", "authorize", Stub::Deny),
];

/// The text of the `unexpected` I/O error the `server-io` stubs answer.
pub const NO_CLIENT_STREAM: &str =
    "airlock serves this tool without wasmcp's transport: there is no client stream to send to";

/// How airlock answers `function` of the imported `wasmcp:` interface
/// `import` (its full name), or why the component is refused.
pub fn stub(import: &str, function: &str) -> Option<Stub> {
    let interface = interface(import)?;
    STUBS
        .iter()
        .find(|(i, f, _)| *i == interface && *f == function)
        .map(|(_, _, stub)| *stub)
}

/// Checks one item (`function`, or a resource) a component imports from a
/// `wasmcp:` interface; the error says why airlock cannot provide it.
pub fn check_import(import: &str, item: &str, is_function: bool) -> Result<(), String> {
    if is_function && stub(import, item).is_some() {
        return Ok(());
    }
    let what = if is_function { "function" } else { "resource" };
    let why = match interface(import) {
        Some("server-handler") => {
            "it is middleware, which only wasmcp's composition can chain; airlock serves a tools \
             component on its own"
        }
        Some("sessions" | "session-manager") => {
            "sessions live in wasmcp's composition and its key-value store, which airlock does \
             not run"
        }
        _ => "only wasmcp's composition provides it",
    };
    Err(format!(
        "imports {what} `{item}` of `{import}`, which airlock does not provide: {why} (airlock \
         answers only server-io's send-message, parse-message and flush-buffer, and \
         server-auth's decode and authorize)"
    ))
}

/// One tool as `list-tools` declares it.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedTool {
    pub name: String,
    /// `options.title`, else the annotations' title.
    pub title: Option<String>,
    pub description: Option<String>,
    pub input_schema: String,
    pub output_schema: Option<String>,
    /// `None` when the tool declares none of the four hints; an absent
    /// hint of a declared set is false (never MCP's permissive defaults).
    pub hints: Option<Hints>,
    pub icons: Vec<Icon>,
}

impl ListedTool {
    /// The description, or what airlock says when the tool has none.
    pub fn description_or_fallback(&self) -> String {
        match &self.description {
            Some(d) if !d.trim().is_empty() => d.clone(),
            _ => format!(
                "Tool `{}` of a wasmcp component (it declares no description).",
                self.name
            ),
        }
    }
}

/// What `call-tool` answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Called {
    /// A result without `is-error`.
    Done {
        content: Vec<Content>,
        structured: Option<String>,
    },
    /// A result with `is-error: true`: the text of its text blocks.
    ToolError(String),
    /// `error-code` `invalid-params`: its message.
    InvalidArguments(String),
    /// Any other `error-code`: its message, case and code.
    Failed(String),
    /// `none`: the component does not know the tool it listed.
    NotHandled,
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
