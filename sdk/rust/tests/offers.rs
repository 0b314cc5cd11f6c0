//! `#[resource]`, `#[resource_template]`, `#[prompt]`, `#[complete]` and
//! `#[tool(ui = …)]`, natively: what they describe and what they return.

use airlock_sdk::{
    Completion, CompletionContext, CompletionRef, Content, Contents, EmbeddedResource, Error,
    Message, ReadError, ResourceBody, Role, complete, prompt, resource, resource_template, tool,
};
use serde_json::json;

/// The price list, as CSV.
#[resource(uri = "file:///prices.csv", mime_type = "text/csv", audience = ["user"], priority = 0.5)]
fn price_list() -> String {
    "sku,price\nSKU-1,12.5\n".into()
}

/// A 1-byte logo.
#[resource(
    uri = "file:///logo.png",
    name = "logo",
    mime_type = "image/png",
    size = 1
)]
fn logo() -> Vec<u8> {
    vec![0x89]
}

/// Always fails.
#[resource(uri = "file:///broken")]
fn broken() -> Result<String, std::io::Error> {
    Err(std::io::Error::other("disk on fire"))
}

/// The chart of an MCP App.
#[resource(
    uri = "ui://stock/chart",
    mime_type = "text/html;profile=mcp-app",
    meta = r#"{"ui":{"csp":{"connectDomains":[]}}}"#
)]
fn chart_ui() -> &'static str {
    "<html></html>"
}

/// One note.
#[resource_template(uri_template = "file:///notes/{name}", mime_type = "text/markdown")]
fn note(name: &str) -> Result<String, ReadError> {
    match name {
        "todo" => Ok("- ship it".into()),
        _ => Err(ReadError::NotFound(format!("no note {name:?}"))),
    }
}

/// An order by number.
#[resource_template(uri_template = "db://orders/{id}/lines/{line}")]
fn order_line(id: u32, line: u8) -> Contents {
    Contents::text(
        format!("db://orders/{id}/lines/{line}"),
        format!("{id}:{line}"),
    )
    .with_mime_type("text/plain")
}

/// Reviews code.
#[prompt(title = "Code review")]
fn review(
    #[arg(description = "The code to review")] code: String,
    #[arg(rename = "lang", title = "Language")] language: Option<String>,
) -> Vec<Message> {
    vec![
        Message::user(format!(
            "Review this {} code:\n{code}",
            language.as_deref().unwrap_or("some")
        )),
        Message::assistant("Sure."),
    ]
}

/// Shows a logo.
#[prompt(name = "show-logo")]
fn show_logo() -> Result<Vec<Message>, String> {
    Ok(vec![
        Message::user(Content::image(vec![0x89], "image/png")),
        Message::user(EmbeddedResource::text("file:///a", "A").with_mime_type("text/plain")),
    ])
}

/// Fails.
#[prompt]
fn failing(times: u8) -> Result<String, Error> {
    Err(Error::failed(format!("failed {times} times")))
}

#[complete(prompt = review, argument = "lang")]
fn complete_language(value: &str) -> Vec<&'static str> {
    ["rust", "python", "ruby"]
        .into_iter()
        .filter(|l| l.starts_with(value))
        .collect()
}

#[complete(resource_template = "file:///notes/{name}", argument = "name")]
fn complete_note(value: &str, context: CompletionContext) -> Completion {
    Completion::new([format!(
        "{value}-{}",
        context.get("other").unwrap_or("none")
    )])
}

/// Shows stock levels as a chart.
#[tool(read_only, ui = "ui://stock/chart")]
fn stock_chart() -> String {
    "ok".into()
}

/// Says hello.
#[tool(meta = r#"{"ui":{"visibility":["app"]}}"#, ui = "ui://stock/chart")]
fn hello() {}

airlock_sdk::export_tools!(
    price_list,
    logo,
    broken,
    chart_ui,
    note,
    order_line,
    review,
    show_logo,
    failing,
    complete_language,
    complete_note,
    stock_chart,
    hello,
);

#[test]
fn resources_are_listed_in_order_with_their_keys() {
    let resources = TOOLS.resources();
    let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(
        uris,
        [
            "file:///prices.csv",
            "file:///logo.png",
            "file:///broken",
            "ui://stock/chart"
        ]
    );
    assert_eq!(resources[0].name, "price_list");
    assert_eq!(
        resources[0].description.as_deref(),
        Some("The price list, as CSV.")
    );
    assert_eq!(resources[0].mime_type.as_deref(), Some("text/csv"));
    let annotations = resources[0].annotations.clone().unwrap();
    assert_eq!(
        (annotations.audience, annotations.priority),
        (vec![Role::User], Some(0.5))
    );
    assert_eq!(
        (resources[1].name.as_str(), resources[1].size),
        ("logo", Some(1))
    );
    assert_eq!(
        resources[3].meta,
        Some(json!({"ui": {"csp": {"connectDomains": []}}}))
    );
    let templates = TOOLS.templates();
    assert_eq!(templates.len(), 2);
    assert_eq!(templates[0].uri_template, "file:///notes/{name}");
    assert_eq!(templates[0].mime_type.as_deref(), Some("text/markdown"));
}

