//! JSON text for values that may be large: a tool's arguments on their way
//! to the guest, answers on their way to the client.
//!
//! serde_json looks at a string one byte at a time to find what needs
//! escaping; for a 1 MiB argument that took about half a millisecond on the
//! benchmark machine, as long as the guest's whole call. This writer tests
//! 16 bytes at a time for the three kinds of byte that need escaping (`"`,
//! `\` and control characters) and copies the runs between them. Escapes,
//! numbers and the layout are serde_json's, so the text is byte for byte
//! what `serde_json::to_string` writes.

use serde_json::Value;

/// The compact JSON text of `value`.
pub fn to_string(value: &Value) -> String {
    let bytes = to_vec(value);
    // Only whole UTF-8 strings and ASCII are ever written.
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// The compact JSON text of `value`, as bytes.
pub fn to_vec(value: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(estimate(value));
    write(&mut out, value);
    out
}

/// Appends the compact JSON text of `value` to `out`.
pub fn write(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        // serde_json's own number formatting (integers, shortest floats).
        Value::Number(n) => out.extend_from_slice(n.to_string().as_bytes()),
        Value::String(s) => write_str(out, s),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write(out, item);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            out.push(b'{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_str(out, key);
                out.push(b':');
                write(out, item);
            }
            out.push(b'}');
        }
    }
}

/// A quick guess of the text's size, so that large strings are not copied
/// again and again while the buffer grows.
fn estimate(value: &Value) -> usize {
    match value {
        Value::String(s) => s.len() + 2,
        Value::Array(items) => items.iter().map(estimate).sum::<usize>() + items.len() + 2,
        Value::Object(map) => {
            map.iter()
                .map(|(k, v)| k.len() + 4 + estimate(v))
                .sum::<usize>()
                + 2
        }
        _ => 8,
    }
}

const CHUNK: usize = 16;

fn needs_escape(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\'
}

/// Whether any of 16 bytes needs escaping; written without early exit so
/// that the compiler tests all 16 at once.
fn chunk_needs_escape(chunk: &[u8; CHUNK]) -> bool {
    chunk.iter().fold(false, |hit, &b| hit | needs_escape(b))
}

fn write_str(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        if let Some(chunk) = bytes.get(i..i + CHUNK).and_then(|c| c.try_into().ok())
            && !chunk_needs_escape(chunk)
        {
            i += CHUNK;
            continue;
        }
        let end = (i + CHUNK).min(bytes.len());
        while i < end {
            let b = bytes[i];
            if needs_escape(b) {
                out.extend_from_slice(&bytes[start..i]);
                escape(out, b);
                start = i + 1;
            }
            i += 1;
        }
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

fn escape(out: &mut Vec<u8>, b: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    match b {
        b'"' => out.extend_from_slice(b"\\\""),
        b'\\' => out.extend_from_slice(b"\\\\"),
        b'\n' => out.extend_from_slice(b"\\n"),
        b'\r' => out.extend_from_slice(b"\\r"),
        b'\t' => out.extend_from_slice(b"\\t"),
        0x08 => out.extend_from_slice(b"\\b"),
        0x0c => out.extend_from_slice(b"\\f"),
        _ => out.extend_from_slice(&[
            b'\\',
            b'u',
            b'0',
            b'0',
            HEX[usize::from(b >> 4)],
            HEX[usize::from(b & 0xf)],
        ]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn same_as_serde(value: &Value) {
        let expected = serde_json::to_string(value).expect("serde_json");
        assert_eq!(to_string(value), expected, "for {value:?}");
    }

    #[test]
    fn every_ascii_byte_and_unicode_escape_as_serde_json_does() {
        let all: String = (0u8..0x80).map(char::from).collect();
        for text in [
            all.clone(),
            all.repeat(3),
            format!("{}\"{}", "a".repeat(15), "b".repeat(17)),
            "x".repeat(CHUNK * 4),
            "é€𝄞 and \u{7f}\u{80}\u{2028}".into(),
            String::new(),
            "\\".repeat(40),
        ] {
            same_as_serde(&Value::String(text));
        }
        // Every position of an escape inside and across 16-byte chunks.
        for at in 0..40 {
            for special in ['"', '\\', '\n', '\u{1}', '\u{1f}'] {
                let mut text = "y".repeat(40);
                text.insert(at, special);
                same_as_serde(&Value::String(text));
            }
        }
    }

    #[test]
    fn values_of_every_kind_match_serde_json() {
        same_as_serde(&json!({
            "n": null, "t": true, "f": false,
            "i": -42, "u": u64::MAX, "x": 1.5e300, "small": 0.1,
            "a": [1, "two", [3], {"k\"ey": "v\nal"}],
            "empty": {}, "none": [],
            "text": "x".repeat(1000),
        }));
    }
}
