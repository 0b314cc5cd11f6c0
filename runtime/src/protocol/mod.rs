//! The protocols airlock speaks, independent of the transport:
//!
//! - [`jsonrpc`]: the JSON-RPC 2.0 envelope (parse, batches, error objects);
//! - [`mcp`]: MCP sessions (lifecycle, tools, logging, progress,
//!   cancellation, confirmation through elicitation);
//! - [`rpc`]: the plain JSON-RPC endpoint, each tool a method;
//! - [`tasks`]: the state of MCP tasks (background tool calls).

pub mod jsonrpc;
pub mod mcp;
pub mod rpc;
pub mod tasks;
