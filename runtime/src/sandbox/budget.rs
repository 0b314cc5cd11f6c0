//! What one call may take of the host's disk and descriptors.
//!
//! Memory and time are bounded by wasmtime; these are the host resources a
//! guest reaches through `wasi:filesystem`, `wasi:sockets` and `wasi:http`:
//! bytes written into granted folders and files created there
//! (`limits.write`, `limits.files`), and descriptors held open at once
//! (`limits.open`: files, folder listings, file streams, TCP sockets, name
//! lookups, HTTP connections). Each is checked by the host *before* the
//! operation, so the guest sees an ordinary error (`insufficient-space` for
//! bytes, `quota` for files and descriptors, `new-socket-limit` and
//! `connection-limit-reached` for the network) long before the operating
//! system would refuse — and long before one call could take the
//! descriptors the server needs to accept connections.
//!
//! Descriptors are also bounded for the whole process: all calls together
//! may hold at most the soft `RLIMIT_NOFILE` minus a reserve kept for the
//! server (listener, connections, compile cache, audit log).

use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use bytes::Bytes;
use wasmtime_wasi_io::poll::Pollable;
use wasmtime_wasi_io::streams::{
    DynInputStream, DynOutputStream, InputStream, OutputStream, StreamError, StreamResult,
};

/// Descriptors the server keeps for itself, whatever the calls hold.
const RESERVED_DESCRIPTORS: usize = 256;

/// Bytes a call may still write into its folders; shared by the call's
/// filesystem layer and the file streams it handed out.
#[derive(Debug, Clone)]
pub struct WriteBudget {
    left: Arc<AtomicU64>,
    limit: u64,
    /// Set once a write was refused, so the call's error can say why.
    refused: Arc<AtomicBool>,
}

/// The budget's limit was reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exhausted;

impl WriteBudget {
    pub fn new(limit: u64) -> Self {
        WriteBudget {
            left: Arc::new(AtomicU64::new(limit)),
            limit,
            refused: Arc::new(AtomicBool::new(false)),
        }
    }

    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Takes `bytes` from the budget, or nothing when fewer are left (and
    /// says so in the log, once per refused write).
    pub fn spend(&self, bytes: u64) -> Result<(), Exhausted> {
        self.left
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |left| {
                left.checked_sub(bytes)
            })
            .map(drop)
            .map_err(|_| {
                self.refused.store(true, Ordering::Relaxed);
                tracing::info!(
                    "a call reached its write limit of {} (limits.write)",
                    super::format_size(self.limit)
                );
                Exhausted
            })
    }

    /// Whether a write was refused for this budget.
    pub fn was_refused(&self) -> bool {
        self.refused.load(Ordering::Relaxed)
    }

    /// Wraps a stream writing into a granted folder so that what goes
    /// through it is taken from this budget (and its file counts as open
    /// while it lives).
    pub fn guard_stream(&self, inner: DynOutputStream, held: Held) -> DynOutputStream {
        Box::new(BudgetedStream {
            inner,
            budget: self.clone(),
            _held: held,
        })
    }
}

/// An output stream into a file, charged to the call's write budget.
struct BudgetedStream {
    inner: DynOutputStream,
    budget: WriteBudget,
    _held: Held,
}

/// What a guest stream sees when the budget is spent: `ENOSPC`, which
/// `filesystem-error-code` turns into `insufficient-space`.
fn no_space() -> StreamError {
    StreamError::LastOperationFailed(std::io::Error::from_raw_os_error(28).into())
}

#[async_trait::async_trait]
impl OutputStream for BudgetedStream {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        if self.budget.spend(bytes.len() as u64).is_err() {
            return Err(no_space());
        }
        self.inner.write(bytes)
    }

    fn flush(&mut self) -> StreamResult<()> {
        self.inner.flush()
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        self.inner.check_write()
    }

    async fn cancel(&mut self) {
        self.inner.cancel().await;
    }
}

#[async_trait::async_trait]
impl Pollable for BudgetedStream {
    async fn ready(&mut self) {
        self.inner.ready().await;
    }
}

/// Descriptors held by all calls of this process together.
static HELD: AtomicUsize = AtomicUsize::new(0);

/// How many descriptors all calls together may hold.
fn process_budget() -> usize {
    static BUDGET: OnceLock<usize> = OnceLock::new();
    *BUDGET.get_or_init(|| {
        let soft = soft_descriptor_limit();
        // Keep the reserve, and at least a quarter of a small limit.
        soft.saturating_sub(RESERVED_DESCRIPTORS.max(soft / 4))
            .max(16)
    })
}

/// The process's soft limit on open descriptors.
fn soft_descriptor_limit() -> usize {
    #[cfg(unix)]
    let soft = rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .and_then(|n| usize::try_from(n).ok());
    #[cfg(not(unix))]
    let soft = None;
    soft.unwrap_or(1024)
}

