//! The end-to-end tests of the runtime, as one test binary: each file of
//! this folder is one module (cargo builds and links one binary, with
//! wasmtime and Cranelift once, instead of one per file), and `support/`
//! holds what they share.
//!
//! Run one file's tests with its module's name as the filter:
//! `cargo test -p airlock --test runtime serve_http::`.

mod support;

mod allocator;
mod audit;
mod budgets;
mod calls;
mod cli;
#[cfg(target_os = "linux")]
mod confine;
mod contract;
mod cordons;
mod doc_links;
mod first_day;
mod folders;
#[cfg(target_os = "linux")]
mod fresh;
mod hostile;
mod https;
mod languages;
mod loading;
mod module_graph;
mod network;
mod p3;
mod plain;
mod policy;
mod registry;
mod registry_listing;
mod reload;
mod rpc_openrpc;
mod serve_asks;
mod serve_http;
mod serve_modern;
mod serve_oauth;
mod serve_offers;
mod serve_robustness;
mod serve_stdio;
mod serve_tls;
mod served_kinds;
mod skills;
mod sources;
mod telemetry;
mod tiers;
mod transcripts;
mod waits;
mod wasmcp;
mod wasmcp_offers;
