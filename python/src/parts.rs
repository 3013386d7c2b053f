//! Verified reads spread over an engine's workers: `Store.plan(…)` lists the parts of a
//! read as `PartRef`s (plain, picklable data: where the part is, its size, its sealed
//! digests, rows, partition values and sealing seal), and `read_part(ref)` reads one part
//! in any process and checks it against the ref (size, digests, rows) before it returns a
//! row, exactly as `Store.scan()` checks each part. A ref never holds credentials: the
//! worker opens the store by its URL and `endpoint_url` with its own environment. The
//! anchors (`expect_head`, `public_key`, `signed_from`, `witness`) are checked once, by
//! `plan` on the driver, as `files` and `scan` check them; each ref records what held.

use arrow_pyarrow::ToPyArrow;
use lineage_store::{
    open, part_location, scan, snapshot, AtomicPublisher, Opening, Pointer, ReadOptions,
    ScanOptions, SealRef, Snapshot, SnapshotPart, StoreOptions,
};
use pyo3::prelude::*;

use crate::anchors::AnchorKw;
use crate::errors::{IntoPyResult, LResult};
use crate::runtime::block_on_local;

/// One part of a planned read: what a worker needs to read it and check it. Pickles as
/// plain data (its JSON); holds no credential.
#[pyclass(module = "lineage_store", frozen, eq, get_all, skip_from_py_object)]
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PartRef {
    /// The store's URL (what `open` takes; a local path absolute).
    pub store: String,
    /// The store's S3 endpoint, if any.
    pub endpoint_url: Option<String>,
    /// Where the part is: an absolute path or a full URL (what `Store.files()` lists).
    pub location: String,
    /// The part's key relative to the store root.
    pub key: String,
    /// Bytes of the part, as its sealed pointer records.
    pub size: u64,
    /// Lower-case hex sha256 of the part, as sealed.
    pub sha256: String,
    /// Hex BLAKE3 of the part, as sealed (older parts: none).
    pub blake3: Option<String>,
    /// Rows in the part.
    pub rows: u64,
    /// Partition value.
    pub run_id: String,
    /// Partition value, canonical `EPSG:<code>`.
    pub target_crs: String,
    /// The commit (or compaction) the part belongs to.
    pub commit_id: String,
    /// The seal that sealed it (`None`: an unsealed commit, `include_unsealed=True`).
    pub sealed_by_seal: Option<u64>,
    /// That seal's sha256 (a head digest the commit can be proven under).
    pub seal_sha256: Option<String>,
    /// The key of the pointer (or compaction record) vouching for the part.
    pub pointer_key: String,
    /// sha256 of that pointer's exact bytes.
    pub pointer_sha256: String,
    /// Only the rows of this `feature_id` are returned (`plan(feature_id=…)`).
    pub feature_id: Option<String>,
    /// The sealed pointer itself, as JSON (every field the checks need).
    pub pointer_json: String,
    /// What `Store.plan` checked the store's seals against on the driver before it planned
    /// (one line per anchor given, as `VerifyReport.anchors` states them, or that none was
    /// given). A record of the planning, not checked again by `read_part`.
    #[serde(default)]
    pub anchors: Vec<String>,
}

#[pymethods]
impl PartRef {
    /// Pickled as plain data (its JSON).
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyAny>, (String,))> {
        let json = serde_json::to_string(self)
            .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
        Ok((
            py.import("lineage_store._native")?
                .getattr("_restore_part_ref")?,
            (json,),
        ))
    }

    fn __repr__(&self) -> String {
        format!(
            "PartRef({:?}, rows={}, size={})",
            self.key, self.rows, self.size
        )
    }
}

/// Rebuild a pickled `PartRef`.
#[pyfunction]
pub fn _restore_part_ref(json: &str) -> PyResult<PartRef> {
    serde_json::from_str(json).map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))
}

impl PartRef {
    fn of(
        store: &dyn AtomicPublisher,
        url: &str,
        endpoint_url: Option<String>,
        part: &SnapshotPart,
        feature_id: Option<String>,
        anchors: &[String],
    ) -> LResult<Self> {
        let p = &part.pointer;
        Ok(Self {
            store: url.to_string(),
            endpoint_url,
            location: part_location(store, &p.part_path),
            key: p.part_path.clone(),
            size: p.size_bytes,
            sha256: p.sha256.clone(),
            blake3: p.blake3.clone(),
            rows: p.row_count,
            run_id: p.run_id.clone(),
            target_crs: p.target_crs.clone(),
            commit_id: p.commit_id.clone(),
            sealed_by_seal: part.sealed_by.as_ref().map(|s| s.seq),
            seal_sha256: part.sealed_by.as_ref().map(|s| s.sha256.clone()),
            pointer_key: part.pointer_key.clone(),
            pointer_sha256: part.pointer_sha256.clone(),
            feature_id,
            pointer_json: serde_json::to_string(p).map_err(lineage_store::Error::internal_from)?,
            anchors: anchors.to_vec(),
        })
    }

