//! A resource read, prompt or completion as an [`Entry`]: what is its own
//! — the component that serves it (by URI, template or prompt name), its
//! arguments checked against what the component declares, its grant (the
//! component's, narrowed to read-only, without network unless the
//! policy's `offers-network` grants it, asking the client only what its
//! `ask` grants), its names in the metrics and the audit log. The rest is
//! the one path's ([`super::prepared`]), as for a tool call.
//!
//! Which caller may see what (a token's `resources` and `prompts`) is the
//! protocol's to check before it prepares, as for tools.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Instant;

use super::entry::{Entering, Entry, Outcome};
use super::prepared::{self, Prepared};
use super::{CallError, Caller, Setting, record};
use crate::catalog::{Catalog, Component, Places};
use crate::cordon::wire::{Done, Work};
use crate::lanes::Pace;
use crate::offer::{Completion, CompletionRef, OfferRequest, Offered};
use crate::policy::{self, Grant, Policy};
use crate::sandbox::{OfferOutcome, Ran, RunError, Teardown};
use crate::tool::Hints;

const OFFERS_READ_ONLY: &str = "reads, prompts and completions run read-only";
const OFFERS_OFFLINE: &str = "the component's offers-network is not set";

/// The grant of `component`'s reads, prompts and completions: its
/// component section's (tool sections do not apply), narrowed as for a
/// read-only tool — folders read-only, HTTP only GET, HEAD and OPTIONS —,
/// network only with `offers-network = true`; requests to the client as
/// the section's `ask` grants (asking changes nothing: a prompt may ask
/// the user what to write about).
pub fn grant_for_offers(policy: &Policy, component: &Component) -> Grant {
    let settings = policy.settings_for(&component.name, "");
    let hints = Hints {
        read_only: true,
        open_world: policy.offers_network(&component.name),
        ..Hints::default()
    };
    let mut grant = policy::effective(&settings, hints);
    for narrowing in &mut grant.narrowings {
        narrowing.reason = match narrowing.reason.as_str() {
            "tool is read-only" => OFFERS_READ_ONLY.to_string(),
            "tool is not open-world" => OFFERS_OFFLINE.to_string(),
            other => other.to_string(),
        };
    }
    grant
}

/// What the listings call what a request is for, when it is served: the
/// resource's URI (a template's text when a template matched), the
/// prompt's name, what a completion completes. Only declared names: the
/// metrics' labels never take a client's text.
fn declared_label(catalog: &Catalog, request: &OfferRequest) -> Option<String> {
    match request {
        OfferRequest::Read { uri } => {
            let (_, template) = catalog.resource_for(uri)?;
            Some(format!(
                "resource:{}",
                template.map_or(uri.as_str(), |t| t.info.uri_template.as_str())
            ))
        }
        OfferRequest::Prompt { name, .. } => {
            catalog.prompt(name)?;
            Some(format!("prompt:{name}"))
        }
        OfferRequest::Complete { reference, .. } => {
            match reference {
                CompletionRef::Prompt(name) => drop(catalog.prompt(name)?),
                CompletionRef::Template(text) => drop(catalog.template(text)?),
            }
            Some(reference.label())
        }
    }
}

/// How the audit log names a request: with the URI read.
fn audit_label(request: &OfferRequest) -> String {
    match request {
        OfferRequest::Read { uri } => format!("resource:{uri}"),
        OfferRequest::Prompt { name, .. } => format!("prompt:{name}"),
        OfferRequest::Complete { reference, .. } => reference.label(),
    }
}

/// What the audit log counts as a request's bytes in: the URI, the
/// arguments' names and values.
fn size_of(request: &OfferRequest) -> usize {
    let pairs =
        |list: &[(String, String)]| -> usize { list.iter().map(|(k, v)| k.len() + v.len()).sum() };
    match request {
        OfferRequest::Read { uri } => uri.len(),
        OfferRequest::Prompt { arguments, .. } => pairs(arguments),
        OfferRequest::Complete { value, context, .. } => value.len() + pairs(context),
    }
}

/// Names for a message saying what exists (the first 20).
fn listed<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let names: Vec<&str> = names.collect();
    match names.len() {
        0 => "none".into(),
        n if n > 20 => format!("{}, … ({n} in all)", names[..20].join(", ")),
        _ => names.join(", "),
    }
}

