//! What kind of component a file is, from the names of its top-level
//! exports, read before anything is compiled: an airlock tool component
//! (exports [`CONTRACT`]), a wasmcp component (exports wasmcp's `tools`,
//! `resources`, `prompts` or `completions`), or plain functions (anything else that exports
//! functions). A component that exports nothing airlock can serve is
//! refused at once, with what to do, instead of after a full compile.

use wasmparser::{ComponentExternalKind, Parser, Payload};

use super::CONTRACT;
use crate::sandbox::is_contract;
use crate::wasmcp;

/// How the runtime serves a component.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Exports `airlock:tool/tools`: tools, schemas and hints come from
    /// the component's own `describe`.
    Tool,
    /// Exports plain WIT functions: each becomes a tool (see
    /// [`crate::functions`]).
    Functions,
    /// Exports `wasmcp:mcp-v20251125/tools` (tools, schemas and hints
    /// come from its `list-tools`), `resources`, `prompts` or
    /// `completions` (see [`crate::wasmcp`]).
    Wasmcp,
}

impl Kind {
    /// How `airlock inspect` names the kind.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Tool => "airlock tool",
            Kind::Functions => "plain functions",
            Kind::Wasmcp => "wasmcp",
        }
    }
}

/// The package of the contract without its version (`airlock:tool/tools`).
fn contract_name() -> &'static str {
    CONTRACT.split('@').next().unwrap_or(CONTRACT)
}

/// The kind of the component in `bytes`, or why it has none: the text says
/// what it exports instead and what to do.
pub fn detect(bytes: &[u8]) -> Result<Kind, String> {
    classify(&top_level_exports(bytes)?)
}

/// The kind of a component with these top-level exports.
fn classify(exports: &[(String, ComponentExternalKind)]) -> Result<Kind, String> {
    if exports.iter().any(|(name, _)| is_contract(name)) {
        return Ok(Kind::Tool);
    }
    if let Some((other, _)) = exports
        .iter()
        .find(|(name, _)| name.split('@').next() == Some(contract_name()))
    {
        return Err(format!(
            "exports {other}, but this airlock serves {CONTRACT} (and every 0.1.x before it); rebuild it with a matching SDK"
        ));
    }
    if exports
        .iter()
        .any(|(name, _)| wasmcp::is_served_export(name))
    {
        return Ok(Kind::Wasmcp);
    }
    if let Some((other, _)) = exports.iter().find(|(name, _)| name.starts_with("wasmcp:")) {
        return Err(format!(
            "exports {other}, but of wasmcp's interfaces airlock serves only `tools`, \
             `resources`, `prompts` and `completions` of `wasmcp:mcp-v20251125@0.1.x` (a \
             component before wasmcp's composition; middleware and transports are wasmcp's own)"
        ));
    }
    // Interfaces of `wasi:` packages are entry points for other hosts.
    let usable = exports.iter().any(|(name, kind)| match kind {
        ComponentExternalKind::Func => true,
        ComponentExternalKind::Instance => !name.starts_with("wasi:"),
        _ => false,
    });
    if usable {
        return Ok(Kind::Functions);
    }
    let names: Vec<&str> = exports.iter().map(|(n, _)| n.as_str()).collect();
    Err(format!(
        "exports nothing airlock can serve ({}); build it with the airlock SDK (against \
         wit/tool.wit), or export plain WIT functions (docs/authoring.md, \"Tools without the \
         airlock SDK\")",
        if names.is_empty() {
            "no exports".to_string()
        } else {
            format!("only {}", names.join(", "))
        }
    ))
}

/// The names of the outermost component's exports (what a published
/// artifact's config lists).
pub fn export_names(bytes: &[u8]) -> Vec<String> {
    top_level_exports(bytes)
        .map(|exports| exports.into_iter().map(|(name, _)| name).collect())
        .unwrap_or_default()
}

