//! What a part's rows say, counted from its bytes: per stage, the counts of outcomes,
//! rejection reasons, event types, source CRSs, tools and audit tags, the event-time
//! range, and per coordinate operation its events, `accuracy_m` (max, sum), grids and
//! degraded events; over the whole part, an `accuracy_m` histogram. The one counter over a part's
//! rows: the exports read its per-stage counts, the audit report all of it.
//!
//! Counted from the part's bytes as the trusted read path fetched and checked them
//! ([`crate::read`]): only the counted columns are decoded, a batch at a time. Columns are
//! found by name, so a part of any registered contract version is read (every version has
//! the counted columns: later versions only add columns).

use std::collections::BTreeMap;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, TimestampMicrosecondType};
use arrow_array::{
    Array, BooleanArray, Float64Array, RecordBatch, StringArray, TimestampMicrosecondArray,
};
use bytes::Bytes;
use parquet::arrow::ProjectionMask;
use serde::Serialize;

use crate::base::error::Result;
use crate::parts::read::corrupt;

/// Rows decoded at a time.
const BATCH_ROWS: usize = 8192;

/// The columns counted.
const COLUMNS: [&str; 9] = [
    "stage",
    "event_type",
    "source_crs",
    "outcome",
    "rejection_reason",
    "tool_version",
    "audit_tag",
    "event_time_utc",
    "accuracy_m",
];

/// The columns counted when the part has them (contract 1.3.0 on).
const OPERATION_COLUMNS: [&str; 4] = ["operation_code", "operation_name", "grids", "degraded"];

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

/// Counts of `accuracy_m` (of one part, or of several parts of one target CRS).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Accuracy {
    /// Events per bin.
    pub bins: [u64; ACCURACY_BINS],
    /// Events without a (finite) value.
    pub null: u64,
    /// Smallest and largest value.
    pub range: Option<(f64, f64)>,
}

impl Accuracy {
    /// Add `o`'s counts to these.
    pub(crate) fn merge(&mut self, o: &Accuracy) {
        for (a, b) in self.bins.iter_mut().zip(o.bins) {
            *a += b;
        }
        self.null += o.null;
        if let Some((lo, hi)) = o.range {
            self.add_range(lo, hi);
        }
    }

    /// Count one event's value (`None`: null).
    fn add(&mut self, v: Option<f64>) {
        match v {
            Some(v) if v.is_finite() => {
                self.bins[accuracy_bin(v)] += 1;
                self.add_range(v, v);
            }
            _ => self.null += 1,
        }
    }

    fn add_range(&mut self, lo: f64, hi: f64) {
        self.range = Some(match self.range {
            None => (lo, hi),
            Some((a, b)) => (a.min(lo), b.max(hi)),
        });
    }
}

/// What the events of one coordinate operation (one `operation_code`) say.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct OperationStats {
    /// `operation_name` → events (one name per code, unless writers disagreed).
    pub names: BTreeMap<String, u64>,
    /// Events.
    pub events: u64,
    /// Events with a (finite) `accuracy_m`.
    pub with_accuracy: u64,
    /// Sum of those values (summed in commit and row order: the same store gives the same sum).
    pub accuracy_sum: f64,
    /// Largest of those values.
    pub accuracy_max: Option<f64>,
    /// Grid short name → events that used it (`grids` split on spaces).
    pub grids: BTreeMap<String, u64>,
    /// Events whose `grids` is null (not recorded; an empty `grids` says none was used).
    pub grids_unknown: u64,
    /// Events with `degraded` true (the best operation was not available).
    pub degraded: u64,
}

impl OperationStats {
    /// Add `o`'s counts to these.
    pub fn merge(&mut self, o: &OperationStats) {
        for (mine, theirs) in [(&mut self.names, &o.names), (&mut self.grids, &o.grids)] {
            for (k, v) in theirs {
                *mine.entry(k.clone()).or_default() += v;
            }
        }
        self.events += o.events;
        self.grids_unknown += o.grids_unknown;
        self.with_accuracy += o.with_accuracy;
        self.accuracy_sum += o.accuracy_sum;
        if let Some(m) = o.accuracy_max {
            self.add_max(m);
        }
        self.degraded += o.degraded;
    }

    fn add_max(&mut self, v: f64) {
        self.accuracy_max = Some(self.accuracy_max.map_or(v, |m| m.max(v)));
    }

    /// The mean `accuracy_m` of the events that recorded one.
    pub fn accuracy_mean(&self) -> Option<f64> {
        (self.with_accuracy > 0).then(|| self.accuracy_sum / self.with_accuracy as f64)
    }

    /// The most frequent name (the first by name among equals).
    pub fn name(&self) -> Option<&str> {
        let mut best: Option<(&String, u64)> = None;
        for (n, c) in &self.names {
            if best.is_none_or(|(_, b)| *c > b) {
                best = Some((n, *c));
            }
        }
        best.map(|(n, _)| n.as_str())
    }
}

