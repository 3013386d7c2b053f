//! Arrow data from Python, through the Arrow C data interface (the PyCapsule protocol):
//! `__arrow_c_stream__` (pyarrow Table / RecordBatchReader / RecordBatch, Polars DataFrame,
//! DuckDB relation, ...) or `__arrow_c_array__` (a struct array: a record batch). The
//! buffers are the producer's, referenced, not copied; pyarrow is never imported here.
//!
//! The producer's buffers are checked (`validate_full`: offsets in bounds, UTF-8) before
//! any row rule reads them: a buggy producer is refused, never trusted.

use arrow_array::ffi_stream::RecordBatchStreamReader;
use arrow_array::{Array, RecordBatch};
use arrow_pyarrow::FromPyArrow;
use lineage_store::{Error, Result};
use pyo3::intern;
use pyo3::prelude::*;

use crate::errors;

/// Imported Arrow data, not read yet.
#[derive(Debug)]
pub enum Source {
    /// An ArrowArrayStream: batches are pulled by [`Source::next_batch`].
    Stream(Box<RecordBatchStreamReader>),
    /// A single record batch (`__arrow_c_array__`).
    Batch(Option<RecordBatch>),
}

/// Take `data` through the PyCapsule protocol (with the GIL held: this calls Python).
pub fn import(py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<Source> {
    let refused = |what: &str, cause: Option<PyErr>| {
        let e = errors::raise(
            py,
            "InputError",
            format!("cannot take the Arrow data from {what}"),
            None,
        );
        if let Some(c) = cause {
            e.set_cause(py, Some(c));
        }
        e
    };
    let type_name = data
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into());
    if data.hasattr(intern!(py, "__arrow_c_stream__"))? {
        return RecordBatchStreamReader::from_pyarrow_bound(data)
            .map(|r| Source::Stream(Box::new(r)))
            .map_err(|e| refused(&format!("a {type_name} (__arrow_c_stream__)"), Some(e)));
    }
    if data.hasattr(intern!(py, "__arrow_c_array__"))? {
        return RecordBatch::from_pyarrow_bound(data)
            .map(|b| Source::Batch(Some(b)))
            .map_err(|e| refused(&format!("a {type_name} (__arrow_c_array__)"), Some(e)));
    }
    Err(errors::raise(
        py,
        "InputError",
        format!(
            "expected Arrow data (a pyarrow Table, RecordBatch or RecordBatchReader, a Polars DataFrame, a DuckDB relation, or any object with __arrow_c_stream__ or __arrow_c_array__), got a {type_name}"
        ),
        None,
    ))
}

impl Source {
    /// The next batch, its buffers checked; `None` at the end. Call without the GIL: a
    /// producer that needs it (a Python generator behind a RecordBatchReader) takes it.
    pub fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        let batch = match self {
            // arrow-pyarrow has validated a batch taken through __arrow_c_array__.
            Source::Batch(b) => return Ok(b.take()),
            Source::Stream(r) => r
                .next()
                .transpose()
                .map_err(|e| Error::Usage(format!("reading the Arrow stream failed: {e}")))?,
        };
        if let Some(b) = &batch {
            for (field, column) in b.schema().fields().iter().zip(b.columns()) {
                column.to_data().validate_full().map_err(|e| {
                    Error::Usage(format!(
                        "the producer's Arrow data for field `{}` is invalid: {e}",
                        field.name()
                    ))
                })?;
            }
        }
        Ok(batch)
    }

    /// Every batch.
    pub fn read_all(mut self) -> Result<Vec<RecordBatch>> {
        let mut out = Vec::new();
        while let Some(b) = self.next_batch()? {
            out.push(b);
        }
        Ok(out)
    }
}
