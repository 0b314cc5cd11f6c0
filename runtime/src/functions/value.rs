//! JSON ↔ component values for plain functions, on the host, with
//! wasmtime's dynamic [`Val`]: the arguments a client sent (already
//! checked against the schema of [`super::schema`]) become the function's
//! parameters, and what it returned becomes the tool's result.
//!
//! A function's own result:
//! - `result<T, E>`: `ok` is the result; `err` is a tool error whose text
//!   is the error itself when `E` is a string, else its JSON;
//! - a record is the structured result as it is; anything else is wrapped
//!   as `{"result": …}`; no result is `{"result": true}`;
//! - a string result is also sent as a text block.
//!
//! Floats that JSON cannot carry (NaN, infinities) in a result are a fault
//! of the tool, reported as such.

use base64::Engine as _;
use serde_json::{Map, Number, Value};
use wasmtime::component::Val;

use super::ty::Ty;
use crate::args::{ArgumentError, render_value};

/// The parameters of a function with `params`, from the prepared arguments
/// (a JSON object). An omitted or null argument of an option type is
/// `none`.
pub fn arguments(params: &[(String, Ty)], args: &Value) -> Result<Vec<Val>, ArgumentError> {
    let empty = Map::new();
    let args = args.as_object().unwrap_or(&empty);
    params
        .iter()
        .map(|(name, ty)| match args.get(name) {
            Some(value) => to_val(ty, value, name, name),
            None if matches!(ty, Ty::Option(_)) => Ok(Val::Option(None)),
            None => Err(ArgumentError::Missing {
                names: vec![name.clone()],
                received: args.keys().cloned().collect(),
                expected: params.iter().map(|(n, _)| n.clone()).collect(),
            }),
        })
        .collect()
}

