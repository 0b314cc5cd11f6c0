//! Unit tests for the argument pipeline: every refusal message, coercion,
//! defaults, positional binding, labels, and the output-schema check.

use serde_json::{Value, json};

use super::*;

/// The running example: one required and three optional parameters.
fn export_orders() -> ArgumentSchema {
    ArgumentSchema::compile(&json!({
        "type": "object",
        "properties": {
            "customer_id": {"type": "string", "description": "Customer to export"},
            "max_age_days": {"type": "integer", "default": 90, "minimum": 1},
            "format": {"type": "string", "enum": ["csv", "tsv"], "default": "csv"},
            "include_header": {"type": "boolean", "default": true}
        },
        "required": ["customer_id"]
    }))
    .expect("export_orders schema compiles")
}

fn schema(value: Value) -> ArgumentSchema {
    ArgumentSchema::compile(&value).expect("schema compiles")
}

fn message(result: Result<Value, ArgumentError>) -> String {
    result.expect_err("arguments should be refused").to_string()
}

/// `{name: value}` without `json!`, which would serialize (recursively) a
/// deep value.
fn object_with(name: &str, value: Value) -> Value {
    let mut map = serde_json::Map::new();
    map.insert(name.to_owned(), value);
    Value::Object(map)
}

fn single(name: &str, property: Value) -> ArgumentSchema {
    schema(json!({"type": "object", "properties": {name: property}}))
}

// ---- compile ----------------------------------------------------------

#[test]
fn compile_refuses_a_non_object_root() {
    for bad in [
        json!({"type": "string"}),
        json!({"type": ["object", "null"]}),
        json!({"properties": {}}),
        json!(true),
        json!([]),
    ] {
        assert!(
            matches!(
                ArgumentSchema::compile(&bad),
                Err(SchemaError::NotAnObjectSchema)
            ),
            "{bad}"
        );
        assert!(OutputSchema::compile(&bad).is_err(), "{bad}");
    }
}

#[test]
fn compile_refuses_an_invalid_schema() {
    let err = ArgumentSchema::compile(&json!({"type": "object", "properties": {"a": {"type": 5}}}))
        .expect_err("type 5 is invalid");
    assert!(matches!(err, SchemaError::Invalid(_)), "{err:?}");
    assert!(
        err.to_string().starts_with("not a valid JSON Schema"),
        "{err}"
    );

    let err = ArgumentSchema::compile(&json!({"type": "object", "required": "a"}))
        .expect_err("required must be an array");
    assert!(matches!(err, SchemaError::Invalid(_)), "{err:?}");
}

#[test]
fn compile_does_not_fetch_remote_references() {
    let err = ArgumentSchema::compile(&json!({
        "type": "object",
        "properties": {"a": {"$ref": "https://example.com/schema.json"}}
    }));
    assert!(matches!(err, Err(SchemaError::Invalid(_))), "{err:?}");
}

#[test]
fn compile_refuses_a_very_deep_schema() {
    let mut inner = json!({"type": "object"});
    for _ in 0..200 {
        inner = json!({"type": "object", "properties": {"x": inner}});
    }
    assert!(matches!(
        ArgumentSchema::compile(&inner),
        Err(SchemaError::TooDeep { .. })
    ));
}

#[test]
fn schema_without_properties_takes_no_arguments() {
    let s = schema(json!({"type": "object"}));
    assert!(s.parameters().is_empty());
    assert_eq!(s.prepare(Value::Null).unwrap(), json!({}));
    assert_eq!(s.prepare(json!({})).unwrap(), json!({}));
    assert_eq!(s.prepare(json!([])).unwrap(), json!({}));
    assert_eq!(
        message(s.prepare(json!([1]))),
        "Too many positional arguments: got 1, the tool takes none"
    );
}

// ---- parameters -------------------------------------------------------

#[test]
fn parameters_follow_schema_order_with_labels() {
    let s = export_orders();
    let names: Vec<&str> = s.parameters().iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        ["customer_id", "max_age_days", "format", "include_header"]
    );
    let p = &s.parameters()[0];
    assert_eq!(p.type_label, "string");
    assert!(p.required);
    assert_eq!(p.default, None);
    assert_eq!(p.description.as_deref(), Some("Customer to export"));
    let p = &s.parameters()[1];
    assert_eq!(p.type_label, "integer");
    assert!(!p.required);
    assert_eq!(p.default, Some(json!(90)));
    assert_eq!(p.description, None);
    assert_eq!(s.parameters()[2].type_label, "csv | tsv");
    assert_eq!(s.parameters()[3].type_label, "boolean");
}

