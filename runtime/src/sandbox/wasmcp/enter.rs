//! What runs per call of a wasmcp component, in the fresh instance the call
//! layer provisioned: a tool call (`call-tool`), or a read, prompt or
//! completion (`read-resource`, `get-prompt`, `complete`), answered in the
//! shape an airlock component's answer has, so that the same output
//! check, redaction and teardown follow. Both go through one instantiate
//! and call ([`Run::call_wasmcp_function`]).

use wasmtime::component::Val;

use super::super::bindings::types;
use super::super::run::Structured;
use super::super::{RawOutput, Run, RunError};
use super::WasmcpPre;
use crate::offer::{OfferRequest, Offered};
use crate::wasmcp::offers::{self as answers, Answered};
use crate::wasmcp::{Called, value};

/// A read's, prompt's or completion's answer: what it offers or the URI
/// it does not serve (`Ok`), or the component's error.
pub(in crate::sandbox) type Returned = Result<Result<Offered, String>, types::Error>;

impl Run {
    /// Instantiates the component and calls `call-tool` for tool `name`
    /// with `arguments` (the prepared JSON object, as text).
    pub(in crate::sandbox) fn call_wasmcp(
        &mut self,
        pre: &WasmcpPre,
        name: &str,
        arguments: &str,
    ) -> Result<RawOutput, RunError> {
        let request = value::call_request(name, arguments);
        let returned = self.call_wasmcp_function(pre, "call-tool", request)?;
        match value::call_result(&returned).map_err(RunError::BadOutput)? {
            Called::Done {
                content,
                structured,
            } => self.checked(content, structured.map(Structured::Text)),
            Called::ToolError(message) | Called::Failed(message) => Err(self.failed(message)),
            Called::InvalidArguments(message) => Err(RunError::InvalidArguments(message)),
            Called::NotHandled => Err(RunError::Failed(format!(
                "the component's call-tool does not handle {name:?}, which its list-tools lists"
            ))),
        }
    }

    /// Instantiates the component and runs `request` through the function
    /// of wasmcp's interfaces that answers it.
    pub(in crate::sandbox) fn wasmcp_offer(
        &mut self,
        pre: &WasmcpPre,
        request: &OfferRequest,
    ) -> Result<Returned, RunError> {
        let (function, params) = match request {
            OfferRequest::Read { uri } => ("read-resource", answers::read_request(uri)),
            OfferRequest::Prompt { name, arguments } => {
                ("get-prompt", answers::prompt_request(name, arguments))
            }
            OfferRequest::Complete {
                reference,
                argument,
                value,
                context,
            } => (
                "complete",
                answers::complete_request(reference, argument, value, context),
            ),
        };
        let returned = self.call_wasmcp_function(pre, function, params)?;
        let answered = match request {
            OfferRequest::Read { uri } => answers::read_result(&returned, uri),
            OfferRequest::Prompt { name, .. } => answers::prompt_result(&returned, name),
            OfferRequest::Complete { .. } => answers::complete_result(&returned),
        };
        Ok(
            match answered.map_err(|why| RunError::BadOutput(format!("{function}: {why}")))? {
                Answered::Offered(offered) => Ok(Ok(offered)),
                Answered::NotFound(uri) => Ok(Err(uri)),
                Answered::InvalidArguments(message) => Err(types::Error::InvalidArguments(message)),
                Answered::Failed(message) => Err(types::Error::Failed(message)),
            },
        )
    }

    /// Instantiates the component and calls its `function` with this
    /// call's `message-context` and `request`: what it returned.
    fn call_wasmcp_function(
        &mut self,
        pre: &WasmcpPre,
        function: &str,
        request: Val,
    ) -> Result<Val, RunError> {
        let index = pre.function(function).ok_or_else(|| {
            RunError::Setup(format!("the component does not export `{function}`"))
        })?;
        let params = [value::message_context(), request];
        let mut results = [Val::Bool(false)];
        let store = &mut self.store;
        let called = pre.pre.instantiate(&mut *store).and_then(|instance| {
            let func = instance
                .get_func(&mut *store, index)
                .ok_or_else(|| wasmtime::format_err!("the instance lacks `{function}`"))?;
            func.call(&mut *store, &params, &mut results)
        });
        self.store.data_mut().flush_notices();
        self.finish(called)?;
        let [returned] = results;
        Ok(returned)
    }
}
