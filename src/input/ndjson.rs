//! NDJSON: one object per line with exactly the 15 field names; `event_time_utc` as
//! RFC 3339. Blank lines are skipped. Strings without escapes are borrowed, not copied.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

use crate::error::{Error, Result};
use crate::events::{EventRow, LineBatcher, SourcedBatch};

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

/// Parse an RFC 3339 timestamp into microseconds since the epoch, UTC.
pub(crate) fn parse_time_us(s: &str) -> Result<i64, String> {
    let t = chrono::DateTime::parse_from_rfc3339(s.trim())
        .map_err(|e| crate::rules::time_parse_problem(s, &e))?;
    if let Some(why) = crate::rules::parsed_time_problem(s, &t) {
        return Err(why);
    }
    Ok(t.timestamp_micros())
}

fn field<T>(v: Option<Option<T>>, name: &str, loc: &str) -> Result<Option<T>> {
    v.ok_or_else(|| {
        Error::record(
            format!("{loc}, field `{name}`"),
            "is missing (every one of the 15 fields must be present; use null for no value)",
        )
    })
}

fn s<'b, 'a: 'b>(v: &'b Option<Text<'a>>) -> Option<&'b str> {
    v.as_ref().map(|t| t.0.as_ref())
}

pub(super) fn parse(bytes: &[u8]) -> Result<Vec<SourcedBatch>> {
    let mut batcher = LineBatcher::new();
    for (n, raw_line) in bytes.split(|&c| c == b'\n').enumerate() {
        let line_no = n as u64 + 1;
        let loc = format!("line {line_no}");
        let raw_line = raw_line.strip_suffix(b"\r").unwrap_or(raw_line);
        // A byte-order mark some Windows tools put before the first line.
        let raw_line = if n == 0 {
            raw_line.strip_prefix(b"\xef\xbb\xbf").unwrap_or(raw_line)
        } else {
            raw_line
        };
        let line = std::str::from_utf8(raw_line).map_err(|e| {
            Error::record(
                &loc,
                format!("invalid UTF-8 at byte {} of the line", e.valid_up_to() + 1),
            )
        })?;
        if line.trim().is_empty() {
            continue;
        }
        if !line.trim_start().starts_with('{') {
            return Err(Error::record(
                &loc,
                "is not a JSON object (each line holds one object with the 15 fields)",
            ));
        }
        let mut de = serde_json::Deserializer::from_str(line);
        let raw: Raw<'_> = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner();
            let at = if path.is_empty() || path == "." {
                loc.clone()
            } else {
                format!("{loc}, field `{path}`")
            };
            let msg = inner
                .is_syntax()
                .then(|| crate::rules::json_non_number(line, inner.column()))
                .flatten()
                .unwrap_or_else(|| crate::rules::shorten(inner.to_string()));
            Error::record(at, msg)
        })?;
        de.end().map_err(|e| {
            Error::record(&loc, format!("trailing characters after the object ({e})"))
        })?;
        let time = field(raw.event_time_utc, "event_time_utc", &loc)?;
        let time_us = match &time {
            Some(t) => Some(
                parse_time_us(&t.0)
                    .map_err(|m| Error::record(format!("{loc}, field `event_time_utc`"), m))?,
            ),
            None => None,
        };
        let event_id = field(raw.event_id, "event_id", &loc)?;
        let run_id = field(raw.run_id, "run_id", &loc)?;
        let stage = field(raw.stage, "stage", &loc)?;
        let event_type = field(raw.event_type, "event_type", &loc)?;
        let feature_id = field(raw.feature_id, "feature_id", &loc)?;
        let source_crs = field(raw.source_crs, "source_crs", &loc)?;
        let target_crs = field(raw.target_crs, "target_crs", &loc)?;
        let outcome = field(raw.outcome, "outcome", &loc)?;
        let rejection_reason = field(raw.rejection_reason, "rejection_reason", &loc)?;
        let tool_version = field(raw.tool_version, "tool_version", &loc)?;
        let audit_tag = field(raw.audit_tag, "audit_tag", &loc)?;
        let row = EventRow {
            event_id: s(&event_id),
            run_id: s(&run_id),
            sequence: field(raw.sequence, "sequence", &loc)?,
            event_time_us: time_us,
            stage: s(&stage),
            event_type: s(&event_type),
            feature_id: s(&feature_id),
            source_crs: s(&source_crs),
            target_crs: s(&target_crs),
            outcome: s(&outcome),
            strategy_index: field(raw.strategy_index, "strategy_index", &loc)?,
            accuracy_m: field(raw.accuracy_m, "accuracy_m", &loc)?,
            rejection_reason: s(&rejection_reason),
            tool_version: s(&tool_version),
            audit_tag: s(&audit_tag),
        };
        batcher.push(&row, line_no)?;
    }
    batcher.finish()
}
