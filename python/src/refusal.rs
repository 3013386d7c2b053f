//! The `InputError` for Arrow data whose schema `append` refuses: the CLI's refusal, then
//! the lines that fix it in the library the data came from (a file of its own: it needs
//! both the errors and the producer of the Arrow data, and `arrow_in` raises errors).

use arrow_schema::{DataType, Schema};
use lineage_store::conform::{self, Mismatch};
use lineage_store::lossless;
use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::arrow_in::Producer;
use crate::errors::{input_kwargs, raise};

/// The contract's type of a column as `lineage_store._fixes` names it.
fn token(t: &DataType) -> &'static str {
    match t {
        DataType::Int32 => "int32",
        DataType::Int64 => "int64",
        DataType::Float64 => "float64",
        DataType::Timestamp(_, Some(_)) => "timestamp_us_utc",
        _ => "string",
    }
}

/// What an input column's type is, as far as a fix depends on it.
fn got_token(t: &DataType) -> &'static str {
    match t {
        DataType::Timestamp(_, None) => "naive_timestamp",
        DataType::Timestamp(_, Some(_)) => "timestamp",
        DataType::Null => "null",
        // A UUID as its 16 bytes (DuckDB's UUID, pyarrow's `pa.uuid()`).
        DataType::FixedSizeBinary(16) => "uuid",
        _ => "other",
    }
}

/// The `InputError` for input whose schema `append` refuses: the library's refusal exactly
/// as the CLI prints it (one line per differing column with its cast, then the `hint: `
/// line; `errors`, `field`, `fields` and `reason` from it), then the lines that fix it in
/// the caller's library
/// (from `lineage_store._fixes`: a pyarrow `cast`, a Polars `cast({...})`, a DuckDB
/// `CAST(... AS ...)`, pandas' `Table.from_pandas(..., schema=...)`, and
/// `lineage_store.conform` where its lossless conversions suffice). `None` when the
/// schema is the contract's.
pub fn schema_error(py: Python<'_>, producer: Producer, schema: &Schema) -> Option<PyErr> {
    let (version, found) = conform::mismatches(schema);
    if found.is_empty() {
        return None;
    }
    let refusal = conform::mismatch_error(&version, &found);
    let message = refusal.to_string();
    let made = (|| -> PyResult<PyErr> {
        let list = PyList::empty(py);
        for m in &found {
            let (kind, got, want) = match m {
                Mismatch::Duplicate { .. } => ("duplicate", None, None),
                Mismatch::Extra { got, .. } => ("extra", Some(got), None),
                Mismatch::Missing { want, .. } => ("missing", None, Some(want)),
                Mismatch::Type { got, want, .. } => ("type", Some(got), Some(want)),
                // A kind this package does not know yet: named, with no types.
                _ => ("other", None, None),
            };
            let lossless = matches!((got, want), (Some(g), Some(w)) if lossless::can_convert(w, g));
            list.append((
                kind,
                m.field(),
                got.map(got_token),
                got.map(ToString::to_string),
                want.map(token),
                lossless,
            ))?;
        }
        let fix: String = py
            .import("lineage_store._fixes")?
            .call_method1("schema_fix", (producer.name(), list))?
            .extract()?;
        let kwargs = input_kwargs(py, &refusal)?;
        let text = if fix.is_empty() {
            message
        } else {
            format!("{message}\n{fix}")
        };
        Ok(raise(py, "InputError", text, Some(&kwargs)))
    })();
    Some(made.unwrap_or_else(|e| e))
}
