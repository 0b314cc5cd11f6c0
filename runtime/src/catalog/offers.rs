//! The rules a component's resources, templates, prompts and tool `_meta`
//! must follow to be loaded, and the checked declarations ([`Offers`]) a
//! component carries.
//!
//! Like tools, a component is accepted or refused as a whole: one bad
//! declaration refuses it, with an error naming the declaration and the
//! rule. Uniqueness across components (a URI, a template, a prompt name)
//! is the catalog's to check when it adds the component.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use serde_json::{Map, Value};

use super::LoadError;
use super::skills::{self, Skill};
use super::uri_template::{UriTemplate, check_uri};
use super::validate::{check_icons, check_name};
use crate::offer::{PromptInfo, ResourceInfo, TemplateInfo};
use crate::sandbox::DescribedOffers;

/// The MIME type of an MCP App's HTML (`@modelcontextprotocol/ext-apps`).
pub const APP_MIME: &str = "text/html;profile=mcp-app";

/// A template with its parsed form.
#[derive(Debug, Clone)]
pub struct Template {
    pub info: TemplateInfo,
    pub parsed: UriTemplate,
}

/// What a component offers beside its tools, checked.
#[derive(Debug, Default)]
pub struct Offers {
    pub resources: Vec<ResourceInfo>,
    pub templates: Vec<Template>,
    pub prompts: Vec<PromptInfo>,
    /// `_meta` each tool adds to its description, by tool name.
    pub tool_meta: BTreeMap<String, Map<String, Value>>,
    /// Whether it exports `completions.complete`.
    pub completes: bool,
    /// The skills it carries, in URI order; each file is in `resources`
    /// too, served from memory.
    pub skills: Vec<Skill>,
}

/// What a component without resources or prompts offers.
pub static NOTHING: Offers = Offers {
    resources: Vec::new(),
    templates: Vec::new(),
    prompts: Vec::new(),
    tool_meta: BTreeMap::new(),
    completes: false,
    skills: Vec::new(),
};

impl Offers {
    /// The skill whose file `uri` is, with the file.
    pub fn skill_file(&self, uri: &str) -> Option<(&Skill, &skills::SkillFile)> {
        self.skills
            .iter()
            .find_map(|skill| Some((skill, skill.file(uri)?)))
    }

    /// True when it offers no resource, template or prompt.
    pub fn is_empty(&self) -> bool {
        self.resources.is_empty() && self.templates.is_empty() && self.prompts.is_empty()
    }

    pub fn resource(&self, uri: &str) -> Option<&ResourceInfo> {
        self.resources.iter().find(|r| r.uri == uri)
    }

    /// The first template `uri` matches.
    pub fn template_for(&self, uri: &str) -> Option<&Template> {
        self.templates
            .iter()
            .find(|t| t.parsed.matches(uri).is_some())
    }

    /// The template written `uri_template`.
    pub fn template(&self, uri_template: &str) -> Option<&Template> {
        self.templates
            .iter()
            .find(|t| t.info.uri_template == uri_template)
    }

    pub fn prompt(&self, name: &str) -> Option<&PromptInfo> {
        self.prompts.iter().find(|p| p.name == name)
    }
}

/// What may be wrong with one declaration.
fn bad(path: &Path, what: String, rule: impl Into<String>) -> LoadError {
    LoadError::BadOffer {
        path: path.to_path_buf(),
        what,
        rule: rule.into(),
    }
}

/// A `_meta` as declared: JSON text of an object.
fn meta_object(text: &str) -> Result<Map<String, Value>, String> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(format!("_meta must be a JSON object, is {}", kind(&other))),
        Err(e) => Err(format!("_meta is not JSON: {e}")),
    }
}

/// How a JSON value is called in a message.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn check_mime(mime: &Option<String>) -> Result<(), String> {
    match mime {
        Some(m) if !m.contains('/') || m.chars().any(char::is_whitespace) && !m.contains(';') => {
            Err(format!("MIME type {m:?} is not `type/subtype`"))
        }
        _ => Ok(()),
    }
}

fn check_label(name: &str) -> Result<(), String> {
    if name.trim().is_empty() {
        return Err("name is missing".into());
    }
    if name.chars().any(char::is_control) {
        return Err(format!("name {name:?} contains control characters"));
    }
    Ok(())
}

fn check_priority(priority: Option<f64>) -> Result<(), String> {
    match priority {
        Some(p) if !(0.0..=1.0).contains(&p) => {
            Err(format!("annotations.priority must be 0 to 1, is {p}"))
        }
        _ => Ok(()),
    }
}

