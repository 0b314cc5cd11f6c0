//! `prompts/list` and `prompts/get`. A caller sees and gets only the
//! prompts its token's `prompts` list; a prompt runs in its component like
//! a call, read-only, after the runtime checked its arguments.

use serde_json::Value;

use super::context::Ctx;
use super::model::prompts::GetParams;
use super::model::{ListParams, Page};
use super::offers::{self, with_cache_hints};
use super::request::{Answer, cursor_after, page, read_cursor};
use crate::offer::OfferRequest;
use crate::protocol::jsonrpc::ErrorObject;

/// Prompts per page.
pub const PAGE_SIZE: usize = 50;

/// `prompts/list`: the prompts the caller may see, in name order.
pub fn list(ctx: &Ctx<'_>, params: &ListParams) -> Result<Value, ErrorObject> {
    let after = read_cursor(params.cursor.as_deref(), "prompt:")?;
    let catalog = ctx.server().runtime.catalog();
    let visible = catalog
        .prompts()
        .map(|(p, _)| p)
        .filter(|p| ctx.allows_prompt(&p.name))
        .filter(|p| after.as_deref().is_none_or(|a| p.name.as_str() > a));
    let (prompts, more) = page(visible, PAGE_SIZE);
    let result = Page {
        key: "prompts",
        next_cursor: more
            .then(|| {
                prompts
                    .last()
                    .map(|last| cursor_after("prompt:", &last.name))
            })
            .flatten(),
        items: prompts,
    };
    Ok(with_cache_hints(
        ctx,
        result.into_map(),
        super::lifecycle::LIST_TTL_MS,
    ))
}

/// `prompts/get`.
pub async fn get(ctx: &Ctx<'_>, params: GetParams) -> Answer {
    let GetParams {
        name,
        arguments,
        retry,
    } = params;
    // A prompt the token may not see does not exist for this client.
    if !ctx.allows_prompt(&name) {
        let visible: Vec<String> = ctx
            .server()
            .runtime
            .catalog()
            .prompts()
            .filter(|(p, _)| ctx.allows_prompt(&p.name))
            .map(|(p, _)| p.name.clone())
            .collect();
        return Answer::Error(ErrorObject::invalid_params(format!(
            "unknown prompt {name:?}; the prompts are: {}",
            if visible.is_empty() {
                "none".into()
            } else {
                visible.join(", ")
            }
        )));
    }
    let request = OfferRequest::Prompt { name, arguments };
    offers::run(ctx, &retry, request, |_, result| result).await
}
