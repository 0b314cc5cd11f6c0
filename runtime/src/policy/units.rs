//! Sizes and durations as the policy file writes them (`"64MiB"`, `"5s"`).
//!
//! Only binary size units and three time units are accepted, so a value means
//! one thing: `"1MB"` is refused rather than guessed at.

use std::fmt;
use std::time::Duration;

use serde::de::{self, Deserializer, Visitor};

/// A size in bytes: an integer, or a string with a unit (`B`, `KiB`, `MiB`,
/// `GiB`), e.g. `"64MiB"` or `"512 KiB"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size(pub u64);

/// A duration: a string with a unit (`ms`, `s`, `m`), e.g. `"5s"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Time(pub Duration);

/// Splits `"64 MiB"` into `(64, "MiB")`.
fn split_number(text: &str) -> Option<(u64, &str)> {
    let text = text.trim();
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    if digits == 0 {
        return None;
    }
    let number = text[..digits].parse().ok()?;
    Some((number, text[digits..].trim_start()))
}

/// Parses a size string; the error says what is accepted.
pub(crate) fn parse_size(text: &str) -> Result<u64, String> {
    let bad = || {
        format!(
            "invalid size {text:?}: expected a number of bytes or a number with B, KiB, MiB or GiB (e.g. \"64MiB\")"
        )
    };
    let (number, unit) = split_number(text).ok_or_else(bad)?;
    let shift = match unit {
        "" | "B" => 0,
        "KiB" => 10,
        "MiB" => 20,
        "GiB" => 30,
        _ => return Err(bad()),
    };
    number
        .checked_mul(1 << shift)
        .ok_or_else(|| format!("size {text:?} is too large"))
}

/// Parses a duration string; the error says what is accepted.
pub(crate) fn parse_time(text: &str) -> Result<Duration, String> {
    let bad =
        || format!("invalid duration {text:?}: expected a number with ms, s or m (e.g. \"5s\")");
    let (number, unit) = split_number(text).ok_or_else(bad)?;
    let millis = match unit {
        "ms" => Some(number),
        "s" => number.checked_mul(1000),
        "m" => number.checked_mul(60_000),
        _ => return Err(bad()),
    };
    millis
        .map(Duration::from_millis)
        .ok_or_else(|| format!("duration {text:?} is too large"))
}

impl<'de> de::Deserialize<'de> for Size {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Size;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a size such as \"64MiB\" or a number of bytes")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Size, E> {
                u64::try_from(v)
                    .map(Size)
                    .map_err(|_| E::custom(format!("size {v} is negative")))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Size, E> {
                Ok(Size(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Size, E> {
                parse_size(v).map(Size).map_err(E::custom)
            }
        }
        deserializer.deserialize_any(V)
    }
}

impl<'de> de::Deserialize<'de> for Time {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Time;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a duration such as \"5s\" or \"500ms\"")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Time, E> {
                // A bare number is ambiguous (seconds? milliseconds?): ask for a unit.
                Err(E::custom(format!(
                    "duration {v} has no unit: write e.g. \"{v}s\" or \"{v}ms\""
                )))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Time, E> {
                parse_time(v).map(Time).map_err(E::custom)
            }
        }
        deserializer.deserialize_any(V)
    }
}

/// Formats a byte count the way the policy file writes it, for messages.
pub fn format_size(bytes: u64) -> String {
    for (shift, unit) in [(30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if bytes >= 1 << shift {
            return if bytes.is_multiple_of(1 << shift) {
                format!("{} {unit}", bytes >> shift)
            } else {
                format!("{:.1} {unit}", bytes as f64 / (1u64 << shift) as f64)
            };
        }
    }
    format!("{bytes} B")
}

/// `5s`, `250ms`, `1.5s`: how limits are shown in messages.
pub fn format_duration(d: std::time::Duration) -> String {
    if d.subsec_millis() == 0 && d.as_secs() > 0 {
        format!("{}s", d.as_secs())
    } else if d.as_secs() == 0 {
        format!("{}ms", d.as_millis())
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("64MiB"), Ok(64 << 20));
        assert_eq!(parse_size("64 MiB"), Ok(64 << 20));
        assert_eq!(parse_size("512KiB"), Ok(512 << 10));
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        assert_eq!(parse_size("100B"), Ok(100));
        assert_eq!(parse_size("100"), Ok(100));
        for bad in ["", "MiB", "64MB", "64mib", "-1", "1.5MiB", "64 MiB x"] {
            assert!(parse_size(bad).is_err(), "{bad:?} accepted");
        }
        assert!(
            parse_size("99999999999999GiB")
                .unwrap_err()
                .contains("too large")
        );
    }

    #[test]
    fn times() {
        assert_eq!(parse_time("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(parse_time("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_time("2m"), Ok(Duration::from_secs(120)));
        for bad in ["", "5", "5h", "s", "5 sec", "1.5s"] {
            assert!(parse_time(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn format() {
        assert_eq!(format_size(64 << 20), "64 MiB");
        assert_eq!(format_size(1536), "1.5 KiB");
        assert_eq!(
            format_duration(std::time::Duration::from_millis(1500)),
            "1.5s"
        );
        assert_eq!(format_duration(std::time::Duration::from_secs(5)), "5s");
        assert_eq!(
            format_duration(std::time::Duration::from_millis(250)),
            "250ms"
        );
        assert_eq!(format_size(1 << 30), "1 GiB");
        assert_eq!(format_size(100), "100 B");
    }
}
