//! The protocols airlock speaks, independent of the transport:
//!
//! - [`jsonrpc`]: the JSON-RPC 2.0 envelope (parse, batches, error objects);
//! - [`mcp`]: MCP sessions (lifecycle, tools, logging, progress,
//!   cancellation, confirmation through elicitation);
//! - [`rpc`]: the plain JSON-RPC endpoint, each tool a method;
//! - [`tasks`]: the state of MCP tasks (background tool calls);
//! - [`lanes`]: the threads calls run on.

pub mod jsonrpc;
pub mod lanes;
pub mod mcp;
pub mod rpc;
pub mod tasks;

use std::sync::Arc;

use crate::Runtime;
use crate::call::{CallError, CallObserver, Confirmation, PreparedCall};
use crate::sandbox::CancelToken;
use crate::tool::Output;

/// Runs a prepared call on a lane (the guest blocks its thread while it
/// runs). The outcome comes back as soon as it is known; the instance is
/// torn down afterwards on that thread, while the answer is on its way.
/// `None` means the thread died before it had an outcome (a bug).
pub(crate) async fn run_blocking(
    runtime: Arc<Runtime>,
    prepared: PreparedCall,
    observer: Arc<dyn CallObserver>,
    cancel: CancelToken,
    confirmation: Confirmation,
) -> Option<Result<Output, CallError>> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let job = move || {
        prepared.run_delivering(
            runtime.sandbox(),
            observer,
            cancel,
            confirmation,
            |outcome| {
                let _ = tx.send(outcome);
            },
        );
    };
    match lanes::global() {
        Some(lanes) => lanes.spawn(job),
        None => drop(tokio::task::spawn_blocking(job)),
    }
    rx.await.ok()
}
