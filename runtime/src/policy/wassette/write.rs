//! Writing the converted section as airlock policy TOML.

use std::fmt::Write as _;

use super::section::{Mode, Section};

impl Section {
    pub(super) fn toml(&self, component: &str) -> String {
        let key = toml_key(component);
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# The component `{component}`, converted from a wassette policy by `airlock policy \
             import`\n# (what it tightened or left out is on its stderr; check the result with \
             `airlock check`)."
        );
        if let Some(description) = &self.description {
            let _ = writeln!(out, "# wassette: {}", description.replace('\n', " "));
        }
        let _ = writeln!(out, "\n[components.{key}]");
        if !self.folders.is_empty() {
            out.push_str("folders = [\n");
            for f in &self.folders {
                let _ = writeln!(
                    out,
                    "    {{ host = {}, guest = {}, mode = \"{}\" }},",
                    toml_string(&f.host.to_string_lossy()),
                    toml_string(&f.guest),
                    mode_name(f.mode)
                );
            }
            out.push_str("]\n");
        }
        if !self.network.is_empty() {
            let hosts: Vec<String> = self.network.iter().map(|h| toml_string(h)).collect();
            let _ = writeln!(out, "network = [{}]", hosts.join(", "));
        }
        if !self.env.is_empty() {
            let vars: Vec<String> = self
                .env
                .iter()
                .map(|k| format!("{} = {{ from = {} }}", toml_key(k), toml_string(k)))
                .collect();
            let _ = writeln!(out, "env = {{ {} }}", vars.join(", "));
        }
        let mut limits = Vec::new();
        if let Some(memory) = self.memory {
            limits.push(format!("memory = {}", toml_size(memory)));
        }
        if let Some(time) = &self.time {
            limits.push(format!("time = {}", toml_string(time)));
        }
        if let Some(fuel) = self.fuel {
            limits.push(format!("fuel = {fuel}"));
        }
        if !limits.is_empty() {
            let _ = writeln!(out, "\n[components.{key}.limits]\n{}", limits.join("\n"));
        }
        out
    }
}

pub(super) fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::ReadOnly => "read-only",
        Mode::ReadWrite => "read-write",
    }
}

/// A size as airlock writes it: whole KiB, MiB or GiB where exact, else
/// bytes.
pub(super) fn toml_size(bytes: u64) -> String {
    for (shift, unit) in [(30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if bytes >= 1 << shift && bytes.is_multiple_of(1 << shift) {
            return format!("\"{}{unit}\"", bytes >> shift);
        }
    }
    bytes.to_string()
}

/// A TOML basic string.
pub(super) fn toml_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A TOML key: bare where it may be, else quoted.
pub(super) fn toml_key(key: &str) -> String {
    if !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        key.to_string()
    } else {
        toml_string(key)
    }
}
