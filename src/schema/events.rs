//! Building contract batches row by row, and the row-locating [`Origin`] that lets every
//! error name the input line or row it is about.

use std::sync::Arc;

use arrow_array::builder::{
    BooleanBuilder, Float64Builder, Int32Builder, Int64Builder, StringBuilder,
    TimestampMicrosecondBuilder,
};
use arrow_array::{ArrayRef, RecordBatch};

use crate::base::error::Result;
use crate::base::rejection::{InputError, Place};
use crate::schema::contract;

/// Rows per batch the text readers produce.
pub const BUILD_CHUNK_ROWS: usize = 64 * 1024;

/// Where the rows of a batch came from.
#[derive(Debug, Clone)]
pub enum Origin {
    /// Text input: the 1-based line number of each row.
    Lines(Vec<u64>),
    /// Binary input: rows numbered from `first` (1-based).
    Rows {
        /// Number of the batch's first row in the input.
        first: u64,
    },
}

impl Origin {
    /// "line 7" or "row 12" for row `i` of the batch.
    pub fn locate(&self, i: usize) -> String {
        match self.place(i) {
            Place::Line(l) => format!("line {l}"),
            Place::Row(r) => format!("row {r}"),
            Place::Schema => "the schema".to_string(),
        }
    }

    /// Where row `i` of the batch is in the input.
    pub fn place(&self, i: usize) -> Place {
        match self {
            Origin::Lines(lines) => match lines.get(i) {
                Some(&l) => Place::Line(l),
                None => Place::Row(i as u64 + 1),
            },
            Origin::Rows { first } => Place::Row(first + i as u64),
        }
    }
}

/// What a reader refused in the lines a batch was read from: the errors (each with the
/// contract column it is about, for ordering), and the cells they concern. A line that did
/// not parse at all has no row in the batch; a row with a refused value is in the batch
/// with that cell null, and the row rules skip the cell (it is reported once).
#[derive(Debug, Clone, Default)]
pub struct ReadErrors {
    /// (contract column, or `usize::MAX` for none, error), in the order found.
    pub errors: Vec<(usize, InputError)>,
    /// (row in the batch, contract column) of each refused cell, in row order.
    pub cells: Vec<(usize, usize)>,
}

impl ReadErrors {
    /// Whether the reader refused nothing.
    pub fn is_empty(&self) -> bool {
        self.errors.is_empty()
    }

    /// Whether cell (`row`, `column`) was refused by the reader already.
    pub fn reported(&self, row: usize, column: usize) -> bool {
        !self.cells.is_empty() && self.cells.binary_search(&(row, column)).is_ok()
    }
}

/// A batch of events in the contract schema with where its rows came from.
#[derive(Debug, Clone)]
pub struct SourcedBatch {
    /// The rows.
    pub batch: RecordBatch,
    /// Where they came from.
    pub origin: Origin,
    /// What the reader refused in those lines (empty for binary input).
    pub read_errors: ReadErrors,
}

impl SourcedBatch {
    /// Rows the reader found nothing wrong with.
    pub fn new(batch: RecordBatch, origin: Origin) -> Self {
        Self {
            batch,
            origin,
            read_errors: ReadErrors::default(),
        }
    }
}

/// One event, borrowed, as the row-wise readers and the demo produce it: each field is the
/// contract column of its name (`event_time_us`: `event_time_utc` in microseconds since the
/// epoch), `None` for null. The last six are the columns 1.3.0 adds.
#[derive(Debug, Clone, Default)]
pub struct EventRow<'a> {
    /// `event_id`.
    pub event_id: Option<&'a str>,
    /// `run_id`.
    pub run_id: Option<&'a str>,
    /// `sequence`.
    pub sequence: Option<i64>,
    /// `event_time_utc`, microseconds since the epoch.
    pub event_time_us: Option<i64>,
    /// `stage`.
    pub stage: Option<&'a str>,
    /// `event_type`.
    pub event_type: Option<&'a str>,
    /// `feature_id`.
    pub feature_id: Option<&'a str>,
    /// `source_crs`.
    pub source_crs: Option<&'a str>,
    /// `target_crs`.
    pub target_crs: Option<&'a str>,
    /// `outcome`.
    pub outcome: Option<&'a str>,
    /// `strategy_index`.
    pub strategy_index: Option<i32>,
    /// `accuracy_m`.
    pub accuracy_m: Option<f64>,
    /// `rejection_reason`.
    pub rejection_reason: Option<&'a str>,
    /// `tool_version`.
    pub tool_version: Option<&'a str>,
    /// `audit_tag`.
    pub audit_tag: Option<&'a str>,
    /// `operation_code` (1.3.0).
    pub operation_code: Option<&'a str>,
    /// `operation_name` (1.3.0).
    pub operation_name: Option<&'a str>,
    /// `grids` (1.3.0).
    pub grids: Option<&'a str>,
    /// `degraded` (1.3.0).
    pub degraded: Option<bool>,
    /// `input_dataset` (1.3.0).
    pub input_dataset: Option<&'a str>,
    /// `input_version` (1.3.0).
    pub input_version: Option<&'a str>,
}

