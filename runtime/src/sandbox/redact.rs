//! Redaction of injected secrets from everything a call hands back.
//!
//! A tool never receives the credentials airlock injects into its requests
//! (`policy::Credential`), but an endpoint may echo them (a debug endpoint
//! that returns the request's headers, an error page quoting them). As
//! defence in depth, every text and byte string that leaves the sandbox —
//! the result's content blocks and structured output, `host::log` and
//! `host::progress` messages, captured stdout/stderr, the texts of
//! [`RunError`], and guest text in the runtime's own log — has each secret
//! replaced with [`REDACTED`] in these forms:
//!
//! - the value itself, and as it reads inside a JSON string (`\"`, `\\`,
//!   `\/` escaped);
//! - the value in a text that a JSON or URL decoder would turn into it,
//!   escaped in any mix of ways (`\u0026` as Go's `encoding/json` writes `&`,
//!   every character `\u`-escaped, `%26`): such a text is searched as it
//!   reads decoded, and the escaped stretch replaced where it stands;
//! - structured output as the decoded values the client receives: the
//!   guest's JSON text is parsed before redaction (`sandbox::run`), and
//!   every string, key and number of the value is redacted;
//! - its base64 encoding (standard and URL-safe alphabets, padded or not),
//!   and the part of it that any base64 text containing the secret holds,
//!   whatever the secret's offset (three alignments), so a secret inside an
//!   encoded `user:secret` or a longer blob is caught too;
//! - a text cut short by a limit does not end in the first part of a secret.
//!
//! Not caught: a secret the tool transforms in any other way (reversed,
//! hex, split across two messages, compressed, encrypted). Redaction is a
//! second line of defence against echoes, not a way to hand a secret to an
//! untrusted tool. A call with no credentials has no redactor and pays
//! nothing.

use std::borrow::Cow;
use std::sync::Arc;

use aho_corasick::{AhoCorasick, MatchKind};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use serde_json::Value;

use super::{RawOutput, RunError};
use crate::tool::{Content, ResourceBody};

/// What a secret is replaced with.
pub const REDACTED: &str = "[redacted]";

/// Shortest base64 fragment worth redacting: shorter ones occur in ordinary
/// text by chance.
const MIN_FRAGMENT: usize = 8;

/// The secrets of one call, ready to be found in text. Cheap to clone.
#[derive(Clone, Default)]
pub struct Redactor {
    /// `None` when the call has no credentials.
    inner: Option<Arc<Inner>>,
}

struct Inner {
    /// `None` if the patterns could not be compiled: then every text is
    /// withheld whole rather than passed on unredacted.
    finder: Option<AhoCorasick>,
    /// The raw secrets, for cutting a truncated text's partial tail.
    secrets: Vec<String>,
}

