//! The limits of one call, each declared once, in `limits!`'s table: its
//! field, unit, default, value while a component is described, key in the
//! policy file, whether 0 is refused, how `airlock inspect` shows it, and
//! its doc. From the table come [`Limits`] (what a call gets, with
//! [`Limits::DEFAULT`] and [`Limits::DESCRIBE`]), `RawLimits` (the TOML as
//! written, read key by key in `raw`), `LimitsPatch` (one section's
//! values, merged defaults ← component ← tool in `file`), the check of a
//! section's values (in `parse`) and [`Limits::shown`] (what `inspect`
//! prints). A new limit is one row here plus its enforcement.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use toml::Spanned;

use super::units::{self, format_duration, format_size};

/// What a limit's value is, and how it is written, read and shown.
pub trait Unit {
    /// The effective value, in [`Limits`].
    type Value: Copy + std::fmt::Debug + PartialEq + Eq;
    /// The value as the policy file writes it.
    type Raw: for<'de> Deserialize<'de>;
    /// Whether a limit of this unit may be absent (not enforced at all):
    /// `inspect` lists those after the limits always in force.
    const OPTIONAL: bool = false;
    fn value(raw: &Self::Raw) -> Self::Value;
    fn is_zero(raw: &Self::Raw) -> bool;
    /// In `inspect`'s text; `None` when the limit is not enforced.
    fn text(value: Self::Value) -> Option<String>;
    /// In `inspect --json`.
    fn json(value: Self::Value) -> Value;
}

/// The units of limits.
pub mod unit {
    use super::*;

    /// Bytes, written `"64MiB"` or as a number of bytes.
    pub struct Size;
    /// A duration, written `"5s"`, `"250ms"` or `"2m"`.
    pub struct Time;
    /// A number (of files, messages, requests, …).
    pub struct Count;
    /// A number that fits 32 bits.
    pub struct Count32;
    /// A number that is not enforced unless the policy gives one (fuel).
    pub struct Metered;

    impl Unit for Size {
        type Value = u64;
        type Raw = units::Size;
        fn value(raw: &units::Size) -> u64 {
            raw.0
        }
        fn is_zero(raw: &units::Size) -> bool {
            raw.0 == 0
        }
        fn text(value: u64) -> Option<String> {
            Some(format_size(value))
        }
        fn json(value: u64) -> Value {
            json!(value)
        }
    }

    impl Unit for Time {
        type Value = Duration;
        type Raw = units::Time;
        fn value(raw: &units::Time) -> Duration {
            raw.0
        }
        fn is_zero(raw: &units::Time) -> bool {
            raw.0.is_zero()
        }
        fn text(value: Duration) -> Option<String> {
            Some(format_duration(value))
        }
        /// In milliseconds (the key says so: `time_ms`).
        fn json(value: Duration) -> Value {
            json!(value.as_millis() as u64)
        }
    }

    impl Unit for Count {
        type Value = u64;
        type Raw = u64;
        fn value(raw: &u64) -> u64 {
            *raw
        }
        fn is_zero(raw: &u64) -> bool {
            *raw == 0
        }
        fn text(value: u64) -> Option<String> {
            Some(value.to_string())
        }
        fn json(value: u64) -> Value {
            json!(value)
        }
    }

    impl Unit for Count32 {
        type Value = u32;
        type Raw = u32;
        fn value(raw: &u32) -> u32 {
            *raw
        }
        fn is_zero(raw: &u32) -> bool {
            *raw == 0
        }
        fn text(value: u32) -> Option<String> {
            Some(value.to_string())
        }
        fn json(value: u32) -> Value {
            json!(value)
        }
    }

    impl Unit for Metered {
        type Value = Option<u64>;
        type Raw = u64;
        const OPTIONAL: bool = true;
        fn value(raw: &u64) -> Option<u64> {
            Some(*raw)
        }
        fn is_zero(raw: &u64) -> bool {
            *raw == 0
        }
        fn text(value: Option<u64>) -> Option<String> {
            value.map(|v| v.to_string())
        }
        fn json(value: Option<u64>) -> Value {
            json!(value)
        }
    }
}

