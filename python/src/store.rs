//! `lineage_store.open(url)` and the `Store` it returns: append, log, verify, seal, prove.
//! Every method releases the GIL while it reads Arrow data, validates, encodes, hashes or
//! talks to the store, so Python threads can append to one store (or several) at once.

use std::path::PathBuf;
use std::sync::Arc;

use lineage_store::internal::merkle;
use lineage_store::{
    open_with, parse_duration, prove, read_pointers, read_public_key, read_signing_key, seal,
    validate_all, verify_with, AtomicPublisher, CloudOptions, DigestCheck, Error, ProveAgainst,
    SystemClock, VerifyOptions, Writer, DEFAULT_BATCH_ROWS, DEFAULT_CONCURRENCY,
};
use pyo3::prelude::*;

use crate::arrow_in;
use crate::errors::{self, IntoPyResult, LResult};
use crate::log_table;
use crate::runtime::{block_on, block_on_local, detached};
use crate::types::{Commit, Proof, Seal, VerifyReport};

/// A lineage store: local disk, S3, Azure Blob, GCS or memory. Safe to share between
/// threads; calls release the GIL.
#[pyclass(module = "lineage_store", frozen)]
#[derive(Debug)]
pub struct Store {
    url: String,
    inner: Arc<dyn AtomicPublisher>,
}

/// A path or URL argument as text.
pub fn path_text(p: &std::path::Path) -> LResult<String> {
    p.to_str()
        .map(str::to_string)
        .ok_or_else(|| Error::Usage(format!("{} is not valid UTF-8", p.display())))
}

/// Open the store a URL names (see the README: a directory, `file:///abs`, `memory://`,
/// `s3://bucket/prefix`, `az://container/prefix`, `gs://bucket/prefix`). Credentials come
/// from the environment, as for the CLI.
#[pyfunction]
#[pyo3(signature = (url, *, endpoint_url=None))]
pub fn open(py: Python<'_>, url: PathBuf, endpoint_url: Option<String>) -> PyResult<Store> {
    let url = path_text(&url).py_err(py)?;
    let opts = CloudOptions { endpoint_url };
    let u = url.clone();
    let inner = block_on(py, async move { open_with(&u, &opts).await }).py_err(py)?;
    Ok(Store { url, inner })
}

/// A `grace` argument: "15m"-style text, seconds, or a `datetime.timedelta`.
fn grace(py: Python<'_>, g: &Bound<'_, PyAny>) -> PyResult<chrono::Duration> {
    if let Ok(s) = g.extract::<String>() {
        return parse_duration(&s).py_err(py);
    }
    let secs: f64 = match g.getattr("total_seconds") {
        Ok(f) => f.call0()?.extract()?,
        Err(_) => g.extract()?,
    };
    if !(secs.is_finite() && secs >= 0.0) {
        return Err(errors::to_py(
            py,
            Error::Usage(format!(
                "grace {secs} s: expected a duration of at least 0 s"
            )),
        ));
    }
    Ok(chrono::Duration::microseconds((secs * 1e6) as i64))
}

impl Store {
    /// The store, for the writer.
    pub fn publisher(&self) -> Arc<dyn AtomicPublisher> {
        self.inner.clone()
    }
}

#[pymethods]
impl Store {
    /// The URL this store was opened with.
    #[getter]
    fn url(&self) -> String {
        self.url.clone()
    }

    /// Validate all of `data`, then commit it, one part per flush of at most `batch_rows`
    /// rows per (run_id, target_crs). Refused input raises `InputError` and publishes
    /// nothing. With `commit_key`, a retried job re-publishes the same commits.
    #[pyo3(signature = (data, *, batch_rows=DEFAULT_BATCH_ROWS, commit_key=None))]
    fn append(
        &self,
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        batch_rows: usize,
        commit_key: Option<String>,
    ) -> PyResult<Vec<Commit>> {
        let source = arrow_in::import(py, data)?;
        // Everything is read and validated before the first commit.
        let validated =
            detached(py, move || source.read_all().and_then(validate_all)).py_err(py)?;
        let writer = Writer::new(self.inner.clone())
            .with_batch_rows(batch_rows)
            .with_commit_key(commit_key);
        let pointers =
            block_on(py, async move { writer.append(&validated, |_| {}).await }).py_err(py)?;
        Ok(pointers.into_iter().map(Commit::from).collect())
    }

    /// A streaming writer for jobs that emit events as they go, on the library's `Sink`:
    /// `with store.writer() as w: w.write(batch)`. Partitions are committed as they reach
    /// `batch_rows` rows, or once their oldest row has waited `max_delay` (seconds or a
    /// `timedelta`); at most `max_in_flight` commits run at once (`write` waits beyond).
    /// Leaving the block publishes the rest; an exception in it publishes nothing of the
    /// rows still buffered.
    #[pyo3(signature = (*, batch_rows=DEFAULT_BATCH_ROWS, max_delay=None, max_in_flight=DEFAULT_CONCURRENCY))]
    fn writer(
        &self,
        py: Python<'_>,
        batch_rows: usize,
        max_delay: Option<Bound<'_, PyAny>>,
        max_in_flight: usize,
    ) -> PyResult<crate::writer::Writer> {
        crate::writer::Writer::open(
            py,
            Writer::new(self.inner.clone()),
            batch_rows,
            max_delay.as_ref(),
            max_in_flight,
        )
    }

