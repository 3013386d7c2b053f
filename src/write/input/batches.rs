//! Arrow batches handed over in memory by another engine (the Python package takes them
//! through the Arrow C data interface from pyarrow, Polars, DuckDB...): validated by the
//! same [`Validator`] as every file format, rows numbered from 1 across the whole input.
//!
//! Engines differ from the contract in how they *lay out* a value, not in the value:
//! Polars exports strings as `Utf8View`, pandas-derived and Polars' `to_arrow` tables as
//! `LargeUtf8`, DuckDB labels `TIMESTAMPTZ` `Etc/UTC`, and a table built from a dict may
//! hold the columns in another order. [`conform`] is the CLI's own rule for Arrow IPC and
//! Parquet input ([`crate::write::conform`]): columns matched by name to a registered contract
//! version, only lossless re-encodings accepted (large offsets narrowed without copying the
//! strings, views copied once, a UTC zone relabelled), everything else refused with the
//! field and both types, exactly as `lineage append` refuses it in a file.
//!
//! Input with a schema and no rows is held to the same rule as a file ([`check_schema`]):
//! an empty table in the contract appends nothing; an empty table of another schema is
//! refused, as `lineage append` refuses an Arrow file without batches whose schema is not
//! the contract.

use arrow_array::RecordBatch;
use arrow_schema::Schema;

use crate::base::error::Result;
use crate::base::rejection::{Collector, DEFAULT_MAX_ERRORS};
use crate::schema::events::{Origin, SourcedBatch};
use crate::write::input::source::BatchSource;
use crate::write::validate::Validator;

/// The batch in its contract version's schema, as the CLI conforms binary input (see the
/// module docs). Columns already in the contract's type are passed through (no copy).
pub fn conform(batch: RecordBatch) -> Result<RecordBatch> {
    crate::write::conform::plan(batch.schema().as_ref())?.apply(&batch)
}

/// The one rule for a schema, also when no batch (or no row) follows it: the schema of an
/// Arrow stream or table is checked as the CLI checks an Arrow or Parquet file's before
/// reading its batches, so empty input of the wrong schema is refused, naming every
/// difference, and empty input in the contract is a no-op.
pub fn check_schema(schema: &Schema) -> Result<()> {
    crate::write::conform::plan(schema).map(|_| ())
}

/// Validates a stream of in-memory batches with the CLI's rules, numbering rows from 1
/// across all of them (errors read `row 12, field `target_crs``).
#[derive(Debug)]
pub struct BatchValidator {
    rules: Validator,
    next_row: u64,
}

impl BatchValidator {
    /// Rows numbered from 1.
    pub fn new() -> Self {
        Self {
            rules: Validator::new(),
            next_row: 1,
        }
    }

    /// Rows validated so far.
    pub fn rows(&self) -> u64 {
        self.next_row - 1
    }

    /// Conform, check the schema and every row rule; the batch with canonical CRS columns,
    /// or refused with every error of the batch (the first 20 listed).
    pub fn validate(&mut self, batch: RecordBatch) -> Result<RecordBatch> {
        let rows = batch.num_rows() as u64;
        let sourced = SourcedBatch::new(
            conform(batch)?,
            Origin::Rows {
                first: self.next_row,
            },
        );
        let out = self.rules.validate(&sourced)?;
        self.next_row += rows;
        Ok(out)
    }
}

impl Default for BatchValidator {
    fn default() -> Self {
        Self::new()
    }
}

/// Validate every batch (all of them, before anything may be committed); refused with
/// every error of all the batches (the first [`DEFAULT_MAX_ERRORS`] listed, in row order).
/// A batch whose schema is not the contract refuses the input at once.
pub fn validate_all(batches: impl IntoIterator<Item = RecordBatch>) -> Result<Vec<RecordBatch>> {
    validate_all_listing(batches, DEFAULT_MAX_ERRORS)
}

/// [`validate_all`], listing the first `max_errors` errors of a refused input (`0`: all;
/// the refusal counts them all either way), as `append --max-errors` does.
pub fn validate_all_listing(
    batches: impl IntoIterator<Item = RecordBatch>,
    max_errors: usize,
) -> Result<Vec<RecordBatch>> {
    let mut rules = Validator::new();
    let mut errors = Collector::new(max_errors);
    let mut out = Vec::new();
    let mut first = 1u64;
    for b in batches {
        let rows = b.num_rows() as u64;
        let sourced = SourcedBatch::new(conform(b)?, Origin::Rows { first });
        out.extend(rules.check(&sourced, &mut errors)?);
        first += rows;
    }
    errors.finish()?;
    Ok(out)
}

/// Batches in memory, not validated yet, as an input `check` (or an append) reads: each
/// conformed as Arrow input is ([`conform`]), rows numbered from 1 across all of them.
#[derive(Debug, Clone)]
pub struct InMemory(pub Vec<RecordBatch>);

impl BatchSource for InMemory {
    fn read_all(&self, f: &mut dyn FnMut(SourcedBatch) -> Result<()>) -> Result<()> {
        let mut first = 1u64;
        for b in &self.0 {
            let rows = b.num_rows() as u64;
            f(SourcedBatch::new(
                conform(b.clone())?,
                Origin::Rows { first },
            ))?;
            first += rows;
        }
        Ok(())
    }
    fn held_in_memory(&self) -> bool {
        true
    }
}
