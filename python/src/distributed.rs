//! Verification spread over the engines users already run (Dask, Ray, Spark, batch
//! arrays): `Store.verify(shard=(i, n), plan_seal=…, report_dir=…)` checks one n-th of
//! the store, and `merge_reports(…)` combines the shards' reports into one, exactly as
//! `lineage verify --shard I/N` and `lineage verify merge` do (the same JSON reports, the
//! same report directory). Inputs are plain data (a tuple, an int, a URL) and a report
//! pickles as its JSON, so a `client.map`, a Ray task or a Spark `map` can run the shards
//! and the driver merges what they return (or what they left in `report_dir`).

use lineage_store::{
    merge_shard_reports, open, read_shard_reports, write_shard_report, Error, Opening, Param,
    Piece, Report, ShardSpec, StoreOptions, Text,
};
use pyo3::prelude::*;

use crate::errors::{IntoPyResult, LResult};
use crate::runtime::block_on_local;
use crate::types::VerifyReport;

/// The shard `shard=(i, n)` asks for, checked as `--shard I/N` is (0 <= i < n).
pub fn shard_spec(
    shard: Option<(u32, u32)>,
    report_dir: Option<&str>,
) -> LResult<Option<ShardSpec>> {
    if report_dir.is_some() && shard.is_none() {
        return Err(Error::invalid(
            Param::ReportDir,
            Text::from_pieces(vec![
                Piece::from("holds shard reports: give "),
                Piece::from(Param::Shard),
                Piece::from("=(i, n) (or `merge_reports(report_dir=…)` to read them)"),
            ]),
        ));
    }
    shard
        .map(|(i, n)| format!("{i}/{n}").parse::<ShardSpec>())
        .transpose()
}

/// The report directory a URL names (a location, not a store: it is created on first use).
async fn location(
    url: &str,
    endpoint_url: Option<String>,
) -> LResult<std::sync::Arc<lineage_store::Store>> {
    let opts = StoreOptions::new()
        .endpoint_url(endpoint_url)
        .opening(Opening::Location);
    open(url, &opts).await
}

/// Publish a shard's report into `report_dir` as its next attempt (never over another);
/// returns the key written.
pub async fn publish(url: &str, endpoint_url: Option<String>, report: &Report) -> LResult<String> {
    let dir = location(url, endpoint_url).await?;
    write_shard_report(dir.as_ref(), report).await
}

/// One report of `merge_reports`' list: a `VerifyReport`, its JSON text (`lineage verify
/// --shard I/N --json` prints it) or that JSON as a dict.
fn report_of(py: Python<'_>, item: &Bound<'_, PyAny>) -> PyResult<Report> {
    if let Ok(r) = item.cast::<VerifyReport>() {
        return Ok(r.borrow().inner.clone());
    }
    let text: String = match item.extract::<String>() {
        Ok(t) => t,
        Err(_) => py
            .import("json")?
            .getattr("dumps")?
            .call1((item,))?
            .extract()?,
    };
    serde_json::from_str(text.trim())
        .map_err(|e| {
            Error::usage(format!(
                "merge_reports: not a `verify(shard=…)` report (a VerifyReport, its to_json() or to_dict()): {e}"
            ))
        })
        .py_err(py)
}

/// Combine the reports of every shard of one verification (`Store.verify(shard=(i, n))`)
/// into one report, as `lineage verify merge` does: the reports given (each a
/// `VerifyReport`, its `to_json()` text or its `to_dict()`), and the newest attempt of
/// every shard's report in `report_dir` (a URL; `endpoint_url` for S3). Raises
/// `UsageError` naming what is wrong when the set is not exactly shards 0..n of one plan.
#[pyfunction]
#[pyo3(signature = (reports=None, *, report_dir=None, endpoint_url=None))]
pub fn merge_reports(
    py: Python<'_>,
    reports: Option<Vec<Bound<'_, PyAny>>>,
    report_dir: Option<String>,
    endpoint_url: Option<String>,
) -> PyResult<VerifyReport> {
    let reports = reports.unwrap_or_default();
    if reports.is_empty() && report_dir.is_none() {
        return Err(crate::errors::to_py(
            py,
            Error::usage(
                "merge_reports: give the shards' reports, or report_dir where they published them",
            ),
        ));
    }
    let mut all = reports
        .iter()
        .map(|r| report_of(py, r))
        .collect::<PyResult<Vec<Report>>>()?;
    let merged = block_on_local(py, move || async move {
        if let Some(url) = report_dir {
            let dir = location(&url, endpoint_url).await?;
            all.extend(read_shard_reports(dir.as_ref()).await?);
        }
        merge_shard_reports(all)
    })?
    .py_err(py)?;
    Ok(VerifyReport { inner: merged })
}
