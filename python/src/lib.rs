//! `lineage_store._native`: the PyO3 extension behind the `lineage_store` Python package.
//!
//! The Python package (`lineage_store/__init__.py`) re-exports what is here and defines the
//! exceptions (`_errors.py`). Arrow data crosses through the Arrow C data interface
//! ([`arrow_in`]); every call that reads data, encodes, hashes or does I/O runs with the
//! GIL released on one tokio runtime per process ([`runtime`]). Validation, encoding and
//! the commit protocol are the library's, exactly as the CLI runs them.

use std::path::PathBuf;

use arrow_pyarrow::ToPyArrow;
use lineage_store::{contract, crs, Error};
use lineage_store::{keygen as lib_keygen, read_public_key};
use lineage_store::{verify_proof as lib_verify_proof, Proof as LibProof};
use pyo3::prelude::*;

mod anchors;
mod arrow_in;
mod as_of;
mod check;
mod conformed;
mod distributed;
mod errors;
mod geo_in;
mod limits;
mod log;
mod log_table;
mod parts;
mod questions;
mod refusal;
mod runtime;
mod store;
mod types;
mod writer;

use errors::{IntoPyResult, LResult};
use types::{Proof, ProofSummary};

/// The canonical `EPSG:<code>` of a CRS identifier, as `append` canonicalises
/// `source_crs` and `target_crs`; raises `InputError` (with the reason) for anything
/// that is not an EPSG CRS (e.g. `OGC:CRS84`, an unknown code, a bare number).
#[pyfunction]
fn canonical_crs(py: Python<'_>, value: &str) -> PyResult<String> {
    match crs::canonicalize(value) {
        Ok(c) => Ok(c),
        Err(why) => {
            let kw = types::kwargs(py, &[("reason", why.clone().into_pyobject(py)?.into_any())])?;
            Err(errors::raise(py, "InputError", why, Some(&kw)))
        }
    }
}

/// A registered contract version as an Arrow schema (a `pyarrow.Schema`; needs pyarrow),
/// with the schema version in its metadata (`lineage_schema_version`): `version`, or
/// 1.2.0 (`SCHEMA`, the columns every version has) when not given.
#[pyfunction]
#[pyo3(signature = (version=None))]
fn contract_schema<'py>(py: Python<'py>, version: Option<&str>) -> PyResult<Bound<'py, PyAny>> {
    let v = contract::version(version.unwrap_or(contract::SCHEMA_VERSION)).py_err(py)?;
    let fields = v.schema().fields().clone();
    let meta: std::collections::HashMap<String, String> =
        [(contract::META_SCHEMA_VERSION.to_string(), v.version.clone())]
            .into_iter()
            .collect();
    arrow_schema::Schema::new_with_metadata(fields, meta).to_pyarrow(py)
}

/// Make an Ed25519 key pair for signing seals: `<prefix>.key` (secret, mode 0600) and
/// `<prefix>.pub` (for auditors); refuses to overwrite either. Returns the key id.
#[pyfunction]
fn keygen(py: Python<'_>, prefix: PathBuf) -> PyResult<String> {
    lib_keygen(&prefix).py_err(py)
}

/// A proof given as a `Proof`, as its text (JSON, starting with `{`, or a
/// `c2sp.org/tlog-proof@v1`), or as a file path: its
/// text and a name for messages (a `Proof` as itself, to check against a head).
fn read_proof(proof: &Bound<'_, PyAny>) -> PyResult<LResult<(Given, String)>> {
    if let Ok(p) = proof.cast::<Proof>() {
        return Ok(Ok((
            Given::Proof(Box::new(p.get().inner.clone())),
            "<proof>".to_string(),
        )));
    }
    Ok(match proof.extract::<String>() {
        Ok(s) if s.trim_start().starts_with('{') || lineage_store::is_tlog_proof(&s) => {
            Ok((Given::Text(s), "<proof text>".to_string()))
        }
        _ => {
            let path: PathBuf = proof.extract()?;
            std::fs::read_to_string(&path)
                .map(|t| (Given::Text(t), path.display().to_string()))
                .map_err(|e| Error::io(&path, e))
        }
    })
}

/// A proof as given to `verify_proof`.
enum Given {
    Proof(Box<LibProof>),
    Text(String),
}

/// Check `given` against the head digest (a `lineage-proof/1` or `lineage-row-proof/1`) or
/// the key alone (a `c2sp.org/tlog-proof@v1` or `lineage-row-proof/2`, or a `Proof` of a
/// signed seal given no head), as `lineage verify-proof` does.
fn check_given(
    given: Given,
    name: &str,
    head: Option<&str>,
    key: Option<&lineage_store::VerifyingKey>,
    part: Option<&std::path::Path>,
) -> LResult<Result<lineage_store::ProofSummary, String>> {
    let text = match given {
        Given::Text(t) => t,
        Given::Proof(p) => match (head, key.zip(types::compact_proof(&p))) {
            (None, Some((_, compact))) => compact,
            _ => {
                let head = head.ok_or_else(|| Error::usage("give the head digest (head=)"))?;
                return lib_verify_proof(&p, head, key, part);
            }
        },
    };
    let row = lineage_store::is_compact_row_proof(&text);
    if row || lineage_store::is_tlog_proof(&text) {
        let what = if row {
            "a lineage-row-proof/2"
        } else {
            "a c2sp.org/tlog-proof@v1"
        };
        return match (head, key) {
            (None, Some(k)) if row => lineage_store::verify_compact_row_proof(&text, k, part),
            (None, Some(k)) => lineage_store::verify_tlog_proof(&text, k, part),
            _ => Err(Error::usage(format!(
                "{what} carries the seal's checkpoint, not the seal: check it against public_key= alone (no head=)"
            ))),
        };
    }
    let p: LibProof = serde_json::from_str(&text).map_err(|e| Error::Corrupt {
        what: "proof",
        key: name.to_string(),
        message: e.to_string().into(),
    })?;
    let head = head.ok_or_else(|| {
        Error::usage("a lineage-proof/1 is checked against the head digest: give head=")
    })?;
    lib_verify_proof(&p, head, key, part)
}

