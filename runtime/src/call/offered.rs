//! One resource read, prompt or completion, end to end: find what serves
//! it, check its arguments, settle its grant — the component's, narrowed
//! to read-only, without network unless the policy's `offers-network`
//! grants it, asking the client only what its `ask` grants —, run it in a fresh
//! instance on a lane, and record it in the metrics and the audit log with
//! its caller, as a tool call is.
//!
//! Which caller may see what (a token's `resources` and `prompts`) is the
//! protocol's to check before it prepares, as for tools.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Instant;

use super::on_lane::on_a_lane;
use super::record::{self, Audited, Entered};
use super::running::Place;
use super::updates::Publishing;
use super::{CallError, Caller, Setting, next_call_id};
use crate::audit::AuditLog;
use crate::catalog::{Catalog, Component};
use crate::observe::CallObserver;
use crate::offer::{Completion, CompletionRef, OfferRequest, Offered};
use crate::policy::{self, Grant, Policy};
use crate::sandbox::{CancelToken, RunError, Sandbox, Teardown};
use crate::tool::Hints;

/// Why a read, prompt or completion has no answer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum OfferError {
    /// No such resource or prompt (the text says what exists), or the
    /// component said it has no such resource.
    #[error("{0}")]
    NotFound(String),
    /// The arguments do not fit: a required prompt argument is missing, an
    /// argument is unknown.
    #[error("{0}")]
    InvalidParams(String),
    /// It ran and failed, or a limit or the policy stopped it.
    #[error("{0}")]
    Call(#[from] CallError),
}

