//! # airlock SDK: tools as plain Rust functions
//!
//! A tool author writes ordinary functions, marks them with [`#[tool]`](tool)
//! and lists them in [`export_tools!`]; the SDK generates the airlock
//! contract (`wit/tool.wit`, world `server`): `describe` (names, JSON
//! Schemas, hints) and `call` (decode the arguments, run the function,
//! encode the result), and the component's resources, prompts and
//! completions ([`#[resource]`](resource), [`#[resource_template]`](resource_template),
//! [`#[prompt]`](prompt), [`#[complete]`](complete)), empty when it declares none. Build with `cargo build --release --target
//! wasm32-wasip2` and the crate's `cdylib` is a tool component.
//!
//! ```
//! use airlock_sdk::tool;
//!
//! /// Returns the current unit price of one catalog article.
//! #[tool(read_only, idempotent, title = "Look up price")]
//! fn lookup_price(
//!     #[arg(description = "Article number, e.g. SKU-1001")] sku: String,
//! ) -> Result<f64, String> {
//!     match sku.as_str() {
//!         "SKU-1001" => Ok(12.5),
//!         _ => Err(format!("unknown article {sku:?}")),
//!     }
//! }
//!
//! airlock_sdk::export_tools!(lookup_price);
//!
//! # fn main() {
//! // The same code runs natively, which is how tools are unit-tested:
//! let out = TOOLS.call("lookup_price", r#"{"sku": "SKU-1001"}"#).unwrap();
//! assert_eq!(out.structured, Some(serde_json::json!({"result": 12.5})));
//! let err = TOOLS.call("lookup_price", r#"{"sku": "SKU-9"}"#).unwrap_err();
//! assert_eq!(err, airlock_sdk::Error::Failed(r#"unknown article "SKU-9""#.into()));
//! # }
//! ```
//!
//! A component crate has `crate-type = ["cdylib"]` (add `"rlib"` to unit-test
//! it natively) and calls `export_tools!` once, at its root.
//!
//! ## Tool attributes: identity and wording
//!
//! | key | meaning |
//! | --- | --- |
//! | `name = "…"` | the protocol name (default: the function's name); 1 to 64 of `A-Z a-z 0-9 _ - .` |
//! | `title = "…"` | a label for people |
//! | `description = "…"` | what the tool does (default: the doc comment; a tool with neither does not compile) |
//!
//! ```
//! # use airlock_sdk::{tool, Tool};
//! /// This doc comment is not used: `description` wins.
//! #[tool(name = "send_invoice", title = "Send invoice", description = "E-mails an invoice PDF to the customer on record.")]
//! fn send(invoice_no: String) -> bool { !invoice_no.is_empty() }
//!
//! # fn main() {
//! let info = <send as Tool>::info();
//! assert_eq!(info.name, "send_invoice");
//! assert_eq!(info.title.as_deref(), Some("Send invoice"));
//! assert_eq!(info.description, "E-mails an invoice PDF to the customer on record.");
//! # }
//! ```
//!
//! ## Tool attributes: hints
//!
//! Four markers, present or absent (absent means false): `read_only`,
//! `destructive`, `idempotent`, `open_world`. The runtime makes them
//! binding (a read-only tool gets read-only folders, only open-world tools
//! reach the network…). `read_only` with `destructive` does not compile.
//!
//! ```
//! # use airlock_sdk::{tool, Tool, Hints};
//! /// Permanently deletes every backup older than the given number of days.
//! #[tool(destructive, idempotent)]
//! fn purge_backups(days: u32) -> u32 { days }
//!
//! # fn main() {
//! assert_eq!(
//!     <purge_backups as Tool>::info().hints,
//!     Hints { read_only: false, destructive: true, idempotent: true, open_world: false }
//! );
//! # }
//! ```
//!
//! ## Tool attributes: icons, task support, output schema
//!
//! `icon(src = "…", mime_type = "…", sizes = ["48x48"])` may be repeated
//! (`src` is a `https:` or `data:` URI). `task_support` is `"forbidden"`
//! (the default), `"optional"` or `"required"`. `output_schema = r#"{…}"#`
//! declares the result's schema explicitly (checked at compile time: JSON
//! whose root is an object schema); the function's return value is then the
//! structured result as it is.
//!
//! ```
//! # use airlock_sdk::{tool, Tool, TaskSupport};
//! # use serde_json::{json, Value};
//! /// Aggregates the sales of one region.
//! #[tool(
//!     read_only,
//!     icon(src = "https://cdn.example.com/report.svg", mime_type = "image/svg+xml"),
//!     icon(src = "https://cdn.example.com/report-32.png", mime_type = "image/png", sizes = ["32x32"]),
//!     task_support = "optional",
//!     output_schema = r#"{"type":"object","properties":{"region":{"type":"string"},"orders":{"type":"integer"}},"required":["region","orders"]}"#
//! )]
//! fn build_sales_report(region: String) -> Value {
//!     json!({"region": region, "orders": 42})
//! }
//!
//! # fn main() {
//! let info = <build_sales_report as Tool>::info();
//! assert_eq!(info.icons.len(), 2);
//! assert_eq!(info.icons[1].sizes, ["32x32"]);
//! assert_eq!(info.task_support, TaskSupport::Optional);
//! assert_eq!(info.output_schema.unwrap()["required"], json!(["region", "orders"]));
//! # }
//! ```
//!
//! ## Parameter attributes
//!
//! `#[arg(...)]` on a parameter:
//!
//! | key | meaning |
//! | --- | --- |
//! | `rename = "…"` | the protocol name (default: the parameter's name) |
//! | `description = "…"` | what the argument is (doc comments are not allowed on parameters) |
//! | `default = …` | makes the parameter optional: the value the function receives when the client omits it, and the schema's `default`. A literal (`90`, `-1.5`, `"csv"`, `true`) is converted like an argument, so `default = 90` suits an `f64`; any other expression must have the parameter's type (`default = Format::Csv`, `default = vec![1, 2]`) |
//! | `example = …` | a value to show: the schema's `examples: [value]` (OpenRPC examples and testers such as `@open-rpc/test-coverage` call the tool with it). Written like `default` (a literal, or an expression of the parameter's type) and checked to convert when the tool is described; it changes nothing else: a parameter with only an example stays required |
//! | `schema_type = "integer"` | changes only the advertised type (`integer`, `number`, `string`, `boolean`), never the conversion: advertise `integer` for an `f64` of whole days |
//! | `header = "Region"` | mirrors the argument into the HTTP header `Mcp-Param-Region` (the schema's `x-mcp-header`, MCP 2026-07-28), so a proxy can route on it without reading the body; airlock refuses a call whose header is missing or differs. Only for a `String`, integer or `bool` parameter (or an `Option` of one) |
//!
//! An `Option<T>` parameter is optional too (`None` when omitted). The
//! order of the parameters is the order of the schema's properties, which is
//! the order positional arguments bind in.
//!
//! ```
//! # use airlock_sdk::{tool, Tool, Error};
//! # use serde_json::json;
//! /// Exports the orders of one customer as delimited text.
//! #[tool(name = "export_orders")]
//! fn export(
//!     #[arg(rename = "customer_id", description = "Identifier of the customer")] customer: String,
//!     #[arg(rename = "max_age_days", schema_type = "integer", default = 90)] max_age: f64,
//!     #[arg(default = "csv", description = "csv or tsv")] format: String,
//!     #[arg(default = true)] include_header: bool,
//!     note: Option<String>,
//! ) -> Result<String, Error> {
//!     if format != "csv" && format != "tsv" {
//!         return Err(Error::invalid_arguments(r#"format must be either "csv" or "tsv""#));
//!     }
//!     Ok(format!("{customer} {max_age} {format} {include_header} {note:?}"))
//! }
//!
//! # fn main() {
//! let schema = <export as Tool>::info().input_schema;
//! assert_eq!(schema["properties"]["max_age_days"], json!({"type": "integer", "default": 90}));
//! assert_eq!(schema["required"], json!(["customer_id"]));
//! let out = airlock_sdk::toolbox![export].call("export_orders", r#"{"customer_id": "C7"}"#).unwrap();
//! assert_eq!(out.structured, Some(json!({"result": "C7 90 csv true None"})));
//! # }
//! ```
//!
//! An example describes a parameter better than its description can, and
//! lets a tester call the tool: give one to each required parameter (a
//! tool whose every parameter has a default or an example can be called
//! straight from its OpenRPC document).
//!
//! ```
//! # use airlock_sdk::{tool, Tool};
//! # use serde_json::json;
//! /// Returns the current unit price of one catalog article.
//! #[tool(read_only)]
//! fn lookup_price(
//!     #[arg(description = "Article number", example = "SKU-1001")] sku: String,
//!     #[arg(example = vec!["EUR".to_string(), "USD".to_string()])] currencies: Vec<String>,
//! ) -> f64 {
//!     12.5
//! }
//!
//! # fn main() {
//! let schema = <lookup_price as Tool>::info().input_schema;
//! assert_eq!(
//!     schema["properties"]["sku"],
//!     json!({"type": "string", "description": "Article number", "examples": ["SKU-1001"]})
//! );
//! assert_eq!(schema["properties"]["currencies"]["examples"], json!([["EUR", "USD"]]));
//! assert_eq!(schema["required"], json!(["sku", "currencies"]));
//! # }
//! ```
//!
//! `header` names the HTTP header a client mirrors an argument into:
//!
//! ```
//! # use airlock_sdk::{tool, Tool};
//! # use serde_json::json;
//! /// Reports the stock of one article in one warehouse region.
//! #[tool(read_only)]
//! fn regional_stock(
//!     #[arg(header = "Region")] region: String,
//!     sku: String,
//! ) -> u32 {
//!     7
//! }
//!
//! # fn main() {
//! let schema = <regional_stock as Tool>::info().input_schema;
//! assert_eq!(
//!     schema["properties"]["region"],
//!     json!({"type": "string", "x-mcp-header": "Region"})
//! );
//! assert!(schema["properties"]["sku"].get("x-mcp-header").is_none());
//! # }
//! ```
//!
//! ## The type table
//!
//! Parameter and result types implement [`ToolSchema`], which gives their
//! JSON Schema (see the [`schema`] module for the full table): integers
//! (with their bounds: `u8` is 0 to 255), `f32`/`f64` (`number`), `bool`,
//! `String` (and `&str` as a parameter), [`Timestamp`] (`format:
//! date-time`), `serde_json::Value` (any JSON), `Vec<T>` (`array`),
//! `Option<T>` (not required), and your own structs (`object`) and unit-only
//! enums (`string` + `enum`) with `#[derive(ToolSchema)]`. Doc comments on
//! them and their fields become descriptions, and serde's `rename`,
//! `rename_all`, `default`, `skip` and `deny_unknown_fields` are followed.
//! Data-carrying enums and `#[serde(flatten)]` are refused at compile time;
//! recursive types are not supported.
//!
//! ```
//! # use airlock_sdk::{tool, Tool, ToolSchema, Timestamp};
//! # use serde::{Deserialize, Serialize};
//! # use serde_json::json;
//! /// How a parcel travels.
//! #[derive(ToolSchema, Deserialize, Serialize)]
//! #[serde(rename_all = "snake_case")]
//! enum Shipping { Standard, NextDay }
//!
//! /// One parcel.
//! #[derive(ToolSchema, Deserialize, Serialize)]
//! struct Parcel {
//!     /// Weight in grams.
//!     grams: u32,
//!     shipping: Shipping,
//!     /// When to pick it up.
//!     pickup: Option<Timestamp>,
//! }
//!
//! /// Books parcels and returns how many were booked.
//! #[tool]
//! fn book(parcels: Vec<Parcel>) -> usize { parcels.len() }
//!
//! # fn main() {
//! assert_eq!(Shipping::schema(), json!({"type": "string", "enum": ["standard", "next_day"], "description": "How a parcel travels."}));
//! let parcel = Parcel::schema();
//! assert_eq!(parcel["required"], json!(["grams", "shipping"]));
//! assert_eq!(parcel["properties"]["pickup"], json!({"type": "string", "format": "date-time", "description": "When to pick it up."}));
//! assert_eq!(<book as Tool>::info().input_schema["properties"]["parcels"]["items"], parcel);
//! # }
//! ```
//!
//! A parameter whose type cannot come from JSON at all — a reference other
//! than `&str`, a raw pointer, a `fn` pointer, `impl Trait` or a closure,
//! `dyn Trait`, a tuple, a slice or an array — is a compile error naming the
//! parameter and its type (`parameter `cb` has type `impl Fn()`, which a
//! tool cannot receive as JSON`); any other type outside the table fails the
//! `ToolSchema` bound with a message saying so. So are `async` and generic
//! tools, unknown or repeated attribute keys, and a missing description.
//!
//! ## Results
//!
//! - `T: ToolSchema + Serialize` gives the tool an output schema and a
//!   structured result. MCP wants an object at the root, so an object result
//!   (a struct) is used as it is, and anything else is wrapped:
//!   `{"type":"object","properties":{"result":T},"required":["result"],"x-airlock-wrapped":true}`
//!   with the result `{"result": value}`. A `String` result is also sent as
//!   a text block. `None` fields of a struct are left out of the result.
//! - `()` is advertised as `{"result": boolean}` and returns `{"result": true}`.
//! - `Result<T, E>`: `Err` reaches the client as a tool error. With
//!   [`Error`] the author chooses `invalid-arguments` or `failed`; any other
//!   `E: Display` becomes `failed` with its text.
//! - [`Output`] gives full control over the content blocks (text, image,
//!   audio, embedded resource, resource link) and the structured JSON, with
//!   no automatic output schema.
//!
//! ```
//! # use airlock_sdk::{tool, Tool, Output};
//! # use serde_json::json;
//! /// Renders a chart.
//! #[tool(read_only)]
//! fn chart() -> Output {
//!     Output::text("Sales by month").with_image(vec![0x89, b'P', b'N', b'G'], "image/png")
//! }
//!
//! /// Touches nothing.
//! #[tool]
//! fn ping() {}
//!
//! # fn main() {
//! assert_eq!(<chart as Tool>::info().output_schema, None);
//! let tools = airlock_sdk::toolbox![chart, ping];
//! assert_eq!(tools.call("chart", "{}").unwrap().content.len(), 2);
//! assert_eq!(tools.call("ping", "{}").unwrap().structured, Some(json!({"result": true})));
//! # }
//! ```
//!
//! ## Resources
//!
//! A resource is something a client reads into context (a document, a
//! record, the HTML of a tool's UI). A read is a function: `#[resource]`
//! on a function without parameters that returns text (`String`, `&'static
//! str`), bytes (`Vec<u8>`, `&'static [u8]`: a blob), [`Contents`] (or a
//! `Vec` of them, for full control), or a `Result` of one whose error
//! converts into [`ReadError`] (`String`, [`Error`], `std::io::Error` — a
//! missing file is "not found"). It runs in a fresh instance per read,
//! read-only, like a read-only tool.
//!
//! | key | meaning |
//! | --- | --- |
//! | `uri = "…"` | the URI (required), unique across everything served |
//! | `name = "…"` | a name (default: the function's name) |
//! | `title`, `description` | a label; what it is (default: the doc comment) |
//! | `mime_type = "…"` | the MIME type of the contents (default `text/plain` for text, `application/octet-stream` for bytes) |
//! | `size = 1234` | the size in bytes, when known |
//! | `audience = ["user"]`, `priority = 0.5`, `last_modified = "…"` | annotations |
//! | `icon(...)` | as for tools |
//! | `meta = r#"{…}"#` | extra `_meta` (a JSON object), e.g. an MCP App's `{"ui": {"csp": {…}}}` |
//!
//! ```
//! use airlock_sdk::{resource, ReadError, ResourceBody};
//!
//! /// Today's price list.
//! #[resource(uri = "file:///prices.csv", mime_type = "text/csv")]
//! fn price_list() -> String {
//!     "sku,price\nSKU-1001,12.5\n".into()
//! }
//!
//! /// The company logo.
//! #[resource(uri = "file:///logo.png", mime_type = "image/png")]
//! fn logo() -> Result<Vec<u8>, ReadError> {
//!     Ok(vec![0x89, b'P', b'N', b'G'])
//! }
//!
//! airlock_sdk::export_tools!(price_list, logo);
//!
//! # fn main() {
//! assert_eq!(TOOLS.resources()[0].description.as_deref(), Some("Today's price list."));
//! let contents = TOOLS.read("file:///prices.csv").unwrap();
//! assert_eq!(contents[0].mime_type.as_deref(), Some("text/csv"));
//! assert_eq!(contents[0].body, ResourceBody::Text("sku,price\nSKU-1001,12.5\n".into()));
//! assert!(matches!(TOOLS.read("file:///logo.png").unwrap()[0].body, ResourceBody::Blob(_)));
//! # }
//! ```
//!
//! A component tells subscribed clients that a resource changed with
//! [`resource_updated`]`(uri)`, from any call, read or prompt.
//!
//! ## Resource templates
//!
//! `#[resource_template(uri_template = "…{name}…")]` serves every URI that
//! matches an RFC 6570 level-1 template: the variables are the function's
//! parameters, by name (`&str`, `String`, or any `FromStr` type; a value
//! that does not parse is "not found", as is a value with a `/`). Keys as
//! for `#[resource]`, with `uri_template` instead of `uri` and without
//! `size` and `meta`.
//!
//! ```
//! use airlock_sdk::{resource_template, ReadError, ResourceBody};
//!
//! /// One note, as Markdown.
//! #[resource_template(uri_template = "file:///notes/{name}", mime_type = "text/markdown")]
//! fn note(name: &str) -> Result<String, ReadError> {
//!     match name {
//!         "todo" => Ok("- ship it".into()),
//!         _ => Err(ReadError::NotFound(format!("no note {name:?}"))),
//!     }
//! }
//!
//! airlock_sdk::export_tools!(note);
//!
//! # fn main() {
//! assert_eq!(TOOLS.templates()[0].uri_template, "file:///notes/{name}");
//! let contents = TOOLS.read("file:///notes/todo").unwrap();
//! assert_eq!(contents[0].uri, "file:///notes/todo");
//! assert_eq!(contents[0].body, ResourceBody::Text("- ship it".into()));
//! assert!(matches!(TOOLS.read("file:///notes/x"), Err(ReadError::NotFound(_))));
//! # }
//! ```
//!
//! ## Prompts
//!
//! A prompt is a template a user picks; it is a function returning
//! messages. Its parameters are the prompt's arguments (strings on the
//! wire: `String`, `&str` or any `FromStr` type; `Option<T>` is not
//! required), described with `#[arg(description = "…", title = "…", rename
//! = "…")]`; the doc comment describes the prompt. It returns
//! `Vec<`[`Message`]`>`, one `Message`, a `String` (one user message),
//! [`PromptMessages`] (with a description), or a `Result` of one (the error
//! reaches the client like a tool's). A message holds text, an image, audio,
//! an embedded resource or a link: `Message::user("…")`,
//! `Message::user(Content::image(png, "image/png"))`,
//! `Message::assistant(EmbeddedResource::text(uri, text))`. Keys: `name`,
//! `title`, `description`, `icon(...)`.
//!
//! ```
//! use airlock_sdk::{prompt, Content, Message};
//!
//! /// Asks for a review of a piece of code.
//! #[prompt(title = "Code review")]
//! fn review(
//!     #[arg(description = "The code to review")] code: String,
//!     #[arg(description = "Its language")] language: Option<String>,
//! ) -> Vec<Message> {
//!     let language = language.unwrap_or_else(|| "this".into());
//!     vec![Message::user(format!("Please review {language} code:\n{code}"))]
//! }
//!
//! airlock_sdk::export_tools!(review);
//!
//! # fn main() {
//! let info = &TOOLS.prompts()[0];
//! assert_eq!((info.arguments[0].required, info.arguments[1].required), (true, false));
//! let got = TOOLS.get_prompt("review", [("code", "fn f() {}"), ("language", "Rust")]).unwrap();
//! assert_eq!(got.messages[0].content, Content::Text("Please review Rust code:\nfn f() {}".into()));
//! # }
//! ```
//!
//! ## Completions
//!
//! `#[complete(prompt = …, argument = "…")]` (or `resource_template = …`)
//! on a function that takes the text typed so far (`value: &str`) and
//! optionally the arguments already given ([`CompletionContext`]), and
//! returns the values that fit (`Vec<String>`, `Vec<&str>`, a
//! [`Completion`] with a total, or a `Result`); more than 100 are cut there.
//! Name the prompt or template by its function (checked by the compiler) or
//! by a string. Nothing completes an argument without one: the answer is
//! empty.
//!
//! ```
//! use airlock_sdk::{complete, prompt, CompletionContext, CompletionRef};
//!
//! /// Greets someone.
//! #[prompt]
//! fn greet(name: String, city: Option<String>) -> String {
//!     format!("Say hello to {name} from {}", city.unwrap_or_default())
//! }
//!
//! #[complete(prompt = greet, argument = "city")]
//! fn cities(value: &str, context: CompletionContext) -> Vec<String> {
//!     let suffix = if context.get("name") == Some("Ada") { " (home)" } else { "" };
//!     ["Paris", "Passau", "Berlin"]
//!         .iter()
//!         .filter(|c| c.to_lowercase().starts_with(&value.to_lowercase()))
//!         .map(|c| format!("{c}{suffix}"))
//!         .collect()
//! }
//!
//! airlock_sdk::export_tools!(greet, cities);
//!
//! # fn main() {
//! let got = TOOLS.complete(CompletionRef::Prompt("greet"), "city", "pa", &[]).unwrap();
//! assert_eq!(got.values, ["Paris", "Passau"]);
//! # }
//! ```
//!
//! ## Tool UIs (MCP Apps)
//!
//! `#[tool(ui = "ui://…")]` links a tool to the HTML resource that shows
//! its results (the tool's `_meta.ui.resourceUri`); the resource is a
//! `#[resource]` of the same component with the MIME type
//! `text/html;profile=mcp-app`, whose `meta` carries the extension's CSP and
//! permissions. airlock refuses a component whose tool names a UI it does
//! not serve. `#[tool(meta = r#"{…}"#)]` adds any other `_meta` (merged with
//! `ui`), e.g. `{"ui": {"visibility": ["app"]}}` for a tool only the UI calls.
//!
//! ```
//! use airlock_sdk::{resource, tool};
//! use serde_json::json;
//!
//! /// The stock chart.
//! #[resource(
//!     uri = "ui://stock/chart",
//!     mime_type = "text/html;profile=mcp-app",
//!     meta = r#"{"ui": {"csp": {"connectDomains": []}, "prefersBorder": true}}"#
//! )]
//! fn chart() -> &'static str {
//!     "<!doctype html><title>Stock</title>"
//! }
//!
//! /// Shows the stock levels as a chart.
//! #[tool(read_only, ui = "ui://stock/chart")]
//! fn stock_levels() -> Vec<u32> { vec![3, 5] }
//!
//! airlock_sdk::export_tools!(stock_levels, chart);
//!
//! # fn main() {
//! assert_eq!(
//!     TOOLS.tool_meta(),
//!     [("stock_levels".to_string(), json!({"ui": {"resourceUri": "ui://stock/chart"}}))]
//! );
//! # }
//! ```
//!
//! ## Arguments at run time
//!
//! The runtime checks arguments against the input schema (coercion,
//! defaults, validation) before `call` runs. The generated code still reads
//! each parameter by its protocol name defensively: an omitted optional
//! parameter gets its default, a missing required one or a value that does
//! not convert is `invalid-arguments` naming the parameter
//! (`parameter "max_age_days": invalid type: string "soon", expected f64`).
//!
//! ## Host services
//!
//! [`log`] (and [`info!`], [`warning!`], [`error!`], [`debug!`]),
//! [`progress`] and [`cancelled`] call the runtime from inside a tool. On
//! native targets they do not fail: `log` writes to standard error,
//! `progress` does nothing and `cancelled` is `false`.
//!
//! ```
//! /// Counts to a thousand, reporting progress.
//! #[airlock_sdk::tool]
//! fn count() -> Result<u32, String> {
//!     for i in 0..1000u32 {
//!         if airlock_sdk::cancelled() {
//!             return Err("cancelled".into());
//!         }
//!         if i % 100 == 0 {
//!             airlock_sdk::progress(f64::from(i), Some(1000.0), Some("counting"));
//!         }
//!     }
//!     airlock_sdk::info!("counted to {}", 1000);
//!     Ok(1000)
//! }
//! # fn main() { assert!(airlock_sdk::toolbox![count].call("count", "{}").is_ok()); }
//! ```
//!
//! ## HTTP requests
//!
//! [`http::get`] and [`http::Request`] make blocking requests through
//! `wasi:http`, which airlock checks against the operator's policy: only an
//! `open_world` tool reaches the network, only the hosts listed, and
//! credentials the operator has airlock inject are added on the way out
//! (the tool never sees them). Errors carry the `wasi:http` code and what
//! it means (`HTTP-request-denied`, `TLS-certificate-error` …); natively
//! every request fails with [`http::HttpError::Unavailable`].

