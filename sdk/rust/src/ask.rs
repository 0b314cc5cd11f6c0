//! Asking the client during a call: the user ([`elicit`], [`elicit_as`],
//! [`elicit_url`]), the client's model ([`sample`]) and the client's
//! roots ([`roots`]) — one at a time, or several at once under keys the
//! tool chooses ([`ask()`](crate::ask())).
//!
//! Each works only where the operator grants it (`ask = ["elicit",
//! "sample", "roots"]` in the policy, within per-call limits) and the
//! client declared the capability; otherwise it returns an [`AskError`] —
//! never a hang — and the tool decides what to do. Natively (unit tests of
//! tool functions) every request is [`AskError::Unavailable`].
//!
//! In revision 2026-07-28 a call that asks is re-run from the start once
//! the client answered, with its earlier questions answered from the
//! record: ask before you change anything.

use std::fmt;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::{Content, Message, Role, ToolSchema};

mod batch;
pub use batch::{Answer, Answers, Request, ask};

/// Why a request to the client has no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AskError {
    /// The operator did not grant this kind of request (`ask` in the policy).
    Denied(String),
    /// The client cannot answer: it did not declare the capability, or
    /// there is no client (a CLI call, a native test).
    Unavailable(String),
    /// The call has used up what its grant allows (requests per call).
    OverLimit(String),
    /// The client answered with an error, not in time, or with something
    /// that does not fit (an answer that does not match the form).
    Failed(String),
}

impl fmt::Display for AskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AskError::Denied(why) => write!(f, "not granted: {why}"),
            AskError::Unavailable(why) => write!(f, "not available: {why}"),
            AskError::OverLimit(why) => write!(f, "over the limit: {why}"),
            AskError::Failed(why) => write!(f, "failed: {why}"),
        }
    }
}

impl std::error::Error for AskError {}

/// The user's answer to an elicitation.
#[derive(Debug, Clone, PartialEq)]
pub enum Elicited<T = Value> {
    /// Accepted, with the form's content (for a URL, an empty object).
    Accept(T),
    /// Declined explicitly.
    Decline,
    /// Dismissed without a choice.
    Cancel,
}

/// Asks the user to fill in a form: `schema` is a JSON Schema of a flat
/// object of strings, numbers, booleans and enums.
///
/// ```
/// use airlock_sdk::{elicit, AskError, Elicited};
/// use serde_json::json;
///
/// let schema = json!({
///     "type": "object",
///     "properties": { "name": { "type": "string" } },
///     "required": ["name"],
/// });
/// match elicit("What is your name?", &schema) {
///     Ok(Elicited::Accept(form)) => println!("Hello, {}!", form["name"]),
///     Ok(Elicited::Decline | Elicited::Cancel) => println!("Hello, stranger."),
///     // Natively, and where the operator grants nothing, there is no one to ask.
///     Err(AskError::Unavailable(_) | AskError::Denied(_)) => {}
///     Err(other) => panic!("{other}"),
/// }
/// # assert!(matches!(elicit("?", &schema), Err(AskError::Unavailable(_))));
/// ```
pub fn elicit(message: &str, schema: &Value) -> Result<Elicited, AskError> {
    parsed(imp::elicit(message, &schema.to_string())?)
}

/// An elicitation's answer with its content read as JSON.
fn parsed(answer: Elicited<String>) -> Result<Elicited, AskError> {
    Ok(match answer {
        Elicited::Accept(text) => Elicited::Accept(
            serde_json::from_str(&text)
                .map_err(|e| AskError::Failed(format!("the answer is not JSON: {e}")))?,
        ),
        Elicited::Decline => Elicited::Decline,
        Elicited::Cancel => Elicited::Cancel,
    })
}

/// Like [`elicit`], with the form being the schema of `T` (a struct with
/// `#[derive(ToolSchema, Deserialize)]`) and the answer read into it.
///
/// ```
/// use airlock_sdk::{elicit_as, AskError, Elicited, ToolSchema};
/// use serde::Deserialize;
///
/// /// Where to ship the order.
/// #[derive(ToolSchema, Deserialize)]
/// struct Address {
///     /// Street and number.
///     street: String,
///     city: String,
/// }
///
/// let answer: Result<Elicited<Address>, AskError> = elicit_as("Ship where?");
/// assert!(matches!(answer, Err(AskError::Unavailable(_))));
/// ```
pub fn elicit_as<T: ToolSchema + DeserializeOwned>(message: &str) -> Result<Elicited<T>, AskError> {
    Ok(match elicit(message, &T::schema())? {
        Elicited::Accept(form) => Elicited::Accept(
            serde_json::from_value(form)
                .map_err(|e| AskError::Failed(format!("the answer does not fit the form: {e}")))?,
        ),
        Elicited::Decline => Elicited::Decline,
        Elicited::Cancel => Elicited::Cancel,
    })
}

