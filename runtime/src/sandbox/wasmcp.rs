//! Calls of wasmcp tools components (see [`crate::wasmcp`]): the component
//! linked once, against the runtime plus airlock's answers to the few
//! functions of wasmcp's composition it may stand in for; `list-tools` and
//! `call-tool` resolved once (and the functions of its resources, prompts
//! and completions, see `wasmcp_offers.rs`); `list-tools` at load,
//! `call-tool` per call in a fresh instance.

use wasmtime::component::types::ComponentItem;
use wasmtime::component::{Component, ComponentExportIndex, InstancePre, Linker, ResourceAny, Val};

use super::run::Structured;
use super::wasmcp_offers::{self, WasmcpOffers};
use super::{CallState, DescribedTool, RawOutput, Run, RunError, Sandbox};
use crate::offer::DescribedOffers;
use crate::wasmcp::{self, Called, value};

/// Most pages of `list-tools` read at load (a component whose cursor never
/// ends is refused instead of listing forever).
const MAX_PAGES: usize = 100;

/// A wasmcp component linked against the runtime, with its two tool
/// functions (`list-tools`, `call-tool`, when it exports `tools`) and its
/// offers' functions resolved.
#[derive(Clone)]
pub struct WasmcpPre {
    pub(super) pre: InstancePre<CallState>,
    tools: Option<ToolFunctions>,
    pub(super) offers: WasmcpOffers,
}

/// `list-tools` and `call-tool`.
#[derive(Clone, Copy)]
struct ToolFunctions {
    list: ComponentExportIndex,
    call: ComponentExportIndex,
}

impl WasmcpPre {
    /// Fails when the component exports `tools` without `list-tools` or
    /// `call-tool`, or an offers interface without a function of it.
    pub fn new(pre: InstancePre<CallState>) -> wasmtime::Result<Self> {
        let component = pre.component();
        let engine = component.engine();
        let export = component
            .component_type()
            .exports(engine)
            .map(|(name, _)| name)
            .find(|name| wasmcp::is_tools_export(name))
            .map(str::to_string);
        let tools = match export {
            Some(export) => {
                let tools = component
                    .get_export_index(None, &export)
                    .ok_or_else(|| wasmtime::format_err!("it does not export `{export}`"))?;
                let function = |name: &str| {
                    component
                        .get_export_index(Some(&tools), name)
                        .ok_or_else(|| {
                            wasmtime::format_err!("`{export}` exports no function `{name}`")
                        })
                };
                Some(ToolFunctions {
                    list: function("list-tools")?,
                    call: function("call-tool")?,
                })
            }
            None => None,
        };
        Ok(WasmcpPre {
            tools,
            offers: WasmcpOffers::resolve(component)?,
            pre,
        })
    }
}

/// Defines airlock's answers to the functions of wasmcp's composition it
/// stands in for ([`wasmcp::STUBS`]).
pub(super) fn add_stubs(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    let mut interfaces: Vec<&str> = wasmcp::STUBS.iter().map(|(i, _, _)| *i).collect();
    interfaces.dedup();
    for interface in interfaces {
        let name = format!("wasmcp:mcp-v20251125/{interface}@{}", wasmcp::STUB_VERSION);
        let mut instance = linker.instance(&name)?;
        for (_, function, stub) in wasmcp::STUBS.iter().filter(|(i, _, _)| *i == interface) {
            let (function, stub) = (*function, *stub);
            instance.func_new(function, move |mut store, _, params, results| {
                tracing::debug!("a wasmcp tool called {function}; airlock answers {stub:?}");
                // A handle the guest lent (the stream to send to) must be
                // given back before the call returns.
                let mut handles = Vec::new();
                resources(params, &mut handles);
                for handle in handles {
                    handle.resource_drop(&mut store)?;
                }
                if let Some(result) = results.first_mut() {
                    *result = value::stub_answer(stub);
                }
                Ok(())
            })?;
        }
    }
    Ok(())
}

/// Every resource handle in `values`, however deeply nested.
fn resources(values: &[Val], found: &mut Vec<ResourceAny>) {
    for v in values {
        match v {
            Val::Resource(handle) => found.push(*handle),
            Val::List(items) | Val::Tuple(items) | Val::FixedLengthList(items) => {
                resources(items, found)
            }
            Val::Record(fields) => {
                for (_, v) in fields {
                    resources(std::slice::from_ref(v), found);
                }
            }
            Val::Variant(_, Some(v)) | Val::Option(Some(v)) => {
                resources(std::slice::from_ref(v), found)
            }
            Val::Result(Ok(Some(v)) | Err(Some(v))) => resources(std::slice::from_ref(v), found),
            Val::Map(pairs) => {
                for (k, v) in pairs {
                    resources(&[k.clone(), v.clone()], found);
                }
            }
            _ => {}
        }
    }
}

