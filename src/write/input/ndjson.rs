//! NDJSON: one object per line with 1.2.0's 15 field names, and any of the 6 fields 1.3.0
//! adds (an absent 1.3.0 field is null, so 1.2.0 lines are read as they always were);
//! `event_time_utc` as RFC 3339, `degraded` as `true`/`false`. Blank lines are skipped.
//! Strings without escapes are borrowed, not copied.
//!
//! Every refused line is reported, not only the first (the batcher carries the errors to
//! the row rules, which order them): a line that is not a JSON object makes no row; a line
//! that is one, with refused fields (unknown, duplicated, missing, of another JSON type, a
//! time that is not RFC 3339), names each of them and makes a row with those cells null,
//! so the row rules still check its other fields. Positions are the file's: the line
//! number, and for a syntax error the column in characters (serde's own "at line 1
//! column N" describes the one-line buffer and is not shown).

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

use crate::base::error::Result;
use crate::schema::contract::{self, col, Kind, COLUMNS, KNOWN_COLUMNS};
use crate::schema::events::{EventRow, LineBatcher, SourcedBatch};
use crate::schema::rules::{cut, shorten};
use crate::write::input::tolerant::{colon_offset, Whole};

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
    sequence: Option<Option<Whole<i64>>>,
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
    strategy_index: Option<Option<Whole<i32>>>,
    #[serde(default, deserialize_with = "present")]
    accuracy_m: Option<Option<f64>>,
    #[serde(default, deserialize_with = "present", borrow)]
    rejection_reason: Option<Option<Text<'a>>>,
    #[serde(default, deserialize_with = "present", borrow)]
    tool_version: Option<Option<Text<'a>>>,
    #[serde(default, deserialize_with = "present", borrow)]
    audit_tag: Option<Option<Text<'a>>>,
    // 1.3.0's fields: absent is null.
    #[serde(default, deserialize_with = "present", borrow)]
    operation_code: Option<Option<Text<'a>>>,
    #[serde(default, deserialize_with = "present", borrow)]
    operation_name: Option<Option<Text<'a>>>,
    #[serde(default, deserialize_with = "present", borrow)]
    grids: Option<Option<Text<'a>>>,
    #[serde(default, deserialize_with = "present")]
    degraded: Option<Option<bool>>,
    #[serde(default, deserialize_with = "present", borrow)]
    input_dataset: Option<Option<Text<'a>>>,
    #[serde(default, deserialize_with = "present", borrow)]
    input_version: Option<Option<Text<'a>>>,
}

/// What a serde error says, without serde's position (which describes the line buffer):
/// a hint for `NaN`/`Infinity` (which Python's `json.dumps` writes), a syntax error's column
/// in characters of the line, cut to a readable length.
fn message(line: &str, e: &serde_json::Error) -> String {
    if e.is_syntax() {
        if let Some(m) = crate::schema::rules::json_non_number(line, e.column()) {
            return m;
        }
    }
    let text = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let bare = text.strip_suffix(suffix.as_str()).unwrap_or(&text);
    if e.line() > 0 && (e.is_syntax() || e.is_eof()) {
        shorten(format!("{bare} (column {})", char_column(line, e.column())))
    } else {
        shorten(bare.to_string())
    }
}

/// Serde's 1-based byte column in `line` as the 1-based character column an editor shows.
fn char_column(line: &str, byte_column: usize) -> usize {
    let mut at = byte_column.saturating_sub(1).min(line.len());
    while !line.is_char_boundary(at) {
        at -= 1;
    }
    line[..at].chars().count() + 1
}

/// Parse an RFC 3339 timestamp into microseconds since the epoch, UTC. Spaces around it
/// are ignored; `T`, `t` or a space between date and time, `Z` or `z`, and any offset
/// (converted to UTC) are accepted, and `+HH`/`+HHMM` offsets as `+HH:MM`
/// ([`crate::write::input::tolerant`]) (docs/input.md).
pub(crate) fn parse_time_us(s: &str) -> Result<i64, String> {
    let parsed = match colon_offset(s) {
        Some(c) => chrono::DateTime::parse_from_rfc3339(&c),
        None => chrono::DateTime::parse_from_rfc3339(s.trim_matches(' ')),
    };
    let t = parsed.map_err(|e| crate::schema::rules::time_parse_problem(s, &e))?;
    if let Some(why) = crate::schema::rules::parsed_time_problem(s, &t) {
        return Err(why);
    }
    Ok(t.timestamp_micros())
}

