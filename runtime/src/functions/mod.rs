//! Plain components: components that export ordinary WIT functions rather
//! than airlock's contract (wassette's catalogue, `wit-bindgen` libraries).
//! Every exported function becomes a tool.
//!
//! - [`describe`] reads the component's WIT (types and doc comments, the
//!   `package-docs` custom section) with `wit-parser`, before anything is
//!   compiled, and refuses a function that cannot be called with JSON;
//! - [`schema`] gives the JSON Schema of each function's parameters and
//!   result; [`value`] converts JSON to component values and back at call
//!   time (wasmtime's dynamic `Val`).
//!
//! # Names
//!
//! A function of the component's root world keeps its WIT name (`fetch`);
//! a function of an exported interface is `INTERFACE.FUNCTION` with the
//! interface's short name (`strings.reverse` for `demo:text/strings@1.0.0`).
//! Two functions with the same name refuse the component. Interfaces of
//! `wasi:` packages (`wasi:cli/run`, `wasi:http/incoming-handler`) are entry
//! points for other hosts, not tools, and are left out; so are resource
//! methods and constructors, and the `init` entry points that componentize-py
//! and componentize-js add to every component they build (they start the
//! language's runtime; see `TOOLCHAIN_ENTRIES`).
//!
//! # Descriptions
//!
//! The function's doc comment; without one, its WIT signature
//! (`fetch: func(url: string) -> result<string, string>`) and where it
//! comes from, so a client still learns what to send.

pub mod schema;
mod ty;
pub mod value;

use serde_json::Value;
use wit_parser::decoding::{DecodedWasm, decode};
use wit_parser::{FunctionKind, Resolve, WorldItem, WorldKey};

pub use ty::{Case, Field, Named, Ty};

/// One exported function, served as a tool.
#[derive(Debug, Clone, PartialEq)]
pub struct Function {
    /// The tool's name (see the module documentation).
    pub tool: String,
    /// The export that holds it: `None` for the root world, else the
    /// interface's export name (`demo:text/strings@1.0.0`).
    pub interface: Option<String>,
    /// The function's WIT name.
    pub name: String,
    pub docs: Option<String>,
    pub params: Vec<(String, Ty)>,
    pub result: Option<Ty>,
}

/// Why a plain component cannot be served.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DescribeError {
    #[error("its WIT cannot be read: {0}")]
    Decode(String),
    #[error("function {function} cannot be a tool: {reason}")]
    Function { function: String, reason: String },
    #[error("functions {first} and {second} would both be the tool {tool:?}")]
    Clash {
        tool: String,
        first: String,
        second: String,
    },
    #[error(
        "exports no functions (only {0}); export plain WIT functions, or build it with the \
         airlock SDK (docs/authoring.md)"
    )]
    NoFunctions(String),
}

/// The functions a plain component exports, with their types and docs.
pub fn describe(bytes: &[u8]) -> Result<Vec<Function>, DescribeError> {
    let decoded = decode(bytes).map_err(|e| DescribeError::Decode(format!("{e:#}")))?;
    let DecodedWasm::Component(resolve, world) = decoded else {
        return Err(DescribeError::Decode(
            "it is a WIT package, not a component".into(),
        ));
    };
    let mut functions: Vec<Function> = Vec::new();
    let mut skipped = Vec::new();
    for (key, item) in &resolve.worlds[world].exports {
        let export = resolve.name_world_key(key);
        match item {
            WorldItem::Function(f) if is_toolchain_entry(None, f) => skipped.push(export),
            WorldItem::Function(f) => {
                functions.extend(function(&resolve, None, &f.name, f)?);
            }
            WorldItem::Interface { id, .. } => {
                let interface = &resolve.interfaces[*id];
                let in_wasi = interface
                    .package
                    .is_some_and(|p| resolve.packages[p].name.namespace == "wasi");
                if in_wasi {
                    skipped.push(export);
                    continue;
                }
                let short = match key {
                    WorldKey::Name(name) => name.clone(),
                    WorldKey::Interface(_) => {
                        interface.name.clone().unwrap_or_else(|| export.clone())
                    }
                };
                let name = match key {
                    WorldKey::Name(name) => Some(name.as_str()),
                    WorldKey::Interface(_) => None,
                };
                for f in interface.functions.values() {
                    if is_toolchain_entry(name, f) {
                        skipped.push(format!("{export}#{}", f.name));
                        continue;
                    }
                    let tool = format!("{short}.{}", f.name);
                    functions.extend(function(&resolve, Some(&export), &tool, f)?);
                }
            }
            WorldItem::Type { .. } => {}
        }
    }
    if functions.is_empty() {
        return Err(DescribeError::NoFunctions(if skipped.is_empty() {
            "types".into()
        } else {
            skipped.join(", ")
        }));
    }
    for (i, f) in functions.iter().enumerate() {
        if let Some(other) = functions[..i].iter().find(|o| o.tool == f.tool) {
            return Err(DescribeError::Clash {
                tool: f.tool.clone(),
                first: other.qualified(),
                second: f.qualified(),
            });
        }
    }
    Ok(functions)
}

