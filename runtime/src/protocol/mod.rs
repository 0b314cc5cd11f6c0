//! The protocols airlock speaks, independent of the transport:
//!
//! - [`jsonrpc`]: the JSON-RPC 2.0 envelope (parse, batches, error objects);
//! - [`mcp`]: MCP, every revision served by one core;
//! - [`rpc`]: the plain JSON-RPC endpoint, each tool a method;
//! - [`openrpc`]: the OpenRPC document of that endpoint (`rpc.discover`);
//! - [`outbox`]: the bounded stream of messages toward one client.

pub mod jsonrpc;
pub mod mcp;
pub mod openrpc;
pub mod outbox;
pub mod rpc;
