//! How a client meets the server: `initialize` (sessions) or
//! `server/discover` (2026-07-28), the server's identity on every
//! stateless result, and the session's log level.

use std::sync::atomic::Ordering;

use serde_json::Value;

use super::context::Ctx;
use super::model::lifecycle::{
    DiscoverResult, Implementation, InitializeParams, InitializeResult, SetLevelParams,
};
use super::model::{self, EmptyResult, to_value};
use super::request::{Client, bad_level};
use super::revision::Revision;
use super::session::Session;
use crate::protocol::jsonrpc::ErrorObject;
use crate::tool::Level;

/// How long clients may cache `tools/list` and `server/discover`.
pub const LIST_TTL_MS: u64 = 60_000;
const INSTRUCTIONS: &str = "Tools run in a WebAssembly sandbox with only the capabilities the \
                            operator granted; a destructive tool may ask you to confirm.";

/// `initialize`: negotiates the session's revision and reads what the
/// client can do; `capabilities` are the server's in that revision.
pub fn initialize(
    session: &Session,
    params: Value,
    capabilities: impl FnOnce(Revision) -> Value,
) -> Result<Value, ErrorObject> {
    let params: InitializeParams = model::parse(params)?;
    let revision = Revision::negotiate(&params.protocol_version);
    let client = Client::from_capabilities(&params.capabilities);
    if !session.initialized(revision, client) {
        return Err(ErrorObject::invalid_request(
            "the session is already initialized",
        ));
    }
    Ok(to_value(InitializeResult {
        protocol_version: revision.as_str(),
        capabilities: capabilities(revision),
        server_info: Implementation::AIRLOCK,
        instructions: INSTRUCTIONS,
    }))
}

/// `server/discover` (2026-07-28), announcing `capabilities`.
pub fn discover(capabilities: Value) -> Value {
    to_value(DiscoverResult {
        supported_versions: Revision::ALL.iter().map(|r| r.as_str()).collect(),
        capabilities,
        instructions: INSTRUCTIONS,
        ttl_ms: LIST_TTL_MS,
        cache_scope: "public",
    })
}

/// `logging/setLevel`: the session's lowest level of guest log messages.
pub fn set_level(ctx: &Ctx<'_>, params: &SetLevelParams) -> Result<Value, ErrorObject> {
    let name = params.level.as_deref().unwrap_or("");
    let level = Level::parse(name).ok_or_else(|| bad_level("level"))?;
    ctx.session.level().store(level as u8, Ordering::Relaxed);
    Ok(to_value(EmptyResult {}))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn discovery_names_the_revisions_and_caching() {
        let d = discover(json!({"tools": {}}));
        assert_eq!(d["supportedVersions"][0], "2026-07-28");
        assert_eq!(d["capabilities"], json!({"tools": {}}));
        assert!(d["ttlMs"].as_u64().is_some());
    }
}
