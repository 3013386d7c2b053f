//! Library errors → the package's exceptions (defined in `lineage_store/_errors.py`), by
//! the library's one kind mapping: `Input` → `InputError`, `Conflict` → `ConflictError`,
//! `Io`/`NotFound` → `StoreError`, `Internal` → `LineageError`. The message is what the
//! CLI prints (its `error: ` lines without the prefix, one per error of refused input, and
//! its `hint: ` line), in the caller's language ([`pythonic`]): a message names the
//! keyword argument the caller passed (`batch_rows`), not the CLI's flag (`--batch-rows`),
//! and what the package has no keyword for as the CLI command that has it
//! (`` `lineage keygen --force` ``); refused input (which quotes the input's values) is
//! never rewritten, and a schema mismatch adds the lines that fix it in the caller's
//! library ([`crate::refusal::schema_error`]). Verify's problems and a proof summary's
//! `signed_by` are rewritten the same way (`types.rs`).

use lineage_store::{Error, ErrorKind, InputError, Place};
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

/// Whole phrases that name a flag the package has no keyword for: the CLI command that
/// has it, quoted, so the caller knows it is the CLI's (checked before [`FLAGS`]).
const PHRASES: [(&str, &str); 5] = [
    (
        "use append with --commit-key",
        "use Store.append(commit_key=...)",
    ),
    (
        "sign this one too (--signing-key), or pass --unsigned to publish an unsigned seal after signed ones (verify --signed-from then reports it)",
        "sign this one too (signing_key=...), or pass allow_unsigned=True to publish an unsigned seal after signed ones (verify(signed_from=...) then reports it)",
    ),
    ("(--force replaces it)", "(`lineage keygen --force` replaces it)"),
    (
        "(seals signed only from a later seal on: --signed-from SEQ)",
        "(seals signed only from a later seal on: signed_from=SEQ)",
    ),
    ("(--signed-from ", "(signed_from="),
];

/// The CLI's flags, as the keyword arguments a Python caller passes.
const FLAGS: [(&str, &str); 16] = [
    ("--store ", "store "),
    ("--endpoint-url", "endpoint_url"),
    ("--since-seal ", "since_seal="),
    ("--public-key", "public_key="),
    ("--batch-rows", "batch_rows"),
    ("--commit-key", "commit_key"),
    ("--expect-head ", "expect_head="),
    ("--grace ", "grace="),
    ("--format", "format="),
    ("--signing-key", "signing_key="),
    ("--as-of-seal ", "as_of_seal="),
    ("--columns", "columns"),
    ("--run-id", "run_id"),
    ("--max-errors", "max_errors"),
    ("--max-seal-bytes", "set_read_limits(max_seal_bytes=...)"),
    ("--max-page-bytes", "set_read_limits(max_page_bytes=...)"),
];

/// `message` in the caller's language: the CLI's flags spelled as Python keyword
/// arguments, and a flag the package has no keyword for named with its CLI command. Text
/// in backticks (a quoted command or value) is left as it is.
pub fn pythonic(message: &str) -> String {
    let phrased = PHRASES
        .iter()
        .fold(message.to_string(), |m, (from, to)| m.replace(from, to));
    // Rewrite outside backticks only: even pieces of a split on '`' are plain text.
    phrased
        .split('`')
        .enumerate()
        .map(|(i, piece)| {
            if i % 2 == 1 {
                return piece.to_string();
            }
            FLAGS
                .iter()
                .fold(piece.to_string(), |m, (flag, kw)| m.replace(flag, kw))
        })
        .collect::<Vec<_>>()
        .join("`")
}

/// Whether `e` is Ctrl-C reaching a producer that runs Python code while it is read (a
/// generator behind a `RecordBatchReader`): the signal handler raised `KeyboardInterrupt`
/// in the producer, and pyarrow hands it on as the stream's error text, its traceback
/// ending in `KeyboardInterrupt`.
fn interrupted_producer(e: &Error) -> bool {
    let Error::Usage(m) = e else { return false };
    let last = m.lines().rev().map(str::trim).find(|l| !l.is_empty());
    m.starts_with(STREAM_FAILED)
        && last.is_some_and(|l| l == "KeyboardInterrupt" || l.starts_with("KeyboardInterrupt:"))
}

/// The exception for a library error (`KeyboardInterrupt` for Ctrl-C in the producer).
pub fn to_py(py: Python<'_>, e: Error) -> PyErr {
    if interrupted_producer(&e) {
        return pyo3::exceptions::PyKeyboardInterrupt::new_err(());
    }
    // Refused input quotes the input's values: never rewritten.
    let message = match &e {
        Error::Record { .. } | Error::Rejected(_) | Error::Schema(_) => e.to_string(),
        other => pythonic(&other.to_string()),
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