/// Asks the user to open `url` outside the client (to sign in, to pay…);
/// the answer says whether they agreed to. The host sends only `https:`
/// URLs (or `http:` to a loopback host) without user information, and only
/// to the hosts its policy's `elicit-url-hosts` lists when it has one;
/// any other URL is [`AskError::Denied`].
///
/// ```
/// use airlock_sdk::{elicit_url, AskError, Elicited};
///
/// match elicit_url("Sign in to the warehouse", "https://auth.example.com/login") {
///     Ok(Elicited::Accept(_)) => { /* they went; check the sign-in */ }
///     Ok(_) => { /* they did not */ }
///     Err(why) => assert!(matches!(why, AskError::Unavailable(_))),
/// }
/// ```
pub fn elicit_url(message: &str, url: &str) -> Result<Elicited, AskError> {
    Ok(match imp::elicit_url(message, url)? {
        Elicited::Accept(_) => Elicited::Accept(Value::Object(Default::default())),
        Elicited::Decline => Elicited::Decline,
        Elicited::Cancel => Elicited::Cancel,
    })
}

/// What the tool would like of the model the client picks.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelPreferences {
    /// Model names or families, in order of preference (hints only).
    pub hints: Vec<String>,
    /// 0 to 1: how much cost, speed and intelligence matter.
    pub cost_priority: Option<f64>,
    pub speed_priority: Option<f64>,
    pub intelligence_priority: Option<f64>,
}

/// A request for a completion by the client's model.
#[derive(Debug, Clone, PartialEq)]
pub struct SamplingRequest {
    /// The conversation: text, image or audio messages.
    pub messages: Vec<Message>,
    pub system_prompt: Option<String>,
    /// The most tokens of the answer; the operator's grant may cap it
    /// (`limits.sample-tokens`).
    pub max_tokens: u32,
    pub temperature: Option<f64>,
    pub stop_sequences: Vec<String>,
    pub model_preferences: Option<ModelPreferences>,
}

impl SamplingRequest {
    /// One user message asking for at most `max_tokens` tokens.
    pub fn new(prompt: impl Into<String>, max_tokens: u32) -> Self {
        SamplingRequest {
            messages: vec![Message::user(Content::Text(prompt.into()))],
            system_prompt: None,
            max_tokens,
            temperature: None,
            stop_sequences: Vec::new(),
            model_preferences: None,
        }
    }

    /// With a system prompt.
    pub fn system(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }
}

/// The client model's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Sampled {
    pub role: Role,
    /// Text, an image or audio.
    pub content: Content,
    /// The model that answered.
    pub model: String,
    /// Why it stopped, e.g. `endTurn` or `maxTokens`.
    pub stop_reason: Option<String>,
}

impl Sampled {
    /// The answer's text (`None` for an image or audio).
    pub fn text(&self) -> Option<&str> {
        match &self.content {
            Content::Text(text) => Some(text),
            _ => None,
        }
    }
}

/// Asks the client's model for a completion.
///
/// ```
/// use airlock_sdk::{sample, AskError, SamplingRequest};
///
/// let request = SamplingRequest::new("What is the capital of France?", 100)
///     .system("Answer in one word.");
/// match sample(request) {
///     Ok(answer) => println!("{} said {:?}", answer.model, answer.text()),
///     Err(AskError::Unavailable(why)) => println!("no model to ask: {why}"),
///     Err(other) => println!("{other}"),
/// }
/// ```
pub fn sample(request: SamplingRequest) -> Result<Sampled, AskError> {
    imp::sample(request)
}

/// A root the client exposes: information for the tool, never a folder it
/// may open (only the operator's grant mounts folders).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    /// A `file://` URI.
    pub uri: String,
    pub name: Option<String>,
}

/// The client's roots.
///
/// ```
/// use airlock_sdk::{roots, AskError};
///
/// let listed = roots().unwrap_or_default();
/// for root in &listed {
///     println!("{} ({})", root.uri, root.name.as_deref().unwrap_or("unnamed"));
/// }
/// # assert!(matches!(roots(), Err(AskError::Unavailable(_))));
/// ```
pub fn roots() -> Result<Vec<Root>, AskError> {
    imp::roots()
}

#[cfg(target_family = "wasm")]
mod imp {
    use super::{AskError, Elicited, Root, Sampled, SamplingRequest};
    use crate::bindings::airlock::tool::host as wit;
    use crate::bindings::airlock::tool::types as wt;
    use crate::{Content, Media, Role};

