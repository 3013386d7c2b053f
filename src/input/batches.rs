//! Arrow batches handed over in memory by another engine (the Python package takes them
//! through the Arrow C data interface from pyarrow, Polars, DuckDB...): validated by the
//! same [`Validator`] as every file format, rows numbered from 1 across the whole input.
//!
//! Engines differ from the contract in how they *lay out* a value, not in the value:
//! Polars exports strings as `Utf8View`, pandas-derived and Polars' `to_arrow` tables as
//! `LargeUtf8`, and DuckDB labels `TIMESTAMPTZ` with the session's time zone (e.g.
//! `Etc/UTC`). [`conform`] maps exactly these onto the contract's types, changing no value:
//! strings become `Utf8` (large offsets narrowed, views copied once), and a time-zone-aware
//! microsecond timestamp is relabelled `UTC` (Arrow stores such timestamps as UTC instants
//! whatever the label, so the numbers stay as they are and nothing is copied). Every other
//! difference (another unit, a naive timestamp, another integer width, a missing, extra or
//! reordered field) is left for [`crate::contract::check_schema`] to refuse, as the CLI
//! refuses it in an Arrow IPC or Parquet file.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, RecordBatch, StringArray};
use arrow_buffer::OffsetBuffer;
use arrow_schema::{DataType, Field, Schema, TimeUnit};

use crate::contract;
use crate::error::{Error, Result};
use crate::events::{Origin, SourcedBatch};
use crate::validate::Validator;

/// Map representation-only differences onto the contract's types (see the module docs).
/// Columns already in the contract's type are passed through untouched (no copy).
pub fn conform(batch: RecordBatch) -> Result<RecordBatch> {
    let want = contract::schema();
    let schema = batch.schema();
    let mut changed = false;
    let mut fields: Vec<Arc<Field>> = Vec::with_capacity(schema.fields().len());
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(batch.num_columns());
    for (i, (field, col)) in schema.fields().iter().zip(batch.columns()).enumerate() {
        // Only a field in its contract place is conformed: any other mismatch is reported
        // by the schema check with the type the input really has.
        let target = want
            .fields()
            .get(i)
            .filter(|f| f.name() == field.name())
            .map(|f| f.data_type());
        let conformed = match (col.data_type(), target) {
            (DataType::LargeUtf8, Some(DataType::Utf8)) => Some(narrow_large_utf8(col, field)?),
            (DataType::Utf8View, Some(DataType::Utf8)) => Some(copy_utf8_view(col)),
            (
                DataType::Timestamp(TimeUnit::Microsecond, Some(tz)),
                Some(t @ DataType::Timestamp(TimeUnit::Microsecond, Some(utc))),
            ) if tz != utc => {
                let relabelled = col.to_data().into_builder().data_type(t.clone()).build()?;
                Some(arrow_array::make_array(relabelled))
            }
            _ => None,
        };
        match conformed {
            Some(c) => {
                changed = true;
                fields.push(Arc::new(
                    field.as_ref().clone().with_data_type(c.data_type().clone()),
                ));
                columns.push(c);
            }
            None => {
                fields.push(field.clone());
                columns.push(col.clone());
            }
        }
    }
    if !changed {
        return Ok(batch);
    }
    let schema = Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
    Ok(RecordBatch::try_new(schema, columns)?)
}

/// `LargeUtf8` → `Utf8`: the values buffer is shared, only the offsets are narrowed.
fn narrow_large_utf8(col: &ArrayRef, field: &Field) -> Result<ArrayRef> {
    let large = col.as_string::<i64>();
    let offsets = large
        .offsets()
        .iter()
        .map(|&o| i32::try_from(o))
        .collect::<std::result::Result<Vec<i32>, _>>()
        .map_err(|_| {
            Error::Schema(format!(
                "field `{}` holds more than 2 GiB of string data in one batch; send smaller batches",
                field.name()
            ))
        })?;
    let narrow = StringArray::try_new(
        OffsetBuffer::new(offsets.into()),
        large.values().clone(),
        large.nulls().cloned(),
    )?;
    Ok(Arc::new(narrow))
}

/// `Utf8View` → `Utf8`: views point into several buffers, so the strings are copied once.
fn copy_utf8_view(col: &ArrayRef) -> ArrayRef {
    let view = col.as_string_view();
    Arc::new(view.iter().collect::<StringArray>())
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

    /// Conform, check the schema and every row rule; the batch with canonical CRS columns.
    pub fn validate(&mut self, batch: RecordBatch) -> Result<RecordBatch> {
        let rows = batch.num_rows() as u64;
        let sourced = SourcedBatch {
            batch: conform(batch)?,
            origin: Origin::Rows {
                first: self.next_row,
            },
        };
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

/// Validate every batch (all of them, before anything may be committed).
pub fn validate_all(batches: impl IntoIterator<Item = RecordBatch>) -> Result<Vec<RecordBatch>> {
    let mut v = BatchValidator::new();
    batches.into_iter().map(|b| v.validate(b)).collect()
}
