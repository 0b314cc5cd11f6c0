//! Params of the MCP Skills extension's methods: `skills/get` (a skill by
//! the URI of its `SKILL.md`) and `resources/directory/read` (a directory
//! resource, a page of its children); `skills/list` takes a
//! [`super::ListParams`].

use serde::Deserialize;

use super::Params;

/// `skills/get`.
#[derive(Debug, Deserialize)]
pub struct GetParams {
    pub uri: String,
}
impl Params for GetParams {
    const REQUIRED: &'static [(&'static str, &'static str)] =
        &[("uri", "the URI of the skill's SKILL.md")];
}

/// `resources/directory/read`.
#[derive(Debug, Deserialize)]
pub struct DirectoryParams {
    pub uri: String,
    #[serde(flatten)]
    pub page: super::ListParams,
}
impl Params for DirectoryParams {
    const REQUIRED: &'static [(&'static str, &'static str)] =
        &[("uri", "the directory resource to read")];
}
