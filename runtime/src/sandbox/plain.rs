//! Calls of plain functions (components without airlock's contract; see
//! [`crate::functions`]): the component linked once, each function's
//! export resolved once, and per call a fresh instance whose function is
//! called with dynamic [`Val`]s converted from the call's JSON arguments.

use std::collections::HashMap;

use wasmtime::component::{ComponentExportIndex, InstancePre, Val};

use super::run::Run;
use super::run::Structured;
use super::{CallState, RawOutput, RunError};
use crate::functions::Function;
use crate::functions::value::{self, Returned};
use crate::tool::Content;

/// A plain component linked against the runtime, with the export of each
/// of its functions, by tool name.
#[derive(Clone)]
pub struct FunctionsPre {
    pub(super) pre: InstancePre<CallState>,
    functions: HashMap<String, (ComponentExportIndex, Function)>,
}

impl FunctionsPre {
    /// Resolves the export of each function; fails when one is missing
    /// (the component's WIT and its exports disagree).
    pub fn new(pre: InstancePre<CallState>, functions: Vec<Function>) -> wasmtime::Result<Self> {
        let component = pre.component();
        let mut by_tool = HashMap::with_capacity(functions.len());
        for function in functions {
            let index = match &function.interface {
                None => component.get_export_index(None, &function.name),
                Some(interface) => component
                    .get_export_index(None, interface)
                    .and_then(|i| component.get_export_index(Some(&i), &function.name)),
            };
            let index = index.ok_or_else(|| {
                wasmtime::format_err!("the component does not export `{}`", function.qualified())
            })?;
            by_tool.insert(function.tool.clone(), (index, function));
        }
        Ok(FunctionsPre {
            pre,
            functions: by_tool,
        })
    }

    /// The functions, in no particular order.
    pub fn functions(&self) -> impl Iterator<Item = &Function> {
        self.functions.values().map(|(_, f)| f)
    }
}

impl Run {
    /// Instantiates the component and calls the function of tool `name`
    /// with `arguments` (the prepared JSON object, as text).
    pub(super) fn call_function(
        &mut self,
        pre: &FunctionsPre,
        name: &str,
        arguments: &str,
    ) -> Result<RawOutput, RunError> {
        let FunctionCall {
            export,
            function,
            params,
            mut results,
        } = function_call(pre, name, arguments)?;
        let store = &mut self.store;
        let called = pre.pre.instantiate(&mut *store).and_then(|instance| {
            let func = instance.get_func(&mut *store, export).ok_or_else(|| {
                wasmtime::format_err!("the instance lacks `{}`", function.qualified())
            })?;
            func.call(&mut *store, &params, &mut results)
        });
        self.function_output(function, &results, called)
    }

    /// The outcome of a function call that ended with `called`, either way
    /// it was called: what it returned checked, its trap explained.
    pub(super) fn function_output(
        &mut self,
        function: &Function,
        results: &[Val],
        called: wasmtime::Result<()>,
    ) -> Result<RawOutput, RunError> {
        self.store.data_mut().flush_notices();
        self.finish(called)?;
        match value::returned(function.result.as_ref(), results) {
            Ok(Returned::Ok { structured, text }) => self.checked(
                text.map(Content::Text).into_iter().collect(),
                Some(Structured::Value(structured)),
            ),
            Ok(Returned::Err(message)) => Err(self.failed(message)),
            Err(why) => Err(RunError::BadOutput(why)),
        }
    }
}

/// A function call before it is made: the export and function of a tool,
/// its parameters converted from the call's arguments, and room for its
/// result.
pub(super) struct FunctionCall<'a> {
    pub(super) export: ComponentExportIndex,
    pub(super) function: &'a Function,
    pub(super) params: Vec<Val>,
    pub(super) results: Vec<Val>,
}

/// The call of tool `name`'s function with `arguments`.
pub(super) fn function_call<'a>(
    pre: &'a FunctionsPre,
    name: &str,
    arguments: &str,
) -> Result<FunctionCall<'a>, RunError> {
    let Some((export, function)) = pre.functions.get(name) else {
        return Err(RunError::Setup(format!(
            "the component has no function for tool {name:?}"
        )));
    };
    let args: serde_json::Value = serde_json::from_str(arguments)
        .map_err(|e| RunError::InvalidArguments(format!("Arguments are not JSON: {e}")))?;
    let params = value::arguments(&function.params, &args)
        .map_err(|e| RunError::InvalidArguments(e.to_string()))?;
    let results = vec![Val::Bool(false); usize::from(function.result.is_some())];
    Ok(FunctionCall {
        export: *export,
        function,
        params,
        results,
    })
}
