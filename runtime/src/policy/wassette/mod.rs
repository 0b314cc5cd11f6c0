//! `airlock policy import`: a wassette per-component policy (the YAML of
//! microsoft/policy-mcp, `{component}.policy.yaml`) turned into the
//! equivalent section of an airlock policy, with a note for everything
//! that could not be carried over as it was.
//!
//! The import never widens: what airlock cannot express exactly is left
//! out or narrowed, and said so. The mapping:
//!
//! | wassette | airlock |
//! | --- | --- |
//! | `storage.allow` `fs://PATH` (`/**` allowed at the end), `access: [read]` | `folders`, `mode = "read-only"`, host `PATH` (relative to the policy's folder, as wassette resolves it), guest `PATH` made absolute |
//! | … `access: [read, write]` | `mode = "read-write"` (create-only or read-only by the tool's hints) |
//! | … `access: [write]` | left out: airlock has no write-only folder |
//! | … a glob other than a trailing `/**`, a file, a folder inside another | left out: airlock mounts whole folders, never nested |
//! | `network.allow` `host` / `cidr` | `network` (a URL's path dropped) |
//! | `network.allow` `defaults: true` | left out: list the hosts the tool needs |
//! | `environment.allow` `key` | `env = { KEY = { from = "KEY" } }` |
//! | `resources.limits.memory` (`512Mi`, `1Gi`, `128M`), `resources.memory` (MB) | `limits.memory` |
//! | `resources.limits.execution_time`, `fuel` | `limits.time`, `limits.fuel` |
//! | `storage.deny`, `network.deny`, `cpu`, `io`, `runtime`, `ipc` | not converted (wassette does not enforce them either, or airlock has no such limit) |

mod section;
mod write;
mod yaml;

use std::path::Path;

use saphyr::{LoadableYamlNode, Scalar, YamlData};

use super::HostPattern;
use super::folders::inside;
use super::units::{format_size, parse_time};
use section::{Folder, Mode, Section};
use write::{mode_name, toml_key};
pub use yaml::ImportError;
use yaml::{Node, at, field, field_text, mapping, scalar_text, sequence, unknown, unsigned};

/// The most memory an instance can be given (the pool's slot size).
const MAX_MEMORY: u64 = 1 << 30;

/// A converted policy: the TOML, and what was changed on the way.
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    pub toml: String,
    /// One line each, starting with `tightened:`, `left out:` or `note:`.
    pub notes: Vec<String>,
}

/// Converts the wassette policy `yaml` (read from a file in `base`) into
/// the policy section of component `component`.
pub fn import(yaml: &str, component: &str, base: &Path) -> Result<Imported, ImportError> {
    let docs = Node::load_from_str(yaml).map_err(|e| ImportError {
        line: e.marker().line(),
        column: e.marker().col() + 1,
        message: e.info().to_string(),
    })?;
    let root = docs.first().ok_or_else(|| ImportError {
        line: 1,
        column: 1,
        message: "the file holds no YAML document".into(),
    })?;
    let mut section = Section::default();
    for (key, key_node, value) in mapping(root)? {
        match key {
            "version" => {
                let version = scalar_text(value)?;
                if !version.starts_with("1.") && version != "1" {
                    return Err(at(
                        value,
                        format!("version {version:?}: only wassette's version 1.x is known"),
                    ));
                }
            }
            "description" => section.description = Some(scalar_text(value)?),
            "permissions" => permissions(&mut section, value, base)?,
            // Where an editor finds the schema (policy-mcp's v1.json); says
            // nothing about the permissions.
            "$schema" => {}
            other => {
                return Err(unknown(
                    key_node,
                    other,
                    "version, description, permissions, $schema",
                ));
            }
        }
    }
    section.finish(component);
    let toml = section.toml(component);
    Ok(Imported {
        toml,
        notes: section.notes,
    })
}

