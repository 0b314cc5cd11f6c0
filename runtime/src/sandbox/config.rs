//! `wasi:config/store`: a component's configuration values, from the
//! policy (`config = { … }`), exactly the call's grant's and nothing else.
//!
//! Components in use import the interface at more than one pre-1.0 version
//! (`0.2.0-draft`, `0.2.0-rc.1`) whose shape is the same, so it is linked
//! once per version with dynamic host functions rather than per generated
//! binding: `get: func(key: string) -> result<option<string>, error>` and
//! `get-all: func() -> result<list<tuple<string, string>>, error>`. Neither
//! ever fails: a key the policy does not give is `none`.

use wasmtime::component::{Linker, Val};

use super::CallState;

/// The versions of `wasi:config/store` linked.
const VERSIONS: [&str; 2] = ["0.2.0-draft", "0.2.0-rc.1"];

pub fn add_to_linker(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    for version in VERSIONS {
        let mut store = linker.instance(&format!("wasi:config/store@{version}"))?;
        store.func_new("get", |store, _ty, params, results| {
            let Some(Val::String(key)) = params.first() else {
                wasmtime::bail!("wasi:config/store#get takes one string");
            };
            let value = store
                .data()
                .config
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| Box::new(Val::String(v.clone())));
            results[0] = Val::Result(Ok(Some(Box::new(Val::Option(value)))));
            Ok(())
        })?;
        store.func_new("get-all", |store, _ty, _params, results| {
            let all = store
                .data()
                .config
                .iter()
                .map(|(k, v)| Val::Tuple(vec![Val::String(k.clone()), Val::String(v.clone())]))
                .collect();
            results[0] = Val::Result(Ok(Some(Box::new(Val::List(all)))));
            Ok(())
        })?;
    }
    Ok(())
}
