//! NDJSON: one object per line with exactly the 15 field names; `event_time_utc` as
//! RFC 3339. Blank lines are skipped. Strings without escapes are borrowed, not copied.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

use crate::base::error::{Error, Result};
use crate::schema::events::{EventRow, LineBatcher, SourcedBatch};

/// A string that borrows from the input when it can.
#[derive(Debug)]
struct Text<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v.to_string())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// `None` when the key is absent, `Some(None)` for JSON null.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw<'a> {
    #[serde(default, deserialize_with = "present", borrow)]
    event_id: Option<Option<Text<'a>>>,
    #[serde(default, deserialize_with = "present", borrow)]
    run_id: Option<Option<Text<'a>>>,
    #[serde(default, deserialize_with = "present")]
    sequence: Option<Option<i64>>,
    #[serde(default, deserialize_with = "present", borrow)]
    event_time_utc: Option<Option<Text<'a>>>,
    #[serde(default, deserialize_with = "present", borrow)]
    stage: Option<Option<Text<'a>>>,
    #[serde(default, deserialize_with = "present", borrow)]
    event_type: Option<Option<Text<'a>>>,
    #[serde(default, deserialize_with = "present", borrow)]
    feature_id: Option<Option<Text<'a>>>,
    #[serde(default, deserialize_with = "present", borrow)]
    source_crs: Option<Option<Text<'a>>>,
    #[serde(default, deserialize_with = "present", borrow)]
    target_crs: Option<Option<Text<'a>>>,
    #[serde(default, deserialize_with = "present", borrow)]
    outcome: Option<Option<Text<'a>>>,
    #[serde(default, deserialize_with = "present")]
    strategy_index: Option<Option<i32>>,
    #[serde(default, deserialize_with = "present")]
    accuracy_m: Option<Option<f64>>,
    #[serde(default, deserialize_with = "present", borrow)]
    rejection_reason: Option<Option<Text<'a>>>,
    #[serde(default, deserialize_with = "present", borrow)]
    tool_version: Option<Option<Text<'a>>>,
    #[serde(default, deserialize_with = "present", borrow)]
    audit_tag: Option<Option<Text<'a>>>,
}

/// The error of a line that does not parse, naming the field where serde stopped.
fn located(line: &str, loc: &str, plain: serde_json::Error) -> Error {
    let mut de = serde_json::Deserializer::from_str(line);
    match serde_path_to_error::deserialize::<_, Raw<'_>>(&mut de) {
        Err(e) => {
            let path = e.path().to_string();
            let at = if path.is_empty() || path == "." {
                loc.to_string()
            } else {
                format!("{loc}, field `{path}`")
            };
            Error::record(at, message(line, &e.into_inner()))
        }
        Ok(_) => Error::record(loc, message(line, &plain)),
    }
}

/// What a serde error says, with a hint for `NaN`/`Infinity` (which Python's `json.dumps`
/// writes) and cut to a readable length.
fn message(line: &str, e: &serde_json::Error) -> String {
    e.is_syntax()
        .then(|| crate::schema::rules::json_non_number(line, e.column()))
        .flatten()
        .unwrap_or_else(|| crate::schema::rules::shorten(e.to_string()))
}

/// Parse an RFC 3339 timestamp into microseconds since the epoch, UTC.
pub(crate) fn parse_time_us(s: &str) -> Result<i64, String> {
    let t = chrono::DateTime::parse_from_rfc3339(s.trim())
        .map_err(|e| crate::schema::rules::time_parse_problem(s, &e))?;
    if let Some(why) = crate::schema::rules::parsed_time_problem(s, &t) {
        return Err(why);
    }
    Ok(t.timestamp_micros())
}

fn field<T>(v: Option<Option<T>>, name: &str, line_no: u64) -> Result<Option<T>> {
    v.ok_or_else(|| {
        Error::record(
            format!("line {line_no}, field `{name}`"),
            "is missing (every one of the 15 fields must be present; use null for no value)",
        )
    })
}