fn permissions(section: &mut Section, node: &Node, base: &Path) -> Result<(), ImportError> {
    for (key, key_node, value) in mapping(node)? {
        match key {
            "storage" => storage(section, value, base)?,
            "network" => network(section, value)?,
            "environment" => environment(section, value)?,
            "resources" => resources(section, value)?,
            "runtime" | "ipc" => section.notes.push(format!(
                "left out: permissions.{key} (runtime and IPC settings of other hosts); \
                 airlock runs every component in its own sandbox"
            )),
            other => {
                return Err(unknown(
                    key_node,
                    other,
                    "storage, network, environment, resources, runtime, ipc",
                ));
            }
        }
    }
    Ok(())
}

fn storage(section: &mut Section, node: &Node, base: &Path) -> Result<(), ImportError> {
    for (key, key_node, value) in mapping(node)? {
        match key {
            "allow" => {
                for entry in sequence(value)? {
                    if let Some(folder) = storage_entry(section, entry, base)? {
                        section.add_folder(folder);
                    }
                }
            }
            "deny" => {
                for entry in sequence(value)? {
                    let uri = field_text(entry, "uri")?;
                    section.notes.push(format!(
                        "left out: storage.deny {uri} (wassette does not enforce deny rules \
                         either); airlock denies everything not granted, so narrow a granted \
                         folder by hand if this lies inside one"
                    ));
                }
            }
            other => return Err(unknown(key_node, other, "allow, deny")),
        }
    }
    Ok(())
}

/// One `storage.allow` entry as a folder, or `None` (with a note) when
/// airlock cannot grant it as written.
fn storage_entry(
    section: &mut Section,
    entry: &Node,
    base: &Path,
) -> Result<Option<Folder>, ImportError> {
    let uri = field_text(entry, "uri")?;
    let access_node = field(entry, "access")?;
    let mut read = false;
    let mut write = false;
    for access in sequence(access_node)? {
        match scalar_text(access)?.as_str() {
            "read" => read = true,
            "write" => write = true,
            other => {
                return Err(at(
                    access,
                    format!("access {other:?}: expected \"read\" or \"write\""),
                ));
            }
        }
    }
    let Some(path) = uri.strip_prefix("fs://") else {
        section.notes.push(format!(
            "left out: storage {uri}: only fs:// URIs are folders (wassette skips the others too)"
        ));
        return Ok(None);
    };
    let path = path.strip_suffix("/**").unwrap_or(path);
    if path.contains(['*', '?', '[']) {
        section.notes.push(format!(
            "left out: storage {uri}: airlock grants whole folders, not patterns; grant the \
             folder if the tool may see all of it"
        ));
        return Ok(None);
    }
    let mode = match (read, write) {
        (_, true) if !read => {
            section.notes.push(format!(
                "left out: storage {uri} (write-only): airlock has no write-only folder; grant \
                 it with mode = \"read-write\" by hand if the tool needs it"
            ));
            return Ok(None);
        }
        (_, true) => Mode::ReadWrite,
        _ => Mode::ReadOnly,
    };
    let host = base.join(path);
    if host.is_file() {
        section.notes.push(format!(
            "left out: storage {uri} is a file; airlock grants folders (grant its folder by \
             hand if the tool may see all of it)"
        ));
        return Ok(None);
    }
    let trimmed = path.trim_end_matches('/');
    let guest = if path.starts_with('/') {
        if trimmed.is_empty() { "/" } else { trimmed }.to_string()
    } else {
        section.notes.push(format!(
            "note: storage {uri} is relative: the folder is {} on the host (next to the \
             policy, as wassette resolves it) and /{trimmed} in the guest",
            host.display()
        ));
        format!("/{trimmed}")
    };
    if !host.is_dir() {
        section.notes.push(format!(
            "note: {} does not exist yet; airlock refuses a policy whose folder is missing",
            host.display()
        ));
    }
    Ok(Some(Folder {
        uri,
        host,
        guest,
        mode,
    }))
}

fn network(section: &mut Section, node: &Node) -> Result<(), ImportError> {
    for (key, key_node, value) in mapping(node)? {
        match key {
            "allow" => {
                for entry in sequence(value)? {
                    network_entry(section, entry)?;
                }
            }
            "deny" => section.notes.push(
                "left out: network.deny (wassette does not enforce deny rules either); airlock \
                 reaches only the hosts listed"
                    .into(),
            ),
            other => return Err(unknown(key_node, other, "allow, deny")),
        }
    }
    Ok(())
}

