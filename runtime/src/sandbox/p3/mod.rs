//! WASI 0.3 (async) components beside WASI 0.2 ones.
//!
//! A component that imports a WASI 0.3 interface (`wasi:http/client@0.3.0`,
//! `wasi:clocks/monotonic-clock@0.3.0`, …) or exports an `async func`
//! needs the component model's concurrency: async host functions,
//! `stream`/`future` values, tasks.
//! wasmtime provides it per engine, and an engine with it set up makes
//! every store carry the concurrent state; so the 0.2 engines run without
//! it (`engine_config`) and 0.3 components get an engine of their own
//! ([`engine::Concurrent`], its own pool, made when the first one loads),
//! chosen at load from the component's imports and types
//! ([`needs_concurrency`]).
//!
//! The contract is the same `airlock:tool/tools`, with one difference a
//! 0.3 guest may declare: `call` as an `async func`. The component model
//! forbids a synchronous function to block (wasmtime traps "cannot block a
//! synchronous task before returning"), so a `call` that waits on a 0.3
//! import (a request, a clock) must be `async`; the host calls either
//! kind the same way (`call_async`, whose type check ignores `async`).
//!
//! Both engines link the same host interfaces of WASI 0.2 and airlock
//! (`linker::host_interfaces`); the concurrent one adds wasmtime-wasi's
//! 0.3 `cli`, `clocks` and `random` and wasmtime-wasi-http's 0.3
//! `wasi:http`, whose requests go through the call's same `HttpFilter`
//! (wasmtime-wasi-http sends both versions' requests through one hook).
//! The 0.3 `filesystem` and `sockets` are not linked: airlock bounds
//! folders (create-only, write and file limits) and sockets (the
//! descriptor budget) in its own layers over their 0.2 interfaces, and a
//! component importing their 0.3 versions is refused at load, naming the
//! import, rather than run with fewer bounds.
//!
//! A call of a 0.3 component is the same call — the same store from the
//! same grant (`provision`), the same outcome checks and redaction — but
//! instantiated and called with wasmtime's async API (`call`), its wall
//! time also bounded while the guest waits on an async host call, where
//! no epoch tick can stop it.
//!
//! Without the `p3` cargo feature only the detection is built, and a 0.3
//! component is refused at load with the reason.

#[cfg(feature = "p3")]
pub(super) mod call;
#[cfg(feature = "p3")]
pub(super) mod engine;

use wasmparser::{ComponentType, InstanceTypeDeclaration, Parser, Payload};
use wasmtime::Engine;
use wasmtime::component::Component;

use super::tier::Backend;
#[cfg(feature = "p3")]
use super::tier::Tier;
#[cfg(not(feature = "p3"))]
use super::{CallState, RawOutput, RunError, ToolPre, run::Run};
use super::{Linked, Sandbox};

/// Why the component needs the concurrent engine, if it does: the first
/// WASI 0.3 interface among its top-level imports (e.g. `it imports
/// wasi:http/client@0.3.0`), else an `async func` among its types (an
/// export that waits). `None` also for bytes that do not parse (compiling
/// them says why).
pub fn needs_concurrency(bytes: &[u8]) -> Option<String> {
    let mut depth = 0usize;
    let mut async_func = false;
    for payload in Parser::new(0).parse_all(bytes) {
        match payload.ok()? {
            Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => depth += 1,
            Payload::End(_) => depth = depth.saturating_sub(1),
            Payload::ComponentImportSection(section) if depth == 0 => {
                for import in section.into_iter().flatten() {
                    if is_wasi_0_3(import.name.name) {
                        return Some(format!("it imports {} (WASI 0.3)", import.name.name));
                    }
                }
            }
            Payload::ComponentTypeSection(section) if depth == 0 => {
                async_func |= section.into_iter().flatten().any(|ty| is_async(&ty));
            }
            _ => {}
        }
    }
    async_func.then(|| "it declares an `async func` (WASI 0.3)".to_string())
}

/// Whether a type is an `async func`, or an instance type that holds one.
fn is_async(ty: &ComponentType<'_>) -> bool {
    match ty {
        ComponentType::Func(func) => func.async_,
        ComponentType::Instance(decls) => decls.iter().any(|decl| {
            matches!(decl, InstanceTypeDeclaration::Type(ComponentType::Func(func)) if func.async_)
        }),
        _ => false,
    }
}

/// Whether `name` is an interface of a WASI 0.3 package (`wasi:…@0.3.x`,
/// release candidates included).
fn is_wasi_0_3(name: &str) -> bool {
    let Some((package, version)) = name.rsplit_once('@') else {
        return false;
    };
    package.starts_with("wasi:") && (version == "0.3" || version.starts_with("0.3."))
}