#[test]
fn type_labels() {
    let s = schema(json!({
        "type": "object",
        "$defs": {"when": {"type": "string", "format": "date", "description": "A day"}},
        "properties": {
            "at": {"type": "string", "format": "date-time"},
            "ids": {"type": "array", "items": {"type": "integer"}},
            "modes": {"type": "array", "items": {"enum": ["a", "b"]}},
            "list": {"type": "array"},
            "opts": {"type": "object"},
            "shape": {"properties": {"x": {}}},
            "anything": {},
            "nullable": {"type": ["integer", "null"]},
            "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            "fixed": {"const": 3},
            "day": {"$ref": "#/$defs/when"},
            "levels": {"enum": [1, 2, null]},
            "yes": true
        }
    }));
    let labels: Vec<(&str, &str)> = s
        .parameters()
        .iter()
        .map(|p| (p.name.as_str(), p.type_label.as_str()))
        .collect();
    assert_eq!(
        labels,
        [
            ("at", "string (date-time)"),
            ("ids", "array of integer"),
            ("modes", "array of (a | b)"),
            ("list", "array"),
            ("opts", "object"),
            ("shape", "object"),
            ("anything", "any"),
            ("nullable", "integer | null"),
            ("either", "string | integer"),
            ("fixed", "3"),
            ("day", "string (date)"),
            ("levels", "1 | 2 | null"),
            ("yes", "any"),
        ]
    );
    assert_eq!(s.parameters()[10].description.as_deref(), Some("A day"));
}

// ---- shapes of the arguments ------------------------------------------

#[test]
fn named_arguments_pass_and_defaults_fill_in() {
    let s = export_orders();
    let out = s.prepare(json!({"customer_id": "C-1"})).unwrap();
    assert_eq!(
        out,
        json!({"customer_id": "C-1", "max_age_days": 90, "format": "csv", "include_header": true})
    );
    // Keys come out in schema order whatever order they arrived in.
    let keys: Vec<&String> = out.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        ["customer_id", "max_age_days", "format", "include_header"]
    );
}

#[test]
fn given_values_win_over_defaults() {
    let s = export_orders();
    let out = s
        .prepare(json!({"include_header": false, "format": "tsv", "customer_id": "C-1", "max_age_days": 7}))
        .unwrap();
    assert_eq!(
        out,
        json!({"customer_id": "C-1", "max_age_days": 7, "format": "tsv", "include_header": false})
    );
}

#[test]
fn null_means_no_arguments() {
    let s = schema(json!({
        "type": "object",
        "properties": {"n": {"type": "integer", "default": 5}}
    }));
    assert_eq!(s.prepare(Value::Null).unwrap(), json!({"n": 5}));
    assert_eq!(
        message(export_orders().prepare(Value::Null)),
        "Missing required argument \"customer_id\"; received: [], \
         expected: [customer_id, max_age_days, format, include_header]"
    );
}

#[test]
fn positional_arguments_bind_in_property_order() {
    let s = export_orders();
    let out = s.prepare(json!(["C-1", 30, "tsv"])).unwrap();
    assert_eq!(
        out,
        json!({"customer_id": "C-1", "max_age_days": 30, "format": "tsv", "include_header": true})
    );
    let out = s.prepare(json!(["C-1", "30", "csv", "0"])).unwrap();
    assert_eq!(
        out,
        json!({"customer_id": "C-1", "max_age_days": 30, "format": "csv", "include_header": false})
    );
}

#[test]
fn too_many_positional_arguments() {
    assert_eq!(
        message(export_orders().prepare(json!(["C-1", 30, "tsv", true, "extra"]))),
        "Too many positional arguments: got 5, the tool takes 4 \
         (customer_id, max_age_days, format, include_header)"
    );
}

