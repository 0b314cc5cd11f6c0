//! What one call's `Store` holds: its WASI context, its limits, and the host
//! services (`airlock:tool/host`) wired to whoever observes the call (the
//! requests to the client are checked and converted in `asks`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use wasmtime::ResourceLimiter;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use super::asks::{self, AskState};
use super::bindings::host;
use super::bounded_fs::BoundedFs;
use super::folders::{FolderGuard, Guarded};
use super::interruption::{CancelToken, Interruption};
use super::outgoing::HttpFilter;
use super::pipe::CapturedOutput;
use super::redact::Redactor;
use super::sockets::{SocketHolds, Sockets};
use super::waits::{Bounded, Limit};
use crate::observe::{AskKind, CallObserver};
use crate::tool::Level;

/// Counts the memory a call's instance grows into and refuses growth past
/// the limit. The sandbox asks it afterwards whether the limit was hit: a
/// guest that aborts on allocation failure traps with `unreachable`, so the
/// trap kind alone cannot tell.
pub struct Limiter {
    memory_limit: u64,
    memory_used: u64,
    pub memory_hit: bool,
}

/// Upper bound on table elements; tables are not a resource operators tune.
const MAX_TABLE_ELEMENTS: usize = 1 << 20;

impl Limiter {
    pub fn new(memory_limit: u64) -> Self {
        Limiter {
            memory_limit,
            memory_used: 0,
            memory_hit: false,
        }
    }
}

impl ResourceLimiter for Limiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let growth = desired.saturating_sub(current) as u64;
        if self.memory_used.saturating_add(growth) > self.memory_limit {
            self.memory_hit = true;
            return Ok(false);
        }
        self.memory_used += growth;
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS)
    }
}

/// The data of one call's `Store`.
pub struct CallState {
    wasi: WasiCtx,
    table: ResourceTable,
    pub limiter: Limiter,
    pub output: CapturedOutput,
    pub observer: Arc<dyn CallObserver>,
    pub cancel: CancelToken,
    pub interruption: Option<Interruption>,
    http: WasiHttpCtx,
    /// Checks and sends outgoing HTTP requests (no network by default).
    pub net: HttpFilter,
    /// What the call created, for create-only folders (off by default).
    pub folder_guard: FolderGuard,
    /// The TCP sockets the call holds, counted with its descriptors.
    socket_holds: SocketHolds,
    /// What the call may still send its client (log and progress).
    pub notices: Notices,
    /// When the call's wall time runs out; bounds blocking host calls too.
    pub deadline: std::time::Instant,
    /// What `wasi:config/store` answers (the grant's `config`).
    pub config: Vec<(String, String)>,
    /// The call's injected secrets, kept out of what it sends its client.
    pub redactor: Redactor,
    /// What the call may still ask its client, and what it asked.
    pub asks: AskState,
    last_progress: Option<f64>,
}

impl CallState {
    /// A call's store data: what its grant provides comes in ready-made
    /// (see `provision`), or is set on the fields afterwards.
    pub fn new(
        wasi: WasiCtx,
        limiter: Limiter,
        output: CapturedOutput,
        observer: Arc<dyn CallObserver>,
        cancel: CancelToken,
        folder_guard: FolderGuard,
        notices: Notices,
    ) -> Self {
        // Sockets count against the same descriptors as open files.
        let socket_holds = SocketHolds::new(folder_guard.descriptors());
        CallState {
            wasi,
            table: ResourceTable::new(),
            limiter,
            output,
            observer,
            cancel,
            interruption: None,
            http: WasiHttpCtx::new(),
            net: HttpFilter::default(),
            folder_guard,
            socket_holds,
            notices,
            deadline: std::time::Instant::now(),
            config: Vec::new(),
            redactor: Redactor::default(),
            asks: AskState::default(),
            last_progress: None,
        }
    }