impl EventRow<'_> {
    /// Whether a column 1.3.0 adds holds a value.
    fn has_1_3_0_values(&self) -> bool {
        self.operation_code.is_some()
            || self.operation_name.is_some()
            || self.grids.is_some()
            || self.degraded.is_some()
            || self.input_dataset.is_some()
            || self.input_version.is_some()
    }
}

/// Column builders for the contract; rows are appended without per-row allocation. A batch
/// is of the oldest version that holds its values: 1.2.0, or 1.3.0 when a row has a value
/// in a column 1.3.0 adds.
#[derive(Debug)]
pub struct EventBuilder {
    event_id: StringBuilder,
    run_id: StringBuilder,
    sequence: Int64Builder,
    event_time: TimestampMicrosecondBuilder,
    stage: StringBuilder,
    event_type: StringBuilder,
    feature_id: StringBuilder,
    source_crs: StringBuilder,
    target_crs: StringBuilder,
    outcome: StringBuilder,
    strategy_index: Int32Builder,
    accuracy_m: Float64Builder,
    rejection_reason: StringBuilder,
    tool_version: StringBuilder,
    audit_tag: StringBuilder,
    operation_code: StringBuilder,
    operation_name: StringBuilder,
    grids: StringBuilder,
    degraded: BooleanBuilder,
    input_dataset: StringBuilder,
    input_version: StringBuilder,
    /// Whether a pending row has a value in a column 1.3.0 adds.
    wide: bool,
    rows: usize,
}

impl Default for EventBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl EventBuilder {
    /// Empty builders.
    pub fn new() -> Self {
        Self {
            event_id: StringBuilder::new(),
            run_id: StringBuilder::new(),
            sequence: Int64Builder::new(),
            event_time: TimestampMicrosecondBuilder::new().with_timezone("UTC"),
            stage: StringBuilder::new(),
            event_type: StringBuilder::new(),
            feature_id: StringBuilder::new(),
            source_crs: StringBuilder::new(),
            target_crs: StringBuilder::new(),
            outcome: StringBuilder::new(),
            strategy_index: Int32Builder::new(),
            accuracy_m: Float64Builder::new(),
            rejection_reason: StringBuilder::new(),
            tool_version: StringBuilder::new(),
            audit_tag: StringBuilder::new(),
            operation_code: StringBuilder::new(),
            operation_name: StringBuilder::new(),
            grids: StringBuilder::new(),
            degraded: BooleanBuilder::new(),
            input_dataset: StringBuilder::new(),
            input_version: StringBuilder::new(),
            wide: false,
            rows: 0,
        }
    }

    /// Rows appended since the last [`finish`](Self::finish).
    pub fn len(&self) -> usize {
        self.rows
    }

    /// Whether no row is pending.
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Append one row.
    pub fn push(&mut self, r: &EventRow<'_>) {
        self.event_id.append_option(r.event_id);
        self.run_id.append_option(r.run_id);
        self.sequence.append_option(r.sequence);
        self.event_time.append_option(r.event_time_us);
        self.stage.append_option(r.stage);
        self.event_type.append_option(r.event_type);
        self.feature_id.append_option(r.feature_id);
        self.source_crs.append_option(r.source_crs);
        self.target_crs.append_option(r.target_crs);
        self.outcome.append_option(r.outcome);
        self.strategy_index.append_option(r.strategy_index);
        self.accuracy_m.append_option(r.accuracy_m);
        self.rejection_reason.append_option(r.rejection_reason);
        self.tool_version.append_option(r.tool_version);
        self.audit_tag.append_option(r.audit_tag);
        self.operation_code.append_option(r.operation_code);
        self.operation_name.append_option(r.operation_name);
        self.grids.append_option(r.grids);
        self.degraded.append_option(r.degraded);
        self.input_dataset.append_option(r.input_dataset);
        self.input_version.append_option(r.input_version);
        self.wide |= r.has_1_3_0_values();
        self.rows += 1;
    }