fn s<'b, 'a: 'b>(v: &'b Option<Text<'a>>) -> Option<&'b str> {
    v.as_ref().map(|t| t.0.as_ref())
}

/// A JSON value as an error shows it: a string as is, anything else as JSON; cut.
fn shown(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::Null => None,
        serde_json::Value::String(s) => Some(cut(s)),
        other => Some(cut(&other.to_string())),
    }
}

const MISSING: &str =
    "is missing (every one of 1.2.0's 15 fields must be present; use null for no value)";

pub(super) fn parse(bytes: &[u8]) -> Result<Vec<SourcedBatch>> {
    let mut batcher = LineBatcher::new();
    let mut out = Vec::new();
    parse_lines(bytes, 1, &mut batcher, &mut |b| {
        out.push(b);
        Ok(())
    })?;
    out.extend(batcher.finish()?);
    Ok(out)
}

/// Parse `bytes`, whose first line is input line `first_line`, into `batcher`; refused
/// lines are recorded in it (see the module docs), not returned. Each batch is handed to
/// `ready` as soon as it is cut, so a block of bad lines never holds more than one batch
/// of rows and errors; the last, short one stays in `batcher` for its `finish`.
pub(super) fn parse_lines(
    bytes: &[u8],
    first_line: u64,
    batcher: &mut LineBatcher,
    ready: &mut dyn FnMut(SourcedBatch) -> Result<()>,
) -> Result<()> {
    for (n, raw_line) in bytes.split(|&c| c == b'\n').enumerate() {
        for b in batcher.take_ready() {
            ready(b)?;
        }
        let line_no = first_line + n as u64;
        let raw_line = raw_line.strip_suffix(b"\r").unwrap_or(raw_line);
        // A byte-order mark some Windows tools put before the first line.
        let raw_line = if line_no == 1 {
            raw_line.strip_prefix(b"\xef\xbb\xbf").unwrap_or(raw_line)
        } else {
            raw_line
        };
        let line = match std::str::from_utf8(raw_line) {
            Ok(l) => l,
            Err(e) => {
                batcher.error(
                    line_no,
                    None,
                    None,
                    format!("invalid UTF-8 at byte {} of the line", e.valid_up_to() + 1),
                )?;
                continue;
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        if !line.trim_start().starts_with('{') {
            batcher.error(
                line_no,
                None,
                Some(cut(line.trim())),
                "is not a JSON object (each line holds one object with the contract's fields)",
            )?;
            continue;
        }
        let mut de = serde_json::Deserializer::from_str(line);
        // Parsed without path tracking (a fifth of the parse time); a line that fails is
        // parsed again, field by field, to name every refused field.
        match Raw::deserialize(&mut de) {
            Ok(raw) => match de.end() {
                Ok(()) => push_raw(raw, line_no, batcher)?,
                Err(e) => trailing(line, line_no, &e, batcher)?,
            },
            Err(_) => field_by_field(line, line_no, batcher)?,
        }
    }
    for b in batcher.take_ready() {
        ready(b)?;
    }
    Ok(())
}

fn trailing(
    line: &str,
    line_no: u64,
    e: &serde_json::Error,
    batcher: &mut LineBatcher,
) -> Result<()> {
    batcher.error(
        line_no,
        None,
        None,
        format!(
            "trailing characters after the object (column {})",
            char_column(line, e.column())
        ),
    )
}

/// A line that parsed as the contract's object: report missing fields and refused times,
/// and push the row.
fn push_raw(raw: Raw<'_>, line_no: u64, batcher: &mut LineBatcher) -> Result<()> {
    let mut refused = missing_fields(&raw, line_no, batcher)?;
    let time = raw.event_time_utc.flatten();
    let time_us = match &time {
        Some(t) => match parse_time_us(&t.0) {
            Ok(us) => Some(us),
            Err(why) => {
                batcher.error(line_no, Some(col::EVENT_TIME_UTC), Some(cut(&t.0)), why)?;
                refused.push(col::EVENT_TIME_UTC);
                None
            }
        },
        None => None,
    };
    refused.sort_unstable();
    let (event_id, run_id) = (raw.event_id.flatten(), raw.run_id.flatten());
    let (stage, event_type) = (raw.stage.flatten(), raw.event_type.flatten());
    let (feature_id, outcome) = (raw.feature_id.flatten(), raw.outcome.flatten());
    let (source_crs, target_crs) = (raw.source_crs.flatten(), raw.target_crs.flatten());
    let rejection_reason = raw.rejection_reason.flatten();
    let (tool_version, audit_tag) = (raw.tool_version.flatten(), raw.audit_tag.flatten());
    let (operation_code, operation_name) =
        (raw.operation_code.flatten(), raw.operation_name.flatten());
    let grids = raw.grids.flatten();
    let (input_dataset, input_version) = (raw.input_dataset.flatten(), raw.input_version.flatten());
    let row = EventRow {
        event_id: s(&event_id),
        run_id: s(&run_id),
        sequence: raw.sequence.flatten().map(|w| w.0),
        event_time_us: time_us,
        stage: s(&stage),
        event_type: s(&event_type),
        feature_id: s(&feature_id),
        source_crs: s(&source_crs),
        target_crs: s(&target_crs),
        outcome: s(&outcome),
        strategy_index: raw.strategy_index.flatten().map(|w| w.0),
        accuracy_m: raw.accuracy_m.flatten(),
        rejection_reason: s(&rejection_reason),
        tool_version: s(&tool_version),
        audit_tag: s(&audit_tag),
        operation_code: s(&operation_code),
        operation_name: s(&operation_name),
        grids: s(&grids),
        degraded: raw.degraded.flatten(),
        input_dataset: s(&input_dataset),
        input_version: s(&input_version),
    };
    batcher.push_refused(&row, line_no, &refused)
}

/// Report every field absent from `raw` (an explicit null is present); returns their
/// columns, in column order.
fn missing_fields(raw: &Raw<'_>, line_no: u64, batcher: &mut LineBatcher) -> Result<Vec<usize>> {
    let absent = [
        (raw.event_id.is_none(), col::EVENT_ID),
        (raw.run_id.is_none(), col::RUN_ID),
        (raw.sequence.is_none(), col::SEQUENCE),
        (raw.event_time_utc.is_none(), col::EVENT_TIME_UTC),
        (raw.stage.is_none(), col::STAGE),
        (raw.event_type.is_none(), col::EVENT_TYPE),
        (raw.feature_id.is_none(), col::FEATURE_ID),
        (raw.source_crs.is_none(), col::SOURCE_CRS),
        (raw.target_crs.is_none(), col::TARGET_CRS),
        (raw.outcome.is_none(), col::OUTCOME),
        (raw.strategy_index.is_none(), col::STRATEGY_INDEX),
        (raw.accuracy_m.is_none(), col::ACCURACY_M),
        (raw.rejection_reason.is_none(), col::REJECTION_REASON),
        (raw.tool_version.is_none(), col::TOOL_VERSION),
        (raw.audit_tag.is_none(), col::AUDIT_TAG),
    ];
    let mut refused = Vec::new();
    for (none, ci) in absent {
        if none {
            batcher.error(line_no, Some(ci), None, MISSING)?;
            refused.push(ci);
        }
    }
    Ok(refused)
}

/// A JSON object's members in the order written (duplicates kept).
struct Members(Vec<(String, serde_json::Value)>);

impl<'de> Deserialize<'de> for Members {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Members;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: de::MapAccess<'de>>(self, mut m: A) -> Result<Members, A::Error> {
                let mut out = Vec::new();
                while let Some(k) = m.next_key::<String>()? {
                    let v = m.next_value::<serde_json::Value>()?;
                    out.push((k, v));
                }
                Ok(Members(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// A line that did not parse as the contract's object, taken member by member so that
/// every refused field is named; the row is pushed with those cells null. A line that is
/// not a JSON object at all is one error.
fn field_by_field(line: &str, line_no: u64, batcher: &mut LineBatcher) -> Result<()> {
    let mut de = serde_json::Deserializer::from_str(line);
    let members = match serde_path_to_error::deserialize::<_, Members>(&mut de) {
        Ok(m) => m,
        Err(e) => {
            let path = e.path().to_string();
            let field = (!path.is_empty() && path != ".").then_some(path);
            let column = field
                .as_deref()
                .and_then(|f| contract::known_columns().position(|c| c.name == f));
            let why = message(line, e.inner());
            return batcher.error_in(line_no, column, field.as_deref(), None, why);
        }
    };
    if let Err(e) = de.end() {
        return trailing(line, line_no, &e, batcher);
    }
    let values = by_column(members, line_no, batcher)?;
    let (row, strs, refused) = typed(line, line_no, &values, batcher)?;
    let st = |ci: usize| strs[ci].as_deref();
    let row = EventRow {
        event_id: st(col::EVENT_ID),
        run_id: st(col::RUN_ID),
        stage: st(col::STAGE),
        event_type: st(col::EVENT_TYPE),
        feature_id: st(col::FEATURE_ID),
        source_crs: st(col::SOURCE_CRS),
        target_crs: st(col::TARGET_CRS),
        outcome: st(col::OUTCOME),
        rejection_reason: st(col::REJECTION_REASON),
        tool_version: st(col::TOOL_VERSION),
        audit_tag: st(col::AUDIT_TAG),
        operation_code: st(col::OPERATION_CODE),
        operation_name: st(col::OPERATION_NAME),
        grids: st(col::GRIDS),
        input_dataset: st(col::INPUT_DATASET),
        input_version: st(col::INPUT_VERSION),
        ..row
    };
    batcher.push_refused(&row, line_no, &refused)
}

/// The text cells of a row, by column.
type Strs = [Option<String>; KNOWN_COLUMNS];

/// Each placed value read as its column's type: the row's non-text cells, its text
/// cells by column, and the refused columns (missing or mistyped, each reported).
fn typed(
    line: &str,
    line_no: u64,
    values: &[Option<serde_json::Value>; KNOWN_COLUMNS],
    batcher: &mut LineBatcher,
) -> Result<(EventRow<'static>, Strs, Vec<usize>)> {
    let mut refused = Vec::new();
    let mut strs: Strs = Default::default();
    let mut row = EventRow::default();
    for (ci, c) in contract::known_columns().enumerate() {
        let Some(v) = &values[ci] else {
            // Only 1.2.0's fields must be present; one 1.3.0 adds is null when absent.
            if ci < COLUMNS.len() {
                batcher.error(line_no, Some(ci), None, MISSING)?;
                refused.push(ci);
            }
            continue;
        };
        let bad = |e: serde_json::Error| message(line, &e);
        let got: Result<(), String> = match c.kind {
            Kind::Str => Option::<String>::deserialize(v)
                .map(|s| strs[ci] = s)
                .map_err(bad),
            Kind::I64 => Option::<Whole<i64>>::deserialize(v)
                .map(|n| row.sequence = n.map(|w| w.0))
                .map_err(bad),
            Kind::I32 => Option::<Whole<i32>>::deserialize(v)
                .map(|n| row.strategy_index = n.map(|w| w.0))
                .map_err(bad),
            Kind::F64 => Option::<f64>::deserialize(v)
                .map(|n| row.accuracy_m = n)
                .map_err(bad),
            Kind::Bool => Option::<bool>::deserialize(v)
                .map(|b| row.degraded = b)
                .map_err(bad),
            Kind::TimestampUtc => match Option::<String>::deserialize(v).map_err(bad) {
                Ok(Some(t)) => parse_time_us(&t).map(|us| row.event_time_us = Some(us)),
                Ok(None) => Ok(()),
                Err(e) => Err(e),
            },
        };
        if let Err(why) = got {
            batcher.error(line_no, Some(ci), shown(v), why)?;
            refused.push(ci);
        }
    }
    Ok((row, strs, refused))
}

/// An object's members placed by contract column; an unknown or repeated field is
/// reported (and its value dropped).
fn by_column(
    members: Members,
    line_no: u64,
    batcher: &mut LineBatcher,
) -> Result<[Option<serde_json::Value>; KNOWN_COLUMNS]> {
    let mut values: [Option<serde_json::Value>; KNOWN_COLUMNS] = Default::default();
    for (key, v) in members.0 {
        match contract::known_columns().position(|c| c.name == key) {
            None => {
                let hint = match crate::schema::rules::meant(&key) {
                    Some(name) => format!("; did you mean `{name}`?"),
                    None => String::new(),
                };
                batcher.error_in(
                    line_no,
                    None,
                    Some(&key),
                    shown(&v),
                    format!(
                        "unknown field `{}`: not one of the contract's fields (`lineage schema` lists them){hint}",
                        cut(&key)
                    ),
                )?;
            }
            Some(ci) if values[ci].is_some() => {
                batcher.error(
                    line_no,
                    Some(ci),
                    shown(&v),
                    format!("duplicate field `{key}`: it appears more than once in the object"),
                )?;
            }
            Some(ci) => values[ci] = Some(v),
        }
    }
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_characters_of_the_line() {
        assert_eq!(char_column("{\"a\":\"é\"x", 10), 9);
        assert_eq!(char_column("abc", 1), 1);
        assert_eq!(char_column("abc", 99), 4);
    }
}
