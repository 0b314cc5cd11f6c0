//! `airlock check`: validates a policy file without serving anything.

use std::path::PathBuf;

use super::Exit;
use crate::policy::Policy;

/// Check a policy file: syntax, unknown keys, paths, patterns, pins.
#[derive(clap::Args)]
#[command(after_help = "Examples:\n  airlock check\n  airlock check deploy/airlock.toml")]
pub struct Args {
    /// The policy file.
    #[arg(default_value = "airlock.toml", value_name = "FILE")]
    file: PathBuf,
}

pub fn run(args: Args) -> Exit {
    match Policy::load(&args.file) {
        Ok(policy) => {
            let components = policy.components().count();
            println!(
                "{}: ok ({components} component section{})",
                args.file.display(),
                if components == 1 { "" } else { "s" }
            );
            Exit::Ok
        }
        Err(err) => {
            eprintln!("error: {err}");
            Exit::LoadFailed
        }
    }
}
