//! The services the runtime offers a tool during a call: log, progress,
//! cancellation and resource updates.
//!
//! Inside a component these call the runtime through the `host` interface of
//! the contract. On any other target (for example native unit tests of tool
//! functions) they never fail: [`log`] writes to standard error, [`progress`]
//! does nothing and [`cancelled`] is always `false`.

use std::fmt;

/// Severity of a log message (the syslog levels MCP uses).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// Details for debugging.
    Debug,
    /// Normal operation.
    Info,
    /// Normal but significant.
    Notice,
    /// Something may be wrong.
    Warning,
    /// Something went wrong.
    Error,
    /// A critical condition.
    Critical,
    /// Action must be taken at once.
    Alert,
    /// The system is unusable.
    Emergency,
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Level::Debug => "debug",
            Level::Info => "info",
            Level::Notice => "notice",
            Level::Warning => "warning",
            Level::Error => "error",
            Level::Critical => "critical",
            Level::Alert => "alert",
            Level::Emergency => "emergency",
        })
    }
}

/// Sends a log message to the client (when it listens at this level) and to
/// the runtime's log.
pub fn log(level: Level, message: impl AsRef<str>) {
    imp::log(level, message.as_ref());
}

/// Reports progress of the running call: `done` units of `total` (when
/// known), with an optional message. Values should grow from call to call;
/// the runtime drops reports that go backwards.
pub fn progress(done: f64, total: Option<f64>, message: Option<&str>) {
    imp::progress(done, total, message);
}

/// True once the client has cancelled this call. A long-running tool should
/// check it now and then and stop early (the runtime stops a cancelled call
/// shortly anyway).
pub fn cancelled() -> bool {
    imp::cancelled()
}

/// Tells the runtime that the resource `uri` of this component changed, so
/// that clients subscribed to it are notified (`notifications/resources/updated`).
/// Callable during any call, read or prompt; natively it does nothing.
pub fn resource_updated(uri: &str) {
    imp::resource_updated(uri);
}

#[cfg(target_family = "wasm")]
mod imp {
    use super::Level;
    use crate::bindings::airlock::tool::host as wit;

    pub fn log(level: Level, message: &str) {
        let level = match level {
            Level::Debug => wit::Level::Debug,
            Level::Info => wit::Level::Info,
            Level::Notice => wit::Level::Notice,
            Level::Warning => wit::Level::Warning,
            Level::Error => wit::Level::Error,
            Level::Critical => wit::Level::Critical,
            Level::Alert => wit::Level::Alert,
            Level::Emergency => wit::Level::Emergency,
        };
        wit::log(level, message);
    }

    pub fn progress(done: f64, total: Option<f64>, message: Option<&str>) {
        wit::progress(done, total, message);
    }

    pub fn cancelled() -> bool {
        wit::cancelled()
    }

    pub fn resource_updated(uri: &str) {
        wit::resource_updated(uri);
    }
}

#[cfg(not(target_family = "wasm"))]
mod imp {
    use super::Level;

    pub fn log(level: Level, message: &str) {
        eprintln!("[{level}] {message}");
    }

    pub fn progress(_done: f64, _total: Option<f64>, _message: Option<&str>) {}

    pub fn cancelled() -> bool {
        false
    }

    pub fn resource_updated(_uri: &str) {}
}

/// Logs a formatted message at [`Level::Debug`]: `debug!("read {n} rows")`.
#[macro_export]
macro_rules! debug {
    ($($arg:tt)+) => { $crate::log($crate::Level::Debug, ::std::format!($($arg)+)) };
}

/// Logs a formatted message at [`Level::Info`]: `info!("read {n} rows")`.
#[macro_export]
macro_rules! info {
    ($($arg:tt)+) => { $crate::log($crate::Level::Info, ::std::format!($($arg)+)) };
}

/// Logs a formatted message at [`Level::Warning`]: `warning!("{n} rows skipped")`.
#[macro_export]
macro_rules! warning {
    ($($arg:tt)+) => { $crate::log($crate::Level::Warning, ::std::format!($($arg)+)) };
}

/// Logs a formatted message at [`Level::Error`]: `error!("cannot read {path}")`.
#[macro_export]
macro_rules! error {
    ($($arg:tt)+) => { $crate::log($crate::Level::Error, ::std::format!($($arg)+)) };
}
