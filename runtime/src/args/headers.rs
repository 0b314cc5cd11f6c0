//! Parameters a tool mirrors into HTTP headers (`x-mcp-header`, revision
//! 2026-07-28): which ones, checked once when the tool is loaded, and the
//! check of a request's `Mcp-Param-*` headers against its arguments.
//!
//! A property of the input schema may carry `"x-mcp-header": "Region"`;
//! a client then sends the argument's value in `Mcp-Param-Region` too, so
//! that a proxy can route on it without reading the body. The server must
//! refuse a request whose header is missing or says something else than
//! the body: a proxy that routed on a lie must not reach a tool.

use base64::Engine as _;
use serde_json::Value;

/// The JSON type of a mirrored parameter: only these can be a header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mirrored {
    String,
    Integer,
    Boolean,
}

/// One parameter mirrored into `Mcp-Param-{header}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamHeader {
    /// The property's name in the arguments.
    pub property: String,
    /// The header's name without `Mcp-Param-`, as the schema spells it.
    pub header: String,
    kind: Mirrored,
}

impl ParamHeader {
    /// The full header name, e.g. `Mcp-Param-Region`.
    pub fn header_name(&self) -> String {
        format!("Mcp-Param-{}", self.header)
    }
}

/// The `x-mcp-header` annotations of a root object schema's properties,
/// in property order; why one is malformed otherwise (the tool is then
/// refused at load, with this text).
pub fn param_headers(root: &Value) -> Result<Vec<ParamHeader>, String> {
    let Some(properties) = root.get("properties").and_then(Value::as_object) else {
        return Ok(Vec::new());
    };
    let mut found: Vec<ParamHeader> = Vec::new();
    for (property, schema) in properties {
        let Some(annotation) = schema.get("x-mcp-header") else {
            continue;
        };
        let header = annotation.as_str().ok_or_else(|| {
            format!("property {property:?}: x-mcp-header must be a string (a header name)")
        })?;
        check_header_name(header).map_err(|why| format!("property {property:?}: {why}"))?;
        let kind = mirrored_type(schema).ok_or_else(|| {
            format!(
                "property {property:?}: x-mcp-header is only for a single string, integer or \
                 boolean parameter (numbers, objects, arrays and null cannot be a header)"
            )
        })?;
        if let Some(other) = found.iter().find(|p| p.header.eq_ignore_ascii_case(header)) {
            return Err(format!(
                "properties {:?} and {property:?} both mirror into the header Mcp-Param-{header} \
                 (header names are case-insensitive): give each its own",
                other.property
            ));
        }
        found.push(ParamHeader {
            property: property.clone(),
            header: header.to_string(),
            kind,
        });
    }
    Ok(found)
}

/// A header name: 1 or more visible ASCII characters of an HTTP token
/// (RFC 9110), no space, colon or control character.
fn check_header_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("x-mcp-header must not be empty".into());
    }
    let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    match name.bytes().find(|b| !token(*b)) {
        None => Ok(()),
        Some(bad) => Err(format!(
            "x-mcp-header {name:?} is not a valid header name: {} is not allowed (use letters, \
             digits and !#$%&'*+-.^_`|~)",
            match bad {
                b' ' => "a space".to_string(),
                b':' => "a colon".to_string(),
                b if b.is_ascii_control() => "a control character".to_string(),
                b if !b.is_ascii() => "a non-ASCII character".to_string(),
                b => format!("{:?}", b as char),
            }
        )),
    }
}

