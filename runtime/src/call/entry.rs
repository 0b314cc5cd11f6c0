//! What can be entered in a guest — a tool's call, a component's read,
//! prompt or completion — as the one path ([`super::Prepared`]) sees it:
//! its names in the metrics and the audit log, the places it takes under a
//! concurrency limit, whether it may run inline, and its own run. Each
//! kind implements [`Entry`] with only what is its own (`tool_call.rs`,
//! `offer.rs`); the path writes the rest once.

use std::borrow::Cow;
use std::sync::Arc;

use super::CallError;
use crate::catalog::{Component, Places};
use crate::cordon::wire::{Done, Work};
use crate::lanes::Pace;
use crate::observe::CallObserver;
use crate::policy::Grant;
use crate::sandbox::{CancelToken, Ran, RunError, Sandbox, Teardown};

/// How an entry ended: its answer, a wait for its client (a request only
/// a later round answers), or why it has no answer.
pub type Outcome<E> = Result<Ran<<E as Entry>::Answer>, CallError>;

/// One kind of entry into a guest.
pub trait Entry: Send + Sync + Sized + 'static {
    /// What its run hands back, checked.
    type Answer: Send + 'static;

    /// The component whose guest runs it.
    fn component(&self) -> &Arc<Component>;

    /// Its name in the metrics and the log lines: a declared name (a tool,
    /// a resource or template, a prompt), never a client's text.
    fn label(&self) -> &str;

    /// Its name in the audit log: the tool, or the URI read.
    fn audit_name(&self) -> Cow<'_, str>;

    /// The places it takes under its concurrency limit: its tool's, or its
    /// component's (reads, prompts and completions share one).
    fn places(&self) -> &Arc<Places>;

    /// What a `busy` refusal names.
    fn busy_name(&self) -> String;

    /// How long its recent runs took, when it may run inline on an idle
    /// server ([`crate::lanes::Inline`]); `None` runs it on a lane always.
    fn pace(&self) -> Option<&Pace>;

    /// What the audit log counts as its bytes out.
    fn bytes_out(answer: &Self::Answer) -> usize;

    /// Runs its guest once in this process: consent, cancellation and the
    /// observer are the path's, already settled in `entering`.
    fn run(&self, entering: Entering<'_>) -> (Outcome<Self>, Teardown);

    /// What its component's cordon's worker is to run for it — or its
    /// answer, when it has one without running its guest.
    fn work(&self) -> Result<Work, Self::Answer>;

    /// Its outcome from what the worker's run of [`Self::work`] ended with.
    fn answered(&self, ran: Result<Ran<Done>, RunError>) -> Outcome<Self>;
}

/// What one run of an entry's guest is given (a context per entry).
pub struct Entering<'a> {
    pub sandbox: &'a Sandbox,
    pub grant: &'a Grant,
    /// Hears its logs, progress, questions and resource updates.
    pub observer: Arc<dyn CallObserver>,
    pub cancel: CancelToken,
    /// Its id in the log lines.
    pub id: u64,
}