fn network_entry(section: &mut Section, entry: &Node) -> Result<(), ImportError> {
    let mut pattern = None;
    for (key, key_node, value) in mapping(entry)? {
        match key {
            "host" | "cidr" => pattern = Some((value, scalar_text(value)?)),
            "defaults" => section.notes.push(
                "left out: network defaults (policy-mcp's list of common hosts); list the \
                 hosts the tool needs"
                    .into(),
            ),
            other => return Err(unknown(key_node, other, "host, cidr, defaults")),
        }
    }
    let Some((node, written)) = pattern else {
        return Ok(());
    };
    // A URL as wassette's examples write it (`https://rss.nytimes.com/`):
    // airlock lists hosts, so the path goes.
    let host = match written.split_once("://") {
        Some((scheme, rest)) => {
            let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
            if authority.len() + 1 < rest.len() {
                section.notes.push(format!(
                    "tightened: network {written}: airlock allows hosts, not paths; the host \
                     {scheme}://{authority} is listed"
                ));
            }
            format!("{scheme}://{authority}")
        }
        None => written.clone(),
    };
    match host.parse::<HostPattern>() {
        Ok(_) => {
            if !section.network.contains(&host) {
                section.network.push(host);
            }
            Ok(())
        }
        Err(e) => Err(at(node, e.to_string())),
    }
}

fn environment(section: &mut Section, node: &Node) -> Result<(), ImportError> {
    for (key, key_node, value) in mapping(node)? {
        match key {
            "allow" => {
                for entry in sequence(value)? {
                    let name = field_text(entry, "key")?;
                    if name.is_empty() || name.contains(['=', '\0', '*']) {
                        return Err(at(
                            entry,
                            format!("{name:?} is not an environment variable name"),
                        ));
                    }
                    if !section.env.contains(&name) {
                        section.env.push(name);
                    }
                }
            }
            "deny" => section
                .notes
                .push("left out: environment.deny; airlock passes only the keys listed".into()),
            other => return Err(unknown(key_node, other, "allow, deny")),
        }
    }
    Ok(())
}

fn resources(section: &mut Section, node: &Node) -> Result<(), ImportError> {
    for (key, key_node, value) in mapping(node)? {
        match key {
            "limits" => {
                for (key, key_node, value) in mapping(value)? {
                    match key {
                        "memory" | "memory_limit" => {
                            section.memory = Some(k8s_memory(value)?);
                        }
                        "execution_time" => {
                            let text = scalar_text(value)?;
                            parse_time(&text).map_err(|e| at(value, e))?;
                            section.time = Some(text);
                        }
                        "fuel" => section.fuel = Some(unsigned(value)?),
                        "cpu" => section.notes.push(cpu_note()),
                        other => {
                            return Err(unknown(
                                key_node,
                                other,
                                "memory, cpu, execution_time, fuel",
                            ));
                        }
                    }
                }
            }
            // The older numeric form: megabytes (wassette multiplies by 2^20).
            "memory" => {
                if section.memory.is_none() {
                    section.memory = Some(unsigned(value)? << 20);
                }
            }
            "cpu" => section.notes.push(cpu_note()),
            "io" => section.notes.push(
                "left out: resources.io; airlock bounds bytes written into folders instead \
                 (limits.write)"
                    .into(),
            ),
            other => return Err(unknown(key_node, other, "limits, memory, cpu, io")),
        }
    }
    Ok(())
}

fn cpu_note() -> String {
    "left out: a CPU limit; airlock bounds each call's wall time (limits.time) and, if asked, \
     its instructions (limits.fuel)"
        .into()
}