#[cfg(feature = "p3")]
impl Sandbox {
    /// Compiles a 0.3 component on the concurrent engine (made now if it
    /// is the first), with Cranelift, or loads it from the compile cache.
    pub(super) fn compile_concurrent(
        &self,
        _why: &str,
        digest: &str,
        bytes: &[u8],
    ) -> wasmtime::Result<Component> {
        let backend = self.concurrent.backend()?;
        self.compile_on(backend, Tier::Optimized, digest, bytes)
    }

    /// The concurrent engine's backend when `engine` is it.
    pub(super) fn concurrent_backend(&self, engine: &Engine) -> Option<&Backend> {
        self.concurrent.owning(engine)
    }

    /// `linked`, unless it is a 0.3 component of a kind whose calls run
    /// only on the 0.2 engines: wasmcp's, and the contract's exports beside
    /// `tools` (resources, prompts, completions, skills).
    pub(super) fn checked_link(&self, linked: Linked) -> wasmtime::Result<Linked> {
        if self.concurrent_backend(linked.engine()).is_none() {
            return Ok(linked);
        }
        match &linked {
            Linked::Wasmcp(_) => wasmtime::bail!(
                "a wasmcp component for WASI 0.3: airlock serves wasmcp components built for \
                 WASI 0.2 only"
            ),
            Linked::Tool(pre) => {
                let offers = pre.offers();
                if offers.resources.is_some()
                    || offers.prompts.is_some()
                    || offers.complete.is_some()
                    || offers.skills.is_some()
                {
                    wasmtime::bail!(
                        "a WASI 0.3 component of world `server`: airlock serves the tools \
                         (`airlock:tool/tools`) of WASI 0.3 components, not yet their \
                         resources, prompts, completions or skills; build it for world \
                         `toolbox`, or for WASI 0.2"
                    )
                }
                Ok(linked)
            }
            Linked::Functions(_) => Ok(linked),
        }
    }
}

#[cfg(not(feature = "p3"))]
impl Sandbox {
    /// Refuses a 0.3 component: this build has no concurrent engine.
    pub(super) fn compile_concurrent(
        &self,
        import: &str,
        _digest: &str,
        _bytes: &[u8],
    ) -> wasmtime::Result<Component> {
        wasmtime::bail!(
            "{import}, and this airlock was built without WASI 0.3 support; build airlock \
             with `--features p3`, or build the component for WASI 0.2"
        )
    }

    /// No engine is the concurrent one in this build.
    pub(super) fn concurrent_backend(&self, _engine: &Engine) -> Option<&Backend> {
        None
    }

    pub(super) fn checked_link(&self, linked: Linked) -> wasmtime::Result<Linked> {
        Ok(linked)
    }
}

/// Never called in this build: no component is linked on a concurrent
/// engine (`Sandbox::concurrent_backend` is `None`).
#[cfg(not(feature = "p3"))]
impl Run {
    pub(super) fn call_concurrent(
        &mut self,
        _pre: &Linked,
        _name: &str,
        _arguments: &str,
    ) -> Result<RawOutput, RunError> {
        Err(RunError::Setup(
            "this airlock runs no WASI 0.3 components".into(),
        ))
    }

    pub(super) fn describe_concurrent(
        &mut self,
        _pre: &ToolPre<CallState>,
    ) -> wasmtime::Result<Vec<super::bindings::types::Tool>> {
        wasmtime::bail!("this airlock runs no WASI 0.3 components")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_wasi_0_3_interfaces_count() {
        assert!(is_wasi_0_3("wasi:http/client@0.3.0"));
        assert!(is_wasi_0_3("wasi:clocks/monotonic-clock@0.3.1"));
        assert!(is_wasi_0_3("wasi:cli/stdout@0.3.0-rc-2025-09-16"));
        assert!(!is_wasi_0_3("wasi:http/outgoing-handler@0.2.12"));
        assert!(!is_wasi_0_3("wasi:io/streams@0.2.6"));
        assert!(!is_wasi_0_3("airlock:tool/host@0.3.0"));
        assert!(!is_wasi_0_3("wasi:http/types@0.30.0"));
    }

    #[test]
    fn a_0_3_import_or_an_async_func_needs_the_concurrent_engine() {
        let component = |text: &str| wat::parse_str(text).expect("component text");
        let import = component(r#"(component (import "wasi:http/client@0.3.0" (instance)))"#);
        assert_eq!(
            needs_concurrency(&import).as_deref(),
            Some("it imports wasi:http/client@0.3.0 (WASI 0.3)")
        );
        let async_func = component(r#"(component (type (func async (param "ms" u32))))"#);
        assert_eq!(
            needs_concurrency(&async_func).as_deref(),
            Some("it declares an `async func` (WASI 0.3)")
        );
        let in_instance = component(
            r#"(component (type (instance (type (func async)) (export "f" (func (type 0))))))"#,
        );
        assert!(needs_concurrency(&in_instance).is_some());
        let sync = component(
            r#"(component (import "wasi:http/outgoing-handler@0.2.12" (instance))
                (type (func (param "ms" u32))))"#,
        );
        assert_eq!(needs_concurrency(&sync), None);
    }
}