/// Counts of one stage.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct StageStats {
    /// Events.
    pub rows: u64,
    /// `event_type` → events.
    pub event_types: BTreeMap<String, u64>,
    /// `outcome` → events (`transformed`, `rejected`, ...).
    pub outcomes: BTreeMap<String, u64>,
    /// `rejection_reason` → events, over rejected events.
    pub rejection_reasons: BTreeMap<String, u64>,
    /// `source_crs` → events (events without one are not counted here).
    pub source_crs: BTreeMap<String, u64>,
    /// `tool_version` → events.
    pub tools: BTreeMap<String, u64>,
    /// `audit_tag` → events.
    pub audit_tags: BTreeMap<String, u64>,
    /// Earliest and latest `event_time_utc`, microseconds.
    pub event_time_us: Option<(i64, i64)>,
    /// `operation_code` → what its events say, over transformed events (`""`: events
    /// that recorded no operation code, among them every event of a 1.2.0 part).
    pub operations: BTreeMap<String, OperationStats>,
}

impl StageStats {
    /// Add `other`'s counts to these.
    pub fn merge(&mut self, other: &StageStats) {
        self.rows += other.rows;
        for (mine, theirs) in [
            (&mut self.event_types, &other.event_types),
            (&mut self.outcomes, &other.outcomes),
            (&mut self.rejection_reasons, &other.rejection_reasons),
            (&mut self.source_crs, &other.source_crs),
            (&mut self.tools, &other.tools),
            (&mut self.audit_tags, &other.audit_tags),
        ] {
            for (k, v) in theirs {
                *mine.entry(k.clone()).or_default() += v;
            }
        }
        if let Some((lo, hi)) = other.event_time_us {
            widen(&mut self.event_time_us, lo);
            widen(&mut self.event_time_us, hi);
        }
        for (code, o) in &other.operations {
            self.operations.entry(code.clone()).or_default().merge(o);
        }
    }

    /// Events with this outcome.
    pub fn outcome(&self, outcome: &str) -> u64 {
        self.outcomes.get(outcome).copied().unwrap_or(0)
    }
}

/// Counts of one part (or several merged), per stage.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PartStats {
    /// `stage` → its counts.
    pub stages: BTreeMap<String, StageStats>,
}

impl PartStats {
    /// Add `other`'s counts to these.
    pub fn merge(&mut self, other: &PartStats) {
        for (stage, s) in &other.stages {
            self.stages.entry(stage.clone()).or_default().merge(s);
        }
    }

    /// All stages together.
    pub fn total(&self) -> StageStats {
        let mut t = StageStats::default();
        for s in self.stages.values() {
            t.merge(s);
        }
        t
    }
}

fn widen(acc: &mut Option<(i64, i64)>, v: i64) {
    *acc = Some(match *acc {
        None => (v, v),
        Some((lo, hi)) => (lo.min(v), hi.max(v)),
    });
}

fn bump(map: &mut BTreeMap<String, u64>, key: &str) {
    match map.get_mut(key) {
        Some(n) => *n += 1,
        None => {
            map.insert(key.to_string(), 1);
        }
    }
}

/// What one part's rows say: per stage, and over the part (which is of one target CRS) the
/// `accuracy_m` histogram.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct PartCounts {
    /// Per stage.
    pub stats: PartStats,
    /// `accuracy_m`.
    pub accuracy: Accuracy,
}

/// A part's counts per stage ([`count_part`] without the histogram).
pub(crate) fn part_stats(
    key: &str,
    bytes: Bytes,
    limits: crate::base::limits::ReadLimits,
) -> Result<PartStats> {
    count_part(key, bytes, limits).map(|c| c.stats)
}

/// Count the rows of a part, from its bytes (already checked against its pointer by the
/// trusted read path: the counts are of the bytes the digest covers). Only the counted
/// columns are decoded, a batch at a time, no page over `limits` bytes.
pub(crate) fn count_part(
    key: &str,
    bytes: Bytes,
    limits: crate::base::limits::ReadLimits,
) -> Result<PartCounts> {
    let bad = |m: String| corrupt(key, m);
    let builder = crate::parts::decoded::builder(bytes, limits).map_err(|m| corrupt(key, m))?;
    // Leaf index of each counted column (the contract is flat: one leaf per field).
    let leaf = |name: &str| {
        builder
            .parquet_schema()
            .columns()
            .iter()
            .position(|c| c.path().parts() == [name.to_string()])
    };
    let mut leaves: Vec<usize> = COLUMNS
        .iter()
        .map(|name| leaf(name).ok_or_else(|| bad(format!("has no column `{name}`"))))
        .collect::<Result<_>>()?;
    leaves.extend(OPERATION_COLUMNS.iter().filter_map(|name| leaf(name)));
    let mask = ProjectionMask::leaves(builder.parquet_schema(), leaves);
    let reader = builder
        .with_projection(mask)
        .with_batch_size(BATCH_ROWS)
        .build()
        .map_err(|e| bad(e.to_string()))?;
    let mut counts = PartCounts::default();
    for batch in reader {
        let batch = batch.map_err(|e| bad(format!("unreadable column data: {e}")))?;
        count_batch(&batch, &mut counts).map_err(bad)?;
    }
    Ok(counts)
}

