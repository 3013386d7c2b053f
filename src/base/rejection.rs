//! Refused input, every error at once: an [`InputError`] names one line, row or column and
//! why; a [`Rejection`] holds the first errors of an input in input order and how many
//! there were in all; a [`Collector`] gathers them while the whole input is read
//! (`Collector::finish`, in `error.rs` so that this file needs nothing of ours, turns
//! them into the library's error).
//!
//! Guarantees:
//! - **Input order.** Errors are ordered by their line (text input) or row (binary input),
//!   then by the contract's column order within one line, then by when they were found;
//!   schema errors (a column, no row) come first. The readers may find them in another
//!   order (NDJSON blocks are parsed in parallel, a line's row rules run after its parse):
//!   the order is the collector's, not the arrival's.
//! - **Bounded.** A collector keeps at most `max` errors (the first ones in input order;
//!   `0`: every one) and counts the rest, so a refused input of millions of bad lines
//!   costs memory for `max` messages.

use std::collections::BinaryHeap;
use std::fmt;

/// Errors listed by default (`--max-errors`); the rest are counted.
pub const DEFAULT_MAX_ERRORS: usize = 20;

/// Where in the input an error is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Place {
    /// A line of a text input (NDJSON, CSV) as an editor counts it: physical lines from 1,
    /// the CSV header is line 1, a quoted newline advances the count. For a CSV record
    /// that spans lines, the line it starts on.
    Line(u64),
    /// A row of an Arrow IPC or Parquet file or of batches in memory, from 1 across the
    /// whole input.
    Row(u64),
    /// The input's schema or header: a column, not a row.
    Schema,
}

/// One refused line, row or column of an input: what `lineage check --json` prints as an
/// object with the keys `line`, `row`, `field`, `value` and `reason`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    /// Where it is.
    pub place: Place,
    /// The field (column) it is about, when there is one.
    pub field: Option<String>,
    /// The value as written (a string as is, other JSON values as JSON), cut to 64
    /// characters; `None` for a null, a missing field or a line that did not parse.
    pub value: Option<String>,
    /// Why it was refused, for a person (it may quote the value too).
    pub reason: String,
}

impl InputError {
    /// An error at `place` about `field`.
    pub fn new(
        place: Place,
        field: Option<&str>,
        value: Option<String>,
        reason: impl Into<String>,
    ) -> Self {
        Self {
            place,
            field: field.map(str::to_string),
            value,
            reason: reason.into(),
        }
    }

    /// The line, for text input.
    pub fn line(&self) -> Option<u64> {
        match self.place {
            Place::Line(l) => Some(l),
            _ => None,
        }
    }

    /// The row, for binary input and batches in memory.
    pub fn row(&self) -> Option<u64> {
        match self.place {
            Place::Row(r) => Some(r),
            _ => None,
        }
    }

    /// The error as a JSON object: `line`, `row`, `field`, `value`, `reason` (null where
    /// they do not apply).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "line": self.line(),
            "row": self.row(),
            "field": self.field,
            "value": self.value,
            "reason": self.reason,
        })
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = match self.place {
            Place::Line(l) => format!("line {l}"),
            Place::Row(r) => format!("row {r}"),
            Place::Schema => return write!(f, "schema mismatch: {}", self.reason),
        };
        match &self.field {
            Some(field) => write!(f, "{at}, field `{field}`: {}", self.reason),
            None => write!(f, "{at}: {}", self.reason),
        }
    }
}

/// Every error of a refused input: the first ones in input order, and how many in all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// The first errors, in input order (all of them unless the collector was bounded).
    pub errors: Vec<InputError>,
    /// How many errors the input has in all (at least `errors.len()`).
    pub total: u64,
    /// What would fix the input, when one fix fits (e.g. the cast that conforms a table).
    pub hint: Option<String>,
}

impl Rejection {
    /// A rejection of one error.
    pub fn one(e: InputError) -> Self {
        Self {
            errors: vec![e],
            total: 1,
            hint: None,
        }
    }

    /// "… and 11 more errors (31 in all)" when not every error is listed.
    pub fn more(&self) -> Option<String> {
        let shown = self.errors.len() as u64;
        (self.total > shown).then(|| {
            let more = self.total - shown;
            format!(
                "… and {more} more error{} ({} in all)",
                if more == 1 { "" } else { "s" },
                self.total
            )
        })
    }

    /// The rejection as a JSON object: `valid` (false), `error_count`, `errors` (each as
    /// [`InputError::to_json`]) and `hint`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "valid": false,
            "error_count": self.total,
            "errors": self.errors.iter().map(InputError::to_json).collect::<Vec<_>>(),
            "hint": self.hint,
        })
    }
}

/// One error per line; then "… and M more errors (N in all)" when some are not listed;
/// then `hint: …`.
impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut lines: Vec<String> = self.errors.iter().map(ToString::to_string).collect();
        lines.extend(self.more());
        if let Some(h) = &self.hint {
            lines.push(format!("hint: {h}"));
        }
        f.write_str(&lines.join("\n"))
    }
}

/// An error with its place in the input order.
#[derive(Debug)]
struct Keyed {
    key: (u64, usize, u64),
    error: InputError,
}

