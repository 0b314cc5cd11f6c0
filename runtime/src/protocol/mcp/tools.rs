//! `tools/list` and `tools/call`: one path for every revision.
//!
//! A call is prepared by [`crate::call`] on behalf of the request's caller,
//! confirmed when its tool is destructive under `confirm` (through a
//! round-trip or an elicitation request, as the revision says), and run
//! either at once on a lane — its logs and progress going to the request's
//! outbox — or as a task ([`super::tasks`]). A tool that may ask the client
//! asks in band ([`super::asks`]), or in 2026-07-28 in rounds
//! ([`super::replay`]).

use std::sync::Arc;

use serde_json::Value;

use super::confirm;
use super::context::Ctx;
use super::inputs::Inputs;
use super::model::tools::{CallParams, ListedTool};
use super::model::{ListParams, Page, Retry};
use super::offers::with_cache_hints;
use super::outcome::{Asking, Observer, outcome_of, tool_error, unknown_tool};
use super::replay;
use super::request::{Answer, cursor_after, page, read_cursor};
use super::request_state::call_digest;
use super::revision::{AskingBy, Confirming};
use super::running;
use super::tasks;
use crate::call::{CallError, Confirmation, PreparedCall, ToolCall, settled};
use crate::protocol::jsonrpc::ErrorObject;

/// How long a 2026-07-28 call that runs as a task and may ask its client
/// runs in its request first: a question within it is a round (no task
/// yet); a call still running after it becomes the task.
const ROUNDS_BEFORE_TASK: std::time::Duration = std::time::Duration::from_millis(500);

/// Tools per `tools/list` page.
pub const PAGE_SIZE: usize = 50;

/// `tools/list`: the tools the caller may see, a page at a time.
pub fn list(ctx: &Ctx<'_>, params: &ListParams) -> Result<Value, ErrorObject> {
    let after = read_cursor(params.cursor.as_deref(), "")?;
    let catalog = ctx.server().runtime.catalog();
    let visible = catalog
        .tools()
        .filter(|t| ctx.allows(&t.info.name))
        .filter(|t| after.as_deref().is_none_or(|a| t.info.name.as_str() > a));
    let (tools, more) = page(visible, PAGE_SIZE);
    let result = Page {
        key: "tools",
        items: tools.iter().map(|t| ListedTool::of(t)).collect(),
        next_cursor: more
            .then(|| tools.last().map(|last| cursor_after("", &last.info.name)))
            .flatten(),
    };
    Ok(with_cache_hints(
        ctx,
        result.into_map(),
        super::lifecycle::LIST_TTL_MS,
    ))
}

/// `tools/call`.
pub async fn call(ctx: &Ctx<'_>, params: CallParams) -> Answer {
    let progress = params.progress();
    let CallParams {
        name,
        arguments,
        task,
        retry,
        ..
    } = params;
    let name = name.as_str();
    let runtime = &ctx.server().runtime;
    let unknown = || Answer::Error(unknown_tool(name, runtime.still_loading()));
    // A tool the token may not see does not exist for this client.
    let support = runtime.catalog().tool(name).map(|t| t.info.task_support);
    let Some(support) = support.filter(|_| ctx.allows(name)) else {
        return unknown();
    };
    let wire = ctx.revision.wire();
    let task = match wire.task_of_call(name, support, task, ctx.client.tasks) {
        Ok(task) => task,
        Err(error) => return Answer::Error(error),
    };
    let mut prepared = match runtime.prepare(ctx.caller().clone(), name, arguments) {
        Ok(prepared) => prepared,
        Err(CallError::UnknownTool(_)) => return unknown(),
        Err(err) => {
            return match task {
                // 2025-11-25 answers a (failed) task; 2026-07-28 the tool
                // error itself, whose `resultType` says what it is.
                Some(ttl) if wire.core_tasks() => tasks::refused(ctx, name, ttl, tool_error(&err))
                    .await
                    .into(),
                _ => Answer::Result(tool_error(&err)),
            };
        }
    };
    if prepared.needs_confirmation() && wire.confirming() == Confirming::ByRoundTrip {
        // A later round of a tool that asks: its state was signed after a
        // run of this very call, which only a confirmation let happen.
        let continued = prepared.grant().asks.any() && {
            let digest = call_digest(
                ctx.caller().token(),
                &prepared.tool().info.name,
                prepared.arguments(),
            );
            replay::continues(&retry, &digest)
        };
        if continued {
            prepared.confirm(Confirmation::Accepted);
        } else {
            match confirm::by_round_trip(ctx, &prepared, &retry).await {
                Ok(answer) => prepared.confirm(answer),
                Err(answer) => return answer,
            }
        }
    }
    if wire.asking_by() == AskingBy::Rounds && prepared.grant().asks.any() {
        return in_rounds(ctx, prepared, progress, &retry, task).await;
    }
    match task {
        Some(ttl) => tasks::start(ctx, prepared, progress, ttl).await.into(),
        None => run(ctx, prepared, progress).await,
    }
}

