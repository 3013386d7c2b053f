//! The column statistics a Delta `add` states ([`FileStats`]) and the columns a table
//! declares them for ([`STATS_COLUMNS`]): what Delta readers skip files by.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::base::error::{Error, Result};

/// Longest string statistic written; a longer min or max is cut to a bound this long
/// ([`FileStats::long_bounds`]).
pub const MAX_STAT_STRING: usize = 64;
/// The table property `delta.dataSkippingStatsColumns`: the columns every `add` states
/// min/max and null count for (every column of 1.2.0 but the partition keys and
/// `event_id`/`feature_id`, written without footer statistics). Without it delta-rs takes
/// the first 32 columns to have stats and skips every file for a filter on a column whose
/// stats an `add` leaves out (issue 35).
pub const STATS_COLUMNS: &str = "sequence,event_time_utc,stage,event_type,source_crs,outcome,\
strategy_index,accuracy_m,rejection_reason,tool_version,audit_tag";

/// Column statistics of one part, from its footer (what an `add`'s `stats` say). Columns
/// without exact statistics in every row group are left out (unknown to readers), as are
/// the partition columns.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FileStats {
    /// Rows in the part.
    #[serde(rename = "numRecords")]
    pub num_records: u64,
    /// Smallest value per column.
    #[serde(rename = "minValues")]
    pub min_values: BTreeMap<String, Value>,
    /// Largest value per column.
    #[serde(rename = "maxValues")]
    pub max_values: BTreeMap<String, Value>,
    /// Nulls per column.
    #[serde(rename = "nullCount")]
    pub null_count: BTreeMap<String, u64>,
    /// Bounds of the columns whose exact min or max is longer than [`MAX_STAT_STRING`]:
    /// a prefix below the min and a cut-and-raised string above the max. Stated only in a
    /// table that declares [`STATS_COLUMNS`] (there a declared column without bounds makes
    /// delta-rs skip the file); left out of the versions written before.
    #[serde(skip)]
    pub long_bounds: BTreeMap<String, (Value, Value)>,
}

impl FileStats {
    /// The `stats` JSON of an `add`: with [`Self::long_bounds`] when `declared`.
    pub(crate) fn json(&self, declared: bool) -> Result<String> {
        if !declared || self.long_bounds.is_empty() {
            return serde_json::to_string(self).map_err(Error::internal_from);
        }
        let mut s = self.clone();
        for (c, (lo, hi)) in &self.long_bounds {
            s.min_values.insert(c.clone(), lo.clone());
            s.max_values.insert(c.clone(), hi.clone());
        }
        serde_json::to_string(&s).map_err(Error::internal_from)
    }
}

/// A lower bound of `s` at most [`MAX_STAT_STRING`] bytes: its longest prefix that fits.
pub fn string_floor(s: &str) -> &str {
    let mut end = s.len().min(MAX_STAT_STRING);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// An upper bound of `s` at most [`MAX_STAT_STRING`] bytes: its longest prefix that fits,
/// with the last character raised by one (a character that cannot be raised is dropped and
/// the one before raised); `None` when no character can be.
pub fn string_ceiling(s: &str) -> Option<String> {
    if s.len() <= MAX_STAT_STRING {
        return Some(s.to_string());
    }
    let mut chars: Vec<char> = string_floor(s).chars().collect();
    while let Some(last) = chars.pop() {
        let next = (u32::from(last) + 1..=0x10FFFF).find_map(char::from_u32);
        if let Some(n) = next {
            let mut out: String = chars.into_iter().collect();
            if out.len() + n.len_utf8() <= MAX_STAT_STRING {
                out.push(n);
                return Some(out);
            }
            return None;
        }
    }
    None
}

/// A timestamp statistic (microseconds since the epoch) as Delta writes them: milliseconds,
/// `Z`. Rounded outwards (`up` for a maximum), so the bound still holds every value.
pub fn timestamp_stat(us: i64, up: bool) -> Option<String> {
    let ms = if up {
        us.div_euclid(1000) + i64::from(us.rem_euclid(1000) != 0)
    } else {
        us.div_euclid(1000)
    };
    let t = DateTime::<Utc>::from_timestamp_millis(ms)?;
    Some(t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::contract::{COLUMNS, PARTITION_KEYS};

    /// Columns written without footer statistics (so with no stats in an `add`).
    const NO_STATS_COLUMNS: [&str; 2] = ["event_id", "feature_id"];

    #[test]
    fn the_declared_stats_columns_are_those_with_footer_statistics() {
        let want: Vec<&str> = COLUMNS
            .iter()
            .map(|c| c.name)
            .filter(|n| !PARTITION_KEYS.contains(n) && !NO_STATS_COLUMNS.contains(n))
            .collect();
        assert_eq!(STATS_COLUMNS, want.join(","));
    }

    #[test]
    fn long_strings_get_bounds_that_hold() {
        let long = format!("{}é{}", "a".repeat(63), "z".repeat(10));
        assert_eq!(string_floor(&long), "a".repeat(63));
        let up = string_ceiling(&long).unwrap();
        assert_eq!(up, format!("{}b", "a".repeat(62)));
        assert!(up.as_str() > long.as_str() && up.len() <= MAX_STAT_STRING);
        assert_eq!(string_ceiling("short").as_deref(), Some("short"));
        let top = format!("{}{}", "\u{10FFFF}".repeat(16), "x");
        assert_eq!(string_ceiling(&top), None);
    }

    #[test]
    fn timestamps_round_outwards() {
        assert_eq!(
            timestamp_stat(1_700_000_000_123_456, false).unwrap(),
            "2023-11-14T22:13:20.123Z"
        );
        assert_eq!(
            timestamp_stat(1_700_000_000_123_456, true).unwrap(),
            "2023-11-14T22:13:20.124Z"
        );
        assert_eq!(
            timestamp_stat(1_700_000_000_123_000, true).unwrap(),
            "2023-11-14T22:13:20.123Z"
        );
    }
}
