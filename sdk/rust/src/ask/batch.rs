//! Several requests to the client at once, each under a key the tool
//! chooses ([`ask`]): in revision 2026-07-28 they reach the client in one
//! round (`inputRequests` under those keys), with sessions one after
//! another.

use serde_json::Value;

use super::{AskError, Elicited, Root, Sampled, SamplingRequest};

/// One request of a batch: what [`elicit`](crate::elicit),
/// [`elicit_url`](crate::elicit_url), [`sample`](crate::sample) and
/// [`roots`](crate::roots) ask one at a time.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    /// A form: `schema` is a JSON Schema of a flat object.
    Elicit { message: String, schema: Value },
    /// A URL for the user to open outside the client.
    ElicitUrl { message: String, url: String },
    /// A completion by the client's model.
    Sample(SamplingRequest),
    /// The client's roots.
    Roots,
}

impl Request {
    /// A form for the user, as [`elicit`](crate::elicit) asks.
    pub fn elicit(message: impl Into<String>, schema: &Value) -> Self {
        Request::Elicit {
            message: message.into(),
            schema: schema.clone(),
        }
    }

    /// A URL for the user to open, as [`elicit_url`](crate::elicit_url)
    /// asks.
    pub fn elicit_url(message: impl Into<String>, url: impl Into<String>) -> Self {
        Request::ElicitUrl {
            message: message.into(),
            url: url.into(),
        }
    }

    /// A completion by the client's model.
    pub fn sample(request: SamplingRequest) -> Self {
        Request::Sample(request)
    }
}

/// The answer to one request of a batch, of the request's kind.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    Elicited(Elicited),
    Sampled(Sampled),
    Roots(Vec<Root>),
}

/// The answers to a batch, in its order, each under its key.
#[derive(Debug, Clone, PartialEq)]
pub struct Answers(pub Vec<(String, Result<Answer, AskError>)>);

impl Answers {
    /// The answer under `key` (`None`: the batch had no such key).
    pub fn get(&self, key: &str) -> Option<&Result<Answer, AskError>> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, answer)| answer)
    }

    fn take<T>(
        &self,
        key: &str,
        what: &str,
        pick: impl Fn(&Answer) -> Option<T>,
    ) -> Result<T, AskError> {
        match self.get(key) {
            Some(Ok(answer)) => pick(answer)
                .ok_or_else(|| AskError::Failed(format!("the request {key:?} was not {what}"))),
            Some(Err(err)) => Err(err.clone()),
            None => Err(AskError::Failed(format!(
                "the batch asked nothing under {key:?}"
            ))),
        }
    }

    /// The user's answer to the form (or URL) asked under `key`.
    pub fn elicited(&self, key: &str) -> Result<Elicited, AskError> {
        self.take(key, "an elicitation", |a| match a {
            Answer::Elicited(e) => Some(e.clone()),
            _ => None,
        })
    }

    /// The model's answer to the sampling request under `key`.
    pub fn sampled(&self, key: &str) -> Result<Sampled, AskError> {
        self.take(key, "a sampling request", |a| match a {
            Answer::Sampled(s) => Some(s.clone()),
            _ => None,
        })
    }

    /// The client's roots, asked under `key`.
    pub fn roots(&self, key: &str) -> Result<Vec<Root>, AskError> {
        self.take(key, "a roots request", |a| match a {
            Answer::Roots(r) => Some(r.clone()),
            _ => None,
        })
    }
}

/// Asks several things at once, each under a key the tool chooses (unique
/// in the batch, 1 to 64 characters of `A-Z a-z 0-9 _ - .`): in revision
/// 2026-07-28 they reach the client in one round, as `inputRequests` under
/// these keys; with sessions one after another. Each request needs its
/// grant and counts against the call's limits exactly as alone, and has
/// its own answer. A batch that is empty, over 16 requests or with a bad or
/// repeated key is refused whole (`Err`), and nothing is asked. Natively
/// every batch is [`AskError::Unavailable`].
///
/// ```
/// use airlock_sdk::{ask, AskError, Elicited, Request, SamplingRequest};
/// use serde_json::json;
///
/// let schema = json!({
///     "type": "object",
///     "properties": { "name": { "type": "string" } },
///     "required": ["name"],
/// });
/// let asked = ask([
///     ("user_name", Request::elicit("What is your name?", &schema)),
///     ("greeting", Request::sample(SamplingRequest::new("Generate a greeting", 50))),
///     ("client_roots", Request::Roots),
/// ]);
/// match &asked {
///     Ok(answers) => {
///         if let Ok(Elicited::Accept(form)) = answers.elicited("user_name") {
///             println!("Hello, {}!", form["name"]);
///         }
///         if let Ok(greeting) = answers.sampled("greeting") {
///             println!("The model says {:?}", greeting.text());
///         }
///         let roots = answers.roots("client_roots").unwrap_or_default();
///         println!("{} root(s)", roots.len());
///     }
///     // Natively there is no client to ask.
///     Err(AskError::Unavailable(_)) => {}
///     Err(other) => panic!("{other}"),
/// }
/// # assert!(matches!(asked, Err(AskError::Unavailable(_))));
/// ```
pub fn ask<K: Into<String>>(
    requests: impl IntoIterator<Item = (K, Request)>,
) -> Result<Answers, AskError> {
    let requests: Vec<(String, Request)> = requests
        .into_iter()
        .map(|(key, request)| (key.into(), request))
        .collect();
    let keys: Vec<String> = requests.iter().map(|(key, _)| key.clone()).collect();
    let answers = host::batch(requests)?;
    Ok(Answers(keys.into_iter().zip(answers).collect()))
}

