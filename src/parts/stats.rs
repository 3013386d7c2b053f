//! A part's column statistics as a Delta `add` states them ([`FileStats`]), from the
//! footer alone: the exact min/max and null counts our writer puts in every column
//! chunk. A column without exact statistics in every row group (e.g. `event_id` and
//! `feature_id`, written without them) is left out, which readers take as "unknown"
//! (the table declares which columns have stats: [`crate::format::delta_stats::STATS_COLUMNS`]).
//! A string min or max too long to state exactly gets bounds that hold it
//! ([`FileStats::long_bounds`]).

use std::cmp::Ordering;

use parquet::file::metadata::ParquetMetaData;
use parquet::file::statistics::Statistics;
use serde_json::Value;

use crate::base::error::Result;
use crate::format::delta_stats::{
    string_ceiling, string_floor, timestamp_stat, FileStats, MAX_STAT_STRING,
};
use crate::parts::read::{fetch_footer, Source};
use crate::publish::AtomicPublisher;
use crate::schema::contract::{Column, Kind, PARTITION_KEYS};

/// The statistics of the part at `key` of `size` bytes (one ranged read of its end,
/// [`fetch_footer`]), for a part of
/// the contract version with `columns`.
pub(crate) async fn footer_stats(
    store: &dyn AtomicPublisher,
    key: &str,
    size: u64,
    columns: &[Column],
) -> Result<FileStats> {
    let f = fetch_footer(&Source::Store(store), key, size).await?;
    Ok(stats_of(&f.meta, columns))
}

/// A typed bound of one column chunk.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
enum Bound<'a> {
    Int(i64),
    Float(f64),
    Text(&'a [u8]),
}

/// A column chunk's bounds, and whether both are exact (a writer may cut a long string:
/// then the bounds still hold every value, but are not the values).
fn bounds(s: &Statistics) -> Option<(Bound<'_>, Bound<'_>, bool)> {
    let exact = s.min_is_exact() && s.max_is_exact();
    let (lo, hi) = match s {
        Statistics::Int32(s) => (
            Bound::Int(i64::from(*s.min_opt()?)),
            Bound::Int(i64::from(*s.max_opt()?)),
        ),
        Statistics::Int64(s) => (Bound::Int(*s.min_opt()?), Bound::Int(*s.max_opt()?)),
        Statistics::Double(s) => (Bound::Float(*s.min_opt()?), Bound::Float(*s.max_opt()?)),
        Statistics::ByteArray(s) => (
            Bound::Text(s.min_opt()?.data()),
            Bound::Text(s.max_opt()?.data()),
        ),
        _ => return None,
    };
    Some((lo, hi, exact))
}

/// The bounds of two row groups together.
fn widen<'a>(
    a: (Bound<'a>, Bound<'a>, bool),
    b: (Bound<'a>, Bound<'a>, bool),
) -> (Bound<'a>, Bound<'a>, bool) {
    let (lo, hi, ea) = a;
    let (l, h, eb) = b;
    (
        if l.partial_cmp(&lo) == Some(Ordering::Less) {
            l
        } else {
            lo
        },
        if h.partial_cmp(&hi) == Some(Ordering::Greater) {
            h
        } else {
            hi
        },
        ea && eb,
    )
}

fn json(b: Bound<'_>, kind: Kind, up: bool) -> Option<Value> {
    match (b, kind) {
        (Bound::Int(v), Kind::TimestampUtc) => timestamp_stat(v, up).map(Value::String),
        (Bound::Int(v), Kind::I64 | Kind::I32) => Some(Value::from(v)),
        (Bound::Float(v), Kind::F64) if v.is_finite() => {
            serde_json::Number::from_f64(v).map(Value::Number)
        }
        (Bound::Text(t), Kind::Str) if t.len() <= MAX_STAT_STRING => {
            std::str::from_utf8(t).ok().map(|s| Value::String(s.into()))
        }
        _ => None,
    }
}

/// Bounds of a string column whose min or max is longer than [`MAX_STAT_STRING`]
/// ([`FileStats::long_bounds`]).
fn long_bounds(lo: Bound<'_>, hi: Bound<'_>, kind: Kind) -> Option<(Value, Value)> {
    let (Bound::Text(lo), Bound::Text(hi), Kind::Str) = (lo, hi, kind) else {
        return None;
    };
    let lo = string_floor(std::str::from_utf8(lo).ok()?);
    let hi = string_ceiling(std::str::from_utf8(hi).ok()?)?;
    Some((Value::String(lo.into()), Value::String(hi)))
}

/// The statistics of a footer (see the module docs).
pub(crate) fn stats_of(meta: &ParquetMetaData, columns: &[Column]) -> FileStats {
    let mut out = FileStats {
        num_records: u64::try_from(meta.file_metadata().num_rows()).unwrap_or(0),
        ..FileStats::default()
    };
    let descr = meta.file_metadata().schema_descr();
    for (i, c) in columns.iter().enumerate() {
        if PARTITION_KEYS.contains(&c.name)
            || i >= descr.num_columns()
            || descr.column(i).name() != c.name
        {
            continue;
        }
        let mut nulls: Option<u64> = Some(0);
        let mut range: Option<Option<(Bound<'_>, Bound<'_>, bool)>> = Some(None);
        for rg in meta.row_groups().iter().filter(|rg| rg.num_rows() > 0) {
            let Some(s) = rg.column(i).statistics() else {
                nulls = None;
                range = None;
                break;
            };
            let n = s.null_count_opt();
            nulls = nulls.zip(n).map(|(a, b)| a + b);
            let all_null = n.is_some_and(|n| i64::try_from(n).ok() == Some(rg.num_rows()));
            if all_null {
                continue;
            }
            range = match (range, bounds(s)) {
                (Some(None), Some(b)) => Some(Some(b)),
                (Some(Some(a)), Some(b)) => Some(Some(widen(a, b))),
                _ => None,
            };
        }
        if let Some(n) = nulls {
            out.null_count.insert(c.name.to_string(), n);
        }
        if let Some(Some((lo, hi, exact))) = range {
            let stated = exact.then(|| (json(lo, c.kind, false), json(hi, c.kind, true)));
            if let Some((Some(lo), Some(hi))) = stated {
                out.min_values.insert(c.name.to_string(), lo);
                out.max_values.insert(c.name.to_string(), hi);
            } else if let Some(b) = long_bounds(lo, hi, c.kind) {
                out.long_bounds.insert(c.name.to_string(), b);
            }
        }
    }
    out
}