/// The component a request goes to, once its arguments are checked.
fn find(catalog: &Catalog, request: &OfferRequest) -> Result<Arc<Component>, CallError> {
    match request {
        OfferRequest::Read { uri } => catalog
            .resource_for(uri)
            .map(|(c, _)| c.clone())
            .ok_or_else(|| {
                CallError::NotFound(format!(
                    "Resource not found: no resource {uri:?} (resources/list and \
                     resources/templates/list say what exists)"
                ))
            }),
        OfferRequest::Prompt { name, arguments } => {
            let Some((prompt, component)) = catalog.prompt(name) else {
                return Err(CallError::NotFound(format!(
                    "unknown prompt {name:?}; the prompts are: {}",
                    listed(catalog.prompts().map(|(p, _)| p.name.as_str()))
                )));
            };
            let names = || listed(prompt.arguments.iter().map(|a| a.name.as_str()));
            if let Some((unknown, _)) = arguments
                .iter()
                .find(|(k, _)| !prompt.arguments.iter().any(|a| &a.name == k))
            {
                return Err(CallError::InvalidParams(format!(
                    "prompt {name:?} has no argument {unknown:?}; its arguments: {}",
                    names()
                )));
            }
            let missing: Vec<&str> = prompt
                .arguments
                .iter()
                .filter(|a| a.required && !arguments.iter().any(|(k, _)| k == &a.name))
                .map(|a| a.name.as_str())
                .collect();
            if !missing.is_empty() {
                return Err(CallError::InvalidParams(format!(
                    "prompt {name:?} needs the argument{} {}: add {} to \"arguments\"",
                    if missing.len() > 1 { "s" } else { "" },
                    missing.join(", "),
                    missing
                        .iter()
                        .map(|m| format!("\"{m}\": \"…\""))
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
            Ok(component.clone())
        }
        OfferRequest::Complete {
            reference,
            argument,
            ..
        } => {
            let (component, known): (&Arc<Component>, Vec<&str>) = match reference {
                CompletionRef::Prompt(name) => {
                    let (prompt, component) = catalog.prompt(name).ok_or_else(|| {
                        CallError::NotFound(format!(
                            "unknown prompt {name:?}; the prompts are: {}",
                            listed(catalog.prompts().map(|(p, _)| p.name.as_str()))
                        ))
                    })?;
                    (
                        component,
                        prompt.arguments.iter().map(|a| a.name.as_str()).collect(),
                    )
                }
                CompletionRef::Template(text) => {
                    let (template, component) = catalog.template(text).ok_or_else(|| {
                        CallError::NotFound(format!(
                            "unknown resource template {text:?}; the templates are: {}",
                            listed(
                                catalog
                                    .templates()
                                    .map(|(t, _)| t.info.uri_template.as_str())
                            )
                        ))
                    })?;
                    (component, template.parsed.variables().collect())
                }
            };
            if !known.contains(&argument.as_str()) {
                return Err(CallError::InvalidParams(format!(
                    "{} has no argument {argument:?}; its arguments: {}",
                    match reference {
                        CompletionRef::Prompt(p) => format!("prompt {p:?}"),
                        CompletionRef::Template(t) => format!("resource template {t:?}"),
                    },
                    listed(known.into_iter())
                )));
            }
            Ok(component.clone())
        }
    }
}

/// Everything that can be checked before the guest runs, and its place
/// under the component's concurrency limit (or in the queue before it). A
/// refusal is recorded here (metrics, log, audit); the outcome of one that
/// runs when it ends.
pub fn prepare(
    setting: &Setting<'_>,
    caller: Caller,
    request: OfferRequest,
) -> Result<Prepared<Offer>, CallError> {
    let started = Instant::now();
    let label = declared_label(setting.catalog, &request);
    let bytes_in = size_of(&request);
    let component = match find(setting.catalog, &request) {
        Ok(component) => component,
        Err(err) => {
            let audited = || (Cow::Owned(audit_label(&request)), bytes_in);
            let (log, kind) = (setting.audit, record::Ended::of(&err));
            let label = label.as_deref();
            record::refused_before(log, &caller, label, None, kind, started, audited);
            return Err(err);
        }
    };
    let grant = grant_for_offers(setting.policy, &component);
    let offer = Offer {
        component,
        request,
        label: label.unwrap_or_default(),
    };
    prepared::prepare(setting, caller, started, bytes_in, (offer, grant))
}

/// One read, prompt or completion, and the component that serves it.
pub struct Offer {
    component: Arc<Component>,
    request: OfferRequest,
    /// Its declared name, for the metrics and the log.
    label: String,
}

impl Offer {
    pub fn request(&self) -> &OfferRequest {
        &self.request
    }
}

impl Entry for Offer {
    type Answer = Offered;
    fn component(&self) -> &Arc<Component> {
        &self.component
    }

    fn label(&self) -> &str {
        &self.label
    }

    fn audit_name(&self) -> Cow<'_, str> {
        Cow::Owned(audit_label(&self.request))
    }

    fn places(&self) -> &Arc<Places> {
        &self.component.offer_places
    }

    fn busy_name(&self) -> String {
        format!("{} (reads, prompts and completions)", self.component.name)
    }

    /// Always on a lane: a component's reads keep no pace.
    fn pace(&self) -> Option<&Pace> {
        None
    }

    fn bytes_out(offered: &Offered) -> usize {
        crate::json::to_vec(&offered.to_mcp()).len()
    }

    fn run(&self, entering: Entering<'_>) -> (Outcome<Self>, Teardown) {
        if let Some(nothing) = self.nothing_to_run() {
            return (Ok(Ran::Answered(nothing)), Teardown::none());
        }
        let (outcome, teardown) = entering.sandbox.run_offer(
            &self.component.code(),
            &self.request,
            entering.grant,
            entering.observer,
            entering.cancel,
        );
        (checked(outcome), teardown)
    }

    fn work(&self) -> Result<Work, Offered> {
        match self.nothing_to_run() {
            Some(nothing) => Err(nothing),
            None => Ok(Work::Offer(self.request.clone())),
        }
    }

    fn answered(&self, ran: Result<Ran<Done>, RunError>) -> Outcome<Self> {
        checked(ran.and_then(|ran| ran.try_map(Done::into_offer)))
    }
}

impl Offer {
    /// A component that completes nothing answers no values (MCP's answer
    /// when there is nothing to suggest), without running.
    fn nothing_to_run(&self) -> Option<Offered> {
        let completes = self.component.offers().completes;
        (matches!(self.request, OfferRequest::Complete { .. }) && !completes)
            .then(|| Offered::Completion(Completion::default()))
    }
}

/// A guest's answer, a URI it does not serve being a not-found error.
fn checked(outcome: Result<Ran<OfferOutcome>, RunError>) -> Outcome<Offer> {
    match outcome {
        Ok(ran) => ran.try_map(|answered| {
            answered.map_err(|not_found| {
                CallError::NotFound(format!("Resource not found: {not_found}"))
            })
        }),
        Err(err) => Err(CallError::Run(err)),
    }
}