    /// wasmtime-wasi's filesystem view together with the call's folder
    /// guard and limit: what `wasi:filesystem/types` is linked to.
    pub fn folders(&mut self) -> Guarded<'_> {
        let fs = BoundedFs {
            fs: wasmtime_wasi::filesystem::WasiFilesystemCtxView {
                ctx: self.wasi.filesystem(),
                table: &mut self.table,
            },
            limit: Limit {
                deadline: self.deadline,
                cancel: &self.cancel,
                interruption: &mut self.interruption,
            },
        };
        Guarded::new(fs, &mut self.folder_guard)
    }

    /// wasmtime-wasi's sockets view with the sockets the call holds: what
    /// `wasi:sockets/tcp` and `tcp-create-socket` are linked to.
    pub fn counted_sockets(&mut self) -> Sockets<'_> {
        Sockets {
            view: wasmtime_wasi::sockets::WasiSocketsCtxView {
                ctx: self.wasi.sockets(),
                table: &mut self.table,
            },
            holds: &mut self.socket_holds,
        }
    }

    /// The resource table with the call's deadline and cancellation: what
    /// `wasi:io/poll` and `wasi:io/streams` are linked to.
    pub fn bounded(&mut self) -> Bounded<'_> {
        Bounded {
            table: &mut self.table,
            limit: Limit {
                deadline: self.deadline,
                cancel: &self.cancel,
                interruption: &mut self.interruption,
            },
        }
    }
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl WasiHttpView for CallState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.net,
        }
    }
}

impl From<host::Level> for Level {
    fn from(level: host::Level) -> Self {
        match level {
            host::Level::Debug => Level::Debug,
            host::Level::Info => Level::Info,
            host::Level::Notice => Level::Notice,
            host::Level::Warning => Level::Warning,
            host::Level::Error => Level::Error,
            host::Level::Critical => Level::Critical,
            host::Level::Alert => Level::Alert,
            host::Level::Emergency => Level::Emergency,
        }
    }
}

/// Longest log or progress message forwarded; a guest must not be able to
/// flood clients through the host interface.
const MAX_MESSAGE: usize = 16 * 1024;

