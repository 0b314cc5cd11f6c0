//! Host-side bindings of the `airlock:tool` contract (`wit/tool.wit`).

wasmtime::component::bindgen!({
    path: "../wit",
    world: "toolbox",
});

pub use airlock::tool::host;
pub use airlock::tool::types;
