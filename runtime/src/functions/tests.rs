//! The type table, both ways, without a component: every WIT type's
//! schema, and JSON → value → JSON round trips of each.

use serde_json::{Value, json};
use wasmtime::component::Val;

use super::schema;
use super::value::{self, Returned};
use super::{Case, Field, Function, Named, Ty};
use crate::args::ArgumentSchema;

fn point() -> Ty {
    Ty::Record {
        docs: Some("A point.".into()),
        fields: vec![
            Field {
                name: "x".into(),
                docs: Some("Horizontal.".into()),
                ty: Ty::F64,
            },
            Field {
                name: "label".into(),
                docs: None,
                ty: Ty::Option(Box::new(Ty::String)),
            },
        ],
    }
}

fn shape() -> Ty {
    Ty::Variant {
        docs: None,
        cases: vec![
            Case {
                name: "circle".into(),
                docs: None,
                ty: Some(Ty::F64),
            },
            Case {
                name: "dot".into(),
                docs: None,
                ty: None,
            },
        ],
    }
}

fn named(names: &[&str]) -> Vec<Named> {
    names
        .iter()
        .map(|n| Named {
            name: n.to_string(),
            docs: None,
        })
        .collect()
}

/// Every row of the table with a value of it, as JSON.
fn rows() -> Vec<(Ty, Value)> {
    vec![
        (Ty::Bool, json!(true)),
        (Ty::S8, json!(-128)),
        (Ty::S16, json!(32767)),
        (Ty::S32, json!(-2147483648i64)),
        (Ty::S64, json!(i64::MIN)),
        (Ty::U8, json!(255)),
        (Ty::U16, json!(65535)),
        (Ty::U32, json!(4294967295u64)),
        (Ty::U64, json!(u64::MAX)),
        (Ty::F32, json!(1.5)),
        (Ty::F64, json!(-2.25)),
        (Ty::Char, json!("é")),
        (Ty::String, json!("hello")),
        (Ty::Bytes, json!("AAEC/w==")),
        (Ty::List(Box::new(Ty::U32)), json!([1, 2, 3])),
        (Ty::FixedList(Box::new(Ty::U8), 2), json!([7, 8])),
        (Ty::Map(Box::new(Ty::S32)), json!({"a": 1, "b": -2})),
        (Ty::Option(Box::new(Ty::U16)), json!(7)),
        (Ty::Option(Box::new(Ty::U16)), json!(null)),
        (
            Ty::Result {
                ok: Some(Box::new(Ty::String)),
                err: Some(Box::new(Ty::U32)),
            },
            json!({"err": 4}),
        ),
        (
            Ty::Result {
                ok: None,
                err: None,
            },
            json!({"ok": null}),
        ),
        (Ty::Tuple(vec![Ty::String, Ty::Bool]), json!(["a", false])),
        (point(), json!({"x": 1.5, "label": "home"})),
        (shape(), json!({"circle": 2.0})),
        (shape(), json!("dot")),
        (
            Ty::Enum {
                docs: None,
                cases: named(&["red", "green"]),
            },
            json!("green"),
        ),
        (
            Ty::Flags {
                docs: None,
                flags: named(&["read", "write"]),
            },
            json!(["write"]),
        ),
    ]
}

/// The schema of a one-parameter function with `ty`, compiled as the
/// argument pipeline compiles every tool's input schema.
fn compiled(ty: &Ty) -> ArgumentSchema {
    ArgumentSchema::compile(&schema::input(&[("v".to_string(), ty.clone())])).expect("schema")
}

#[test]
fn every_row_round_trips_and_matches_its_schema() {
    for (ty, json) in rows() {
        let prepared = compiled(&ty)
            .prepare(json!({ "v": json.clone() }))
            .unwrap_or_else(|e| panic!("{} refused {json}: {e}", ty.wit()));
        let val = value::to_val(&ty, &prepared["v"], "v", "v").expect("to val");
        assert_eq!(
            value::from_val(&ty, &val).expect("from val"),
            json,
            "{}",
            ty.wit()
        );
    }
}

#[test]
fn integers_carry_their_exact_bounds() {
    let cases = [
        (Ty::S8, -129i128, 128i128),
        (Ty::U8, -1, 256),
        (Ty::S16, -32769, 32768),
        (Ty::U32, -1, 4294967296),
        // Beyond 64 bits JSON numbers are floats that round to the bound
        // itself, so only the negative side of u64 is tested here.
        (Ty::U64, -1, -2),
    ];
    for (ty, below, above) in cases {
        let args = compiled(&ty);
        for bad in [below, above] {
            // Beyond i64/u64 JSON has only floats; parse the literal as JSON does.
            let arg: Value = serde_json::from_str(&bad.to_string()).expect("number");
            let err = args.prepare(json!({ "v": arg })).expect_err("out of range");
            assert!(err.to_string().starts_with("Parameter \"v\""), "{err}");
        }
    }
    let s = schema::of(&Ty::U64);
    assert_eq!(
        s,
        json!({"type": "integer", "minimum": 0, "maximum": u64::MAX})
    );
}

