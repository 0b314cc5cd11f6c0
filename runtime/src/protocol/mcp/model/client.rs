//! What the client sends that is not a request of a method: the result of
//! an elicitation the server asked (a confirmation), the error it answered
//! a server's request with, and `notifications/cancelled`.

use serde::Deserialize;
use serde_json::Value;

use super::{flag, text};

/// An `ElicitResult`, as far as a confirmation reads it.
#[derive(Debug, Default, Deserialize)]
pub struct ElicitAnswer {
    #[serde(default, deserialize_with = "text")]
    pub action: Option<String>,
    #[serde(default, deserialize_with = "confirm")]
    pub content: ConfirmForm,
}

/// The confirmation form's content: `confirm` is on only when `true`.
#[derive(Debug, Default, Deserialize)]
pub struct ConfirmForm {
    #[serde(default, deserialize_with = "flag")]
    pub confirm: bool,
}

impl ElicitAnswer {
    /// Reads a result leniently: anything malformed confirms nothing.
    pub fn read(result: &Value) -> ElicitAnswer {
        ElicitAnswer::deserialize(result).unwrap_or_default()
    }

    /// The user accepted the form and ticked `confirm`.
    pub fn confirms(&self) -> bool {
        self.action.as_deref() == Some("accept") && self.content.confirm
    }
}

fn confirm<'de, D: serde::Deserializer<'de>>(d: D) -> Result<ConfirmForm, D::Error> {
    Ok(ConfirmForm::deserialize(Value::deserialize(d)?).unwrap_or_default())
}

/// A JSON-RPC error object the client answered with, read leniently.
#[derive(Debug, Default, Deserialize)]
pub struct ErrorReply {
    #[serde(default, deserialize_with = "text")]
    pub message: Option<String>,
    #[serde(default)]
    pub code: Option<Value>,
}

impl ErrorReply {
    pub fn read(error: &Value) -> ErrorReply {
        ErrorReply::deserialize(error).unwrap_or_default()
    }

    /// The code, when it is an integer (else 0).
    pub fn code(&self) -> i64 {
        self.code.as_ref().and_then(Value::as_i64).unwrap_or(0)
    }
}

/// `notifications/cancelled`: the request the client gave up on.
#[derive(Debug, Default, Deserialize)]
pub struct CancelledParams {
    #[serde(rename = "requestId", default)]
    pub request_id: Option<Value>,
}

impl CancelledParams {
    pub fn read(params: Option<&Value>) -> CancelledParams {
        params
            .filter(|p| p.is_object())
            .and_then(|p| CancelledParams::deserialize(p).ok())
            .unwrap_or_default()
    }
}
