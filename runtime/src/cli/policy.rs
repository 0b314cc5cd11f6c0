//! `airlock policy import`: a wassette per-component policy (YAML) as an
//! airlock policy section on stdout; what was tightened or left out on
//! stderr (see [`crate::policy::wassette`]).

use std::path::PathBuf;

use clap::Subcommand;

use super::{Exit, print_result};
use crate::policy::wassette;

/// Work with policy files.
#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    Import(ImportArgs),
}

/// Convert a wassette policy (YAML) into an airlock policy section.
///
/// The TOML goes to stdout; every permission it narrowed or could not carry
/// over is named on stderr. It never grants more than the wassette policy.
#[derive(clap::Args)]
#[command(
    after_help = "Examples:\n  airlock policy import fetch.policy.yaml >> airlock.toml\n  \
                        airlock policy import policy.yaml --component get-weather"
)]
pub struct ImportArgs {
    /// The wassette policy (`COMPONENT.policy.yaml`).
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// The component's name in airlock (the file stem of its `.wasm`);
    /// default: the policy file's name without `.policy.yaml`.
    #[arg(long, value_name = "NAME")]
    component: Option<String>,
}

pub fn run(args: Args) -> Exit {
    match args.command {
        Command::Import(args) => import(args),
    }
}

fn import(args: ImportArgs) -> Exit {
    let Some(component) = args.component.clone().or_else(|| component_name(&args)) else {
        eprintln!(
            "error: {}: name the component it is for: --component NAME (the file stem of \
             its .wasm)",
            args.file.display()
        );
        return Exit::Usage;
    };
    let text = match std::fs::read_to_string(&args.file) {
        Ok(text) => text,
        Err(err) => {
            eprintln!("error: {}: cannot read: {err}", args.file.display());
            return Exit::LoadFailed;
        }
    };
    // wassette resolves relative storage paths against the policy's folder.
    let base = std::path::absolute(&args.file)
        .ok()
        .and_then(|p| p.parent().map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("."));
    match wassette::import(&text, &component, &base) {
        Ok(imported) => {
            for note in &imported.notes {
                eprintln!("{note}");
            }
            print_result(&imported.toml);
            Exit::Ok
        }
        Err(err) => {
            eprintln!("error: {}:{err}", args.file.display());
            Exit::LoadFailed
        }
    }
}

/// `fetch` for `fetch.policy.yaml` (wassette's own naming); `None` for a
/// file named only `policy.yaml`.
fn component_name(args: &ImportArgs) -> Option<String> {
    let name = args.file.file_name()?.to_str()?;
    let stem = [".yaml", ".yml"]
        .iter()
        .find_map(|ext| name.strip_suffix(ext))
        .unwrap_or(name);
    let stem = stem.strip_suffix(".policy").unwrap_or(stem);
    (!stem.is_empty() && stem != "policy").then(|| stem.to_string())
}
