//! `completion/complete`: values for an argument of a prompt or a variable
//! of a resource template, from the component that serves it (at most 100;
//! a component that completes nothing answers none). A caller completes
//! only what its token lets it use.

use super::context::Ctx;
use super::model::completion::{CompleteParams, Reference, bad_ref};
use super::offers;
use super::request::Answer;
use crate::offer::{CompletionRef, OfferRequest};
use crate::protocol::jsonrpc::ErrorObject;

/// The request's `ref`, `argument` and `context`, checked in that order.
fn request_of(ctx: &Ctx<'_>, params: &CompleteParams) -> Result<OfferRequest, ErrorObject> {
    let reference = match &params.reference {
        Reference::Prompt(name) => {
            if !ctx.allows_prompt(name) {
                return Err(ErrorObject::invalid_params(format!(
                    "unknown prompt {name:?}"
                )));
            }
            CompletionRef::Prompt(name.clone())
        }
        Reference::Template(uri) => {
            if !ctx.allows_resource(uri, None) {
                return Err(ErrorObject::invalid_params(format!(
                    "unknown resource template {uri:?}"
                )));
            }
            CompletionRef::Template(uri.clone())
        }
        Reference::Missing => return Err(bad_ref()),
    };
    Ok(OfferRequest::Complete {
        reference,
        argument: params.argument_name()?.to_string(),
        value: params.argument.value.clone(),
        context: params.context.clone(),
    })
}

/// `completion/complete`.
pub async fn complete(ctx: &Ctx<'_>, params: CompleteParams) -> Answer {
    match request_of(ctx, &params) {
        Ok(request) => offers::run(ctx, &params.retry, request, |_, result| result).await,
        Err(error) => Answer::Error(error),
    }
}