/// Whether a policy may set a limit to 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Zero {
    /// A zero limit would make every call fail: always a mistake.
    Refused,
    /// 0 means "none of these" (e.g. no elicitations).
    Allowed,
}

/// Where `airlock inspect` shows a limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    /// In the `limits` line and `--json`'s `limits` object.
    Limits,
    /// With the `ask` grant, and on its line when the kind it bounds
    /// (`"elicit"`, `"sample"`, `"roots"`) is granted.
    Ask(&'static str),
    /// Not shown.
    Hidden,
}

/// One limit's declaration, as [`LIMIT_KEYS`] lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitKey {
    /// Its key in the policy file's `limits`.
    pub key: &'static str,
    /// Its doc: what it bounds.
    pub doc: &'static str,
    pub zero: Zero,
    pub shown: Shown,
    /// Its key in `inspect --json`.
    pub json: &'static str,
    /// Its part of `inspect`'s `limits` line, or of the ask line, `{}`
    /// standing for the value (empty: not in the line).
    pub line: &'static str,
}

/// One limit of a [`Limits`], as `airlock inspect` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct ShownLimit {
    pub declared: &'static LimitKey,
    pub json: Value,
    /// The value as text; `None` when it is not enforced.
    pub text: Option<String>,
    /// Listed after the limits always in force.
    pub optional: bool,
}