impl Redactor {
    /// The redactor of a call whose requests may carry `secrets`. (Which
    /// a grant's are: `Redactor::for_grant` in `sandbox::provision`.)
    pub(super) fn new(secrets: Vec<String>) -> Self {
        if secrets.is_empty() {
            return Redactor::default();
        }
        let mut needles: Vec<String> = secrets.iter().flat_map(|s| forms(s)).collect();
        needles.sort();
        needles.dedup();
        let finder = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&needles)
            .inspect_err(|err| {
                tracing::error!("cannot set up redaction ({err}); this call's output is withheld")
            })
            .ok();
        Redactor {
            inner: Some(Arc::new(Inner { finder, secrets })),
        }
    }

    /// `text` with every secret replaced.
    pub fn text<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let Some(inner) = &self.inner else {
            return Cow::Borrowed(text);
        };
        let Some(finder) = &inner.finder else {
            return Cow::Borrowed(REDACTED);
        };
        let plain = match finder.is_match(text) {
            true => Cow::Owned(finder.replace_all(text, &vec![REDACTED; finder.patterns_len()])),
            false => Cow::Borrowed(text),
        };
        match escaped_matches(finder, &plain) {
            Some(redacted) => Cow::Owned(redacted),
            None => plain,
        }
    }

    fn string(&self, text: String) -> String {
        let replaced = match self.text(&text) {
            Cow::Borrowed(same) if std::ptr::eq(same, text.as_str()) => None,
            other => Some(other.into_owned()),
        };
        replaced.unwrap_or(text)
    }

    fn bytes(&self, bytes: Vec<u8>) -> Vec<u8> {
        let Some(inner) = &self.inner else {
            return bytes;
        };
        match &inner.finder {
            Some(finder) if finder.is_match(&bytes) => {
                finder.replace_all_bytes(&bytes, &vec![REDACTED.as_bytes(); finder.patterns_len()])
            }
            Some(_) => bytes,
            None => REDACTED.as_bytes().to_vec(),
        }
    }

    /// A text a limit cut short: redacted, and without a trailing first
    /// part of a secret (the rest of it was cut off, so no form matched).
    fn truncated(&self, text: String) -> String {
        let Some(inner) = &self.inner else {
            return text;
        };
        let mut text = self.string(text);
        for secret in &inner.secrets {
            let longest = (1..secret.len())
                .rev()
                .filter(|&n| secret.is_char_boundary(n))
                .find(|&n| text.ends_with(&secret[..n]));
            if let Some(n) = longest {
                text.truncate(text.len() - n);
                text.push_str(REDACTED);
            }
        }
        text
    }

    /// A guest's result with every secret replaced.
    pub fn output(&self, raw: RawOutput) -> RawOutput {
        if self.inner.is_none() {
            return raw;
        }
        RawOutput {
            content: raw.content.into_iter().map(|c| self.content(c)).collect(),
            structured: raw.structured.map(|v| self.value(v)),
        }
    }

    /// What a guest printed (and how many bytes the cap dropped) with every
    /// secret replaced, a secret the cap cut in two included.
    pub fn log(&self, (log, dropped): (String, u64)) -> (String, u64) {
        if self.inner.is_none() {
            return (log, dropped);
        }
        let log = if dropped > 0 {
            self.truncated(log)
        } else {
            self.string(log)
        };
        (log, dropped)
    }

    /// A JSON value with every string, key and number redacted (a numeric
    /// secret may come back as a number).
    pub fn value(&self, value: Value) -> Value {
        match value {
            Value::String(s) => Value::String(self.string(s)),
            Value::Number(n) => {
                let text = n.to_string();
                match self.text(&text) {
                    Cow::Borrowed(_) => Value::Number(n),
                    Cow::Owned(redacted) => Value::String(redacted),
                }
            }
            Value::Array(items) => Value::Array(items.into_iter().map(|v| self.value(v)).collect()),
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(k, v)| (self.string(k), self.value(v)))
                    .collect(),
            ),
            other => other,
        }
    }

    fn content(&self, content: Content) -> Content {
        let opt = |s: Option<String>| s.map(|s| self.string(s));
        match content {
            Content::Text(text) => Content::Text(self.string(text)),
            Content::Image { data, mime_type } => Content::Image {
                data: self.bytes(data),
                mime_type: self.string(mime_type),
            },
            Content::Audio { data, mime_type } => Content::Audio {
                data: self.bytes(data),
                mime_type: self.string(mime_type),
            },
            Content::Embedded {
                uri,
                mime_type,
                body,
            } => Content::Embedded {
                uri: self.string(uri),
                mime_type: opt(mime_type),
                body: match body {
                    ResourceBody::Text(t) => ResourceBody::Text(self.string(t)),
                    ResourceBody::Blob(b) => ResourceBody::Blob(self.bytes(b)),
                },
            },
            Content::Link {
                uri,
                name,
                title,
                description,
                mime_type,
                size,
            } => Content::Link {
                uri: self.string(uri),
                name: self.string(name),
                title: opt(title),
                description: opt(description),
                mime_type: opt(mime_type),
                size,
            },
        }
    }

    /// An error with every secret in its text replaced.
    pub fn error(&self, err: RunError) -> RunError {
        if self.inner.is_none() {
            return err;
        }
        match err {
            RunError::Panic(m) => RunError::Panic(self.string(m)),
            RunError::Crashed(m) => RunError::Crashed(self.string(m)),
            RunError::BadOutput(m) => RunError::BadOutput(self.string(m)),
            RunError::InvalidArguments(m) => RunError::InvalidArguments(self.string(m)),
            RunError::Failed(m) => RunError::Failed(self.string(m)),
            RunError::Setup(m) => RunError::Setup(self.string(m)),
            other @ (RunError::TimedOut(_)
            | RunError::Memory(_)
            | RunError::Fuel
            | RunError::StackOverflow
            | RunError::Cancelled
            | RunError::OutputTooLarge { .. }) => other,
        }
    }
}

