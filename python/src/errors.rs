//! Library errors → the package's exceptions (defined in `lineage_store/_errors.py`), by
//! the library's one kind mapping: `Input` → `InputError`, `Conflict` → `ConflictError`,
//! `Integrity` → `IntegrityError` (a `ConflictError`),
//! `Io`/`NotFound` → `StoreError`, `Internal` → `LineageError`. The message is what the
//! CLI prints (its `error: ` lines without the prefix, one per error of refused input, and
//! its `hint: ` line), in the caller's words ([`message`]): the library marks each
//! parameter a message names ([`lineage_store::Param`]), and this package names it as the
//! keyword argument the caller passed (`batch_rows`), not the CLI's flag (`--batch-rows`),
//! and what the package has no keyword for as the CLI command that has it
//! (`` `lineage keygen --force` ``). Nothing is rewritten by matching text. A schema
//! mismatch adds the lines that fix it in the caller's library
//! ([`crate::refusal::schema_error`]). Verify's problems and a proof summary's `signed_by`
//! are worded the same way (`types.rs`).

use lineage_store::{Error, ErrorKind, InputError, Param, Place};
use pyo3::prelude::*;
use pyo3::types::PyDict;

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

/// How an error of a producer's Arrow stream begins (followed by the producer's text).
pub const STREAM_FAILED: &str = "reading the Arrow stream failed:";

/// A parameter a message names, as a Python caller names it: the keyword argument
/// (`batch_rows`; a flag as the keyword that sets it, `allow_unsigned=True`), or, for what
/// the package has no keyword for, the CLI command that has it, quoted
/// (`` `lineage keygen --force` ``).
pub fn keyword(p: Param) -> String {
    match p {
        Param::Unsigned => "allow_unsigned=True".into(),
        Param::AllowReadableKey => "allow_readable_key=True".into(),
        Param::Force => "`lineage keygen --force`".into(),
        Param::Rescan => "`lineage seal --rescan`".into(),
        other => other.name().into(),
    }
}

/// `e`'s message in the caller's words: each parameter it names as [`keyword`] names it;
/// a parameter that is not acceptable as the keyword itself (`batch_rows must be ...`).
pub fn message(e: &Error) -> String {
    match e {
        Error::Invalid { param, why } => format!("{} {}", param.name(), why.render(&keyword)),
        other => other.render(&keyword),
    }
}

/// Whether `e` is Ctrl-C reaching a producer that runs Python code while it is read (a
/// generator behind a `RecordBatchReader`): the signal handler raised `KeyboardInterrupt`
/// in the producer, and pyarrow hands it on as the stream's error text, its traceback
/// ending in `KeyboardInterrupt`.
fn interrupted_producer(e: &Error) -> bool {
    let Error::Usage(m) = e else { return false };
    let m = m.as_str();
    let last = m.lines().rev().map(str::trim).find(|l| !l.is_empty());
    m.starts_with(STREAM_FAILED)
        && last.is_some_and(|l| l == "KeyboardInterrupt" || l.starts_with("KeyboardInterrupt:"))
}

/// The exception for a library error (`KeyboardInterrupt` for Ctrl-C in the producer).
pub fn to_py(py: Python<'_>, e: Error) -> PyErr {
    if interrupted_producer(&e) {
        return pyo3::exceptions::PyKeyboardInterrupt::new_err(());
    }
    let message = message(&e);
    match e.kind() {
        ErrorKind::Input => match input_kwargs(py, &e) {
            Ok(kwargs) => raise(py, "InputError", message, Some(&kwargs)),
            Err(err) => err,
        },
        ErrorKind::Conflict => raise(py, "ConflictError", message, None),
        ErrorKind::Integrity => raise(py, "IntegrityError", message, None),
        ErrorKind::Io | ErrorKind::NotFound => raise(py, "StoreError", message, None),
        // Internal, and any kind a later version adds: the base class.
        _ => raise(py, "LineageError", message, None),
    }
}

/// `InputError`'s keyword attributes for refused input: `row`, `field` and `reason` (of
/// the first error), `errors` (every error listed, as `lineage_store.check` returns them)
/// and, for a refused schema, `fields` (every differing field, in the refusal's order).
pub fn input_kwargs<'py>(py: Python<'py>, e: &Error) -> PyResult<Bound<'py, PyDict>> {
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
        Error::Usage(_) | Error::Invalid { .. } => (None, None, message(e)),
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

/// A reader handed to pyarrow whose errors are worded as [`message`] words them: an error
/// ends the Arrow C stream as pyarrow's `ArrowInvalid`, carrying only its text, so the
/// text names the caller's keywords (`max_decoded_bytes`), not the CLI's flags.
pub struct Worded(pub Box<dyn arrow_array::RecordBatchReader + Send>);

impl Iterator for Worded {
    type Item = Result<arrow_array::RecordBatch, arrow_schema::ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(|r| r.map_err(reworded))
    }
}

impl arrow_array::RecordBatchReader for Worded {
    fn schema(&self) -> arrow_schema::SchemaRef {
        self.0.schema()
    }
}

/// A stream error in the caller's words (the library's errors; others as they are).
fn reworded(e: arrow_schema::ArrowError) -> arrow_schema::ArrowError {
    match e {
        arrow_schema::ArrowError::ExternalError(inner) => match inner.downcast::<Error>() {
            Ok(e) => arrow_schema::ArrowError::ExternalError(message(&e).into()),
            Err(other) => arrow_schema::ArrowError::ExternalError(other),
        },
        other => other,
    }
}
