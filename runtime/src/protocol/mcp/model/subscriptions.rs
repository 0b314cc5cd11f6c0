//! Params of `subscriptions/listen` (2026-07-28): which list changes the
//! client wants, and the resources whose updates it wants.

use serde::Deserialize;
use serde_json::Value;

use super::{Params, flag};

/// `subscriptions/listen`.
#[derive(Debug, Default, Deserialize)]
pub struct ListenParams {
    #[serde(default, deserialize_with = "notifications")]
    pub notifications: Notifications,
}
impl Params for ListenParams {}

/// What the client asks to hear (a flag is on only when `true`; URIs that
/// are not strings are left out).
#[derive(Debug, Default, Deserialize)]
pub struct Notifications {
    #[serde(rename = "toolsListChanged", default, deserialize_with = "flag")]
    pub tools_list_changed: bool,
    #[serde(rename = "resourcesListChanged", default, deserialize_with = "flag")]
    pub resources_list_changed: bool,
    #[serde(rename = "promptsListChanged", default, deserialize_with = "flag")]
    pub prompts_list_changed: bool,
    #[serde(rename = "resourceSubscriptions", default, deserialize_with = "uris")]
    pub resource_subscriptions: Vec<String>,
}

fn notifications<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Notifications, D::Error> {
    let value = Value::deserialize(d)?;
    Ok(Notifications::deserialize(value).unwrap_or_default())
}

fn uris<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::Array(uris) => uris
            .into_iter()
            .filter_map(|uri| match uri {
                Value::String(uri) => Some(uri),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    })
}
