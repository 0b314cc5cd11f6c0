//! What every request that runs a guest shares in MCP — `tools/call` (at
//! once or in rounds), `resources/read`, `prompts/get`,
//! `completion/complete`: how its guest may ask this request's client (in
//! band on its stream, or in rounds of 2026-07-28), what a request whose
//! run was stopped answers, and how a round ends short of an outcome.
//! Each handler keeps only what is its own (a call's confirmation and
//! tasks; an offer's result shape).

use super::context::Ctx;
use super::model::Retry;
use super::outcome::{Asking, shutting_down};
use super::replay::Replay;
use super::request::Answer;
use super::revision::AskingBy;
use crate::call::{CallError, Ran};
use crate::sandbox::{CancelToken, RunError};

/// How the guest of an entry whose grant lets it ask (`may_ask`) asks
/// this request's client: in rounds bound to `digest` (2026-07-28: the
/// rounds so far are checked and replayed, or the request is answered
/// here), else in band on the request's stream; `None` when it may not
/// ask at all.
pub async fn asking(
    ctx: &Ctx<'_>,
    may_ask: bool,
    retry: &Retry,
    digest: &str,
    cancel: &CancelToken,
) -> Result<Option<Asking>, Answer> {
    if !may_ask {
        return Ok(None);
    }
    match ctx.revision.wire().asking_by() {
        AskingBy::Rounds => Ok(Some(Asking::Replay(ctx.replay(retry, digest).await?))),
        _ => Ok(Some(Asking::InBand(ctx.in_band(cancel.clone())))),
    }
}

/// The answer of a request whose run was stopped: an error when the
/// server shuts down (every request gets one answer, even then), none when
/// the client cancelled it (MCP sends no response then).
pub fn stopped(cancel: &CancelToken) -> Option<Answer> {
    if cancel.is_shut_down() {
        return Some(Answer::Error(shutting_down()));
    }
    cancel.is_cancelled().then_some(Answer::Nothing)
}

/// How a run in rounds answers short of its outcome: the next round when
/// its guest waits for the client; -32021 naming the capability when it
/// failed after the client could not be asked something. `None`: the
/// outcome is the answer.
pub fn round_ended<A>(
    replay: &Replay,
    digest: &str,
    outcome: &Option<Result<Ran<A>, CallError>>,
) -> Option<Answer> {
    match outcome {
        Some(Ok(Ran::Waits(asks))) => Some(replay.next_round(digest, asks)),
        Some(Err(CallError::Run(RunError::Failed(_)))) => {
            replay.missing_capability().map(Answer::Error)
        }
        _ => None,
    }
}