    /// The commits (of one run, if given), oldest first, as a `pyarrow.Table` of their
    /// pointers (one row per commit; times as UTC timestamps).
    #[pyo3(signature = (run_id=None))]
    fn log<'py>(&self, py: Python<'py>, run_id: Option<String>) -> PyResult<Bound<'py, PyAny>> {
        let store = self.inner.clone();
        let pointers = block_on(py, async move {
            read_pointers(store.as_ref(), run_id.as_deref()).await
        })
        .py_err(py)?;
        log_table::to_pyarrow(py, &pointers)
    }

    /// The commits (of one run, if given), oldest first, as `Commit` objects.
    #[pyo3(signature = (run_id=None))]
    fn commits(&self, py: Python<'_>, run_id: Option<String>) -> PyResult<Vec<Commit>> {
        let store = self.inner.clone();
        let pointers = block_on(py, async move {
            read_pointers(store.as_ref(), run_id.as_deref()).await
        })
        .py_err(py)?;
        Ok(pointers.into_iter().map(Commit::from).collect())
    }

    /// Prove every recorded part present and byte-identical, walk the seal chain, and
    /// report anything else in the store (as `lineage verify`). Returns the report; with
    /// `check=True`, raises `VerifyError` (carrying it) when it is not clean.
    #[pyo3(signature = (*, public_key=None, expect_head=None, sample=None, sample_seed=None, since_seal=None, grace=None, check=false, digest="fastest"))]
    #[allow(clippy::too_many_arguments)]
    fn verify(
        &self,
        py: Python<'_>,
        public_key: Option<PathBuf>,
        expect_head: Option<String>,
        sample: Option<usize>,
        sample_seed: Option<u64>,
        since_seal: Option<Bound<'_, PyAny>>,
        grace: Option<Bound<'_, PyAny>>,
        check: bool,
        digest: &str,
    ) -> PyResult<VerifyReport> {
        let digest = digest
            .parse::<DigestCheck>()
            .map_err(|e| errors::to_py(py, Error::Usage(format!("digest={e}"))))?;
        let public_key = public_key
            .as_deref()
            .map(read_public_key)
            .transpose()
            .py_err(py)?;
        if let Some(h) = &expect_head {
            if merkle::parse_hash(h).is_none() {
                return Err(errors::to_py(
                    py,
                    Error::Usage(format!(
                        "--expect-head {h:?} is not a sha256 (64 hex digits)"
                    )),
                ));
            }
        }
        // `since_seal=True`: the newest seal; an int: that seal.
        let since_seal = match since_seal {
            None => None,
            Some(v) if v.is_instance_of::<pyo3::types::PyBool>() => {
                v.extract::<bool>()?.then_some(None)
            }
            Some(v) => Some(Some(v.extract::<u64>()?)),
        };
        let mut opts = VerifyOptions {
            sample,
            sample_seed,
            since_seal,
            public_keys: public_key.into_iter().collect(),
            expect_head,
            digest,
            ..VerifyOptions::default()
        };
        if let Some(g) = grace {
            opts.grace = self::grace(py, &g)?;
        }
        let store = self.inner.clone();
        let report = block_on_local(py, move || async move {
            verify_with(store.as_ref(), &opts).await
        })
        .py_err(py)?;
        let report = VerifyReport { inner: report };
        if check && !report.inner.is_clean() {
            let text = report.problems_text();
            let kw = crate::types::kwargs(
                py,
                &[("report", Py::new(py, report)?.into_bound(py).into_any())],
            )?;
            return Err(errors::raise(py, "VerifyError", text, Some(&kw)));
        }
        Ok(report)
    }

    /// Seal every commit not sealed yet (hash chain, RFC 9162 Merkle root; signed with the
    /// Ed25519 secret key file from `keygen` when given). Keep the returned `head` outside
    /// the store: it is what detects cut-off seals.
    #[pyo3(signature = (signing_key=None))]
    fn seal(&self, py: Python<'_>, signing_key: Option<PathBuf>) -> PyResult<Seal> {
        let key = signing_key
            .as_deref()
            .map(read_signing_key)
            .transpose()
            .py_err(py)?;
        let store = self.inner.clone();
        let out = block_on(py, async move {
            seal(store.as_ref(), &SystemClock, key.as_ref()).await
        })
        .py_err(py)?;
        Ok(out.into())
    }

    /// An inclusion proof of `commit_id` in the seal whose digest is `head` (default: the
    /// newest seal, or seal number `seal`), checkable offline with `verify_proof`.
    #[pyo3(signature = (commit_id, head=None, *, seal=None))]
    fn prove(
        &self,
        py: Python<'_>,
        commit_id: String,
        head: Option<String>,
        seal: Option<u64>,
    ) -> PyResult<Proof> {
        let against = match (seal, head) {
            (Some(_), Some(_)) => {
                return Err(errors::to_py(
                    py,
                    Error::Usage("give either head or seal, not both".into()),
                ))
            }
            (Some(n), None) => ProveAgainst::Seq(n),
            (None, Some(h)) => ProveAgainst::Head(h),
            (None, None) => ProveAgainst::Newest,
        };
        let store = self.inner.clone();
        let p = block_on(py, async move {
            prove(store.as_ref(), &commit_id, &against).await
        })
        .py_err(py)?;
        Ok(Proof { inner: p })
    }

    fn __repr__(&self) -> String {
        format!("Store({:?})", self.url)
    }
}
