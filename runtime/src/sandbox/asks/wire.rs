//! A guest's requests to the client on the wire: the MCP params of each
//! (`elicitation/create` in form and URL mode, `sampling/createMessage`)
//! made from the contract's types, and the client's answers read back into
//! them — each refusing, with a reason the tool sees, what does not fit.

use base64::Engine as _;
use serde_json::{Map, Value, json};

use super::super::bindings::{host, types};
use crate::observe::AskKind;

/// `elicitation/create` params of a form: `schema` must be a JSON object.
pub fn form_params(message: &str, schema: &str) -> Result<Value, host::AskError> {
    let schema: Value = serde_json::from_str(schema)
        .ok()
        .filter(Value::is_object)
        .ok_or_else(|| {
            host::AskError::Failed(
                "requested-schema must be a JSON Schema object (as text) of a flat object".into(),
            )
        })?;
    Ok(json!({ "mode": "form", "message": message, "requestedSchema": schema }))
}

/// `elicitation/create` params of a URL-mode request, with a fresh id.
pub fn url_params(message: &str, url: &str) -> Value {
    let id: u64 = rand::random();
    json!({
        "mode": "url",
        "message": message,
        "url": url,
        "elicitationId": format!("{id:016x}"),
    })
}

/// The user's answer to an elicitation, from the client's result.
pub fn elicit_answer(result: &Value) -> Result<host::ElicitAnswer, host::AskError> {
    match result.get("action").and_then(Value::as_str) {
        Some("accept") => {
            let content = result
                .get("content")
                .cloned()
                .unwrap_or_else(|| Value::Object(Map::new()));
            Ok(host::ElicitAnswer::Accept(content.to_string()))
        }
        Some("decline") => Ok(host::ElicitAnswer::Decline),
        Some("cancel") => Ok(host::ElicitAnswer::Cancel),
        _ => Err(host::AskError::Failed(
            "the client's answer to the elicitation has no action (accept, decline or cancel)"
                .into(),
        )),
    }
}

fn role(role: types::Role) -> &'static str {
    match role {
        types::Role::User => "user",
        types::Role::Assistant => "assistant",
    }
}

fn b64(data: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(data)
}

/// A sampling message's content: text, an image or audio.
fn sampling_content(content: &types::Content) -> Result<Value, host::AskError> {
    Ok(match content {
        types::Content::Text(text) => json!({ "type": "text", "text": text }),
        types::Content::Image(m) => {
            json!({ "type": "image", "data": b64(&m.data), "mimeType": m.mime_type })
        }
        types::Content::Audio(m) => {
            json!({ "type": "audio", "data": b64(&m.data), "mimeType": m.mime_type })
        }
        types::Content::Embedded(_) | types::Content::Link(_) => {
            return Err(host::AskError::Failed(
                "a sampling message holds text, an image or audio".into(),
            ));
        }
    })
}

/// `sampling/createMessage` params; `max-tokens` is capped to `cap`
/// (`limits.sample-tokens`).
pub fn sampling_params(request: &host::SamplingRequest, cap: u32) -> Result<Value, host::AskError> {
    let messages = request
        .messages
        .iter()
        .map(|m| Ok(json!({ "role": role(m.role), "content": sampling_content(&m.content)? })))
        .collect::<Result<Vec<_>, host::AskError>>()?;
    let mut params = json!({
        "messages": messages,
        "maxTokens": request.max_tokens.min(cap),
    });
    if let Some(system) = &request.system_prompt {
        params["systemPrompt"] = system.as_str().into();
    }
    if let Some(t) = request.temperature.filter(|t| t.is_finite()) {
        params["temperature"] = t.into();
    }
    if !request.stop_sequences.is_empty() {
        params["stopSequences"] = request.stop_sequences.clone().into();
    }
    if let Some(p) = &request.model_preferences {
        let mut prefs = json!({});
        if !p.hints.is_empty() {
            prefs["hints"] = p.hints.iter().map(|h| json!({ "name": h })).collect();
        }
        let priorities = [
            ("costPriority", p.cost_priority),
            ("speedPriority", p.speed_priority),
            ("intelligencePriority", p.intelligence_priority),
        ];
        for (key, value) in priorities {
            if let Some(v) = value.filter(|v| (0.0..=1.0).contains(v)) {
                prefs[key] = v.into();
            }
        }
        params["modelPreferences"] = prefs;
    }
    Ok(params)
}

/// The client model's answer, from a `CreateMessageResult`.
pub fn sampled(result: &Value) -> Result<host::Sampled, host::AskError> {
    let bad = |what: &str| {
        host::AskError::Failed(format!("the client's sampling answer has no valid {what}"))
    };
    let role = match result.get("role").and_then(Value::as_str) {
        Some("user") => types::Role::User,
        Some("assistant") | None => types::Role::Assistant,
        Some(_) => return Err(bad("role")),
    };
    // A list of blocks (2025-11-25 allows it): the first is the answer.
    let block = match result.get("content") {
        Some(Value::Array(blocks)) => blocks.first(),
        other => other,
    }
    .ok_or_else(|| bad("content"))?;
    let media = |block: &Value| -> Result<types::Media, host::AskError> {
        let data = block
            .get("data")
            .and_then(Value::as_str)
            .and_then(|d| base64::engine::general_purpose::STANDARD.decode(d).ok())
            .ok_or_else(|| bad("data"))?;
        let mime_type = block
            .get("mimeType")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("mimeType"))?
            .to_string();
        Ok(types::Media { data, mime_type })
    };
    let content = match block.get("type").and_then(Value::as_str) {
        Some("text") => types::Content::Text(
            block
                .get("text")
                .and_then(Value::as_str)
                .ok_or_else(|| bad("text"))?
                .to_string(),
        ),
        Some("image") => types::Content::Image(media(block)?),
        Some("audio") => types::Content::Audio(media(block)?),
        _ => return Err(bad("content")),
    };
    Ok(host::Sampled {
        role,
        content,
        model: result
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        stop_reason: result
            .get("stopReason")
            .and_then(Value::as_str)
            .map(str::to_string),
    })
}

/// The answer to one request of a batch, by its kind.
pub fn batch_answer(kind: AskKind, result: &Value) -> Result<host::Answer, host::AskError> {
    Ok(match kind {
        AskKind::ElicitForm | AskKind::ElicitUrl => host::Answer::Elicited(elicit_answer(result)?),
        AskKind::Sample => host::Answer::Sampled(sampled(result)?),
        AskKind::Roots => host::Answer::Roots(roots(result)?),
    })
}

/// The client's roots, from a `ListRootsResult`: information for the
/// tool, never a folder it may open.
pub fn roots(result: &Value) -> Result<Vec<host::Root>, host::AskError> {
    let roots = result
        .get("roots")
        .and_then(Value::as_array)
        .ok_or_else(|| host::AskError::Failed("the client's answer lists no roots".into()))?;
    Ok(roots
        .iter()
        .filter_map(|root| {
            Some(host::Root {
                uri: root.get("uri")?.as_str()?.to_string(),
                name: root.get("name").and_then(Value::as_str).map(str::to_string),
            })
        })
        .collect())
}
