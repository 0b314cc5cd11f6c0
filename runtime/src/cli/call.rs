//! `airlock call`: one call of one tool in a fresh instance, from the shell.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::{Exit, LoadOptions};
use crate::call::{CallError, Caller, Confirmation};
use crate::logtext::GuestText;
use crate::observe::CallObserver;
use crate::sandbox::RunError;
use crate::tool::Level;

/// Call one tool once, in a fresh instance, and print the result as JSON.
#[derive(clap::Args)]
#[command(
    after_help = "Arguments: `key=value` passes a string (the runtime coerces it to the \
                        parameter's type, so `units=5` works for an integer); `key:=JSON` passes \
                        raw JSON (`tags:=[\"a\",\"b\"]`); `--args` passes the whole object, or an \
                        array of positional values.\n\n\
                        Examples:\n  \
                        airlock call target/components/export.wasm export_orders customer_id=C-1 max_age_days=42\n  \
                        airlock call target/components/export.wasm export_orders --args '[\"C-1\", 30, \"tsv\"]'\n  \
                        airlock call target/components/catalog.wasm restock sku=SKU-1001 units=5 --policy airlock.toml --yes\n\n\
                        (target/components/ is where `cargo xtask build` puts the repository's own tools.)"
)]
pub struct Args {
    /// The component file, or a reference (oci://…, https://…).
    #[arg(value_name = "FILE.wasm")]
    file: PathBuf,
    /// The tool to call.
    tool: String,
    /// Arguments as `key=value` (string, coerced) or `key:=JSON`.
    #[arg(value_name = "KEY=VALUE")]
    pairs: Vec<String>,
    /// All arguments as one JSON object, or an array of positional values.
    #[arg(long, value_name = "JSON", conflicts_with = "pairs")]
    args: Option<String>,
    /// Confirm a destructive call the policy marks `confirm`.
    #[arg(long)]
    yes: bool,
    #[command(flatten)]
    load: LoadOptions,
}

/// Prints the guest's log and progress reports to stderr.
struct StderrObserver;

impl CallObserver for StderrObserver {
    fn log(&self, level: Level, message: &str) {
        eprintln!("[{}] {}", level.as_str(), GuestText(message));
    }

    fn progress(&self, done: f64, total: Option<f64>, message: Option<&str>) {
        let total = total.map(|t| format!("/{t}")).unwrap_or_default();
        eprintln!(
            "[progress] {done}{total} {}",
            GuestText(message.unwrap_or(""))
        );
    }
}

pub fn run(mut args: Args) -> Exit {
    args.load.find_policy();
    let arguments = match parse_arguments(&args) {
        Ok(arguments) => arguments,
        Err(message) => {
            eprintln!("error: {message}");
            return Exit::Usage;
        }
    };
    let runtime = match args.load.runtime(std::slice::from_ref(&args.file)) {
        Ok(runtime) => runtime,
        Err(exit) => return exit,
    };
    let result = runtime
        .prepare(Caller::CommandLine, &args.tool, arguments)
        .and_then(|mut prepared| {
            if prepared.needs_confirmation() && args.yes {
                prepared.confirm(Confirmation::Accepted);
            }
            prepared.run(Arc::new(StderrObserver))
        });
    match result {
        Ok(output) => {
            let json = output.to_mcp();
            let text = serde_json::to_string_pretty(&json).unwrap_or_else(|_| json.to_string());
            super::print_result(&format!("{text}\n"));
            Exit::Ok
        }
        Err(err) => {
            eprintln!("error: {err}");
            if let CallError::UnknownTool(_) = err {
                let catalog = runtime.catalog();
                let tools: Vec<&str> = catalog.tools().map(|t| t.info.name.as_str()).collect();
                eprintln!("{} declares: {}", args.file.display(), tools.join(", "));
            }
            exit_for(&err)
        }
    }
}

fn exit_for(err: &CallError) -> Exit {
    match err {
        CallError::UnknownTool(_) | CallError::NotFound(_) => Exit::LoadFailed,
        CallError::InvalidArguments(_)
        | CallError::InvalidParams(_)
        | CallError::Run(RunError::InvalidArguments(_)) => Exit::BadArguments,
        CallError::Refused(_) => Exit::NotPermitted,
        CallError::Busy { .. } | CallError::Run(_) => Exit::ToolFailed,
    }
}

fn parse_arguments(args: &Args) -> Result<Value, String> {
    if let Some(text) = &args.args {
        return serde_json::from_str(text).map_err(|e| format!("--args is not valid JSON: {e}"));
    }
    let mut map = Map::new();
    for pair in &args.pairs {
        let (key, value) = if let Some((key, json)) = pair.split_once(":=") {
            let value = serde_json::from_str(json)
                .map_err(|e| format!("{key}:= expects JSON ({e}); use {key}=... for a string"))?;
            (key, value)
        } else if let Some((key, text)) = pair.split_once('=') {
            (key, Value::String(text.to_string()))
        } else {
            return Err(format!("{pair:?} is not KEY=VALUE or KEY:=JSON"));
        };
        if key.is_empty() {
            return Err(format!("{pair:?} has no key"));
        }
        if map.insert(key.to_string(), value).is_some() {
            return Err(format!("{key} is given twice"));
        }
    }
    Ok(Value::Object(map))
}
