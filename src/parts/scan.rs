//! What a part's rows say, for the exports: per stage, the counts of outcomes, rejection
//! reasons, event types, source CRSs, tools and audit tags, and the event-time range.
//!
//! Counted from the part's bytes as the trusted read path fetched and checked them
//! ([`crate::read`]): only the counted columns are decoded, a batch at a time. Columns are
//! found by name, so a part of any registered contract version is read.

use std::collections::BTreeMap;

use arrow_array::cast::AsArray;
use arrow_array::types::TimestampMicrosecondType;
use arrow_array::{Array, RecordBatch, StringArray};
use bytes::Bytes;
use parquet::arrow::ProjectionMask;
use serde::Serialize;

use crate::base::error::Result;
use crate::parts::read::corrupt;

/// Rows decoded at a time.
const BATCH_ROWS: usize = 8192;

/// The columns counted, in the order [`count_batch`] reads them.
const COLUMNS: [&str; 8] = [
    "stage",
    "event_type",
    "source_crs",
    "outcome",
    "rejection_reason",
    "tool_version",
    "audit_tag",
    "event_time_utc",
];

/// Counts of one stage.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
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
    }

    /// Events with this outcome.
    pub fn outcome(&self, outcome: &str) -> u64 {
        self.outcomes.get(outcome).copied().unwrap_or(0)
    }
}

/// Counts of one part (or several merged), per stage.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
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

/// Count the rows of a part, from its bytes (already checked against its pointer by the
/// trusted read path: the counts are of the bytes the digest covers). Only the counted
/// columns are decoded, a batch at a time.
pub(crate) fn part_stats(key: &str, bytes: Bytes, max_page: u64) -> Result<PartStats> {
    let bad = |m: String| corrupt(key, m);
    let builder = crate::parts::pages::builder(bytes, max_page).map_err(bad)?;
    // Leaf index of each counted column (the contract is flat: one leaf per field).
    let leaves: Vec<usize> = COLUMNS
        .iter()
        .map(|name| {
            builder
                .parquet_schema()
                .columns()
                .iter()
                .position(|c| c.path().parts() == [name.to_string()])
                .ok_or_else(|| bad(format!("has no column `{name}`")))
        })
        .collect::<Result<_>>()?;
    let mask = ProjectionMask::leaves(builder.parquet_schema(), leaves);
    let reader = builder
        .with_projection(mask)
        .with_batch_size(BATCH_ROWS)
        .build()
        .map_err(|e| bad(e.to_string()))?;
    let mut stats = PartStats::default();
    for batch in reader {
        let batch = batch.map_err(|e| bad(format!("unreadable column data: {e}")))?;
        count_batch(&batch, &mut stats).map_err(bad)?;
    }
    Ok(stats)
}

fn value(a: &StringArray, i: usize) -> Option<&str> {
    a.is_valid(i).then(|| a.value(i))
}

fn count_batch(batch: &RecordBatch, stats: &mut PartStats) -> std::result::Result<(), String> {
    let text = |name: &str| -> std::result::Result<&StringArray, String> {
        batch
            .column_by_name(name)
            .and_then(|a| a.as_string_opt::<i32>())
            .ok_or_else(|| format!("column `{name}` is not a string column"))
    };
    let [stage, event_type, source_crs, outcome, reason, tool, tag] = [
        text(COLUMNS[0])?,
        text(COLUMNS[1])?,
        text(COLUMNS[2])?,
        text(COLUMNS[3])?,
        text(COLUMNS[4])?,
        text(COLUMNS[5])?,
        text(COLUMNS[6])?,
    ];
    let time = batch
        .column_by_name(COLUMNS[7])
        .and_then(|a| a.as_primitive_opt::<TimestampMicrosecondType>())
        .ok_or("column `event_time_utc` is not a microsecond timestamp")?;
    for i in 0..batch.num_rows() {
        let s = value(stage, i).unwrap_or("");
        let st = match stats.stages.get_mut(s) {
            Some(st) => st,
            None => stats.stages.entry(s.to_string()).or_default(),
        };
        st.rows += 1;
        bump(&mut st.event_types, value(event_type, i).unwrap_or(""));
        let o = value(outcome, i).unwrap_or("");
        bump(&mut st.outcomes, o);
        if o == "rejected" {
            bump(&mut st.rejection_reasons, value(reason, i).unwrap_or(""));
        }
        if let Some(c) = value(source_crs, i) {
            bump(&mut st.source_crs, c);
        }
        bump(&mut st.tools, value(tool, i).unwrap_or(""));
        if let Some(t) = value(tag, i) {
            bump(&mut st.audit_tags, t);
        }
        if time.is_valid(i) {
            widen(&mut st.event_time_us, time.value(i));
        }
    }
    Ok(())
}