/// Render the data of an audit report (the JSON `lineage report --format json` or
/// `Store.report` wrote: text or a dict) as "html", "md" or "json", without the store.
#[pyfunction]
#[pyo3(signature = (data, format="html"))]
fn render_report(py: Python<'_>, data: &Bound<'_, PyAny>, format: &str) -> PyResult<String> {
    let format: lineage_store::report::ReportFormat = format.parse().py_err(py)?;
    let text: String = match data.extract::<String>() {
        Ok(t) => t,
        Err(_) => py
            .import("json")?
            .call_method1("dumps", (data,))?
            .extract()?,
    };
    let r: lineage_store::report::AuditReport = serde_json::from_str(&text)
        .map_err(|e| Error::usage(format!("not a lineage report: {e}")))
        .py_err(py)?;
    lineage_store::report::render(&r, format).py_err(py)
}

/// Check an inclusion proof offline (no store) against a head digest kept outside the
/// store, optionally the seal's signature and a copy of the part file; a compact row proof
/// (`lineage-row-proof/2`) against the seal key alone (`public_key`, no `head`). Returns
/// what the proof establishes; raises `VerifyError` when it does not hold.
#[pyfunction]
#[pyo3(signature = (proof, head=None, *, public_key=None, part=None))]
fn verify_proof(
    py: Python<'_>,
    proof: &Bound<'_, PyAny>,
    head: Option<String>,
    public_key: Option<PathBuf>,
    part: Option<PathBuf>,
) -> PyResult<ProofSummary> {
    let (given, name) = read_proof(proof)?.py_err(py)?;
    let key = public_key
        .as_deref()
        .map(read_public_key)
        .transpose()
        .py_err(py)?;
    let checked = runtime::detached(py, {
        let name = name.clone();
        move || check_given(given, &name, head.as_deref(), key.as_ref(), part.as_deref())
    })
    .py_err(py)?;
    match checked {
        Ok(summary) => Ok(summary.into()),
        Err(why) => {
            let kw = types::kwargs(py, &[("reason", why.clone().into_pyobject(py)?.into_any())])?;
            Err(errors::raise(
                py,
                "VerifyError",
                format!("INVALID proof {name}: {why}"),
                Some(&kw),
            ))
        }
    }
}

/// Diagnostics for the benchmark: take `data` through the Arrow C data interface and check
/// its buffers, exactly as `append` does first, and return the rows; nothing else. Its
/// time is the Python boundary's share of an append (the rest is the library's path,
/// shared with the CLI).
#[pyfunction]
fn _arrow_import_check(py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<usize> {
    let source = arrow_in::import(py, data)?;
    let batches = runtime::detached(py, move || source.read_all()).py_err(py)?;
    Ok(batches.iter().map(|b| b.num_rows()).sum())
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    // Library logs (warnings by default) go to stderr, filtered by LINEAGE_LOG as for the CLI.
    log::init();
    m.add("SCHEMA_VERSION", contract::SCHEMA_VERSION)?;
    let versions: Vec<String> = contract::versions()
        .iter()
        .map(|v| v.version.clone())
        .collect();
    m.add("SCHEMA_VERSIONS", versions)?;
    m.add("DEFAULT_BATCH_ROWS", lineage_store::DEFAULT_BATCH_ROWS)?;
    m.add("DEFAULT_MAX_IN_FLIGHT", lineage_store::DEFAULT_CONCURRENCY)?;
    m.add_function(wrap_pyfunction!(store::open, m)?)?;
    m.add_function(wrap_pyfunction!(canonical_crs, m)?)?;
    m.add_function(wrap_pyfunction!(limits::set_read_limits, m)?)?;
    m.add_function(wrap_pyfunction!(check::check, m)?)?;
    m.add_function(wrap_pyfunction!(contract_schema, m)?)?;
    m.add_function(wrap_pyfunction!(keygen, m)?)?;
    m.add_function(wrap_pyfunction!(verify_proof, m)?)?;
    m.add_function(wrap_pyfunction!(render_report, m)?)?;
    m.add_function(wrap_pyfunction!(_arrow_import_check, m)?)?;
    m.add_function(wrap_pyfunction!(conformed::conform, m)?)?;
    m.add_function(wrap_pyfunction!(store::_reopen, m)?)?;
    m.add_function(wrap_pyfunction!(distributed::merge_reports, m)?)?;
    m.add_function(wrap_pyfunction!(parts::read_part, m)?)?;
    m.add_function(wrap_pyfunction!(parts::_restore_part_ref, m)?)?;
    m.add_class::<parts::PartRef>()?;
    m.add_function(wrap_pyfunction!(types::_restore, m)?)?;
    m.add_function(wrap_pyfunction!(conformed::_restore_conformed, m)?)?;
    m.add_class::<conformed::Conformed>()?;
    m.add_class::<store::Store>()?;
    m.add_class::<writer::Writer>()?;
    m.add_class::<types::Commit>()?;
    m.add_class::<types::Problem>()?;
    m.add_class::<types::VerifyReport>()?;
    m.add_class::<types::Seal>()?;
    m.add_class::<types::Proof>()?;
    m.add_class::<types::ProofSummary>()?;
    Ok(())
}
