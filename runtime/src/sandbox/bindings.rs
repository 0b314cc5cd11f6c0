//! Host-side bindings of the `airlock:tool` contract (`wit/tool.wit`), the
//! conversions of its records into the runtime's own types, and
//! [`ToolPre`]: a linked component with its exports resolved once, so that
//! a call's fresh instance costs only the instantiation.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use wasmtime::AsContextMut;
use wasmtime::component::{ComponentExportIndex, Instance, InstancePre, TypedFunc};

use super::DescribedTool;
use crate::tool::{Content, Hints, Icon, ResourceBody, TaskSupport};

wasmtime::component::bindgen!({
    path: "../wit",
    world: "server",
    // A request to the client may suspend the call (a multi round-trip of
    // revision 2026-07-28): the guest is stopped, and re-run on the retry.
    imports: {
        "airlock:tool/host.elicit": trappable,
        "airlock:tool/host.elicit-url": trappable,
        "airlock:tool/host.sample": trappable,
        "airlock:tool/host.roots": trappable,
        "airlock:tool/host.ask": trappable,
    },
});

pub use self::airlock::tool::host;
pub use self::airlock::tool::types;
#[allow(unused_imports)] // Used by the resources, prompts and completions to come.
pub use self::exports::airlock::tool::{completions, prompts, resources, skills};

/// The contract's `call` export: `(name, arguments) -> result<output, error>`.
pub type CallFunc<'a> = TypedFunc<(&'a str, &'a str), (Result<types::Output, types::Error>,)>;

/// The interface every tool component must export: `describe` and `call`.
/// Components built against any `0.1.x` of the contract match it (wasmtime
/// looks exports and imports up by semver-compatible name).
pub const CONTRACT: &str = "airlock:tool/tools@0.1.2";
/// What a component of world `server` exports beside its tools.
pub const RESOURCES: &str = "airlock:tool/resources@0.1.2";
pub const PROMPTS: &str = "airlock:tool/prompts@0.1.2";
pub const COMPLETIONS: &str = "airlock:tool/completions@0.1.2";
/// The skills a component carries (new in 0.1.2: absent before).
pub const SKILLS: &str = "airlock:tool/skills@0.1.2";

/// Whether an export's name is the contract's `tools` in some `0.1.x`.
pub fn is_contract(name: &str) -> bool {
    name.strip_prefix("airlock:tool/tools@0.1.")
        .is_some_and(|patch| patch.bytes().all(|b| b.is_ascii_digit()) && !patch.is_empty())
}

/// A component linked against the runtime, ready to instantiate.
///
/// A call needs only `call`, whose index is resolved here once (looking it
/// up and type-checking every export on every instance cost about 4% of a
/// trivial call's time, BENCHMARKS.md); its type is checked on the first
/// instance (types belong to the component, so every later instance of it
/// has the same). The exports of world `server` are resolved here too, when
/// the component has them.
#[derive(Clone)]
pub struct ToolPre<T: 'static> {
    pre: InstancePre<T>,
    describe: ComponentExportIndex,
    call: ComponentExportIndex,
    call_checked: Arc<AtomicBool>,
    offers: Offers,
}

/// The exports of world `server` a component has: each `None` when absent
/// (a `toolbox` component, or one built against 0.1.0).
#[derive(Clone, Default, Debug)]
pub struct Offers {
    /// `resources.describe` and `resources.read`.
    pub resources: Option<(ComponentExportIndex, ComponentExportIndex)>,
    /// `prompts.describe` and `prompts.get`.
    pub prompts: Option<(ComponentExportIndex, ComponentExportIndex)>,
    /// `completions.complete`.
    pub complete: Option<ComponentExportIndex>,
    /// `skills.describe` (0.1.2).
    pub skills: Option<ComponentExportIndex>,
}

