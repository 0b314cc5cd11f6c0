use airlock_sdk::tool;

/// Bad task support.
#[tool(task_support = "sometimes")]
fn a() {}

/// Bad name.
#[tool(name = "look up price")]
fn b() {}

/// Bad output schema.
#[tool(output_schema = r#"{"type":"string"}"#)]
fn c() {}

/// Output schema that is not JSON.
#[tool(output_schema = "{type: object}")]
fn d() {}

/// Bad icon.
#[tool(icon(src = "http://example.com/a.png"))]
fn e() {}

/// Bad schema type.
#[tool]
fn f(#[arg(schema_type = "float")] x: f64) {}

/// Empty description.
#[tool(description = "  ")]
fn g() {}

fn main() {}
