//! Cordons: components of different trust run in different processes.
//!
//! A component's cordon is its section's `cordon = "NAME"`; without one, a
//! component fetched from a registry or a URL is in a cordon of its own
//! (named after it), and a local file runs in the serving process (the
//! `front`). Each cordon's guests run in a worker process of their own —
//! the airlock binary again, `serve --cordon-worker NAME` — holding only
//! that cordon's components, its own pool, only the environment variables
//! its sections read, and confined (`crate::confine`) to those sections'
//! grants alone. The front keeps the listener, the protocols, OAuth, tasks
//! and the audit log, and sends each call of a cordoned component to its
//! worker: everything else about the call (consent, limits on places,
//! its record) stays on the one path of `crate::call`.
//!
//! - [`wire`]: the messages and their framing; `convert`: their types to
//!   and from the domain's;
//! - [`launcher`]: how a worker is started — by the launcher the server
//!   forks before it confines itself, so that no worker is in the
//!   server's confinement and the server may not start programs;
//! - [`link`]: the front's end — start, send, restart; `relay`: one call
//!   in flight — its messages to the observer within the grant, answers
//!   and cancellation back, its end checked;
//! - [`worker`]: the worker's end — run each call in a fresh instance.

mod convert;
pub mod launcher;
pub mod link;
mod parked;
mod relay;
pub mod wire;
pub mod worker;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use launcher::{Launch, Launcher, Start, Started};
pub use link::Link;

use crate::policy::Policy;
use crate::source::Source;

/// The cordon that means "the serving process itself".
pub const FRONT: &str = "front";

/// The cordon a component runs in: `None` for the serving process.
pub fn of(policy: &Policy, name: &str, remote: bool) -> Option<String> {
    let chosen = policy.component(name).and_then(|c| c.cordon.clone());
    match chosen {
        Some(cordon) if cordon == FRONT => None,
        Some(cordon) => Some(cordon),
        None if remote => Some(name.to_string()),
        None => None,
    }
}

/// The name a served path loads under, as loading names it: a file's
/// stem, or for a reference the section whose `source` it is.
pub fn name_of(policy: &Policy, path: &Path) -> Option<(String, bool)> {
    let source = Source::from_path(path).ok()?;
    let remote = source.is_remote();
    let name = match remote {
        false => source.default_name(),
        true => policy
            .component_with_source(path)
            .map_or_else(|| source.default_name(), |c| c.name.clone()),
    };
    Some((name, remote))
}

/// Which component files go to which cordon: `{cordon: [(file,
/// component)]}`, the front's left out.
pub fn placement(policy: &Policy, files: &[PathBuf]) -> BTreeMap<String, Vec<(PathBuf, String)>> {
    let mut placed: BTreeMap<String, Vec<_>> = BTreeMap::new();
    for path in files.iter().cloned() {
        let Some((name, remote)) = name_of(policy, &path) else {
            continue;
        };
        if let Some(cordon) = of(policy, &name, remote) {
            placed.entry(cordon).or_default().push((path, name));
        }
    }
    placed
}

/// The cordons of a server, by name, and which component is in which.
#[derive(Default)]
pub struct Cordons {
    links: BTreeMap<String, Arc<Link>>,
    /// component → cordon.
    members: BTreeMap<String, String>,
}

impl Cordons {
    pub fn new(links: Vec<Arc<Link>>, members: BTreeMap<String, String>) -> Self {
        Cordons {
            links: links
                .into_iter()
                .map(|l| (l.name().to_string(), l))
                .collect(),
            members,
        }
    }

    /// Where `component`'s guests run: its cordon's link, `None` here.
    pub fn link(&self, component: &str) -> Option<&Arc<Link>> {
        self.members
            .get(component)
            .and_then(|cordon| self.links.get(cordon))
    }

    pub fn links(&self) -> impl Iterator<Item = &Arc<Link>> {
        self.links.values()
    }

    pub fn is_empty(&self) -> bool {
        self.links.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_components_are_apart_by_default_and_a_section_decides() {
        let policy = Policy::parse(
            "[components.local]\n[components.vendor]\ncordon = \"vendor-x\"\n\
             [components.pulled]\ncordon = \"front\"\n",
            Path::new("."),
        )
        .expect("policy");
        assert_eq!(of(&policy, "local", false), None);
        assert_eq!(of(&policy, "other", true), Some("other".into()));
        assert_eq!(of(&policy, "vendor", false), Some("vendor-x".into()));
        assert_eq!(of(&policy, "pulled", true), None);
    }

    #[test]
    fn a_cordon_name_that_does_not_fit_is_an_error_that_says_what_fits() {
        let err = Policy::parse("[components.c]\ncordon = \"Vendor X\"\n", Path::new("."))
            .expect_err("refused");
        let text = err.to_string();
        assert!(text.contains("lower-case letters"), "{text}");
    }
}
