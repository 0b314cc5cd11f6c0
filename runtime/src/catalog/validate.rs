//! The rules a component and its tools must follow to be loaded.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use super::{CONTRACT, Component, LoadError, Tool};
use crate::args::{ArgumentSchema, OutputSchema};
use crate::sandbox::DescribedTool;
use crate::tool::{Icon, ToolInfo};

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

/// The most of a refused icon's `src` an error repeats.
const SHOWN_SRC: usize = 80;

/// Checks a declaration's icons. A client loads each `src` and shows it
/// beside the tool, resource or prompt, so it must be an image on the web —
/// an `https:` URL, with no `user:password@` — or a `data:image/…` URI,
/// what the SDK's `icon(src = …)` takes and MCP's `Icon` describes; never
/// `javascript:`, `file:`, plain `http:` or another scheme.
pub fn check_icons(icons: &[Icon]) -> Result<(), String> {
    for icon in icons {
        let src = icon.src.as_str();
        let image_data = src
            .get(..11)
            .is_some_and(|head| head.eq_ignore_ascii_case("data:image/"));
        let https = url::Url::parse(src).is_ok_and(|url| {
            url.scheme() == "https" && url.username().is_empty() && url.password().is_none()
        });
        if !(image_data || https) {
            let shown: String = src.chars().take(SHOWN_SRC).collect();
            return Err(format!(
                "icon {shown:?}: an icon's src is an https: URL (without user:password@) or a \
                 data:image/… URI, which a client loads and shows"
            ));
        }
    }
    Ok(())
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
        check_icons(&d.icons).map_err(&bad)?;
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
            places: Default::default(),
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
    fn icons_are_https_or_image_data() {
        let icon = |src: &str| Icon {
            src: src.into(),
            mime_type: None,
            sizes: vec![],
        };
        for good in [
            "https://cdn.example.com/a.png",
            "HTTPS://cdn.example.com/a.svg",
            "data:image/png;base64,AAAA",
            "DATA:image/svg+xml;base64,PHN2Zz4=",
        ] {
            assert!(check_icons(&[icon(good)]).is_ok(), "{good}");
        }
        for bad in [
            "javascript:alert(1)",
            "JaVaScRiPt:alert(1)",
            "data:text/html,<script>alert(1)</script>",
            "file:///etc/passwd",
            "http://cdn.example.com/a.png",
            "https://user:pass@cdn.example.com/a.png",
            "icons/a.png",
            "",
        ] {
            let refused =
                check_icons(&[icon("https://ok.example/a.png"), icon(bad)]).expect_err(bad);
            assert!(
                refused.contains("an icon's src is an https: URL"),
                "{bad}: {refused}"
            );
        }
        let long = format!("javascript:{}", "a".repeat(500));
        assert!(check_icons(&[icon(&long)]).unwrap_err().len() < 300);
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
