//! Lenient reading of scalar parameters: models often send `"42"` where the
//! schema says integer. A string that cleanly converts to the declared type
//! is converted; anything else is reported as a type mismatch rather than
//! passed on for the guest to misread.

use serde_json::{Number, Value};

/// The JSON Schema `type` keyword, as a set.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct TypeSet {
    pub null: bool,
    pub boolean: bool,
    pub integer: bool,
    pub number: bool,
    pub string: bool,
    pub array: bool,
    pub object: bool,
}

impl TypeSet {
    /// Reads `type` (a string or an array of strings). `None` when the
    /// schema does not constrain the type, or spells it in a way we do not
    /// understand (then the validator alone judges the value).
    pub fn from_schema(schema: &Value) -> Option<TypeSet> {
        let mut set = TypeSet::default();
        match schema.get("type")? {
            Value::String(name) => set.add(name)?,
            Value::Array(names) => {
                for name in names {
                    set.add(name.as_str()?)?;
                }
            }
            _ => return None,
        }
        (set != TypeSet::default()).then_some(set)
    }

    fn add(&mut self, name: &str) -> Option<()> {
        match name {
            "null" => self.null = true,
            "boolean" => self.boolean = true,
            "integer" => self.integer = true,
            "number" => self.number = true,
            "string" => self.string = true,
            "array" => self.array = true,
            "object" => self.object = true,
            _ => return None,
        }
        Some(())
    }

    /// True when none of the types is a container, so items of this type
    /// are worth coercing.
    pub fn is_scalar(&self) -> bool {
        !self.array && !self.object
    }

    /// Whether `value` already has one of the types.
    pub fn matches(&self, value: &Value) -> bool {
        match value {
            Value::Null => self.null,
            Value::Bool(_) => self.boolean,
            Value::Number(n) => self.number || (self.integer && is_integral(n)),
            Value::String(_) => self.string,
            Value::Array(_) => self.array,
            Value::Object(_) => self.object,
        }
    }

    /// The types as words for a message: `an integer`, `an integer or null`,
    /// `a string, an integer or null`.
    pub fn words(&self) -> String {
        let words: Vec<&str> = [
            (self.string, "a string"),
            (self.integer, "an integer"),
            (self.number, "a number"),
            (self.boolean, "a boolean"),
            (self.array, "an array"),
            (self.object, "an object"),
            (self.null, "null"),
        ]
        .into_iter()
        .filter_map(|(on, word)| on.then_some(word))
        .collect();
        match words.split_last() {
            Some((last, [])) => (*last).to_owned(),
            Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
            None => "nothing".to_owned(),
        }
    }

    /// Returns `value` if it has one of the types, or a conversion of a
    /// string into one of them (integer first, then number, then boolean).
    /// `Err` hands the value back unchanged for the error message.
    pub fn coerce(&self, value: Value) -> Result<Value, Value> {
        if self.matches(&value) {
            return Ok(value);
        }
        let Value::String(text) = &value else {
            return Err(value);
        };
        let converted = None
            .or_else(|| self.integer.then(|| parse_integer(text)).flatten())
            .or_else(|| self.number.then(|| parse_number(text)).flatten())
            .or_else(|| self.boolean.then(|| parse_boolean(text)).flatten());
        converted.ok_or(value)
    }
}

/// JSON Schema counts `1.0` as an integer.
fn is_integral(n: &Number) -> bool {
    n.is_i64()
        || n.is_u64()
        || n.as_f64()
            .is_some_and(|f| f.is_finite() && f.fract() == 0.0)
}

/// A decimal integer that fits in i64 or u64 (`"42"`, `"-7"`); nothing else.
fn parse_integer(text: &str) -> Option<Value> {
    if let Ok(n) = text.parse::<i64>() {
        return Some(Value::from(n));
    }
    text.parse::<u64>().ok().map(Value::from)
}

/// A finite decimal number (`"2.5"`, `"1e3"`). Integers stay integers so
/// `"42"` reaches the guest as `42`, not `42.0`. Rust's parser also takes
/// `inf` and `NaN`; JSON cannot carry them, so they are refused.
fn parse_number(text: &str) -> Option<Value> {
    if let Some(n) = parse_integer(text) {
        return Some(n);
    }
    let f = text.parse::<f64>().ok().filter(|f| f.is_finite())?;
    Number::from_f64(f).map(Value::Number)
}

fn parse_boolean(text: &str) -> Option<Value> {
    match text {
        "true" | "1" => Some(Value::Bool(true)),
        "false" | "0" => Some(Value::Bool(false)),
        _ => None,
    }
}