macro_rules! limits {
    ($(
        $(#[doc = $doc:literal])*
        $field:ident: $unit:ident = $default:expr, describe $describe:expr,
            key $key:literal, zero $zero:ident, $shown:ident $(($kind:literal))?
            $json:literal $line:literal;
    )*) => {
        /// Resource limits of one call.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct Limits {
            $($(#[doc = $doc])* pub $field: <unit::$unit as Unit>::Value,)*
        }

        impl Limits {
            /// What a call gets where no policy section sets a limit.
            pub const DEFAULT: Limits = Limits { $($field: $default,)* };
            /// Listing a component's tools and offers: quick and small,
            /// no folders, nothing asked of a client.
            pub const DESCRIBE: Limits = Limits { $($field: $describe,)* };

            /// Every limit with its value, in the table's order.
            pub fn shown(&self) -> Vec<ShownLimit> {
                let mut declared = LIMIT_KEYS.iter();
                let mut shown = Vec::with_capacity(LIMIT_KEYS.len());
                $(
                    if let Some(key) = declared.next() {
                        shown.push(ShownLimit {
                            declared: key,
                            json: <unit::$unit as Unit>::json(self.$field),
                            text: <unit::$unit as Unit>::text(self.$field),
                            optional: <unit::$unit as Unit>::OPTIONAL,
                        });
                    }
                )*
                shown
            }
        }

        /// Every limit's declaration, in the table's order.
        pub const LIMIT_KEYS: &[LimitKey] = &[$(LimitKey {
            key: $key,
            doc: concat!($($doc, "\n",)*),
            zero: Zero::$zero,
            shown: Shown::$shown $(($kind))?,
            json: $json,
            line: $line,
        },)*];

        /// `limits` as written: each key optional, unknown keys refused.
        #[derive(Deserialize, Default)]
        #[serde(deny_unknown_fields)]
        pub(super) struct RawLimits {
            $(
                #[serde(rename = $key)]
                $field: Option<Spanned<<unit::$unit as Unit>::Raw>>,
            )*
        }

        /// One section's limits; `None` = inherit from the less specific
        /// section.
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        pub(super) struct LimitsPatch {
            $(pub(super) $field: Option<<unit::$unit as Unit>::Value>,)*
        }

        impl LimitsPatch {
            /// The limits this section sets, over `limits`.
            pub(super) fn apply_to(&self, limits: &mut Limits) {
                $(limits.$field = self.$field.unwrap_or(limits.$field);)*
            }
        }

        impl RawLimits {
            /// The section's limits; a value in error is left out and
            /// `refuse`d with the byte offset it is at.
            pub(super) fn check(self, mut refuse: impl FnMut(usize, String)) -> LimitsPatch {
                LimitsPatch {$(
                    $field: self.$field.and_then(|v| {
                        let refused = Zero::$zero == Zero::Refused
                            && <unit::$unit as Unit>::is_zero(v.get_ref());
                        if refused {
                            refuse(v.span().start, format!("limit {} must be greater than 0", $key));
                            return None;
                        }
                        Some(<unit::$unit as Unit>::value(v.get_ref()))
                    }),
                )*}
            }
        }
    };
}

limits! {
    /// Linear memory (all memories of the instance together), in bytes.
    memory: Size = 64 << 20, describe 256 << 20,
        key "memory", zero Refused, Limits "memory" "memory {}";
    /// Wall-clock time of one call.
    time: Time = Duration::from_secs(5), describe Duration::from_secs(10),
        key "time", zero Refused, Limits "time_ms" "time {}";
    /// Fuel (instructions, roughly); `None` = not metered.
    fuel: Metered = None, describe None,
        key "fuel", zero Refused, Limits "fuel" "fuel {}";
    /// Size of the result (content + structured JSON), in bytes.
    output: Size = 1 << 20, describe 8 << 20,
        key "output", zero Refused, Limits "output" "output {}";
    /// Guest stdout + stderr kept, in bytes; the rest is dropped with a note.
    log: Size = 64 << 10, describe 64 << 10,
        key "log", zero Allowed, Limits "log" "log {}";
    /// Calls of one tool running at the same time.
    concurrency: Count32 = 16, describe 1,
        key "concurrency", zero Refused, Limits "concurrency" "{} concurrent";
    /// Bytes one call may write into its granted folders (`write`,
    /// `set-size` growth, file streams together). Listing gets no folders.
    write: Size = 256 << 20, describe 0,
        key "write", zero Refused, Hidden "write" "";
    /// Files, folders and links one call may create in its granted folders.
    files: Count = 4096, describe 0,
        key "files", zero Refused, Hidden "files" "";
    /// Descriptors (open files and folders) one call may hold at once.
    open: Count = 256, describe 16,
        key "open", zero Refused, Hidden "open" "";
    /// `host::log` and `host::progress` messages one call may send its
    /// client (their bytes count against `log`).
    messages: Count = 1000, describe 100,
        key "messages", zero Allowed, Hidden "messages" "";
    /// Elicitation requests (`host.elicit`, `host.elicit-url`) per call.
    /// Listing asks nothing of a client.
    elicitations: Count32 = 3, describe 0,
        key "elicitations", zero Allowed, Ask("elicit")
            "elicitations" "{} elicitation(s)";
    /// Sampling requests (`host.sample`) per call.
    samplings: Count32 = 3, describe 0,
        key "samplings", zero Allowed, Ask("sample")
            "samplings" "{} sampling request(s)";
    /// The most tokens one sampling request may ask for: a request asking
    /// more is capped to this (the tool sees `stop-reason` `maxTokens`).
    sample_tokens: Count32 = 1024, describe 0,
        key "sample-tokens", zero Refused, Ask("sample")
            "sample_tokens" "of at most {} tokens";
    /// `roots/list` requests (`host.roots`) per call: they cost the user
    /// nothing, but a guest must not flood its client with them.
    roots_requests: Count32 = 10, describe 0,
        key "roots-requests", zero Allowed, Ask("roots")
            "roots_requests" "{} roots request(s)";
}

impl Default for Limits {
    fn default() -> Self {
        Limits::DEFAULT
    }
}

impl Limits {
    /// `inspect`'s `limits` line: the limits always in force, then those
    /// enforced only when the policy sets them (fuel).
    pub fn line(&self) -> String {
        let shown = self.shown();
        let in_line = |optional: bool| {
            shown
                .iter()
                .filter(move |s| s.declared.shown == Shown::Limits && s.optional == optional)
                .filter(|s| !s.declared.line.is_empty())
                .filter_map(|s| Some(s.declared.line.replace("{}", s.text.as_deref()?)))
        };
        let parts: Vec<String> = in_line(false).chain(in_line(true)).collect();
        format!("limits: {}", parts.join(", "))
    }

    /// The limits of one kind of `ask` (its policy name), as the ask line
    /// says them: `1 sampling request(s) of at most 500 tokens`.
    pub fn ask_text(&self, kind: &str) -> Option<String> {
        let parts: Vec<String> = self
            .shown()
            .into_iter()
            .filter(|s| matches!(s.declared.shown, Shown::Ask(k) if k == kind))
            .filter_map(|s| Some(s.declared.line.replace("{}", s.text.as_deref()?)))
            .collect();
        (!parts.is_empty()).then(|| parts.join(" "))
    }

    /// `inspect --json`'s values of the limits where `shown` holds, by
    /// their JSON keys, in the table's order.
    pub fn json(&self, shown: impl Fn(Shown) -> bool) -> serde_json::Map<String, Value> {
        self.shown()
            .into_iter()
            .filter(|s| shown(s.declared.shown))
            .map(|s| (s.declared.json.to_string(), s.json))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The line and JSON as `inspect` printed them before the table.
    #[test]
    fn inspect_shows_the_limits_as_before() {
        let l = Limits::DEFAULT;
        assert_eq!(
            l.line(),
            "limits: memory 64 MiB, time 5s, output 1 MiB, log 64 KiB, 16 concurrent"
        );
        let metered = Limits {
            fuel: Some(5000),
            ..l
        };
        assert_eq!(
            metered.line(),
            "limits: memory 64 MiB, time 5s, output 1 MiB, log 64 KiB, 16 concurrent, fuel 5000"
        );
        assert_eq!(
            serde_json::to_string(&metered.json(|s| s == Shown::Limits)).expect("json"),
            r#"{"memory":67108864,"time_ms":5000,"fuel":5000,"output":1048576,"log":65536,"concurrency":16}"#
        );
        assert_eq!(
            serde_json::to_string(&l.json(|s| matches!(s, Shown::Ask(_)))).expect("json"),
            r#"{"elicitations":3,"samplings":3,"sample_tokens":1024,"roots_requests":10}"#
        );
        let asked = Limits {
            samplings: 1,
            sample_tokens: 500,
            ..l
        };
        let kinds = ["elicit", "sample", "roots", "mount"].map(|kind| asked.ask_text(kind));
        assert_eq!(
            kinds,
            [
                Some("3 elicitation(s)".to_string()),
                Some("1 sampling request(s) of at most 500 tokens".to_string()),
                Some("10 roots request(s)".to_string()),
                None,
            ]
        );
    }

    #[test]
    fn the_table_declares_each_limit_once() {
        let keys: Vec<&str> = LIMIT_KEYS.iter().map(|k| k.key).collect();
        let mut unique = keys.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), keys.len(), "{keys:?}");
        assert_eq!(Limits::DEFAULT.shown().len(), LIMIT_KEYS.len());
        assert!(LIMIT_KEYS.iter().all(|k| !k.doc.trim().is_empty()));
    }

    /// docs/policy.md's table of limits lists each declared limit, with
    /// its default and whether 0 is refused.
    #[test]
    fn the_reference_lists_every_limit() {
        let docs = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/policy.md");
        let docs = std::fs::read_to_string(docs).expect("docs/policy.md");
        for shown in Limits::DEFAULT.shown() {
            let key = shown.declared.key;
            let row = docs
                .lines()
                .find(|l| l.starts_with(&format!("| `{key}` |")))
                .unwrap_or_else(|| panic!("docs/policy.md has no row for limits.{key}"));
            let cells: Vec<&str> = row.split('|').map(str::trim).collect();
            let default = shown.text.unwrap_or_else(|| "none".to_string());
            let zero = match shown.declared.zero {
                Zero::Refused => "refused",
                Zero::Allowed => "allowed",
            };
            assert_eq!(cells[3..5], [default.as_str(), zero], "{row}");
        }
    }

    #[test]
    fn a_patch_sets_only_what_it_names() {
        let mut limits = Limits::DEFAULT;
        LimitsPatch {
            memory: Some(1 << 20),
            fuel: Some(Some(7)),
            ..LimitsPatch::default()
        }
        .apply_to(&mut limits);
        assert_eq!(
            limits,
            Limits {
                memory: 1 << 20,
                fuel: Some(7),
                ..Limits::DEFAULT
            }
        );
    }
}
