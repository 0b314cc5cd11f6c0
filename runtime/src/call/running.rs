//! The calls prepared and not yet finished: one registry for the whole
//! process, so that shutdown can count them and stop them, whatever the
//! door they came through; and each call's place in its tool's
//! concurrency limit.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use super::error::CallError;
use crate::catalog::Tool;
use crate::sandbox::CancelToken;
use crate::sync::lock;

/// Every call prepared and not yet finished (waiting for confirmation,
/// running, or being torn down), by call id, with its cancel token.
#[derive(Default)]
pub struct Running {
    calls: Mutex<HashMap<u64, CancelToken>>,
}

impl Running {
    /// Calls prepared and not yet finished. A server that stops waits for
    /// this to reach zero.
    pub fn count(&self) -> usize {
        lock(&self.calls).len()
    }

    /// Stops every call because the server is shutting down: each request
    /// still gets an answer, saying so.
    pub fn shut_down_all(&self) {
        for token in lock(&self.calls).values() {
            token.shut_down();
        }
    }
}

/// A call's place in the registry and in its tool's concurrency limit,
/// given back when the call is dropped.
pub(super) struct Place {
    running: Arc<Running>,
    id: u64,
    tool: Arc<Tool>,
}

impl Place {
    /// Takes a place for call `id` of `tool`, unless the tool already runs
    /// `limit` calls.
    pub(super) fn take(
        running: &Arc<Running>,
        id: u64,
        tool: &Arc<Tool>,
        limit: u32,
        cancel: &CancelToken,
    ) -> Result<Place, CallError> {
        if tool.running.fetch_add(1, Ordering::AcqRel) >= limit {
            tool.running.fetch_sub(1, Ordering::AcqRel);
            return Err(CallError::Busy {
                tool: tool.info.name.clone(),
                limit,
            });
        }
        lock(&running.calls).insert(id, cancel.clone());
        Ok(Place {
            running: running.clone(),
            id,
            tool: tool.clone(),
        })
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        self.tool.running.fetch_sub(1, Ordering::AcqRel);
        lock(&self.running.calls).remove(&self.id);
    }
}
