//! A tool built against the frozen contract `airlock:tool@0.1.0`
//! (`wit/tool.wit` of this folder): the runtime of 0.1.1 must load and run
//! it unchanged, and serve no resources or prompts for it. `old_echo` logs
//! through the 0.1.0 `host` (so the component imports it) and returns its
//! arguments as text.

wit_bindgen::generate!({ path: "wit", world: "toolbox" });

use airlock::tool::types::{Content, Error, Hints, Output, TaskSupport, Tool};

struct Old;

impl exports::airlock::tool::tools::Guest for Old {
    fn describe() -> Vec<Tool> {
        vec![Tool {
            name: "old_echo".into(),
            title: None,
            description: "Echoes its arguments (built against 0.1.0)".into(),
            input_schema: r#"{"type":"object"}"#.into(),
            output_schema: None,
            hints: Hints::READ_ONLY,
            icons: vec![],
            task_support: TaskSupport::Forbidden,
        }]
    }

    fn call(_name: String, arguments: String) -> Result<Output, Error> {
        airlock::tool::host::log(airlock::tool::host::Level::Info, "old_echo ran");
        Ok(Output {
            content: vec![Content::Text(arguments)],
            structured: None,
        })
    }
}

export!(Old);
