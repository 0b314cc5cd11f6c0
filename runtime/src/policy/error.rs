//! [`PolicyError`]: why a policy file was refused, each error naming the
//! file, line and column of the value it is about. At the bottom of the
//! folder: the types a policy is made of, its checks and its parser all
//! report with it.

/// Why a policy file was refused.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// The file could not be read.
    #[error("{file}: cannot read the policy file: {error}")]
    Read { file: String, error: std::io::Error },
    /// The file is not a valid policy; `line` and `column` count from 1.
    #[error("{file}:{line}:{column}: {message}")]
    Invalid {
        file: String,
        line: usize,
        column: usize,
        message: String,
    },
    /// Every error of a file that has more than one, in file order; shown
    /// one a line.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Several(Vec<PolicyError>),
}

impl PolicyError {
    /// One error as itself, more as [`PolicyError::Several`].
    pub fn from_all(mut errors: Vec<PolicyError>) -> PolicyError {
        if errors.len() == 1 {
            errors.remove(0)
        } else {
            PolicyError::Several(errors)
        }
    }

    /// Each single error (one, or each of [`PolicyError::Several`]).
    pub fn errors(&self) -> &[PolicyError] {
        match self {
            PolicyError::Several(all) => all,
            one => std::slice::from_ref(one),
        }
    }

    /// Where in the file (line, column); reading errors come first.
    pub(super) fn position(&self) -> (usize, usize) {
        match self {
            PolicyError::Invalid { line, column, .. } => (*line, *column),
            _ => (0, 0),
        }
    }
}