#[test]
fn errors_read_like_every_other_tool() {
    let args = compiled(&Ty::U32);
    let err = args.prepare(json!({"v": "soon"})).expect_err("refused");
    assert_eq!(
        err.to_string(),
        r#"Parameter "v" expects an integer, got "soon""#
    );
    // A string holding an integer is coerced, as for airlock tools.
    assert_eq!(
        args.prepare(json!({"v": "42"})).expect("coerced"),
        json!({"v": 42})
    );
    let err = compiled(&Ty::Option(Box::new(Ty::U8)))
        .prepare(json!({"v": "x"}))
        .expect_err("refused");
    assert_eq!(
        err.to_string(),
        r#"Parameter "v" expects an integer or null, got "x""#
    );
}

#[test]
fn shapes_that_do_not_fit_are_refused_before_the_guest() {
    let refused = [
        (Ty::Char, json!("ab")),
        (Ty::Bytes, json!("not base64!")),
        (Ty::Tuple(vec![Ty::String, Ty::Bool]), json!(["a"])),
        (point(), json!({"x": 1.0, "extra": 1})),
        (point(), json!({"label": "no x"})),
        (shape(), json!({"circle": 1.0, "dot": null})),
        (shape(), json!("square")),
        (
            Ty::Enum {
                docs: None,
                cases: named(&["red"]),
            },
            json!("blue"),
        ),
        (
            Ty::Flags {
                docs: None,
                flags: named(&["read"]),
            },
            json!(["read", "read"]),
        ),
        (Ty::F32, json!(1e39)),
    ];
    for (ty, json) in refused {
        let err = compiled(&ty).prepare(json!({ "v": json.clone() }));
        assert!(err.is_err(), "{} accepted {json}", ty.wit());
    }
}

#[test]
fn options_are_not_required_and_take_null() {
    let params = vec![
        ("name".to_string(), Ty::String),
        ("limit".to_string(), Ty::Option(Box::new(Ty::U32))),
    ];
    let input = schema::input(&params);
    assert_eq!(input["required"], json!(["name"]));
    assert_eq!(
        input["properties"]["limit"]["type"],
        json!(["integer", "null"])
    );
    let args = ArgumentSchema::compile(&input).expect("schema");
    for sent in [json!({"name": "a"}), json!({"name": "a", "limit": null})] {
        let prepared = args.prepare(sent).expect("prepared");
        let vals = value::arguments(&params, &prepared).expect("vals");
        assert_eq!(vals[1], Val::Option(None));
    }
}

#[test]
fn docs_become_descriptions() {
    let s = schema::of(&point());
    assert_eq!(s["description"], "A point.");
    assert_eq!(s["properties"]["x"]["description"], "Horizontal.");
    assert_eq!(s["required"], json!(["x"]));
    assert_eq!(s["additionalProperties"], false);
}

fn function(result: Option<Ty>) -> Function {
    Function {
        tool: "f".into(),
        interface: None,
        name: "f".into(),
        docs: None,
        params: vec![("url".into(), Ty::String)],
        result,
    }
}

#[test]
fn results_become_structured_output() {
    let ok_err = Ty::Result {
        ok: Some(Box::new(Ty::String)),
        err: Some(Box::new(Ty::String)),
    };
    let f = function(Some(ok_err.clone()));
    assert_eq!(
        f.signature(),
        "f: func(url: string) -> result<string, string>"
    );
    assert_eq!(
        f.description(),
        "`f: func(url: string) -> result<string, string>` (no doc comment in its WIT)."
    );
    assert_eq!(
        f.output_schema(),
        json!({"type": "object", "properties": {"result": {"type": "string"}}, "required": ["result"]})
    );
    let ok = Val::Result(Ok(Some(Box::new(Val::String("page".into())))));
    assert_eq!(
        value::returned(Some(&ok_err), &[ok]).expect("ok"),
        Returned::Ok {
            structured: json!({"result": "page"}),
            text: Some("page".into())
        }
    );
    let err = Val::Result(Err(Some(Box::new(Val::String("404".into())))));
    assert_eq!(
        value::returned(Some(&ok_err), &[err]).expect("err"),
        Returned::Err("404".into())
    );
    // A structured error is sent as its JSON.
    let json_err = Ty::Result {
        ok: None,
        err: Some(Box::new(point())),
    };
    let err = Val::Result(Err(Some(Box::new(Val::Record(vec![
        ("x".into(), Val::Float64(1.0)),
        ("label".into(), Val::Option(None)),
    ])))));
    assert_eq!(
        value::returned(Some(&json_err), &[err]).expect("err"),
        Returned::Err(r#"{"x":1.0,"label":null}"#.into())
    );
    // A record is the result as it is; nothing is `{"result": true}`.
    assert_eq!(
        function(Some(point())).output_schema(),
        schema::of(&point())
    );
    assert_eq!(
        value::returned(None, &[]).expect("unit"),
        Returned::Ok {
            structured: json!({"result": true}),
            text: None
        }
    );
    // JSON cannot carry NaN: a fault of the tool, said plainly.
    let nan = value::returned(Some(&Ty::F64), &[Val::Float64(f64::NAN)]).expect_err("nan");
    assert!(nan.contains("NaN"), "{nan}");
}