fn s<'b, 'a: 'b>(v: &'b Option<Text<'a>>) -> Option<&'b str> {
    v.as_ref().map(|t| t.0.as_ref())
}

pub(super) fn parse(bytes: &[u8]) -> Result<Vec<SourcedBatch>> {
    let mut batcher = LineBatcher::new();
    parse_lines(bytes, 1, &mut batcher)?;
    batcher.finish()
}

/// Parse `bytes`, whose first line is input line `first_line`, into `batcher`.
pub(super) fn parse_lines(bytes: &[u8], first_line: u64, batcher: &mut LineBatcher) -> Result<()> {
    for (n, raw_line) in bytes.split(|&c| c == b'\n').enumerate() {
        let line_no = first_line + n as u64;
        // Built only for an error: most lines have none.
        let loc = || format!("line {line_no}");
        let raw_line = raw_line.strip_suffix(b"\r").unwrap_or(raw_line);
        // A byte-order mark some Windows tools put before the first line.
        let raw_line = if line_no == 1 {
            raw_line.strip_prefix(b"\xef\xbb\xbf").unwrap_or(raw_line)
        } else {
            raw_line
        };
        let line = std::str::from_utf8(raw_line).map_err(|e| {
            Error::record(
                loc(),
                format!("invalid UTF-8 at byte {} of the line", e.valid_up_to() + 1),
            )
        })?;
        if line.trim().is_empty() {
            continue;
        }
        if !line.trim_start().starts_with('{') {
            return Err(Error::record(
                loc(),
                "is not a JSON object (each line holds one object with the 15 fields)",
            ));
        }
        let mut de = serde_json::Deserializer::from_str(line);
        // Parsed without path tracking (a fifth of the parse time); a line that fails is
        // parsed again with it, to name the field.
        let raw: Raw<'_> = match Raw::deserialize(&mut de) {
            Ok(r) => r,
            Err(plain) => return Err(located(line, &loc(), plain)),
        };
        de.end().map_err(|e| {
            Error::record(loc(), format!("trailing characters after the object ({e})"))
        })?;
        let time = field(raw.event_time_utc, "event_time_utc", line_no)?;
        let time_us = match &time {
            Some(t) => Some(
                parse_time_us(&t.0)
                    .map_err(|m| Error::record(format!("{}, field `event_time_utc`", loc()), m))?,
            ),
            None => None,
        };
        let event_id = field(raw.event_id, "event_id", line_no)?;
        let run_id = field(raw.run_id, "run_id", line_no)?;
        let stage = field(raw.stage, "stage", line_no)?;
        let event_type = field(raw.event_type, "event_type", line_no)?;
        let feature_id = field(raw.feature_id, "feature_id", line_no)?;
        let source_crs = field(raw.source_crs, "source_crs", line_no)?;
        let target_crs = field(raw.target_crs, "target_crs", line_no)?;
        let outcome = field(raw.outcome, "outcome", line_no)?;
        let rejection_reason = field(raw.rejection_reason, "rejection_reason", line_no)?;
        let tool_version = field(raw.tool_version, "tool_version", line_no)?;
        let audit_tag = field(raw.audit_tag, "audit_tag", line_no)?;
        let row = EventRow {
            event_id: s(&event_id),
            run_id: s(&run_id),
            sequence: field(raw.sequence, "sequence", line_no)?,
            event_time_us: time_us,
            stage: s(&stage),
            event_type: s(&event_type),
            feature_id: s(&feature_id),
            source_crs: s(&source_crs),
            target_crs: s(&target_crs),
            outcome: s(&outcome),
            strategy_index: field(raw.strategy_index, "strategy_index", line_no)?,
            accuracy_m: field(raw.accuracy_m, "accuracy_m", line_no)?,
            rejection_reason: s(&rejection_reason),
            tool_version: s(&tool_version),
            audit_tag: s(&audit_tag),
        };
        batcher.push(&row, line_no)?;
    }
    Ok(())
}
