//! Resources: what `#[resource]` and `#[resource_template]` describe
//! ([`ResourceInfo`], [`TemplateInfo`]), what a read returns
//! ([`Contents`], or anything [`IntoContents`]), and the matching of a URI
//! against a template's variables.

use crate::{Error, Icon, ResourceBody, Role};
use serde_json::Value;
use std::fmt;

/// Hints for the client about a resource.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Annotations {
    /// Who it is for; empty for both.
    pub audience: Vec<Role>,
    /// 0 (optional) to 1 (required).
    pub priority: Option<f64>,
    /// ISO 8601, e.g. `2026-12-05T10:00:00Z`.
    pub last_modified: Option<String>,
}

/// A resource with a fixed URI, as `#[resource]` describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceInfo {
    /// The URI, unique across everything the runtime serves.
    pub uri: String,
    /// A name for the resource (default: the function's name).
    pub name: String,
    /// A short human-readable title.
    pub title: Option<String>,
    /// What the resource is (default: the doc comment).
    pub description: Option<String>,
    /// The MIME type of its contents.
    pub mime_type: Option<String>,
    /// The size in bytes, when known.
    pub size: Option<u64>,
    /// Hints for the client.
    pub annotations: Option<Annotations>,
    /// Icons.
    pub icons: Vec<Icon>,
    /// Extra `_meta`, e.g. an MCP App's `{"ui": {"csp": {…}}}`.
    pub meta: Option<Value>,
}

/// Resources whose URIs follow a template, as `#[resource_template]`
/// describes them.
#[derive(Debug, Clone, PartialEq)]
pub struct TemplateInfo {
    /// An RFC 6570 level-1 template, e.g. `file:///notes/{name}`.
    pub uri_template: String,
    /// A name for the resources (default: the function's name).
    pub name: String,
    /// A short human-readable title.
    pub title: Option<String>,
    /// What the resources are (default: the doc comment).
    pub description: Option<String>,
    /// The MIME type of their contents.
    pub mime_type: Option<String>,
    /// Hints for the client.
    pub annotations: Option<Annotations>,
    /// Icons.
    pub icons: Vec<Icon>,
}

/// One piece of a resource's contents.
#[derive(Debug, Clone, PartialEq)]
pub struct Contents {
    /// The URI of this piece (usually the URI read).
    pub uri: String,
    /// Its MIME type (default: the resource's declared one).
    pub mime_type: Option<String>,
    /// Text or bytes.
    pub body: ResourceBody,
    /// Extra `_meta`.
    pub meta: Option<Value>,
}

impl Contents {
    /// Text contents of `uri`.
    pub fn text(uri: impl Into<String>, text: impl Into<String>) -> Self {
        Contents {
            uri: uri.into(),
            mime_type: None,
            body: ResourceBody::Text(text.into()),
            meta: None,
        }
    }

    /// Binary contents of `uri` (sent to the client as base64).
    pub fn blob(uri: impl Into<String>, bytes: Vec<u8>) -> Self {
        Contents {
            uri: uri.into(),
            mime_type: None,
            body: ResourceBody::Blob(bytes),
            meta: None,
        }
    }

    /// Sets the MIME type.
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// Sets `_meta`.
    pub fn with_meta(mut self, meta: Value) -> Self {
        self.meta = Some(meta);
        self
    }
}

/// Why a read failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    /// No such resource (the text says what exists).
    #[error("not found: {0}")]
    NotFound(String),
    /// The read ran and failed; the text is shown to the client.
    #[error("{0}")]
    Failed(String),
}

impl From<String> for ReadError {
    fn from(text: String) -> Self {
        ReadError::Failed(text)
    }
}

impl From<&str> for ReadError {
    fn from(text: &str) -> Self {
        ReadError::Failed(text.into())
    }
}

impl From<Error> for ReadError {
    fn from(error: Error) -> Self {
        ReadError::Failed(error.message().into())
    }
}

impl From<std::io::Error> for ReadError {
    fn from(error: std::io::Error) -> Self {
        match error.kind() {
            std::io::ErrorKind::NotFound => ReadError::NotFound(error.to_string()),
            _ => ReadError::Failed(error.to_string()),
        }
    }
}

impl From<fmt::Error> for ReadError {
    fn from(error: fmt::Error) -> Self {
        ReadError::Failed(error.to_string())
    }
}

/// What a resource function may return: text (`String`, `&'static str`),
/// bytes (`Vec<u8>`, `&'static [u8]`), [`Contents`] or several, or a
/// `Result` of one whose error converts into [`ReadError`].
#[diagnostic::on_unimplemented(
    message = "a resource cannot return `{Self}`",
    note = "return text (`String`), bytes (`Vec<u8>`), `airlock_sdk::Contents` or a `Vec` of them, or a `Result` of one whose error converts into `airlock_sdk::ReadError`"
)]
pub trait IntoContents {
    /// The contents of `uri`; `mime_type` is the resource's declared type,
    /// given to every piece that does not name its own.
    fn into_contents(self, uri: &str, mime_type: Option<&str>) -> Result<Vec<Contents>, ReadError>;
}

fn one(uri: &str, mime_type: Option<&str>, body: ResourceBody) -> Vec<Contents> {
    vec![Contents {
        uri: uri.into(),
        mime_type: mime_type.map(Into::into),
        body,
        meta: None,
    }]
}

