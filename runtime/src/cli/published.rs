//! `airlock inspect oci://…`: what a registry publishes for an artifact —
//! its digest, the tools and imports its publisher listed, its
//! annotations, the lock's entry and (with `--key`) the signature check —
//! read from the manifest alone, before the component is fetched or run.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::{Exit, LoadOptions};
use crate::source::layout::{IMPORTS_ANNOTATION, TOOLS_ANNOTATION};
use crate::source::{PublicKey, Published, Source};

/// Prints what the registry publishes for each reference.
pub fn show(load: &LoadOptions, references: &[PathBuf], key: Option<&Path>, json: bool) -> Exit {
    let key = match key.map(PublicKey::read).transpose() {
        Ok(key) => key,
        Err(err) => {
            eprintln!("error: --key: {err}");
            return Exit::Usage;
        }
    };
    let resolver = load.fetch.resolver(load.policy.as_deref());
    let mut documents = Vec::new();
    let mut exit = Exit::Ok;
    for reference in references {
        let Ok(Source::Oci(oci)) = Source::from_path(reference) else {
            continue;
        };
        match resolver.published(&oci, key.as_ref()) {
            Ok(published) => {
                if json {
                    documents.push(as_json(&oci.to_string(), &published));
                } else {
                    let label = key.as_ref().map_or("", |k| k.label.as_str());
                    super::print_result(&as_text(&oci.to_string(), &published, label));
                }
                if matches!(published.signature, Some(Err(_))) {
                    exit = Exit::NotPermitted;
                }
            }
            Err(err) => {
                eprintln!("error: {err}");
                exit = Exit::LoadFailed;
            }
        }
    }
    if json {
        let text =
            serde_json::to_string_pretty(&json!({ "published": documents })).unwrap_or_default();
        super::print_result(&format!("{text}\n"));
    }
    exit
}

fn as_json(reference: &str, published: &Published) -> Value {
    let manifest = &published.manifest;
    let component = manifest.component().ok();
    let annotations: serde_json::Map<String, Value> = manifest
        .annotations
        .iter()
        .filter(|(k, _)| *k != TOOLS_ANNOTATION && *k != IMPORTS_ANNOTATION)
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    json!({
        "reference": reference,
        "digest": published.digest,
        "component": component.map(|c| json!({ "digest": c.digest, "size": c.size })),
        "locked": published.locked.as_ref().map(|l| json!({
            "manifest": l.manifest, "component": l.component,
        })),
        "signature": published.signature.as_ref().map(|s| match s {
            Ok(()) => json!({ "verified": true }),
            Err(e) => json!({ "verified": false, "reason": e.to_string() }),
        }),
        "tools": manifest.published_tools(),
        "imports": manifest.published_imports(),
        "annotations": annotations,
    })
}

fn as_text(reference: &str, published: &Published, key: &str) -> String {
    let manifest = &published.manifest;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{reference}  (as published; the component is neither fetched nor run)"
    );
    let _ = writeln!(out, "  digest     {}", published.digest);
    match manifest.component() {
        Ok(c) => {
            _ = writeln!(
                out,
                "  component  {} ({})",
                c.digest,
                crate::sandbox::format_size(c.size)
            )
        }
        Err(e) => _ = writeln!(out, "  component  not a Wasm component artifact: {e}"),
    }
    match &published.locked {
        Some(l) if l.manifest.as_deref() == Some(published.digest.as_str()) => {
            _ = writeln!(out, "  lock       locked to this digest")
        }
        Some(l) => {
            _ = writeln!(
                out,
                "  lock       locked to {} (the tag moved; `airlock pull --update` takes it)",
                l.manifest.as_deref().unwrap_or(&l.component)
            )
        }
        None => {}
    }
    match &published.signature {
        Some(Ok(())) => _ = writeln!(out, "  signature  verified with {key}"),
        Some(Err(e)) => _ = writeln!(out, "  signature  {e}"),
        None => {}
    }
    for (key, value) in &manifest.annotations {
        if let Some(short) = key.strip_prefix("org.opencontainers.image.") {
            // `description` fills the column: a space still follows it.
            let _ = writeln!(out, "  {short:<10} {value}");
        }
    }
    match manifest.published_imports() {
        Some(imports) if imports.is_empty() => _ = writeln!(out, "  imports    (none)"),
        Some(imports) => _ = writeln!(out, "  imports    {}", imports.join("\n             ")),
        None => _ = writeln!(out, "  imports    (not published)"),
    }
    match manifest.published_tools() {
        None => {
            _ = writeln!(
                out,
                "\n  (the publisher listed no tools: annotation {TOOLS_ANNOTATION} is missing; \
             `airlock pull` fetches it and lists them)"
            )
        }
        Some(tools) => {
            for tool in tools {
                tool_text(&mut out, &tool);
            }
        }
    }
    out.push('\n');
    out
}

fn tool_text(out: &mut String, tool: &Value) {
    let text = |key: &str| tool.get(key).and_then(Value::as_str).unwrap_or("");
    out.push('\n');
    match tool.get("title").and_then(Value::as_str) {
        Some(title) => _ = writeln!(out, "  {} — {title}", text("name")),
        None => _ = writeln!(out, "  {}", text("name")),
    }
    for line in text("description").lines() {
        let _ = writeln!(out, "    {line}");
    }
    if let Some(Value::Object(properties)) = tool.pointer("/inputSchema/properties") {
        let names: Vec<&str> = properties.keys().map(String::as_str).collect();
        let _ = writeln!(out, "    parameters: {}", names.join(", "));
    }
    if let Some(Value::Object(hints)) = tool.get("annotations") {
        let hints: Vec<String> = hints
            .iter()
            .filter(|(k, _)| k.ends_with("Hint"))
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let _ = writeln!(out, "    annotations: {}", hints.join(" "));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `description` is as long as the label column: a space still
    /// separates it from its value (#37: "descriptionairlock tools:").
    #[test]
    fn every_annotation_label_is_followed_by_a_space() {
        let manifest = serde_json::from_value(json!({
            "schemaVersion": 2,
            "config": { "mediaType": "application/vnd.wasm.config.v0+json", "digest": "sha256:c", "size": 2 },
            "layers": [],
            "annotations": {
                "org.opencontainers.image.description": "airlock tools: lookup",
                "org.opencontainers.image.title": "catalog",
            },
        }))
        .expect("a manifest");
        let published = Published {
            digest: "sha256:m".into(),
            manifest,
            locked: None,
            signature: None,
        };
        let text = as_text("oci+http://127.0.0.1:5000/acme/catalog:1", &published, "");
        assert!(
            text.contains("\n  description airlock tools: lookup\n"),
            "{text}"
        );
        assert!(text.contains("\n  title      catalog\n"), "{text}");
    }
}