#[test]
fn reads_text_bytes_and_templates() {
    let text = TOOLS.read("file:///prices.csv").unwrap();
    assert_eq!(text.len(), 1);
    assert_eq!(text[0].uri, "file:///prices.csv");
    assert_eq!(text[0].mime_type.as_deref(), Some("text/csv"));
    assert_eq!(
        text[0].body,
        ResourceBody::Text("sku,price\nSKU-1,12.5\n".into())
    );
    let blob = TOOLS.read("file:///logo.png").unwrap();
    assert_eq!(blob[0].body, ResourceBody::Blob(vec![0x89]));
    let note = TOOLS.read("file:///notes/todo").unwrap();
    assert_eq!(note[0].uri, "file:///notes/todo");
    assert_eq!(note[0].mime_type.as_deref(), Some("text/markdown"));
    assert_eq!(note[0].body, ResourceBody::Text("- ship it".into()));
    let line = TOOLS.read("db://orders/7/lines/2").unwrap();
    assert_eq!(line[0].body, ResourceBody::Text("7:2".into()));
}

#[test]
fn read_errors_say_what_went_wrong() {
    assert_eq!(
        TOOLS.read("file:///notes/nope"),
        Err(ReadError::NotFound(r#"no note "nope""#.into()))
    );
    assert_eq!(
        TOOLS.read("file:///broken"),
        Err(ReadError::Failed("disk on fire".into()))
    );
    let Err(ReadError::NotFound(text)) = TOOLS.read("db://orders/x/lines/2") else {
        panic!("a variable that does not parse is no resource");
    };
    assert!(text.contains("{id}"), "{text}");
    let Err(ReadError::NotFound(text)) = TOOLS.read("file:///other") else {
        panic!("an unknown URI is not found");
    };
    assert!(text.contains("file:///prices.csv") && text.contains("file:///notes/{name}"));
}

#[test]
fn prompts_take_their_parameters_as_arguments() {
    let prompts = TOOLS.prompts();
    let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["review", "show-logo", "failing"]);
    assert_eq!(prompts[0].title.as_deref(), Some("Code review"));
    assert_eq!(prompts[0].description.as_deref(), Some("Reviews code."));
    let args = &prompts[0].arguments;
    assert_eq!((args[0].name.as_str(), args[0].required), ("code", true));
    assert_eq!(args[0].description.as_deref(), Some("The code to review"));
    assert_eq!((args[1].name.as_str(), args[1].required), ("lang", false));
    assert_eq!(args[1].title.as_deref(), Some("Language"));

    let got = TOOLS
        .get_prompt("review", [("code", "fn main() {}"), ("lang", "rust")])
        .unwrap();
    assert_eq!(
        got.messages,
        [
            Message::user("Review this rust code:\nfn main() {}"),
            Message::assistant("Sure.")
        ]
    );
    let got = TOOLS.get_prompt("review", [("code", "x")]).unwrap();
    assert_eq!(
        got.messages[0].content,
        Content::Text("Review this some code:\nx".into())
    );
    let got = TOOLS
        .get_prompt("show-logo", Vec::<(String, String)>::new())
        .unwrap();
    assert!(matches!(got.messages[0].content, Content::Image(_)));
    assert!(matches!(got.messages[1].content, Content::Embedded(_)));
}

#[test]
fn prompt_errors_reach_the_client() {
    assert_eq!(
        TOOLS.get_prompt("review", [("lang", "rust")]),
        Err(Error::InvalidArguments(
            r#"missing required argument "code""#.into()
        ))
    );
    let Err(Error::InvalidArguments(text)) = TOOLS.get_prompt("failing", [("times", "many")])
    else {
        panic!("an argument that does not parse is invalid");
    };
    assert!(text.starts_with(r#"argument "times""#), "{text}");
    assert_eq!(
        TOOLS.get_prompt("failing", [("times", "3")]),
        Err(Error::Failed("failed 3 times".into()))
    );
    assert!(matches!(
        TOOLS.get_prompt("nope", [("a", "b")]),
        Err(Error::InvalidArguments(_))
    ));
}

#[test]
fn completions_are_found_by_reference_and_argument() {
    let c = TOOLS
        .complete(CompletionRef::Prompt("review"), "lang", "r", &[])
        .unwrap();
    assert_eq!(c.values, ["rust", "ruby"]);
    let context = [("other".to_string(), "x".to_string())];
    let c = TOOLS
        .complete(
            CompletionRef::ResourceTemplate("file:///notes/{name}"),
            "name",
            "to",
            &context,
        )
        .unwrap();
    assert_eq!(c.values, ["to-x"]);
    let none = TOOLS
        .complete(CompletionRef::Prompt("review"), "code", "f", &[])
        .unwrap();
    assert_eq!(none, Completion::default());
}

#[test]
fn a_tool_links_its_ui_resource() {
    assert_eq!(
        TOOLS.tool_meta(),
        [
            (
                "stock_chart".to_string(),
                json!({"ui": {"resourceUri": "ui://stock/chart"}})
            ),
            (
                "hello".to_string(),
                json!({"ui": {"visibility": ["app"], "resourceUri": "ui://stock/chart"}})
            ),
        ]
    );
    assert_eq!(TOOLS.describe().len(), 2);
}