    pub(super) fn error(e: wit::AskError) -> AskError {
        match e {
            wit::AskError::Denied(why) => AskError::Denied(why),
            wit::AskError::Unavailable(why) => AskError::Unavailable(why),
            wit::AskError::OverLimit(why) => AskError::OverLimit(why),
            wit::AskError::Failed(why) => AskError::Failed(why),
        }
    }

    pub(super) fn answer(a: wit::ElicitAnswer) -> Elicited<String> {
        match a {
            wit::ElicitAnswer::Accept(text) => Elicited::Accept(text),
            wit::ElicitAnswer::Decline => Elicited::Decline,
            wit::ElicitAnswer::Cancel => Elicited::Cancel,
        }
    }

    pub fn elicit(message: &str, schema: &str) -> Result<Elicited<String>, AskError> {
        wit::elicit(message, schema).map(answer).map_err(error)
    }

    pub fn elicit_url(message: &str, url: &str) -> Result<Elicited<String>, AskError> {
        wit::elicit_url(message, url).map(answer).map_err(error)
    }

    fn media(m: Media) -> wt::Media {
        wt::Media {
            data: m.data,
            mime_type: m.mime_type,
        }
    }

    /// The contract's form of a sampling request.
    pub(super) fn sampling_request(
        request: SamplingRequest,
    ) -> Result<wit::SamplingRequest, AskError> {
        let messages = request
            .messages
            .into_iter()
            .map(|m| {
                let content = match m.content {
                    Content::Text(text) => wt::Content::Text(text),
                    Content::Image(m) => wt::Content::Image(media(m)),
                    Content::Audio(m) => wt::Content::Audio(media(m)),
                    _ => {
                        return Err(AskError::Failed(
                            "a sampling message holds text, an image or audio".into(),
                        ));
                    }
                };
                let role = match m.role {
                    Role::User => wt::Role::User,
                    Role::Assistant => wt::Role::Assistant,
                };
                Ok(wit::SamplingMessage { role, content })
            })
            .collect::<Result<Vec<_>, AskError>>()?;
        Ok(wit::SamplingRequest {
            messages,
            system_prompt: request.system_prompt,
            max_tokens: request.max_tokens,
            temperature: request.temperature,
            stop_sequences: request.stop_sequences,
            model_preferences: request.model_preferences.map(|p| wit::ModelPreferences {
                hints: p.hints,
                cost_priority: p.cost_priority,
                speed_priority: p.speed_priority,
                intelligence_priority: p.intelligence_priority,
            }),
        })
    }

    /// The model's answer, from the contract's form.
    pub(super) fn sampled(sampled: wit::Sampled) -> Result<Sampled, AskError> {
        let content = match sampled.content {
            wt::Content::Text(text) => Content::Text(text),
            wt::Content::Image(m) => Content::Image(Media {
                data: m.data,
                mime_type: m.mime_type,
            }),
            wt::Content::Audio(m) => Content::Audio(Media {
                data: m.data,
                mime_type: m.mime_type,
            }),
            _ => {
                return Err(AskError::Failed(
                    "the model answered with no text or media".into(),
                ));
            }
        };
        Ok(Sampled {
            role: match sampled.role {
                wt::Role::User => Role::User,
                wt::Role::Assistant => Role::Assistant,
            },
            content,
            model: sampled.model,
            stop_reason: sampled.stop_reason,
        })
    }

    pub fn sample(request: SamplingRequest) -> Result<Sampled, AskError> {
        let request = sampling_request(request)?;
        sampled(wit::sample(&request).map_err(error)?)
    }

    /// The client's roots, from the contract's form.
    pub(super) fn listed(roots: Vec<wit::Root>) -> Vec<Root> {
        roots
            .into_iter()
            .map(|r| Root {
                uri: r.uri,
                name: r.name,
            })
            .collect()
    }

    pub fn roots() -> Result<Vec<Root>, AskError> {
        wit::roots().map(listed).map_err(error)
    }
}

#[cfg(not(target_family = "wasm"))]
mod imp {
    use super::{AskError, Elicited, Root, Sampled, SamplingRequest};

    fn unavailable() -> AskError {
        AskError::Unavailable("there is no client to ask outside a component run by airlock".into())
    }

    pub fn elicit(_message: &str, _schema: &str) -> Result<Elicited<String>, AskError> {
        Err(unavailable())
    }

    pub fn elicit_url(_message: &str, _url: &str) -> Result<Elicited<String>, AskError> {
        Err(unavailable())
    }

    pub fn sample(_request: SamplingRequest) -> Result<Sampled, AskError> {
        Err(unavailable())
    }

    pub fn roots() -> Result<Vec<Root>, AskError> {
        Err(unavailable())
    }
}