/// Whether two MIME types are the same, ignoring case and spaces around `;`.
fn same_mime(a: &str, b: &str) -> bool {
    let norm = |m: &str| {
        m.split(';')
            .map(|p| p.trim().to_ascii_lowercase())
            .collect::<Vec<_>>()
    };
    norm(a) == norm(b)
}

/// Checks every declaration of a component whose tools are `tools`.
pub fn check(path: &Path, described: DescribedOffers, tools: &[&str]) -> Result<Offers, LoadError> {
    let mut offers = Offers {
        completes: described.completes,
        skills: skills::check(path, described.skills)?,
        ..Offers::default()
    };
    // A skill's files are resources of their component (read from memory).
    let files: Vec<ResourceInfo> = offers.skills.iter().flat_map(Skill::resources).collect();
    let mut uris: HashSet<String> = files.iter().map(|f| f.uri.clone()).collect();
    offers.resources = files;
    for (mut resource, meta) in described.resources {
        let what = format!("resource {:?}", resource.uri);
        let rule = |rule: String| bad(path, what.clone(), rule);
        check_uri(&resource.uri).map_err(rule)?;
        if !uris.insert(resource.uri.clone()) {
            return Err(rule("declared twice in this component".into()));
        }
        check_label(&resource.name).map_err(rule)?;
        check_mime(&resource.mime_type).map_err(rule)?;
        check_priority(resource.annotations.as_ref().and_then(|a| a.priority)).map_err(rule)?;
        check_icons(&resource.icons).map_err(rule)?;
        if let Some(text) = meta {
            resource.meta = Some(meta_object(&text).map_err(rule)?);
        }
        offers.resources.push(resource);
    }
    let mut templates = HashSet::new();
    for template in described.templates {
        let what = format!("resource template {:?}", template.uri_template);
        let rule = |rule: String| bad(path, what.clone(), rule);
        let parsed = UriTemplate::parse(&template.uri_template).map_err(rule)?;
        if !templates.insert(template.uri_template.clone()) {
            return Err(rule("declared twice in this component".into()));
        }
        check_label(&template.name).map_err(rule)?;
        check_mime(&template.mime_type).map_err(rule)?;
        check_priority(template.annotations.as_ref().and_then(|a| a.priority)).map_err(rule)?;
        check_icons(&template.icons).map_err(rule)?;
        offers.templates.push(Template {
            info: template,
            parsed,
        });
    }
    let mut prompts = HashSet::new();
    for prompt in described.prompts {
        let what = format!("prompt {:?}", prompt.name);
        let rule = |rule: String| bad(path, what.clone(), rule);
        check_name(&prompt.name).map_err(rule)?;
        if !prompts.insert(prompt.name.clone()) {
            return Err(rule("declared twice in this component".into()));
        }
        check_icons(&prompt.icons).map_err(rule)?;
        let mut arguments = HashSet::new();
        for argument in &prompt.arguments {
            check_label(&argument.name)
                .map_err(|e| rule(format!("argument {:?}: {e}", argument.name)))?;
            if !arguments.insert(argument.name.as_str()) {
                return Err(rule(format!(
                    "argument {:?} is declared twice",
                    argument.name
                )));
            }
        }
        offers.prompts.push(prompt);
    }
    for (tool, text) in described.tool_meta {
        let what = format!("tool-meta of {tool:?}");
        let rule = |rule: String| bad(path, what.clone(), rule);
        if !tools.contains(&tool.as_str()) {
            return Err(rule(match tools.is_empty() {
                true => "names no tool of this component (it declares none)".into(),
                false => format!(
                    "names no tool of this component (its tools: {})",
                    tools.join(", ")
                ),
            }));
        }
        if offers.tool_meta.contains_key(&tool) {
            return Err(rule("declared twice; merge it into one".into()));
        }
        let meta = meta_object(&text).map_err(rule)?;
        check_ui_link(&meta, &offers).map_err(rule)?;
        offers.tool_meta.insert(tool, meta);
    }
    Ok(offers)
}

