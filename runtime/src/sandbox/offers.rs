//! Resources, prompts and completions in the sandbox: listing what a
//! component of world `server` offers (at load, under [`super::DESCRIBE_LIMITS`]
//! like its tools), and running one read, prompt or completion in a fresh
//! instance with the grant the call layer settled (read-only), checked
//! against its output limit and redacted on the way out like a tool's
//! result.

use std::sync::Arc;

use wasmtime::component::TypedFunc;

use super::bindings::{completions, prompts, resources, types};
use super::{CallState, CancelToken, Linked, Ran, RawOutput, Run, RunError, Sandbox};
use super::{Teardown, ToolPre};
use crate::observe::CallObserver;
use crate::offer::{
    Annotations, Completion, CompletionRef, DescribedOffers, MAX_COMPLETIONS, OfferRequest,
    Offered, PromptArgument, PromptInfo, PromptMessage, PromptMessages, ResourceContents,
    ResourceInfo, Role, TemplateInfo,
};
use crate::policy::Grant;
use crate::tool::{Content, Icon, ResourceBody};

type ReadFunc<'a> =
    TypedFunc<(&'a str,), (Result<Vec<resources::Contents>, resources::ReadError>,)>;
type GetFunc<'a> =
    TypedFunc<(&'a str, &'a [(String, String)]), (Result<prompts::PromptMessages, types::Error>,)>;
type CompleteFunc<'a> = TypedFunc<
    (
        completions::Reference,
        &'a str,
        &'a str,
        &'a [(String, String)],
    ),
    (Result<completions::Completion, types::Error>,),
>;

/// How a run of a read, prompt or completion ended when the guest ran:
/// its answer, or the guest's own "no such resource" (`Err`).
pub type OfferOutcome = Result<Offered, String>;

impl Sandbox {
    /// What a component of world `server` offers, under
    /// [`super::DESCRIBE_LIMITS`] (one instance for both `describe`s).
    pub fn describe_offers(&self, pre: &ToolPre<CallState>) -> Result<DescribedOffers, RunError> {
        let offers = pre.offers().clone();
        let mut described = DescribedOffers {
            completes: offers.complete.is_some(),
            ..DescribedOffers::default()
        };
        if offers.resources.is_none() && offers.prompts.is_none() {
            return Ok(described);
        }
        let mut run = self.start_listing(pre.engine())?;
        let result =
            (|| -> wasmtime::Result<(Option<resources::Catalog>, Vec<prompts::Prompt>)> {
                let instance = pre.instantiate(&mut run.store)?;
                let catalog = match &offers.resources {
                    Some((describe, _)) => {
                        let f: TypedFunc<(), (resources::Catalog,)> =
                            pre.typed(&mut run.store, &instance, describe)?;
                        Some(f.call(&mut run.store, ())?.0)
                    }
                    None => None,
                };
                let prompts = match &offers.prompts {
                    Some((describe, _)) => {
                        let f: TypedFunc<(), (Vec<prompts::Prompt>,)> =
                            pre.typed(&mut run.store, &instance, describe)?;
                        f.call(&mut run.store, ())?.0
                    }
                    None => Vec::new(),
                };
                Ok((catalog, prompts))
            })();
        let (catalog, prompts) = run.finish(result)?;
        if let Some(catalog) = catalog {
            described.resources = catalog
                .resources
                .into_iter()
                .map(|r| {
                    let meta = r.meta.clone();
                    (resource_info(r), meta)
                })
                .collect();
            described.templates = catalog.templates.into_iter().map(template_info).collect();
            described.tool_meta = catalog
                .tool_meta
                .into_iter()
                .map(|m| (m.tool, m.meta))
                .collect();
        }
        described.prompts = prompts.into_iter().map(prompt_info).collect();
        Ok(described)
    }

    /// Runs one read, prompt or completion of `pre`'s component (an airlock
    /// component of world `server`, or a wasmcp component) in a fresh
    /// instance with exactly `grant`. The outcome comes with the run's
    /// [`Teardown`], as for a call.
    pub fn run_offer(
        &self,
        pre: &Linked,
        request: &OfferRequest,
        grant: &Grant,
        observer: Arc<dyn CallObserver>,
        cancel: CancelToken,
    ) -> (Result<Ran<OfferOutcome>, RunError>, Teardown) {
        let offer = |run: &mut Run| {
            let returned = match pre {
                Linked::Tool(pre) => {
                    let result = tool_offer(run, pre, request);
                    run.store.data_mut().flush_notices();
                    run.finish(result)
                }
                Linked::Wasmcp(pre) => run.wasmcp_offer(pre, request),
                Linked::Functions(_) => Err(RunError::Setup(
                    "the component offers no resources or prompts".into(),
                )),
            };
            returned.and_then(|returned| match returned {
                Ok(outcome) => checked(outcome, run.limits.output),
                Err(types::Error::InvalidArguments(m)) => Err(RunError::InvalidArguments(m)),
                Err(types::Error::Failed(m)) => Err(run.failed(m)),
            })
        };
        let redact = |redactor: &super::redact::Redactor, outcome: OfferOutcome| {
            outcome.map(|offered| redacted(redactor, offered))
        };
        self.run_granted(pre, grant, observer, cancel, offer, redact)
    }
}

/// Instantiates an airlock component of world `server` and runs `request`
/// through its `resources`, `prompts` or `completions` export.
fn tool_offer(
    run: &mut Run,
    pre: &ToolPre<CallState>,
    request: &OfferRequest,
) -> wasmtime::Result<Result<OfferOutcome, types::Error>> {
    let offers = pre.offers().clone();
    let missing = || wasmtime::format_err!("the component does not export what this needs");
    let instance = pre.instantiate(&mut run.store)?;
    Ok(match request {
        OfferRequest::Read { uri } => {
            let (_, read) = offers.resources.as_ref().ok_or_else(missing)?;
            let f: ReadFunc<'_> = pre.typed(&mut run.store, &instance, read)?;
            match f.call(&mut run.store, (uri.as_str(),))?.0 {
                Ok(contents) => Ok(Ok(Offered::Contents(
                    contents.into_iter().map(contents_of).collect(),
                ))),
                Err(resources::ReadError::NotFound(m)) => Ok(Err(m)),
                Err(resources::ReadError::Failed(m)) => Err(types::Error::Failed(m)),
            }
        }
        OfferRequest::Prompt { name, arguments } => {
            let (_, get) = offers.prompts.as_ref().ok_or_else(missing)?;
            let f: GetFunc<'_> = pre.typed(&mut run.store, &instance, get)?;
            f.call(&mut run.store, (name.as_str(), arguments.as_slice()))?
                .0
                .map(|m| Ok(Offered::Messages(messages_of(m))))
        }
        OfferRequest::Complete {
            reference,
            argument,
            value,
            context,
        } => {
            let complete = offers.complete.as_ref().ok_or_else(missing)?;
            let f: CompleteFunc<'_> = pre.typed(&mut run.store, &instance, complete)?;
            let reference = match reference {
                CompletionRef::Prompt(name) => completions::Reference::Prompt(name.clone()),
                CompletionRef::Template(t) => completions::Reference::ResourceTemplate(t.clone()),
            };
            let args = (
                reference,
                argument.as_str(),
                value.as_str(),
                context.as_slice(),
            );
            f.call(&mut run.store, args)?
                .0
                .map(|c| Ok(Offered::Completion(completion_of(c))))
        }
    })
}

/// The answer, unless larger than the output limit (or a completion of
/// more than [`MAX_COMPLETIONS`] values, which MCP does not allow).
fn checked(outcome: OfferOutcome, limit: u64) -> Result<OfferOutcome, RunError> {
    let Ok(offered) = &outcome else {
        return Ok(outcome);
    };
    if let Offered::Completion(c) = offered
        && c.values.len() > MAX_COMPLETIONS
    {
        return Err(RunError::BadOutput(format!(
            "a completion holds at most {MAX_COMPLETIONS} values, this one {} (set has-more \
             and total instead)",
            c.values.len()
        )));
    }
    if let Offered::Contents(contents) = offered
        && contents.is_empty()
    {
        return Err(RunError::BadOutput(
            "the read returned no contents (return not-found for a resource that does not \
             exist)"
                .into(),
        ));
    }
    let size = offered.size();
    if size > limit {
        return Err(RunError::OutputTooLarge {
            actual: size,
            limit,
        });
    }
    Ok(outcome)
}

/// Every secret replaced, as in a tool's result (through the same
/// redactor: resource bodies as embedded resources, values as text).
fn redacted(redactor: &super::redact::Redactor, offered: Offered) -> Offered {
    let pass = |content: Vec<Content>| {
        redactor
            .output(RawOutput {
                content,
                structured: None,
            })
            .content
    };
    match offered {
        Offered::Contents(contents) => {
            let metas: Vec<_> = contents
                .iter()
                .map(|c| c.meta.clone().map(|m| redactor.value(m.into())))
                .collect();
            let blocks = contents
                .into_iter()
                .map(|c| Content::Embedded {
                    uri: c.uri,
                    mime_type: c.mime_type,
                    body: c.body,
                })
                .collect();
            let contents = pass(blocks)
                .into_iter()
                .zip(metas)
                .filter_map(|(block, meta)| match block {
                    Content::Embedded {
                        uri,
                        mime_type,
                        body,
                    } => Some(ResourceContents {
                        uri,
                        mime_type,
                        body,
                        meta: match meta {
                            Some(serde_json::Value::Object(m)) => Some(m),
                            _ => None,
                        },
                    }),
                    _ => None,
                })
                .collect();
            Offered::Contents(contents)
        }
        Offered::Messages(m) => {
            let roles: Vec<Role> = m.messages.iter().map(|m| m.role).collect();
            let blocks = pass(m.messages.into_iter().map(|m| m.content).collect());
            let description = m
                .description
                .map(|d| pass(vec![Content::Text(d)]))
                .and_then(|mut d| match d.pop() {
                    Some(Content::Text(text)) => Some(text),
                    _ => None,
                });
            Offered::Messages(PromptMessages {
                description,
                messages: roles
                    .into_iter()
                    .zip(blocks)
                    .map(|(role, content)| PromptMessage { role, content })
                    .collect(),
            })
        }
        Offered::Completion(c) => {
            let values = pass(c.values.into_iter().map(Content::Text).collect())
                .into_iter()
                .filter_map(|block| match block {
                    Content::Text(text) => Some(text),
                    _ => None,
                })
                .collect();
            Offered::Completion(Completion { values, ..c })
        }
    }
}

fn role(r: types::Role) -> Role {
    match r {
        types::Role::User => Role::User,
        types::Role::Assistant => Role::Assistant,
    }
}

fn icons(icons: Vec<types::Icon>) -> Vec<Icon> {
    icons
        .into_iter()
        .map(|i| Icon {
            src: i.src,
            mime_type: i.mime_type,
            sizes: i.sizes,
        })
        .collect()
}

fn annotations(a: resources::Annotations) -> Annotations {
    Annotations {
        audience: a.audience.into_iter().map(role).collect(),
        priority: a.priority,
        last_modified: a.last_modified,
    }
}

fn resource_info(r: resources::Resource) -> ResourceInfo {
    ResourceInfo {
        uri: r.uri,
        name: r.name,
        title: r.title,
        description: r.description,
        mime_type: r.mime_type,
        size: r.size,
        annotations: r.annotations.map(annotations),
        icons: icons(r.icons),
        meta: None,
    }
}

fn template_info(t: resources::ResourceTemplate) -> TemplateInfo {
    TemplateInfo {
        uri_template: t.uri_template,
        name: t.name,
        title: t.title,
        description: t.description,
        mime_type: t.mime_type,
        annotations: t.annotations.map(annotations),
        icons: icons(t.icons),
    }
}

fn prompt_info(p: prompts::Prompt) -> PromptInfo {
    PromptInfo {
        name: p.name,
        title: p.title,
        description: p.description,
        arguments: p
            .arguments
            .into_iter()
            .map(|a| PromptArgument {
                name: a.name,
                title: a.title,
                description: a.description,
                required: a.required,
            })
            .collect(),
        icons: icons(p.icons),
    }
}

/// A read's contents; a `_meta` that is not a JSON object is dropped (it
/// is the guest's own, not checked at load).
fn contents_of(c: resources::Contents) -> ResourceContents {
    ResourceContents {
        uri: c.uri,
        mime_type: c.mime_type,
        body: match c.body {
            types::ResourceBody::Text(t) => ResourceBody::Text(t),
            types::ResourceBody::Blob(b) => ResourceBody::Blob(b),
        },
        meta: c
            .meta
            .and_then(|text| serde_json::from_str(&text).ok())
            .and_then(|v: serde_json::Value| match v {
                serde_json::Value::Object(m) => Some(m),
                _ => None,
            }),
    }
}

fn messages_of(m: prompts::PromptMessages) -> PromptMessages {
    PromptMessages {
        description: m.description,
        messages: m
            .messages
            .into_iter()
            .map(|m| PromptMessage {
                role: role(m.role),
                content: Content::from(m.content),
            })
            .collect(),
    }
}

fn completion_of(c: completions::Completion) -> Completion {
    Completion {
        values: c.values,
        total: c.total,
        has_more: c.has_more,
    }
}
