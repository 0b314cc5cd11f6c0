//! Every host interface a component can import, linked in one place: what
//! the runtime provides, whichever tier's engine compiled the component.
//!
//! wasmtime-wasi's WASI 0.2 comes first; the runtime's own layers then
//! replace the interfaces it bounds (`wasi:filesystem/types` by the folder
//! guard, `wasi:io` waits by the call's deadline, TCP sockets and lookups
//! by the descriptor budget), and add `wasi:http`, `wasi:config/store` and
//! `airlock:tool/host`. A linker links by name, so every interface is in
//! every component's linker; what a call may actually use is decided per
//! call, from its grant (see [`super::provision`]). Adding a host interface
//! is one line here and the module that implements it.

use wasmtime::Engine;
use wasmtime::component::{HasSelf, Linker};

use super::call_state::CallState;
use super::{bindings, config, folders, sockets, waits, wasmcp};

/// What the components of one engine are linked against.
pub(super) struct Linkers {
    /// Every interface the runtime provides.
    pub(super) tool: Linker<CallState>,
    /// `tool` plus airlock's answers to wasmcp's composition, for wasmcp
    /// tools components only.
    pub(super) wasmcp: Linker<CallState>,
}

impl Linkers {
    pub(super) fn new(engine: &Engine) -> wasmtime::Result<Self> {
        let tool = host_interfaces(engine)?;
        let mut wasmcp = tool.clone();
        wasmcp::add_stubs(&mut wasmcp)?;
        Ok(Linkers { tool, wasmcp })
    }
}

/// A linker with every host interface; later additions replace what
/// wasmtime-wasi linked under the same name.
pub(super) fn host_interfaces(engine: &Engine) -> wasmtime::Result<Linker<CallState>> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
    // `wasi:http/outgoing-handler` and `types`; each request goes through
    // the call's `outgoing::HttpFilter`.
    wasmtime_wasi_http::p2::add_only_http_to_linker_sync(&mut linker)?;
    // Replaces `wasi:filesystem/types` with the create-only guard.
    folders::add_to_linker(&mut linker, CallState::folders)?;
    config::add_to_linker(&mut linker)?;
    waits::add_to_linker(&mut linker, CallState::bounded)?;
    // Each TCP socket and name lookup holds a place among the call's
    // descriptors.
    sockets::add_to_linker(&mut linker, CallState::counted_sockets)?;
    bindings::Server::add_to_linker::<_, HasSelf<_>>(&mut linker, |state| state)?;
    Ok(linker)
}