/// A Kubernetes-style quantity (`512Mi`, `1Gi`, `256Ki`, `128M`, `1G`,
/// plain bytes) in bytes.
fn k8s_memory(node: &Node) -> Result<u64, ImportError> {
    if let YamlData::Value(Scalar::Integer(n)) = &node.data {
        // A bare number under `limits` is megabytes, as in the older form.
        return u64::try_from(*n)
            .map(|n| n << 20)
            .map_err(|_| at(node, "memory may not be negative".into()));
    }
    let text = scalar_text(node)?;
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let number: u64 = text[..digits]
        .parse()
        .map_err(|_| at(node, format!("memory {text:?} is not a number with a unit")))?;
    let factor: u64 = match &text[digits..] {
        "" => 1,
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        "Ti" => 1 << 40,
        "k" | "K" => 1_000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        "T" => 1_000_000_000_000,
        other => {
            return Err(at(
                node,
                format!("memory unit {other:?}: expected Ki, Mi, Gi, Ti, K, M, G or T"),
            ));
        }
    };
    number
        .checked_mul(factor)
        .ok_or_else(|| at(node, format!("memory {text:?} is too large")))
}

/// Why `inner` is not granted on its own: it lies inside `outer` (a
/// tightening when it asked for more than `outer` gives).
fn nested_note(inner: &Folder, outer: &Folder) -> String {
    let narrowed = inner.mode == Mode::ReadWrite && outer.mode == Mode::ReadOnly;
    format!(
        "{}: storage {} lies inside {}, which is granted {}; airlock does not nest folders",
        if narrowed { "tightened" } else { "note" },
        inner.uri,
        outer.uri,
        mode_name(outer.mode)
    )
}

impl Section {
    /// Adds a folder, unless one contains it or it contains one: airlock
    /// does not nest mounts, so the outer one stays (and says so when the
    /// inner asked for more).
    fn add_folder(&mut self, folder: Folder) {
        if let Some(outer) = self
            .folders
            .iter()
            .find(|f| inside(&f.guest, &folder.guest))
        {
            let note = nested_note(&folder, outer);
            self.notes.push(note);
            return;
        }
        let (inner, rest): (Vec<Folder>, Vec<Folder>) = std::mem::take(&mut self.folders)
            .into_iter()
            .partition(|f| inside(&folder.guest, &f.guest));
        for f in &inner {
            self.notes.push(nested_note(f, &folder));
        }
        self.folders = rest;
        self.folders.push(folder);
    }

    /// The notes every import gets: what airlock enforces that wassette
    /// does not.
    fn finish(&mut self, component: &str) {
        let tool = format!("[components.{}]", toml_key(component));
        if self.folders.iter().any(|f| f.mode == Mode::ReadWrite) {
            self.notes.push(format!(
                "tightened: a read-write folder is read-write only for a destructive tool (with \
                 `destructive = \"allow\"` or \"confirm\"), create-only for a tool that declares \
                 neither read-only nor destructive, read-only for a read-only one; a plain \
                 function declares no hints: declare them in {tool} (or a tool section) hints = [...]"
            ));
        }
        if !self.network.is_empty() {
            self.notes.push(format!(
                "tightened: only open-world tools reach the listed hosts (a plain function is \
                 not, unless {tool} hints = [\"open-world\", ...]); read-only tools may only \
                 GET, HEAD and OPTIONS; names must resolve to public addresses unless a CIDR \
                 lists them"
            ));
            if self.network.iter().any(|h| h.starts_with("https://")) {
                self.notes.push(
                    "note: airlock does not serve https requests yet (no TLS client is linked): \
                     an https host is listed but refused at the call"
                        .into(),
                );
            }
        }
        if self.time.is_none() {
            self.notes.push(
                "tightened: wassette sets no time limit; each call ends after limits.time \
                 (default 5s)"
                    .into(),
            );
        }
        match self.memory {
            None => self.notes.push(
                "tightened: wassette sets no memory limit here; airlock's default is 64 MiB \
                 (limits.memory)"
                    .into(),
            ),
            Some(m) if m > MAX_MEMORY => {
                self.notes.push(format!(
                    "tightened: memory {} is more than an instance holds; limited to {}",
                    format_size(m),
                    format_size(MAX_MEMORY)
                ));
                self.memory = Some(MAX_MEMORY);
            }
            Some(_) => {}
        }
    }
}

#[cfg(test)]
mod tests;
