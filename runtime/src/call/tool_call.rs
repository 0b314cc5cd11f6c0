//! A tool call as an [`Entry`]: what is its own — the tool looked up by
//! name, its grant (the tool's section over its component's, narrowed by
//! its hints), its arguments checked against its schema, its result
//! checked against its output schema, its pace (whether it may run
//! inline). The rest is the one path's ([`super::prepared`]).

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;

use super::entry::{Entering, Entry, Outcome};
use super::prepared::{self, Prepared};
use super::{CallError, Caller, Setting, output, record};
use crate::catalog::{Component, Places, Tool};
use crate::cordon::wire::{Done, Work};
use crate::lanes::Pace;
use crate::policy::{self, Grant, Policy};
use crate::sandbox::{Ran, RawOutput, RunError, Teardown};
use crate::telemetry::SpanKind;
use crate::tool::Output;

/// One call of a tool, with its checked arguments.
pub struct ToolCall {
    tool: Arc<Tool>,
    arguments: Value,
}

impl ToolCall {
    pub fn tool(&self) -> &Arc<Tool> {
        &self.tool
    }

    /// The validated arguments the guest will receive.
    pub fn arguments(&self) -> &Value {
        &self.arguments
    }
}

/// The effective grant of `tool` under `policy`.
pub fn grant_for(policy: &Policy, tool: &Tool) -> Grant {
    let settings = policy.settings_for(&tool.component.name, &tool.info.name);
    policy::effective(&settings, tool.info.hints)
}

/// Everything that can be checked before the guest runs: the tool exists,
/// the arguments fit, the policy permits the call, and the tool has room
/// under its concurrency limit. A refusal is recorded in the audit log
/// here; the outcome of a call that runs when it ends.
pub fn prepare(
    setting: &Setting<'_>,
    caller: Caller,
    name: &str,
    arguments: Value,
) -> Result<Prepared<ToolCall>, CallError> {
    let started = Instant::now();
    // Only the audit log needs the size; skip the serialisation without one.
    let bytes_in = match setting.audit {
        Some(_) => crate::json::to_vec(&arguments).len(),
        None => 0,
    };
    let found = setting.catalog.tool(name);
    let checked = match found {
        Some(tool) => check(setting.policy, tool, arguments),
        None => Err(CallError::UnknownTool(name.to_string())),
    };
    match checked {
        Ok(checked) => prepared::prepare(setting, caller, started, bytes_in, checked),
        Err(err) => {
            let label = found.map(|t| t.info.name.as_str());
            let digest = found.map(|t| t.component.digest.as_str());
            let audited = || (Cow::Borrowed(name), bytes_in);
            let (log, kind) = (setting.audit, record::Ended::of(&err));
            record::refused_before(log, &caller, label, digest, kind, started, audited);
            Err(err)
        }
    }
}

/// The call, its arguments prepared, and its grant.
fn check(
    policy: &Policy,
    tool: &Arc<Tool>,
    arguments: Value,
) -> Result<(ToolCall, Grant), CallError> {
    let grant = grant_for(policy, tool);
    let checking = crate::telemetry::phase("airlock.arguments", SpanKind::Internal, Vec::new);
    let arguments = tool
        .args
        .prepare(arguments)
        .inspect_err(|_| checking.failed("invalid-arguments"))?;
    drop(checking);
    let call = ToolCall {
        tool: tool.clone(),
        arguments,
    };
    Ok((call, grant))
}

impl Entry for ToolCall {
    type Answer = Output;
    fn component(&self) -> &Arc<Component> {
        &self.tool.component
    }

    fn label(&self) -> &str {
        &self.tool.info.name
    }

    fn audit_name(&self) -> Cow<'_, str> {
        Cow::Borrowed(&self.tool.info.name)
    }

    fn places(&self) -> &Arc<Places> {
        &self.tool.places
    }

    fn busy_name(&self) -> String {
        self.tool.info.name.clone()
    }

    fn pace(&self) -> Option<&Pace> {
        Some(&self.tool.pace)
    }

    fn bytes_out(output: &Output) -> usize {
        crate::json::to_vec(&output.to_mcp()).len()
    }

    fn run(&self, entering: Entering<'_>) -> (Outcome<Self>, Teardown) {
        let text = crate::json::to_string(&self.arguments);
        let started = Instant::now();
        let (raw, teardown) = entering.sandbox.call(
            &self.tool.component.code(),
            &self.tool.info.name,
            &text,
            entering.grant,
            entering.observer,
            entering.cancel,
        );
        self.tool.pace.record(started.elapsed());
        (self.checked(raw), teardown)
    }

    fn work(&self) -> Result<Work, Output> {
        Ok(Work::Tool {
            name: self.tool.info.name.clone(),
            arguments: crate::json::to_string(&self.arguments),
        })
    }

    fn answered(&self, ran: Result<Ran<Done>, RunError>) -> Outcome<Self> {
        self.checked(ran.and_then(|ran| ran.try_map(Done::into_output)))
    }
}

impl ToolCall {
    /// Its guest's output checked against the tool's output schema.
    fn checked(&self, raw: Result<Ran<RawOutput>, RunError>) -> Outcome<Self> {
        raw.map_err(CallError::from)
            .and_then(|ran| ran.try_map(|raw| output::check(&self.tool, raw)))
    }
}

impl Prepared<ToolCall> {
    pub fn tool(&self) -> &Arc<Tool> {
        self.entry().tool()
    }

    /// The validated arguments the guest will receive.
    pub fn arguments(&self) -> &Value {
        self.entry().arguments()
    }
}
