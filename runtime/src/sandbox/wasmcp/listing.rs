//! What a wasmcp component lists at load, under
//! [`crate::sandbox::DESCRIBE_LIMITS`], in one instance: its tools
//! (`list-tools`), resources, templates and prompts, every page of each by
//! one loop ([`pages`]), and whether it completes.

use wasmtime::component::{ComponentExportIndex, Instance, Val};

use super::super::{DescribedTool, Run, RunError, Sandbox};
use super::WasmcpPre;
use crate::offer::DescribedOffers;
use crate::wasmcp::offers as answers;
use crate::wasmcp::{self, value, value::Page};

/// Most pages of one listing read at load (a component whose cursor never
/// ends is refused instead of listing forever).
const MAX_PAGES: usize = 100;

impl Sandbox {
    /// Lists the component's tools by calling `list-tools` (every page, in
    /// one instance).
    pub fn list_wasmcp(&self, pre: &WasmcpPre) -> Result<Vec<DescribedTool>, RunError> {
        // A component of wasmcp's resources or prompts template has none.
        let Some(list) = pre.function("list-tools") else {
            return Ok(Vec::new());
        };
        let mut run = self.start_listing(pre.pre.engine())?;
        let instantiated = pre.pre.instantiate(&mut run.store);
        let instance = run.finish(instantiated)?;
        let tools = pages(&mut run, &instance, list, "list-tools", value::tools_page)?;
        Ok(tools.into_iter().map(described).collect())
    }

    /// What the component lists beside its tools (resources, templates,
    /// prompts) and whether it completes.
    pub fn list_wasmcp_offers(&self, pre: &WasmcpPre) -> Result<DescribedOffers, RunError> {
        let mut described = DescribedOffers {
            completes: pre.function("complete").is_some(),
            ..DescribedOffers::default()
        };
        let resources = pre
            .function("list-resources")
            .zip(pre.function("list-resource-templates"));
        let prompts = pre.function("list-prompts");
        if resources.is_none() && prompts.is_none() {
            return Ok(described);
        }
        let mut run = self.start_listing(pre.pre.engine())?;
        let instantiated = pre.pre.instantiate(&mut run.store);
        let instance = run.finish(instantiated)?;
        let run = &mut run;
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

/// A listed tool as the catalog checks tools. A tool that declares no hint
/// gets none (the strictest sandbox) and may be given hints by the policy.
fn described(tool: wasmcp::ListedTool) -> DescribedTool {
    DescribedTool {
        description: tool.description_or_fallback(),
        name: tool.name,
        title: tool.title,
        input_schema: tool.input_schema,
        output_schema: tool.output_schema,
        own_hints: tool.hints.is_some(),
        hints: tool.hints.unwrap_or_default(),
        icons: tool.icons,
        task_support: Default::default(),
    }
}
