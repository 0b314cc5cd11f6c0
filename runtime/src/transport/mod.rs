//! How messages reach the protocols:
//!
//! - [`stdio`]: newline-delimited JSON-RPC on stdin/stdout (one MCP session);
//! - [`http`]: Streamable HTTP MCP at `/mcp` and plain JSON-RPC at `/rpc`,
//!   on hyper, with origin checks, bearer tokens and limits;
//! - [`calls`]: what both share — the long requests they run beside their
//!   reading, the places of calls in flight, draining and the grace period;
//! - [`listing`]: a list request while the start's components still load
//!   waits for them (bounded), on either transport.

pub mod calls;
pub mod http;
pub mod listing;
pub mod stdio;
