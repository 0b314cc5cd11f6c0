//! Blocking host calls bounded by the call's deadline and cancellation.
//!
//! Epoch interruption only stops a guest while it runs wasm. A guest that
//! blocks inside the host — `poll` on a clock an hour away, a blocking read
//! of a socket that never answers — would hold its call (and its place in
//! the pool) forever. So `wasi:io/poll` and the blocking operations of
//! `wasi:io/streams` are linked through this layer: each wait races the
//! call's deadline and its cancellation, and the loser traps the guest with
//! the same [`Interruption`] the epoch check would have raised. Everything
//! else is wasmtime-wasi's own implementation, called as it is — inside a
//! Tokio context: a non-blocking `read` of an HTTP body that is not ready
//! yet polls the body (and its deadline timer) on the guest's thread, which
//! is no Tokio thread, and a timer created outside a runtime panics.
//!
//! `wasi:filesystem` waits within the same [`Limit`] (see `bounded_fs`).

use std::future::Future;
use std::time::{Duration, Instant};

use wasmtime::component::{HasData, Linker, Resource, ResourceTable};
use wasmtime_wasi::p2::bindings::sync::io::{poll, streams};
use wasmtime_wasi::p2::{DynPollable, StreamError, StreamResult};
use wasmtime_wasi::runtime::{in_tokio, with_ambient_tokio_runtime as ambient};
use wasmtime_wasi_io::bindings::wasi::io::poll as async_poll;
use wasmtime_wasi_io::bindings::wasi::io::streams::{
    HostInputStream as AsyncInput, HostOutputStream as AsyncOutput,
};
use wasmtime_wasi_io::streams::{DynInputStream, DynOutputStream};

use super::interruption::{CancelToken, Interruption};

/// How often a wait looks at the cancellation flag.
const CANCEL_CHECK: Duration = Duration::from_millis(10);

/// The call's deadline and cancellation, and where to record which of the
/// two stopped a wait (so the call's error says it).
pub struct Limit<'a> {
    pub deadline: Instant,
    pub cancel: &'a CancelToken,
    pub interruption: &'a mut Option<Interruption>,
}

impl Limit<'_> {
    /// Runs `wait` until it finishes, the deadline passes or the call is
    /// cancelled, whichever comes first. Dropping `wait` at the limit leaves
    /// a blocking syscall it started running on its pool thread (no thread
    /// can be stopped inside the kernel); the guest is stopped all the same.
    pub fn wait<F: Future>(&mut self, wait: F) -> Result<F::Output, Interruption> {
        let (deadline, cancel) = (self.deadline, self.cancel);
        // On a call run inline, the wait lends the async thread's other
        // work to another thread first (`in_tokio` cannot block there).
        let outcome = crate::lanes::blocking(|| {
            in_tokio(async {
                let cancelled = async {
                    while !cancel.is_cancelled() {
                        tokio::time::sleep(CANCEL_CHECK).await;
                    }
                };
                tokio::select! {
                    out = wait => Ok(out),
                    () = tokio::time::sleep_until(deadline.into()) => Err(Interruption::TimedOut),
                    () = cancelled => Err(Interruption::Cancelled),
                }
            })
        });
        if let Err(why) = outcome {
            *self.interruption = Some(why);
        }
        outcome
    }

    /// [`Limit::wait`] for a host call that traps the guest at the limit.
    fn trap<F: Future>(&mut self, wait: F) -> wasmtime::Result<F::Output> {
        self.wait(wait).map_err(wasmtime::Error::from)
    }

    /// [`Limit::wait`] for a stream operation: the limit traps the guest.
    fn stream<T>(&mut self, wait: impl Future<Output = StreamResult<T>>) -> StreamResult<T> {
        match self.wait(wait) {
            Ok(result) => result,
            Err(why) => Err(StreamError::Trap(why.into())),
        }
    }
}

/// The resource table with the call's limit: what `wasi:io` is linked to.
pub struct Bounded<'a> {
    pub table: &'a mut ResourceTable,
    pub limit: Limit<'a>,
}

struct BoundedIo;

impl HasData for BoundedIo {
    type Data<'a> = Bounded<'a>;
}

/// Links `wasi:io/poll` and `wasi:io/streams` through this layer, replacing
/// what `wasmtime_wasi::p2::add_to_linker_sync` linked. Call after that;
/// `get` gives a store's [`Bounded`] view (`CallState::bounded`).
pub fn add_to_linker<T: 'static>(
    linker: &mut Linker<T>,
    get: fn(&mut T) -> Bounded<'_>,
) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let linked = poll::add_to_linker::<T, BoundedIo>(linker, get)
        .and_then(|()| streams::add_to_linker::<T, BoundedIo>(linker, get));
    linker.allow_shadowing(false);
    linked
}

impl poll::Host for Bounded<'_> {
    fn poll(&mut self, pollables: Vec<Resource<DynPollable>>) -> wasmtime::Result<Vec<u32>> {
        self.limit
            .trap(async_poll::Host::poll(&mut *self.table, pollables))?
    }
}