/// `text` with each secret redacted that shows only once the text is read
/// as a JSON string or URL decoder reads it (`\u0026`, `%26`, in any mix
/// with plain characters); `None` when there is none (or nothing escaped).
fn escaped_matches(finder: &AhoCorasick, text: &str) -> Option<String> {
    let raw = text.as_bytes();
    if !raw.iter().any(|&b| b == b'\\' || b == b'%') {
        return None;
    }
    let (decoded, spans) = decode(raw);
    let mut out = Vec::new();
    let mut copied = 0;
    for found in finder.find_iter(&decoded) {
        let (start, end) = (spans[found.start()].0, spans[found.end() - 1].1);
        out.extend_from_slice(&raw[copied..start]);
        out.extend_from_slice(REDACTED.as_bytes());
        copied = end;
    }
    if copied == 0 {
        return None;
    }
    out.extend_from_slice(&raw[copied..]);
    // Spans end on ASCII escapes or whole characters; should one not, the
    // text is withheld rather than cut inside a character.
    Some(String::from_utf8(out).unwrap_or_else(|_| REDACTED.to_string()))
}

/// `raw` decoded as a JSON string's escapes and URL percent-escapes would
/// be, and each decoded byte's span in `raw`. A `\u` escape of a character
/// outside ASCII decodes to 0xFF, which no secret (visible ASCII) holds.
fn decode(raw: &[u8]) -> (Vec<u8>, Vec<(usize, usize)>) {
    let hex = |bytes: &[u8]| {
        let digits = bytes.iter().all(u8::is_ascii_hexdigit);
        let text = std::str::from_utf8(bytes).ok().filter(|_| digits)?;
        u32::from_str_radix(text, 16).ok()
    };
    let mut decoded = Vec::with_capacity(raw.len());
    let mut spans = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let (byte, len) = match (raw[i], raw.get(i + 1)) {
            (b'\\', Some(b'u')) => match raw.get(i + 2..i + 6).and_then(hex) {
                Some(code) => (
                    u8::try_from(code).ok().filter(u8::is_ascii).unwrap_or(0xFF),
                    6,
                ),
                None => (b'\\', 1),
            },
            (b'\\', Some(&c)) => match c {
                b'"' | b'\\' | b'/' => (c, 2),
                b'b' => (0x08, 2),
                b'f' => (0x0C, 2),
                b'n' => (b'\n', 2),
                b'r' => (b'\r', 2),
                b't' => (b'\t', 2),
                _ => (b'\\', 1),
            },
            (b'%', _) => match raw.get(i + 1..i + 3).and_then(hex) {
                Some(code) => (code as u8, 3),
                None => (b'%', 1),
            },
            (byte, _) => (byte, 1),
        };
        decoded.push(byte);
        spans.push((i, i + len));
        i += len;
    }
    (decoded, spans)
}