fn clip(text: &str) -> &str {
    if text.len() <= MAX_MESSAGE {
        return text;
    }
    let mut end = MAX_MESSAGE;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Progress reports closer together than this are coalesced: the latest
/// one is kept and sent when the next is due, or when the call ends.
const PROGRESS_EVERY: Duration = Duration::from_millis(20);

/// A progress report waiting to be sent.
type HeldProgress = (f64, Option<f64>, Option<String>);

/// What a call may still send its client through `host::log` and
/// `host::progress` (`limits.messages`, and `limits.log` bytes): whatever
/// the client reads, one call queues a bounded amount toward it. What is
/// over is dropped and counted, and the count reported once at the end.
#[derive(Debug)]
pub struct Notices {
    messages_left: u64,
    bytes_left: u64,
    dropped: u64,
    last_progress_sent: Option<Instant>,
    held_progress: Option<HeldProgress>,
}

impl Notices {
    pub fn new(messages: u64, bytes: u64) -> Self {
        Notices {
            messages_left: messages,
            bytes_left: bytes,
            dropped: 0,
            last_progress_sent: None,
            held_progress: None,
        }
    }

    /// Takes one message of `len` bytes from the budget, or counts it as
    /// dropped.
    fn admit(&mut self, len: usize) -> bool {
        let len = len as u64;
        if self.messages_left == 0 || self.bytes_left < len {
            self.dropped += 1;
            return false;
        }
        self.messages_left -= 1;
        self.bytes_left -= len;
        true
    }
}

impl CallState {
    fn send_progress(&mut self, (done, total, message): HeldProgress) {
        // Redacted before clipping, so a clip cannot cut a secret in two.
        let message = message.map(|m| self.redactor.text(&m).into_owned());
        let message = message.as_deref().map(clip);
        if self.notices.admit(message.map_or(0, str::len)) {
            self.notices.last_progress_sent = Some(Instant::now());
            self.observer.progress(done, total, message);
        }
    }

    /// At the end of the call: sends the progress report still held, and
    /// tells the client how many messages were dropped, once.
    pub fn flush_notices(&mut self) {
        if let Some(held) = self.notices.held_progress.take() {
            self.send_progress(held);
        }
        let dropped = std::mem::take(&mut self.notices.dropped);
        if dropped > 0 {
            self.observer.log(
                Level::Warning,
                &format!(
                    "{dropped} log and progress message(s) dropped: over this call's limit \
                     (limits.messages, limits.log)"
                ),
            );
        }
    }
}

impl CallState {
    /// A request to the client, checked against the grant: the client's
    /// result, or the `ask-error` the tool sees; a trap when the request is
    /// answered only in a later round.
    fn ask(
        &mut self,
        kind: AskKind,
        params: serde_json::Value,
    ) -> wasmtime::Result<Result<serde_json::Value, host::AskError>> {
        // A guest may have read a secret airlock injected (echoed back by a
        // server): it does not reach the client this way either.
        let params = self.redactor.value(params);
        let observer = self.observer.clone();
        self.asks
            .ask(kind, params, observer.as_ref(), self.deadline)
            .map_err(wasmtime::Error::new)
    }
}

impl host::Host for CallState {
    fn log(&mut self, level: host::Level, message: String) {
        // Redacted before clipping, so a clip cannot cut a secret in two.
        let message = self.redactor.text(&message);
        let message = clip(&message);
        if self.notices.admit(message.len()) {
            self.observer.log(level.into(), message);
        }
    }

    fn progress(&mut self, done: f64, total: Option<f64>, message: Option<String>) {
        // Progress must only grow; NaN and backwards reports are dropped.
        if !done.is_finite() || self.last_progress.is_some_and(|last| done <= last) {
            return;
        }
        self.last_progress = Some(done);
        let report = (done, total.filter(|t| t.is_finite()), message);
        let due = self
            .notices
            .last_progress_sent
            .is_none_or(|at| at.elapsed() >= PROGRESS_EVERY);
        if due {
            self.notices.held_progress = None;
            self.send_progress(report);
        } else {
            self.notices.held_progress = Some(report);
        }
    }

    fn cancelled(&mut self) -> bool {
        self.cancel.is_cancelled()
    }

    fn elicit(
        &mut self,
        message: String,
        requested_schema: String,
    ) -> wasmtime::Result<Result<host::ElicitAnswer, host::AskError>> {
        let params = match asks::form_params(&message, &requested_schema) {
            Ok(params) => params,
            Err(bad) => return Ok(Err(bad)),
        };
        let answer = self.ask(AskKind::ElicitForm, params)?;
        Ok(answer.and_then(|answer| asks::elicit_answer(&answer)))
    }

    fn elicit_url(
        &mut self,
        message: String,
        url: String,
    ) -> wasmtime::Result<Result<host::ElicitAnswer, host::AskError>> {
        let params = asks::url_params(&message, &url);
        let answer = self.ask(AskKind::ElicitUrl, params)?;
        Ok(answer.and_then(|answer| asks::elicit_answer(&answer)))
    }

    fn sample(
        &mut self,
        request: host::SamplingRequest,
    ) -> wasmtime::Result<Result<host::Sampled, host::AskError>> {
        let params = match asks::sampling_params(&request, self.asks.sample_tokens()) {
            Ok(params) => params,
            Err(bad) => return Ok(Err(bad)),
        };
        let answer = self.ask(AskKind::Sample, params)?;
        Ok(answer.and_then(|answer| asks::sampled(&answer)))
    }

    fn roots(&mut self) -> wasmtime::Result<Result<Vec<host::Root>, host::AskError>> {
        let answer = self.ask(AskKind::Roots, serde_json::json!({}))?;
        Ok(answer.and_then(|answer| asks::roots(&answer)))
    }

    fn ask(
        &mut self,
        requests: Vec<(String, host::Request)>,
    ) -> wasmtime::Result<Result<Vec<Result<host::Answer, host::AskError>>, host::AskError>> {
        let cap = self.asks.sample_tokens();
        let mut kinds = Vec::with_capacity(requests.len());
        let keyed = requests
            .into_iter()
            .map(|(key, request)| {
                let (kind, params) = match request {
                    host::Request::Elicit(form) => (
                        AskKind::ElicitForm,
                        asks::form_params(&form.message, &form.requested_schema),
                    ),
                    host::Request::ElicitUrl(link) => (
                        AskKind::ElicitUrl,
                        Ok(asks::url_params(&link.message, &link.url)),
                    ),
                    host::Request::Sample(request) => {
                        (AskKind::Sample, asks::sampling_params(&request, cap))
                    }
                    host::Request::Roots => (AskKind::Roots, Ok(serde_json::json!({}))),
                };
                kinds.push(kind);
                // Redacted as a single request's params are.
                (key, kind, params.map(|p| self.redactor.value(p)))
            })
            .collect();
        let observer = self.observer.clone();
        let answers = self
            .asks
            .ask_batch(keyed, observer.as_ref(), self.deadline)
            .map_err(wasmtime::Error::new)?;
        Ok(answers.map(|answers| {
            answers
                .into_iter()
                .zip(kinds)
                .map(|(answer, kind)| answer.and_then(|answer| asks::batch_answer(kind, &answer)))
                .collect()
        }))
    }

    fn resource_updated(&mut self, uri: String) {
        self.observer.resource_updated(clip(&uri));
    }
}

impl super::bindings::types::Host for CallState {}
