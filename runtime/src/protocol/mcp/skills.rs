//! The MCP Skills extension (`io.modelcontextprotocol/skills`, SEP-2640):
//! `skills/list`, `skills/get`, `resources/directory/read` over the skills'
//! folders, and `resources/read` of a skill's file — all answered from the
//! catalog's memory (the files were read from the component and checked at
//! load), so no guest runs; each read is still counted, logged and audited
//! like a read that ran. A token sees a skill when its `resources` name the
//! skill's URI (`skill://…/SKILL.md`) or, for one file, that file's URI.

use std::time::Instant;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value, json};

use super::context::Ctx;
use super::model::skills::{DirectoryParams, GetParams};
use super::model::{ListParams, Page};
use super::offers::{resource_not_found, with_cache_hints};
use super::request::{Answer, cursor_after, page, read_cursor};
use crate::catalog::skills::DIRECTORY_MIME;
use crate::catalog::{Catalog, Component, Skill, SkillFile};
use crate::protocol::jsonrpc::ErrorObject;

/// The extension's identifier, under `capabilities.extensions`.
pub const EXTENSION: &str = "io.modelcontextprotocol/skills";
/// Skills per page of `skills/list`.
pub const PAGE_SIZE: usize = 50;

/// What `initialize` and `server/discover` announce under
/// `capabilities.extensions`: `directoryRead` when it is served.
pub fn announced(directory_read: bool) -> Value {
    if directory_read {
        json!({ "directoryRead": true })
    } else {
        json!({})
    }
}

/// Every skill served, in URI order, with its component.
fn skills(catalog: &Catalog) -> Vec<(&Skill, &Component)> {
    let mut skills: Vec<(&Skill, &Component)> = catalog
        .components()
        .iter()
        .flat_map(|c| c.offers().skills.iter().map(move |s| (s, &**c)))
        .collect();
    skills.sort_by(|a, b| a.0.uri.cmp(&b.0.uri));
    skills
}

/// Whether the caller may see `skill` (all of it).
fn sees(ctx: &Ctx<'_>, skill: &Skill) -> bool {
    ctx.allows_resource(&skill.uri, Some(&skill.uri))
}

/// `skills/list`: every skill the caller may see, each a full entry.
pub fn list(ctx: &Ctx<'_>, params: &ListParams) -> Result<Value, ErrorObject> {
    let after = read_cursor(params.cursor.as_deref(), "skill:")?;
    let catalog = ctx.server().runtime.catalog();
    let served = skills(&catalog);
    let visible = served
        .iter()
        .map(|(s, _)| *s)
        .filter(|s| sees(ctx, s))
        .filter(|s| after.as_deref().is_none_or(|a| s.uri.as_str() > a));
    let (listed, more) = page(visible, PAGE_SIZE);
    let result = Page {
        key: "skills",
        items: listed.iter().map(|s| s.entry()).collect(),
        next_cursor: more
            .then(|| listed.last().map(|s| cursor_after("skill:", &s.uri)))
            .flatten(),
    };
    Ok(with_cache_hints(
        ctx,
        result.into_map(),
        super::lifecycle::LIST_TTL_MS,
    ))
}

/// `skills/get`: the entry of the skill whose `SKILL.md` is `uri`.
pub fn get(ctx: &Ctx<'_>, params: &GetParams) -> Result<Value, ErrorObject> {
    let catalog = ctx.server().runtime.catalog();
    let served = skills(&catalog);
    let skill = served
        .iter()
        .map(|(s, _)| *s)
        .find(|s| s.uri == params.uri && sees(ctx, s))
        .ok_or_else(|| {
            ErrorObject::invalid_params(format!(
                "No skill is served at {} (skills/list says which are; a skill's URI is that \
                 of its SKILL.md)",
                crate::protocol::jsonrpc::shorten(&params.uri, 2048)
            ))
        })?;
    let mut result = Map::new();
    result.insert("skill".into(), skill.entry());
    Ok(with_cache_hints(ctx, result, super::lifecycle::LIST_TTL_MS))
}

/// `resources/directory/read`: the direct children of a skill's root or
/// of one of its folders — files as their resources, folders as directory
/// resources. One page: a skill holds at most 512 files.
pub fn directory(ctx: &Ctx<'_>, params: &DirectoryParams) -> Result<Value, ErrorObject> {
    let uri = params.uri.as_str();
    let catalog = ctx.server().runtime.catalog();
    let served = skills(&catalog);
    let Some(skill) = served
        .iter()
        .map(|(s, _)| *s)
        .find(|s| s.is_directory(uri) && sees(ctx, s))
    else {
        return Err(ErrorObject::invalid_params(format!(
            "{} is not a directory resource: a skill's root (skill://<path>, without /SKILL.md) \
             or one of its folders is",
            crate::protocol::jsonrpc::shorten(uri, 2048)
        )));
    };
    let prefix = format!("{uri}/");
    let mut folders: Vec<&str> = Vec::new();
    let mut children = Vec::new();
    let resources: Vec<_> = skill.resources().collect();
    for (file, resource) in skill.files.iter().zip(&resources) {
        let Some(rest) = file.uri.strip_prefix(&prefix) else {
            continue;
        };
        match rest.split_once('/') {
            None => children.push(resource.to_mcp()),
            Some((folder, _)) if !folders.contains(&folder) => {
                folders.push(folder);
                children.push(json!({
                    "uri": format!("{prefix}{folder}"),
                    "name": folder,
                    "mimeType": DIRECTORY_MIME,
                }));
            }
            Some(_) => {}
        }
    }
    Ok(json!({ "resources": children }))
}

/// `resources/read` of a skill's file, when `uri` is one: its bytes from
/// memory (text, or base64 when they are not UTF-8), audited; `None` when
/// `uri` is no skill's file (the component's own `read` answers it).
pub fn read(ctx: &Ctx<'_>, uri: &str) -> Option<Answer> {
    let started = Instant::now();
    let catalog = ctx.server().runtime.catalog();
    let (skill, file, component) = catalog.components().iter().find_map(|c| {
        let (skill, file) = c.offers().skill_file(uri)?;
        Some((skill, file, c))
    })?;
    if !ctx.allows_resource(uri, Some(&skill.uri)) {
        let message = format!(
            "Resource not found: no resource {uri:?} (resources/list and \
             resources/templates/list say what exists)"
        );
        return Some(Answer::Error(resource_not_found(ctx, uri, message)));
    }
    let contents = contents(file);
    let label = format!("resource:{uri}");
    let bytes = (uri.len(), file.bytes.len());
    let runtime = &ctx.server().runtime;
    runtime.record_answered(ctx.caller(), &label, &component.digest, started, bytes);
    let mut result = Map::new();
    result.insert("contents".into(), json!([contents]));
    // Fixed until the component is reloaded: cached like a list.
    Some(Answer::Result(with_cache_hints(
        ctx,
        result,
        super::lifecycle::LIST_TTL_MS,
    )))
}

/// One file as `resources/read` contents.
fn contents(file: &SkillFile) -> Value {
    let mut contents = json!({ "uri": file.uri, "mimeType": file.mime_type });
    match std::str::from_utf8(&file.bytes) {
        Ok(text) if !file.mime_type.starts_with("image/") => contents["text"] = text.into(),
        _ => contents["blob"] = STANDARD.encode(&file.bytes).into(),
    }
    contents
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directory_read_is_announced_with_the_extension() {
        assert_eq!(announced(true), json!({"directoryRead": true}));
        assert_eq!(announced(false), json!({}));
    }
}