    /// The snapshot part the ref stands for; its checked fields are the ref's own, so a
    /// ref edited after planning is checked as edited and cannot pass off other bytes
    /// than it names.
    fn part(&self) -> LResult<SnapshotPart> {
        let mut pointer: Pointer = serde_json::from_str(&self.pointer_json).map_err(|e| {
            lineage_store::Error::usage(format!("read_part: not a PartRef of Store.plan(): {e}"))
        })?;
        pointer.part_path = self.key.clone();
        pointer.size_bytes = self.size;
        pointer.sha256 = self.sha256.clone();
        pointer.blake3 = self.blake3.clone();
        pointer.row_count = self.rows;
        Ok(SnapshotPart {
            pointer_key: self.pointer_key.clone(),
            pointer_sha256: self.pointer_sha256.clone(),
            pointer,
            sealed_by: match (self.sealed_by_seal, &self.seal_sha256) {
                (Some(seq), Some(sha256)) => Some(SealRef {
                    seq,
                    sha256: sha256.clone(),
                }),
                _ => None,
            },
            compacted: None,
        })
    }
}

/// What `Store.plan` was asked for.
pub struct PlanRequest {
    /// The URL that reopens the store in a worker.
    pub url: String,
    /// Its S3 endpoint, if any.
    pub endpoint_url: Option<String>,
    /// The read (`as_of_seal` resolved from `as_of_time` here).
    pub opts: ReadOptions,
    /// As of the newest seal sealed at or before this time.
    pub as_of_time: Option<String>,
    /// Only this feature's rows, in each `read_part`.
    pub feature_id: Option<String>,
    /// The anchors to check first.
    pub anchors: AnchorKw,
}

/// The parts of a read planned by `Store.plan`: the anchors checked first (refused, and
/// nothing planned, when one does not hold, as for `files` and `scan`), then the
/// snapshot's parts, each as a ref recording what was checked.
pub fn plan(
    py: Python<'_>,
    store: std::sync::Arc<dyn AtomicPublisher>,
    r: PlanRequest,
) -> PyResult<Vec<PartRef>> {
    block_on_local(py, move || async move {
        let checked = r
            .anchors
            .anchors(&store)
            .await?
            .require(store.as_ref())
            .await?;
        let mut opts = r.opts;
        opts.as_of_seal =
            crate::as_of::as_of(store.as_ref(), opts.as_of_seal, r.as_of_time.as_deref()).await?;
        let lines = checked.lines();
        let snap = snapshot(store.as_ref(), &opts).await?;
        snap.parts
            .iter()
            .map(|p| {
                let endpoint = r.endpoint_url.clone();
                PartRef::of(
                    store.as_ref(),
                    &r.url,
                    endpoint,
                    p,
                    r.feature_id.clone(),
                    &lines,
                )
            })
            .collect::<LResult<Vec<_>>>()
    })?
    .py_err(py)
}

/// Read one planned part in this process and return its rows as a `pyarrow.Table`, after
/// checking the part against the ref: its size, its sealed digests (BLAKE3 where
/// recorded, else sha256) and its rows, as `Store.scan()` does. A part that fails raises
/// `IntegrityError` naming it, and none of its rows is returned. The store is opened with
/// this process's credentials (its environment), by the ref's URL and `endpoint_url`.
/// `columns`: only these, in this order.
#[pyfunction]
#[pyo3(signature = (part, columns=None))]
pub fn read_part<'py>(
    py: Python<'py>,
    part: PyRef<'py, PartRef>,
    columns: Option<Vec<String>>,
) -> PyResult<Bound<'py, PyAny>> {
    let r = part.clone();
    drop(part);
    let one = r.part().py_err(py)?;
    let opts = ScanOptions {
        columns,
        feature_id: r.feature_id.clone(),
        ..ScanOptions::default()
    };
    let snap = Snapshot {
        seal: None,
        parts: vec![one],
        sealed_total: 0,
        since: None,
    };
    let scan = block_on_local(py, move || async move {
        let sopts = StoreOptions::new()
            .endpoint_url(r.endpoint_url.clone())
            .opening(Opening::Location);
        let store: std::sync::Arc<dyn AtomicPublisher> = open(&r.store, &sopts).await?;
        scan(store, &snap, &opts)
    })?
    .py_err(py)?;
    let rt = crate::runtime::runtime().py_err(py)?;
    let reader = scan.into_reader(rt.handle());
    let schema = arrow_array::RecordBatchReader::schema(&reader);
    let batches = crate::runtime::detached(py, move || {
        reader.collect::<Result<Vec<_>, arrow_schema::ArrowError>>()
    })
    .map_err(|e| lib_error(py, e))?;
    let batches = batches
        .iter()
        .map(|b| b.to_pyarrow(py))
        .collect::<PyResult<Vec<_>>>()?;
    let table = py.import("pyarrow")?.getattr("Table")?;
    table.call_method1("from_batches", (batches, schema.as_ref().to_pyarrow(py)?))
}

/// The library's error a scan's reader carries, raised as its own exception
/// (`IntegrityError` naming the part, `StoreError`, …).
fn lib_error(py: Python<'_>, e: arrow_schema::ArrowError) -> PyErr {
    match e {
        arrow_schema::ArrowError::ExternalError(inner) => {
            match inner.downcast::<lineage_store::Error>() {
                Ok(e) => crate::errors::to_py(py, *e),
                Err(other) => {
                    crate::errors::to_py(py, lineage_store::Error::internal(other.to_string()))
                }
            }
        }
        other => crate::errors::to_py(py, lineage_store::Error::internal_from(other)),
    }
}
