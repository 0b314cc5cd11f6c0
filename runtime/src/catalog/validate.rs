//! The rules a component and its tools must follow to be loaded.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use super::{CONTRACT, Component, LoadError, Tool};
use crate::args::{ArgumentSchema, OutputSchema};
use crate::sandbox::DescribedTool;
use crate::tool::ToolInfo;

/// Longest tool name MCP clients reliably accept.
const MAX_NAME: usize = 64;

/// Checks a tool name: 1–64 characters of `A-Z a-z 0-9 _ - .`.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > MAX_NAME {
        return Err(format!(
            "name must be 1 to {MAX_NAME} characters long, is {}",
            name.chars().count()
        ));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
    {
        return Err(format!(
            "name may only contain A-Z, a-z, 0-9, `_`, `-` and `.`; found {bad:?}"
        ));
    }
    Ok(())
}

/// Distinguishes "not wasm" and "core module" from a component by the
/// header, so the error says what the file is.
pub fn check_header(path: &Path, bytes: &[u8]) -> Result<(), LoadError> {
    if bytes.len() < 8 || &bytes[..4] != b"\0asm" {
        return Err(LoadError::NotWasm {
            path: path.to_path_buf(),
        });
    }
    // Bytes 4..8: version and layer; layer 0 is a core module, 1 a component.
    if bytes[6..8] == [0, 0] {
        return Err(LoadError::CoreModule {
            path: path.to_path_buf(),
        });
    }
    Ok(())
}

/// Explains a link failure: a missing import, or a missing export.
pub fn link_error(path: &Path, imports: &[String], err: wasmtime::Error) -> LoadError {
    let text = format!("{err:#}");
    if let Some(interface) = imports.iter().find(|i| text.contains(&format!("`{i}`"))) {
        return LoadError::UnknownImport {
            path: path.to_path_buf(),
            interface: interface.clone(),
        };
    }
    if text.contains(CONTRACT) || text.contains("no exported instance") {
        return LoadError::NoContract {
            path: path.to_path_buf(),
        };
    }
    LoadError::Invalid {
        path: path.to_path_buf(),
        reason: text,
    }
}

/// Checks every described tool and builds the catalog entries.
pub fn tools(
    path: &Path,
    described: Vec<DescribedTool>,
    component: &Arc<Component>,
) -> Result<Vec<Tool>, LoadError> {
    let mut seen = HashSet::new();
    let mut tools = Vec::with_capacity(described.len());
    for d in described {
        let bad = |rule: String| LoadError::BadTool {
            path: path.to_path_buf(),
            tool: d.name.clone(),
            rule,
        };
        check_name(&d.name).map_err(&bad)?;
        if !seen.insert(d.name.clone()) {
            return Err(bad("declared twice in this component".into()));
        }
        if d.description.trim().is_empty() {
            return Err(bad("description is missing".into()));
        }
        let input_schema: serde_json::Value = serde_json::from_str(&d.input_schema)
            .map_err(|e| bad(format!("input schema is not JSON: {e}")))?;
        let args = ArgumentSchema::compile(&input_schema)
            .map_err(|e| bad(format!("input schema: {e}")))?;
        let (output_schema, output) = match &d.output_schema {
            None => (None, None),
            Some(text) => {
                let schema: serde_json::Value = serde_json::from_str(text)
                    .map_err(|e| bad(format!("output schema is not JSON: {e}")))?;
                let compiled = OutputSchema::compile(&schema)
                    .map_err(|e| bad(format!("output schema: {e}")))?;
                (Some(schema), Some(compiled))
            }
        };
        tools.push(Tool {
            info: ToolInfo {
                name: d.name,
                title: d.title,
                description: d.description,
                input_schema,
                output_schema,
                hints: d.hints,
                icons: d.icons,
                task_support: d.task_support,
            },
            args,
            output,
            component: component.clone(),
            own_hints: d.own_hints,
            running: Default::default(),
            waiting: Default::default(),
            freed: Default::default(),
            pace: crate::lanes::Pace::new(&component.imports),
        });
    }
    Ok(tools)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_rules() {
        assert!(check_name("lookup_price").is_ok());
        assert!(check_name("a.b-c_D9").is_ok());
        assert!(check_name(&"x".repeat(64)).is_ok());
        assert!(check_name("").unwrap_err().contains("1 to 64"));
        assert!(check_name(&"x".repeat(65)).unwrap_err().contains("is 65"));
        assert!(check_name("rm -rf").unwrap_err().contains("' '"));
        assert!(check_name("naïve").unwrap_err().contains("'ï'"));
    }

    #[test]
    fn headers_say_what_the_file_is() {
        let p = Path::new("x.wasm");
        assert!(matches!(
            check_header(p, b"hello world"),
            Err(LoadError::NotWasm { .. })
        ));
        assert!(matches!(
            check_header(p, b"\0asm\x01\0\0\0"),
            Err(LoadError::CoreModule { .. })
        ));
        assert!(check_header(p, b"\0asm\x0d\0\x01\0").is_ok());
    }
}
