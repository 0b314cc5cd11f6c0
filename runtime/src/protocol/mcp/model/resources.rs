//! Params of `resources/read`, `resources/subscribe` and
//! `resources/unsubscribe` (a resource by URI); the lists take a
//! [`super::ListParams`].

use serde::Deserialize;

use super::{Params, Retry};

/// `resources/read`: the URI, and a 2026-07-28 retry.
#[derive(Debug, Deserialize)]
pub struct ReadParams {
    pub uri: String,
    #[serde(flatten)]
    pub retry: Retry,
}
impl Params for ReadParams {
    const REQUIRED: &'static [(&'static str, &'static str)] = &[("uri", "the resource to read")];
}

/// `resources/subscribe`.
#[derive(Debug, Deserialize)]
pub struct SubscribeParams {
    pub uri: String,
}
impl Params for SubscribeParams {
    const REQUIRED: &'static [(&'static str, &'static str)] =
        &[("uri", "the resource to subscribe to")];
}

/// `resources/unsubscribe`.
#[derive(Debug, Deserialize)]
pub struct UnsubscribeParams {
    pub uri: String,
}
impl Params for UnsubscribeParams {
    const REQUIRED: &'static [(&'static str, &'static str)] =
        &[("uri", "the resource to unsubscribe from")];
}
