//! `airlock inspect`: what a component's tools are, what they import, and
//! (with a policy) what each may touch.

use std::fmt::Write as _;
use std::path::PathBuf;

use serde_json::{Value, json};

use super::{Exit, LoadOptions};
use crate::Runtime;
use crate::catalog::Tool;
use crate::policy::Grant;
use crate::source::Source;

/// Show the tools of components: parameters, hints, imports and grants.
#[derive(clap::Args)]
#[command(
    after_help = "Examples:\n  airlock inspect target/components/catalog.wasm\n  \
                        airlock inspect catalog.wasm --policy airlock.toml\n  \
                        airlock inspect --policy airlock.toml   (the components its `source` keys name)\n  \
                        airlock inspect catalog.wasm --json\n  \
                        airlock inspect --openrpc target/components   (the OpenRPC document)\n  \
                        airlock inspect oci://ghcr.io/acme/catalog:1.2.0 --key keys/acme.pub\n\n\
                        An oci:// reference shows what the registry publishes (digest, tools, \
                        imports, annotations, with --key the signature check) without fetching \
                        or running the component."
)]
pub struct Args {
    /// Component files (.wasm), folders of them, or references (oci://…,
    /// https://…); with --policy, may be left out when the policy names its
    /// components' `source`.
    #[arg(required_unless_present = "policy", value_name = "FILE.wasm")]
    files: Vec<PathBuf>,
    /// With an oci:// reference: check its cosign signature against this key.
    #[arg(long, value_name = "FILE")]
    key: Option<PathBuf>,
    /// Print one JSON document: the tools as MCP `tools/list` lists them,
    /// plus each component's imports (and grants with --policy).
    #[arg(long)]
    json: bool,
    /// Print the OpenRPC document of the tools: what `rpc.discover` on
    /// `/rpc` answers once they are served (a client can be generated from
    /// it before anything is served).
    #[arg(long, conflicts_with = "json")]
    openrpc: bool,
    #[command(flatten)]
    load: LoadOptions,
}