#[cfg(target_family = "wasm")]
mod host {
    use super::super::{imp, parsed};
    use super::{Answer, AskError, Request};
    use crate::bindings::airlock::tool::host as wit;

    pub fn batch(
        requests: Vec<(String, Request)>,
    ) -> Result<Vec<Result<Answer, AskError>>, AskError> {
        let mut kinds = Vec::with_capacity(requests.len());
        let requests = requests
            .into_iter()
            .map(|(key, request)| {
                let request = match request {
                    Request::Elicit { message, schema } => wit::Request::Elicit(wit::ElicitForm {
                        message,
                        requested_schema: schema.to_string(),
                    }),
                    Request::ElicitUrl { message, url } => {
                        wit::Request::ElicitUrl(wit::ElicitLink { message, url })
                    }
                    Request::Sample(request) => {
                        wit::Request::Sample(imp::sampling_request(request)?)
                    }
                    Request::Roots => wit::Request::Roots,
                };
                kinds.push(matches!(request, wit::Request::ElicitUrl(_)));
                Ok((key, request))
            })
            .collect::<Result<Vec<_>, AskError>>()?;
        let answers = wit::ask(&requests).map_err(imp::error)?;
        Ok(answers
            .into_iter()
            .zip(kinds)
            .map(|(answer, url)| match answer.map_err(imp::error)? {
                wit::Answer::Elicited(answer) => {
                    let answer = imp::answer(answer);
                    let answer = match (url, answer) {
                        (true, super::Elicited::Accept(_)) => {
                            super::Elicited::Accept(serde_json::Value::Object(Default::default()))
                        }
                        (_, answer) => parsed(answer)?,
                    };
                    Ok(Answer::Elicited(answer))
                }
                wit::Answer::Sampled(sampled) => imp::sampled(sampled).map(Answer::Sampled),
                wit::Answer::Roots(roots) => Ok(Answer::Roots(imp::listed(roots))),
            })
            .collect())
    }
}

#[cfg(not(target_family = "wasm"))]
mod host {
    use super::{Answer, AskError, Request};

    pub fn batch(
        _requests: Vec<(String, Request)>,
    ) -> Result<Vec<Result<Answer, AskError>>, AskError> {
        Err(AskError::Unavailable(
            "there is no client to ask outside a component run by airlock".into(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Content;

    #[test]
    fn answers_are_found_by_key_and_kind() {
        let answers = Answers(vec![
            ("name".into(), Ok(Answer::Elicited(Elicited::Decline))),
            (
                "roots".into(),
                Ok(Answer::Roots(vec![Root {
                    uri: "file:///a".into(),
                    name: None,
                }])),
            ),
            (
                "greeting".into(),
                Err(AskError::OverLimit("limits.samplings".into())),
            ),
        ]);
        assert_eq!(answers.elicited("name"), Ok(Elicited::Decline));
        assert_eq!(answers.roots("roots").map(|r| r.len()), Ok(1));
        assert_eq!(
            answers.sampled("greeting"),
            Err(AskError::OverLimit("limits.samplings".into()))
        );
        assert!(
            matches!(answers.sampled("name"), Err(AskError::Failed(why)) if why.contains("not a sampling request"))
        );
        assert!(
            matches!(answers.roots("nope"), Err(AskError::Failed(why)) if why.contains("nothing under"))
        );
        let sample = Request::sample(SamplingRequest::new("hi", 5));
        assert!(
            matches!(sample, Request::Sample(r) if r.messages[0].content == Content::Text("hi".into()))
        );
    }
}