/// A call of revision 2026-07-28 whose tool may ask the client: run with
/// the responses of the rounds so far ([`replay`]); a request not answered
/// yet makes the answer the next round instead of the call's outcome. A
/// call that runs as a task gathers its input the same way, before its task
/// is made: the last round's outcome is the task's result, or — once it has
/// run [`ROUNDS_BEFORE_TASK`] without asking — the task is made and the
/// call goes on in it (asking nothing more).
async fn in_rounds(
    ctx: &Ctx<'_>,
    prepared: PreparedCall,
    progress: Option<Value>,
    retry: &Retry,
    task: Option<Option<u64>>,
) -> Answer {
    let digest = call_digest(
        ctx.caller().token(),
        &prepared.tool().info.name,
        prepared.arguments(),
    );
    let server = ctx.server();
    let replay = match ctx.replay(retry, &digest).await {
        Ok(replay) => replay,
        Err(answer) => return answer,
    };
    // A call that could not become a task does not run.
    if task.is_some()
        && let Err(error) = server.tasks.check_room(&ctx.owner()).await
    {
        return Answer::Error(error);
    }
    let (name, cancel) = (
        prepared.tool().info.name.clone(),
        prepared.cancel_token().clone(),
    );
    let _registered = ctx.session.register(ctx.id, cancel.clone());
    let asking = Some(Asking::Replay(replay.clone()));
    let observer = Observer::new(ctx.out, &ctx.log_level, name.clone(), progress, asking);
    let run = Box::pin(prepared.run_in_rounds(observer));
    let outcome = match task {
        None => run.await,
        // A task gathers its input in rounds before it is made; a call that
        // asks nothing at first becomes one at once.
        Some(ttl) => {
            let mut run = run;
            tokio::select! {
                outcome = &mut run => outcome,
                () = tokio::time::sleep(ROUNDS_BEFORE_TASK) => {
                    let inputs = Arc::new(Inputs::default());
                    replay.escalate(inputs.clone(), cancel.clone());
                    let run = async move { run.await.map(settled::<ToolCall>) };
                    return tasks::escalated(ctx, &name, ttl, cancel.clone(), inputs, run)
                        .await
                        .into();
                }
            }
        }
    };
    if let Some(answer) = running::stopped(&cancel) {
        return answer;
    }
    if let Some(answer) = running::round_ended(&replay, &digest, &outcome) {
        return answer;
    }
    let outcome = outcome.map(settled::<ToolCall>);
    match task {
        None => outcome_of(&name, outcome).into(),
        Some(ttl) => tasks::settled(ctx, &name, ttl, outcome).await.into(),
    }
}

/// Runs a call while the request waits, and answers its result. A call
/// the client cancelled gets no answer: MCP sends no response then.
async fn run(ctx: &Ctx<'_>, mut prepared: PreparedCall, progress: Option<Value>) -> Answer {
    let cancel = prepared.cancel_token().clone();
    let _registered = ctx.session.register(ctx.id, cancel.clone());
    let name = prepared.tool().info.name.clone();
    if prepared.needs_confirmation() {
        let answer = confirm::ask(
            ctx.session,
            ctx.revision,
            ctx.client,
            &name,
            prepared.arguments(),
            ctx.out,
            None,
        )
        .await;
        prepared.confirm(answer);
    }
    // A tool that may ask the client does so on this request's stream.
    let asking = prepared
        .grant()
        .asks
        .any()
        .then(|| Asking::InBand(ctx.in_band(cancel.clone())));
    let observer = Observer::new(ctx.out, &ctx.log_level, name.clone(), progress, asking);
    let outcome = prepared.run_on_lane(observer).await;
    if let Some(answer) = running::stopped(&cancel) {
        return answer;
    }
    outcome_of(&name, outcome).into()
}