impl poll::HostPollable for Bounded<'_> {
    fn ready(&mut self, pollable: Resource<DynPollable>) -> wasmtime::Result<bool> {
        ambient(|| poll::HostPollable::ready(self.table, pollable))
    }

    fn block(&mut self, pollable: Resource<DynPollable>) -> wasmtime::Result<()> {
        self.limit
            .trap(async_poll::HostPollable::block(&mut *self.table, pollable))?
    }

    fn drop(&mut self, pollable: Resource<DynPollable>) -> wasmtime::Result<()> {
        ambient(|| poll::HostPollable::drop(self.table, pollable))
    }
}

impl streams::Host for Bounded<'_> {
    fn convert_stream_error(&mut self, err: StreamError) -> wasmtime::Result<streams::StreamError> {
        streams::Host::convert_stream_error(self.table, err)
    }
}

impl streams::HostInputStream for Bounded<'_> {
    fn drop(&mut self, stream: Resource<DynInputStream>) -> wasmtime::Result<()> {
        self.limit
            .trap(AsyncInput::drop(&mut *self.table, stream))?
    }

    fn read(&mut self, stream: Resource<DynInputStream>, len: u64) -> StreamResult<Vec<u8>> {
        ambient(|| streams::HostInputStream::read(self.table, stream, len))
    }

    fn blocking_read(
        &mut self,
        stream: Resource<DynInputStream>,
        len: u64,
    ) -> StreamResult<Vec<u8>> {
        self.limit
            .stream(AsyncInput::blocking_read(&mut *self.table, stream, len))
    }

    fn skip(&mut self, stream: Resource<DynInputStream>, len: u64) -> StreamResult<u64> {
        ambient(|| streams::HostInputStream::skip(self.table, stream, len))
    }

    fn blocking_skip(&mut self, stream: Resource<DynInputStream>, len: u64) -> StreamResult<u64> {
        self.limit
            .stream(AsyncInput::blocking_skip(&mut *self.table, stream, len))
    }

    fn subscribe(
        &mut self,
        stream: Resource<DynInputStream>,
    ) -> wasmtime::Result<Resource<DynPollable>> {
        ambient(|| streams::HostInputStream::subscribe(self.table, stream))
    }
}

impl streams::HostOutputStream for Bounded<'_> {
    fn drop(&mut self, stream: Resource<DynOutputStream>) -> wasmtime::Result<()> {
        self.limit
            .trap(AsyncOutput::drop(&mut *self.table, stream))?
    }

    fn check_write(&mut self, stream: Resource<DynOutputStream>) -> StreamResult<u64> {
        ambient(|| streams::HostOutputStream::check_write(self.table, stream))
    }

    fn write(&mut self, stream: Resource<DynOutputStream>, bytes: Vec<u8>) -> StreamResult<()> {
        ambient(|| streams::HostOutputStream::write(self.table, stream, bytes))
    }

    fn blocking_write_and_flush(
        &mut self,
        stream: Resource<DynOutputStream>,
        bytes: Vec<u8>,
    ) -> StreamResult<()> {
        self.limit.stream(AsyncOutput::blocking_write_and_flush(
            &mut *self.table,
            stream,
            bytes,
        ))
    }

    fn blocking_write_zeroes_and_flush(
        &mut self,
        stream: Resource<DynOutputStream>,
        len: u64,
    ) -> StreamResult<()> {
        self.limit
            .stream(AsyncOutput::blocking_write_zeroes_and_flush(
                &mut *self.table,
                stream,
                len,
            ))
    }

    fn subscribe(
        &mut self,
        stream: Resource<DynOutputStream>,
    ) -> wasmtime::Result<Resource<DynPollable>> {
        ambient(|| streams::HostOutputStream::subscribe(self.table, stream))
    }

    fn write_zeroes(&mut self, stream: Resource<DynOutputStream>, len: u64) -> StreamResult<()> {
        ambient(|| streams::HostOutputStream::write_zeroes(self.table, stream, len))
    }

    fn flush(&mut self, stream: Resource<DynOutputStream>) -> StreamResult<()> {
        ambient(|| streams::HostOutputStream::flush(self.table, stream))
    }

    fn blocking_flush(&mut self, stream: Resource<DynOutputStream>) -> StreamResult<()> {
        self.limit
            .stream(AsyncOutput::blocking_flush(&mut *self.table, stream))
    }

    fn splice(
        &mut self,
        dst: Resource<DynOutputStream>,
        src: Resource<DynInputStream>,
        len: u64,
    ) -> StreamResult<u64> {
        ambient(|| streams::HostOutputStream::splice(self.table, dst, src, len))
    }

    fn blocking_splice(
        &mut self,
        dst: Resource<DynOutputStream>,
        src: Resource<DynInputStream>,
        len: u64,
    ) -> StreamResult<u64> {
        self.limit.stream(AsyncOutput::blocking_splice(
            &mut *self.table,
            dst,
            src,
            len,
        ))
    }
}
