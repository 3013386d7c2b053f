//! `lineage_store.check(data)`: validate an input exactly as an append would, without a
//! store, and return every error (as `lineage check --json` lists them).

use std::path::PathBuf;

use lineage_store::{check as lib_check, check_batches, CheckOptions, Format, Input};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::arrow_in;
use crate::errors::{self, IntoPyResult};
use crate::runtime::detached;

/// Validate `data` as an append would (the same readers, version rules and row rules),
/// publishing nothing anywhere, and return every error in input order (the first
/// `max_errors`; `0`, the default: all), each a dict with `line` (text files), `row`
/// (Arrow data, Arrow IPC and Parquet files), `field`, `value` and `reason`. An empty
/// list: an append would accept it. `data` is Arrow data (anything a `Store.append`
/// takes) or the path of an NDJSON, CSV, Arrow IPC or Parquet file (its format from the
/// extension unless `format` says). Raises `InputError` only for what is not about the
/// events (an unknown `format`, a version not registered), `StoreError` when the file
/// cannot be read.
#[pyfunction]
#[pyo3(signature = (data, *, format=None, schema_version=None, max_errors=0))]
pub fn check<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    format: Option<String>,
    schema_version: Option<String>,
    max_errors: usize,
) -> PyResult<Vec<Bound<'py, PyDict>>> {
    let opts = CheckOptions {
        schema_version,
        max_errors,
        ..CheckOptions::default()
    };
    let is_arrow = data.hasattr("__arrow_c_stream__")? || data.hasattr("__arrow_c_array__")?;
    let result = if is_arrow {
        let source = arrow_in::import(py, data)?;
        let schema = source.schema.clone();
        detached(py, move || {
            source
                .read_all()
                .and_then(|batches| check_batches(&schema, batches, &opts))
        })
    } else {
        let path: PathBuf = data.extract()?;
        let format = match format.as_deref() {
            None => None,
            Some(f) => Some(Format::from_flag(f).ok_or_else(|| {
                errors::to_py(
                    py,
                    lineage_store::Error::usage(format!(
                        "format {f:?}: expected \"ndjson\", \"csv\", \"arrow\" or \"parquet\""
                    )),
                )
            })?),
        };
        detached(py, move || {
            let input = Input::open(Some(&path), format)?;
            lib_check(&input, &opts)
        })
    };
    match result {
        Ok(_) => Ok(Vec::new()),
        Err(e) => match e.rejection() {
            Some(r) => r.errors.iter().map(|x| errors::error_dict(py, x)).collect(),
            None => Err(e).py_err(py),
        },
    }
}
