//! The names a component takes when it is served — its tools' names, its
//! resources' URIs, its templates' text, its prompts' names — each unique
//! among the components served. (A tool's UI link names a `ui://` resource
//! of its own component, so the resource's URI covers it.) One rule for the
//! two places that decide: the catalog as it is built
//! ([`super::Catalog::add_shared`]), and a hot reload choosing which new
//! files may serve (`runtime::reload`), where a newcomer never displaces
//! what serves.

use std::path::Path;

use super::{Component, LoadError};

/// One name a component takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim<'a> {
    Tool(&'a str),
    Resource(&'a str),
    Template(&'a str),
    Prompt(&'a str),
}

impl Claim<'_> {
    /// The refusal of `second`, which claims what `first` holds.
    pub fn clash(&self, first: &Path, second: &Path) -> LoadError {
        let (first, second) = (first.to_path_buf(), second.to_path_buf());
        let what = match self {
            Claim::Tool(tool) => {
                return LoadError::Clash {
                    tool: tool.to_string(),
                    first,
                    second,
                };
            }
            Claim::Resource(uri) => format!("resource {uri:?}"),
            Claim::Template(text) => format!("resource template {text:?}"),
            Claim::Prompt(name) => format!("prompt {name:?}"),
        };
        LoadError::OfferClash {
            what,
            first,
            second,
        }
    }
}

/// Every name `component` takes with `tools` (the names of its tools):
/// the tools first, then its resources, templates and prompts.
pub fn claims<'a>(
    component: &'a Component,
    tools: impl IntoIterator<Item = &'a str>,
) -> Vec<Claim<'a>> {
    let offers = component.offers();
    tools
        .into_iter()
        .map(Claim::Tool)
        .chain(offers.resources.iter().map(|r| Claim::Resource(&r.uri)))
        .chain(
            offers
                .templates
                .iter()
                .map(|t| Claim::Template(&t.info.uri_template)),
        )
        .chain(offers.prompts.iter().map(|p| Claim::Prompt(&p.name)))
        .collect()
}