/// Every form of `secret` that is redacted (see the module documentation).
fn forms(secret: &str) -> Vec<String> {
    let mut forms = vec![secret.to_string()];
    // Inside a JSON string; a header value is visible ASCII, so only these
    // characters are escaped (`/` optionally).
    let json = secret
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\t', "\\t");
    if json.contains('/') {
        forms.push(json.replace('/', "\\/"));
    }
    forms.push(json);
    let bytes = secret.as_bytes();
    for engine in [&STANDARD, &STANDARD_NO_PAD, &URL_SAFE, &URL_SAFE_NO_PAD] {
        forms.push(engine.encode(bytes));
    }
    // Inside a longer base64 text, the secret's bytes start at one of three
    // offsets in a 3-byte group; what is stable is the encoding of the
    // whole groups that lie within the secret.
    for skip in 0..3 {
        let Some(rest) = bytes.get(skip..) else {
            continue;
        };
        let whole = &rest[..rest.len() - rest.len() % 3];
        for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
            let fragment = engine.encode(whole);
            if fragment.len() >= MIN_FRAGMENT {
                forms.push(fragment);
            }
        }
    }
    forms
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "tok/en\"-42-s3cret";

    fn redactor() -> Redactor {
        Redactor::new(vec![SECRET.to_string()])
    }

    #[test]
    fn no_secrets_no_work() {
        let none = Redactor::default();
        assert!(matches!(none.text(SECRET), Cow::Borrowed(_)));
    }

    #[test]
    fn the_value_and_its_json_forms() {
        let r = redactor();
        assert_eq!(r.text(&format!("a {SECRET} b")), "a [redacted] b");
        let json =
            serde_json::to_string(&serde_json::json!({ "auth": format!("Bearer {SECRET}") }))
                .expect("json");
        let redacted = r.text(&json).into_owned();
        assert!(!redacted.contains("s3cret"), "{redacted}");
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&redacted).expect("still JSON"),
            serde_json::json!({ "auth": "Bearer [redacted]" })
        );
        let slashed = json.replace('/', "\\/");
        assert!(!r.text(&slashed).contains("s3cret"));
        assert_eq!(r.text("nothing here"), "nothing here");
    }

    /// A secret as JSON encoders and URL encoders escape it: the way Go's
    /// `encoding/json` writes `&`, `<` and `>`, every character escaped (in
    /// either case of hex digit), a mix, and percent-encoding.
    #[test]
    fn escaped_forms_a_decoder_undoes() {
        let secret = "s3cr3t/Tok+en=&<x>42";
        let r = Redactor::new(vec![secret.to_string()]);
        let go = secret
            .replace('&', "\\u0026")
            .replace('<', "\\u003c")
            .replace('>', "\\u003e");
        let every: String = secret
            .chars()
            .map(|c| format!("\\u{:04x}", c as u32))
            .collect();
        let upper: String = secret
            .chars()
            .map(|c| format!("\\u{:04X}", c as u32))
            .collect();
        let mixed = "s3\\u0063r3t\\/Tok+en=\\u0026<x\\u003e42".to_string();
        let percent: String = secret
            .bytes()
            .map(|b| match b.is_ascii_alphanumeric() {
                true => (b as char).to_string(),
                false => format!("%{b:02X}"),
            })
            .collect();
        for escaped in [go, every, upper, mixed, percent] {
            let json = format!("{{\"authorization\":\"Bearer {escaped}\"}}");
            let redacted = r.text(&json).into_owned();
            assert_eq!(
                redacted, "{\"authorization\":\"Bearer [redacted]\"}",
                "{escaped}"
            );
            // What a JSON decoder makes of it holds no secret either.
            if let Ok(value) = serde_json::from_str::<Value>(&redacted) {
                assert!(!value.to_string().contains("Tok+en"), "{value}");
            }
        }
        // Escapes with no secret behind them are left as they are.
        let other = "a \\u0026 b %20 c \\\\u0041";
        assert_eq!(r.text(other), other);
    }

    /// Structured output is redacted as values: what the client decodes.
    #[test]
    fn structured_values_keys_and_numbers() {
        let r = Redactor::new(vec!["s3cr3t/Tok+en=&<x>42".into(), "9876543210".into()]);
        let text = r#"{"authorization":"Bearer s3cr3t/Tok+en=\u0026\u003cx\u003e42","s3cr3t/Tok+en=&<x>42":1,"n":9876543210,"list":["ok"]}"#;
        let parsed: Value = serde_json::from_str(text).expect("json");
        let raw = RawOutput {
            content: vec![],
            structured: Some(parsed),
        };
        let out = r.output(raw).structured.expect("structured");
        assert_eq!(
            out,
            serde_json::json!({
                "authorization": "Bearer [redacted]",
                "[redacted]": 1,
                "n": "[redacted]",
                "list": ["ok"]
            })
        );
    }

    #[test]
    fn base64_at_every_offset() {
        let r = redactor();
        for prefix in ["", "u", "us", "user:", "Basic "] {
            let plain = format!("{prefix}{SECRET} and more text");
            // The characters that encode only bytes of the secret: the
            // whole 3-byte groups inside it.
            let first = prefix.len().div_ceil(3);
            let last = (prefix.len() + SECRET.len()) / 3;
            for engine in [&STANDARD, &URL_SAFE_NO_PAD] {
                let encoded = engine.encode(plain.as_bytes());
                let inside = &encoded[first * 4..last * 4];
                let redacted = r.text(&encoded).into_owned();
                assert!(redacted.contains(REDACTED), "{prefix:?}: {redacted}");
                assert!(!redacted.contains(inside), "{prefix:?}: {redacted}");
            }
        }
    }

    #[test]
    fn a_cut_text_loses_the_start_of_a_secret() {
        let r = redactor();
        let cut = format!("token: {}", &SECRET[..6]);
        assert_eq!(r.truncated(cut), "token: [redacted]");
        assert_eq!(r.truncated("plain end".into()), "plain end");
    }

    #[test]
    fn outputs_and_errors() {
        let r = redactor();
        let raw = RawOutput {
            content: vec![
                Content::Text(format!("echo: {SECRET}")),
                Content::Image {
                    data: format!("x{SECRET}x").into_bytes(),
                    mime_type: "image/png".into(),
                },
            ],
            structured: Some(serde_json::json!({ "h": SECRET })),
        };
        let out = r.output(raw);
        let (log, _) = r.log((format!("printed {SECRET}\n"), 0));
        let shown = format!("{:?} {:?} {log:?}", out.content, out.structured);
        assert!(!shown.contains("s3cret"), "{shown}");
        assert_eq!(log, "printed [redacted]\n");
        let err = r.error(RunError::Failed(format!("server said {SECRET}")));
        assert_eq!(err.to_string(), "server said [redacted]");
    }
}
