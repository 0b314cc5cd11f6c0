//! The conformance suite's tools that ask the client something during the
//! call (sampling, elicitation, roots), and the tasks scenarios' fixtures.
//!
//! They are written with the SDK like any tool: `airlock_sdk::elicit`,
//! `sample`, `roots` and `ask` (several under keys) work where the operator
//! grants them (the suite's runs serve this component with
//! `tests/conformance/policy.toml`). In
//! revision 2025-11-25 the requests go to the client during the call; in
//! 2026-07-28 airlock answers `input_required` and re-runs the tool on the
//! client's retry, so each tool asks before it does anything else — but
//! `confirm_delete` and `multi_input`, which work first and ask inside their
//! running task.

use std::time::Duration;

use airlock_sdk::serde_json::{Value, json};
use airlock_sdk::{
    AskError, Elicited, Error, Output, Request, SamplingRequest, ask, elicit, roots, sample, tool,
};

fn failed(err: AskError) -> Error {
    Error::Failed(err.to_string())
}

/// The schema of a form with one required text field.
fn text_form(field: &str) -> Value {
    json!({
        "type": "object",
        "properties": { field: { "type": "string" } },
        "required": [field],
    })
}

/// A text field of an accepted form (empty when it is not there).
fn field(form: &Value, name: &str) -> String {
    form.get(name)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// Elicits a one-field text form and returns the field's value (`None`
/// when the user declined or cancelled).
fn ask_text(message: &str, name: &str) -> Result<Option<String>, Error> {
    Ok(match elicit(message, &text_form(name)).map_err(failed)? {
        Elicited::Accept(form) => Some(field(&form, name)),
        Elicited::Decline | Elicited::Cancel => None,
    })
}

/// `action=…, content=…` of an elicitation answer, as the suite shows it.
fn described(answer: &Elicited) -> String {
    match answer {
        Elicited::Accept(form) => format!("action=accept, content={form}"),
        Elicited::Decline => "action=decline, content={}".into(),
        Elicited::Cancel => "action=cancel, content={}".into(),
    }
}

/// Asks the client's model the prompt (at most 100 tokens) and returns
/// "LLM response: <answer>".
#[tool(read_only, title = "Sampling")]
pub fn test_sampling(
    #[arg(description = "The prompt to send to the LLM")] prompt: String,
) -> Result<Output, Error> {
    let answer = sample(SamplingRequest::new(prompt, 100)).map_err(failed)?;
    Ok(Output::text(format!(
        "LLM response: {}",
        answer.text().unwrap_or("(no text)")
    )))
}

/// Asks the user for a username and an email address, and returns
/// "User response: <action and content>".
#[tool(read_only, title = "Elicitation")]
pub fn test_elicitation(
    #[arg(description = "The message to show the user")] message: String,
) -> Result<Output, Error> {
    let schema = json!({
        "type": "object",
        "properties": {
            "username": { "type": "string", "description": "User's response" },
            "email": { "type": "string", "description": "User's email address" },
        },
        "required": ["username", "email"],
    });
    let answer = elicit(&message, &schema).map_err(failed)?;
    Ok(Output::text(format!(
        "User response: {}",
        described(&answer)
    )))
}

/// Elicits a form whose fields all have defaults (SEP-1034).
#[tool(read_only, title = "Elicitation with defaults")]
pub fn test_elicitation_sep1034_defaults() -> Result<Output, Error> {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": { "type": "string", "default": "John Doe" },
            "age": { "type": "integer", "default": 30 },
            "score": { "type": "number", "default": 95.5 },
            "status": {
                "type": "string",
                "enum": ["active", "inactive", "pending"],
                "default": "active",
            },
            "verified": { "type": "boolean", "default": true },
        },
    });
    let answer = elicit("Please review and update the form fields", &schema).map_err(failed)?;
    Ok(Output::text(format!(
        "Elicitation completed: {}",
        described(&answer)
    )))
}

/// Elicits a form with the five kinds of enum (SEP-1330).
#[tool(read_only, title = "Elicitation with enums")]
pub fn test_elicitation_sep1330_enums() -> Result<Output, Error> {
    let titled = |prefix: &str, titles: [&str; 3]| -> Vec<Value> {
        titles
            .iter()
            .enumerate()
            .map(|(i, title)| json!({ "const": format!("{prefix}{}", i + 1), "title": title }))
            .collect()
    };
    let schema = json!({
        "type": "object",
        "properties": {
            "untitledSingle": { "type": "string", "enum": ["option1", "option2", "option3"] },
            "titledSingle": {
                "type": "string",
                "oneOf": titled("value", ["First Option", "Second Option", "Third Option"]),
            },
            "legacyEnum": {
                "type": "string",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"],
            },
            "untitledMulti": {
                "type": "array",
                "items": { "type": "string", "enum": ["option1", "option2", "option3"] },
            },
            "titledMulti": {
                "type": "array",
                "items": {
                    "anyOf": titled("value", ["First Choice", "Second Choice", "Third Choice"]),
                },
            },
        },
    });
    let answer = elicit("Please select options", &schema).map_err(failed)?;
    Ok(Output::text(format!(
        "Elicitation completed: {}",
        described(&answer)
    )))
}

