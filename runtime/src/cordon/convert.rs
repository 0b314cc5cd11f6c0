//! The wire's types to and from the domain's: a tool's content, a read's
//! or prompt's answer, the guest's questions and their records. The domain
//! types serialise as MCP, which is not what a worker hands back, so each
//! crosses as a type of `wire` of its own and is rebuilt here.

use super::wire::{
    WireAsk, WireAskFailure, WireAskRecord, WireContent, WireContents, WireOffered, WireOutput,
};
use crate::observe::{Ask, AskFailure, AskKind};
use crate::offer::{Completion, Offered, PromptMessage, PromptMessages, ResourceContents, Role};
use crate::sandbox::RawOutput;
use crate::sandbox::asks::AskRecord;
use crate::tool::{Content, Level, ResourceBody};

impl From<&RawOutput> for WireOutput {
    fn from(raw: &RawOutput) -> Self {
        WireOutput {
            content: raw.content.iter().map(WireContent::from).collect(),
            structured: raw.structured.clone(),
        }
    }
}

impl From<WireOutput> for RawOutput {
    fn from(wire: WireOutput) -> Self {
        RawOutput {
            content: wire.content.into_iter().map(Content::from).collect(),
            structured: wire.structured,
        }
    }
}

impl From<&Content> for WireContent {
    fn from(content: &Content) -> Self {
        match content.clone() {
            Content::Text(text) => WireContent::Text(text),
            Content::Image { data, mime_type } => WireContent::Image { data, mime_type },
            Content::Audio { data, mime_type } => WireContent::Audio { data, mime_type },
            Content::Embedded {
                uri,
                mime_type,
                body: ResourceBody::Text(text),
            } => WireContent::EmbeddedText {
                uri,
                mime_type,
                text,
            },
            Content::Embedded {
                uri,
                mime_type,
                body: ResourceBody::Blob(blob),
            } => WireContent::EmbeddedBlob {
                uri,
                mime_type,
                blob,
            },
            Content::Link {
                uri,
                name,
                title,
                description,
                mime_type,
                size,
            } => WireContent::Link {
                uri,
                name,
                title,
                description,
                mime_type,
                size,
            },
        }
    }
}

impl From<WireContent> for Content {
    fn from(wire: WireContent) -> Self {
        match wire {
            WireContent::Text(text) => Content::Text(text),
            WireContent::Image { data, mime_type } => Content::Image { data, mime_type },
            WireContent::Audio { data, mime_type } => Content::Audio { data, mime_type },
            WireContent::EmbeddedText {
                uri,
                mime_type,
                text,
            } => Content::Embedded {
                uri,
                mime_type,
                body: ResourceBody::Text(text),
            },
            WireContent::EmbeddedBlob {
                uri,
                mime_type,
                blob,
            } => Content::Embedded {
                uri,
                mime_type,
                body: ResourceBody::Blob(blob),
            },
            WireContent::Link {
                uri,
                name,
                title,
                description,
                mime_type,
                size,
            } => Content::Link {
                uri,
                name,
                title,
                description,
                mime_type,
                size,
            },
        }
    }
}

impl From<&Offered> for WireOffered {
    fn from(offered: &Offered) -> Self {
        match offered {
            Offered::Contents(contents) => WireOffered::Contents(
                contents
                    .iter()
                    .map(|c| {
                        let (text, blob) = match &c.body {
                            ResourceBody::Text(t) => (Some(t.clone()), None),
                            ResourceBody::Blob(b) => (None, Some(b.clone())),
                        };
                        WireContents {
                            uri: c.uri.clone(),
                            mime_type: c.mime_type.clone(),
                            text,
                            blob,
                            meta: c.meta.clone(),
                        }
                    })
                    .collect(),
            ),
            Offered::Messages(m) => WireOffered::Messages {
                messages: m
                    .messages
                    .iter()
                    .map(|m| (m.role.as_str().to_string(), WireContent::from(&m.content)))
                    .collect(),
                description: m.description.clone(),
            },
            Offered::Completion(c) => WireOffered::Completion {
                values: c.values.clone(),
                has_more: c.has_more,
                total: c.total,
            },
        }
    }
}

impl From<WireOffered> for Offered {
    fn from(wire: WireOffered) -> Self {
        match wire {
            WireOffered::Contents(contents) => Offered::Contents(
                contents
                    .into_iter()
                    .map(|c| ResourceContents {
                        uri: c.uri,
                        mime_type: c.mime_type,
                        body: match (c.text, c.blob) {
                            (_, Some(blob)) => ResourceBody::Blob(blob),
                            (text, None) => ResourceBody::Text(text.unwrap_or_default()),
                        },
                        meta: c.meta,
                    })
                    .collect(),
            ),
            WireOffered::Messages {
                messages,
                description,
            } => Offered::Messages(PromptMessages {
                messages: messages
                    .into_iter()
                    .map(|(role, content)| PromptMessage {
                        role: match role.as_str() {
                            "assistant" => Role::Assistant,
                            _ => Role::User,
                        },
                        content: content.into(),
                    })
                    .collect(),
                description,
            }),
            WireOffered::Completion {
                values,
                has_more,
                total,
            } => Offered::Completion(Completion {
                values,
                has_more,
                total,
            }),
        }
    }
}

