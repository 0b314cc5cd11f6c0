//! Completions: what a `#[complete]` function returns ([`Completion`], or
//! anything [`IntoCompletion`]) and what it completes ([`CompletionRef`]).

use crate::Error;

/// What is being completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CompletionRef<'a> {
    /// An argument of the prompt of this name.
    Prompt(&'a str),
    /// A variable of the resource template with this URI template.
    ResourceTemplate(&'a str),
}

/// The most values one answer carries (MCP's limit).
pub const MAX_VALUES: usize = 100;

/// Values for the argument being completed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Completion {
    /// At most 100 values, best first.
    pub values: Vec<String>,
    /// How many values exist in all, when known.
    pub total: Option<u32>,
    /// Whether there are more than `values`.
    pub has_more: bool,
}

impl Completion {
    /// The values; more than 100 are cut there, with `total`
    /// and `has_more` saying so.
    pub fn new<S: Into<String>>(values: impl IntoIterator<Item = S>) -> Self {
        let mut values: Vec<String> = values.into_iter().map(Into::into).collect();
        let total = values.len();
        let has_more = total > MAX_VALUES;
        values.truncate(MAX_VALUES);
        Completion {
            values,
            total: has_more.then(|| u32::try_from(total).unwrap_or(u32::MAX)),
            has_more,
        }
    }
}

/// The arguments (or template variables) the client has already given,
/// for completions that depend on them.
#[derive(Debug, Clone, Copy, Default)]
pub struct CompletionContext<'a> {
    arguments: &'a [(String, String)],
}

impl<'a> CompletionContext<'a> {
    /// A context of (name, value) pairs.
    pub fn new(arguments: &'a [(String, String)]) -> Self {
        CompletionContext { arguments }
    }

    /// The value given for `name`, if any.
    pub fn get(&self, name: &str) -> Option<&'a str> {
        self.arguments
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Every (name, value) given.
    pub fn arguments(&self) -> &'a [(String, String)] {
        self.arguments
    }
}

/// What a completion function may return: values (`Vec<String>`,
/// `Vec<&str>`), a [`Completion`], or a `Result` of one.
#[diagnostic::on_unimplemented(
    message = "a completion cannot return `{Self}`",
    note = "return `Vec<String>`, `Vec<&str>` or `airlock_sdk::Completion`, or a `Result` of one"
)]
pub trait IntoCompletion {
    /// The completion.
    fn into_completion(self) -> Completion;
}

impl IntoCompletion for Completion {
    fn into_completion(self) -> Completion {
        self
    }
}

impl<S: Into<String>> IntoCompletion for Vec<S> {
    fn into_completion(self) -> Completion {
        Completion::new(self)
    }
}

/// One completion function: implemented by `#[complete]`.
pub trait Complete {
    /// What it completes.
    const REFERENCE: CompletionRef<'static>;
    /// The argument (or template variable) it completes.
    const ARGUMENT: &'static str;
    /// Values for `value`, the text typed so far.
    fn complete(value: &str, context: CompletionContext<'_>) -> Result<Completion, Error>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn more_than_a_hundred_values_are_cut() {
        let c = Completion::new((0..150).map(|i| i.to_string()));
        assert_eq!(c.values.len(), 100);
        assert_eq!((c.total, c.has_more), (Some(150), true));
        let c = Completion::new(["a", "b"]);
        assert_eq!((c.values.len(), c.total, c.has_more), (2, None, false));
    }
}
