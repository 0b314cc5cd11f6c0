//! Reading wassette's YAML: the nodes of a document (saphyr's, with their
//! line and column) as mappings, lists and text, and errors that point at
//! the node ([`ImportError`]).

use saphyr::{MarkedYaml, Scalar, YamlData};

/// A wassette policy that cannot be read, at a 1-based line and column.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{line}:{column}: {message}")]
pub struct ImportError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

pub(super) type Node<'a> = MarkedYaml<'a>;

pub(super) fn at(node: &Node, message: String) -> ImportError {
    ImportError {
        line: node.span.start.line(),
        column: node.span.start.col() + 1,
        message,
    }
}

pub(super) fn unknown(node: &Node, key: &str, expected: &str) -> ImportError {
    at(node, format!("unknown key {key:?} (expected {expected})"))
}

/// One entry of a mapping: its key, the key's node (for errors), its value.
pub(super) type Entry<'a, 'b> = (&'a str, &'a Node<'b>, &'a Node<'b>);

/// The entries of a mapping (an empty or null node has none).
pub(super) fn mapping<'a, 'b>(node: &'a Node<'b>) -> Result<Vec<Entry<'a, 'b>>, ImportError> {
    match &node.data {
        YamlData::Mapping(map) => map
            .iter()
            .map(|(k, v)| match &k.data {
                YamlData::Value(Scalar::String(key)) => Ok((key.as_ref(), k, v)),
                _ => Err(at(k, "a key must be a string".into())),
            })
            .collect(),
        YamlData::Value(Scalar::Null) => Ok(Vec::new()),
        _ => Err(at(node, "expected a mapping (key: value lines)".into())),
    }
}

pub(super) fn sequence<'a, 'b>(node: &'a Node<'b>) -> Result<&'a [Node<'b>], ImportError> {
    match &node.data {
        YamlData::Sequence(items) => Ok(items),
        YamlData::Value(Scalar::Null) => Ok(&[]),
        _ => Err(at(node, "expected a list (- item lines or [a, b])".into())),
    }
}

pub(super) fn field<'a, 'b>(node: &'a Node<'b>, name: &str) -> Result<&'a Node<'b>, ImportError> {
    mapping(node)?
        .into_iter()
        .find(|(k, _, _)| *k == name)
        .map(|(_, _, v)| v)
        .ok_or_else(|| at(node, format!("`{name}` is missing")))
}

pub(super) fn field_text(node: &Node, name: &str) -> Result<String, ImportError> {
    scalar_text(field(node, name)?)
}

/// A scalar as text (a number too: `version: 1.0`).
pub(super) fn scalar_text(node: &Node) -> Result<String, ImportError> {
    match &node.data {
        YamlData::Value(Scalar::String(s)) => Ok(s.to_string()),
        YamlData::Value(Scalar::Integer(n)) => Ok(n.to_string()),
        YamlData::Value(Scalar::FloatingPoint(f)) => Ok(format!("{:?}", f.into_inner())),
        _ => Err(at(node, "expected a text value".into())),
    }
}

pub(super) fn unsigned(node: &Node) -> Result<u64, ImportError> {
    match &node.data {
        YamlData::Value(Scalar::Integer(n)) => {
            u64::try_from(*n).map_err(|_| at(node, format!("{n} is negative")))
        }
        _ => Err(at(node, "expected a whole number".into())),
    }
}
