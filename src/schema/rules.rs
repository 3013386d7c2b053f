//! Value rules every input format shares (beyond the contract's types), and how values
//! are quoted in error messages. The readers and [`crate::write::validate`] call these; each
//! decision is listed in the README's "Input" section.
//!
//! - `event_time_utc` lies in [1970-01-01T00:00:00Z, 9999-12-31T23:59:59.999999Z]: what
//!   RFC 3339 (four-digit years) and the usual readers (Python `datetime`) can represent,
//!   from the Unix epoch on (a processing event before it is a sign of an unset or
//!   mis-converted clock, not a record to keep).
//! - A leap second (`23:59:60`) is refused: the contract's microseconds since the epoch
//!   cannot represent it, and any mapping would change the recorded time.
//! - NUL is refused in every string: C-based readers cut a value there, so a NUL can hide
//!   the rest of a value from them.
//! - Error messages quote at most [`QUOTE_MAX_CHARS`] characters of a value (a line of
//!   several MiB must not come back as a message of several MiB).

use chrono::{DateTime, FixedOffset};

/// Longest part of a value an error message shows.
pub(crate) const QUOTE_MAX_CHARS: usize = 64;
/// Longest error message kept from a parser (which may quote whole values).
pub(crate) const MESSAGE_MAX_CHARS: usize = 300;
/// Earliest accepted `event_time_utc`: 1970-01-01T00:00:00Z, in microseconds.
pub(crate) const MIN_EVENT_TIME_US: i64 = 0;
/// Latest accepted `event_time_utc`: 9999-12-31T23:59:59.999999Z, in microseconds.
pub(crate) const MAX_EVENT_TIME_US: i64 = 253_402_300_799_999_999;

/// A value as an error message shows it: quoted with escapes (so control characters and
/// look-alikes are visible), cut to [`QUOTE_MAX_CHARS`] characters with its length.
pub(crate) fn quote(v: &str) -> String {
    match v.char_indices().nth(QUOTE_MAX_CHARS) {
        None => format!("{v:?}"),
        Some((cut, _)) => format!("{:?}… ({} bytes)", &v[..cut], v.len()),
    }
}

/// A value cut to [`QUOTE_MAX_CHARS`] characters (for messages that quote it themselves).
pub(crate) fn cut(v: &str) -> String {
    match v.char_indices().nth(QUOTE_MAX_CHARS) {
        None => v.to_string(),
        Some((at, _)) => format!("{}… ({} bytes)", &v[..at], v.len()),
    }
}

/// A parser's message cut to [`MESSAGE_MAX_CHARS`] characters (serde quotes whole values).
pub(crate) fn shorten(msg: String) -> String {
    match msg.char_indices().nth(MESSAGE_MAX_CHARS) {
        None => msg,
        Some((cut, _)) => format!("{}… (message cut, {} bytes)", &msg[..cut], msg.len()),
    }
}

/// Why an event time (microseconds since the epoch, UTC) is out of the accepted range.
pub(crate) fn event_time_problem(us: i64) -> Option<String> {
    if us < MIN_EVENT_TIME_US {
        Some(format!(
            "{} is before 1970-01-01T00:00:00Z: not a plausible time for a processing event (an unset or mis-converted clock?)",
            crate::base::time::rfc3339_us(us)
        ))
    } else if us > MAX_EVENT_TIME_US {
        Some(format!(
            "{} is after 9999-12-31T23:59:59.999999Z, which RFC 3339 and most readers cannot represent",
            crate::base::time::rfc3339_us(us)
        ))
    } else {
        None
    }
}

