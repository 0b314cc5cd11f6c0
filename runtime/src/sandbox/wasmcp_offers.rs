//! wasmcp components' resources, prompts and completions in the sandbox
//! (see [`crate::wasmcp::offers`]): the exports resolved once at link, the
//! listings at load (every page, in one instance, under
//! [`super::DESCRIBE_LIMITS`]), and one read, prompt or completion per run
//! in the instance the call layer provisioned, answered in the shape an
//! airlock component's answer has, so the same output check, redaction
//! and teardown follow (`sandbox/offers.rs`).

use std::collections::HashMap;

use wasmtime::component::{Component, ComponentExportIndex, Instance, InstancePre, Val};

use super::bindings::types;
use super::run::Run;
use super::{CallState, RunError};
use crate::offer::{DescribedOffers, OfferRequest, Offered};
use crate::wasmcp::offers::{self as answers, Answered, Page};
use crate::wasmcp::{self, value};

/// Most pages of one listing read at load (a component whose cursor never
/// ends is refused instead of listing forever).
const MAX_PAGES: usize = 100;

/// The functions of wasmcp's `resources`, `prompts` and `completions`
/// interfaces a component exports, by name (`read-resource`, …).
#[derive(Clone, Default)]
pub struct WasmcpOffers {
    functions: HashMap<&'static str, ComponentExportIndex>,
}

impl WasmcpOffers {
    /// Finds the interfaces of [`wasmcp::OFFERS`] the component exports;
    /// fails when one lacks a function airlock calls.
    pub(super) fn resolve(component: &Component) -> wasmtime::Result<Self> {
        let engine = component.engine();
        let exports: Vec<String> = component
            .component_type()
            .exports(engine)
            .map(|(name, _)| name.to_string())
            .collect();
        let mut functions = HashMap::new();
        for (interface, names) in wasmcp::OFFERS {
            let Some(export) = exports
                .iter()
                .find(|name| wasmcp::interface(name) == Some(interface))
            else {
                continue;
            };
            let instance = component
                .get_export_index(None, export)
                .ok_or_else(|| wasmtime::format_err!("it does not export `{export}`"))?;
            for name in names.iter().copied() {
                let function = component
                    .get_export_index(Some(&instance), name)
                    .ok_or_else(|| {
                        wasmtime::format_err!("`{export}` exports no function `{name}`")
                    })?;
                functions.insert(name, function);
            }
        }
        Ok(WasmcpOffers { functions })
    }

    fn get(&self, name: &str) -> Option<ComponentExportIndex> {
        self.functions.get(name).copied()
    }
}

/// What the component lists: resources and templates, prompts, and
/// whether it completes (each only when it exports the interface).
pub(super) fn describe(
    run: &mut Run,
    pre: &InstancePre<CallState>,
    offers: &WasmcpOffers,
) -> Result<DescribedOffers, RunError> {
    let mut described = DescribedOffers {
        completes: offers.get("complete").is_some(),
        ..DescribedOffers::default()
    };
    let resources = offers
        .get("list-resources")
        .zip(offers.get("list-resource-templates"));
    let prompts = offers.get("list-prompts");
    if resources.is_none() && prompts.is_none() {
        return Ok(described);
    }
    let instantiated = pre.instantiate(&mut run.store);
    let instance = run.finish(instantiated)?;
    if let Some((list, templates)) = resources {
        described.resources = pages(
            run,
            &instance,
            list,
            "list-resources",
            answers::resources_page,
        )?;
        described.templates = pages(
            run,
            &instance,
            templates,
            "list-resource-templates",
            answers::templates_page,
        )?;
    }
    if let Some(list) = prompts {
        described.prompts = pages(run, &instance, list, "list-prompts", answers::prompts_page)?;
    }
    Ok(described)
}

/// Every page of one listing, following `next-cursor`.
fn pages<T>(
    run: &mut Run,
    instance: &Instance,
    index: ComponentExportIndex,
    name: &str,
    read: impl Fn(&Val) -> Result<Page<T>, String>,
) -> Result<Vec<T>, RunError> {
    let func = instance
        .get_func(&mut run.store, index)
        .ok_or_else(|| RunError::Setup(format!("the instance lacks `{name}`")))?;
    let mut entries = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_PAGES {
        let params = [
            value::message_context(),
            value::list_request(cursor.as_deref()),
        ];
        let mut results = [Val::Bool(false)];
        let called = func.call(&mut run.store, &params, &mut results);
        run.finish(called)?;
        let (page, next) = match read(&results[0]) {
            Ok(Page::Entries(page, next)) => (page, next),
            Ok(Page::Refused(why)) => return Err(RunError::Failed(format!("{name}: {why}"))),
            Err(why) => return Err(RunError::BadOutput(format!("{name}: {why}"))),
        };
        entries.extend(page);
        match next {
            Some(next) if Some(&next) != cursor.as_ref() => cursor = Some(next),
            Some(_) => {
                return Err(RunError::BadOutput(format!(
                    "{name} answered the same cursor twice"
                )));
            }
            None => return Ok(entries),
        }
    }
    Err(RunError::BadOutput(format!(
        "{name} answered more than {MAX_PAGES} pages"
    )))
}

/// A read's, prompt's or completion's answer: what it offers or the URI
/// it does not serve (`Ok`), or the component's error.
pub(super) type Returned = Result<Result<Offered, String>, types::Error>;

impl Run {
    /// Instantiates the component and runs `request` through the function
    /// of wasmcp's interfaces that answers it.
    pub(super) fn wasmcp_offer(
        &mut self,
        pre: &InstancePre<CallState>,
        offers: &WasmcpOffers,
        request: &OfferRequest,
    ) -> Result<Returned, RunError> {
        let (function, params) = match request {
            OfferRequest::Read { uri } => ("read-resource", answers::read_request(uri)),
            OfferRequest::Prompt { name, arguments } => {
                ("get-prompt", answers::prompt_request(name, arguments))
            }
            OfferRequest::Complete {
                reference,
                argument,
                value,
                context,
            } => (
                "complete",
                answers::complete_request(reference, argument, value, context),
            ),
        };
        let index = offers.get(function).ok_or_else(|| {
            RunError::Setup(format!("the component does not export `{function}`"))
        })?;
        let params = [value::message_context(), params];
        let mut results = [Val::Bool(false)];
        let store = &mut self.store;
        let called = pre.instantiate(&mut *store).and_then(|instance| {
            let func = instance
                .get_func(&mut *store, index)
                .ok_or_else(|| wasmtime::format_err!("the instance lacks `{function}`"))?;
            func.call(&mut *store, &params, &mut results)
        });
        self.store.data_mut().flush_notices();
        self.finish(called)?;
        let answered = match request {
            OfferRequest::Read { uri } => answers::read_result(&results[0], uri),
            OfferRequest::Prompt { name, .. } => answers::prompt_result(&results[0], name),
            OfferRequest::Complete { .. } => answers::complete_result(&results[0]),
        };
        Ok(
            match answered.map_err(|why| RunError::BadOutput(format!("{function}: {why}")))? {
                Answered::Offered(offered) => Ok(Ok(offered)),
                Answered::NotFound(uri) => Ok(Err(uri)),
                Answered::InvalidArguments(message) => Err(types::Error::InvalidArguments(message)),
                Answered::Failed(message) => Err(types::Error::Failed(message)),
            },
        )
    }
}
