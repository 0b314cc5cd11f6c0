//! `completion/complete`: values for an argument of a prompt or a variable
//! of a resource template, from the component that serves it (at most 100;
//! a component that completes nothing answers none). A caller completes
//! only what its token lets it use.

use serde_json::Value;

use super::context::Ctx;
use super::offers;
use super::prompts::string_arguments;
use super::request::{Answer, required_str};
use crate::offer::{CompletionRef, OfferRequest};
use crate::protocol::jsonrpc::ErrorObject;

/// The request's `ref`, `argument` and `context`.
fn request_of(ctx: &Ctx<'_>, params: &Value) -> Result<OfferRequest, ErrorObject> {
    let reference = params.get("ref").unwrap_or(&Value::Null);
    let reference = match reference.get("type").and_then(Value::as_str) {
        Some("ref/prompt") => {
            let name = required_str(reference, "name", "the prompt whose argument to complete")?;
            if !ctx.allows_prompt(name) {
                return Err(ErrorObject::invalid_params(format!(
                    "unknown prompt {name:?}"
                )));
            }
            CompletionRef::Prompt(name.to_string())
        }
        Some("ref/resource") => {
            let uri = required_str(reference, "uri", "the resource template to complete")?;
            if !ctx.allows_resource(uri, None) {
                return Err(ErrorObject::invalid_params(format!(
                    "unknown resource template {uri:?}"
                )));
            }
            CompletionRef::Template(uri.to_string())
        }
        _ => {
            return Err(ErrorObject::invalid_param(
                "ref",
                "ref must be {\"type\": \"ref/prompt\", \"name\": …} or {\"type\": \
                 \"ref/resource\", \"uri\": …}",
            ));
        }
    };
    let argument = params.get("argument").unwrap_or(&Value::Null);
    let name = required_str(argument, "name", "the argument to complete")?;
    let value = argument.get("value").and_then(Value::as_str).unwrap_or("");
    let context = match params.get("context") {
        Some(context) => string_arguments(context, "arguments")?,
        None => Vec::new(),
    };
    Ok(OfferRequest::Complete {
        reference,
        argument: name.to_string(),
        value: value.to_string(),
        context,
    })
}

/// `completion/complete`.
pub async fn complete(ctx: &Ctx<'_>, params: &Value) -> Answer {
    match request_of(ctx, params) {
        Ok(request) => offers::run(ctx, params, request, |_, result| result).await,
        Err(error) => Answer::Error(error),
    }
}
