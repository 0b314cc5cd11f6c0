//! Arguments: the runtime, not the guest, owns argument checking, so tools
//! in every language behave the same.
//!
//! A tool's input schema is compiled once into an [`ArgumentSchema`]; every
//! call then runs [`ArgumentSchema::prepare`]:
//!
//! 1. **parse**: named (a JSON object), positional (a JSON array, bound in
//!    the schema's property order) or none (`null`);
//! 2. **check names**: unknown names and missing required parameters are
//!    reported with what arrived and what was expected;
//! 3. **coerce**: a string holding an integer, number or boolean becomes one
//!    when the parameter (or the item type of an array parameter) asks for
//!    it; a value of the wrong type that does not convert is an error;
//! 4. **defaults**: omitted optional parameters get their schema `default`,
//!    so the tool always receives them;
//! 5. **validate** the result against the whole schema with `jsonschema`
//!    (draft 2020-12, formats asserted).
//!
//! [`OutputSchema`] checks a tool's structured result the same way.

mod coerce;
mod error;
mod headers;
mod label;
mod schema;
#[cfg(test)]
mod tests;

use std::fmt;

use jsonschema::Validator;
use serde_json::{Map, Value};

use coerce::TypeSet;
pub(crate) use error::render_value;
pub use error::{ArgumentError, SchemaError};
use error::{cut, kind_of, schema_message};
pub use headers::{ParamHeader, check_param_headers, decode_header_value};
use schema::{MAX_DEPTH, describe_location, dismantle, exceeds_depth, resolve};

/// One parameter of a tool, as shown to people and clients.
#[derive(Debug, Clone, PartialEq)]
pub struct Parameter {
    pub name: String,
    /// A short type description: `integer`, `string (date-time)`,
    /// `array of integer`, `object`, `any`, `csv | tsv` for an enum.
    pub type_label: String,
    pub required: bool,
    pub default: Option<Value>,
    pub description: Option<String>,
}

impl Parameter {
    /// `required`, `optional, default 90` or `optional`: how listings
    /// (`airlock inspect`, `/rpc/describe`) say whether it must be given.
    pub fn requirement(&self) -> String {
        match (&self.default, self.required) {
            (_, true) => "required".to_string(),
            (Some(default), false) => format!("optional, default {default}"),
            (None, false) => "optional".to_string(),
        }
    }
}

/// How to coerce one parameter: its declared types and, for an array of
/// scalars, its item types.
#[derive(Debug, Clone, Copy, Default)]
struct Coercion {
    types: Option<TypeSet>,
    items: Option<TypeSet>,
}

/// A tool's compiled input schema. Compiled once per tool, shared by calls.
pub struct ArgumentSchema {
    validator: Validator,
    parameters: Vec<Parameter>,
    /// Parallel to `parameters`.
    coercions: Vec<Coercion>,
    /// The `required` list, in the schema's order (may name undeclared properties).
    required: Vec<String>,
    /// Every name a client may send, for messages: the properties, then any
    /// required names that are not declared as properties.
    expected: Vec<String>,
    /// `additionalProperties` is present and not `false`.
    allow_extra: bool,
    /// The parameters mirrored into `Mcp-Param-*` headers.
    headers: Vec<ParamHeader>,
}

impl fmt::Debug for ArgumentSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ArgumentSchema")
            .field("parameters", &self.parameters)
            .field("allow_extra", &self.allow_extra)
            .finish_non_exhaustive()
    }
}

