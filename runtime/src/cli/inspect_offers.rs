//! What `airlock inspect` shows of a component's resources, resource
//! templates, prompts and skills (world `server`). With `--policy`, `inspect`
//! adds the grant its reads, prompts and completions run with (the
//! component's, narrowed to read-only, offline unless `offers-network`).

use std::fmt::Write as _;

use serde_json::{Value, json};

use crate::catalog::Component;

/// The component's offers as `inspect --json` shows them (`None` when it
/// offers nothing beside its tools).
pub(super) fn as_json(component: &Component) -> Option<Value> {
    let offers = component.offers();
    // An SDK component exports the interfaces even when it offers nothing.
    if offers.is_empty() {
        return None;
    }
    Some(json!({
        "resources": offers.resources.iter().map(|r| r.to_mcp()).collect::<Vec<_>>(),
        "resourceTemplates": offers.templates.iter().map(|t| t.info.to_mcp()).collect::<Vec<_>>(),
        "prompts": offers.prompts.iter().map(|p| p.to_mcp()).collect::<Vec<_>>(),
        "completions": offers.completes,
        "skills": offers.skills.iter().map(|s| s.entry()).collect::<Vec<_>>(),
    }))
}

/// The component's offers as text, after its tools; false when it offers
/// nothing.
pub(super) fn as_text(out: &mut String, component: &Component) -> bool {
    let offers = component.offers();
    if offers.is_empty() {
        return false;
    }
    out.push('\n');
    // A skill's files are shown with their skill, below.
    let resources = offers.resources.iter();
    for r in resources.filter(|r| offers.skill_file(&r.uri).is_none()) {
        let mime = r.mime_type.as_deref().unwrap_or("no MIME type");
        let _ = writeln!(out, "  resource {} — {} ({mime})", r.uri, r.name);
        if let Some(description) = &r.description {
            let _ = writeln!(out, "    {description}");
        }
    }
    for t in &offers.templates {
        let mime = t.info.mime_type.as_deref().unwrap_or("no MIME type");
        let _ = writeln!(
            out,
            "  resource template {} — {} ({mime})",
            t.info.uri_template, t.info.name
        );
    }
    for p in &offers.prompts {
        let arguments: Vec<String> = p
            .arguments
            .iter()
            .map(|a| match a.required {
                true => a.name.clone(),
                false => format!("{}?", a.name),
            })
            .collect();
        let _ = writeln!(out, "  prompt {}({})", p.name, arguments.join(", "));
        if let Some(description) = &p.description {
            let _ = writeln!(out, "    {description}");
        }
    }
    for skill in &offers.skills {
        let bytes: usize = skill.files.iter().map(|f| f.bytes.len()).sum();
        let _ = writeln!(
            out,
            "  skill {} — {} ({} file(s), {})",
            skill.uri,
            skill.name,
            skill.files.len(),
            crate::policy::format_size(bytes as u64)
        );
        let _ = writeln!(out, "    {}", skill.description);
        for file in &skill.files {
            let _ = writeln!(out, "    {}  {}", file.digest, file.path);
        }
    }
    // Completions complete prompts' arguments and templates' variables.
    if offers.prompts.is_empty() && offers.templates.is_empty() {
        return true;
    }
    let _ = writeln!(
        out,
        "  completions: {}",
        match offers.completes {
            true => "of its prompts' arguments and templates' variables",
            false => "none",
        }
    );
    true
}
