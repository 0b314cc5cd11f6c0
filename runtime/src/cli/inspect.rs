//! `airlock inspect`: what a component's tools are, what they import, and
//! (with a policy) what each may touch.

use std::fmt::Write as _;
use std::path::PathBuf;

use serde_json::{Value, json};

use super::{Exit, LoadOptions};
use crate::Runtime;
use crate::catalog::Tool;
use crate::policy::{Consent, Grant, HttpMethods, NetworkGrant, Shown};
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
    if args.json {
        super::print_result(&format!("{}\n", pretty(&as_json(&runtime, with_grants))));
    } else {
        super::print_result(&as_text(&runtime, with_grants));
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

/// A grant shown one capability at a time (in the order `sandbox::provision`
/// provisions them): its `--json` key and value beside its lines of text,
/// so that a new kind of grant is shown by one entry here.
fn shown(grant: &Grant) -> [(&'static str, Value, Vec<String>); 8] {
    let keys = |pairs: &[(String, String)]| -> Vec<String> {
        pairs.iter().map(|(k, _)| k.clone()).collect()
    };
    let listed = |names: &[String]| match names.is_empty() {
        true => "none".to_string(),
        false => names.join(", "),
    };
    let l = &grant.limits;
    [
        (
            "folders",
            json!(grant.mounts.iter().map(|m| json!({
                "host": m.host.display().to_string(), "guest": m.guest, "access": m.access.as_str(),
            })).collect::<Vec<_>>()),
            match grant.mounts.is_empty() {
                true => vec!["folders: none".to_string()],
                false => grant
                    .mounts
                    .iter()
                    .map(|m| format!("folder {} → {} ({})", m.host.display(), m.guest, m.access))
                    .collect(),
            },
        ),
        (
            "network",
            json!(grant.network.as_ref().map(|n| json!({
                "allow": n.allow.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
                "methods": match n.methods {
                    HttpMethods::Any => "any",
                    HttpMethods::SafeOnly => "GET, HEAD, OPTIONS",
                },
                // Which header goes where and from which variable; never a value.
                "credentials": n.credentials.iter().map(|c| json!({
                    "header": c.header, "host": c.host.to_string(), "from": c.from,
                })).collect::<Vec<_>>(),
                "tls": {
                    "roots": n.trust.roots.as_str(),
                    "ca": n.trust.ca.as_ref().map(|ca| ca.path.display().to_string()),
                },
            }))),
            network_text(grant.network.as_ref()),
        ),
        (
            "env",
            json!(keys(&grant.env)),
            vec![format!("env: {}", listed(&keys(&grant.env)))],
        ),
        (
            "config",
            json!(keys(&grant.config)),
            match grant.config.is_empty() {
                true => Vec::new(),
                false => vec![format!("config: {}", keys(&grant.config).join(", "))],
            },
        ),
        (
            "limits",
            Value::Object(l.json(|shown| shown == Shown::Limits)),
            vec![l.line()],
        ),
        (
            "destructive",
            json!(grant.consent.map(Consent::as_str)),
            grant
                .consent
                .map(|consent| format!("destructive calls: {}", consent.as_str()))
                .into_iter()
                .collect(),
        ),
        (
            "ask",
            {
                // The kinds granted, the limits shown with them, the hosts.
                let mut ask = serde_json::Map::new();
                ask.insert("granted".into(), json!(grant.asks.names()));
                ask.extend(l.json(|shown| matches!(shown, Shown::Ask(_))));
                let hosts = grant
                    .elicit_urls
                    .hosts
                    .as_ref()
                    .map(|hosts| hosts.iter().map(|p| p.to_string()).collect::<Vec<_>>());
                ask.insert("elicit_url_hosts".into(), json!(hosts));
                Value::Object(ask)
            },
            vec![asks_line(grant)],
        ),
        (
            "narrowings",
            json!(
                grant
                    .narrowings
                    .iter()
                    .map(|n| n.to_string())
                    .collect::<Vec<_>>()
            ),
            grant
                .narrowings
                .iter()
                .map(|n| format!("narrowed {n}"))
                .collect(),
        ),
    ]
}

fn network_text(network: Option<&NetworkGrant>) -> Vec<String> {
    let Some(n) = network else {
        return vec!["network: none".to_string()];
    };
    let hosts = n.allow.iter().map(|p| p.to_string()).collect::<Vec<_>>();
    let methods = match n.methods {
        HttpMethods::Any => "any method",
        HttpMethods::SafeOnly => "GET, HEAD, OPTIONS only",
    };
    let mut lines = vec![format!("network: {} ({methods})", hosts.join(", "))];
    for c in &n.credentials {
        lines.push(format!("injects {} (value hidden)", c.describe()));
    }
    lines.push(format!(
        "tls: {} roots{}",
        n.trust.roots.as_str(),
        n.trust
            .ca
            .as_ref()
            .map(|ca| format!(" + CA bundle {}", ca.path.display()))
            .unwrap_or_default()
    ));
    lines
}

fn grant_json(grant: &Grant) -> Value {
    let shown = shown(grant).map(|(key, value, _)| (key.to_string(), value));
    Value::Object(shown.into_iter().collect())
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
    for (_, _, lines) in shown(grant) {
        for line in lines {
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

/// What a grant lets a call ask the client, in one line: the kinds
/// granted, the per-call limits of those kinds only, and the hosts a URL
/// elicitation may name when the policy lists them.
pub(super) fn asks_line(grant: &Grant) -> String {
    let (asks, l) = (grant.asks, &grant.limits);
    if !asks.any() {
        return "ask: none (the tool may not ask the client anything)".to_string();
    }
    // The limits of each kind granted, as their declarations word them.
    let limits: Vec<String> = asks
        .names()
        .into_iter()
        .filter_map(|kind| l.ask_text(kind))
        .collect();
    // Where a URL elicitation may send the user, when the policy narrows it.
    let urls = match (asks.elicit, grant.elicit_urls.describe()) {
        (true, Some(hosts)) => format!("; elicit-url-hosts: {hosts}"),
        _ => String::new(),
    };
    format!(
        "ask: {} (per call: {}{urls})",
        asks.names().join(", "),
        limits.join(", ")
    )
}