extern crate self as airlock_sdk;

mod ask;
mod completion;
mod error;
mod export;
mod export_offers;
mod host;
pub mod http;
mod output;
mod prompt;
mod resource;
pub mod schema;
mod skill;
mod timestamp;
mod tool;
mod toolbox;

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;

/// The bindings `wit-bindgen` generates from the contract (`wit/tool.wit`).
#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "server",
        pub_export_macro: true,
        export_macro_name: "__export_server",
        default_bindings_module: "airlock_sdk::bindings",
    });
}

pub use airlock_sdk_macros::{
    ToolSchema, complete, prompt, resource, resource_template, skills, tool,
};
pub use ask::{
    Answer, Answers, AskError, Elicited, ModelPreferences, Request, Root, Sampled, SamplingRequest,
    ask, elicit, elicit_as, elicit_url, roots, sample,
};
pub use completion::{Complete, Completion, CompletionContext, CompletionRef, IntoCompletion};
pub use error::Error;
pub use host::{Level, cancelled, log, progress, resource_updated};
pub use output::{Content, EmbeddedResource, Media, Output, ResourceBody, ResourceLink};
pub use prompt::{IntoMessages, Message, Prompt, PromptArgument, PromptInfo, PromptMessages, Role};
pub use resource::{
    Annotations, Contents, IntoContents, ReadError, Resource, ResourceInfo, ResourceTemplate,
    TemplateInfo,
};
pub use schema::ToolSchema;
pub use serde;
pub use serde_json;
pub use skill::{Skill, SkillFile, Skills};
pub use timestamp::{Timestamp, TimestampError};
pub use tool::{Hints, Icon, TaskSupport, Tool, ToolEntry, ToolInfo};
pub use toolbox::{
    CompletionEntry, Entry, Export, PromptEntry, ResourceEntry, TemplateEntry, Toolbox,
};
