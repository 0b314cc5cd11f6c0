//! Errors of the argument pipeline and the helpers that render client data
//! into them.
//!
//! [`ArgumentError`]'s `Display` is the exact text a client sees, so it must
//! stay short and bounded no matter what the client sent: names and values
//! are cut before they reach a message.

use serde_json::Value;

/// Why a tool's input or output schema cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    /// The schema does not compile as a draft 2020-12 JSON Schema.
    #[error("not a valid JSON Schema (draft 2020-12): {0}")]
    Invalid(String),
    /// The root is not `{"type": "object", ...}`.
    #[error(r#"the schema's root must be an object schema ("type": "object")"#)]
    NotAnObjectSchema,
    /// The schema nests deeper than the runtime is willing to walk.
    #[error("the schema is nested too deeply (more than {limit} levels)")]
    TooDeep { limit: usize },
    /// An `x-mcp-header` annotation breaks a rule of revision 2026-07-28.
    #[error("{0}")]
    ParamHeader(String),
}

/// Why a client's arguments were refused. `Display` is the client-facing
/// text (sent as the JSON-RPC invalid-params message).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ArgumentError {
    /// The arguments were neither an object, an array nor null.
    #[error(
        "Arguments must be a JSON object of named parameters or an array of positional ones, got {kind}"
    )]
    NotAnObject { kind: &'static str },

    /// More positional arguments than the schema has properties.
    #[error("{}", too_many_message(*got, names))]
    TooManyPositional { got: usize, names: Vec<String> },

    /// Names the schema does not declare (and extra properties are not allowed).
    #[error(
        "Unknown {} {}; received: {}, expected: {}",
        plural(names.len(), "argument"),
        quoted_list(names),
        bracket_list(received),
        bracket_list(expected)
    )]
    Unknown {
        names: Vec<String>,
        received: Vec<String>,
        expected: Vec<String>,
    },

    /// Required parameters that did not arrive.
    #[error(
        "Missing required {} {}; received: {}, expected: {}",
        plural(names.len(), "argument"),
        quoted_list(names),
        bracket_list(received),
        bracket_list(expected)
    )]
    Missing {
        names: Vec<String>,
        received: Vec<String>,
        expected: Vec<String>,
    },

    /// A value of the wrong JSON type that could not be coerced.
    /// `path` is the parameter, or `name[i]` for an array item.
    #[error("Parameter {} expects {expected}, got {got}", quoted(path))]
    TypeMismatch {
        parameter: String,
        path: String,
        /// Type words, e.g. `an integer or null`.
        expected: String,
        /// The value as compact JSON, cut short.
        got: String,
    },

    /// Any other violation of the input schema, at a parameter or below it.
    #[error("Parameter {}: {message}", quoted(path))]
    Invalid {
        parameter: String,
        /// Dotted path, e.g. `order.items[2]`.
        path: String,
        message: String,
    },

    /// A violation of a rule on the arguments object as a whole
    /// (e.g. `minProperties`, `oneOf` at the root).
    #[error("Arguments do not match the tool's input schema: {message}")]
    InvalidArguments { message: String },

    /// Nesting deeper than the runtime is willing to walk.
    #[error("Arguments are nested too deeply (more than {limit} levels)")]
    TooDeep { limit: usize },
}

impl ArgumentError {
    /// The top-level parameter the error is about, if any (for the JSON-RPC
    /// error's `data`). For a nested path such as `order.items[2]` this is
    /// `order`; for several missing or unknown names, the first.
    pub fn parameter(&self) -> Option<&str> {
        match self {
            ArgumentError::TypeMismatch { parameter, .. }
            | ArgumentError::Invalid { parameter, .. } => Some(parameter),
            ArgumentError::Unknown { names, .. } | ArgumentError::Missing { names, .. } => {
                names.first().map(String::as_str)
            }
            ArgumentError::NotAnObject { .. }
            | ArgumentError::TooManyPositional { .. }
            | ArgumentError::InvalidArguments { .. }
            | ArgumentError::TooDeep { .. } => None,
        }
    }
}

