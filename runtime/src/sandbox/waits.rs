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

use super::state::{CallState, CancelToken, Interruption};

/// How often a wait looks at the cancellation flag.
const CANCEL_CHECK: Duration = Duration::from_millis(10);

/// The resource table with the call's deadline: what `wasi:io` is linked to.
pub struct Bounded<'a> {
    pub table: &'a mut ResourceTable,
    pub deadline: Instant,
    pub cancel: &'a CancelToken,
    pub interruption: &'a mut Option<Interruption>,
}

struct BoundedIo;

impl HasData for BoundedIo {
    type Data<'a> = Bounded<'a>;
}

/// Links `wasi:io/poll` and `wasi:io/streams` through this layer, replacing
/// what `wasmtime_wasi::p2::add_to_linker_sync` linked. Call after that.
pub fn add_to_linker(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let linked = poll::add_to_linker::<CallState, BoundedIo>(linker, CallState::bounded)
        .and_then(|()| streams::add_to_linker::<CallState, BoundedIo>(linker, CallState::bounded));
    linker.allow_shadowing(false);
    linked
}

/// Runs `wait` until it finishes, the deadline passes or the call is
/// cancelled, whichever comes first.
fn bounded<F: Future>(
    deadline: Instant,
    cancel: &CancelToken,
    interruption: &mut Option<Interruption>,
    wait: F,
) -> Result<F::Output, Interruption> {
    let outcome = in_tokio(async {
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
    });
    if let Err(why) = outcome {
        *interruption = Some(why);
    }
    outcome
}

impl Bounded<'_> {
    fn wait<F: Future>(
        deadline: Instant,
        cancel: &CancelToken,
        interruption: &mut Option<Interruption>,
        wait: F,
    ) -> wasmtime::Result<F::Output> {
        bounded(deadline, cancel, interruption, wait).map_err(wasmtime::Error::from)
    }

    fn stream<T, F: Future<Output = StreamResult<T>>>(
        deadline: Instant,
        cancel: &CancelToken,
        interruption: &mut Option<Interruption>,
        wait: F,
    ) -> StreamResult<T> {
        match bounded(deadline, cancel, interruption, wait) {
            Ok(result) => result,
            Err(why) => Err(StreamError::Trap(why.into())),
        }
    }
}

impl poll::Host for Bounded<'_> {
    fn poll(&mut self, pollables: Vec<Resource<DynPollable>>) -> wasmtime::Result<Vec<u32>> {
        let (deadline, cancel) = (self.deadline, self.cancel);
        let table = &mut *self.table;
        Self::wait(deadline, cancel, self.interruption, async {
            async_poll::Host::poll(table, pollables).await
        })?
    }
}

impl poll::HostPollable for Bounded<'_> {
    fn ready(&mut self, pollable: Resource<DynPollable>) -> wasmtime::Result<bool> {
        ambient(|| poll::HostPollable::ready(self.table, pollable))
    }

    fn block(&mut self, pollable: Resource<DynPollable>) -> wasmtime::Result<()> {
        let (deadline, cancel) = (self.deadline, self.cancel);
        let table = &mut *self.table;
        Self::wait(deadline, cancel, self.interruption, async {
            async_poll::HostPollable::block(table, pollable).await
        })?
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
        let (deadline, cancel) = (self.deadline, self.cancel);
        let table = &mut *self.table;
        Self::wait(deadline, cancel, self.interruption, async {
            AsyncInput::drop(table, stream).await
        })?
    }

    fn read(&mut self, stream: Resource<DynInputStream>, len: u64) -> StreamResult<Vec<u8>> {
        ambient(|| streams::HostInputStream::read(self.table, stream, len))
    }

    fn blocking_read(
        &mut self,
        stream: Resource<DynInputStream>,
        len: u64,
    ) -> StreamResult<Vec<u8>> {
        let (deadline, cancel) = (self.deadline, self.cancel);
        let table = &mut *self.table;
        Self::stream(deadline, cancel, self.interruption, async {
            AsyncInput::blocking_read(table, stream, len).await
        })
    }

    fn skip(&mut self, stream: Resource<DynInputStream>, len: u64) -> StreamResult<u64> {
        ambient(|| streams::HostInputStream::skip(self.table, stream, len))
    }

    fn blocking_skip(&mut self, stream: Resource<DynInputStream>, len: u64) -> StreamResult<u64> {
        let (deadline, cancel) = (self.deadline, self.cancel);
        let table = &mut *self.table;
        Self::stream(deadline, cancel, self.interruption, async {
            AsyncInput::blocking_skip(table, stream, len).await
        })
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
        let (deadline, cancel) = (self.deadline, self.cancel);
        let table = &mut *self.table;
        Self::wait(deadline, cancel, self.interruption, async {
            AsyncOutput::drop(table, stream).await
        })?
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
        let (deadline, cancel) = (self.deadline, self.cancel);
        let table = &mut *self.table;
        Self::stream(deadline, cancel, self.interruption, async {
            AsyncOutput::blocking_write_and_flush(table, stream, bytes).await
        })
    }

    fn blocking_write_zeroes_and_flush(
        &mut self,
        stream: Resource<DynOutputStream>,
        len: u64,
    ) -> StreamResult<()> {
        let (deadline, cancel) = (self.deadline, self.cancel);
        let table = &mut *self.table;
        Self::stream(deadline, cancel, self.interruption, async {
            AsyncOutput::blocking_write_zeroes_and_flush(table, stream, len).await
        })
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
        let (deadline, cancel) = (self.deadline, self.cancel);
        let table = &mut *self.table;
        Self::stream(deadline, cancel, self.interruption, async {
            AsyncOutput::blocking_flush(table, stream).await
        })
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
        let (deadline, cancel) = (self.deadline, self.cancel);
        let table = &mut *self.table;
        Self::stream(deadline, cancel, self.interruption, async {
            AsyncOutput::blocking_splice(table, dst, src, len).await
        })
    }
}
