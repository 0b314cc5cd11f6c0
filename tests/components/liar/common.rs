// Shared body of the `liar_*` components: each declares metadata that
// breaks one loading rule (chosen by the including crate's `LIE`), and the
// runtime must refuse it at load with an error naming the tool and the rule.

use airlock::tool::types::{Error, Hints, Output, TaskSupport, Tool};

struct Liar;

fn tool(name: &str, description: &str, schema: &str) -> Tool {
    Tool {
        name: name.into(),
        title: None,
        description: description.into(),
        input_schema: schema.into(),
        output_schema: None,
        hints: Hints::empty(),
        icons: vec![],
        task_support: TaskSupport::Forbidden,
    }
}

const OK_SCHEMA: &str = r#"{"type":"object"}"#;

impl exports::airlock::tool::tools::Guest for Liar {
    fn describe() -> Vec<Tool> {
        match LIE {
            "schema" => vec![tool(
                "bad_schema",
                "invalid schema",
                r#"{"type":"object","properties":{"x":{"type":"nonsense"}}}"#,
            )],
            "root" => vec![tool("array_root", "root is not an object", r#"{"type":"array"}"#)],
            "dup" => vec![
                tool("same", "first", OK_SCHEMA),
                tool("same", "second", OK_SCHEMA),
            ],
            "name" => vec![tool("rm -rf /", "bad characters", OK_SCHEMA)],
            "nodesc" => vec![tool("silent", "", OK_SCHEMA)],
            "loop" => loop {
                std::hint::black_box(());
            },
            "alloc" => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    hoard.push(vec![7u8; 1 << 20]);
                    std::hint::black_box(&hoard);
                }
            }
            _ => vec![tool("plain", "a plain tool", OK_SCHEMA)],
        }
    }

    fn call(_name: String, _args: String) -> Result<Output, Error> {
        Err(Error::Failed("a liar never runs".into()))
    }
}

export!(Liar);