/// Longest rendering of a client value in a message, in characters.
pub(crate) const VALUE_CHARS: usize = 80;
/// Longest name (key) in a message, in characters; keys come from clients.
const NAME_CHARS: usize = 64;
/// Most names listed in one message; the rest are counted.
const LIST_ITEMS: usize = 32;
/// Longest schema-validator message passed on, in characters.
pub(crate) const MESSAGE_CHARS: usize = 300;

/// Cuts `text` to at most `max` characters, marking the cut with `…`.
pub(crate) fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

fn quoted(name: &str) -> String {
    format!("\"{}\"", cut(name, NAME_CHARS))
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        word.to_owned()
    } else {
        format!("{word}s")
    }
}

/// Joins at most [`LIST_ITEMS`] names, then says how many were left out.
fn join_capped(names: &[String], render: impl Fn(&str) -> String) -> String {
    let mut parts: Vec<String> = names.iter().take(LIST_ITEMS).map(|n| render(n)).collect();
    if names.len() > LIST_ITEMS {
        parts.push(format!("… ({} more)", names.len() - LIST_ITEMS));
    }
    parts.join(", ")
}

fn quoted_list(names: &[String]) -> String {
    join_capped(names, quoted)
}

fn bracket_list(names: &[String]) -> String {
    format!("[{}]", join_capped(names, |n| cut(n, NAME_CHARS)))
}

fn too_many_message(got: usize, names: &[String]) -> String {
    if names.is_empty() {
        format!("Too many positional arguments: got {got}, the tool takes none")
    } else {
        format!(
            "Too many positional arguments: got {got}, the tool takes {} ({})",
            names.len(),
            join_capped(names, |n| cut(n, NAME_CHARS))
        )
    }
}

/// The JSON kind of a value with its article, as used in messages.
pub(crate) fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A validator's message with the offending value shown as `shown` (the
/// value clipped, or a word in its place) and the reason kept whole: a long
/// value never pushes "does not match pattern …" out of the message.
pub(crate) fn schema_message(error: &jsonschema::ValidationError<'_>, shown: &str) -> String {
    let full = error.to_string();
    let value = error.instance().to_string();
    let reason = match full.find(&value) {
        Some(at) if !value.is_empty() => {
            format!("{}{shown}{}", &full[..at], &full[at + value.len()..])
        }
        _ => full,
    };
    cut(&reason, MESSAGE_CHARS)
}

/// Renders a value as compact JSON of at most [`VALUE_CHARS`] characters
/// (plus `…`). Stops writing as soon as the budget is spent, so a huge or
/// deeply nested value costs no more than a small one: every nesting level
/// writes a bracket first, so recursion is bounded by the budget too.
pub(crate) fn render_value(value: &Value) -> String {
    let mut out = String::new();
    write_bounded(value, &mut out, VALUE_CHARS);
    cut(&out, VALUE_CHARS)
}

/// Appends `value` to `out`; returns false once `out` holds more than `budget` bytes.
fn write_bounded(value: &Value, out: &mut String, budget: usize) -> bool {
    if out.len() > budget {
        return false;
    }
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => write_string(s, out, budget),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                if !write_bounded(item, out, budget) {
                    return false;
                }
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(key, out, budget);
                out.push(':');
                if !write_bounded(item, out, budget) {
                    return false;
                }
            }
            out.push('}');
        }
    }
    out.len() <= budget
}

/// Writes a JSON string literal, escaping only the prefix that can fit.
fn write_string(s: &str, out: &mut String, budget: usize) {
    let room = budget.saturating_sub(out.len()) + 1;
    let prefix = match s.char_indices().nth(room) {
        Some((at, _)) => &s[..at],
        None => s,
    };
    match serde_json::to_string(prefix) {
        Ok(json) if prefix.len() == s.len() => out.push_str(&json),
        // Cut string: drop the closing quote so it does not look complete.
        Ok(json) => out.push_str(json.strip_suffix('"').unwrap_or(&json)),
        Err(_) => out.push_str("\"?\""),
    }
}