/// Asks the user's name under the key `user_name` (the suite looks for
/// it among the round's `inputRequests`), then greets them: "Hello,
/// <name>!".
#[tool(read_only, title = "Input required: elicitation")]
pub fn test_input_required_result_elicitation() -> Result<String, Error> {
    let answers = ask([(
        "user_name",
        Request::elicit("What is your name?", &text_form("name")),
    )])
    .map_err(failed)?;
    match answers.elicited("user_name").map_err(failed)? {
        Elicited::Accept(form) => Ok(format!("Hello, {}!", field(&form, "name"))),
        Elicited::Decline | Elicited::Cancel => Ok("Hello, stranger!".into()),
    }
}

/// Asks the client's model for the capital of France.
#[tool(read_only, title = "Input required: sampling")]
pub fn test_input_required_result_sampling() -> Result<String, Error> {
    let answer =
        sample(SamplingRequest::new("What is the capital of France?", 100)).map_err(failed)?;
    Ok(format!(
        "The model says: {}",
        answer.text().unwrap_or("(no text)")
    ))
}

/// Asks the client for its roots and lists them.
#[tool(read_only, title = "Input required: roots")]
pub fn test_input_required_result_list_roots() -> Result<String, Error> {
    let listed = roots().map_err(failed)?;
    let uris: Vec<&str> = listed.iter().map(|r| r.uri.as_str()).collect();
    Ok(format!("Client roots: {}", uris.join(", ")))
}

/// Asks for a confirmation; answers "state-ok" once airlock verified the
/// retry's signed requestState (it is the only way the answer arrives).
#[tool(read_only, title = "Input required: request state")]
pub fn test_input_required_result_request_state() -> Result<String, Error> {
    let schema = json!({
        "type": "object",
        "properties": { "ok": { "type": "boolean" } },
        "required": ["ok"],
    });
    let answer = elicit("Please confirm", &schema).map_err(failed)?;
    Ok(format!("state-ok: {}", described(&answer)))
}

/// Asks for a name, a greeting from the model and the client's roots at
/// once (in 2026-07-28 one round with the three `inputRequests`).
#[tool(read_only, title = "Input required: several inputs")]
pub fn test_input_required_result_multiple_inputs() -> Result<String, Error> {
    let answers = ask([
        (
            "user_name",
            Request::elicit("What is your name?", &text_form("name")),
        ),
        (
            "greeting",
            Request::sample(SamplingRequest::new("Generate a greeting", 50)),
        ),
        ("client_roots", Request::Roots),
    ])
    .map_err(failed)?;
    let name = match answers.elicited("user_name").map_err(failed)? {
        Elicited::Accept(form) => field(&form, "name"),
        Elicited::Decline | Elicited::Cancel => String::new(),
    };
    let greeting = answers.sampled("greeting").map_err(failed)?;
    let listed = answers.roots("client_roots").map_err(failed)?;
    Ok(format!(
        "name={name}, greeting={}, roots={}",
        greeting.text().unwrap_or_default(),
        listed.len()
    ))
}

/// Asks two questions, one after the other (two rounds).
#[tool(read_only, title = "Input required: two rounds")]
pub fn test_input_required_result_multi_round() -> Result<String, Error> {
    let name = ask_text("Step 1: What is your name?", "name")?.unwrap_or_default();
    let color = ask_text("Step 2: What is your favorite color?", "color")?.unwrap_or_default();
    Ok(format!("{name} likes {color}"))
}

/// Asks for a confirmation (the suite then tampers with the state).
#[tool(read_only, title = "Input required: tampered state")]
pub fn test_input_required_result_tampered_state() -> Result<String, Error> {
    let schema = json!({
        "type": "object",
        "properties": { "ok": { "type": "boolean" } },
        "required": ["ok"],
    });
    let answer = elicit("Please confirm", &schema).map_err(failed)?;
    Ok(format!("confirmed: {}", described(&answer)))
}

/// Asks the user when the client can elicit, else the client's model:
/// only what the client declared is asked.
#[tool(read_only, title = "Input required: capabilities")]
pub fn test_input_required_result_capabilities() -> Result<String, Error> {
    match ask_text("What is your name?", "name") {
        Ok(name) => Ok(format!("Hello, {}!", name.unwrap_or_default())),
        Err(_) => {
            let answer = sample(SamplingRequest::new("Suggest a name", 20)).map_err(failed)?;
            Ok(format!("Hello, {}!", answer.text().unwrap_or_default()))
        }
    }
}

/// Needs sampling: fails when the client did not declare it.
#[tool(read_only, title = "Missing capability")]
pub fn test_missing_capability() -> Result<String, Error> {
    let answer = sample(SamplingRequest::new("Say hello", 10)).map_err(failed)?;
    Ok(answer.text().unwrap_or_default().to_string())
}

