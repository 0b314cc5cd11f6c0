//! [`Timestamp`]: an RFC 3339 date-time that a tool receives or returns as a
//! JSON string (`format: date-time`).

use crate::ToolSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Value, json};
use std::fmt;
use std::str::FromStr;

/// An RFC 3339 date-time such as `2025-11-25T09:30:00Z` or
/// `2025-11-25T10:30:00.250+01:00`.
///
/// It is checked when it is parsed (and so when a tool receives it), keeps
/// the exact text it was given, and is advertised as
/// `{"type":"string","format":"date-time"}`.
///
/// ```
/// use airlock_sdk::Timestamp;
/// let t: Timestamp = "2025-11-25T10:30:00+01:00".parse()?;
/// assert_eq!(t.unix_seconds(), 1_764_063_000);
/// assert_eq!(t.offset_minutes(), 60);
/// assert!("2025-02-30T00:00:00Z".parse::<Timestamp>().is_err());
/// # Ok::<(), airlock_sdk::TimestampError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Timestamp {
    text: String,
    unix_seconds: i64,
    nanos: u32,
    offset_minutes: i32,
}

/// Why a text is not an RFC 3339 date-time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not an RFC 3339 date-time ({reason}); expected e.g. 2025-11-25T09:30:00Z")]
pub struct TimestampError {
    text: String,
    reason: &'static str,
}

impl Timestamp {
    /// The text as it was given.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Seconds since 1970-01-01T00:00:00Z (a leap second counts as the
    /// second before it).
    pub fn unix_seconds(&self) -> i64 {
        self.unix_seconds
    }

    /// The fraction of the second, in nanoseconds.
    pub fn nanos(&self) -> u32 {
        self.nanos
    }

    /// The UTC offset of the text, in minutes (`Z` is 0).
    pub fn offset_minutes(&self) -> i32 {
        self.offset_minutes
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl FromStr for Timestamp {
    type Err = TimestampError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        parse(text).map_err(|reason| TimestampError {
            text: text.to_owned(),
            reason,
        })
    }
}

/// Reads `n` ASCII digits at `at`.
fn digits(b: &[u8], at: usize, n: usize) -> Result<u32, &'static str> {
    let part = b.get(at..at + n).ok_or("too short")?;
    part.iter().try_fold(0u32, |acc, &c| {
        if c.is_ascii_digit() {
            Ok(acc * 10 + u32::from(c - b'0'))
        } else {
            Err("a digit is expected")
        }
    })
}

fn expect(b: &[u8], at: usize, allowed: &[u8], what: &'static str) -> Result<(), &'static str> {
    match b.get(at) {
        Some(c) if allowed.contains(c) => Ok(()),
        _ => Err(what),
    }
}

fn is_leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

/// Days from 1970-01-01 to the given date (proleptic Gregorian calendar).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn parse(text: &str) -> Result<Timestamp, &'static str> {
    let b = text.as_bytes();
    let year = digits(b, 0, 4)?;
    expect(b, 4, b"-", "`-` is expected after the year")?;
    let month = digits(b, 5, 2)?;
    expect(b, 7, b"-", "`-` is expected after the month")?;
    let day = digits(b, 8, 2)?;
    expect(b, 10, b"Tt ", "`T` is expected between date and time")?;
    let hour = digits(b, 11, 2)?;
    expect(b, 13, b":", "`:` is expected after the hour")?;
    let minute = digits(b, 14, 2)?;
    expect(b, 16, b":", "`:` is expected after the minutes")?;
    let second = digits(b, 17, 2)?;
    if !(1..=12).contains(&month) {
        return Err("the month is out of range");
    }
    let month_days = match month {
        2 if is_leap(i64::from(year)) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    if day == 0 || day > month_days {
        return Err("the day is out of range");
    }
    if hour > 23 || minute > 59 || second > 60 {
        return Err("the time is out of range");
    }
    let mut at = 19;
    let mut nanos = 0u32;
    if b.get(at) == Some(&b'.') {
        at += 1;
        let start = at;
        while b.get(at).is_some_and(u8::is_ascii_digit) {
            if at - start < 9 {
                nanos = nanos * 10 + u32::from(b[at] - b'0');
            }
            at += 1;
        }
        if at == start {
            return Err("digits are expected after `.`");
        }
        for _ in (at - start)..9 {
            nanos *= 10;
        }
    }
    let offset_minutes = match b.get(at) {
        Some(b'Z' | b'z') => {
            at += 1;
            0
        }
        Some(sign @ (b'+' | b'-')) => {
            let sign = if *sign == b'-' { -1 } else { 1 };
            let oh = digits(b, at + 1, 2)?;
            expect(b, at + 3, b":", "`:` is expected in the UTC offset")?;
            let om = digits(b, at + 4, 2)?;
            if oh > 23 || om > 59 {
                return Err("the UTC offset is out of range");
            }
            at += 6;
            sign * (oh * 60 + om) as i32
        }
        _ => return Err("a UTC offset (`Z` or `+01:00`) is expected"),
    };
    if at != b.len() {
        return Err("unexpected text after the UTC offset");
    }
    let days = days_from_civil(i64::from(year), month, day);
    let second = second.min(59);
    let local = days * 86_400 + i64::from(hour * 3600 + minute * 60 + second);
    Ok(Timestamp {
        text: text.to_owned(),
        unix_seconds: local - i64::from(offset_minutes) * 60,
        nanos,
        offset_minutes,
    })
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl ToolSchema for Timestamp {
    fn schema() -> Value {
        json!({"type": "string", "format": "date-time"})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_valid_date_times() {
        let t: Timestamp = "1970-01-01T00:00:00Z".parse().unwrap();
        assert_eq!((t.unix_seconds(), t.nanos()), (0, 0));
        let t: Timestamp = "2024-02-29t23:59:60.5-00:30".parse().unwrap();
        assert_eq!(t.nanos(), 500_000_000);
        assert_eq!(t.offset_minutes(), -30);
        let t: Timestamp = "1969-12-31 23:59:59.123456789123Z".parse().unwrap();
        assert_eq!((t.unix_seconds(), t.nanos()), (-1, 123_456_789));
    }

    #[test]
    fn rejects_invalid_date_times() {
        for bad in [
            "",
            "2025-11-25",
            "2025-11-25T09:30:00",
            "2025-13-01T00:00:00Z",
            "2023-02-29T00:00:00Z",
            "2025-11-25T24:00:00Z",
            "2025-11-25T09:30:00.Z",
            "2025-11-25T09:30:00+0100",
            "2025-11-25T09:30:00Zjunk",
            "２０２５-11-25T09:30:00Z",
        ] {
            assert!(bad.parse::<Timestamp>().is_err(), "{bad:?} was accepted");
        }
        let err = "soon".parse::<Timestamp>().unwrap_err().to_string();
        assert!(
            err.starts_with("\"soon\" is not an RFC 3339 date-time"),
            "{err}"
        );
    }
}
