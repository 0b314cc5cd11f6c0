//! Host-side bindings of the `airlock:tool` contract (`wit/tool.wit`).

wasmtime::component::bindgen!({
    path: "../wit",
    world: "toolbox",
});

pub use self::airlock::tool::host;
pub use self::airlock::tool::types;
