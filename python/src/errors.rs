//! Library errors → the package's exceptions (defined in `lineage_store/_errors.py`), by
//! the library's one kind mapping: `Input` → `InputError`, `Conflict` → `ConflictError`,
//! `Io`/`NotFound` → `StoreError`, `Internal` → `LineageError`. The message is what the
//! CLI prints (its `error: ` lines without the prefix, one per error of refused input, and
//! its `hint: ` line), in the caller's language: a usage error names the keyword
//! argument the caller passed (`batch_rows`), not the CLI's flag (`--batch-rows`), and a
//! schema mismatch adds the lines that fix it in the caller's library ([`schema_error`]).

use arrow_schema::{DataType, Schema};
use lineage_store::internal::conform::{self, Mismatch};
use lineage_store::internal::lossless;
use lineage_store::{Error, ErrorKind, InputError, Place};
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
        ErrorKind::Input => match input_kwargs(py, &e) {
            Ok(kwargs) => raise(py, "InputError", message, Some(&kwargs)),
            Err(err) => err,
        },
        ErrorKind::Conflict => raise(py, "ConflictError", message, None),
        ErrorKind::Io | ErrorKind::NotFound => raise(py, "StoreError", message, None),
        // Internal, and any kind a later version adds: the base class.
        _ => raise(py, "LineageError", message, None),
    }
}

/// `InputError`'s keyword attributes for refused input: `row`, `field` and `reason` (of
/// the first error), `errors` (every error listed, as `lineage_store.check` returns them)
/// and, for a refused schema, `fields` (every differing field, in the refusal's order).
fn input_kwargs<'py>(py: Python<'py>, e: &Error) -> PyResult<Bound<'py, PyDict>> {
    let kwargs = PyDict::new(py);
    let (row, field, reason) = locate(e);
    kwargs.set_item("row", row)?;
    kwargs.set_item("field", field)?;
    kwargs.set_item("reason", reason)?;
    if let Some(r) = e.rejection() {
        let listed = r
            .errors
            .iter()
            .map(|x| error_dict(py, x))
            .collect::<PyResult<Vec<_>>>()?;
        kwargs.set_item("errors", listed)?;
        let fields: Vec<&str> = r
            .errors
            .iter()
            .filter(|x| x.place == Place::Schema)
            .filter_map(|x| x.field.as_deref())
            .collect();
        if !fields.is_empty() {
            kwargs.set_item("fields", fields)?;
        }
    }
    Ok(kwargs)
}

/// One error as a dict: `line`, `row`, `field`, `value`, `reason` (`None` where they do
/// not apply), the keys of `lineage check --json`.
pub fn error_dict<'py>(py: Python<'py>, e: &InputError) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("line", e.line())?;
    d.set_item("row", e.row())?;
    d.set_item("field", e.field.as_deref())?;
    d.set_item("value", e.value.as_deref())?;
    d.set_item("reason", &e.reason)?;
    Ok(d)
}

/// Row (1-based), field and reason of a refused input, as far as the error names them:
/// of its first error when it lists them (`Error::Rejected`; a line number stands for the
/// row, as before); row errors read `row 12, field `target_crs`: why`; schema errors name
/// the field in backticks.
fn locate(e: &Error) -> (Option<u64>, Option<String>, String) {
    if let Some(first) = e.rejection().and_then(|r| r.errors.first()) {
        return (
            first.row().or(first.line()),
            first.field.clone(),
            first.reason.clone(),
        );
    }
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