#[test]
fn missing_positional_required_argument() {
    let s = schema(json!({
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
        "required": ["a", "b"]
    }));
    let err = s.prepare(json!(["x"])).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Missing required argument \"b\"; received: [a], expected: [a, b]"
    );
    assert_eq!(err.parameter(), Some("b"));
}

#[test]
fn arguments_of_other_kinds_are_refused() {
    let s = export_orders();
    for (raw, kind) in [
        (json!("C-1"), "a string"),
        (json!(42), "a number"),
        (json!(true), "a boolean"),
    ] {
        let err = s.prepare(raw).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "Arguments must be a JSON object of named parameters or an array of positional ones, got {kind}"
            )
        );
        assert_eq!(err.parameter(), None);
    }
}

// ---- names ------------------------------------------------------------

#[test]
fn missing_required_lists_received_and_expected() {
    let err = export_orders()
        .prepare(json!({"format": "csv"}))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Missing required argument \"customer_id\"; received: [format], \
         expected: [customer_id, max_age_days, format, include_header]"
    );
    assert_eq!(err.parameter(), Some("customer_id"));
}

#[test]
fn several_missing_arguments_are_all_listed() {
    let s = schema(json!({
        "type": "object",
        "properties": {"a": {}, "b": {}, "c": {}},
        "required": ["a", "c"]
    }));
    assert_eq!(
        message(s.prepare(json!({"b": 1}))),
        "Missing required arguments \"a\", \"c\"; received: [b], expected: [a, b, c]"
    );
}

#[test]
fn received_keeps_arrival_order() {
    let s = schema(json!({
        "type": "object",
        "properties": {"a": {}, "b": {}, "c": {}, "d": {}},
        "required": ["d"]
    }));
    let raw: Value = serde_json::from_str(r#"{"c": 1, "a": 2, "b": 3}"#).unwrap();
    assert_eq!(
        message(s.prepare(raw)),
        "Missing required argument \"d\"; received: [c, a, b], expected: [a, b, c, d]"
    );
}

#[test]
fn required_name_without_property_is_expected_too() {
    let s = schema(json!({
        "type": "object",
        "properties": {"a": {}},
        "required": ["z"],
        "additionalProperties": true
    }));
    assert_eq!(
        message(s.prepare(json!({"a": 1}))),
        "Missing required argument \"z\"; received: [a], expected: [a, z]"
    );
    assert_eq!(
        s.prepare(json!({"z": 1})).unwrap(),
        json!({"z": 1}),
        "an allowed extra satisfies the requirement"
    );
}

#[test]
fn unknown_argument_is_refused() {
    let err = export_orders()
        .prepare(json!({"customer_id": "C-1", "colour": "red"}))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Unknown argument \"colour\"; received: [customer_id, colour], \
         expected: [customer_id, max_age_days, format, include_header]"
    );
    assert_eq!(err.parameter(), Some("colour"));
}

#[test]
fn several_unknown_arguments_are_listed_before_missing_ones() {
    let err = export_orders()
        .prepare(json!({"customer": "C-1", "colour": "red"}))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Unknown arguments \"customer\", \"colour\"; received: [customer, colour], \
         expected: [customer_id, max_age_days, format, include_header]"
    );
}

/// The keys of a prepared object, in order.
fn keys(value: &Value) -> Vec<&str> {
    value
        .as_object()
        .expect("prepared arguments are an object")
        .keys()
        .map(String::as_str)
        .collect()
}

#[test]
fn declared_parameters_come_first_in_schema_order_then_extras_as_they_arrived() {
    let open = schema(json!({
        "type": "object",
        "properties": {
            "a": {"type": "integer"},
            "b": {"type": "integer", "default": 2},
            "c": {"type": "integer"}
        },
        "additionalProperties": true
    }));
    // Already in schema order, with a default to fill in between.
    let out = open.prepare(json!({"a": 1, "c": "3"})).unwrap();
    assert_eq!(keys(&out), ["a", "b", "c"]);
    assert_eq!(out, json!({"a": 1, "b": 2, "c": 3}));
    // Out of order, extras mixed in: extras keep their arrival order.
    let out = open
        .prepare(json!({"z": 0, "c": 3, "y": 0, "a": 1, "x": 0}))
        .unwrap();
    assert_eq!(keys(&out), ["a", "b", "c", "z", "y", "x"]);
    // Nothing to move.
    let out = open
        .prepare(json!({"a": 1, "b": 5, "c": 3, "q": 0}))
        .unwrap();
    assert_eq!(keys(&out), ["a", "b", "c", "q"]);
}

