//! What a successful call returns: content blocks and optional structured
//! JSON.
//!
//! Most tools never touch this module: a tool that returns a value with a
//! schema (see [`ToolSchema`](crate::ToolSchema)) gets its output built for it.
//! Return an [`Output`] when you want full control over the content blocks.

use serde_json::Value;

/// The result of a successful call: content blocks shown to the client in
/// order, and an optional structured result.
///
/// A tool that returns `Output` gets no automatic output schema; declare one
/// with `#[tool(output_schema = r#"{…}"#)]` if it sets [`Output::structured`].
///
/// ```
/// use airlock_sdk::{Output, ResourceLink};
/// let out = Output::text("Found 2 files")
///     .with_image(vec![0x89, b'P', b'N', b'G'], "image/png")
///     .with_link(ResourceLink::new("file:///data/a.csv", "a.csv"))
///     .with_structured(serde_json::json!({"files": 2}));
/// assert_eq!(out.content.len(), 3);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Output {
    /// Content blocks, shown to the client in order.
    pub content: Vec<Content>,
    /// The structured result. Required when the tool declares an output
    /// schema (the runtime validates it). When `content` is empty the runtime
    /// adds this JSON as a text block.
    pub structured: Option<Value>,
}

/// One block of a tool's result.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    /// Plain text.
    Text(String),
    /// An image (raw bytes; the runtime encodes them for the client).
    Image(Media),
    /// An audio clip.
    Audio(Media),
    /// A resource embedded in the result.
    Embedded(EmbeddedResource),
    /// A link to a resource the client may fetch itself.
    Link(ResourceLink),
}

/// Binary data with its MIME type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Media {
    /// The raw bytes.
    pub data: Vec<u8>,
    /// The MIME type, e.g. `image/png` or `audio/wav`.
    pub mime_type: String,
}

/// The body of an embedded resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResourceBody {
    /// UTF-8 text.
    Text(String),
    /// Raw bytes.
    Blob(Vec<u8>),
}

/// A resource whose contents travel inside the result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbeddedResource {
    /// The resource's URI.
    pub uri: String,
    /// The MIME type of the contents.
    pub mime_type: Option<String>,
    /// The contents.
    pub body: ResourceBody,
}

impl EmbeddedResource {
    /// An embedded text resource.
    pub fn text(uri: impl Into<String>, text: impl Into<String>) -> Self {
        EmbeddedResource {
            uri: uri.into(),
            mime_type: None,
            body: ResourceBody::Text(text.into()),
        }
    }

    /// An embedded binary resource.
    pub fn blob(uri: impl Into<String>, bytes: Vec<u8>) -> Self {
        EmbeddedResource {
            uri: uri.into(),
            mime_type: None,
            body: ResourceBody::Blob(bytes),
        }
    }

    /// Sets the MIME type.
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }
}

/// A pointer to a resource the client may fetch itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceLink {
    /// The resource's URI.
    pub uri: String,
    /// A name for the resource.
    pub name: String,
    /// A short human-readable title.
    pub title: Option<String>,
    /// What the resource is.
    pub description: Option<String>,
    /// The MIME type of the resource.
    pub mime_type: Option<String>,
    /// The size in bytes, when known.
    pub size: Option<u64>,
}

impl ResourceLink {
    /// A link with a URI and a name and nothing else.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        ResourceLink {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
        }
    }
}

impl Output {
    /// An output with no content and no structured result.
    pub fn new() -> Self {
        Output::default()
    }

    /// An output with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Output::new().with_text(text)
    }

    /// An output with only a structured result (the runtime shows it as text).
    pub fn structured(value: Value) -> Self {
        Output::new().with_structured(value)
    }

    /// Appends a text block.
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.content.push(Content::Text(text.into()));
        self
    }

    /// Appends an image block.
    pub fn with_image(mut self, data: Vec<u8>, mime_type: impl Into<String>) -> Self {
        self.content.push(Content::Image(Media {
            data,
            mime_type: mime_type.into(),
        }));
        self
    }

    /// Appends an audio block.
    pub fn with_audio(mut self, data: Vec<u8>, mime_type: impl Into<String>) -> Self {
        self.content.push(Content::Audio(Media {
            data,
            mime_type: mime_type.into(),
        }));
        self
    }

    /// Appends an embedded resource.
    pub fn with_resource(mut self, resource: EmbeddedResource) -> Self {
        self.content.push(Content::Embedded(resource));
        self
    }

    /// Appends a resource link.
    pub fn with_link(mut self, link: ResourceLink) -> Self {
        self.content.push(Content::Link(link));
        self
    }

    /// Sets the structured result.
    pub fn with_structured(mut self, value: Value) -> Self {
        self.structured = Some(value);
        self
    }
}