impl PartialEq for Keyed {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl Eq for Keyed {}
impl PartialOrd for Keyed {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Keyed {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key.cmp(&other.key)
    }
}

/// Gathers the errors of one input (see the module docs for order and bounds).
#[derive(Debug)]
pub struct Collector {
    max: usize,
    /// The kept errors; the greatest (latest in input order) on top, to be dropped first.
    kept: BinaryHeap<Keyed>,
    total: u64,
    seq: u64,
    hint: Option<String>,
}

impl Default for Collector {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_ERRORS)
    }
}

impl Collector {
    /// Keeping the first `max` errors (`0`: all).
    pub fn new(max: usize) -> Self {
        Self {
            max,
            kept: BinaryHeap::new(),
            total: 0,
            seq: 0,
            hint: None,
        }
    }

    /// Record `error`; `column` orders errors within one line (the contract's column
    /// index; anything after the contract's columns for fields that are not in it).
    pub fn push(&mut self, error: InputError, column: usize) {
        let at = match error.place {
            Place::Schema => 0,
            Place::Line(n) | Place::Row(n) => n,
        };
        let keyed = Keyed {
            key: (at, column, self.seq),
            error,
        };
        self.seq += 1;
        self.total += 1;
        if self.max == 0 || self.kept.len() < self.max {
            self.kept.push(keyed);
        } else if self.kept.peek().is_some_and(|top| keyed < *top) {
            self.kept.pop();
            self.kept.push(keyed);
        }
    }

    /// Record every error of `r` (each after the contract's columns within its line).
    pub fn absorb(&mut self, r: Rejection) {
        let listed = r.errors.len() as u64;
        for e in r.errors {
            self.push(e, usize::MAX);
        }
        // Errors `r` counted but did not list count here too.
        self.total += r.total.saturating_sub(listed);
        if self.hint.is_none() {
            self.hint = r.hint;
        }
    }

    /// Say what would fix the input (the first hint set is kept).
    pub fn hint(&mut self, hint: impl Into<String>) {
        self.hint.get_or_insert_with(|| hint.into());
    }

    /// How many errors were recorded.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Whether no error was recorded.
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// The errors in input order, or `None` when there were none.
    pub fn into_rejection(self) -> Option<Rejection> {
        if self.total == 0 {
            return None;
        }
        Some(Rejection {
            errors: self
                .kept
                .into_sorted_vec()
                .into_iter()
                .map(|k| k.error)
                .collect(),
            total: self.total,
            hint: self.hint,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(line: u64, field: &str) -> InputError {
        InputError::new(Place::Line(line), Some(field), None, format!("bad {field}"))
    }

    #[test]
    fn errors_come_out_in_input_order_whatever_order_they_arrive_in() {
        let mut c = Collector::new(0);
        c.push(at(16, "strategy_index"), 10);
        c.push(at(5, "target_crs"), 8);
        c.push(at(5, "source_crs"), 7);
        c.push(
            InputError::new(Place::Schema, Some("x"), None, "not in the contract"),
            15,
        );
        let r = c.into_rejection().unwrap();
        let got: Vec<String> = r.errors.iter().map(ToString::to_string).collect();
        assert_eq!(
            got,
            [
                "schema mismatch: not in the contract",
                "line 5, field `source_crs`: bad source_crs",
                "line 5, field `target_crs`: bad target_crs",
                "line 16, field `strategy_index`: bad strategy_index",
            ]
        );
        assert_eq!(r.total, 4);
        assert_eq!(r.more(), None);
    }

    #[test]
    fn a_bounded_collector_keeps_the_first_errors_and_counts_the_rest() {
        let mut c = Collector::new(3);
        for line in (1..=10).rev() {
            c.push(at(line, "stage"), 4);
        }
        let r = c.into_rejection().unwrap();
        let lines: Vec<u64> = r.errors.iter().filter_map(InputError::line).collect();
        assert_eq!(lines, [1, 2, 3]);
        assert_eq!(r.total, 10);
        assert_eq!(r.more().unwrap(), "… and 7 more errors (10 in all)");
        assert_eq!(
            r.to_string(),
            "line 1, field `stage`: bad stage\nline 2, field `stage`: bad stage\nline 3, field `stage`: bad stage\n… and 7 more errors (10 in all)"
        );
    }

    #[test]
    fn json_names_line_row_field_value_and_reason() {
        let e = InputError::new(
            Place::Row(12),
            Some("target_crs"),
            Some("WGS84".into()),
            "`WGS84` is not an EPSG CRS identifier",
        );
        assert_eq!(
            e.to_json(),
            serde_json::json!({"line": null, "row": 12, "field": "target_crs", "value": "WGS84", "reason": "`WGS84` is not an EPSG CRS identifier"})
        );
        let mut c = Collector::default();
        c.push(e, 8);
        c.hint("fix it");
        let r = c.into_rejection().unwrap();
        assert_eq!(r.to_json()["error_count"], 1);
        assert_eq!(r.to_json()["hint"], "fix it");
        assert!(r.to_string().ends_with("\nhint: fix it"));
    }

    #[test]
    fn an_empty_collector_is_ok() {
        assert!(Collector::default().into_rejection().is_none());
    }
}
