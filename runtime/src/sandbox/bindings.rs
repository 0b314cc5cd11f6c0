//! Host-side bindings of the `airlock:tool` contract (`wit/tool.wit`), the
//! conversions of its records into the runtime's own types, and
//! [`ToolPre`]: a linked component with its `call` export resolved once, so
//! that a call's fresh instance costs only the instantiation.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use wasmtime::AsContextMut;
use wasmtime::component::{ComponentExportIndex, Instance, TypedFunc};

use super::DescribedTool;
use crate::tool::{Content, Hints, Icon, ResourceBody, TaskSupport};

wasmtime::component::bindgen!({
    path: "../wit",
    world: "toolbox",
});

pub use self::airlock::tool::host;
pub use self::airlock::tool::types;

/// The contract's `call` export: `(name, arguments) -> result<output, error>`.
pub type CallFunc<'a> = TypedFunc<(&'a str, &'a str), (Result<types::Output, types::Error>,)>;

/// The interface every tool component must export: `describe` and `call`.
pub const CONTRACT: &str = "airlock:tool/tools@0.1.0";

/// A component linked against the runtime, ready to instantiate.
///
/// The generated `ToolboxPre::instantiate` looks up and type-checks every
/// export of the contract on every instance (about 4% of a trivial call's
/// time, BENCHMARKS.md). A call needs only `call`, whose index is resolved
/// here once; its type is checked on the first instance (types belong to
/// the component, so every later instance of it has the same).
#[derive(Clone)]
pub struct ToolPre<T: 'static> {
    toolbox: ToolboxPre<T>,
    call: ComponentExportIndex,
    call_checked: Arc<AtomicBool>,
}

impl<T: 'static> ToolPre<T> {
    /// Fails when the component does not export the contract's `call`.
    pub fn new(pre: wasmtime::component::InstancePre<T>) -> wasmtime::Result<Self> {
        let component = pre.component();
        let tools = component
            .get_export_index(None, CONTRACT)
            .ok_or_else(|| wasmtime::format_err!("no exported instance named `{CONTRACT}`"))?;
        let call = component
            .get_export_index(Some(&tools), "call")
            .ok_or_else(|| wasmtime::format_err!("`{CONTRACT}` exports no function `call`"))?;
        Ok(ToolPre {
            toolbox: ToolboxPre::new(pre)?,
            call,
            call_checked: Arc::new(AtomicBool::new(false)),
        })
    }

    /// The generated bindings, for `describe` (loading is not a hot path).
    pub fn toolbox(&self) -> &ToolboxPre<T> {
        &self.toolbox
    }

    /// The engine the component was compiled for (which tier it runs on).
    pub fn engine(&self) -> &wasmtime::Engine {
        self.toolbox.engine()
    }

    /// A fresh instance in `store`, and its `call` export.
    pub fn instantiate_call<'a>(
        &self,
        mut store: impl AsContextMut<Data = T>,
    ) -> wasmtime::Result<(Instance, CallFunc<'a>)> {
        let instance = self
            .toolbox
            .instance_pre()
            .instantiate(store.as_context_mut())?;
        let func = instance
            .get_func(store.as_context_mut(), self.call)
            .ok_or_else(|| wasmtime::format_err!("the instance lacks `{CONTRACT}#call`"))?;
        if self.call_checked.load(Ordering::Acquire) {
            // SAFETY: `func` is the same export of the same component whose
            // type `typed` accepted on an earlier instance (below).
            return Ok((instance, unsafe { CallFunc::new_unchecked(func) }));
        }
        let typed = func.typed(store.as_context())?;
        self.call_checked.store(true, Ordering::Release);
        Ok((instance, typed))
    }
}

impl From<types::Tool> for DescribedTool {
    fn from(t: types::Tool) -> Self {
        DescribedTool {
            name: t.name,
            title: t.title,
            description: t.description,
            input_schema: t.input_schema,
            output_schema: t.output_schema,
            hints: Hints {
                read_only: t.hints.contains(types::Hints::READ_ONLY),
                destructive: t.hints.contains(types::Hints::DESTRUCTIVE),
                idempotent: t.hints.contains(types::Hints::IDEMPOTENT),
                open_world: t.hints.contains(types::Hints::OPEN_WORLD),
            },
            own_hints: true,
            icons: t
                .icons
                .into_iter()
                .map(|i| Icon {
                    src: i.src,
                    mime_type: i.mime_type,
                    sizes: i.sizes,
                })
                .collect(),
            task_support: match t.task_support {
                types::TaskSupport::Forbidden => TaskSupport::Forbidden,
                types::TaskSupport::Optional => TaskSupport::Optional,
                types::TaskSupport::Required => TaskSupport::Required,
            },
        }
    }
}

impl From<types::Content> for Content {
    fn from(c: types::Content) -> Self {
        match c {
            types::Content::Text(text) => Content::Text(text),
            types::Content::Image(m) => Content::Image {
                data: m.data,
                mime_type: m.mime_type,
            },
            types::Content::Audio(m) => Content::Audio {
                data: m.data,
                mime_type: m.mime_type,
            },
            types::Content::Embedded(r) => Content::Embedded {
                uri: r.uri,
                mime_type: r.mime_type,
                body: match r.body {
                    types::ResourceBody::Text(t) => ResourceBody::Text(t),
                    types::ResourceBody::Blob(b) => ResourceBody::Blob(b),
                },
            },
            types::Content::Link(l) => Content::Link {
                uri: l.uri,
                name: l.name,
                title: l.title,
                description: l.description,
                mime_type: l.mime_type,
                size: l.size,
            },
        }
    }
}