#[test]
fn unknown_arguments_allowed_when_schema_says_so() {
    let open = schema(json!({
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "additionalProperties": true
    }));
    assert_eq!(
        open.prepare(json!({"x": [1], "a": "2"})).unwrap(),
        json!({"a": 2, "x": [1]})
    );

    let typed_extras = schema(json!({
        "type": "object",
        "properties": {"a": {"type": "integer"}},
        "additionalProperties": {"type": "string"}
    }));
    assert_eq!(
        typed_extras.prepare(json!({"x": "ok"})).unwrap(),
        json!({"x": "ok"})
    );
    assert_eq!(
        message(typed_extras.prepare(json!({"x": 5}))),
        "Parameter \"x\": 5 is not of type \"string\""
    );

    let closed = schema(json!({
        "type": "object",
        "properties": {"a": {}},
        "additionalProperties": false
    }));
    assert!(message(closed.prepare(json!({"b": 1}))).starts_with("Unknown argument \"b\""));
}

// ---- coercion ---------------------------------------------------------

#[test]
fn integer_coercion() {
    let s = single("n", json!({"type": "integer"}));
    assert_eq!(s.prepare(json!({"n": "42"})).unwrap(), json!({"n": 42}));
    assert_eq!(s.prepare(json!({"n": "-7"})).unwrap(), json!({"n": -7}));
    assert_eq!(s.prepare(json!({"n": 42})).unwrap(), json!({"n": 42}));
    assert_eq!(s.prepare(json!({"n": 3.0})).unwrap(), json!({"n": 3.0}));
    assert_eq!(
        s.prepare(json!({"n": "18446744073709551615"})).unwrap(),
        json!({"n": u64::MAX})
    );
    for bad in [
        "4.5",
        "",
        " 42",
        "1e3",
        "0x10",
        "18446744073709551616",
        "soon",
    ] {
        assert_eq!(
            message(s.prepare(json!({"n": bad}))),
            format!("Parameter \"n\" expects an integer, got {}", json!(bad)),
        );
    }
    assert_eq!(
        message(s.prepare(json!({"n": 4.5}))),
        "Parameter \"n\" expects an integer, got 4.5"
    );
    assert_eq!(
        message(s.prepare(json!({"n": true}))),
        "Parameter \"n\" expects an integer, got true"
    );
}

#[test]
fn the_documented_mismatch_message() {
    let err = export_orders()
        .prepare(json!({"customer_id": "C-1", "max_age_days": "soon"}))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Parameter \"max_age_days\" expects an integer, got \"soon\""
    );
    assert_eq!(err.parameter(), Some("max_age_days"));
}

#[test]
fn number_coercion() {
    let s = single("x", json!({"type": "number"}));
    assert_eq!(s.prepare(json!({"x": "2.5"})).unwrap(), json!({"x": 2.5}));
    assert_eq!(s.prepare(json!({"x": "42"})).unwrap(), json!({"x": 42}));
    assert_eq!(
        s.prepare(json!({"x": "-1e3"})).unwrap(),
        json!({"x": -1000.0})
    );
    for bad in ["NaN", "inf", "-infinity", "1e400", "two", ""] {
        assert_eq!(
            message(s.prepare(json!({"x": bad}))),
            format!("Parameter \"x\" expects a number, got {}", json!(bad)),
        );
    }
}

#[test]
fn boolean_coercion() {
    let s = single("b", json!({"type": "boolean"}));
    for (text, value) in [("true", true), ("false", false), ("1", true), ("0", false)] {
        assert_eq!(s.prepare(json!({"b": text})).unwrap(), json!({"b": value}));
    }
    for bad in ["yes", "TRUE", "2", ""] {
        assert_eq!(
            message(s.prepare(json!({"b": bad}))),
            format!("Parameter \"b\" expects a boolean, got {}", json!(bad)),
        );
    }
    assert_eq!(
        message(s.prepare(json!({"b": 1}))),
        "Parameter \"b\" expects a boolean, got 1"
    );
}