/// The descriptors one call holds (`limits.open`), shared by its
/// filesystem layer and the streams it handed out.
#[derive(Debug, Clone)]
pub struct Descriptors {
    held: Arc<CallHeld>,
    limit: u64,
}

/// What one call holds, in one allocation per call.
#[derive(Debug, Default)]
struct CallHeld {
    open: AtomicU64,
    /// Set once a descriptor was refused, so the call's error can say why.
    refused: AtomicBool,
}

/// Why a descriptor was not handed out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NoDescriptor {
    /// The call holds `limits.open` already.
    #[error("the call holds {0} descriptors, its limit (limits.open)")]
    Call(u64),
    /// All calls together hold what the process allows them.
    #[error("calls hold all the descriptors the server leaves them")]
    Process,
}

impl Descriptors {
    pub fn new(limit: u64) -> Self {
        Descriptors {
            held: Arc::default(),
            limit,
        }
    }

    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Whether a descriptor was refused (files, listings, sockets, HTTP
    /// connections alike).
    pub fn was_refused(&self) -> bool {
        self.held.refused.load(Ordering::Relaxed)
    }

    /// A place for one more descriptor in the call's and the process's
    /// budget, held until the [`Held`] is dropped.
    pub fn take(&self) -> Result<Held, NoDescriptor> {
        let taken = self.take_place();
        if taken.is_err() {
            self.held.refused.store(true, Ordering::Relaxed);
        }
        taken
    }

    fn take_place(&self) -> Result<Held, NoDescriptor> {
        let limit = self.limit;
        self.held
            .open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < limit).then_some(n + 1)
            })
            .map_err(|_| NoDescriptor::Call(limit))?;
        let budget = process_budget();
        let process = HELD.fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
            (held < budget).then_some(held + 1)
        });
        if process.is_err() {
            self.held.open.fetch_sub(1, Ordering::AcqRel);
            return Err(NoDescriptor::Process);
        }
        Ok(Held {
            call: self.held.clone(),
        })
    }
}

/// One descriptor a call holds, counted against the call's and the
/// process's budget until dropped.
#[derive(Debug)]
pub struct Held {
    call: Arc<CallHeld>,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.call.open.fetch_sub(1, Ordering::AcqRel);
        HELD.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A stream of a file, holding its place in the descriptor budget: the file
/// stays open while a stream of it lives, even after its descriptor is
/// dropped.
pub fn hold_input(inner: DynInputStream, held: Held) -> DynInputStream {
    Box::new(HeldInput { inner, _held: held })
}

struct HeldInput {
    inner: DynInputStream,
    _held: Held,
}

#[async_trait::async_trait]
impl InputStream for HeldInput {
    fn read(&mut self, size: usize) -> StreamResult<Bytes> {
        self.inner.read(size)
    }

    fn skip(&mut self, nelem: usize) -> StreamResult<usize> {
        self.inner.skip(nelem)
    }

    async fn cancel(&mut self) {
        self.inner.cancel().await;
    }
}

#[async_trait::async_trait]
impl Pollable for HeldInput {
    async fn ready(&mut self) {
        self.inner.ready().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_is_spent_exactly_and_never_below_zero() {
        let budget = WriteBudget::new(10);
        assert_eq!(budget.spend(4), Ok(()));
        assert_eq!(budget.spend(6), Ok(()));
        assert_eq!(budget.spend(1), Err(Exhausted));
        assert_eq!(budget.spend(0), Ok(()));
        let shared = budget.clone();
        assert_eq!(shared.spend(1), Err(Exhausted), "clones share one budget");
    }

    #[test]
    fn a_refused_spend_takes_nothing() {
        let budget = WriteBudget::new(10);
        assert_eq!(budget.spend(11), Err(Exhausted));
        assert_eq!(budget.spend(10), Ok(()));
    }

    #[test]
    fn the_process_keeps_descriptors_in_reserve() {
        let budget = process_budget();
        let soft = soft_descriptor_limit();
        assert!(budget < soft, "{budget} of {soft}");
    }

    #[test]
    fn a_call_holds_at_most_its_limit_and_gets_each_back_on_drop() {
        let call = Descriptors::new(2);
        let one = call.take().expect("first");
        let two = call.take().expect("second");
        assert!(!call.was_refused());
        assert_eq!(call.take().err(), Some(NoDescriptor::Call(2)));
        assert!(call.clone().was_refused(), "clones share the refusal");
        drop(one);
        let three = call.take().expect("a place again after a drop");
        drop((two, three));
        assert_eq!(call.held.open.load(Ordering::Acquire), 0);
    }
}
