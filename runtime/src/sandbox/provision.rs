//! What a grant becomes in a call's store: the one place in the sandbox
//! that reads a [`Grant`].
//!
//! `policy::effective` narrows what the policy says rule by rule into a
//! [`Grant`]; this module provisions that grant capability by capability,
//! one section each below: which part of the grant it reads, what it puts
//! in the WASI context or the store, and which module enforces it. The
//! enforcing modules take their own values and never see a `Grant`, so a
//! capability is configured here apart from where it is enforced (Spin's
//! factors are the model, without their machinery).
//!
//! | capability | from the grant | in the store | enforced by |
//! | --- | --- | --- | --- |
//! | folders | `mounts`, `narrowings` | preopened folders, [`FolderGuard`], [`Refusals`] | wasmtime-wasi's `FsPerms`, `folders`, `refusals` |
//! | environment | `env` | the WASI context's variables | wasmtime-wasi |
//! | configuration | `config` | `CallState::config` | `config` (`wasi:config/store`) |
//! | network | `network`, `offline` | the socket check, [`HttpFilter`], [`Redactor`] | `network`, `outgoing`, `redact` |
//! | limits | `limits` | memory limiter, fuel, deadline, budgets, captured output, notices | wasmtime, `call_state`, `budget`, `waits` |
//! | requests to the client | `asks`, `limits` | [`AskState`] | `asks` |
//!
//! Adding a kind of grant is: parse it (`policy::raw`, `parse`, `file`),
//! narrow it (`policy::effective`), provision it (a section here; a new
//! host interface is implemented in its own module and linked in
//! `linker`), and show it (`cli::inspect`).

use std::sync::Arc;
use std::time::Instant;

use wasmtime::{Engine, Store};
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder};

use super::RunError;
use super::asks::AskState;
use super::budget::Descriptors;
use super::call_state::{CallState, Limiter, Notices};
use super::folders::FolderGuard;
use super::interruption::{CancelToken, Interruption};
use super::network;
use super::outgoing::HttpFilter;
use super::pipe::CapturedOutput;
use super::redact::Redactor;
use super::refusals::Refusals;
use super::run::Run;
use crate::observe::CallObserver;
use crate::policy::{Access, Grant};

/// A store on `engine` (the one that compiled the code it will run) with
/// exactly `grant`; `fuel` says whether the engine meters fuel.
pub(super) fn start(
    engine: &Engine,
    grant: &Grant,
    fuel: bool,
    observer: Arc<dyn CallObserver>,
    cancel: CancelToken,
) -> Result<Run, RunError> {
    let output = CapturedOutput::new(grant.limits.log);
    let wasi = wasi_context(grant, &output).map_err(|e| RunError::Setup(e.to_string()))?;
    let mut state = CallState::new(
        wasi,
        Limiter::new(grant.limits.memory),
        output.clone(),
        observer,
        cancel.clone(),
        FolderGuard::for_grant(grant),
        notices(grant),
    );
    state.config = configuration(grant);
    let redactor = Redactor::for_grant(grant);
    state.net = HttpFilter::for_grant(
        grant,
        cancel,
        state.folder_guard.descriptors(),
        redactor.clone(),
    );
    state.redactor = redactor;
    // Requests to the client: what the grant's `ask` and limits allow.
    state.asks =
        AskState::new(grant.asks, &grant.limits).with_elicit_urls(grant.elicit_urls.clone());
    let deadline = Instant::now() + grant.limits.time;
    state.deadline = deadline;
    let mut store = Store::new(engine, state);
    limit_store(&mut store, grant, fuel, deadline)?;
    Ok(Run {
        store,
        output,
        limits: grant.limits,
    })
}

/// The WASI context of a call: its captured output, and what the folders,
/// environment and network sections below put in it.
fn wasi_context(grant: &Grant, output: &CapturedOutput) -> anyhow::Result<WasiCtx> {
    let mut builder = WasiCtxBuilder::new();
    builder.stdout(output.clone()).stderr(output.clone());
    environment(&mut builder, grant);
    preopen_folders(&mut builder, grant)?;
    network::configure_sockets(&mut builder, grant.network.as_ref());
    Ok(builder.build())
}

// Folders: `mounts` (narrowed by the tool's hints, each narrowing recorded).