#[test]
fn strings_are_not_coerced_when_string_is_allowed() {
    let s = single("v", json!({"type": ["string", "integer"]}));
    assert_eq!(s.prepare(json!({"v": "42"})).unwrap(), json!({"v": "42"}));
}

#[test]
fn type_arrays_coerce_and_name_every_type() {
    let s = single("n", json!({"type": ["integer", "null"]}));
    assert_eq!(s.prepare(json!({"n": "5"})).unwrap(), json!({"n": 5}));
    assert_eq!(s.prepare(json!({"n": null})).unwrap(), json!({"n": null}));
    assert_eq!(
        message(s.prepare(json!({"n": "x"}))),
        "Parameter \"n\" expects an integer or null, got \"x\""
    );
    let s = single("v", json!({"type": ["boolean", "number", "null"]}));
    assert_eq!(s.prepare(json!({"v": "0"})).unwrap(), json!({"v": 0}));
    assert_eq!(s.prepare(json!({"v": "true"})).unwrap(), json!({"v": true}));
    assert_eq!(
        message(s.prepare(json!({"v": []}))),
        "Parameter \"v\" expects a number, a boolean or null, got []"
    );
}

#[test]
fn mismatch_words_for_every_type() {
    for (ty, words, value) in [
        ("string", "a string", json!(1)),
        ("array", "an array", json!("a")),
        ("object", "an object", json!([1, 2])),
        ("null", "null", json!(0)),
    ] {
        let s = single("p", json!({"type": ty}));
        assert_eq!(
            message(s.prepare(json!({"p": value}))),
            format!("Parameter \"p\" expects {words}, got {value}")
        );
    }
}

#[test]
fn coercion_follows_local_refs() {
    let s = schema(json!({
        "type": "object",
        "$defs": {"count": {"type": "integer"}},
        "properties": {"n": {"$ref": "#/$defs/count"}}
    }));
    assert_eq!(s.prepare(json!({"n": "3"})).unwrap(), json!({"n": 3}));
}

#[test]
fn got_is_cut_to_a_short_value() {
    let s = single("n", json!({"type": "integer"}));
    let long = "x".repeat(10_000);
    let text = message(s.prepare(json!({"n": long})));
    let got = text.split("got ").nth(1).unwrap();
    assert!(got.starts_with("\"xxxx"));
    assert!(got.ends_with('…'));
    assert!(got.chars().count() <= 81, "{got}");

    let big: Vec<u32> = (0..10_000).collect();
    let text = message(s.prepare(json!({"n": {"list": big}})));
    assert!(text.starts_with("Parameter \"n\" expects an integer, got {\"list\":[0,1,2,"));
    assert!(text.ends_with('…'));
}

#[test]
fn array_items_are_coerced() {
    let s = single(
        "ids",
        json!({"type": "array", "items": {"type": "integer"}}),
    );
    assert_eq!(
        s.prepare(json!({"ids": ["1", 2, "3"]})).unwrap(),
        json!({"ids": [1, 2, 3]})
    );
    let err = s.prepare(json!({"ids": ["1", "two"]})).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Parameter \"ids[1]\" expects an integer, got \"two\""
    );
    assert_eq!(err.parameter(), Some("ids"));

    let flags = single("f", json!({"type": "array", "items": {"type": "boolean"}}));
    assert_eq!(
        flags.prepare(json!({"f": ["1", "false", true]})).unwrap(),
        json!({"f": [true, false, true]})
    );
    let nums = single("x", json!({"items": {"type": "number"}}));
    assert_eq!(
        nums.prepare(json!({"x": ["1.5"]})).unwrap(),
        json!({"x": [1.5]})
    );
}

#[test]
fn items_of_container_type_are_left_to_the_validator() {
    let s = single(
        "rows",
        json!({"type": "array", "items": {"type": "array", "items": {"type": "integer"}}}),
    );
    assert_eq!(
        message(s.prepare(json!({"rows": [[1], ["2"]]}))),
        "Parameter \"rows[1][0]\": \"2\" is not of type \"integer\""
    );
}

// ---- validation -------------------------------------------------------