/// Converts one JSON value of type `ty`; `path` names it for errors
/// (`order.items[2]`), `parameter` is the top-level parameter.
pub fn to_val(ty: &Ty, value: &Value, parameter: &str, path: &str) -> Result<Val, ArgumentError> {
    let wrong = |expected: &str| ArgumentError::TypeMismatch {
        parameter: parameter.to_string(),
        path: path.to_string(),
        expected: expected.to_string(),
        got: render_value(value),
    };
    let int = |min: i128, max: i128| -> Result<i128, ArgumentError> {
        let n = value
            .as_i64()
            .map(i128::from)
            .or_else(|| value.as_u64().map(i128::from))
            .or_else(|| {
                value
                    .as_f64()
                    .filter(|f| f.fract() == 0.0 && f.abs() < 1e19)
                    .map(|f| f as i128)
            })
            .ok_or_else(|| wrong("an integer"))?;
        if n < min || n > max {
            return Err(ArgumentError::Invalid {
                parameter: parameter.to_string(),
                path: path.to_string(),
                message: format!("{n} is not between {min} and {max}"),
            });
        }
        Ok(n)
    };
    let at = |suffix: String| format!("{path}{suffix}");
    Ok(match ty {
        Ty::Bool => Val::Bool(value.as_bool().ok_or_else(|| wrong("a boolean"))?),
        // `int` checked the bounds, so the casts below are exact.
        Ty::S8 => Val::S8(int(i8::MIN.into(), i8::MAX.into())? as i8),
        Ty::S16 => Val::S16(int(i16::MIN.into(), i16::MAX.into())? as i16),
        Ty::S32 => Val::S32(int(i32::MIN.into(), i32::MAX.into())? as i32),
        Ty::S64 => Val::S64(int(i64::MIN.into(), i64::MAX.into())? as i64),
        Ty::U8 => Val::U8(int(0, u8::MAX.into())? as u8),
        Ty::U16 => Val::U16(int(0, u16::MAX.into())? as u16),
        Ty::U32 => Val::U32(int(0, u32::MAX.into())? as u32),
        Ty::U64 => Val::U64(int(0, u64::MAX.into())? as u64),
        Ty::F32 => {
            let f = value.as_f64().ok_or_else(|| wrong("a number"))?;
            if f.abs() > f64::from(f32::MAX) {
                return Err(wrong("a number within the range of f32"));
            }
            Val::Float32(f as f32)
        }
        Ty::F64 => Val::Float64(value.as_f64().ok_or_else(|| wrong("a number"))?),
        Ty::Char => {
            let text = value.as_str().ok_or_else(|| wrong("a single character"))?;
            let mut chars = text.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) => Val::Char(c),
                _ => return Err(wrong("a single character")),
            }
        }
        Ty::String => Val::String(value.as_str().ok_or_else(|| wrong("a string"))?.to_string()),
        Ty::Bytes => {
            let text = value.as_str().ok_or_else(|| wrong("a base64 string"))?;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(text)
                .map_err(|_| wrong("a base64 string"))?;
            Val::List(bytes.into_iter().map(Val::U8).collect())
        }
        Ty::List(item) | Ty::FixedList(item, _) => {
            let items = value.as_array().ok_or_else(|| wrong("an array"))?;
            if let Ty::FixedList(_, n) = ty
                && items.len() != *n as usize
            {
                return Err(wrong(&format!("an array of exactly {n} items")));
            }
            let vals = items
                .iter()
                .enumerate()
                .map(|(i, v)| to_val(item, v, parameter, &at(format!("[{i}]"))))
                .collect::<Result<Vec<_>, _>>()?;
            match ty {
                Ty::FixedList(..) => Val::FixedLengthList(vals),
                _ => Val::List(vals),
            }
        }
        Ty::Map(item) => {
            let map = value.as_object().ok_or_else(|| wrong("an object"))?;
            Val::Map(
                map.iter()
                    .map(|(k, v)| {
                        Ok((
                            Val::String(k.clone()),
                            to_val(item, v, parameter, &at(format!(".{k}")))?,
                        ))
                    })
                    .collect::<Result<_, ArgumentError>>()?,
            )
        }
        Ty::Option(inner) => match value {
            Value::Null => Val::Option(None),
            v => Val::Option(Some(Box::new(to_val(inner, v, parameter, path)?))),
        },
        Ty::Result { ok, err } => {
            let (tag, payload) =
                single_key(value).ok_or_else(|| wrong(r#"{"ok": …} or {"err": …}"#))?;
            let payload_of = |ty: &Option<Box<Ty>>| -> Result<Option<Box<Val>>, ArgumentError> {
                match ty {
                    Some(ty) => Ok(Some(Box::new(to_val(
                        ty,
                        payload,
                        parameter,
                        &at(format!(".{tag}")),
                    )?))),
                    None => Ok(None),
                }
            };
            match tag {
                "ok" => Val::Result(Ok(payload_of(ok)?)),
                "err" => Val::Result(Err(payload_of(err)?)),
                _ => return Err(wrong(r#"{"ok": …} or {"err": …}"#)),
            }
        }
        Ty::Tuple(items) => {
            let values = value.as_array().filter(|a| a.len() == items.len());
            let values = values
                .ok_or_else(|| wrong(&format!("an array of exactly {} items", items.len())))?;
            Val::Tuple(
                items
                    .iter()
                    .zip(values)
                    .enumerate()
                    .map(|(i, (ty, v))| to_val(ty, v, parameter, &at(format!("[{i}]"))))
                    .collect::<Result<_, _>>()?,
            )
        }
        Ty::Record { fields, .. } => {
            let map = value.as_object().ok_or_else(|| wrong("an object"))?;
            Val::Record(
                fields
                    .iter()
                    .map(|field| {
                        let path = at(format!(".{}", field.name));
                        let val = match map.get(&field.name) {
                            Some(v) => to_val(&field.ty, v, parameter, &path)?,
                            None if matches!(field.ty, Ty::Option(_)) => Val::Option(None),
                            None => {
                                return Err(ArgumentError::Invalid {
                                    parameter: parameter.to_string(),
                                    path,
                                    message: "is required".into(),
                                });
                            }
                        };
                        Ok((field.name.clone(), val))
                    })
                    .collect::<Result<_, _>>()?,
            )
        }
        Ty::Variant { cases, .. } => {
            let names = || {
                cases
                    .iter()
                    .map(|c| c.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let (tag, payload) = match value {
                Value::String(tag) => (tag.as_str(), None),
                v => match single_key(v) {
                    Some((tag, payload)) => (tag, Some(payload)),
                    None => return Err(wrong(&format!("one of the cases {}", names()))),
                },
            };
            let case = cases
                .iter()
                .find(|c| c.name == tag)
                .ok_or_else(|| wrong(&format!("one of the cases {}", names())))?;
            let payload = match (&case.ty, payload) {
                (Some(ty), Some(p)) => {
                    Some(Box::new(to_val(ty, p, parameter, &at(format!(".{tag}")))?))
                }
                (None, None) => None,
                (None, Some(Value::Null)) => None,
                (Some(_), None) => {
                    return Err(wrong(&format!(
                        "{{\"{tag}\": …}} (the case carries a value)"
                    )));
                }
                (None, Some(_)) => {
                    return Err(wrong(&format!("\"{tag}\" (the case carries no value)")));
                }
            };
            Val::Variant(case.name.clone(), payload)
        }
        Ty::Enum { cases, .. } => {
            let tag = value
                .as_str()
                .filter(|t| cases.iter().any(|c| c.name == *t));
            Val::Enum(
                tag.ok_or_else(|| {
                    let names: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
                    wrong(&format!("one of {}", names.join(", ")))
                })?
                .to_string(),
            )
        }
        Ty::Flags { flags, .. } => {
            let items = value
                .as_array()
                .ok_or_else(|| wrong("an array of flag names"))?;
            let mut set = Vec::with_capacity(items.len());
            for item in items {
                let name = item
                    .as_str()
                    .filter(|n| flags.iter().any(|f| f.name == *n))
                    .ok_or_else(|| wrong("an array of flag names"))?;
                if !set.iter().any(|s: &String| s == name) {
                    set.push(name.to_string());
                }
            }
            Val::Flags(set)
        }
    })
}

/// The one key of an object with exactly one key, and its value.
fn single_key(value: &Value) -> Option<(&str, &Value)> {
    let map = value.as_object()?;
    let mut entries = map.iter();
    match (entries.next(), entries.next()) {
        (Some((k, v)), None) => Some((k.as_str(), v)),
        _ => None,
    }
}

/// What a function returned, as the tool's result.
#[derive(Debug, Clone, PartialEq)]
pub enum Returned {
    /// The structured result, and the text block of a string result.
    Ok {
        structured: Value,
        text: Option<String>,
    },
    /// `err` of a `result`: the tool error's text.
    Err(String),
}

/// Converts a function's results (`result` is its declared type).
/// `Err` is a fault of the tool: a value that does not match its type or
/// that JSON cannot carry.
pub fn returned(result: Option<&Ty>, vals: &[Val]) -> Result<Returned, String> {
    let (ty, val) = match (result, vals) {
        (None, []) => {
            return Ok(Returned::Ok {
                structured: serde_json::json!({"result": true}),
                text: None,
            });
        }
        (Some(ty), [val]) => (ty, val),
        _ => return Err(format!("it returned {} values", vals.len())),
    };
    let (ty, val) = match (ty, val) {
        (Ty::Result { ok, err }, Val::Result(outcome)) => match outcome {
            Ok(v) => match (ok.as_deref(), v.as_deref()) {
                (Some(ty), Some(v)) => (ty, v),
                (None, None) => {
                    return Ok(Returned::Ok {
                        structured: serde_json::json!({"result": true}),
                        text: None,
                    });
                }
                _ => return Err("its ok value does not match its type".into()),
            },
            Err(e) => {
                let text = match (err.as_deref(), e.as_deref()) {
                    (Some(Ty::String), Some(Val::String(text))) => text.clone(),
                    (Some(ty), Some(v)) => crate::json::to_string(&from_val(ty, v)?),
                    (None, None) => "the function returned an error".to_string(),
                    _ => return Err("its error value does not match its type".into()),
                };
                return Ok(Returned::Err(text));
            }
        },
        other => other,
    };
    let value = from_val(ty, val)?;
    let text = value.as_str().map(str::to_string);
    let structured = match (ty, value) {
        (Ty::Record { .. }, value) => value,
        (Ty::Option(_), Value::Null) => Value::Object(Map::new()),
        (_, value) => serde_json::json!({ "result": value }),
    };
    Ok(Returned::Ok { structured, text })
}

/// Converts one value of type `ty` to JSON.
pub fn from_val(ty: &Ty, val: &Val) -> Result<Value, String> {
    let mismatch = || format!("a value does not match its type {}", ty.wit());
    let float = |f: f64| {
        Number::from_f64(f)
            .map(Value::Number)
            .ok_or_else(|| format!("it returned {f}, which JSON cannot carry"))
    };
    Ok(match (ty, val) {
        (Ty::Bool, Val::Bool(b)) => Value::Bool(*b),
        (Ty::S8, Val::S8(n)) => (*n).into(),
        (Ty::S16, Val::S16(n)) => (*n).into(),
        (Ty::S32, Val::S32(n)) => (*n).into(),
        (Ty::S64, Val::S64(n)) => (*n).into(),
        (Ty::U8, Val::U8(n)) => (*n).into(),
        (Ty::U16, Val::U16(n)) => (*n).into(),
        (Ty::U32, Val::U32(n)) => (*n).into(),
        (Ty::U64, Val::U64(n)) => (*n).into(),
        (Ty::F32, Val::Float32(f)) => float(f64::from(*f))?,
        (Ty::F64, Val::Float64(f)) => float(*f)?,
        (Ty::Char, Val::Char(c)) => Value::String(c.to_string()),
        (Ty::String, Val::String(s)) => Value::String(s.clone()),
        (Ty::Bytes, Val::List(items)) => {
            let bytes = items
                .iter()
                .map(|v| match v {
                    Val::U8(b) => Ok(*b),
                    _ => Err(mismatch()),
                })
                .collect::<Result<Vec<u8>, String>>()?;
            Value::String(base64::engine::general_purpose::STANDARD.encode(bytes))
        }
        (Ty::List(item), Val::List(items))
        | (Ty::FixedList(item, _), Val::FixedLengthList(items)) => Value::Array(
            items
                .iter()
                .map(|v| from_val(item, v))
                .collect::<Result<_, _>>()?,
        ),
        (Ty::Map(item), Val::Map(entries)) => {
            let mut map = Map::new();
            for (k, v) in entries {
                let Val::String(k) = k else {
                    return Err(mismatch());
                };
                map.insert(k.clone(), from_val(item, v)?);
            }
            Value::Object(map)
        }
        (Ty::Option(_), Val::Option(None)) => Value::Null,
        (Ty::Option(inner), Val::Option(Some(v))) => from_val(inner, v)?,
        (Ty::Result { ok, err }, Val::Result(outcome)) => {
            let (tag, ty, v) = match outcome {
                Ok(v) => ("ok", ok, v),
                Err(v) => ("err", err, v),
            };
            let payload = match (ty.as_deref(), v.as_deref()) {
                (Some(ty), Some(v)) => from_val(ty, v)?,
                (None, None) => Value::Null,
                _ => return Err(mismatch()),
            };
            serde_json::json!({ tag: payload })
        }
        (Ty::Tuple(types), Val::Tuple(items)) if types.len() == items.len() => Value::Array(
            types
                .iter()
                .zip(items)
                .map(|(t, v)| from_val(t, v))
                .collect::<Result<_, _>>()?,
        ),
        (Ty::Record { fields, .. }, Val::Record(values)) => {
            let mut map = Map::new();
            for (field, (name, v)) in fields.iter().zip(values) {
                if field.name != *name {
                    return Err(mismatch());
                }
                map.insert(name.clone(), from_val(&field.ty, v)?);
            }
            Value::Object(map)
        }
        (Ty::Variant { cases, .. }, Val::Variant(tag, payload)) => {
            let case = cases.iter().find(|c| c.name == *tag).ok_or_else(mismatch)?;
            match (&case.ty, payload) {
                (None, None) => Value::String(tag.clone()),
                (Some(ty), Some(v)) => serde_json::json!({ tag: from_val(ty, v)? }),
                _ => return Err(mismatch()),
            }
        }
        (Ty::Enum { .. }, Val::Enum(tag)) => Value::String(tag.clone()),
        (Ty::Flags { .. }, Val::Flags(names)) => {
            Value::Array(names.iter().cloned().map(Value::String).collect())
        }
        _ => return Err(mismatch()),
    })
}