/// The entry points toolchains add to every component they build (each
/// starts the language's runtime when the component is made): the export
/// they are in (`None` at the root), the function and its parameters.
const TOOLCHAIN_ENTRIES: [(Option<&str>, &str, &[&str]); 2] = [
    // componentize-py
    (
        Some("exports"),
        "init",
        &["app-name", "symbols", "stub-wasi"],
    ),
    // componentize-js (jco componentize), QuickJS
    (
        None,
        "init",
        &["shim", "script", "entry-path", "disable-gc"],
    ),
];

/// Whether `f`, exported at `export` (`None` at the root), is one of
/// [`TOOLCHAIN_ENTRIES`], which are no tools.
fn is_toolchain_entry(export: Option<&str>, f: &wit_parser::Function) -> bool {
    TOOLCHAIN_ENTRIES.iter().any(|(at, name, params)| {
        *at == export
            && f.name == *name
            && f.params
                .iter()
                .map(|p| p.name.as_str())
                .eq(params.iter().copied())
    })
}

/// One exported function as a tool; `None` for resource methods and
/// constructors, which are not tools.
fn function(
    resolve: &Resolve,
    interface: Option<&str>,
    tool: &str,
    f: &wit_parser::Function,
) -> Result<Option<Function>, DescribeError> {
    let qualified = match interface {
        Some(i) => format!("{i}#{}", f.name),
        None => f.name.clone(),
    };
    let refuse = |reason: String| DescribeError::Function {
        function: qualified.clone(),
        reason,
    };
    match f.kind {
        FunctionKind::Freestanding => {}
        // Called on the engine of WASI 0.3 components (`sandbox::p3`).
        FunctionKind::AsyncFreestanding if cfg!(feature = "p3") => {}
        FunctionKind::AsyncFreestanding => {
            return Err(refuse(
                "it is an `async` function (WASI 0.3), and this airlock was built without \
                 WASI 0.3 support (`--features p3`)"
                    .into(),
            ));
        }
        _ => return Ok(None),
    }
    let params = f
        .params
        .iter()
        .map(|p| {
            Ty::from_wit(resolve, &p.ty)
                .map(|ty| (p.name.clone(), ty))
                .map_err(|why| refuse(format!("parameter `{}` is {why}", p.name)))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let result = f
        .result
        .as_ref()
        .map(|t| Ty::from_wit(resolve, t))
        .transpose()
        .map_err(|why| refuse(format!("its result is {why}")))?;
    Ok(Some(Function {
        tool: tool.to_string(),
        interface: interface.map(str::to_string),
        name: f.name.clone(),
        docs: ty::docs(&f.docs),
        params,
        result,
    }))
}

impl Function {
    /// `demo:text/strings@1.0.0#reverse`, or `fetch` at the root.
    pub fn qualified(&self) -> String {
        match &self.interface {
            Some(i) => format!("{i}#{}", self.name),
            None => self.name.clone(),
        }
    }

    /// The WIT signature: `fetch: func(url: string) -> result<string, string>`.
    pub fn signature(&self) -> String {
        let params: Vec<String> = self
            .params
            .iter()
            .map(|(name, ty)| format!("{name}: {}", ty.wit()))
            .collect();
        let result = self
            .result
            .as_ref()
            .map(|r| format!(" -> {}", r.wit()))
            .unwrap_or_default();
        format!("{}: func({}){result}", self.name, params.join(", "))
    }

    /// The tool's description: the doc comment, else the signature.
    pub fn description(&self) -> String {
        match &self.docs {
            Some(docs) => docs.clone(),
            None => match &self.interface {
                Some(i) => format!(
                    "`{}` of `{i}` (no doc comment in its WIT).",
                    self.signature()
                ),
                None => format!("`{}` (no doc comment in its WIT).", self.signature()),
            },
        }
    }

    pub fn input_schema(&self) -> Value {
        schema::input(&self.params)
    }

    pub fn output_schema(&self) -> Value {
        schema::output(self.result.as_ref())
    }
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
