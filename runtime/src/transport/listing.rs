//! A list request that arrives while the start's components are still
//! loading waits for them (at most [`LIST_WAIT`] after the start), so a
//! client's first `tools/list` is not empty: a desktop client lists once,
//! right after it started airlock, and may never ask again on
//! `notifications/tools/list_changed`. Both transports ask here; a
//! component still loading after the bound joins later, with
//! `list_changed`, as before.

use crate::protocol::jsonrpc::Incoming;
use crate::protocol::mcp::dispatch;
use crate::runtime::Runtime;
use crate::runtime::loading::LIST_WAIT;

/// Whether `incoming` lists what components give (the method table says
/// which methods do) while some still load: then it should wait
/// ([`settled`]), beside the reading of what follows.
pub fn waits(incoming: &Incoming, runtime: &Runtime) -> bool {
    dispatch::awaits_loading(incoming) && runtime.still_loading() > 0
}

/// Waits until the start's components have all loaded or been refused, or
/// [`LIST_WAIT`] after the start passed.
pub async fn settled(runtime: &Runtime) {
    if !runtime.settled(LIST_WAIT).await {
        tracing::info!(
            "a list request waited {}s for the components still loading; answered without \
             theirs (notifications/tools/list_changed follows when they are ready)",
            LIST_WAIT.as_secs()
        );
    }
}