impl ArgumentSchema {
    /// Compiles a tool's input schema. Fails if it is not a valid draft
    /// 2020-12 JSON Schema or its root is not `"type": "object"`.
    pub fn compile(input_schema: &Value) -> Result<Self, SchemaError> {
        let validator = schema::compile(input_schema)?;
        let root = input_schema;

        let required: Vec<String> = root
            .get("required")
            .and_then(Value::as_array)
            .map(|names| {
                names
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();

        let empty = Map::new();
        let properties = root
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or(&empty);

        let mut parameters = Vec::with_capacity(properties.len());
        let mut coercions = Vec::with_capacity(properties.len());
        for (name, property) in properties {
            let resolved = resolve(root, property);
            // Keywords next to a `$ref` win over the referenced schema's.
            let keyword = |key: &str| property.get(key).or_else(|| resolved.get(key));
            parameters.push(Parameter {
                name: name.clone(),
                type_label: label::type_label(root, property),
                required: required.contains(name),
                default: keyword("default").cloned(),
                description: keyword("description")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
            });
            coercions.push(coercion_for(root, property));
        }

        let mut expected: Vec<String> = parameters.iter().map(|p| p.name.clone()).collect();
        for name in &required {
            if !expected.contains(name) {
                expected.push(name.clone());
            }
        }

        let allow_extra = root
            .get("additionalProperties")
            .is_some_and(|extra| extra != &Value::Bool(false));
        let headers = headers::param_headers(root).map_err(SchemaError::ParamHeader)?;

        Ok(ArgumentSchema {
            validator,
            parameters,
            coercions,
            required,
            expected,
            allow_extra,
            headers,
        })
    }

    /// The parameters a client mirrors into `Mcp-Param-*` headers.
    pub fn param_headers(&self) -> &[ParamHeader] {
        &self.headers
    }

    /// The parameters in the schema's property order.
    pub fn parameters(&self) -> &[Parameter] {
        &self.parameters
    }

    /// Turns what a client sent into the object the tool receives.
    ///
    /// `raw` is a JSON object (named arguments), a JSON array (positional,
    /// bound in property order) or null (no arguments). The result is
    /// coerced, has defaults filled in and has passed the schema.
    pub fn prepare(&self, raw: Value) -> Result<Value, ArgumentError> {
        if exceeds_depth(&raw, MAX_DEPTH) {
            dismantle(raw);
            return Err(ArgumentError::TooDeep { limit: MAX_DEPTH });
        }
        let mut args = self.bind(raw)?;

        // The lists of what arrived are built only for the error messages.
        if !self.allow_extra && args.keys().any(|name| self.position(name).is_none()) {
            let unknown = args
                .keys()
                .filter(|name| self.position(name).is_none())
                .cloned()
                .collect();
            return Err(ArgumentError::Unknown {
                names: unknown,
                received: args.keys().cloned().collect(),
                expected: self.expected.clone(),
            });
        }
        if self.required.iter().any(|name| !args.contains_key(name)) {
            let missing = self
                .required
                .iter()
                .filter(|name| !args.contains_key(*name))
                .cloned()
                .collect();
            return Err(ArgumentError::Missing {
                names: missing,
                received: args.keys().cloned().collect(),
                expected: self.expected.clone(),
            });
        }

        // Coerce in place; omitted optional parameters get their default.
        for (parameter, coercion) in self.parameters.iter().zip(&self.coercions) {
            match args.get_mut(&parameter.name) {
                Some(value) => {
                    let arrived = std::mem::take(value);
                    *value = coerce_parameter(&parameter.name, coercion, arrived)?;
                }
                None => {
                    if let (Some(default), false) = (&parameter.default, parameter.required) {
                        args.insert(parameter.name.clone(), default.clone());
                    }
                }
            }
        }
        // Declared parameters first, in schema order, then any allowed
        // extras in arrival order: the tool sees a stable layout. Clients
        // mostly send the schema's order already; then nothing moves.
        let rank = |name: &String| self.position(name).unwrap_or(usize::MAX);
        if !args.keys().map(rank).is_sorted() {
            let mut entries: Vec<(String, Value)> = args.into_iter().collect();
            // Stable: extras keep their arrival order.
            entries.sort_by_key(|(name, _)| rank(name));
            args = entries.into_iter().collect();
        }
        let prepared = Value::Object(args);

        match self.validator.validate(&prepared) {
            Ok(()) => Ok(prepared),
            Err(error) => Err(argument_error(&error)),
        }
    }

    /// The index of the declared parameter `name`.
    fn position(&self, name: &str) -> Option<usize> {
        self.parameters.iter().position(|p| p.name == name)
    }

    /// Parses the three accepted shapes into named arguments.
    fn bind(&self, raw: Value) -> Result<Map<String, Value>, ArgumentError> {
        match raw {
            Value::Null => Ok(Map::new()),
            Value::Object(map) => Ok(map),
            Value::Array(items) => {
                if items.len() > self.parameters.len() {
                    let got = items.len();
                    dismantle(Value::Array(items));
                    return Err(ArgumentError::TooManyPositional {
                        got,
                        names: self.parameters.iter().map(|p| p.name.clone()).collect(),
                    });
                }
                Ok(self
                    .parameters
                    .iter()
                    .map(|p| p.name.clone())
                    .zip(items)
                    .collect())
            }
            other => Err(ArgumentError::NotAnObject {
                kind: kind_of(&other),
            }),
        }
    }
}

/// What coercion a property schema calls for.
fn coercion_for(root: &Value, property: &Value) -> Coercion {
    let resolved = resolve(root, property);
    let types = TypeSet::from_schema(property).or_else(|| TypeSet::from_schema(resolved));
    let items = if types.is_none_or(|t| t.array) {
        property
            .get("items")
            .or_else(|| resolved.get("items"))
            .map(|items| resolve(root, items))
            .and_then(TypeSet::from_schema)
            .filter(TypeSet::is_scalar)
    } else {
        None
    };
    Coercion { types, items }
}

/// Coerces one top-level value and, for arrays of scalars, its items.
fn coerce_parameter(name: &str, coercion: &Coercion, value: Value) -> Result<Value, ArgumentError> {
    let value = match coercion.types {
        Some(types) => types
            .coerce(value)
            .map_err(|value| mismatch(name, name.to_owned(), &types, &value))?,
        None => value,
    };
    match (value, coercion.items) {
        (Value::Array(items), Some(item_types)) => {
            let mut coerced = Vec::with_capacity(items.len());
            for (i, item) in items.into_iter().enumerate() {
                let item = item_types
                    .coerce(item)
                    .map_err(|item| mismatch(name, format!("{name}[{i}]"), &item_types, &item))?;
                coerced.push(item);
            }
            Ok(Value::Array(coerced))
        }
        (value, _) => Ok(value),
    }
}

fn mismatch(parameter: &str, path: String, types: &TypeSet, got: &Value) -> ArgumentError {
    ArgumentError::TypeMismatch {
        parameter: parameter.to_owned(),
        path,
        expected: types.words(),
        got: render_value(got),
    }
}

/// Maps a validator error to the client-facing error for its location.
fn argument_error(error: &jsonschema::ValidationError<'_>) -> ArgumentError {
    let message = schema_message(error, &render_value(error.instance()));
    match describe_location(error.instance_path()) {
        (Some(parameter), path) => ArgumentError::Invalid {
            parameter,
            path,
            message,
        },
        (None, _) => ArgumentError::InvalidArguments { message },
    }
}

/// A compiled output schema, for checking a tool's structured result.
pub struct OutputSchema {
    validator: Validator,
}

impl fmt::Debug for OutputSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OutputSchema").finish_non_exhaustive()
    }
}

impl OutputSchema {
    /// Compiles an output schema; the same rules as for input schemas.
    pub fn compile(schema: &Value) -> Result<Self, SchemaError> {
        Ok(OutputSchema {
            validator: schema::compile(schema)?,
        })
    }

    /// Checks a structured result. The message names the failing path:
    /// `Result field "items[2].price": ...`, or `Result: ...` for the root.
    pub fn check(&self, value: &Value) -> Result<(), String> {
        if exceeds_depth(value, MAX_DEPTH) {
            return Err(format!(
                "Result: nested too deeply (more than {MAX_DEPTH} levels)"
            ));
        }
        match self.validator.validate(value) {
            Ok(()) => Ok(()),
            Err(error) => {
                // The client never sees the value a tool got wrong.
                let message = schema_message(&error, "the value");
                let (_, path) = describe_location(error.instance_path());
                if path.is_empty() {
                    Err(format!("Result: {message}"))
                } else {
                    Err(format!("Result field \"{}\": {message}", cut(&path, 120)))
                }
            }
        }
    }
}

// Compiled schemas are shared between concurrent calls.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<ArgumentSchema>();
    assert_send_sync::<OutputSchema>();
};