/// Elicits during the call (2026-07-28 answers with input_required; no
/// request of the server's own appears on the response stream).
#[tool(read_only, title = "Streaming elicitation")]
pub fn test_streaming_elicitation() -> Result<String, Error> {
    match ask_text("What is your name?", "name")? {
        Some(name) => Ok(format!("Hello, {name}!")),
        None => Ok("Hello, stranger!".into()),
    }
}

/// Greets: "Hello, <name>!" (never a task).
#[tool(read_only, idempotent, title = "Greet")]
pub fn greet(#[arg(description = "Who to greet", example = "World")] name: String) -> String {
    format!("Hello, {name}!")
}

/// Sleeps `seconds` (checking for cancellation), then says so. May run as
/// a task.
#[tool(
    read_only,
    idempotent,
    title = "Slow compute",
    task_support = "optional"
)]
pub fn slow_compute(
    #[arg(description = "Seconds to sleep (0 to 60)", example = 0)] seconds: u32,
    #[arg(description = "A label echoed in the result")] label: Option<String>,
) -> Result<String, Error> {
    for _ in 0..seconds.min(60) * 10 {
        if airlock_sdk::cancelled() {
            return Err(Error::Failed("cancelled".into()));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(format!(
        "computed {}after {seconds} s",
        label.map(|l| format!("{l} ")).unwrap_or_default()
    ))
}

/// Always fails with a tool error after about a second. Must run as a task.
#[tool(
    read_only,
    idempotent,
    title = "Failing job",
    task_support = "required"
)]
pub fn failing_job() -> Result<String, Error> {
    std::thread::sleep(Duration::from_secs(1));
    Err(Error::Failed("failing_job always fails".into()))
}

/// Panics: the task fails. Runs as a task.
#[tool(
    read_only,
    idempotent,
    title = "Protocol error job",
    task_support = "required"
)]
pub fn protocol_error_job() -> String {
    panic!("protocol_error_job always panics")
}

/// How long the tasks fixtures that ask inside their task look things over
/// first: longer than airlock's first moments (500 ms) after which a call
/// that has asked nothing becomes a task, so they ask as a running task
/// (2026-07-28: `input_required` on `tasks/get`, answered by `tasks/update`).
const LOOK_FIRST: Duration = Duration::from_millis(800);

/// Looks the file over, then asks the user to confirm deleting `filename`
/// (deletes nothing). Runs as a task, and asks inside it.
#[tool(read_only, title = "Confirm delete", task_support = "required")]
pub fn confirm_delete(
    #[arg(description = "The file to delete")] filename: String,
) -> Result<String, Error> {
    std::thread::sleep(LOOK_FIRST);
    let schema = json!({
        "type": "object",
        "properties": { "confirm": { "type": "boolean" } },
        "required": ["confirm"],
    });
    let message = format!("Delete {filename}?");
    let answer = elicit(&message, &schema).map_err(failed)?;
    Ok(format!("{filename}: {}", described(&answer)))
}

/// Works a moment, then asks two questions at once (a batch: in 2026-07-28
/// both are pending on the running task together, and may be answered one
/// at a time). Runs as a task.
#[tool(read_only, title = "Multiple inputs", task_support = "required")]
pub fn multi_input() -> Result<String, Error> {
    std::thread::sleep(LOOK_FIRST);
    let answers = ask([
        ("first", Request::elicit("First name?", &text_form("name"))),
        ("last", Request::elicit("Last name?", &text_form("name"))),
    ])
    .map_err(failed)?;
    let name = |key| -> Result<String, Error> {
        Ok(match answers.elicited(key).map_err(failed)? {
            Elicited::Accept(form) => field(&form, "name"),
            Elicited::Decline | Elicited::Cancel => String::new(),
        })
    };
    Ok(format!("{} {}", name("first")?, name("last")?))
}

/// Asks the user's name, then runs as a task greeting them.
#[tool(read_only, title = "Tool with task", task_support = "required")]
pub fn test_tool_with_task() -> Result<String, Error> {
    let name = ask_text("What is your name?", "name")?.unwrap_or_default();
    Ok(format!("Hello, {name}!"))
}

#[cfg(test)]
mod tests {
    use airlock_sdk::{Content, Error};

    #[test]
    fn natively_there_is_no_client_to_ask() {
        for (tool, arguments) in [
            ("test_sampling", r#"{"prompt": "hi"}"#),
            ("test_elicitation", r#"{"message": "hi"}"#),
            ("test_input_required_result_list_roots", "{}"),
        ] {
            let err = crate::TOOLS.call(tool, arguments).unwrap_err();
            assert!(
                matches!(&err, Error::Failed(why) if why.starts_with("not available: ")),
                "{tool}: {err:?}"
            );
        }
    }

    #[test]
    fn the_tasks_fixtures_answer_as_the_suite_says() {
        let out = crate::TOOLS.call("greet", r#"{"name": "World"}"#).unwrap();
        assert_eq!(out.content, [Content::Text("Hello, World!".into())]);
        let out = crate::TOOLS
            .call("slow_compute", r#"{"seconds": 0, "label": "x"}"#)
            .unwrap();
        assert_eq!(out.content, [Content::Text("computed x after 0 s".into())]);
        assert!(crate::TOOLS.call("failing_job", "{}").is_err());
    }
}
