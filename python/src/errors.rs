//! Library errors → the package's exceptions (defined in `lineage_store/_errors.py`), by
//! the library's one kind mapping: `Input` → `InputError`, `Conflict` → `ConflictError`,
//! `Io`/`NotFound` → `StoreError`, `Internal` → `LineageError`. The message is what the
//! CLI prints after `error: `, in the caller's language: a usage error names the keyword
//! argument the caller passed (`batch_rows`), not the CLI's flag (`--batch-rows`), and a
//! schema mismatch adds the lines that fix it in the caller's library ([`schema_error`]).

use arrow_schema::{DataType, Schema};
use lineage_store::internal::conform::{self, Mismatch};
use lineage_store::internal::lossless;
use lineage_store::{Error, ErrorKind};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use crate::arrow_in::Producer;

/// The library's errors crossing into Python.
pub type LResult<T> = lineage_store::Result<T>;

/// Raise `name` from `lineage_store._errors` with `message` and keyword attributes.
pub fn raise(
    py: Python<'_>,
    name: &str,
    message: String,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyErr {
    let made = py
        .import("lineage_store._errors")
        .and_then(|m| m.getattr(name))
        .and_then(|cls| cls.call((message,), kwargs));
    match made {
        Ok(exc) => PyErr::from_value(exc),
        Err(e) => e,
    }
}

/// The CLI's flags in a usage message, as the keyword arguments a Python caller passed.
/// Only usage messages are rewritten (never one that quotes a value of the input).
const FLAGS: [(&str, &str); 9] = [
    (
        "use append with --commit-key",
        "use Store.append(commit_key=...)",
    ),
    ("--store ", "store "),
    ("--endpoint-url", "endpoint_url"),
    ("--since-seal ", "since_seal="),
    ("--public-key", "public_key="),
    ("--batch-rows", "batch_rows"),
    ("--commit-key", "commit_key"),
    ("--expect-head ", "expect_head="),
    ("--grace ", "grace="),
];

/// `message` with the CLI's flags spelled as Python keyword arguments.
pub fn pythonic(message: &str) -> String {
    FLAGS
        .iter()
        .fold(message.to_string(), |m, (flag, kw)| m.replace(flag, kw))
}

/// The exception for a library error.
pub fn to_py(py: Python<'_>, e: Error) -> PyErr {
    let message = match &e {
        Error::Usage(m) => pythonic(m),
        other => other.to_string(),
    };
    match e.kind() {
        ErrorKind::Input => {
            let kwargs = PyDict::new(py);
            let (row, field, reason) = locate(&e);
            let set = kwargs
                .set_item("row", row)
                .and_then(|()| kwargs.set_item("field", field))
                .and_then(|()| kwargs.set_item("reason", reason));
            match set {
                Ok(()) => raise(py, "InputError", message, Some(&kwargs)),
                Err(err) => err,
            }
        }
        ErrorKind::Conflict => raise(py, "ConflictError", message, None),
        ErrorKind::Io | ErrorKind::NotFound => raise(py, "StoreError", message, None),
        // Internal, and any kind a later version adds: the base class.
        _ => raise(py, "LineageError", message, None),
    }
}

/// Row (1-based), field and reason of a refused input, as far as the error names them.
/// Row errors read `row 12, field `target_crs`: why` (see `validate.rs`); schema errors
/// name the field in backticks.
fn locate(e: &Error) -> (Option<u64>, Option<String>, String) {
    match e {
        Error::Record { location, message } => {
            let row = location
                .strip_prefix("row ")
                .or_else(|| location.strip_prefix("line "))
                .and_then(|r| r.split(',').next())
                .and_then(|n| n.trim().parse().ok());
            (row, first_backticked(location), message.clone())
        }
        Error::Schema(m) => (None, first_backticked(m), m.clone()),
        Error::Usage(m) => (None, None, pythonic(m)),
        other => (None, None, other.to_string()),
    }
}

fn first_backticked(s: &str) -> Option<String> {
    let (_, rest) = s.split_once('`')?;
    let (name, _) = rest.split_once('`')?;
    Some(name.to_string())
}

/// Extension trait: `result.py(py)?` turns a library error into its exception.
pub trait IntoPyResult<T> {
    /// Map the error.
    fn py_err(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> IntoPyResult<T> for LResult<T> {
    fn py_err(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|e| to_py(py, e))
    }
}

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
        _ => "other",
    }
}

/// The `InputError` for input whose schema `append` refuses: the library's message (every
/// difference, as the CLI words it), then the lines that fix it in the caller's library
/// (from `lineage_store._fixes`: a pyarrow `cast`, a Polars `cast({...})`, a DuckDB
/// `CAST(... AS ...)`, pandas' `Table.from_pandas(..., schema=...)`, and
/// `lineage_store.conform` where its lossless conversions suffice). `None` when the
/// schema is the contract's.
pub fn schema_error(py: Python<'_>, producer: Producer, schema: &Schema) -> Option<PyErr> {
    let (version, found) = conform::mismatches(schema);
    if found.is_empty() {
        return None;
    }
    let message = conform::mismatch_error(&version, &found).to_string();
    let made = (|| -> PyResult<PyErr> {
        let list = PyList::empty(py);
        for m in &found {
            let (kind, got, want) = match m {
                Mismatch::Duplicate { .. } => ("duplicate", None, None),
                Mismatch::Extra { got, .. } => ("extra", Some(got), None),
                Mismatch::Missing { want, .. } => ("missing", None, Some(want)),
                Mismatch::Type { got, want, .. } => ("type", Some(got), Some(want)),
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
        let fields: Vec<&str> = found.iter().map(Mismatch::field).collect();
        let kwargs = PyDict::new(py);
        kwargs.set_item("field", fields.first())?;
        kwargs.set_item("fields", fields)?;
        kwargs.set_item("reason", &message)?;
        let text = if fix.is_empty() {
            message.clone()
        } else {
            format!("{message}\n{fix}")
        };
        Ok(raise(py, "InputError", text, Some(&kwargs)))
    })();
    Some(made.unwrap_or_else(|e| e))
}
