//! The unsandboxed floor of the benchmarks: the bench component's
//! `add(a, b)` as a plain Rust function, served by the official MCP Rust
//! SDK (`rmcp`) over Streamable HTTP in the configuration its examples
//! recommend (axum, `StreamableHttpService` with the default config and a
//! `LocalSessionManager`; TCP_NODELAY set). `cargo xtask bench` measures it beside
//! `airlock serve` with the same load generator, rounds interleaved.
//!
//! `airlock-floor` listens on a free loopback port and prints
//! `listening on http://ADDR/mcp` on stderr, as `airlock serve` does.

use std::sync::Arc;

use axum::serve::ListenerExt;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::transport::streamable_http_server::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::{ServerHandler, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

#[derive(Serialize, JsonSchema)]
struct Sum {
    result: i64,
}

#[derive(Clone)]
struct Floor {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Floor {
    fn new() -> Self {
        Self {
            tool_router: Self::tool_router(),
        }
    }

    /// The same tool as the bench component's.
    #[tool(description = "Adds two integers")]
    fn add(&self, Parameters(AddArgs { a, b }): Parameters<AddArgs>) -> Json<Sum> {
        Json(Sum {
            result: a.wrapping_add(b),
        })
    }
}

// The router built once per session (the macro's default builds one per
// request); `get_info` is the macro's, announcing the tools.
#[tool_handler(router = self.tool_router)]
impl ServerHandler for Floor {}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let service = StreamableHttpService::new(
        || Ok(Floor::new()),
        Arc::new(LocalSessionManager::default()),
        Default::default(),
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    eprintln!("listening on http://{}/mcp", listener.local_addr()?);
    // As `airlock serve` does: without it, the second write of an SSE
    // answer waits for the client's delayed ACK (40 ms on Linux).
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, router).await
}