/// The names and kinds of the exports of the outermost component; nested
/// modules and components are skipped.
fn top_level_exports(bytes: &[u8]) -> Result<Vec<(String, ComponentExternalKind)>, String> {
    let mut exports = Vec::new();
    let mut depth = 0usize;
    for payload in Parser::new(0).parse_all(bytes) {
        match payload.map_err(|e| unreadable(&e, bytes.len()))? {
            Payload::ModuleSection { .. } | Payload::ComponentSection { .. } => depth += 1,
            Payload::End(_) => depth = depth.saturating_sub(1),
            Payload::ComponentExportSection(section) if depth == 0 => {
                for export in section {
                    let export = export.map_err(|e| e.to_string())?;
                    exports.push((export.name.name.to_string(), export.kind));
                }
            }
            _ => {}
        }
    }
    Ok(exports)
}

/// A parse error in words: a file that ends too soon was cut short (a
/// copy or download that did not finish), which wasmparser's "unexpected
/// end-of-file" does not say.
fn unreadable(err: &wasmparser::BinaryReaderError, size: usize) -> String {
    let text = err.to_string();
    if text.contains("unexpected end-of-file") {
        format!(
            "the file is cut short: it ends after {size} bytes, inside a section that needs more \
             (was it copied or downloaded in full? rebuild or fetch it again)"
        )
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_truncated_component_is_said_to_be_cut_short() {
        let wasm = b"\0asm\x0d\0\x01\0\x01\x10\x00";
        let err = detect(wasm).expect_err("truncated");
        assert!(
            err.starts_with("the file is cut short: it ends after 11 bytes"),
            "{err}"
        );
    }

    fn kind_of(exports: &[(&str, ComponentExternalKind)]) -> Result<Kind, String> {
        let exports: Vec<(String, ComponentExternalKind)> =
            exports.iter().map(|(n, k)| (n.to_string(), *k)).collect();
        classify(&exports)
    }

    #[test]
    fn every_0_1_x_of_the_contract_is_a_tool_component() {
        use ComponentExternalKind::Instance;
        for name in [
            "airlock:tool/tools@0.1.0",
            "airlock:tool/tools@0.1.1",
            "airlock:tool/tools@0.1.12",
        ] {
            assert_eq!(kind_of(&[(name, Instance)]), Ok(Kind::Tool), "{name}");
        }
        for name in [
            "airlock:tool/tools@0.2.0",
            "airlock:tool/tools@0.1.",
            "airlock:tool/tools@0.1.1-rc",
        ] {
            let err = kind_of(&[(name, Instance)]).expect_err(name);
            assert!(
                err.contains("rebuild it with a matching SDK"),
                "{name}: {err}"
            );
        }
    }

    #[test]
    fn wasmcp_tools_at_0_1_are_a_kind_of_their_own() {
        use ComponentExternalKind::Instance;
        assert_eq!(
            kind_of(&[("wasmcp:mcp-v20251125/tools@0.1.1", Instance)]),
            Ok(Kind::Wasmcp)
        );
        // A tools component that also exports what wasmcp's other
        // capabilities export is still served for its tools.
        assert_eq!(
            kind_of(&[
                ("wasmcp:mcp-v20251125/resources@0.1.1", Instance),
                ("wasmcp:mcp-v20251125/tools@0.1.0", Instance),
            ]),
            Ok(Kind::Wasmcp)
        );
        // So is one that exports only resources or prompts, as wasmcp's
        // templates make them.
        for name in [
            "wasmcp:mcp-v20251125/resources@0.1.1",
            "wasmcp:mcp-v20251125/prompts@0.1.0",
        ] {
            assert_eq!(kind_of(&[(name, Instance)]), Ok(Kind::Wasmcp), "{name}");
        }
        let err = kind_of(&[("wasmcp:mcp-v20251125/server-handler@0.1.1", Instance)])
            .expect_err("refused");
        assert!(
            err.starts_with(
                "exports wasmcp:mcp-v20251125/server-handler@0.1.1, but of wasmcp's interfaces \
                 airlock serves only `tools`, `resources`, `prompts` and `completions` of \
                 `wasmcp:mcp-v20251125@0.1.x`"
            ),
            "{err}"
        );
        assert!(kind_of(&[("wasmcp:mcp-v20251125/resources@0.2.0", Instance)]).is_err());
        assert!(kind_of(&[("wasmcp:mcp-v20251125/tools@0.2.0", Instance)]).is_err());
        assert_eq!(
            kind_of(&[("demo:text/strings@1.0.0", Instance)]),
            Ok(Kind::Functions)
        );
    }
}