/// The one mirrored type a property's schema declares, if it is one (a
/// nullable one too: `["string", "null"]`, sent without a header when null).
fn mirrored_type(schema: &Value) -> Option<Mirrored> {
    let one = |name: &str| match name {
        "string" => Some(Mirrored::String),
        "integer" => Some(Mirrored::Integer),
        "boolean" => Some(Mirrored::Boolean),
        _ => None,
    };
    match schema.get("type")? {
        Value::String(name) => one(name),
        Value::Array(names) => {
            let mut types = names.iter().filter(|n| n.as_str() != Some("null"));
            match (types.next(), types.next()) {
                (Some(name), None) => one(name.as_str()?),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Decodes a mirrored header's value: the `=?base64?…?=` form (standard
/// alphabet, canonical padding, UTF-8) for values a header cannot carry as
/// they are; any other value as is.
pub fn decode_header_value(value: &str) -> Option<String> {
    match value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    {
        Some(encoded) => {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .ok()?;
            String::from_utf8(bytes).ok()
        }
        None => Some(value.to_string()),
    }
}

/// Checks a request's `Mcp-Param-*` headers against its arguments:
/// `header(name)` gives the header's value (absent: `None`). An argument
/// that is present and not null needs its header, with the same value; an
/// argument that is absent or null must come without one. Values in the
/// `=?base64?…?=` form are decoded (strictly: canonical padding, the
/// standard alphabet).
pub fn check_param_headers<'h>(
    mirrored: &[ParamHeader],
    arguments: &Value,
    header: impl Fn(&str) -> Option<&'h str>,
) -> Result<(), String> {
    for param in mirrored {
        let name = param.header_name();
        let sent = header(&name);
        let value = arguments.get(&param.property).filter(|v| !v.is_null());
        let Some(value) = value else {
            if sent.is_some() {
                return Err(format!(
                    "Header mismatch: {name} is sent but arguments.{} is not",
                    param.property
                ));
            }
            continue;
        };
        let expected = header_text(value, param.kind);
        let Some(sent) = sent else {
            return Err(format!(
                "Header mismatch: the {name} header is required when arguments.{} is given \
                 (the tool's input schema mirrors it with x-mcp-header)",
                param.property
            ));
        };
        let decoded = decode_header_value(sent.trim()).ok_or_else(|| {
            format!("Header mismatch: the {name} header is not valid =?base64?…?= text")
        })?;
        if Some(decoded.as_str()) != expected.as_deref() {
            return Err(format!(
                "Header mismatch: {name} header value does not match arguments.{}",
                param.property
            ));
        }
    }
    Ok(())
}

/// What the header of an argument says: a string as is, an integer in
/// decimal, a boolean as `true`/`false`; `None` for a value of another type
/// (the arguments' own check refuses it later).
fn header_text(value: &Value, kind: Mirrored) -> Option<String> {
    match (kind, value) {
        (Mirrored::String, Value::String(s)) => Some(s.clone()),
        (Mirrored::Integer, Value::Number(n)) if n.is_i64() || n.is_u64() => Some(n.to_string()),
        (Mirrored::Boolean, Value::Bool(b)) => Some(b.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(properties: Value) -> Value {
        json!({"type": "object", "properties": properties})
    }

    #[test]
    fn annotations_are_read_in_property_order() {
        let found = param_headers(&schema(json!({
            "region": {"type": "string", "x-mcp-header": "Region"},
            "query": {"type": "string"},
            "priority": {"type": "integer", "x-mcp-header": "Priority"},
            "verbose": {"type": ["boolean", "null"], "x-mcp-header": "Verbose"},
        })))
        .expect("valid");
        let names: Vec<_> = found
            .iter()
            .map(|p| (p.property.as_str(), p.header_name()))
            .collect();
        assert_eq!(
            names,
            [
                ("region", "Mcp-Param-Region".to_string()),
                ("priority", "Mcp-Param-Priority".to_string()),
                ("verbose", "Mcp-Param-Verbose".to_string()),
            ]
        );
    }

    #[test]
    fn malformed_annotations_are_refused_with_the_rule() {
        let cases = [
            (
                json!({"v": {"type": "string", "x-mcp-header": ""}}),
                "must not be empty",
            ),
            (
                json!({"v": {"type": "string", "x-mcp-header": 5}}),
                "must be a string",
            ),
            (
                json!({"v": {"type": "object", "x-mcp-header": "Data"}}),
                "only for a single string",
            ),
            (
                json!({"v": {"type": "array", "x-mcp-header": "Items"}}),
                "only for a single string",
            ),
            (
                json!({"v": {"type": "null", "x-mcp-header": "Nil"}}),
                "only for a single string",
            ),
            (
                json!({"v": {"type": "number", "x-mcp-header": "Score"}}),
                "only for a single string",
            ),
            (
                json!({"v": {"x-mcp-header": "Untyped"}}),
                "only for a single string",
            ),
            (
                json!({"v": {"type": "string", "x-mcp-header": "My Region"}}),
                "a space",
            ),
            (
                json!({"v": {"type": "string", "x-mcp-header": "Region:Primary"}}),
                "a colon",
            ),
            (
                json!({"v": {"type": "string", "x-mcp-header": "Région"}}),
                "non-ASCII",
            ),
            (
                json!({"v": {"type": "string", "x-mcp-header": "Region\t1"}}),
                "control character",
            ),
            (
                json!({"a": {"type": "string", "x-mcp-header": "MyField"},
                       "b": {"type": "string", "x-mcp-header": "myfield"}}),
                "both mirror into the header",
            ),
        ];
        for (properties, rule) in cases {
            let err = param_headers(&schema(properties.clone())).expect_err("refused");
            assert!(err.contains(rule), "{properties}: {err}");
        }
    }

    fn check(arguments: Value, headers: &[(&str, &str)]) -> Result<(), String> {
        let mirrored = param_headers(&schema(json!({
            "region": {"type": "string", "x-mcp-header": "Region"},
            "priority": {"type": "integer", "x-mcp-header": "Priority"},
            "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
        })))
        .expect("valid");
        let header = |name: &str| {
            headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| *v)
        };
        check_param_headers(&mirrored, &arguments, header)
    }

    #[test]
    fn headers_must_say_what_the_body_says() {
        let ok = [
            ("Mcp-Param-Region", "us-west1"),
            ("mcp-param-priority", "3"),
        ];
        assert_eq!(
            check(json!({"region": "us-west1", "priority": 3}), &ok),
            Ok(())
        );
        // Whitespace around a value is not part of it (RFC 9110).
        assert_eq!(
            check(json!({"region": "eu"}), &[("Mcp-Param-Region", "  eu  ")]),
            Ok(())
        );
        // Base64 for values a header cannot carry as they are.
        assert_eq!(
            check(
                json!({"region": "Hello"}),
                &[("Mcp-Param-Region", "=?base64?SGVsbG8=?=")]
            ),
            Ok(())
        );
        // Without both markers, the value is taken literally.
        assert_eq!(
            check(
                json!({"region": "=?base64?SGVsbG8="}),
                &[("Mcp-Param-Region", "=?base64?SGVsbG8=")]
            ),
            Ok(())
        );
        assert_eq!(
            check(json!({"verbose": true}), &[("Mcp-Param-Verbose", "true")]),
            Ok(())
        );
        // Absent and null arguments come without their header.
        assert_eq!(check(json!({"verbose": null}), &[]), Ok(()));

        let refused = [
            (json!({"region": "us"}), vec![]),
            (json!({"region": "us"}), vec![("Mcp-Param-Region", "eu")]),
            (
                json!({"region": "Hello"}),
                vec![("Mcp-Param-Region", "=?base64?SGVsbG8?=")],
            ),
            (
                json!({"region": "Hello"}),
                vec![("Mcp-Param-Region", "=?base64?SGVs!!!bG8=?=")],
            ),
            (json!({"priority": 3}), vec![("Mcp-Param-Priority", "03")]),
            (
                json!({"verbose": false}),
                vec![("Mcp-Param-Verbose", "False")],
            ),
            (json!({}), vec![("Mcp-Param-Region", "us")]),
        ];
        for (arguments, headers) in refused {
            let err = check(arguments.clone(), &headers).expect_err("refused");
            assert!(
                err.starts_with("Header mismatch: "),
                "{arguments} {headers:?}: {err}"
            );
        }
    }
}
