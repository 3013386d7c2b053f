//! Library errors → the package's exceptions (defined in `lineage_store/_errors.py`), by
//! the library's one kind mapping: `Input` → `InputError`, `Conflict` → `ConflictError`,
//! `Io`/`NotFound` → `StoreError`, `Internal` → `LineageError`. The message is exactly
//! what the CLI prints after `error: `.

use lineage_store::{Error, ErrorKind, InputError};
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

/// The exception for a library error.
pub fn to_py(py: Python<'_>, e: Error) -> PyErr {
    let message = e.to_string();
    match e.kind() {
        ErrorKind::Input => {
            let kwargs = PyDict::new(py);
            let (row, field, reason) = locate(&e);
            let listed = e.rejection().map(|r| {
                r.errors
                    .iter()
                    .map(|x| error_dict(py, x))
                    .collect::<PyResult<Vec<_>>>()
            });
            let set = kwargs
                .set_item("row", row)
                .and_then(|()| kwargs.set_item("field", field))
                .and_then(|()| kwargs.set_item("reason", reason))
                .and_then(|()| match listed {
                    Some(l) => kwargs.set_item("errors", l?),
                    None => Ok(()),
                });
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