/// Checks what the component imports from `wasmcp:` packages: only types,
/// and the functions airlock answers. The error says what is missing.
///
/// A resource that a `wasmcp:` interface only names (wasmcp's `mcp` uses
/// `wasi:io/streams`' `input-stream`) is the other import's, and fine.
pub fn check_imports(component: &Component) -> Result<(), String> {
    let engine = component.engine();
    let ty = component.component_type();
    let (wasmcp, others): (Vec<_>, Vec<_>) = ty
        .imports(engine)
        .partition(|(import, _)| import.starts_with("wasmcp:"));
    let provided: Vec<_> = others
        .iter()
        .filter_map(|(_, item)| match &item.ty {
            ComponentItem::ComponentInstance(instance) => Some(instance),
            _ => None,
        })
        .flat_map(|instance| instance.exports(engine))
        .filter_map(|(_, item)| match item.ty {
            ComponentItem::Resource(resource) => Some(resource),
            _ => None,
        })
        .collect();
    for (import, item) in wasmcp {
        let ComponentItem::ComponentInstance(instance) = item.ty else {
            return Err(format!(
                "imports `{import}`, which airlock does not provide: only wasmcp's \
                 composition provides it"
            ));
        };
        for (name, item) in instance.exports(engine) {
            match item.ty {
                ComponentItem::ComponentFunc(_) => wasmcp::check_import(import, name, true)?,
                ComponentItem::Resource(resource) if !provided.contains(&resource) => {
                    wasmcp::check_import(import, name, false)?
                }
                _ => {}
            }
        }
    }
    Ok(())
}

impl Sandbox {
    /// Lists the component's tools by calling `list-tools` (every page, in
    /// one instance), under [`super::DESCRIBE_LIMITS`].
    pub fn list_wasmcp(&self, pre: &WasmcpPre) -> Result<Vec<DescribedTool>, RunError> {
        // A component of wasmcp's resources or prompts template has none.
        let Some(functions) = pre.tools else {
            return Ok(Vec::new());
        };
        let mut run = self.start_listing(pre.pre.engine())?;
        let instantiated = pre.pre.instantiate(&mut run.store);
        let instance = run.finish(instantiated)?;
        let func = instance
            .get_func(&mut run.store, functions.list)
            .ok_or_else(|| RunError::Setup("the instance lacks `list-tools`".into()))?;
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let params = [
                value::message_context(),
                value::list_request(cursor.as_deref()),
            ];
            let mut results = [Val::Bool(false)];
            let called = func.call(&mut run.store, &params, &mut results);
            run.finish(called)?;
            let (page, next) = match value::tools_page(&results[0]) {
                Ok(value::Listing::Page(page, next)) => (page, next),
                Ok(value::Listing::Refused(why)) => return Err(RunError::Failed(why)),
                Err(why) => return Err(RunError::BadOutput(why)),
            };
            tools.extend(page.into_iter().map(described));
            match next {
                Some(next) if Some(&next) != cursor.as_ref() => cursor = Some(next),
                Some(_) => {
                    return Err(RunError::BadOutput(
                        "list-tools answered the same cursor twice".into(),
                    ));
                }
                None => return Ok(tools),
            }
        }
        Err(RunError::BadOutput(format!(
            "list-tools answered more than {MAX_PAGES} pages"
        )))
    }
}

impl Sandbox {
    /// What the component lists beside its tools (resources, templates,
    /// prompts) and whether it completes, under [`super::DESCRIBE_LIMITS`].
    pub fn list_wasmcp_offers(&self, pre: &WasmcpPre) -> Result<DescribedOffers, RunError> {
        let mut run = self.start_listing(pre.pre.engine())?;
        wasmcp_offers::describe(&mut run, &pre.pre, &pre.offers)
    }
}

/// A listed tool as the catalog checks tools. A tool that declares no hint
/// gets none (the strictest sandbox) and may be given hints by the policy.
fn described(tool: wasmcp::ListedTool) -> DescribedTool {
    DescribedTool {
        description: tool.description_or_fallback(),
        name: tool.name,
        title: tool.title,
        input_schema: tool.input_schema,
        output_schema: tool.output_schema,
        own_hints: tool.hints.is_some(),
        hints: tool.hints.unwrap_or_default(),
        icons: tool.icons,
        task_support: Default::default(),
    }
}

impl Run {
    /// Instantiates the component and calls `call-tool` for tool `name`
    /// with `arguments` (the prepared JSON object, as text).
    pub(super) fn call_wasmcp(
        &mut self,
        pre: &WasmcpPre,
        name: &str,
        arguments: &str,
    ) -> Result<RawOutput, RunError> {
        let params = [
            value::message_context(),
            value::call_request(name, arguments),
        ];
        let functions = pre
            .tools
            .ok_or_else(|| RunError::Setup("the component exports no tools".into()))?;
        let mut results = [Val::Bool(false)];
        let store = &mut self.store;
        let called = pre.pre.instantiate(&mut *store).and_then(|instance| {
            let func = instance
                .get_func(&mut *store, functions.call)
                .ok_or_else(|| wasmtime::format_err!("the instance lacks `call-tool`"))?;
            func.call(&mut *store, &params, &mut results)
        });
        self.store.data_mut().flush_notices();
        self.finish(called)?;
        let guest_log = self.output.take();
        match value::call_result(&results[0]).map_err(RunError::BadOutput)? {
            Called::Done {
                content,
                structured,
            } => self.checked(content, structured.map(Structured::Text), guest_log),
            Called::ToolError(message) | Called::Failed(message) => Err(self.failed(message)),
            Called::InvalidArguments(message) => Err(RunError::InvalidArguments(message)),
            Called::NotHandled => Err(RunError::Failed(format!(
                "the component's call-tool does not handle {name:?}, which its list-tools lists"
            ))),
        }
    }
}
