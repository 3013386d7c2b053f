//! Value rules every input format shares (beyond the contract's types), and how values
//! are quoted in error messages. The readers and [`crate::write::validate`] call these; each
//! decision is listed in docs/input.md.
//!
//! - `event_time_utc` lies in [1970-01-01T00:00:00Z, 9999-12-31T23:59:59.999999Z]: what
//!   RFC 3339 (four-digit years) and the usual readers (Python `datetime`) can represent,
//!   from the Unix epoch on (a processing event before it is a sign of an unset or
//!   mis-converted clock, not a record to keep).
//! - A leap second (`23:59:60`) is refused: the contract's microseconds since the epoch
//!   cannot represent it, and any mapping would change the recorded time.
//! - NUL is refused in every string: C-based readers cut a value there, so a NUL can hide
//!   the rest of a value from them.
//! - Spaces around a CRS identifier, a time or a CSV number are ignored; no other white
//!   space is (a tab or newline in a value is refused, not trimmed). Every other string is
//!   kept exactly as written.
//! - `operation_code` (1.3.0) is `AUTHORITY:CODE` (an authority of ASCII letters, digits,
//!   `_`, `-` or `.` starting with a letter, a code without white space), e.g.
//!   `EPSG:1175`; `PROJ-SHA256:` is followed by exactly 64 lowercase hex digits (the
//!   SHA-256 of the operation's PROJ definition string).
//! - `grids` (1.3.0) is PROJ grid short names separated by one space: no leading,
//!   trailing or doubled space, no other white space; the empty string means "no grid
//!   used" (null: unknown).
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

/// The contract field a misspelt key most likely meant: the same name in another case, or
/// one a single edit away.
pub(crate) fn meant(key: &str) -> Option<&'static str> {
    let k = key.to_ascii_lowercase();
    crate::schema::contract::known_columns()
        .map(|c| c.name)
        .find(|name| *name == k || edits_at_most_one(name, &k))
}

fn edits_at_most_one(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if long.len() - short.len() > 1 {
        return false;
    }
    let prefix = short.iter().zip(long).take_while(|(x, y)| x == y).count();
    if prefix == long.len() {
        return true; // the same
    }
    if short.len() == long.len() {
        short[prefix + 1..] == long[prefix + 1..] // one substitution
    } else {
        short[prefix..] == long[prefix + 1..] // one insertion
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
    let t = s.trim_matches(' ');
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

/// Why an `operation_code` is not `AUTHORITY:CODE` (see the module docs), or `None`.
pub(crate) fn operation_code_problem(v: &str) -> Option<String> {
    let bad = |why: &str| Some(format!("{} {why}", quote(v)));
    let Some((auth, code)) = v.split_once(':') else {
        return bad("is not AUTHORITY:CODE (e.g. EPSG:1175, or PROJ-SHA256:<64 hex digits> for an operation without a code)");
    };
    let auth_ok = auth.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && auth
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if !auth_ok {
        return bad("has no authority before `:` (ASCII letters, digits, `_`, `-` or `.`, starting with a letter)");
    }
    if code.is_empty() || code.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return bad("has no code after `:`, or white space in it");
    }
    if auth == "PROJ-SHA256"
        && !(code.len() == 64 && code.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
    {
        return bad("is not PROJ-SHA256: followed by 64 lowercase hex digits (the SHA-256 of the operation's PROJ string)");
    }
    None
}

/// Why a `grids` value is not grid names separated by single spaces, or `None` (the empty
/// string is a value: no grid used).
pub(crate) fn grids_problem(v: &str) -> Option<String> {
    if v.is_empty() {
        return None;
    }
    if v.chars()
        .any(|c| (c.is_whitespace() && c != ' ') || c.is_control())
    {
        return Some(format!(
            "{} holds white space other than single spaces (grid names are separated by one space)",
            quote(v)
        ));
    }
    v.split(' ').any(str::is_empty).then(|| {
        format!(
            "{} has a leading, trailing or doubled space (grid names are separated by one space; the empty string for none)",
            quote(v)
        )
    })
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
/// the event-time range. Each refused cell is handed to `refuse` (row in the batch,
/// contract column, the value as shown, why), in column order, then row order.
pub(crate) fn check_batch(
    batch: &arrow_array::RecordBatch,
    refuse: &mut dyn FnMut(usize, usize, Option<String>, String),
) {
    use arrow_array::cast::AsArray;
    use arrow_array::types::TimestampMicrosecondType;
    use arrow_array::Array;

    use crate::schema::contract::col;
    // Every string column of the batch's version (1.2.0's and those later versions add).
    for ci in 0..batch.num_columns() {
        let Some(s) = batch.column(ci).as_string_opt::<i32>() else {
            continue; // not a string column (or not the contract: the schema check names it)
        };
        // One pass over the column's bytes; only a hit looks for the rows.
        if !s.value_data().contains(&0) {
            continue;
        }
        for i in (0..s.len()).filter(|&i| s.is_valid(i)) {
            if let Some(why) = nul_problem(s.value(i)) {
                refuse(i, ci, Some(cut(s.value(i))), why);
            }
        }
    }
    if let Some(t) = batch
        .column(col::EVENT_TIME_UTC)
        .as_primitive_opt::<TimestampMicrosecondType>()
    {
        for i in (0..t.len()).filter(|&i| t.is_valid(i)) {
            if let Some(why) = event_time_problem(t.value(i)) {
                refuse(
                    i,
                    col::EVENT_TIME_UTC,
                    Some(crate::base::time::rfc3339_us(t.value(i))),
                    why,
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn misspelt_field_names_are_matched_to_the_field_they_meant() {
        assert_eq!(meant("Run_ID"), Some("run_id"));
        assert_eq!(meant("target_cr"), Some("target_crs"));
        assert_eq!(meant("targetcrs"), Some("target_crs"));
        assert_eq!(meant("sequense"), Some("sequence"));
        assert_eq!(meant("event_time"), None);
        assert_eq!(meant("colour"), None);
        assert_eq!(meant("crs"), None);
        assert_eq!(meant("operation_cod"), Some("operation_code"));
    }

    #[test]
    fn operation_codes_and_grids_follow_their_forms() {
        for ok in [
            "EPSG:1175",
            "ESRI:108190",
            "IGNF:TSPARIS",
            &format!("PROJ-SHA256:{}", "ab".repeat(32)),
        ] {
            assert_eq!(operation_code_problem(ok), None, "{ok}");
        }
        for bad in [
            "1175",
            ":1175",
            "EPSG:",
            "EPSG: 1175",
            "1EPSG:3",
            "PROJ-SHA256:ABC",
            &format!("PROJ-SHA256:{}", "AB".repeat(32)),
        ] {
            assert!(operation_code_problem(bad).is_some(), "{bad}");
        }
        for ok in [
            "",
            "us_noaa_conus.tif",
            "ca_nrc_ntv1_can.tif us_noaa_conus.tif",
        ] {
            assert_eq!(grids_problem(ok), None, "{ok:?}");
        }
        for bad in [" a.tif", "a.tif ", "a.tif  b.tif", "a.tif\tb.tif", " "] {
            assert!(grids_problem(bad).is_some(), "{bad:?}");
        }
    }
}
