//! What a part's rows say for a report: per stage × outcome, rejection reasons, source
//! CRSs, tools, the event-time range and an `accuracy_m` histogram, counted from the
//! part's bytes after the trusted read path checked them against its pointer. Only these
//! columns are decoded, a batch at a time (as the exports read).

use std::collections::BTreeMap;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, TimestampMicrosecondType};
use arrow_array::{Array, RecordBatch, StringArray};
use bytes::Bytes;
use parquet::arrow::ProjectionMask;

use crate::base::error::{Error, Result};

/// Rows decoded at a time.
const BATCH_ROWS: usize = 8192;

/// The columns counted.
const COLUMNS: [&str; 7] = [
    "stage",
    "outcome",
    "rejection_reason",
    "source_crs",
    "tool_version",
    "event_time_utc",
    "accuracy_m",
];

/// Upper bounds (metres, exclusive) of the `accuracy_m` histogram's bins, one decade
/// each; the last bin is open. Fixed, so histograms of parts add up and of stores compare.
pub(crate) const ACCURACY_EDGES: [f64; 6] = [0.01, 0.1, 1.0, 10.0, 100.0, 1000.0];

/// One bin per edge, one above the last.
pub(crate) const ACCURACY_BINS: usize = ACCURACY_EDGES.len() + 1;

/// The bin of `v` (negative values, which the contract refuses, fall in the first).
pub(crate) fn accuracy_bin(v: f64) -> usize {
    ACCURACY_EDGES
        .iter()
        .position(|e| v < *e)
        .unwrap_or(ACCURACY_EDGES.len())
}

/// Counts of one target CRS's `accuracy_m`.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Accuracy {
    /// Events per bin.
    pub bins: [u64; ACCURACY_BINS],
    /// Events without a value.
    pub null: u64,
    /// Smallest and largest value.
    pub range: Option<(f64, f64)>,
}

impl Accuracy {
    pub(crate) fn merge(&mut self, o: &Accuracy) {
        for (a, b) in self.bins.iter_mut().zip(o.bins) {
            *a += b;
        }
        self.null += o.null;
        if let Some((lo, hi)) = o.range {
            self.add_range(lo, hi);
        }
    }

    fn add_range(&mut self, lo: f64, hi: f64) {
        self.range = Some(match self.range {
            None => (lo, hi),
            Some((a, b)) => (a.min(lo), b.max(hi)),
        });
    }
}

/// What the rows of one part (or several of one run) say.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct RowCounts {
    /// (stage, outcome) → events.
    pub stage_outcome: BTreeMap<(String, String), u64>,
    /// `rejection_reason` → rejected events.
    pub rejection_reasons: BTreeMap<String, u64>,
    /// `source_crs` → events (events without one are not counted here).
    pub source_crs: BTreeMap<String, u64>,
    /// `tool_version` → events.
    pub tools: BTreeMap<String, u64>,
    /// Earliest and latest `event_time_utc`, microseconds.
    pub event_time_us: Option<(i64, i64)>,
    /// Target CRS → its `accuracy_m` histogram.
    pub accuracy: BTreeMap<String, Accuracy>,
}

impl RowCounts {
    /// Add `o`'s counts to these.
    pub(crate) fn merge(&mut self, o: RowCounts) {
        for (k, v) in o.stage_outcome {
            *self.stage_outcome.entry(k).or_default() += v;
        }
        for (mine, theirs) in [
            (&mut self.rejection_reasons, o.rejection_reasons),
            (&mut self.source_crs, o.source_crs),
            (&mut self.tools, o.tools),
        ] {
            for (k, v) in theirs {
                *mine.entry(k).or_default() += v;
            }
        }
        if let Some((lo, hi)) = o.event_time_us {
            self.event_time_us = Some(match self.event_time_us {
                None => (lo, hi),
                Some((a, b)) => (a.min(lo), b.max(hi)),
            });
        }
        for (k, a) in o.accuracy {
            self.accuracy.entry(k).or_default().merge(&a);
        }
    }
}

fn bump(map: &mut BTreeMap<String, u64>, key: &str) {
    match map.get_mut(key) {
        Some(n) => *n += 1,
        None => {
            map.insert(key.to_string(), 1);
        }
    }
}