#[test]
fn enum_violation() {
    let err = export_orders()
        .prepare(json!({"customer_id": "C-1", "format": "pdf"}))
        .unwrap_err();
    assert_eq!(err.parameter(), Some("format"));
    let text = err.to_string();
    assert!(text.starts_with("Parameter \"format\": \"pdf\""), "{text}");
    assert!(text.contains("csv") && text.contains("tsv"), "{text}");
}

#[test]
fn minimum_violation() {
    let text = message(export_orders().prepare(json!({"customer_id": "C-1", "max_age_days": "0"})));
    assert_eq!(
        text,
        "Parameter \"max_age_days\": 0 is less than the minimum of 1"
    );
}

#[test]
fn date_time_format_is_checked() {
    let s = single("at", json!({"type": "string", "format": "date-time"}));
    assert_eq!(
        s.prepare(json!({"at": "2024-05-01T12:00:00Z"})).unwrap(),
        json!({"at": "2024-05-01T12:00:00Z"})
    );
    let err = s.prepare(json!({"at": "yesterday"})).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Parameter \"at\": \"yesterday\" is not a \"date-time\""
    );
    assert_eq!(err.parameter(), Some("at"));
}

#[test]
fn pattern_violation() {
    let s = single("code", json!({"type": "string", "pattern": "^[A-Z]{3}$"}));
    assert!(s.prepare(json!({"code": "ABC"})).is_ok());
    let text = message(s.prepare(json!({"code": "abc"})));
    assert!(
        text.starts_with("Parameter \"code\": \"abc\" does not match"),
        "{text}"
    );
}

#[test]
fn nested_paths_are_dotted() {
    let s = single(
        "order",
        json!({
            "type": "object",
            "properties": {
                "items": {
                    "type": "array",
                    "items": {"type": "object", "properties": {"qty": {"type": "integer", "minimum": 1}}}
                }
            }
        }),
    );
    let err = s
        .prepare(json!({"order": {"items": [{"qty": 1}, {"qty": 2}, "oops"]}}))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Parameter \"order.items[2]\": \"oops\" is not of type \"object\""
    );
    assert_eq!(err.parameter(), Some("order"));
    let err = s
        .prepare(json!({"order": {"items": [{"qty": 0}]}}))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Parameter \"order.items[0].qty\": 0 is less than the minimum of 1"
    );
}

#[test]
fn root_level_rules_are_reported_without_a_parameter() {
    let s = schema(json!({
        "type": "object",
        "properties": {"a": {}, "b": {}},
        "minProperties": 1
    }));
    let err = s.prepare(json!({})).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("Arguments do not match the tool's input schema: "),
        "{err}"
    );
    assert_eq!(err.parameter(), None);
}

#[test]
fn invalid_defaults_are_caught_by_validation() {
    let s = single("n", json!({"type": "integer", "default": "lots"}));
    assert_eq!(
        message(s.prepare(json!({}))),
        "Parameter \"n\": \"lots\" is not of type \"integer\""
    );
}

#[test]
fn required_parameters_do_not_get_defaults() {
    let s = schema(json!({
        "type": "object",
        "properties": {"n": {"type": "integer", "default": 1}},
        "required": ["n"]
    }));
    assert!(message(s.prepare(json!({}))).starts_with("Missing required argument \"n\""));
}

// ---- hostile input ----------------------------------------------------

#[test]
fn deeply_nested_arguments_are_refused_without_overflow() {
    let s = schema(json!({"type": "object", "additionalProperties": true}));
    let mut deep = json!(0);
    for _ in 0..200_000 {
        deep = Value::Array(vec![deep]);
    }
    let err = s.prepare(object_with("x", deep)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Arguments are nested too deeply (more than 64 levels)"
    );

    // A depth the runtime accepts still validates.
    let mut fine = json!(0);
    for _ in 0..60 {
        fine = Value::Array(vec![fine]);
    }
    assert!(s.prepare(json!({"x": fine})).is_ok());
}

#[test]
fn huge_and_odd_names_keep_messages_bounded() {
    let s = export_orders();
    let mut raw = serde_json::Map::new();
    for i in 0..1000 {
        raw.insert(format!("{}{i}", "k".repeat(500)), json!(i));
    }
    let text = message(s.prepare(Value::Object(raw)));
    assert!(text.starts_with("Unknown arguments \"kkkk"));
    assert!(text.contains("… (968 more)"), "{text}");
    assert!(text.len() < 10_000, "{}", text.len());
}

