//! What the server answers to a body or line, typed for the transport:
//! the response to send and, for a single error, its code — so no
//! transport reads an answer's JSON back.

use serde_json::Value;

use super::request::Answer;
use crate::protocol::jsonrpc::{self, ErrorObject, Id};

/// What the server answers to a body or line: the response to send (none
/// for notifications, replies and cancelled requests) and, for a single
/// error response, its code (a transport's status depends on it).
#[derive(Debug)]
pub struct Answered {
    pub body: Option<Value>,
    pub error: Option<i64>,
}

impl Answered {
    pub(super) fn of(id: &Id, answer: Answer) -> Answered {
        match answer {
            Answer::Result(result) => Answered {
                body: Some(jsonrpc::response(id, result)),
                error: None,
            },
            Answer::Error(error) => Answered {
                error: Some(error.code),
                body: Some(jsonrpc::error_response(id, &error)),
            },
            Answer::Nothing => Answered::nothing(),
        }
    }

    pub(super) fn nothing() -> Answered {
        Answered {
            body: None,
            error: None,
        }
    }

    pub(super) fn error(id: &Id, error: &ErrorObject) -> Answered {
        Answered {
            body: Some(jsonrpc::error_response(id, error)),
            error: Some(error.code),
        }
    }
}
