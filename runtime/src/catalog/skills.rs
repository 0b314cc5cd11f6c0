//! The Agent Skills a component carries (contract 0.1.2), checked at load
//! like its tools: the rules of the Agent Skills specification
//! (agentskills.io: a `SKILL.md` at the root with YAML front matter, a
//! `name` of lowercase letters, digits and single hyphens, at most 64
//! characters, equal to the skill's folder; a `description` of 1 to 1024
//! characters) and the MCP Skills extension's (at most 512 files and 16 MiB
//! a skill; `skill://<path>/<file>` URIs). The digest of every file is
//! computed here, never taken from the guest; the files are kept in memory
//! and served from there, each one also a resource of its component (so
//! resources/list, the claims of URIs and tokens treat them as resources).

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use saphyr::{LoadableYamlNode, Scalar, Yaml};
use serde_json::{Map, Number, Value};

use super::LoadError;
use crate::offer::{DescribedSkill, ResourceInfo};

/// The scheme skills are served under.
pub const SCHEME: &str = "skill://";
/// The file every skill has at its root.
pub const SKILL_MD: &str = "SKILL.md";
/// The MIME type of a directory (`resources/directory/read`).
pub const DIRECTORY_MIME: &str = "inode/directory";
/// The most files a skill may hold, `SKILL.md` included.
pub const MAX_FILES: usize = 512;
/// The most bytes a skill's files may hold together.
pub const MAX_BYTES: usize = 16 * 1024 * 1024;
/// The longest `description` (Agent Skills).
const MAX_DESCRIPTION: usize = 1024;
/// The longest `compatibility` (Agent Skills).
const MAX_COMPATIBILITY: usize = 500;

/// One checked skill, served from memory.
#[derive(Debug, Clone)]
pub struct Skill {
    /// `skill://<path>/SKILL.md`: what identifies it.
    pub uri: String,
    /// `skill://<path>`: its root directory.
    pub root: String,
    pub name: String,
    pub description: String,
    /// The front matter as written, as JSON (name and description in it).
    pub frontmatter: Map<String, Value>,
    /// Its files in path order, `SKILL.md` among them.
    pub files: Vec<SkillFile>,
}

/// One file of a skill.
#[derive(Debug, Clone)]
pub struct SkillFile {
    pub uri: String,
    /// Its path inside the skill.
    pub path: String,
    pub mime_type: &'static str,
    /// `sha256:<64 lowercase hex>` of its bytes, computed here.
    pub digest: String,
    pub bytes: Arc<[u8]>,
}

impl Skill {
    /// The file at `uri`.
    pub fn file(&self, uri: &str) -> Option<&SkillFile> {
        self.files.iter().find(|f| f.uri == uri)
    }

    /// Whether `uri` is this skill's root or one of its folders.
    pub fn is_directory(&self, uri: &str) -> bool {
        uri == self.root
            || uri.strip_prefix(&self.root).is_some_and(|rest| {
                rest.starts_with('/')
                    && !rest.ends_with('/')
                    && self
                        .files
                        .iter()
                        .any(|f| f.uri.starts_with(&format!("{uri}/")))
            })
    }

    /// Every file as the resource it also is: `SKILL.md` named and
    /// described by its front matter, the others by their file name.
    pub fn resources(&self) -> impl Iterator<Item = ResourceInfo> + '_ {
        self.files.iter().map(|file| {
            let skill_md = file.path == SKILL_MD;
            ResourceInfo {
                uri: file.uri.clone(),
                name: if skill_md {
                    self.name.clone()
                } else {
                    last_segment(&file.path).to_string()
                },
                title: None,
                description: skill_md.then(|| self.description.clone()),
                mime_type: Some(file.mime_type.to_string()),
                size: Some(file.bytes.len() as u64),
                annotations: None,
                icons: Vec::new(),
                meta: None,
            }
        })
    }

    /// The skill's entry (`skills/list`, `skills/get`): its URI, its front
    /// matter verbatim, and every file with its digest and size.
    pub fn entry(&self) -> Value {
        let resources: Vec<Value> = self
            .files
            .iter()
            .map(|f| serde_json::json!({ "uri": f.uri, "digest": f.digest, "size": f.bytes.len() }))
            .collect();
        serde_json::json!({
            "uri": self.uri,
            "frontmatter": self.frontmatter,
            "resources": resources,
        })
    }
}

