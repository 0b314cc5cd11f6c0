use airlock_sdk::{complete, prompt, resource, resource_template, tool};

/// A parameter that is not a variable of the template.
#[resource_template(uri_template = "file:///notes/{name}")]
fn note(title: String) -> String {
    title
}

/// A variable without a parameter.
#[resource_template(uri_template = "db://{table}/{id}")]
fn row(id: u32) -> String {
    id.to_string()
}

/// A fixed URI takes no parameters.
#[resource(uri = "file:///a")]
fn fixed(name: String) -> String {
    name
}

/// No URI at all.
#[resource(mime_type = "text/plain")]
fn nowhere() -> String {
    String::new()
}

/// A key prompts do not have.
#[prompt(uri = "x://y")]
fn greet() -> String {
    String::new()
}

/// A completion for nothing.
#[complete(argument = "name")]
fn names(value: &str) -> Vec<String> {
    vec![value.to_owned()]
}

/// A UI that is not a ui:// resource.
#[tool(ui = "https://example.com/view")]
fn view() {}

/// A resource whose read returns something that is not contents.
#[resource(uri = "file:///n")]
fn number() -> u32 {
    7
}

fn main() {}