const KINDS: [(AskKind, &str); 4] = [
    (AskKind::ElicitForm, "elicit-form"),
    (AskKind::ElicitUrl, "elicit-url"),
    (AskKind::Sample, "sample"),
    (AskKind::Roots, "roots"),
];

impl From<&Ask> for WireAsk {
    fn from(ask: &Ask) -> Self {
        let kind = KINDS.iter().find(|(k, _)| *k == ask.kind).map(|(_, n)| *n);
        WireAsk {
            kind: kind.unwrap_or("roots").to_string(),
            params: ask.params.clone(),
            index: ask.index,
            key: ask.key.clone(),
        }
    }
}

impl TryFrom<WireAsk> for Ask {
    type Error = String;

    fn try_from(wire: WireAsk) -> Result<Self, String> {
        let kind = KINDS
            .iter()
            .find(|(_, n)| *n == wire.kind)
            .map(|(k, _)| *k)
            .ok_or_else(|| format!("a worker sent an unknown kind of request {:?}", wire.kind))?;
        Ok(Ask {
            kind,
            params: wire.params,
            index: wire.index,
            key: wire.key,
        })
    }
}

impl From<&AskFailure> for WireAskFailure {
    fn from(failure: &AskFailure) -> Self {
        match failure {
            AskFailure::Unavailable(m) => WireAskFailure::Unavailable(m.clone()),
            AskFailure::Failed(m) => WireAskFailure::Failed(m.clone()),
            AskFailure::NextRound => WireAskFailure::NextRound,
        }
    }
}

impl From<WireAskFailure> for AskFailure {
    fn from(wire: WireAskFailure) -> Self {
        match wire {
            WireAskFailure::Unavailable(m) => AskFailure::Unavailable(m),
            WireAskFailure::Failed(m) => AskFailure::Failed(m),
            WireAskFailure::NextRound => AskFailure::NextRound,
        }
    }
}

/// The names an ask record may carry (its method, its outcome): the
/// domain keeps them `'static`, so a worker's are matched back to them.
const RECORD_NAMES: [&str; 9] = [
    "elicitation/create",
    "sampling/createMessage",
    "roots/list",
    "answered",
    "denied",
    "over-limit",
    "unavailable",
    "failed",
    "next-round",
];

impl From<&AskRecord> for WireAskRecord {
    fn from(record: &AskRecord) -> Self {
        WireAskRecord {
            method: record.method.to_string(),
            key: record.key.clone(),
            params: record.params.clone(),
            outcome: record.outcome.to_string(),
            answer: record.answer.clone(),
            refusal: record.refusal.clone(),
        }
    }
}

impl From<WireAskRecord> for AskRecord {
    fn from(wire: WireAskRecord) -> Self {
        let known = |name: &str, otherwise: &'static str| {
            RECORD_NAMES
                .iter()
                .find(|n| **n == name)
                .copied()
                .unwrap_or(otherwise)
        };
        AskRecord {
            method: known(&wire.method, "roots/list"),
            key: wire.key,
            params: wire.params,
            outcome: known(&wire.outcome, "failed"),
            answer: wire.answer,
            refusal: wire.refusal,
        }
    }
}

/// A level's MCP spelling back (`info` for one this build does not know).
pub fn level(name: &str) -> Level {
    Level::parse(name).unwrap_or(Level::Info)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::{Ask, AskKind};
    use crate::sandbox::RawOutput;
    use crate::tool::{Content, ResourceBody};

    #[test]
    fn content_and_asks_come_back_as_they_left() {
        let raw = RawOutput {
            content: vec![
                Content::Text("t".into()),
                Content::Embedded {
                    uri: "u".into(),
                    mime_type: None,
                    body: ResourceBody::Blob(vec![0, 255]),
                },
            ],
            structured: Some(serde_json::json!({"a": 1})),
        };
        let back = RawOutput::from(WireOutput::from(&raw));
        assert_eq!(back.content, raw.content);
        assert_eq!(back.structured, raw.structured);
        let ask = Ask {
            kind: AskKind::Sample,
            params: serde_json::json!({"x": 1}),
            index: 2,
            key: Some("k".into()),
        };
        assert_eq!(Ask::try_from(WireAsk::from(&ask)), Ok(ask));
    }
}
