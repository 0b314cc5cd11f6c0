//! Params of `initialize` and `logging/setLevel`, the client's
//! capabilities (declared at `initialize`, or per request in 2026-07-28),
//! and the per-request `_meta` of 2026-07-28, read without copying the
//! params around it; the results of `initialize` and `server/discover`
//! (the server's capabilities come from the method table, as JSON).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Params, object, text};

/// `initialize`.
#[derive(Debug, Deserialize)]
pub struct InitializeParams {
    #[serde(rename = "protocolVersion")]
    pub protocol_version: String,
    #[serde(default, deserialize_with = "capabilities")]
    pub capabilities: ClientCapabilities,
}
impl Params for InitializeParams {
    const REQUIRED: &'static [(&'static str, &'static str)] = &[("protocolVersion", "a string")];
}

/// `logging/setLevel`: the level's name (checked by the handler).
#[derive(Debug, Deserialize)]
pub struct SetLevelParams {
    #[serde(default, deserialize_with = "text")]
    pub level: Option<String>,
}
impl Params for SetLevelParams {}

/// What a client declares it can do; each capability an object (anything
/// else is not declared).
#[derive(Debug, Default, Clone, Deserialize)]
pub struct ClientCapabilities {
    #[serde(default, deserialize_with = "object")]
    pub elicitation: Option<Map<String, Value>>,
    #[serde(default, deserialize_with = "object")]
    pub sampling: Option<Map<String, Value>>,
    #[serde(default, deserialize_with = "object")]
    pub roots: Option<Map<String, Value>>,
    #[serde(default, deserialize_with = "object")]
    pub extensions: Option<Map<String, Value>>,
}

/// Capabilities that are not an object declare nothing.
pub fn capabilities<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<ClientCapabilities, D::Error> {
    let value = Value::deserialize(d)?;
    Ok(ClientCapabilities::deserialize(value).unwrap_or_default())
}

/// The params of a 2026-07-28 request as far as its `_meta` goes (the
/// rest is not read, nor copied).
#[derive(Debug, Default, Deserialize)]
pub struct WithStatelessMeta {
    #[serde(rename = "_meta", default, deserialize_with = "stateless_meta")]
    pub meta: StatelessMeta,
}

/// The 2026-07-28 `_meta` keys, read leniently (what is malformed reads
/// as absent, and the request is refused for it: `request::read_meta`).
#[derive(Debug, Default, Deserialize)]
pub struct StatelessMeta {
    #[serde(
        rename = "io.modelcontextprotocol/protocolVersion",
        default,
        deserialize_with = "text"
    )]
    pub protocol_version: Option<String>,
    #[serde(
        rename = "io.modelcontextprotocol/clientCapabilities",
        default,
        deserialize_with = "object"
    )]
    pub client_capabilities: Option<Map<String, Value>>,
    /// Absent or null: none; anything else is checked as a level.
    #[serde(rename = "io.modelcontextprotocol/logLevel", default)]
    pub log_level: Option<Value>,
}

fn stateless_meta<'de, D: serde::Deserializer<'de>>(d: D) -> Result<StatelessMeta, D::Error> {
    let value = Value::deserialize(d)?;
    Ok(StatelessMeta::deserialize(value).unwrap_or_default())
}

/// The server as it names itself (`Implementation`).
#[derive(Debug, Serialize)]
pub struct Implementation {
    pub name: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<&'static str>,
    pub version: &'static str,
}

impl Implementation {
    /// airlock, this build.
    pub const AIRLOCK: Implementation = Implementation {
        name: "airlock",
        title: Some("airlock"),
        version: env!("CARGO_PKG_VERSION"),
    };
}

/// What `initialize` answers.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    pub protocol_version: &'static str,
    pub capabilities: Value,
    pub server_info: Implementation,
    pub instructions: &'static str,
}

/// What `server/discover` answers (2026-07-28): the revisions served, the
/// capabilities, and how long a client may keep it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoverResult {
    pub supported_versions: Vec<&'static str>,
    pub capabilities: Value,
    pub instructions: &'static str,
    pub ttl_ms: u64,
    pub cache_scope: &'static str,
}
