//! What a running call reports while it runs, and who receives it.
//!
//! The sandbox hands a guest's `host.log` and `host.progress` calls to a
//! [`CallObserver`]; the protocols turn them into notifications, the CLI
//! prints them. It sits at the bottom of the module graph so that the
//! sandbox needs nothing of the layers that run it.

use crate::tool::Level;

/// Receives what the guest reports while it runs.
pub trait CallObserver: Send + Sync {
    /// A `host.log` call by the guest.
    fn log(&self, level: Level, message: &str);
    /// A `host.progress` call by the guest. The runtime has already dropped
    /// reports that go backwards.
    fn progress(&self, done: f64, total: Option<f64>, message: Option<&str>);
    /// A `host.resource-updated` call: the guest says one of its resources
    /// changed.
    fn resource_updated(&self, _uri: &str) {}
}

/// An observer that ignores everything.
pub struct Unobserved;

impl CallObserver for Unobserved {
    fn log(&self, _: Level, _: &str) {}
    fn progress(&self, _: f64, _: Option<f64>, _: Option<&str>) {}
}