fn last_segment(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Checks every skill a component declares; `Err` names the skill and the
/// rule it breaks.
pub fn check(path: &Path, described: Vec<DescribedSkill>) -> Result<Vec<Skill>, LoadError> {
    let mut skills: Vec<Skill> = Vec::new();
    for skill in described {
        let what = format!("skill {:?}", skill.path);
        let checked = check_one(skill).map_err(|rule| LoadError::BadOffer {
            path: path.to_path_buf(),
            what: what.clone(),
            rule,
        })?;
        if skills.iter().any(|s| s.uri == checked.uri) {
            return Err(LoadError::BadOffer {
                path: path.to_path_buf(),
                what,
                rule: "declared twice in this component".into(),
            });
        }
        skills.push(checked);
    }
    skills.sort_by(|a, b| a.uri.cmp(&b.uri));
    Ok(skills)
}

/// One skill, checked.
fn check_one(skill: DescribedSkill) -> Result<Skill, String> {
    let segments: Vec<&str> = skill.path.split('/').collect();
    for segment in &segments {
        check_segment(segment).map_err(|rule| format!("its path {:?}: {rule}", skill.path))?;
    }
    let folder = segments.last().copied().unwrap_or_default();
    check_name(folder).map_err(|rule| format!("its folder {folder:?}: {rule}"))?;
    if skill.files.len() > MAX_FILES {
        return Err(format!(
            "it holds {} files, more than the {MAX_FILES} a skill may (MCP Skills extension); \
             split it",
            skill.files.len()
        ));
    }
    let total: usize = skill.files.iter().map(|(_, bytes)| bytes.len()).sum();
    if total > MAX_BYTES {
        return Err(format!(
            "its files hold {total} bytes, more than the 16 MiB a skill may (MCP Skills \
             extension); move what is large out of it"
        ));
    }
    let root = format!("{SCHEME}{}", skill.path);
    let mut seen = BTreeSet::new();
    let mut files = Vec::with_capacity(skill.files.len());
    for (file, bytes) in skill.files {
        check_file_path(&file).map_err(|rule| format!("file {file:?}: {rule}"))?;
        if !seen.insert(file.clone()) {
            return Err(format!("file {file:?} is listed twice"));
        }
        files.push(SkillFile {
            uri: format!("{root}/{file}"),
            mime_type: mime_of(&file, &bytes),
            digest: format!("sha256:{}", super::sha256_hex(&bytes)),
            path: file,
            bytes: bytes.into(),
        });
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    let skill_md = files
        .iter()
        .find(|f| f.path == SKILL_MD)
        .ok_or("it has no SKILL.md at its root: add one")?;
    let frontmatter = front_matter(&skill_md.bytes)?;
    let name = text_field(&frontmatter, "name")?;
    check_name(&name).map_err(|rule| format!("`name` {name:?}: {rule}"))?;
    if name != folder {
        return Err(format!(
            "`name` is {name:?} but its folder is {folder:?}: they must be the same (Agent \
             Skills); rename one"
        ));
    }
    let description = text_field(&frontmatter, "description")?;
    if description.trim().is_empty() || description.chars().count() > MAX_DESCRIPTION {
        return Err(format!(
            "`description` must say what the skill does and when to use it in 1 to \
             {MAX_DESCRIPTION} characters (it has {})",
            description.chars().count()
        ));
    }
    check_optional_fields(&frontmatter)?;
    Ok(Skill {
        uri: format!("{root}/{SKILL_MD}"),
        root,
        name,
        description,
        frontmatter,
        files,
    })
}

/// The Agent Skills rule for a skill's `name` (and so its folder's).
pub fn check_name(name: &str) -> Result<(), String> {
    let valid = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--");
    if valid {
        Ok(())
    } else {
        Err(
            "a skill's name is 1 to 64 lowercase letters, digits and single hyphens, not \
             starting or ending with one"
                .into(),
        )
    }
}

/// A segment of a URI path that needs no escaping (RFC 3986 `pchar`
/// without `%`), and is not `.` or `..`.
fn check_segment(segment: &str) -> Result<(), String> {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-._~!$&'()*+,;=:@".contains(c);
    if segment.is_empty() || segment == "." || segment == ".." {
        return Err(format!("{segment:?} is not a name (empty, `.` or `..`)"));
    }
    if let Some(c) = segment.chars().find(|c| !plain(*c)) {
        return Err(format!(
            "{segment:?} holds {c:?}, which a skill:// URI cannot carry as it is; use \
             letters, digits and `-._~`"
        ));
    }
    Ok(())
}

fn check_file_path(path: &str) -> Result<(), String> {
    if path.starts_with('/') {
        return Err("a path inside the skill is relative".into());
    }
    path.split('/').try_for_each(check_segment)
}

/// The MIME type of a file, by its extension; text without a known one is
/// `text/plain`, anything else `application/octet-stream`.
fn mime_of(path: &str, bytes: &[u8]) -> &'static str {
    let extension = last_segment(path)
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase());
    match extension.as_deref() {
        Some("md" | "markdown") => "text/markdown",
        Some("txt") => "text/plain",
        Some("json") => "application/json",
        Some("yaml" | "yml") => "application/yaml",
        Some("toml") => "application/toml",
        Some("csv") => "text/csv",
        Some("html" | "htm") => "text/html",
        Some("py") => "text/x-python",
        Some("sh") => "text/x-shellscript",
        Some("js" | "mjs") => "text/javascript",
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("svg") => "image/svg+xml",
        Some("pdf") => "application/pdf",
        _ if std::str::from_utf8(bytes).is_ok() => "text/plain",
        _ => "application/octet-stream",
    }
}