impl IntoContents for String {
    fn into_contents(self, uri: &str, mime: Option<&str>) -> Result<Vec<Contents>, ReadError> {
        Ok(one(
            uri,
            mime.or(Some("text/plain")),
            ResourceBody::Text(self),
        ))
    }
}

impl IntoContents for &'static str {
    fn into_contents(self, uri: &str, mime: Option<&str>) -> Result<Vec<Contents>, ReadError> {
        String::from(self).into_contents(uri, mime)
    }
}

impl IntoContents for Vec<u8> {
    fn into_contents(self, uri: &str, mime: Option<&str>) -> Result<Vec<Contents>, ReadError> {
        Ok(one(
            uri,
            mime.or(Some("application/octet-stream")),
            ResourceBody::Blob(self),
        ))
    }
}

impl IntoContents for &'static [u8] {
    fn into_contents(self, uri: &str, mime: Option<&str>) -> Result<Vec<Contents>, ReadError> {
        self.to_vec().into_contents(uri, mime)
    }
}

impl IntoContents for Contents {
    fn into_contents(self, uri: &str, mime: Option<&str>) -> Result<Vec<Contents>, ReadError> {
        vec![self].into_contents(uri, mime)
    }
}

impl IntoContents for Vec<Contents> {
    fn into_contents(self, _uri: &str, mime: Option<&str>) -> Result<Vec<Contents>, ReadError> {
        Ok(self
            .into_iter()
            .map(|mut c| {
                if c.mime_type.is_none() {
                    c.mime_type = mime.map(Into::into);
                }
                c
            })
            .collect())
    }
}

impl<T: IntoContents, E: Into<ReadError>> IntoContents for Result<T, E> {
    fn into_contents(self, uri: &str, mime: Option<&str>) -> Result<Vec<Contents>, ReadError> {
        self.map_err(Into::into)?.into_contents(uri, mime)
    }
}

/// A resource with a fixed URI: implemented by `#[resource]` on a type of
/// the function's name.
pub trait Resource {
    /// The resource's URI.
    const URI: &'static str;
    /// Its description.
    fn info() -> ResourceInfo;
    /// Reads it.
    fn read() -> Result<Vec<Contents>, ReadError>;
}

/// Resources of a URI template: implemented by `#[resource_template]`.
pub trait ResourceTemplate {
    /// The URI template.
    const URI_TEMPLATE: &'static str;
    /// Its description.
    fn info() -> TemplateInfo;
    /// Reads the resource `uri`, whose variables are `variables` (name,
    /// value), in the template's order.
    fn read(uri: &str, variables: &[(String, String)]) -> Result<Vec<Contents>, ReadError>;
}

/// Matches `uri` against an RFC 6570 level-1 `template` (`{name}`
/// variables between literal text): the variables' values, percent-decoded,
/// or `None` when the URI does not fit. A value is never empty and holds no
/// `/` (level 1 escapes it), so `file:///notes/{name}` does not match
/// `file:///notes/a/b`.
pub fn match_template(template: &str, uri: &str) -> Option<Vec<(String, String)>> {
    let mut variables = Vec::new();
    let mut rest = uri;
    let mut tail = template;
    while !tail.is_empty() {
        match tail.find('{') {
            None => return (rest == tail).then_some(variables),
            Some(0) => {
                let close = tail.find('}')?;
                let name = &tail[1..close];
                tail = &tail[close + 1..];
                let literal_end = tail.find('{').unwrap_or(tail.len());
                let next = &tail[..literal_end];
                let end = if next.is_empty() {
                    if !tail.is_empty() {
                        return None; // two variables in a row are ambiguous
                    }
                    rest.len()
                } else {
                    rest.find(next)?
                };
                let value = &rest[..end];
                if value.is_empty() || value.contains('/') {
                    return None;
                }
                variables.push((name.to_owned(), percent_decode(value)?));
                rest = &rest[end..];
            }
            Some(open) => {
                rest = rest.strip_prefix(&tail[..open])?;
                tail = &tail[open..];
            }
        }
    }
    rest.is_empty().then_some(variables)
}

fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::match_template;

    fn vars(template: &str, uri: &str) -> Option<Vec<(String, String)>> {
        match_template(template, uri)
    }

    #[test]
    fn matches_level_one_templates() {
        assert_eq!(
            vars("test://template/{id}/data", "test://template/123/data"),
            Some(vec![("id".into(), "123".into())])
        );
        assert_eq!(
            vars("file:///notes/{name}", "file:///notes/to%20do"),
            Some(vec![("name".into(), "to do".into())])
        );
        assert_eq!(
            vars("db://{table}/{id}", "db://orders/7"),
            Some(vec![
                ("table".into(), "orders".into()),
                ("id".into(), "7".into())
            ])
        );
        assert_eq!(vars("file:///notes/{name}", "file:///notes/a/b"), None);
        assert_eq!(vars("file:///notes/{name}", "file:///notes/"), None);
        assert_eq!(
            vars("test://template/{id}/data", "test://template/1/other"),
            None
        );
        assert_eq!(vars("test://fixed", "test://fixed"), Some(vec![]));
        assert_eq!(vars("a/{x}", "b/1"), None);
        assert_eq!(vars("a/{x}", "a/%zz"), None);
    }
}
