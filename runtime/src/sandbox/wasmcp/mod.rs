//! wasmcp components in the sandbox (see [`crate::wasmcp`]): the component
//! linked once, against the runtime plus airlock's answers to the few
//! functions of wasmcp's composition it may stand in for, and the functions
//! of every interface airlock serves resolved once from one table
//! ([`wasmcp::SERVED`]: tools, resources, prompts, completions). What is
//! listed at load is `listing.rs`'s; what runs per call (a tool call, a
//! read, a prompt, a completion, each in a fresh instance) is `enter.rs`'s.

mod enter;
mod listing;

use std::collections::HashMap;

use wasmtime::component::types::ComponentItem;
use wasmtime::component::{Component, ComponentExportIndex, InstancePre, Linker, ResourceAny, Val};

use super::CallState;
use crate::wasmcp::{self, value};

/// A wasmcp component linked against the runtime, with the functions of
/// the interfaces it exports that airlock serves resolved.
#[derive(Clone)]
pub struct WasmcpPre {
    pub(super) pre: InstancePre<CallState>,
    functions: HashMap<&'static str, ComponentExportIndex>,
}

impl WasmcpPre {
    /// Finds the interfaces of [`wasmcp::SERVED`] the component exports;
    /// fails when one lacks a function airlock calls.
    pub fn new(pre: InstancePre<CallState>) -> wasmtime::Result<Self> {
        let component = pre.component();
        let exports: Vec<String> = component
            .component_type()
            .exports(component.engine())
            .map(|(name, _)| name.to_string())
            .collect();
        let mut functions = HashMap::new();
        for (interface, names) in wasmcp::SERVED {
            let Some(export) = exports
                .iter()
                .find(|name| wasmcp::interface(name) == Some(interface))
            else {
                continue;
            };
            let instance = component
                .get_export_index(None, export)
                .ok_or_else(|| wasmtime::format_err!("it does not export `{export}`"))?;
            for name in names.iter().copied() {
                let function = component
                    .get_export_index(Some(&instance), name)
                    .ok_or_else(|| {
                        wasmtime::format_err!("`{export}` exports no function `{name}`")
                    })?;
                functions.insert(name, function);
            }
        }
        Ok(WasmcpPre { pre, functions })
    }

    /// The export of function `name` (`call-tool`, `read-resource`, …),
    /// when the component exports its interface.
    fn function(&self, name: &str) -> Option<ComponentExportIndex> {
        self.functions.get(name).copied()
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
