//! airlock: runs third-party WebAssembly tools safely.
//!
//! The modules, bottom to top; each uses only those above it in this list
//! (the graph is one-way):
//!
//! ```text
//! tool, offer, observe, json, logtext,  shared types: what a tool is, what a
//! sync                                 component offers beside (resources,
//!                                      prompts, completions), what a running
//!                                      call reports, JSON, guest text
//! metrics   (process-wide counters for GET /metrics)
//! telemetry (OpenTelemetry: OTLP export of spans and the MCP conventions'
//!            metrics when configured, trace context in and out; free when off)
//! lanes     (the threads guests run on; when a short call skips them)
//! replicas  (what replicas share, in Redis: leases, keys, task records)
//! source    (references to registries and URLs, the content-addressed
//!            store, the lock, cosign signatures: reference → verified bytes)
//! policy    (policy file, grants, hints → effective grant)
//! confine   (the serving process confines itself: a plan from the policy
//!            and serving's needs, applied with Landlock and seccomp)
//! args      (parse, coerce, default, validate arguments)
//! functions (plain WIT functions: types → schemas, JSON ↔ values)
//! wasmcp    (wasmcp components: their records ↔ tools and content, and
//!            resources, prompts and completions)
//! sandbox   (engines of both tiers, per-call store, WASI context, limits,
//!            network filter)
//! cordon    (components of other trust in worker processes: where a
//!            component runs, the channel, the serving process's end and
//!            the worker's)
//! catalog   (load, validate, index tools, resources, templates and
//!            prompts; the kind of a component)
//! audit     (one JSON line per call)
//! call      (one call end to end: lookup, grant, arguments, consent,
//!            concurrency, run, result checks, audit entry with its caller;
//!            a read, prompt or completion likewise, read-only; resource
//!            updates a component reports)
//! runtime   (catalog + policy + audit + sandbox; the entry point for
//!            calls) and beside it how the catalog comes to be: loading a
//!            component, the components still loading, optimising behind
//!            them, loading while serving, hot reload
//! protocol  (JSON-RPC envelope, MCP of every revision — one table of
//!            methods, `protocol::mcp::dispatch` — the plain /rpc and its
//!            OpenRPC document, outbox)
//! transport (stdio, HTTP on hyper: the front door's rules, bounds and
//!            statuses; transports pass a `Caller` and get typed answers;
//!            `calls`: long requests, draining and the grace period, shared;
//!            HTTPS on the listener; OAuth access tokens)
//! cli       (the `airlock` command)
//! ```

pub mod allocator;
pub mod args;
pub mod audit;
pub mod call;
pub mod catalog;
pub mod cli;
pub mod confine;
pub mod cordon;
pub mod functions;
pub mod json;
pub mod lanes;
pub mod logtext;
pub mod metrics;
pub mod observe;
pub mod offer;
pub mod policy;
pub mod protocol;
pub mod replicas;
pub mod runtime;
pub mod sandbox;
pub mod source;
mod sync;
pub mod telemetry;
pub mod tool;
pub mod transport;
pub mod wasmcp;

pub use runtime::{LoadReport, Runtime, default_resolver, default_store, source_tls};