pub fn run(mut args: Args) -> Exit {
    args.load.find_policy();
    let (published, files): (Vec<PathBuf>, Vec<PathBuf>) = args
        .files
        .iter()
        .cloned()
        .partition(|f| matches!(Source::from_path(f), Ok(Source::Oci(_))));
    if !published.is_empty() {
        let exit = super::published::show(&args.load, &published, args.key.as_deref(), args.json);
        if exit != Exit::Ok || (files.is_empty() && args.load.policy.is_none()) {
            return exit;
        }
    }
    let runtime = match args.load.runtime(&files) {
        Ok(runtime) => runtime,
        Err(exit) => return exit,
    };
    if runtime.catalog().components().is_empty() {
        let empty: Vec<String> = files
            .iter()
            .filter(|f| f.is_dir() && !holds_components(f))
            .map(|f| f.display().to_string())
            .collect();
        if !empty.is_empty() {
            eprintln!(
                "error: nothing to inspect: {} holds no component files (.wasm); build or copy \
                 components into it, or name the files",
                empty.join(", ")
            );
            return Exit::Usage;
        }
        eprintln!(
            "error: nothing to inspect: name component files, or give --policy a policy whose \
             components have a `source`"
        );
        return Exit::Usage;
    }
    if args.openrpc {
        let document = crate::protocol::openrpc::document(&runtime.catalog(), None);
        super::print_result(&format!("{}\n", pretty(&document)));
        return Exit::Ok;
    }
    let with_grants = args.load.policy.is_some();
    // With a policy: what a server of these components would be confined to.
    let confinement = with_grants.then(|| {
        let serving = super::confinement::serving_of(
            &files,
            args.load.policy.as_deref(),
            &args.load.fetch,
            args.load.no_cache,
            (None, None, false),
        );
        super::confinement::lines(runtime.policy(), &serving)
    });
    if args.json {
        let mut shown = as_json(&runtime, with_grants);
        if let Some(lines) = confinement {
            shown["confinement"] = json!(lines);
        }
        super::print_result(&format!("{}\n", pretty(&shown)));
    } else {
        let mut text = as_text(&runtime, with_grants);
        for line in confinement.into_iter().flatten() {
            let _ = writeln!(text, "{line}");
        }
        super::print_result(&text);
    }
    Exit::Ok
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

fn as_json(runtime: &Runtime, with_grants: bool) -> Value {
    let catalog = runtime.catalog();
    let components: Vec<Value> = catalog
        .components()
        .iter()
        .map(|c| {
            let tools: Vec<Value> = catalog
                .tools()
                .filter(|t| std::sync::Arc::ptr_eq(&t.component, c))
                .map(|t| {
                    let mut tool = crate::protocol::mcp::offers::listed_tool(t);
                    if with_grants && let Value::Object(map) = &mut tool {
                        map.insert("grant".into(), grant_json(&runtime.grant_for(t)));
                    }
                    tool
                })
                .collect();
            let mut shown = json!({
                "file": c.path.display().to_string(),
                "name": c.name,
                "sha256": c.digest,
                "kind": c.kind.as_str(),
                "imports": c.imports,
                "tools": tools,
            });
            if let Some(mut offers) = super::inspect_offers::as_json(c) {
                if with_grants {
                    offers["grant"] = grant_json(&runtime.grant_for_offers(c));
                }
                shown["offers"] = offers;
            }
            shown
        })
        .collect();
    let tools: Vec<Value> = catalog.tools().map(|t| t.info.to_mcp()).collect();
    json!({ "tools": tools, "components": components })
}

/// A grant as `--json` shows it: each key's value by the policy's name
/// of the key (`policy::Grant::shown`, in the order of the table of keys).
fn grant_json(grant: &Grant) -> Value {
    let shown = grant
        .shown()
        .into_iter()
        .map(|(key, shown)| (key.to_string(), shown.json));
    Value::Object(shown.collect())
}

fn as_text(runtime: &Runtime, with_grants: bool) -> String {
    let catalog = runtime.catalog();
    let mut out = String::new();
    for component in catalog.components() {
        let _ = writeln!(out, "{}", component.path.display());
        let _ = writeln!(out, "  sha256   {}", component.digest);
        let _ = writeln!(out, "  kind     {}", component.kind.as_str());
        if component.imports.is_empty() {
            let _ = writeln!(out, "  imports  (none)");
        } else {
            let _ = writeln!(
                out,
                "  imports  {}",
                component.imports.join("\n           ")
            );
        }
        for tool in catalog
            .tools()
            .filter(|t| std::sync::Arc::ptr_eq(&t.component, component))
        {
            out.push('\n');
            tool_text(&mut out, tool);
            if component.kind != crate::catalog::Kind::Tool {
                let declared = runtime
                    .policy()
                    .hints_declared(&component.name, &tool.info.name);
                let _ = writeln!(
                    out,
                    "    hints: {}",
                    match (tool.own_hints, declared) {
                        (true, _) => "the tool's own annotations".to_string(),
                        (false, Some((hints, section))) => format!(
                            "{} (declared by the policy, in {section})",
                            hints_list(hints)
                        ),
                        (false, None) => "none (the tool declares none; the policy may, with \
                                          `hints` in [components.NAME] or a tool section)"
                            .to_string(),
                    }
                );
            }
            if let Some(meta) = tool.component.offers().tool_meta.get(&tool.info.name) {
                let _ = writeln!(out, "    _meta: {}", Value::Object(meta.clone()));
            }
            if with_grants {
                grant_text(&mut out, &runtime.grant_for(tool));
            }
        }
        if super::inspect_offers::as_text(&mut out, component) && with_grants {
            let _ = writeln!(out, "  reads, prompts and completions:");
            grant_text(&mut out, &runtime.grant_for_offers(component));
        }
        out.push('\n');
    }
    out
}

fn tool_text(out: &mut String, tool: &Tool) {
    let info = &tool.info;
    match &info.title {
        Some(title) => _ = writeln!(out, "  {} — {title}", info.name),
        None => _ = writeln!(out, "  {}", info.name),
    }
    for line in info.description.lines() {
        let _ = writeln!(out, "    {line}");
    }
    let params = tool.args.parameters();
    if params.is_empty() {
        let _ = writeln!(out, "    parameters: none");
    } else {
        let _ = writeln!(out, "    parameters:");
        let needs: Vec<String> = params.iter().map(|p| p.requirement()).collect();
        let width = params.iter().map(|p| p.name.len()).max().unwrap_or(0);
        let type_width = params.iter().map(|p| p.type_label.len()).max().unwrap_or(0);
        let need_width = needs.iter().map(String::len).max().unwrap_or(0);
        for (p, need) in params.iter().zip(&needs) {
            let desc = p.description.as_deref().unwrap_or("");
            let line = format!(
                "      {:width$}  {:type_width$}  {need:need_width$}  {desc}",
                p.name, p.type_label,
            );
            let _ = writeln!(out, "{}", line.trim_end());
        }
    }
    match &info.output_schema {
        Some(schema) => _ = writeln!(out, "    output: {schema}"),
        None => _ = writeln!(out, "    output: content only (no output schema)"),
    }
    let hints = info
        .hints
        .annotations()
        .into_iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ");
    let _ = writeln!(out, "    annotations: {hints}");
    let _ = writeln!(out, "    task support: {}", info.task_support.as_str());
    for icon in &info.icons {
        let mut line = format!("    icon: {}", icon.src);
        if let Some(mime) = &icon.mime_type {
            let _ = write!(line, " ({mime})");
        }
        if !icon.sizes.is_empty() {
            let _ = write!(line, " {}", icon.sizes.join(" "));
        }
        let _ = writeln!(out, "{line}");
    }
}

fn grant_text(out: &mut String, grant: &Grant) {
    let _ = writeln!(out, "    effective grant:");
    for (_, shown) in grant.shown() {
        for line in shown.lines {
            let _ = writeln!(out, "      {line}");
        }
    }
}

/// Hints as the policy file spells them: `read-only, open-world`.
pub(super) fn hints_list(hints: crate::tool::Hints) -> String {
    match hints.names() {
        names if names.is_empty() => "none".to_string(),
        names => names.join(", "),
    }
}

/// Whether `folder` holds a `.wasm` file (what loading a folder takes).
fn holds_components(folder: &std::path::Path) -> bool {
    std::fs::read_dir(folder).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|e| e.path().extension().is_some_and(|x| x == "wasm"))
    })
}

/// What a grant lets a call ask the client, in one line (`check` shows it
/// too): the policy's [`Grant::ask_line`].
pub(super) fn asks_line(grant: &Grant) -> String {
    grant.ask_line()
}