/// A tool's `ui.resourceUri` (MCP Apps) must name a `ui://` resource of
/// the same component, of the MCP App MIME type.
fn check_ui_link(meta: &Map<String, Value>, offers: &Offers) -> Result<(), String> {
    let Some(ui) = meta.get("ui") else {
        return Ok(());
    };
    let Value::Object(ui) = ui else {
        return Err("_meta.ui must be an object".into());
    };
    let Some(link) = ui.get("resourceUri") else {
        return Ok(());
    };
    let Value::String(uri) = link else {
        return Err("_meta.ui.resourceUri must be a string".into());
    };
    if !uri.starts_with("ui://") {
        return Err(format!(
            "_meta.ui.resourceUri {uri:?} must be a `ui://` URI (MCP Apps)"
        ));
    }
    let Some(resource) = offers.resource(uri) else {
        return Err(format!(
            "_meta.ui.resourceUri names {uri:?}, which this component does not serve; declare \
             it among its resources (MIME type {APP_MIME})"
        ));
    };
    match &resource.mime_type {
        Some(mime) if same_mime(mime, APP_MIME) => Ok(()),
        other => Err(format!(
            "_meta.ui.resourceUri names {uri:?}, whose MIME type is {}; an MCP App's UI must \
             be {APP_MIME:?}",
            other
                .as_deref()
                .map_or("not declared".into(), |m| format!("{m:?}"))
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::offer::{Annotations, PromptArgument};

    fn resource(uri: &str, mime: Option<&str>) -> ResourceInfo {
        ResourceInfo {
            uri: uri.into(),
            name: "r".into(),
            title: None,
            description: None,
            mime_type: mime.map(Into::into),
            size: None,
            annotations: None,
            icons: vec![],
            meta: None,
        }
    }

    fn template(t: &str) -> TemplateInfo {
        TemplateInfo {
            uri_template: t.into(),
            name: "t".into(),
            title: None,
            description: None,
            mime_type: None,
            annotations: None,
            icons: vec![],
        }
    }

    fn prompt(name: &str, args: &[&str]) -> PromptInfo {
        PromptInfo {
            name: name.into(),
            title: None,
            description: None,
            arguments: args
                .iter()
                .map(|a| PromptArgument {
                    name: (*a).into(),
                    title: None,
                    description: None,
                    required: false,
                })
                .collect(),
            icons: vec![],
        }
    }

    fn described() -> DescribedOffers {
        DescribedOffers {
            resources: vec![
                (resource("file:///a", Some("text/plain")), None),
                (
                    resource("ui://app/main", Some("text/html; profile=mcp-app")),
                    Some(r#"{"ui":{"csp":{}}}"#.into()),
                ),
            ],
            templates: vec![template("file:///notes/{name}")],
            tool_meta: vec![(
                "show".into(),
                r#"{"ui":{"resourceUri":"ui://app/main"}}"#.into(),
            )],
            prompts: vec![prompt("greet", &["name", "style"])],
            completes: true,
            skills: vec![],
        }
    }

    fn skill() -> crate::offer::DescribedSkill {
        let text = "---\nname: guide\ndescription: How to use the tools.\n---\n# Guide\n";
        crate::offer::DescribedSkill {
            path: "guide".into(),
            files: vec![("SKILL.md".into(), text.as_bytes().to_vec())],
        }
    }

    #[test]
    fn a_skills_files_are_resources_of_its_component() {
        let mut d = described();
        d.skills.push(skill());
        let offers = check(Path::new("x.wasm"), d, &["show"]).expect("accepted");
        let guide = offers
            .resource("skill://guide/SKILL.md")
            .expect("a resource");
        assert_eq!(guide.name, "guide");
        assert_eq!(guide.mime_type.as_deref(), Some("text/markdown"));
        let (served, file) = offers.skill_file("skill://guide/SKILL.md").expect("served");
        assert_eq!(
            (served.name.as_str(), file.path.as_str()),
            ("guide", "SKILL.md")
        );
        // A resource the component declares at one of its skill's URIs.
        let e = refused(|d| {
            d.skills.push(skill());
            d.resources.push((
                resource("skill://guide/SKILL.md", Some("text/markdown")),
                None,
            ));
        });
        assert!(
            e.contains("resource \"skill://guide/SKILL.md\": declared twice"),
            "{e}"
        );
    }

    fn refused(change: impl FnOnce(&mut DescribedOffers)) -> String {
        let mut d = described();
        change(&mut d);
        check(Path::new("x.wasm"), d, &["show", "other"])
            .map(|_| ())
            .expect_err("refused")
            .to_string()
    }

    #[test]
    fn a_good_declaration_loads() {
        let offers = check(Path::new("x.wasm"), described(), &["show"]).expect("loads");
        assert_eq!(offers.resources.len(), 2);
        assert!(offers.template_for("file:///notes/today.md").is_some());
        assert!(offers.resource("file:///a").is_some());
        assert!(
            offers.resource("file:///b").is_none() && offers.template_for("file:///b").is_none()
        );
        assert_eq!(
            offers.tool_meta["show"]["ui"]["resourceUri"],
            "ui://app/main"
        );
        assert!(offers.resources[1].meta.is_some());
    }

    #[test]
    fn resources_follow_the_rules() {
        let e = refused(|d| d.resources[0].0.uri = "relative/path".into());
        assert!(
            e.contains("resource \"relative/path\"") && e.contains("absolute URI"),
            "{e}"
        );
        let e = refused(|d| d.resources[1].0.uri = "file:///a".into());
        assert!(e.contains("declared twice"), "{e}");
        let e = refused(|d| d.resources[0].0.name = " ".into());
        assert!(e.contains("name is missing"), "{e}");
        let e = refused(|d| d.resources[0].1 = Some("[1]".into()));
        assert!(
            e.contains("_meta must be a JSON object, is an array"),
            "{e}"
        );
        let e = refused(|d| d.resources[0].1 = Some("{".into()));
        assert!(e.contains("_meta is not JSON"), "{e}");
        let e = refused(|d| d.resources[0].0.mime_type = Some("text".into()));
        assert!(e.contains("type/subtype"), "{e}");
        let e = refused(|d| {
            d.resources[0].0.annotations = Some(Annotations {
                priority: Some(2.0),
                ..Annotations::default()
            })
        });
        assert!(e.contains("priority must be 0 to 1"), "{e}");
    }

    #[test]
    fn icons_are_https_or_image_data_for_resources_templates_and_prompts() {
        let icon = |src: &str| {
            vec![crate::tool::Icon {
                src: src.into(),
                mime_type: None,
                sizes: vec![],
            }]
        };
        let e = refused(|d| d.resources[0].0.icons = icon("javascript:alert(1)"));
        assert!(
            e.contains("resource \"file:///a\": icon \"javascript:alert(1)\": an icon's src"),
            "{e}"
        );
        let e = refused(|d| d.templates[0].icons = icon("file:///etc/passwd"));
        assert!(
            e.contains("resource template") && e.contains("an icon's src"),
            "{e}"
        );
        let e = refused(|d| d.prompts[0].icons = icon("http://example.com/a.png"));
        assert!(
            e.contains("prompt \"greet\"") && e.contains("an icon's src"),
            "{e}"
        );
        let mut d = described();
        d.prompts[0].icons = icon("https://cdn.example.com/greet.png");
        d.resources[0].0.icons = icon("data:image/png;base64,AAAA");
        assert!(check(Path::new("x.wasm"), d, &["show"]).is_ok());
    }

    #[test]
    fn templates_are_level_one_and_unique() {
        let e = refused(|d| d.templates[0].uri_template = "file:///{+path}".into());
        assert!(
            e.contains("resource template") && e.contains("level 1"),
            "{e}"
        );
        let e = refused(|d| d.templates.push(template("file:///notes/{name}")));
        assert!(e.contains("declared twice"), "{e}");
    }

    #[test]
    fn prompts_follow_the_tool_name_rules() {
        let e = refused(|d| d.prompts[0].name = "say hi".into());
        assert!(e.contains("prompt \"say hi\"") && e.contains("' '"), "{e}");
        let e = refused(|d| d.prompts.push(prompt("greet", &[])));
        assert!(e.contains("declared twice"), "{e}");
        let e = refused(|d| d.prompts[0] = prompt("greet", &["name", "name"]));
        assert!(e.contains("argument \"name\" is declared twice"), "{e}");
        let e = refused(|d| d.prompts[0] = prompt("greet", &[""]));
        assert!(e.contains("name is missing"), "{e}");
    }

    #[test]
    fn tool_meta_names_a_tool_and_a_served_app() {
        let e = refused(|d| d.tool_meta[0].0 = "ghost".into());
        assert!(
            e.contains("names no tool of this component (its tools: show, other)"),
            "{e}"
        );
        let e = refused(|d| d.tool_meta.push(("show".into(), "{}".into())));
        assert!(e.contains("declared twice"), "{e}");
        let e = refused(|d| d.tool_meta[0].1 = "3".into());
        assert!(
            e.contains("_meta must be a JSON object, is a number"),
            "{e}"
        );
        let e = refused(|d| d.tool_meta[0].1 = r#"{"ui":{"resourceUri":"ui://app/other"}}"#.into());
        assert!(e.contains("does not serve"), "{e}");
        let e = refused(|d| d.tool_meta[0].1 = r#"{"ui":{"resourceUri":"file:///a"}}"#.into());
        assert!(e.contains("must be a `ui://` URI"), "{e}");
        let e = refused(|d| d.resources[1].0.mime_type = Some("text/html".into()));
        assert!(e.contains("must be \"text/html;profile=mcp-app\""), "{e}");
        let e = refused(|d| d.tool_meta[0].1 = r#"{"ui":"ui://app/main"}"#.into());
        assert!(e.contains("_meta.ui must be an object"), "{e}");
        // A tool's other `_meta` needs no resource.
        let mut d = described();
        d.tool_meta[0].1 = r#"{"vendor/x":1}"#.into();
        assert!(check(Path::new("x.wasm"), d, &["show"]).is_ok());
    }
}