impl OfferError {
    /// A short machine-readable outcome (audit log, metrics).
    pub fn kind(&self) -> &'static str {
        match self {
            OfferError::NotFound(_) => "not-found",
            OfferError::InvalidParams(_) => "invalid-arguments",
            OfferError::Call(err) => err.kind(),
        }
    }
}

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
fn find(catalog: &Catalog, request: &OfferRequest) -> Result<Arc<Component>, OfferError> {
    match request {
        OfferRequest::Read { uri } => catalog
            .resource_for(uri)
            .map(|(c, _)| c.clone())
            .ok_or_else(|| {
                OfferError::NotFound(format!(
                    "Resource not found: no resource {uri:?} (resources/list and \
                     resources/templates/list say what exists)"
                ))
            }),
        OfferRequest::Prompt { name, arguments } => {
            let Some((prompt, component)) = catalog.prompt(name) else {
                return Err(OfferError::NotFound(format!(
                    "unknown prompt {name:?}; the prompts are: {}",
                    listed(catalog.prompts().map(|(p, _)| p.name.as_str()))
                )));
            };
            let names = || listed(prompt.arguments.iter().map(|a| a.name.as_str()));
            if let Some((unknown, _)) = arguments
                .iter()
                .find(|(k, _)| !prompt.arguments.iter().any(|a| &a.name == k))
            {
                return Err(OfferError::InvalidParams(format!(
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
                return Err(OfferError::InvalidParams(format!(
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
                        OfferError::NotFound(format!(
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
                        OfferError::NotFound(format!(
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
                return Err(OfferError::InvalidParams(format!(
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
pub fn prepare_offer(
    setting: &Setting<'_>,
    caller: Caller,
    request: OfferRequest,
) -> Result<PreparedOffer, OfferError> {
    let started = Instant::now();
    let label = declared_label(setting.catalog, &request);
    let cancel = CancelToken::new();
    let (id, component, grant, place) = match placed(setting, &request, &cancel) {
        Ok(placed) => placed,
        Err((err, found)) => {
            let digest = found.as_ref().map(|c| c.digest.as_str());
            let audited = || (Cow::Owned(audit_label(&request)), 0);
            let (log, kind) = (setting.audit, err.kind());
            record::refused_before(
                log,
                &caller,
                label.as_deref(),
                digest,
                kind,
                started,
                audited,
            );
            return Err(err);
        }
    };
    Ok(PreparedOffer {
        id,
        place,
        grant,
        component,
        label: label.unwrap_or_default(),
        request,
        caller,
        cancel,
        sandbox: setting.sandbox.clone(),
        catalog: setting.catalog.clone(),
        updates: setting.updates.clone(),
        log: setting.audit.cloned(),
        started,
    })
}

type Placed = (u64, Arc<Component>, Grant, Place<Component>);

/// The component that serves `request`, its grant, and the request's id
/// and place under the component's limit; or why not, with the component
/// when it was found.
fn placed(
    setting: &Setting<'_>,
    request: &OfferRequest,
    cancel: &CancelToken,
) -> Result<Placed, (OfferError, Option<Arc<Component>>)> {
    let component = find(setting.catalog, request).map_err(|err| (err, None))?;
    let grant = grant_for_offers(setting.policy, &component);
    let id = next_call_id();
    let limit = grant.limits.concurrency;
    match Place::take(setting.running, id, &component, limit, cancel) {
        Ok(place) => Ok((id, component, grant, place)),
        Err(err) => Err((err.into(), Some(component))),
    }
}

/// A read, prompt or completion ready to run.
pub struct PreparedOffer {
    id: u64,
    /// Held until it is dropped: its place under the component's limit (or
    /// in the queue before it) and among the calls in flight (shutdown
    /// counts and stops it).
    place: Place<Component>,
    component: Arc<Component>,
    request: OfferRequest,
    /// Its declared name, for the metrics and the log.
    label: String,
    grant: Grant,
    caller: Caller,
    cancel: CancelToken,
    sandbox: Arc<Sandbox>,
    /// The catalog it was prepared with.
    catalog: Arc<Catalog>,
    updates: Arc<super::ResourceUpdates>,
    log: Option<Arc<AuditLog>>,
    started: Instant,
}

impl PreparedOffer {
    pub fn grant(&self) -> &Grant {
        &self.grant
    }

    pub fn component(&self) -> &Arc<Component> {
        &self.component
    }

    /// Stops it (before it runs, or while it runs).
    pub fn cancel_token(&self) -> &CancelToken {
        &self.cancel
    }

    /// Runs the guest (blocking), after waiting for a place under the
    /// component's concurrency limit if it has none yet, and records the
    /// outcome.
    pub fn run(mut self, observer: Arc<dyn CallObserver>) -> Result<Offered, OfferError> {
        let (patience, cancel) = (self.grant.limits.time, self.cancel.clone());
        if let Err(err) = self.place.hold_blocking(patience, &cancel) {
            return self.refused(err);
        }
        let (outcome, teardown) = self.run_guest(observer);
        self.record(&outcome, teardown.as_ref());
        outcome
    }

    /// Runs the guest on a lane; `None` when the lane's thread died first.
    /// Over the component's limit, it waits for a place first, without a
    /// thread.
    pub async fn run_on_lane(
        mut self,
        observer: Arc<dyn CallObserver>,
    ) -> Option<Result<Offered, OfferError>> {
        let (patience, cancel) = (self.grant.limits.time, self.cancel.clone());
        if let Err(err) = self.place.hold(patience, &cancel).await {
            return Some(self.refused(err));
        }
        on_a_lane(self.cancel.clone(), move |tx| {
            let (outcome, teardown) = self.run_guest(observer);
            self.record(&outcome, teardown.as_ref());
            let _ = tx.send(outcome);
            drop(teardown);
        })
        .await
    }

    fn run_guest(
        &self,
        observer: Arc<dyn CallObserver>,
    ) -> (Result<Offered, OfferError>, Option<Teardown>) {
        if self.cancel.is_cancelled() {
            return (Err(CallError::Run(RunError::Cancelled).into()), None);
        }
        // A component that completes nothing answers no values (MCP's
        // answer when there is nothing to suggest), without running.
        if matches!(self.request, OfferRequest::Complete { .. })
            && !self.component.offers().completes
        {
            return (Ok(Offered::Completion(Completion::default())), None);
        }
        let observer = Publishing::wrap(observer, &self.component, &self.catalog, &self.updates);
        let (outcome, teardown) = self.sandbox.run_offer(
            &self.component.code(),
            &self.request,
            &self.grant,
            observer,
            self.cancel.clone(),
        );
        let outcome = match outcome {
            Ok(Ok(offered)) => Ok(offered),
            Ok(Err(not_found)) => Err(OfferError::NotFound(format!(
                "Resource not found: {not_found}"
            ))),
            Err(err) => Err(OfferError::Call(CallError::Run(err))),
        };
        (outcome, Some(teardown))
    }

    /// One that never ran (it waited for a place in vain): recorded as
    /// such, and its error handed back.
    fn refused(self, err: CallError) -> Result<Offered, OfferError> {
        let outcome = Err(err.into());
        self.record(&outcome, None);
        outcome
    }

    fn record(&self, outcome: &Result<Offered, OfferError>, teardown: Option<&Teardown>) {
        let kind = match outcome {
            Ok(_) => "ok",
            Err(err) => err.kind(),
        };
        let entered = Entered {
            id: Some(self.id),
            label: Some(&self.label),
            caller: &self.caller,
            digest: Some(&self.component.digest),
            grant: Some(&self.grant),
        };
        record::ended(
            self.log.as_deref(),
            &entered,
            kind,
            self.started.elapsed(),
            teardown,
            || Audited {
                name: Cow::Owned(audit_label(&self.request)),
                bytes_in: size_of(&self.request),
                bytes_out: match outcome {
                    Ok(offered) => crate::json::to_vec(&offered.to_mcp()).len(),
                    Err(_) => 0,
                },
            },
        );
    }
}