/// The YAML front matter of a `SKILL.md`, as JSON: between a first line
/// `---` and the next line `---`.
pub fn front_matter(bytes: &[u8]) -> Result<Map<String, Value>, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "SKILL.md is not UTF-8 text")?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let missing = "SKILL.md must begin with YAML front matter: a line `---`, `name:` and \
                   `description:`, and a line `---`";
    let body = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or(missing)?;
    let end = body
        .lines()
        .scan(0usize, |at, line| {
            let start = *at;
            *at += line.len() + 1;
            Some((start, line))
        })
        .find(|(_, line)| line.trim_end() == "---")
        .map(|(start, _)| start)
        .ok_or(missing)?;
    let yaml = &body[..end];
    let docs =
        Yaml::load_from_str(yaml).map_err(|e| format!("its front matter is not YAML: {e}"))?;
    match docs.into_iter().next().map(|doc| to_json(&doc)) {
        Some(Ok(Value::Object(map))) => Ok(map),
        Some(Err(e)) => Err(format!("its front matter: {e}")),
        _ => Err(missing.into()),
    }
}

/// A YAML node as JSON; what JSON cannot say is refused.
fn to_json(node: &Yaml) -> Result<Value, String> {
    Ok(match node {
        Yaml::Value(scalar) => match scalar {
            Scalar::Null => Value::Null,
            Scalar::Boolean(b) => Value::Bool(*b),
            Scalar::Integer(n) => Value::from(*n),
            Scalar::FloatingPoint(f) => Number::from_f64(f.into_inner())
                .map(Value::Number)
                .ok_or("a number that JSON cannot hold (.inf or .nan)")?,
            Scalar::String(s) => Value::String(s.to_string()),
        },
        Yaml::Sequence(items) => Value::Array(items.iter().map(to_json).collect::<Result<_, _>>()?),
        Yaml::Mapping(map) => {
            let mut object = Map::new();
            for (key, value) in map {
                let key = match key {
                    Yaml::Value(Scalar::String(s)) => s.to_string(),
                    Yaml::Value(Scalar::Integer(n)) => n.to_string(),
                    Yaml::Value(Scalar::Boolean(b)) => b.to_string(),
                    _ => return Err("a key that is not text".into()),
                };
                if object.insert(key.clone(), to_json(value)?).is_some() {
                    return Err(format!("key {key:?} is written twice"));
                }
            }
            Value::Object(object)
        }
        Yaml::Tagged(_, inner) => to_json(inner)?,
        Yaml::Alias(_) => return Err("aliases (*name) are not supported; write the value".into()),
        Yaml::Representation(..) | Yaml::BadValue => return Err("a value YAML cannot read".into()),
    })
}

fn text_field(frontmatter: &Map<String, Value>, key: &str) -> Result<String, String> {
    match frontmatter.get(key) {
        Some(Value::String(text)) => Ok(text.clone()),
        Some(_) => Err(format!("`{key}` in the front matter must be text")),
        None => Err(format!("the front matter has no `{key}`: add one")),
    }
}

/// The optional fields the Agent Skills specification defines, when given.
fn check_optional_fields(frontmatter: &Map<String, Value>) -> Result<(), String> {
    for key in ["license", "allowed-tools"] {
        if frontmatter.get(key).is_some_and(|v| !v.is_string()) {
            return Err(format!("`{key}` in the front matter must be text"));
        }
    }
    match frontmatter.get("compatibility") {
        Some(Value::String(text)) if text.chars().count() > MAX_COMPATIBILITY => Err(format!(
            "`compatibility` is longer than {MAX_COMPATIBILITY} characters"
        )),
        Some(Value::String(_)) | None => Ok(()),
        Some(_) => Err("`compatibility` in the front matter must be text".into()),
    }?;
    match frontmatter.get("metadata") {
        Some(Value::Object(_)) | None => Ok(()),
        Some(_) => Err("`metadata` in the front matter must be a mapping (key: value)".into()),
    }
}

#[cfg(test)]
mod tests;
