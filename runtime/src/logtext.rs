//! Guest text in the runtime's own log.
//!
//! A tool controls what it prints, logs, panics with and fails with. Copied
//! into the runtime's log as it is, a newline or a carriage return would let
//! it write lines that look exactly like the runtime's own (`refused
//! /srv/tools/x.wasm: …`), and an escape sequence could repaint the
//! operator's terminal. Everything a guest contributes to a log line goes
//! through [`GuestText`]: one line, control characters and the invisible
//! characters that reorder or split text written as escapes, and the line
//! marked as the tool's by the caller (tool name, call id).

use std::fmt;

/// Guest text, displayed on one line with control characters escaped
/// (`\n`, `\r`, `\t`, `\u{1b}` …). Backslashes stay as they are: they
/// cannot start a new line, and paths stay readable.
pub struct GuestText<'a>(pub &'a str);

/// Characters that must not reach a log line as they are: C0/C1 controls
/// and DEL, the Unicode line and paragraph separators, and the
/// bidirectional overrides and isolates that can make a line read as
/// something else.
fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
        )
}

impl fmt::Display for GuestText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.0;
        while let Some(at) = rest.find(needs_escape) {
            f.write_str(&rest[..at])?;
            let c = rest[at..].chars().next().unwrap_or_default();
            match c {
                '\n' => f.write_str("\\n")?,
                '\r' => f.write_str("\\r")?,
                '\t' => f.write_str("\\t")?,
                other => write!(f, "\\u{{{:x}}}", other as u32)?,
            }
            rest = &rest[at + c.len_utf8()..];
        }
        f.write_str(rest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(text: &str) -> String {
        GuestText(text).to_string()
    }

    #[test]
    fn plain_text_is_unchanged() {
        assert_eq!(
            shown("exported 2 lines for CUST-42"),
            "exported 2 lines for CUST-42"
        );
        assert_eq!(shown(r"C:\tools\x"), r"C:\tools\x");
        assert_eq!(shown("größe ✓"), "größe ✓");
        assert_eq!(shown(""), "");
    }

    #[test]
    fn nothing_a_guest_writes_starts_a_new_line() {
        let forged = "ok\nrefused /srv/tools/x.wasm: not a WebAssembly file\r\x1b[2K";
        let line = shown(forged);
        assert_eq!(
            line,
            "ok\\nrefused /srv/tools/x.wasm: not a WebAssembly file\\r\\u{1b}[2K"
        );
        assert!(!line.chars().any(needs_escape));
        for c in [
            '\u{2028}', '\u{2029}', '\u{202e}', '\u{2067}', '\u{85}', '\u{7f}', '\0',
        ] {
            let line = shown(&format!("a{c}b"));
            assert!(!line.contains(c), "{c:?} passed through: {line}");
            assert!(line.starts_with('a') && line.ends_with('b'), "{line}");
        }
    }
}