fn value(a: &StringArray, i: usize) -> Option<&str> {
    a.is_valid(i).then(|| a.value(i))
}

/// The counted columns of one batch, in the order of [`COLUMNS`].
struct Columns<'a> {
    stage: &'a StringArray,
    event_type: &'a StringArray,
    source_crs: &'a StringArray,
    outcome: &'a StringArray,
    reason: &'a StringArray,
    tool: &'a StringArray,
    tag: &'a StringArray,
    time: &'a TimestampMicrosecondArray,
    accuracy: &'a Float64Array,
    /// The operation columns, when the part has them.
    op_code: Option<&'a StringArray>,
    op_name: Option<&'a StringArray>,
    grids: Option<&'a StringArray>,
    degraded: Option<&'a BooleanArray>,
}

impl<'a> Columns<'a> {
    fn of(batch: &'a RecordBatch) -> std::result::Result<Self, String> {
        let text = |name: &str| -> std::result::Result<&'a StringArray, String> {
            batch
                .column_by_name(name)
                .and_then(|a| a.as_string_opt::<i32>())
                .ok_or_else(|| format!("column `{name}` is not a string column"))
        };
        let optional_text = |name: &str| match batch.column_by_name(name) {
            None => Ok(None),
            Some(_) => text(name).map(Some),
        };
        Ok(Columns {
            stage: text(COLUMNS[0])?,
            event_type: text(COLUMNS[1])?,
            source_crs: text(COLUMNS[2])?,
            outcome: text(COLUMNS[3])?,
            reason: text(COLUMNS[4])?,
            tool: text(COLUMNS[5])?,
            tag: text(COLUMNS[6])?,
            time: batch
                .column_by_name(COLUMNS[7])
                .and_then(|a| a.as_primitive_opt::<TimestampMicrosecondType>())
                .ok_or("column `event_time_utc` is not a microsecond timestamp")?,
            accuracy: batch
                .column_by_name(COLUMNS[8])
                .and_then(|a| a.as_primitive_opt::<Float64Type>())
                .ok_or("column `accuracy_m` is not a float64 column")?,
            op_code: optional_text(OPERATION_COLUMNS[0])?,
            op_name: optional_text(OPERATION_COLUMNS[1])?,
            grids: optional_text(OPERATION_COLUMNS[2])?,
            degraded: match batch.column_by_name(OPERATION_COLUMNS[3]) {
                None => None,
                Some(a) => Some(
                    a.as_boolean_opt()
                        .ok_or("column `degraded` is not a boolean column")?,
                ),
            },
        })
    }

    /// Count a transformed row's operation, accuracy, grids and degraded flag.
    fn count_operation(&self, i: usize, st: &mut StageStats) {
        fn text(a: Option<&StringArray>, i: usize) -> Option<&str> {
            a.and_then(|a| value(a, i))
        }
        let code = text(self.op_code, i).unwrap_or("");
        let op = match st.operations.get_mut(code) {
            Some(op) => op,
            None => st.operations.entry(code.to_string()).or_default(),
        };
        op.events += 1;
        if let Some(n) = text(self.op_name, i) {
            bump(&mut op.names, n);
        }
        for g in text(self.grids, i)
            .unwrap_or("")
            .split(' ')
            .filter(|g| !g.is_empty())
        {
            bump(&mut op.grids, g);
        }
        if self.degraded.is_some_and(|d| d.is_valid(i) && d.value(i)) {
            op.degraded += 1;
        }
        let a = self.accuracy;
        if a.is_valid(i) && a.value(i).is_finite() {
            op.with_accuracy += 1;
            op.accuracy_sum += a.value(i);
            op.add_max(a.value(i));
        }
    }

    /// Count row `i` into its stage's counts.
    fn count_row(&self, i: usize, st: &mut StageStats) {
        st.rows += 1;
        bump(&mut st.event_types, value(self.event_type, i).unwrap_or(""));
        let o = value(self.outcome, i).unwrap_or("");
        bump(&mut st.outcomes, o);
        if o == "transformed" {
            self.count_operation(i, st);
        }
        if o == "rejected" {
            bump(
                &mut st.rejection_reasons,
                value(self.reason, i).unwrap_or(""),
            );
        }
        if let Some(c) = value(self.source_crs, i) {
            bump(&mut st.source_crs, c);
        }
        bump(&mut st.tools, value(self.tool, i).unwrap_or(""));
        if let Some(t) = value(self.tag, i) {
            bump(&mut st.audit_tags, t);
        }
        if self.time.is_valid(i) {
            widen(&mut st.event_time_us, self.time.value(i));
        }
    }
}

fn count_batch(batch: &RecordBatch, counts: &mut PartCounts) -> std::result::Result<(), String> {
    let cols = Columns::of(batch)?;
    for i in 0..batch.num_rows() {
        let s = value(cols.stage, i).unwrap_or("");
        let stages = &mut counts.stats.stages;
        let st = match stages.get_mut(s) {
            Some(st) => st,
            None => stages.entry(s.to_string()).or_default(),
        };
        cols.count_row(i, st);
        let a = cols.accuracy;
        counts.accuracy.add(a.is_valid(i).then(|| a.value(i)));
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