/// Each mount preopened with the permission wasmtime-wasi enforces itself.
fn preopen_folders(builder: &mut WasiCtxBuilder, grant: &Grant) -> anyhow::Result<()> {
    for mount in &grant.mounts {
        let perms = match mount.access {
            // Create-only is writable for wasmtime-wasi so creation works;
            // the call's `FolderGuard` (see `folders`) refuses the rest.
            Access::ReadWrite | Access::CreateOnly => FsPerms::ReadWrite,
            Access::ReadOnly => FsPerms::ReadOnly,
        };
        builder
            .preopened_dir(&mount.host, &mount.guest, perms)
            .map_err(|e| anyhow::anyhow!("folder {} is not available: {e}", mount.guest))?;
    }
    Ok(())
}

impl FolderGuard {
    /// The guard for a call with `grant`: create-only when any mount is,
    /// with the grant's write, create and descriptor limits.
    pub fn for_grant(grant: &Grant) -> Self {
        let create_only = grant.mounts.iter().any(|m| m.access == Access::CreateOnly);
        FolderGuard::new(create_only, &grant.limits, Refusals::for_grant(grant))
    }
}

impl Refusals {
    /// The record of a call with `grant`: its read-only mounts, and for
    /// each whether a narrowing (the read-only hint) made it so.
    pub fn for_grant(grant: &Grant) -> Self {
        let by_hint = |guest: &str| {
            grant
                .narrowings
                .iter()
                .any(|n| n.what == guest && n.to == Access::ReadOnly.as_str())
        };
        Refusals::new(
            grant
                .mounts
                .iter()
                .filter(|m| m.access == Access::ReadOnly)
                .map(|m| (m.guest.clone(), by_hint(&m.guest)))
                .collect(),
        )
    }
}

// Environment: `env`, exactly these variables.

fn environment(builder: &mut WasiCtxBuilder, grant: &Grant) {
    for (key, value) in &grant.env {
        builder.env(key, value);
    }
}

// Configuration: `config`, what `wasi:config/store` answers.

fn configuration(grant: &Grant) -> Vec<(String, String)> {
    grant.config.clone()
}

// Network: `network` (`None`: none, for the reason `offline`). Raw sockets
// are checked by the WASI context (`network::configure_sockets`, above);
// HTTP requests by the call's filter.

impl Redactor {
    /// The redactor of a call with `grant`: its credentials' secrets.
    pub fn for_grant(grant: &Grant) -> Self {
        let secrets: Vec<String> = grant
            .network
            .iter()
            .flat_map(|n| &n.credentials)
            .map(|c| c.secret.expose().to_string())
            .collect();
        Redactor::new(secrets)
    }
}

impl HttpFilter {
    /// The filter of a call starting now with `grant`.
    pub fn for_grant(
        grant: &Grant,
        cancel: CancelToken,
        descriptors: Descriptors,
        redactor: Redactor,
    ) -> Self {
        HttpFilter::new(
            grant.network.clone(),
            grant.offline,
            Instant::now() + grant.limits.time,
            cancel,
            descriptors,
            redactor,
        )
    }
}

// Limits: `limits`. Memory, log, write, files and open are set above (the
// limiter, the captured output, the folder guard); the rest here.

/// What the call may still send its client (`messages`, and `log` bytes).
fn notices(grant: &Grant) -> Notices {
    Notices::new(grant.limits.messages, grant.limits.log)
}

/// The store's own limits: memory through the limiter, fuel when the
/// engine meters it, and the epoch check of wall time and cancellation.
fn limit_store(
    store: &mut Store<CallState>,
    grant: &Grant,
    fuel: bool,
    deadline: Instant,
) -> Result<(), RunError> {
    store.limiter(|state| &mut state.limiter);
    if fuel {
        store
            .set_fuel(grant.limits.fuel.unwrap_or(u64::MAX))
            .map_err(|e| RunError::Setup(e.to_string()))?;
    }
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(move |mut ctx| {
        let state = ctx.data_mut();
        let why = if state.cancel.is_cancelled() {
            Interruption::Cancelled
        } else if Instant::now() >= deadline {
            Interruption::TimedOut
        } else {
            return Ok(wasmtime::UpdateDeadline::Continue(1));
        };
        state.interruption = Some(why);
        Err(why.into())
    });
    Ok(())
}