    /// The pending rows as a contract batch; the builders start over.
    pub fn finish(&mut self) -> Result<RecordBatch> {
        let cols: Vec<ArrayRef> = vec![
            Arc::new(self.event_id.finish()),
            Arc::new(self.run_id.finish()),
            Arc::new(self.sequence.finish()),
            Arc::new(self.event_time.finish()),
            Arc::new(self.stage.finish()),
            Arc::new(self.event_type.finish()),
            Arc::new(self.feature_id.finish()),
            Arc::new(self.source_crs.finish()),
            Arc::new(self.target_crs.finish()),
            Arc::new(self.outcome.finish()),
            Arc::new(self.strategy_index.finish()),
            Arc::new(self.accuracy_m.finish()),
            Arc::new(self.rejection_reason.finish()),
            Arc::new(self.tool_version.finish()),
            Arc::new(self.audit_tag.finish()),
        ];
        let added: Vec<ArrayRef> = vec![
            Arc::new(self.operation_code.finish()),
            Arc::new(self.operation_name.finish()),
            Arc::new(self.grids.finish()),
            Arc::new(self.degraded.finish()),
            Arc::new(self.input_dataset.finish()),
            Arc::new(self.input_version.finish()),
        ];
        self.rows = 0;
        if !std::mem::take(&mut self.wide) {
            return Ok(RecordBatch::try_new(contract::schema(), cols)?);
        }
        let mut cols = cols;
        cols.extend(added);
        let v = contract::version(contract::SCHEMA_VERSION_1_3_0)?;
        Ok(RecordBatch::try_new(v.schema(), cols)?)
    }
}

/// Reader errors a batch holds at most: a batch is cut early when its lines hold more
/// (an input of bad lines only makes no rows, and must not make an unbounded batch).
const MAX_READ_ERRORS_PER_BATCH: usize = 4096;

/// Rows from a text input, cut into batches of [`BUILD_CHUNK_ROWS`] that remember the
/// input line of every row, and what the reader refused in those lines.
#[derive(Debug, Default)]
pub struct LineBatcher {
    builder: EventBuilder,
    lines: Vec<u64>,
    errors: ReadErrors,
    out: Vec<SourcedBatch>,
}

impl LineBatcher {
    /// Nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Append the row read from input line `line`.
    pub fn push(&mut self, row: &EventRow<'_>, line: u64) -> Result<()> {
        self.push_refused(row, line, &[])
    }

    /// Append the row read from input line `line` whose `refused` contract columns (in
    /// ascending order) were reported with [`error`](Self::error) and are null in `row`.
    pub fn push_refused(&mut self, row: &EventRow<'_>, line: u64, refused: &[usize]) -> Result<()> {
        let i = self.builder.len();
        self.errors.cells.extend(refused.iter().map(|&c| (i, c)));
        self.builder.push(row);
        self.lines.push(line);
        if self.builder.len() >= BUILD_CHUNK_ROWS {
            self.cut()?;
        }
        Ok(())
    }

    /// Record what the reader refused on input line `line` (`column`: the contract column
    /// it is about, if any).
    pub fn error(
        &mut self,
        line: u64,
        column: Option<usize>,
        value: Option<String>,
        reason: impl Into<String>,
    ) -> Result<()> {
        let field = column.and_then(contract::column_name);
        self.error_in(line, column, field, value, reason)
    }

    /// [`error`](Self::error) about a field that may not be in the contract (`column`:
    /// its contract column when it is one).
    pub fn error_in(
        &mut self,
        line: u64,
        column: Option<usize>,
        field: Option<&str>,
        value: Option<String>,
        reason: impl Into<String>,
    ) -> Result<()> {
        let e = InputError::new(Place::Line(line), field, value, reason);
        self.errors.errors.push((column.unwrap_or(usize::MAX), e));
        if self.errors.errors.len() >= MAX_READ_ERRORS_PER_BATCH {
            self.cut()?;
        }
        Ok(())
    }

    fn cut(&mut self) -> Result<()> {
        self.out.push(SourcedBatch {
            batch: self.builder.finish()?,
            origin: Origin::Lines(std::mem::take(&mut self.lines)),
            read_errors: std::mem::take(&mut self.errors),
        });
        Ok(())
    }

    /// The full batches cut so far (readers hand them on as they go).
    pub fn take_ready(&mut self) -> Vec<SourcedBatch> {
        std::mem::take(&mut self.out)
    }

    /// All batches, the last one possibly short (or without rows, holding only errors).
    pub fn finish(mut self) -> Result<Vec<SourcedBatch>> {
        if !self.builder.is_empty() || !self.errors.is_empty() {
            self.cut()?;
        }
        Ok(self.out)
    }
}
