//! airlock: runs third-party WebAssembly tools safely.
//!
//! Data flows one way through the modules:
//!
//! ```text
//! catalog  (load, validate, index tools; the kind of a component)
//!   → functions (plain WIT functions: types → schemas, JSON ↔ values)
//!   → policy   (policy file, grants, hints → effective grant)
//!   → sandbox  (engine, per-call store, WASI context, limits)
//!   ← args     (parse, coerce, default, validate arguments)
//!   ← call     (one call end to end: args → consent → sandbox → result checks)
//!   ← protocol (JSON-RPC envelope, MCP sessions, the plain /rpc endpoint)
//!   ← transport (stdio, HTTP on hyper)
//!   ← cli      (the `airlock` command)
//! ```

pub mod allocator;
pub mod args;
pub mod audit;
pub mod call;
pub mod catalog;
pub mod cli;
pub mod functions;
pub mod json;
pub mod logtext;
pub mod policy;
pub mod protocol;
pub mod reload;
mod runtime;
pub mod sandbox;
pub mod tool;
pub mod transport;

pub use runtime::{LoadReport, Runtime, Slot};
