//! `wasi:filesystem/types` bounded by the call's deadline and cancellation.
//!
//! wasmtime-wasi runs each filesystem syscall on Tokio's blocking pool and
//! its synchronous bindings wait for it without limit: opening a FIFO whose
//! other end nobody opens, or any call into a hung network mount, would
//! hold the guest (and its place in the pool) past its wall time, where the
//! epoch check never sees it. (Reads and writes are positional, so on a
//! FIFO they fail at once with `ESPIPE`.) The call's host functions (the
//! folder guard's, [`super::folders::Guarded`]) therefore call
//! wasmtime-wasi's async implementation through [`bounded!`], inside the
//! call's [`Limit`]: at the deadline or on cancellation the wait ends and
//! the guest traps like any interrupted call.
//!
//! What a dropped wait cannot do is stop the syscall itself: the pool
//! thread stays in the kernel until the operation returns (a FIFO until
//! someone opens its other end), outside any call's descriptor count; what
//! it opened then is closed at once. The call, its instance and its
//! descriptors are gone at the deadline.
//!
//! Functions that do no I/O (stream constructors, `drop`, reading entries
//! already listed by `read-directory`, error conversion) call the
//! synchronous bindings of [`BoundedFs::fs`] as they are.

use std::future::Future;

use wasmtime_wasi::filesystem::WasiFilesystemCtxView;
use wasmtime_wasi::p2::{FsError, FsResult};

use super::waits::Limit;

/// wasmtime-wasi's filesystem view of one call, with the call's limit.
pub struct BoundedFs<'a> {
    pub fs: WasiFilesystemCtxView<'a>,
    pub limit: Limit<'a>,
}

/// Runs `op` within the call's limit; past it, the guest traps.
pub fn within<T>(limit: &mut Limit<'_>, op: impl Future<Output = FsResult<T>>) -> FsResult<T> {
    limit.wait(op).unwrap_or_else(|why| Err(FsError::trap(why)))
}

/// `bounded!(fs, op(args…))`: wasmtime-wasi's async `descriptor` function
/// `op` on the [`BoundedFs`] `fs`, within its limit. Arguments and results
/// are the async bindings' types (`.into()` converts the synchronous ones).
macro_rules! bounded {
    ($fs:expr, $op:ident($($arg:expr),* $(,)?)) => {{
        let fs: &mut $crate::sandbox::bounded_fs::BoundedFs<'_> = $fs;
        $crate::sandbox::bounded_fs::within(
            &mut fs.limit,
            wasmtime_wasi::p2::bindings::filesystem::types::HostDescriptor::$op(
                &mut fs.fs,
                $($arg),*
            ),
        )
    }};
}
pub(crate) use bounded;