/// `interface#func` of `component`, when it exports both.
fn export_func(
    component: &wasmtime::component::Component,
    interface: &str,
    func: &str,
) -> Option<ComponentExportIndex> {
    let instance = component.get_export_index(None, interface)?;
    component.get_export_index(Some(&instance), func)
}

impl<T: 'static> ToolPre<T> {
    /// Fails when the component does not export the contract's `describe`
    /// and `call`.
    pub fn new(pre: InstancePre<T>) -> wasmtime::Result<Self> {
        let component = pre.component();
        if component.get_export_index(None, CONTRACT).is_none() {
            wasmtime::bail!("no exported instance named `{CONTRACT}`");
        }
        let describe = export_func(component, CONTRACT, "describe")
            .ok_or_else(|| wasmtime::format_err!("`{CONTRACT}` exports no function `describe`"))?;
        let call = export_func(component, CONTRACT, "call")
            .ok_or_else(|| wasmtime::format_err!("`{CONTRACT}` exports no function `call`"))?;
        let pair = |interface: &str, first: &str, second: &str| {
            Some((
                export_func(component, interface, first)?,
                export_func(component, interface, second)?,
            ))
        };
        let offers = Offers {
            resources: pair(RESOURCES, "describe", "read"),
            prompts: pair(PROMPTS, "describe", "get"),
            complete: export_func(component, COMPLETIONS, "complete"),
            skills: export_func(component, SKILLS, "describe"),
        };
        Ok(ToolPre {
            pre,
            describe,
            call,
            call_checked: Arc::new(AtomicBool::new(false)),
            offers,
        })
    }

    /// The engine the component was compiled for (which tier it runs on).
    pub fn engine(&self) -> &wasmtime::Engine {
        self.pre.engine()
    }

    /// The linked component, and its `describe` and `call` exports (for
    /// the async calls of WASI 0.3 components, `p3::call`).
    #[cfg(feature = "p3")]
    pub(super) fn parts(&self) -> (&InstancePre<T>, ComponentExportIndex, ComponentExportIndex) {
        (&self.pre, self.describe, self.call)
    }

    /// What the component offers beside its tools.
    pub fn offers(&self) -> &Offers {
        &self.offers
    }

    /// A fresh instance in `store`.
    pub fn instantiate(&self, store: impl AsContextMut<Data = T>) -> wasmtime::Result<Instance> {
        self.pre.instantiate(store)
    }

    /// The export `index` of `instance`, type-checked as `Params -> Results`
    /// (for everything but `call`: loading and reads are not the hot path).
    pub fn typed<Params, Results>(
        &self,
        mut store: impl AsContextMut<Data = T>,
        instance: &Instance,
        index: &ComponentExportIndex,
    ) -> wasmtime::Result<TypedFunc<Params, Results>>
    where
        Params: wasmtime::component::ComponentNamedList + wasmtime::component::Lower,
        Results: wasmtime::component::ComponentNamedList + wasmtime::component::Lift,
    {
        let func = instance
            .get_func(store.as_context_mut(), index)
            .ok_or_else(|| {
                wasmtime::format_err!("the instance lacks an export of its component")
            })?;
        func.typed(store.as_context())
    }

    /// Lists the component's tools in a fresh instance in `store`.
    pub fn describe(
        &self,
        mut store: impl AsContextMut<Data = T>,
    ) -> wasmtime::Result<Vec<types::Tool>> {
        let instance = self.instantiate(store.as_context_mut())?;
        let describe: TypedFunc<(), (Vec<types::Tool>,)> =
            self.typed(store.as_context_mut(), &instance, &self.describe)?;
        let (tools,) = describe.call(store, ())?;
        Ok(tools)
    }

    /// A fresh instance in `store`, and its `call` export.
    pub fn instantiate_call<'a>(
        &self,
        mut store: impl AsContextMut<Data = T>,
    ) -> wasmtime::Result<(Instance, CallFunc<'a>)> {
        let instance = self.pre.instantiate(store.as_context_mut())?;
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
