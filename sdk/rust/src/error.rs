//! The error a tool returns when a call does not succeed.

/// Why a tool call did not succeed, as the client will see it.
///
/// Return it from a tool (`Result<T, airlock_sdk::Error>`) to choose how the
/// client sees the failure. A tool that returns `Result<T, E>` with any other
/// `E: Display` gets [`Error::Failed`] with `E`'s text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The arguments do not fit the tool, in a way the input schema cannot
    /// express (for example `format must be either "csv" or "tsv"`). Clients
    /// see it as invalid arguments.
    #[error("invalid arguments: {0}")]
    InvalidArguments(String),
    /// The tool ran and failed; the text is shown to the client.
    #[error("{0}")]
    Failed(String),
}

impl Error {
    /// An [`Error::InvalidArguments`] with the given text.
    pub fn invalid_arguments(message: impl Into<String>) -> Self {
        Error::InvalidArguments(message.into())
    }

    /// An [`Error::Failed`] with the given text.
    pub fn failed(message: impl Into<String>) -> Self {
        Error::Failed(message.into())
    }

    /// The text the client will see, without the kind.
    pub fn message(&self) -> &str {
        match self {
            Error::InvalidArguments(m) | Error::Failed(m) => m,
        }
    }
}
