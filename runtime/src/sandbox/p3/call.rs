//! Calls of WASI 0.3 components: the same `Run` (store, grant, limits,
//! outcome checks) as a 0.2 call, with the component instantiated and
//! called through wasmtime's async API, driven to the end on the calling
//! thread.
//!
//! Wall time: a guest running wasm is stopped by the epoch check, as on
//! the 0.2 engines; a guest suspended in an async host call (a 0.3 clock's
//! `wait-for`, a request's response) runs no wasm, so the drive itself
//! ends at the call's deadline or cancellation and records which
//! (`Interruption`), as the 0.2 engines' bounded waits do (`waits`).

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use wasmtime::component::{TypedFunc, Val};

use crate::sandbox::bindings::{CallFunc, types};
use crate::sandbox::interruption::{CancelToken, Interruption};
use crate::sandbox::plain::{FunctionCall, function_call};
use crate::sandbox::run::Run;
use crate::sandbox::{CallState, FunctionsPre, Linked, RawOutput, RunError, ToolPre};

/// How often a drive looks at the cancellation flag.
const CANCEL_CHECK: Duration = Duration::from_millis(10);

impl Run {
    /// Instantiates `pre`'s component and calls tool `name` with
    /// `arguments`, with wasmtime's async API.
    pub(in crate::sandbox) fn call_concurrent(
        &mut self,
        pre: &Linked,
        name: &str,
        arguments: &str,
    ) -> Result<RawOutput, RunError> {
        match pre {
            Linked::Tool(pre) => {
                let result = self.drive(async |store| {
                    let (linked, _, call) = pre.parts();
                    let instance = linked.instantiate_async(&mut *store).await?;
                    let func = instance.get_func(&mut *store, call).ok_or_else(|| {
                        wasmtime::format_err!("the instance lacks the contract's `call`")
                    })?;
                    let call: CallFunc<'_> = func.typed(&*store)?;
                    let (returned,) = call.call_async(&mut *store, (name, arguments)).await?;
                    Ok(returned)
                });
                self.tool_output(result)
            }
            Linked::Functions(pre) => self.call_function_concurrent(pre, name, arguments),
            // Refused at link (`Sandbox::link`).
            Linked::Wasmcp(_) => Err(RunError::Setup(
                "wasmcp components run on the WASI 0.2 engine only".into(),
            )),
        }
    }

    fn call_function_concurrent(
        &mut self,
        pre: &FunctionsPre,
        name: &str,
        arguments: &str,
    ) -> Result<RawOutput, RunError> {
        let FunctionCall {
            export,
            function,
            params,
            mut results,
        } = function_call(pre, name, arguments)?;
        let called = self.drive(async |store| {
            let instance = pre.pre.instantiate_async(&mut *store).await?;
            let func = instance.get_func(&mut *store, export).ok_or_else(|| {
                wasmtime::format_err!("the instance lacks `{}`", function.qualified())
            })?;
            func.call_async(&mut *store, &params, &mut results).await
        });
        let results: &[Val] = &results;
        self.function_output(function, results, called)
    }

    /// Lists the tools of a contract component (at load).
    pub(in crate::sandbox) fn describe_concurrent(
        &mut self,
        pre: &ToolPre<CallState>,
    ) -> wasmtime::Result<Vec<types::Tool>> {
        self.drive(async |store| {
            let (linked, describe, _) = pre.parts();
            let instance = linked.instantiate_async(&mut *store).await?;
            let describe: TypedFunc<(), (Vec<types::Tool>,)> =
                pre.typed(&mut *store, &instance, &describe)?;
            let (tools,) = describe.call_async(&mut *store, ()).await?;
            Ok(tools)
        })
    }

    /// Runs `work` on the store to its end, or until the call's deadline
    /// or cancellation, which is then recorded as the call's interruption.
    fn drive<R>(
        &mut self,
        work: impl AsyncFnOnce(&mut wasmtime::Store<CallState>) -> wasmtime::Result<R>,
    ) -> wasmtime::Result<R> {
        let deadline = self.store.data().deadline;
        let cancel = self.store.data().cancel.clone();
        let outcome = bounded(deadline, &cancel, work(&mut self.store));
        outcome.unwrap_or_else(|why| {
            self.store.data_mut().interruption = Some(why);
            Err(why.into())
        })
    }
}

/// `work` to its end, or the deadline or cancellation that came first.
fn bounded<T>(
    deadline: Instant,
    cancel: &CancelToken,
    work: impl Future<Output = T>,
) -> Result<T, Interruption> {
    // Host calls of the 0.2 interfaces block on Tokio (`in_tokio`) inside
    // this drive, so it runs on no Tokio worker (on a call run inline, its
    // work moves to another thread first) and enters a runtime only for
    // its timers and sockets.
    crate::lanes::blocking(|| {
        wasmtime_wasi::runtime::with_ambient_tokio_runtime(|| {
            block_on(async {
                let cancelled = async {
                    while !cancel.is_cancelled() {
                        tokio::time::sleep(CANCEL_CHECK).await;
                    }
                };
                tokio::select! {
                    out = work => Ok(out),
                    () = tokio::time::sleep_until(deadline.into()) => Err(Interruption::TimedOut),
                    () = cancelled => Err(Interruption::Cancelled),
                }
            })
        })
    })
}

/// Wakes the thread that drives a call.
struct Unpark(std::thread::Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// Polls `work` on this thread until it is ready, parked in between.
fn block_on<F: Future>(work: F) -> F::Output {
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut context = Context::from_waker(&waker);
    let mut work = pin!(work);
    loop {
        if let Poll::Ready(out) = work.as_mut().poll(&mut context) {
            return out;
        }
        std::thread::park();
    }
}
