//! The type table: how a Rust type is advertised as JSON Schema.
//!
//! | Rust | JSON Schema |
//! | --- | --- |
//! | `i8` … `i64`, `isize`, `u8` … `u64`, `usize` | `{"type":"integer","minimum":MIN,"maximum":MAX}` (the type's bounds) |
//! | `i128` | `{"type":"integer"}` (its bounds do not fit a JSON number) |
//! | `u128` | `{"type":"integer","minimum":0}` |
//! | `f32`, `f64` | `{"type":"number"}` |
//! | `bool` | `{"type":"boolean"}` |
//! | `String` (and `&str` as a parameter) | `{"type":"string"}` |
//! | `char` | `{"type":"string","minLength":1,"maxLength":1}` |
//! | [`Timestamp`](crate::Timestamp) | `{"type":"string","format":"date-time"}` |
//! | unit-only enum with `#[derive(ToolSchema)]` | `{"type":"string","enum":[…]}` |
//! | struct with `#[derive(ToolSchema)]` | `{"type":"object","properties":{…},"required":[…]}` |
//! | `serde_json::Value` | `{}` (any JSON) |
//! | `serde_json::Map<String, Value>` | `{"type":"object"}` |
//! | `Vec<T>` | `{"type":"array","items":T}` |
//! | `BTreeMap<String, T>`, `HashMap<String, T>` | `{"type":"object","additionalProperties":T}` |
//! | `Option<T>` | `T`, and the parameter or field is not required |
//! | `Box<T>` | `T` |

use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, HashMap};

/// A type a tool can receive or return as JSON, with its JSON Schema.
///
/// Implemented for every row of the [type table](crate#the-type-table);
/// derive it for your own structs and unit-only enums with
/// `#[derive(ToolSchema)]` (together with serde's `Deserialize` and/or
/// `Serialize`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be used by a tool: it has no JSON Schema",
    label = "not in airlock's type table",
    note = "use an integer, float, `bool`, `String`, `airlock_sdk::Timestamp`, `serde_json::Value`, `Vec<T>` or `Option<T>`, or add `#[derive(ToolSchema)]` to your struct or unit-only enum"
)]
pub trait ToolSchema {
    /// True when a parameter or struct field of this type may be omitted
    /// (only `Option<T>`).
    const OPTIONAL: bool = false;

    /// The JSON Schema of the type.
    fn schema() -> Value;
}

macro_rules! bounded_integer {
    ($($t:ty),*) => {$(
        impl ToolSchema for $t {
            fn schema() -> Value {
                json!({"type": "integer", "minimum": <$t>::MIN, "maximum": <$t>::MAX})
            }
        }
    )*};
}

bounded_integer!(i8, i16, i32, i64, isize, u8, u16, u32, u64, usize);

impl ToolSchema for i128 {
    fn schema() -> Value {
        json!({"type": "integer"})
    }
}

impl ToolSchema for u128 {
    fn schema() -> Value {
        json!({"type": "integer", "minimum": 0})
    }
}

impl ToolSchema for f32 {
    fn schema() -> Value {
        json!({"type": "number"})
    }
}

impl ToolSchema for f64 {
    fn schema() -> Value {
        json!({"type": "number"})
    }
}

impl ToolSchema for bool {
    fn schema() -> Value {
        json!({"type": "boolean"})
    }
}

impl ToolSchema for String {
    fn schema() -> Value {
        json!({"type": "string"})
    }
}

impl ToolSchema for char {
    fn schema() -> Value {
        json!({"type": "string", "minLength": 1, "maxLength": 1})
    }
}

impl ToolSchema for Value {
    fn schema() -> Value {
        json!({})
    }
}

impl ToolSchema for Map<String, Value> {
    fn schema() -> Value {
        json!({"type": "object"})
    }
}

impl<T: ToolSchema> ToolSchema for Vec<T> {
    fn schema() -> Value {
        json!({"type": "array", "items": T::schema()})
    }
}

impl<T: ToolSchema> ToolSchema for Option<T> {
    const OPTIONAL: bool = true;

    fn schema() -> Value {
        T::schema()
    }
}

impl<T: ToolSchema> ToolSchema for Box<T> {
    const OPTIONAL: bool = T::OPTIONAL;

    fn schema() -> Value {
        T::schema()
    }
}

impl<T: ToolSchema> ToolSchema for BTreeMap<String, T> {
    fn schema() -> Value {
        json!({"type": "object", "additionalProperties": T::schema()})
    }
}

impl<T: ToolSchema, S> ToolSchema for HashMap<String, T, S> {
    fn schema() -> Value {
        json!({"type": "object", "additionalProperties": T::schema()})
    }
}
