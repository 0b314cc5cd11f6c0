//! `airlock publish`: pushes a component to an OCI registry in the CNCF
//! Wasm layout, with its tools (names, descriptions, schemas, hints) and
//! imports in the manifest's annotations, so `airlock inspect oci://…`
//! (or a registry's web page) shows what it does before anything runs;
//! with `--server-name`, also what the official MCP Registry needs to list
//! it (the ownership annotation and a `server.json`: see [`listing`]).

mod listing;
mod server_json;

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::{Exit, FetchOptions};
use crate::policy::Policy;
use crate::sandbox::{Sandbox, SandboxConfig};
use crate::source::Source;
use crate::source::layout::Publication;

/// Push a component to an OCI registry (CNCF Wasm artifact layout).
#[derive(clap::Args)]
#[command(after_help = "Sign what you published with cosign (key-based): \
                  cosign sign --key cosign.key REGISTRY/NAME@DIGEST, then require it with \
                  verify = { key = \"cosign.pub\" } in the policy.\n\n\
                  List it in the official MCP Registry with --server-name: it marks the artifact \
                  as yours and writes server.json; then `mcp-publisher publish` \
                  (docs/publishing.md, \"Listing in the MCP Registry\").\n\n\
                  Examples:\n  \
                  airlock publish target/components/catalog.wasm oci://ghcr.io/acme/catalog:1.2.0\n  \
                  airlock publish catalog.wasm oci://127.0.0.1:5000/acme/catalog:1.0 --insecure-registry 127.0.0.1:5000\n  \
                  airlock publish catalog.wasm oci://ghcr.io/acme/catalog:1.2.0 \
                  --annotation org.opencontainers.image.source=https://github.com/acme/tools\n  \
                  airlock publish catalog.wasm oci://ghcr.io/acme/catalog:1.2.0 \
                  --server-name io.github.acme/catalog")]
pub struct Args {
    /// The component file.
    #[arg(value_name = "FILE.wasm")]
    file: PathBuf,
    /// Where to: oci://REGISTRY/NAMESPACE/NAME:TAG.
    #[arg(value_name = "REF")]
    reference: String,
    /// Another manifest annotation (e.g. org.opencontainers.image.source=URL).
    #[arg(long, value_name = "KEY=VALUE")]
    annotation: Vec<String>,
    #[command(flatten)]
    fetch: FetchOptions,
    /// Last: its help heading would name the options after it.
    #[command(flatten)]
    listing: server_json::ListingArgs,
}

pub fn run(args: Args) -> Exit {
    let oci = match Source::parse(&args.reference) {
        Ok(Source::Oci(oci)) => oci,
        Ok(_) => {
            eprintln!(
                "error: {}: publish pushes to oci://REGISTRY/NAME:TAG",
                args.reference
            );
            return Exit::Usage;
        }
        Err(err) => {
            eprintln!("error: {err}");
            return Exit::Usage;
        }
    };
    let mut annotations = BTreeMap::new();
    for pair in &args.annotation {
        match pair.split_once('=') {
            Some((key, value)) if !key.is_empty() => {
                annotations.insert(key.to_string(), value.to_string());
            }
            _ => {
                eprintln!("error: --annotation {pair:?} is not KEY=VALUE");
                return Exit::Usage;
            }
        }
    }
    let plan = match args.listing.plan(&args.file, &oci, &mut annotations) {
        Ok(plan) => plan,
        Err(err) => {
            eprintln!("error: {err}");
            return Exit::Usage;
        }
    };
    let bytes = match std::fs::read(&args.file) {
        Ok(bytes) => bytes,
        Err(err) => {
            eprintln!("error: {}: cannot read: {err}", args.file.display());
            return Exit::LoadFailed;
        }
    };
    // Loading it checks it as a server would and lists its tools; it is
    // the publisher's own component, so describing it here is expected.
    let sandbox = match Sandbox::new(&SandboxConfig::default().instances(4)) {
        Ok(sandbox) => sandbox,
        Err(err) => {
            eprintln!("error: cannot start the sandbox: {err:#}");
            return Exit::LoadFailed;
        }
    };
    let runtime =
        crate::Runtime::new(sandbox, Policy::default()).with_resolver(args.fetch.resolver(None));
    let loaded = match runtime.load_file(&args.file) {
        Ok(loaded) => loaded,
        Err(err) => {
            eprintln!("error: {err}");
            return Exit::LoadFailed;
        }
    };
    let name = Source::File(args.file.clone()).default_name();
    let imports = loaded.component.imports.clone();
    let tools = loaded.tools;
    let publication = Publication {
        component: &bytes,
        name: &name,
        version: oci.tag.as_deref(),
        tools: tools.iter().map(|t| t.info.to_mcp()).collect(),
        imports,
        exports: crate::catalog::export_names(&bytes),
        created: created(),
        annotations,
        labels: plan.as_ref().map(|p| p.labels()).unwrap_or_default(),
    };
    // The listing is checked against the registry's schema before the push:
    // a refused server.json pushes nothing.
    let listing = match &plan {
        Some(plan) => match listed(plan, &oci, &publication) {
            Ok(listing) => Some(listing),
            Err(err) => {
                eprintln!("error: {err}");
                return Exit::Usage;
            }
        },
        None => None,
    };
    match runtime.resolver().publish(&oci, &publication) {
        Ok(digest) => {
            let pinned = oci.with_digest(&digest);
            let names: Vec<&str> = match tools.is_empty() {
                true => vec!["none (it offers resources or prompts)"],
                false => tools.iter().map(|t| t.info.name.as_str()).collect(),
            };
            let mut out = format!(
                "published {oci}\n  digest     {digest}\n  pinned     {pinned}\n  component  {} ({})\n  tools      {}\n",
                crate::source::store::digest_of(&bytes),
                crate::sandbox::format_size(bytes.len() as u64),
                names.join(", "),
            );
            if let (Some(plan), Some(listing)) = (&plan, &listing) {
                match plan.write(listing) {
                    Ok(lines) => out.push_str(&lines),
                    Err(err) => {
                        super::print_result(&out);
                        eprintln!("error: {err}");
                        return Exit::LoadFailed;
                    }
                }
            }
            super::print_result(&out);
            Exit::Ok
        }
        Err(err) => {
            eprintln!("error: {err}");
            Exit::LoadFailed
        }
    }
}

/// The listing of what `publication` pushes: its manifest's final
/// annotations and digest, known before the push.
fn listed(
    plan: &server_json::Plan,
    oci: &crate::source::OciReference,
    publication: &Publication,
) -> Result<listing::Listing, String> {
    let artifact = publication.artifact();
    let manifest = crate::source::layout::Manifest::parse(&artifact.manifest)?;
    let digest = crate::source::store::digest_of(&artifact.manifest);
    plan.listing(oci, &digest, &manifest.annotations)
}

/// `org.opencontainers.image.created`: now, or `$SOURCE_DATE_EPOCH` (so a
/// reproducible build publishes the same digest twice).
fn created() -> String {
    let when = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .map(|secs| std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs))
        .unwrap_or_else(std::time::SystemTime::now);
    humantime::format_rfc3339_seconds(when).to_string()
}