/// Count the rows of a part from its checked bytes; `target_crs` is its partition's.
pub(crate) fn count_part(
    key: &str,
    target_crs: &str,
    bytes: Bytes,
    max_page: u64,
) -> Result<RowCounts> {
    let bad = |m: String| Error::Corrupt {
        what: "part",
        key: key.to_string(),
        message: m,
    };
    let builder = crate::parts::pages::builder(bytes, max_page).map_err(bad)?;
    // Columns a part's contract version lacks (older versions) are simply not counted.
    let leaves: Vec<usize> = COLUMNS
        .iter()
        .filter_map(|name| {
            builder
                .parquet_schema()
                .columns()
                .iter()
                .position(|c| c.path().parts() == [name.to_string()])
        })
        .collect();
    let mask = ProjectionMask::leaves(builder.parquet_schema(), leaves);
    let reader = builder
        .with_projection(mask)
        .with_batch_size(BATCH_ROWS)
        .build()
        .map_err(|e| bad(e.to_string()))?;
    let mut counts = RowCounts::default();
    let mut acc = Accuracy::default();
    for batch in reader {
        let batch = batch.map_err(|e| bad(format!("unreadable column data: {e}")))?;
        count_batch(&batch, &mut counts, &mut acc).map_err(bad)?;
    }
    counts.accuracy.insert(target_crs.to_string(), acc);
    Ok(counts)
}

fn text<'a>(
    batch: &'a RecordBatch,
    name: &str,
) -> std::result::Result<Option<&'a StringArray>, String> {
    match batch.column_by_name(name) {
        None => Ok(None),
        Some(a) => a
            .as_string_opt::<i32>()
            .map(Some)
            .ok_or_else(|| format!("column `{name}` is not a string column")),
    }
}

fn value(a: Option<&StringArray>, i: usize) -> Option<&str> {
    a.and_then(|a| a.is_valid(i).then(|| a.value(i)))
}

fn count_batch(
    batch: &RecordBatch,
    c: &mut RowCounts,
    acc: &mut Accuracy,
) -> std::result::Result<(), String> {
    let stage = text(batch, "stage")?;
    let outcome = text(batch, "outcome")?;
    let reason = text(batch, "rejection_reason")?;
    let source = text(batch, "source_crs")?;
    let tool = text(batch, "tool_version")?;
    let time = match batch.column_by_name("event_time_utc") {
        None => None,
        Some(a) => Some(
            a.as_primitive_opt::<TimestampMicrosecondType>()
                .ok_or("column `event_time_utc` is not a microsecond timestamp")?,
        ),
    };
    let accuracy = match batch.column_by_name("accuracy_m") {
        None => None,
        Some(a) => Some(
            a.as_primitive_opt::<Float64Type>()
                .ok_or("column `accuracy_m` is not a float64 column")?,
        ),
    };
    let mut last: Option<(&str, &str)> = None;
    let mut run = 0u64;
    for i in 0..batch.num_rows() {
        let key = (
            value(stage, i).unwrap_or(""),
            value(outcome, i).unwrap_or(""),
        );
        // Rows of one stage and outcome come in runs: count a run at once.
        if last == Some(key) {
            run += 1;
        } else {
            if let Some((s, o)) = last {
                *c.stage_outcome
                    .entry((s.to_string(), o.to_string()))
                    .or_default() += run;
            }
            last = Some(key);
            run = 1;
        }
        if key.1 == "rejected" {
            bump(&mut c.rejection_reasons, value(reason, i).unwrap_or(""));
        }
        if let Some(s) = value(source, i) {
            bump(&mut c.source_crs, s);
        }
        bump(&mut c.tools, value(tool, i).unwrap_or(""));
        if let Some(t) = time.filter(|t| t.is_valid(i)).map(|t| t.value(i)) {
            c.event_time_us = Some(match c.event_time_us {
                None => (t, t),
                Some((lo, hi)) => (lo.min(t), hi.max(t)),
            });
        }
        match accuracy.filter(|a| a.is_valid(i)).map(|a| a.value(i)) {
            Some(v) if v.is_finite() => {
                acc.bins[accuracy_bin(v)] += 1;
                acc.add_range(v, v);
            }
            _ => acc.null += 1,
        }
    }
    if let Some((s, o)) = last {
        *c.stage_outcome
            .entry((s.to_string(), o.to_string()))
            .or_default() += run;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accuracy_bins_are_decades_lower_bound_inclusive() {
        assert_eq!(accuracy_bin(0.0), 0);
        assert_eq!(accuracy_bin(0.009_999), 0);
        assert_eq!(accuracy_bin(0.01), 1);
        assert_eq!(accuracy_bin(0.5), 2);
        assert_eq!(accuracy_bin(1.0), 3);
        assert_eq!(accuracy_bin(999.9), 5);
        assert_eq!(accuracy_bin(1000.0), 6);
        assert_eq!(accuracy_bin(1e12), ACCURACY_BINS - 1);
    }
}
