//! `resources/list`, `resources/templates/list`, `resources/read` and, in
//! the revisions with sessions, `resources/subscribe` and
//! `resources/unsubscribe` (2026-07-28 subscribes through
//! `subscriptions/listen`). A caller sees and reads only what its token's
//! `resources` list; a read runs in the component like a call, read-only,
//! except a skill's file's, which [`super::skills`] answers from memory.

use serde_json::Value;

use super::context::Ctx;
use super::model::resources::{ReadParams, SubscribeParams, UnsubscribeParams};
use super::model::{EmptyResult, ListParams, Page, to_value};
use super::offers::{self, resource_not_found, with_cache_hints};
use super::request::{Answer, cursor_after, page, read_cursor};
use crate::offer::OfferRequest;
use crate::protocol::jsonrpc::ErrorObject;

/// Resources (and templates) per page.
pub const PAGE_SIZE: usize = 50;

/// `resources/list`: the resources the caller may see, in URI order.
pub fn list(ctx: &Ctx<'_>, params: &ListParams) -> Result<Value, ErrorObject> {
    let after = read_cursor(params.cursor.as_deref(), "resource:")?;
    let catalog = ctx.server().runtime.catalog();
    let visible = catalog
        .resources()
        .filter(|(r, c)| {
            let skill = c.offers().skill_file(&r.uri).map(|(s, _)| s.uri.as_str());
            ctx.allows_resource(&r.uri, skill)
        })
        .map(|(r, _)| r)
        .filter(|r| after.as_deref().is_none_or(|a| r.uri.as_str() > a));
    let (resources, more) = page(visible, PAGE_SIZE);
    let result = Page {
        key: "resources",
        next_cursor: more
            .then(|| {
                resources
                    .last()
                    .map(|last| cursor_after("resource:", &last.uri))
            })
            .flatten(),
        items: resources,
    };
    Ok(with_cache_hints(
        ctx,
        result.into_map(),
        super::lifecycle::LIST_TTL_MS,
    ))
}

/// `resources/templates/list`: the templates the caller may see.
pub fn templates(ctx: &Ctx<'_>, params: &ListParams) -> Result<Value, ErrorObject> {
    let after = read_cursor(params.cursor.as_deref(), "template:")?;
    let catalog = ctx.server().runtime.catalog();
    let visible = catalog
        .templates()
        .map(|(t, _)| &t.info)
        .filter(|t| ctx.allows_resource(&t.uri_template, None))
        .filter(|t| after.as_deref().is_none_or(|a| t.uri_template.as_str() > a));
    let (templates, more) = page(visible, PAGE_SIZE);
    let result = Page {
        key: "resourceTemplates",
        next_cursor: more
            .then(|| {
                let last = templates.last()?;
                Some(cursor_after("template:", &last.uri_template))
            })
            .flatten(),
        items: templates,
    };
    Ok(with_cache_hints(
        ctx,
        result.into_map(),
        super::lifecycle::LIST_TTL_MS,
    ))
}

/// Whether the caller may read `uri`, a resource or a match of a template
/// served now: `Err` is the not-found answer (a resource the token may not
/// see does not exist for it).
fn visible(ctx: &Ctx<'_>, uri: &str) -> Result<(), ErrorObject> {
    let catalog = ctx.server().runtime.catalog();
    let found = catalog
        .resource_for(uri)
        .filter(|(_, t)| ctx.allows_resource(uri, t.map(|t| t.info.uri_template.as_str())));
    match found {
        Some(_) => Ok(()),
        None => Err(resource_not_found(
            ctx,
            uri,
            format!(
                "Resource not found: no resource {uri:?} (resources/list and \
                 resources/templates/list say what exists)"
            ),
        )),
    }
}

/// `resources/read`: runs the component's `read` in a fresh instance.
pub async fn read(ctx: &Ctx<'_>, params: ReadParams) -> Answer {
    let ReadParams { uri, retry } = params;
    // A skill's file is the runtime's to answer, from memory.
    if let Some(answer) = super::skills::read(ctx, &uri) {
        return answer;
    }
    if let Err(error) = visible(ctx, &uri) {
        return Answer::Error(error);
    }
    let request = OfferRequest::Read { uri };
    // A read's contents may change at any time: cached for no time.
    offers::run(ctx, &retry, request, |ctx, result| match result {
        Value::Object(result) => with_cache_hints(ctx, result, 0),
        other => other,
    })
    .await
}

/// `resources/subscribe`: `notifications/resources/updated` for `uri` on
/// the session's standing stream whenever its component says it changed.
pub fn subscribe(ctx: &Ctx<'_>, params: &SubscribeParams) -> Result<Value, ErrorObject> {
    visible(ctx, &params.uri)?;
    if !ctx.session.subscribe(&params.uri) {
        return Err(ErrorObject::invalid_params(format!(
            "the session holds {} subscriptions, the most it may; unsubscribe from one first",
            super::session::MAX_SUBSCRIPTIONS
        )));
    }
    Ok(to_value(EmptyResult {}))
}

/// `resources/unsubscribe`.
pub fn unsubscribe(ctx: &Ctx<'_>, params: &UnsubscribeParams) -> Result<Value, ErrorObject> {
    ctx.session.unsubscribe(&params.uri);
    Ok(to_value(EmptyResult {}))
}
