//! `host.resource-updated`: a component says one of its resources changed,
//! during any of its calls (a tool call, a read, a prompt). The runtime
//! passes on only URIs that resolve to the component's own resources — the
//! URIs a `resources/read` would take to this component: one of its
//! resources, or a URI one of its templates matches that no other component
//! serves as a resource (nor matches first by a template of its own) — to
//! whoever listens: the MCP server, which tells the clients subscribed to
//! that URI. Others are dropped with a warning.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;

use serde_json::Value;

use crate::catalog::{Catalog, Component};
use crate::observe::{Ask, AskFailure, CallObserver};
use crate::sync::lock;
use crate::tool::Level;

/// Who hears of an update: called with the URI.
pub type UpdateSink = dyn Fn(&str) + Send + Sync;

/// Where updated resources are announced; listeners are held weakly (a
/// server that ends stops listening).
#[derive(Default)]
pub struct ResourceUpdates {
    sinks: Mutex<Vec<Weak<UpdateSink>>>,
}

impl ResourceUpdates {
    /// Calls `sink` for every update from now on, while it lives.
    pub fn listen(&self, sink: &Arc<UpdateSink>) {
        lock(&self.sinks).push(Arc::downgrade(sink));
    }

    /// Tells every listener that `uri` changed.
    pub fn publish(&self, uri: &str) {
        let sinks: Vec<Arc<UpdateSink>> = {
            let mut sinks = lock(&self.sinks);
            sinks.retain(|s| s.strong_count() > 0);
            sinks.iter().filter_map(Weak::upgrade).collect()
        };
        for sink in sinks {
            sink(uri);
        }
    }
}

/// The most `resource-updated` calls one call may make: each is a
/// notification to every subscriber (or a log line), so a guest calling it
/// in a loop stops reaching them here.
pub const MAX_UPDATES_PER_CALL: u32 = 1000;

/// A call's observer that also publishes the component's resource updates.
pub(super) struct Publishing {
    inner: Arc<dyn CallObserver>,
    component: Arc<Component>,
    /// The catalog the call was prepared with: which component a URI is.
    catalog: Arc<Catalog>,
    updates: Arc<ResourceUpdates>,
    /// `resource-updated` calls this call made.
    announced: AtomicU32,
}

impl Publishing {
    /// `observer`, publishing updates when `component` serves resources
    /// (a component without any has nothing to announce: its observer is
    /// passed on as it is).
    pub(super) fn wrap(
        observer: Arc<dyn CallObserver>,
        component: &Arc<Component>,
        catalog: &Arc<Catalog>,
        updates: &Arc<ResourceUpdates>,
    ) -> Arc<dyn CallObserver> {
        let offers = component.offers();
        if offers.resources.is_empty() && offers.templates.is_empty() {
            return observer;
        }
        Arc::new(Publishing {
            inner: observer,
            component: component.clone(),
            catalog: catalog.clone(),
            updates: updates.clone(),
            announced: AtomicU32::new(0),
        })
    }

    /// Whether a `resources/read` of `uri` would reach this component: the
    /// same resolution, so a template of its own cannot announce a URI
    /// another component serves.
    fn owns(&self, uri: &str) -> bool {
        self.catalog
            .resource_for(uri)
            .is_some_and(|(component, _)| Arc::ptr_eq(component, &self.component))
    }
}

impl CallObserver for Publishing {
    fn log(&self, level: Level, message: &str) {
        self.inner.log(level, message);
    }

    fn progress(&self, done: f64, total: Option<f64>, message: Option<&str>) {
        self.inner.progress(done, total, message);
    }

    fn resource_updated(&self, uri: &str) {
        match self.announced.fetch_add(1, Ordering::Relaxed) {
            n if n < MAX_UPDATES_PER_CALL => {
                if self.owns(uri) {
                    self.updates.publish(uri);
                } else {
                    tracing::warn!(
                        component = %self.component.name,
                        "dropped resource-updated for {}: a read of that URI would not reach \
                         this component (not one of its resources)",
                        crate::logtext::GuestText(uri)
                    );
                }
            }
            MAX_UPDATES_PER_CALL => tracing::info!(
                component = %self.component.name,
                "a call reported {MAX_UPDATES_PER_CALL} resource updates; dropping the rest"
            ),
            _ => {}
        }
        self.inner.resource_updated(uri);
    }

    fn ask(&self, ask: &Ask, deadline: Instant) -> Result<Value, AskFailure> {
        self.inner.ask(ask, deadline)
    }

    fn wait_in_task(
        &self,
        asks: &[Ask],
        deadline: Instant,
    ) -> Option<Vec<Result<Value, AskFailure>>> {
        self.inner.wait_in_task(asks, deadline)
    }
}
