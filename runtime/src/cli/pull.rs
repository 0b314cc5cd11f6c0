//! `airlock pull`: fetches components named by reference into the store,
//! verifies them (digest, pin, signature), records tags in the lock and
//! prints what each is; `--update` moves the lock to where tags point now.

use std::path::PathBuf;

use super::{Exit, LoadOptions};
use crate::source::{Expect, PublicKey, Source};

/// Fetch and verify components from registries or URLs into the store.
#[derive(clap::Args)]
#[command(
    after_help = "Without REF, pulls every oci:// and https:// source the policy names. A tag is \
                  recorded in the lock (airlock.lock) the first time; later, pull reports a tag \
                  that moved and keeps the locked digest, unless --update.\n\n\
                  Examples:\n  \
                  airlock pull oci://ghcr.io/acme/catalog:1.2.0\n  \
                  airlock pull --insecure-registry 127.0.0.1:5000 oci://127.0.0.1:5000/acme/catalog:1.0 --key keys/acme.pub\n  \
                  airlock pull --policy airlock.toml\n  \
                  airlock pull --policy airlock.toml --update"
)]
pub struct Args {
    /// References: oci://REGISTRY/NAME:TAG, …@sha256:DIGEST, https://…/tool.wasm.
    #[arg(value_name = "REF")]
    references: Vec<String>,
    /// Move the lock to where each tag (or URL) points now.
    #[arg(long)]
    update: bool,
    /// Require a cosign signature by this public key (besides the policy's `verify`).
    #[arg(long, value_name = "FILE")]
    key: Option<PathBuf>,
    #[command(flatten)]
    load: LoadOptions,
}

pub fn run(mut args: Args) -> Exit {
    args.load.find_policy();
    let key = match args.key.as_deref().map(PublicKey::read).transpose() {
        Ok(key) => key,
        Err(err) => {
            eprintln!("error: --key: {err}");
            return Exit::Usage;
        }
    };
    let runtime = match args.load.empty_runtime(4, false) {
        Ok(runtime) => runtime,
        Err(exit) => return exit,
    };
    let mut sources = Vec::new();
    for text in &args.references {
        match Source::parse(text) {
            Ok(source) if source.is_remote() => sources.push(source),
            Ok(_) => {
                eprintln!("error: {text} is a file; pull fetches oci:// and https:// references");
                return Exit::Usage;
            }
            Err(err) => {
                eprintln!("error: {err}");
                return Exit::Usage;
            }
        }
    }
    if args.references.is_empty() {
        sources.extend(
            runtime
                .policy()
                .components()
                .filter_map(|c| c.source.clone())
                .filter(Source::is_remote),
        );
        if sources.is_empty() {
            eprintln!(
                "error: nothing to pull: name references (airlock pull oci://…), or give \
                 --policy a policy with oci:// or https:// sources"
            );
            return Exit::Usage;
        }
    }
    let mut exit = Exit::Ok;
    for source in &sources {
        let label = source.label();
        let section = runtime.policy().component_with_source(&label);
        let name = section.map_or_else(|| source.default_name(), |c| c.name.clone());
        let pin = section.and_then(|c| c.sha256.as_deref());
        let keys: Vec<&PublicKey> = runtime
            .policy()
            .verify_key(&name)
            .into_iter()
            .chain(key.as_ref())
            .collect();
        // The first key checks during the pull; another must verify too.
        let expect = Expect {
            sha256: pin,
            key: keys.first().copied(),
        };
        let pulled = match runtime.resolver().pull(source, expect, args.update) {
            Ok(pulled) => pulled,
            Err(err) => {
                eprintln!("error: {err}");
                exit = Exit::LoadFailed;
                continue;
            }
        };
        for extra in keys.iter().skip(1) {
            let again = Expect {
                sha256: pin,
                key: Some(extra),
            };
            if let Err(err) = runtime.resolver().fetch(source, again) {
                eprintln!("error: {err}");
                exit = Exit::LoadFailed;
            }
        }
        let fetched = &pulled.fetched;
        let mut out = format!("pulled {source}\n");
        if let Some(manifest) = &fetched.manifest {
            out += &format!("  digest     {manifest}\n");
        }
        out += &format!(
            "  component  {} ({}, {})\n",
            fetched.component,
            crate::sandbox::format_size(fetched.bytes.len() as u64),
            if fetched.downloaded {
                "downloaded into the store"
            } else {
                "already in the store"
            }
        );
        for key in &keys {
            out += &format!("  signature  verified with {}\n", key.label);
        }
        let lock = runtime
            .resolver()
            .lock_path()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        match (&pulled.moved, &pulled.relocked) {
            (Some((locked, now)), _) => {
                eprintln!(
                    "warning: {source} moved: the registry now says {now}, {lock} keeps {locked}; \
                     run `airlock pull --update {source}` to take it"
                );
                out += &format!("  lock       {lock} keeps {locked} (the tag moved to {now})\n");
                exit = Exit::LoadFailed;
            }
            (None, Some(Some(before))) => {
                out += &format!("  lock       {lock} updated (was {before})\n");
            }
            (None, Some(None)) => out += &format!("  lock       recorded in {lock}\n"),
            (None, None) => {}
        }
        match runtime.load_file(&label) {
            Ok(loaded) => {
                let names = match loaded.tool_names() {
                    names if names.is_empty() => "none (it offers resources or prompts)".into(),
                    names => names.join(", "),
                };
                out += &format!("  tools      {names}\n");
            }
            Err(err) => {
                eprintln!("error: {err}");
                exit = Exit::LoadFailed;
            }
        }
        super::print_result(&out);
    }
    exit
}