/// Why a parsed RFC 3339 time cannot be recorded exactly, beyond the range (see
/// [`event_time_problem`]): a leap second, or digits below a microsecond.
pub(crate) fn parsed_time_problem(s: &str, t: &DateTime<FixedOffset>) -> Option<String> {
    let nanos = t.timestamp_subsec_nanos();
    if nanos >= 1_000_000_000 {
        return Some(format!(
            "`{}` is a leap second (:60), which the contract's timestamp (microseconds since the epoch) cannot represent",
            cut(s)
        ));
    }
    (!nanos.is_multiple_of(1000)).then(|| {
        format!(
            "`{}` has sub-microsecond precision; the contract stores microseconds",
            cut(s)
        )
    })
}

/// Why a string that is not RFC 3339 was refused, in the words most useful to its writer.
pub(crate) fn time_parse_problem(s: &str, err: &chrono::ParseError) -> String {
    let t = s.trim();
    let naive = ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f"]
        .iter()
        .any(|f| chrono::NaiveDateTime::parse_from_str(t, f).is_ok());
    if naive {
        format!(
            "`{}` has no UTC offset: a time without a zone is ambiguous (write Z, or an offset such as +02:00)",
            cut(s)
        )
    } else {
        format!("`{}` is not an RFC 3339 timestamp ({err})", cut(s))
    }
}

/// Why a string value holds NUL, or `None`.
pub(crate) fn nul_problem(v: &str) -> Option<String> {
    v.find('\0').map(|at| {
        format!(
            "{} contains NUL at byte {} (readers in C cut the value there)",
            quote(v),
            at + 1
        )
    })
}

/// A clearer message for the tokens some JSON writers emit for non-finite floats (Python's
/// `json.dumps` writes `NaN`, `Infinity`, `-Infinity`), which JSON does not have.
/// `column` is the 1-based column a JSON parser stopped at.
pub(crate) fn json_non_number(line: &str, column: usize) -> Option<String> {
    let start = column.saturating_sub(1);
    // The parser stops on the token's first character, or just after a leading `-`.
    let rest = line.get(start.saturating_sub(1)..)?;
    ["-Infinity", "Infinity", "NaN"]
        .iter()
        .find_map(|tok| {
            (rest.starts_with(tok) || rest.get(1..).is_some_and(|r| r.starts_with(tok)))
                .then_some(*tok)
        })
        .map(|tok| {
            format!(
                "`{tok}` is not a JSON number (JSON has no NaN or infinity; the contract allows only finite values, or null for none)"
            )
        })
}

/// The rules above that hold for a whole contract batch (every format): NUL in strings,
/// the event-time range. The error names the row (line) and field.
pub(crate) fn check_batch(
    batch: &arrow_array::RecordBatch,
    origin: &crate::schema::events::Origin,
) -> crate::base::error::Result<()> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::TimestampMicrosecondType;
    use arrow_array::Array;

    use crate::schema::contract::{col, Kind, COLUMNS};
    let err = |i: usize, field: &str, why: String| {
        crate::base::error::Error::record(format!("{}, field `{field}`", origin.locate(i)), why)
    };
    for (ci, c) in COLUMNS.iter().enumerate() {
        if c.kind != Kind::Str {
            continue;
        }
        let Some(s) = batch.column(ci).as_string_opt::<i32>() else {
            continue; // not the contract: the schema check names it
        };
        // One pass over the column's bytes; only a hit looks for the row.
        if !s.value_data().contains(&0) {
            continue;
        }
        if let Some((i, why)) = (0..s.len())
            .filter(|&i| s.is_valid(i))
            .find_map(|i| nul_problem(s.value(i)).map(|w| (i, w)))
        {
            return Err(err(i, c.name, why));
        }
    }
    if let Some(t) = batch
        .column(col::EVENT_TIME_UTC)
        .as_primitive_opt::<TimestampMicrosecondType>()
    {
        if let Some((i, why)) = (0..t.len())
            .filter(|&i| t.is_valid(i))
            .find_map(|i| event_time_problem(t.value(i)).map(|w| (i, w)))
        {
            return Err(err(i, "event_time_utc", why));
        }
    }
    Ok(())
}