#[test]
fn odd_values_never_panic() {
    let schemas = [
        export_orders(),
        schema(json!({"type": "object", "additionalProperties": true})),
        single(
            "ids",
            json!({"type": "array", "items": {"type": "integer"}}),
        ),
    ];
    let values = [
        json!(null),
        json!({}),
        json!([]),
        json!([null, null, null, null]),
        json!({"customer_id": null}),
        json!({"customer_id": {"a": [1, {"b": "c"}]}}),
        json!({"ids": "1,2,3"}),
        json!({"ids": [[], {}, null, "9999999999999999999999"]}),
        json!({"": "", "\u{0}": "\u{ffff}"}),
        json!(-0.0),
        json!(u64::MAX),
    ];
    for s in &schemas {
        for v in &values {
            let _ = s.prepare(v.clone());
        }
    }
}

// ---- output schema ----------------------------------------------------

#[test]
fn output_schema_check() {
    let out = OutputSchema::compile(&json!({
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "items": {"type": "array", "items": {"type": "object", "properties": {"price": {"type": "number"}}}}
        },
        "required": ["path"]
    }))
    .unwrap();
    assert_eq!(
        out.check(&json!({"path": "/tmp/x", "items": [{"price": 1.5}]})),
        Ok(())
    );
    assert_eq!(
        out.check(
            &json!({"path": "/tmp/x", "items": [{"price": 1}, {"price": 2}, {"price": "3"}]})
        ),
        // The client never sees the value the tool got wrong.
        Err("Result field \"items[2].price\": the value is not of type \"number\"".to_owned())
    );
    assert_eq!(
        out.check(&json!({})),
        Err("Result: \"path\" is a required property".to_owned())
    );
    assert_eq!(
        out.check(&json!([1])),
        Err("Result: the value is not of type \"object\"".to_owned())
    );
    // Structured results are not coerced: "1.5" is not a number.
    assert!(out.check(&json!({"path": 1})).is_err());
    let secret = json!({"path": 1, "items": [{"price": "card 4111 1111 1111 1111"}]});
    let why = out.check(&secret).expect_err("a string price");
    assert!(!why.contains("4111"), "{why}");
}

#[test]
fn a_long_argument_that_fails_keeps_its_reason() {
    let schema = ArgumentSchema::compile(&json!({
        "type": "object",
        "properties": {"sku": {"type": "string", "pattern": "^SKU-[0-9]+$"}},
        "required": ["sku"]
    }))
    .unwrap();
    let long = "x".repeat(10_000);
    let err = schema
        .prepare(json!({ "sku": long }))
        .unwrap_err()
        .to_string();
    assert!(err.contains("does not match"), "{err}");
    assert!(err.contains("^SKU-[0-9]+$"), "{err}");
    assert!(
        err.len() < 1_000,
        "the value is clipped: {} bytes",
        err.len()
    );
}

#[test]
fn output_schema_refuses_deep_results() {
    let out = OutputSchema::compile(&json!({"type": "object"})).unwrap();
    let mut deep = json!(0);
    for _ in 0..1000 {
        deep = Value::Array(vec![deep]);
    }
    let result = object_with("x", deep);
    assert!(
        out.check(&result)
            .unwrap_err()
            .contains("nested too deeply")
    );
    super::schema::dismantle(result);
}

// ---- helpers ----------------------------------------------------------

#[test]
fn render_value_is_compact_and_bounded() {
    assert_eq!(
        error::render_value(&json!({"a": [1, "b"]})),
        r#"{"a":[1,"b"]}"#
    );
    assert_eq!(error::render_value(&json!("é\n")), r#""é\n""#);
    let long = error::render_value(&json!("é".repeat(500)));
    assert_eq!(long.chars().count(), 81);
    assert!(long.ends_with('…'));
}

#[test]
fn errors_are_clone_and_send() {
    fn assert_traits<T: Clone + Send + Sync + std::error::Error + 'static>() {}
    assert_traits::<ArgumentError>();
}
