//! Prompts: what `#[prompt]` describes ([`PromptInfo`]) and what a prompt
//! function returns ([`Message`]s, or anything [`IntoMessages`]).

use crate::{Content, EmbeddedResource, Error, Icon, Media, ResourceLink};

/// Who a message is from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// The user.
    User,
    /// The model.
    Assistant,
}

/// One message of a prompt: a role and one content block.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// Who it is from.
    pub role: Role,
    /// What it says.
    pub content: Content,
}

impl Message {
    /// A message from the user: `Message::user("Summarize this")`,
    /// `Message::user(Content::image(png, "image/png"))`,
    /// `Message::user(EmbeddedResource::text(uri, text))`.
    pub fn user(content: impl Into<Content>) -> Self {
        Message {
            role: Role::User,
            content: content.into(),
        }
    }

    /// A message from the model.
    pub fn assistant(content: impl Into<Content>) -> Self {
        Message {
            role: Role::Assistant,
            content: content.into(),
        }
    }
}

impl From<String> for Content {
    fn from(text: String) -> Self {
        Content::Text(text)
    }
}

impl From<&str> for Content {
    fn from(text: &str) -> Self {
        Content::Text(text.into())
    }
}

impl From<EmbeddedResource> for Content {
    fn from(resource: EmbeddedResource) -> Self {
        Content::Embedded(resource)
    }
}

impl From<ResourceLink> for Content {
    fn from(link: ResourceLink) -> Self {
        Content::Link(link)
    }
}

impl Content {
    /// An image block.
    pub fn image(data: Vec<u8>, mime_type: impl Into<String>) -> Self {
        Content::Image(Media {
            data,
            mime_type: mime_type.into(),
        })
    }

    /// An audio block.
    pub fn audio(data: Vec<u8>, mime_type: impl Into<String>) -> Self {
        Content::Audio(Media {
            data,
            mime_type: mime_type.into(),
        })
    }
}

/// One argument of a prompt (a parameter of the prompt function).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptArgument {
    /// Its name.
    pub name: String,
    /// A short human-readable title.
    pub title: Option<String>,
    /// What it is.
    pub description: Option<String>,
    /// False for an `Option` parameter.
    pub required: bool,
}

/// A prompt, as `#[prompt]` describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptInfo {
    /// Its name: the same rules as a tool's.
    pub name: String,
    /// A short human-readable title.
    pub title: Option<String>,
    /// What it is for (default: the doc comment).
    pub description: Option<String>,
    /// Its arguments, in the order of the parameters.
    pub arguments: Vec<PromptArgument>,
    /// Icons.
    pub icons: Vec<Icon>,
}

/// What `prompts/get` returns: an optional description and the messages.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PromptMessages {
    /// A description of this instance of the prompt.
    pub description: Option<String>,
    /// The messages, in order.
    pub messages: Vec<Message>,
}

/// What a prompt function may return: messages (`Vec<Message>`, one
/// [`Message`]), text (`String`: one user message), [`PromptMessages`], or a
/// `Result` of one (its error reaches the client like a tool's).
#[diagnostic::on_unimplemented(
    message = "a prompt cannot return `{Self}`",
    note = "return `Vec<airlock_sdk::Message>`, one `Message`, a `String` (one user message) or `airlock_sdk::PromptMessages`, or a `Result` of one"
)]
pub trait IntoMessages {
    /// The prompt's messages.
    fn into_messages(self) -> PromptMessages;
}

impl IntoMessages for PromptMessages {
    fn into_messages(self) -> PromptMessages {
        self
    }
}

impl IntoMessages for Vec<Message> {
    fn into_messages(self) -> PromptMessages {
        PromptMessages {
            description: None,
            messages: self,
        }
    }
}

impl IntoMessages for Message {
    fn into_messages(self) -> PromptMessages {
        vec![self].into_messages()
    }
}

impl IntoMessages for String {
    fn into_messages(self) -> PromptMessages {
        Message::user(self).into_messages()
    }
}

impl IntoMessages for &'static str {
    fn into_messages(self) -> PromptMessages {
        Message::user(self).into_messages()
    }
}

/// One prompt: implemented by `#[prompt]` on a type of the function's name.
pub trait Prompt {
    /// The prompt's name.
    const NAME: &'static str;
    /// Its description.
    fn info() -> PromptInfo;
    /// Its messages for `arguments` (name, value).
    fn get(arguments: &[(String, String)]) -> Result<PromptMessages, Error>;
}
