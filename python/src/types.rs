//! What the library returns, as immutable Python objects: a commit, a verify report and
//! its problems, a seal, an inclusion proof and what a valid proof establishes.
//!
//! Each pickles as plain data (its JSON, rebuilt by [`_restore`]), so a
//! `multiprocessing.Pool` / `ProcessPoolExecutor` / Dask / Ray worker can return what
//! `append`, `verify`, `seal` or `prove` gave it, with fork and spawn alike.

use lineage_store::{Pointer, Problem as LibProblem, Report, SealOutcome};
use lineage_store::{Proof as LibProof, ProofSummary as LibSummary};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// JSON text → a Python object (dict), through the `json` module.
pub(crate) fn json_to_py<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyAny>> {
    py.import("json")?.call_method1("loads", (text,))
}

pub(crate) fn to_json<T: serde::Serialize>(v: &T) -> PyResult<String> {
    serde_json::to_string(v).map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))
}

/// One commit: a part and its pointer, as `lineage log --json` prints it.
#[pyclass(module = "lineage_store", frozen, eq, get_all, skip_from_py_object)]
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Commit {
    /// UUIDv7 (or UUIDv8 derived from a commit key), also in the part's footer.
    pub commit_id: String,
    /// Partition value.
    pub run_id: String,
    /// Partition value, canonical `EPSG:<code>`.
    pub target_crs: String,
    /// Key of the part relative to the store root.
    pub part_path: String,
    /// Rows in the part.
    pub row_count: u64,
    /// Bytes of the part.
    pub size_bytes: u64,
    /// Contract version of the part.
    pub schema_version: String,
    /// Lower-case hex sha256 of the part.
    pub sha256: String,
    /// Lower-case hex BLAKE3 of the part (`None` in older commits, whose pointers lack it).
    pub blake3: Option<String>,
    /// When it was published (RFC 3339, UTC).
    pub committed_utc: String,
    /// Smallest `sequence`.
    pub first_sequence: i64,
    /// Largest `sequence`.
    pub last_sequence: i64,
    /// Earliest `event_time_utc` (RFC 3339).
    pub min_event_time_utc: String,
    /// Latest `event_time_utc` (RFC 3339).
    pub max_event_time_utc: String,
    /// The lineage-store that wrote it.
    pub tool_version: String,
    /// The commit key the id was derived from, if any.
    pub commit_key: Option<String>,
    /// True when `repair` wrote the pointer for an orphan part.
    pub adopted: bool,
    /// Who wrote it, as far as its platform said (the pointer's `writer` record, a dict:
    /// `host`, `process`, `writer_key_id`, `request_id`, `platform`); `None` in commits
    /// without one. A record, not evidence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writer: Option<WriterDict>,
    /// Where the part's tail (bloom filters and footer) begins (`None` in older commits).
    #[serde(default)]
    pub tail_offset: Option<u64>,
    /// sha256 of the part's tail, checked before a feature lookup skips the part.
    #[serde(default)]
    pub tail_sha256: Option<String>,
    /// True when the append found this commit already in the store, committed by an
    /// earlier run (a retry under the same commit key), and published nothing.
    #[serde(default)]
    pub existed: bool,
    /// True when a resumed append kept this commit (an earlier attempt under the same
    /// commit key made it) instead of publishing it (`resume=True`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub kept: bool,
    /// For a kept commit: whether this attempt's flush differed from the kept part (its
    /// rows were rebuilt, e.g. with new timestamps); the kept rows stand. `None` unless kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload_differs: Option<bool>,
}

/// A pointer's `writer` record, seen from Python as a dict (its JSON).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct WriterDict(pub lineage_store::WriterRecord);

impl<'py> IntoPyObject<'py> for WriterDict {
    type Target = PyAny;
    type Output = Bound<'py, PyAny>;
    type Error = PyErr;
    fn into_pyobject(self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        json_to_py(py, &to_json(&self.0)?)
    }
}

impl Commit {
    /// `p` as `writer` made it: marked kept when resuming kept it.
    pub fn by(p: Pointer, writer: &lineage_store::Writer) -> Self {
        let kept = writer.kept(&p.commit_id);
        let mut c = Self::from(p);
        if let Some(k) = kept {
            c.kept = true;
            c.payload_differs = Some(k.payload_differs);
        }
        c
    }
}

impl From<Pointer> for Commit {
    fn from(p: Pointer) -> Self {
        Self {
            commit_id: p.commit_id,
            run_id: p.run_id,
            target_crs: p.target_crs,
            part_path: p.part_path,
            row_count: p.row_count,
            size_bytes: p.size_bytes,
            schema_version: p.schema_version,
            sha256: p.sha256,
            blake3: p.blake3,
            committed_utc: p.committed_utc,
            first_sequence: p.first_sequence,
            last_sequence: p.last_sequence,
            min_event_time_utc: p.min_event_time_utc,
            max_event_time_utc: p.max_event_time_utc,
            tool_version: p.tool_version,
            commit_key: p.commit_key,
            adopted: p.adopted,
            writer: p.writer.map(WriterDict),
            tail_offset: p.tail_offset,
            tail_sha256: p.tail_sha256,
            existed: p.existed,
            kept: false,
            payload_differs: None,
        }
    }
}

/// Equal when they are the same stored commit (`existed`, which says how an append found
/// it, aside): a retry's commits equal the first run's.
impl PartialEq for Commit {
    fn eq(&self, other: &Self) -> bool {
        let stored = |c: &Commit| Pointer {
            existed: false,
            ..c.pointer()
        };
        stored(self) == stored(other)
    }
}

impl Commit {
    fn pointer(&self) -> Pointer {
        Pointer {
            format: lineage_store::POINTER_FORMAT.to_string(),
            commit_id: self.commit_id.clone(),
            run_id: self.run_id.clone(),
            target_crs: self.target_crs.clone(),
            part_path: self.part_path.clone(),
            row_count: self.row_count,
            size_bytes: self.size_bytes,
            schema_version: self.schema_version.clone(),
            sha256: self.sha256.clone(),
            blake3: self.blake3.clone(),
            committed_utc: self.committed_utc.clone(),
            first_sequence: self.first_sequence,
            last_sequence: self.last_sequence,
            min_event_time_utc: self.min_event_time_utc.clone(),
            max_event_time_utc: self.max_event_time_utc.clone(),
            tool_version: self.tool_version.clone(),
            commit_key: self.commit_key.clone(),
            tail_offset: self.tail_offset,
            tail_sha256: self.tail_sha256.clone(),
            adopted: self.adopted,
            writer: self.writer.clone().map(|w| w.0),
            existed: self.existed,
        }
    }
}

#[pymethods]
impl Commit {
    /// Pickled as plain data (its JSON).
    fn __reduce__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyAny>, (&'static str, String))> {
        reduce(py, "Commit", to_json(self)?)
    }
    /// The pointer as one JSON line, exactly as `lineage append --json` prints it (a kept
    /// commit with `"kept":true,"payload_differs":…` after the pointer's fields).
    fn to_json(&self) -> PyResult<String> {
        let line = to_json(&self.pointer())?;
        match (self.kept, line.strip_suffix('}')) {
            (true, Some(body)) => Ok(format!(
                "{body},\"kept\":true,\"payload_differs\":{}}}",
                self.payload_differs.unwrap_or(false)
            )),
            _ => Ok(line),
        }
    }

    /// The pointer as a dict.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        json_to_py(py, &self.to_json()?)
    }

    fn __repr__(&self) -> String {
        format!(
            "Commit(commit_id={:?}, run_id={:?}, target_crs={:?}, row_count={}, part_path={:?})",
            self.commit_id, self.run_id, self.target_crs, self.row_count, self.part_path
        )
    }
}

/// One problem `verify` found, naming the object.
#[pyclass(module = "lineage_store", frozen, eq, get_all, skip_from_py_object)]
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Problem {
    /// The kind, as `lineage verify --json` spells it (`missing_part`, `digest_mismatch`, ...).
    pub kind: String,
    /// The object it is about.
    pub key: String,
    /// What is wrong, for a person.
    pub message: String,
}

impl From<&LibProblem> for Problem {
    fn from(p: &LibProblem) -> Self {
        let kind = serde_json::to_value(p.kind)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        Self {
            kind,
            key: p.key.clone(),
            message: p.detail.render(&crate::errors::keyword),
        }
    }
}

#[pymethods]
impl Problem {
    /// Pickled as plain data (its JSON).
    fn __reduce__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyAny>, (&'static str, String))> {
        reduce(py, "Problem", to_json(self)?)
    }
    fn __repr__(&self) -> String {
        format!(
            "Problem(kind={:?}, key={:?}, message={:?})",
            self.kind, self.key, self.message
        )
    }

    /// The line `lineage verify` prints for it.
    fn __str__(&self) -> String {
        format!("PROBLEM {}: {}: {}", self.kind, self.key, self.message)
    }
}

/// The result of `Store.verify()`; `clean` is True when nothing is wrong.
#[pyclass(module = "lineage_store", frozen, skip_from_py_object)]
#[derive(Debug, Clone)]
pub struct VerifyReport {
    pub(crate) inner: Report,
}

#[pymethods]
impl VerifyReport {
    /// Pickled as plain data (its JSON).
    fn __reduce__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyAny>, (&'static str, String))> {
        reduce(py, "VerifyReport", to_json(&self.inner)?)
    }
    /// True when no problem was found (`lineage verify` exits 0).
    #[getter]
    fn clean(&self) -> bool {
        self.inner.is_clean()
    }
    /// The store verified.
    #[getter]
    fn store(&self) -> String {
        self.inner.store.clone()
    }
    /// Pointers read.
    #[getter]
    fn commits(&self) -> u64 {
        self.inner.commits
    }
    /// Parts whose size, footer and (when hashed) digest matched.
    #[getter]
    fn parts_ok(&self) -> u64 {
        self.inner.parts_ok
    }
    /// Parts whose digest was recomputed.
    #[getter]
    fn parts_hashed(&self) -> u64 {
        self.inner.parts_hashed
    }
    /// Of those, the parts whose sha256 was recomputed.
    #[getter]
    fn parts_sha256_checked(&self) -> u64 {
        self.inner.parts_sha256_checked
    }
    /// Of those, the parts whose BLAKE3 was recomputed.
    #[getter]
    fn parts_blake3_checked(&self) -> u64 {
        self.inner.parts_blake3_checked
    }
    /// Compacted parts in effect whose digest and rows checked out (not in `parts_ok`).
    #[getter]
    fn compacted_parts_ok(&self) -> u64 {
        self.inner.compacted_parts_ok
    }
    /// Parts not re-hashed (`sample`, `since_seal`).
    #[getter]
    fn parts_not_hashed(&self) -> u64 {
        self.inner.parts_not_hashed
    }
    /// Rows recorded by the pointers that checked out.
    #[getter]
    fn rows(&self) -> u64 {
        self.inner.rows
    }
    /// Bytes hashed.
    #[getter]
    fn bytes_hashed(&self) -> u64 {
        self.inner.bytes_hashed
    }
    /// Seals in the chain.
    #[getter]
    fn seals(&self) -> u64 {
        self.inner.seals
    }
    /// Seals with a valid signature.
    #[getter]
    fn signed_seals(&self) -> u64 {
        self.inner.signed_seals
    }
    /// Sequence number of the newest seal.
    #[getter]
    fn head_seq(&self) -> Option<u64> {
        self.inner.head_seq
    }
    /// sha256 of the newest seal: compare it with the head digest kept elsewhere.
    #[getter]
    fn head(&self) -> Option<String> {
        self.inner.head.clone()
    }
    /// Commits covered by seals.
    #[getter]
    fn sealed_commits(&self) -> u64 {
        self.inner.sealed_commits
    }
    /// Commits not sealed yet.
    #[getter]
    fn unsealed_commits(&self) -> u64 {
        self.inner.unsealed_commits
    }
    /// Temps and orphan parts within the grace period (appends in flight), not judged.
    #[getter]
    fn in_flight(&self) -> u64 {
        self.inner.in_flight
    }
    /// Every object in flight, named: dicts with `key`, `kind` (`temp`, `part`,
    /// `committed_during_scan`), `since` (the time its content carries) and `detail`.
    #[getter]
    fn in_flight_objects<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        json_to_py(py, &to_json(&self.inner.in_flight_objects)?)
    }
    /// The verdict in words, as `lineage verify` prints it: `clean: no problems`,
    /// `clean except N objects in flight`, or `N problems[; M objects in flight]`.
    #[getter]
    fn summary(&self) -> String {
        self.inner.summary()
    }
    /// Each anchor given (`expect_head`, `public_key`/`signed_from`, `witness`) and what
    /// became of it: dicts with `anchor` (`head`, `keys`, `witness`), `held` and
    /// `statement` (e.g. "expected head 5f1c… found at seal 5, the newest"). Empty when
    /// none was given.
    #[getter]
    fn anchors<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        json_to_py(py, &to_json(&self.inner.anchors)?)
    }
    /// True when at least one anchor was given: without any, a clean report only says the
    /// store is internally consistent (see `anchoring`).
    #[getter]
    fn anchored(&self) -> bool {
        self.inner.anchored()
    }
    /// What the verdict rests on, in words: each anchor's outcome, or "internally
    /// consistent; no head, key or witness given: a rewrite or a cut-off would not show".
    #[getter]
    fn anchoring(&self) -> String {
        self.inner.anchor_lines().join("; ")
    }
    /// Commits `lineage repair` adopted (each pointer written from an orphan part's own
    /// footer: nothing its writer wrote vouches for it), among those read.
    #[getter]
    fn adopted(&self) -> u64 {
        self.inner.adopted
    }
    /// Every adopted commit read: dicts with `key` (its pointer), `commit_id`,
    /// `part_path`, `sealed_by` (or None), `anchored` (the expected head covers it) and
    /// `accepted` (`accept_adopted=True`); any other is an `adopted_commit` problem.
    #[getter]
    fn adopted_commits<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        json_to_py(py, &to_json(&self.inner.adopted_commits)?)
    }
    /// Seed of the sample, when sampling.
    #[getter]
    fn sample_seed(&self) -> Option<u64> {
        self.inner.sample_seed
    }
    /// Everything wrong, sorted by kind, then key.
    #[getter]
    fn problems(&self) -> Vec<Problem> {
        self.inner.problems.iter().map(Problem::from).collect()
    }
    /// The report as `lineage verify --json` prints it.
    fn to_json(&self) -> PyResult<String> {
        to_json(&self.inner)
    }
    /// The report as a dict.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        json_to_py(py, &self.to_json()?)
    }
    fn __repr__(&self) -> String {
        format!(
            "VerifyReport(clean={}, commits={}, parts_ok={}, problems={}, in_flight={})",
            if self.inner.is_clean() {
                "True"
            } else {
                "False"
            },
            self.inner.commits,
            self.inner.parts_ok,
            self.inner.problems.len(),
            self.inner.in_flight
        )
    }
}

impl VerifyReport {
    /// The problem lines as `lineage verify` prints them, and its closing count.
    pub fn problems_text(&self) -> String {
        let mut lines: Vec<String> = self
            .inner
            .problems
            .iter()
            .map(|p| Problem::from(p).__str__())
            .collect();
        lines.push(format!("{} problems", self.inner.problems.len()));
        lines.join("\n")
    }
}

/// What `Store.seal()` made.
#[pyclass(module = "lineage_store", frozen, eq, get_all, skip_from_py_object)]
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Seal {
    /// Sequence number of the new seal.
    pub seq: u64,
    /// Its key in the store.
    pub key: String,
    /// sha256 of the seal: the new head digest. Keep it OUTSIDE the store.
    pub head: String,
    /// Commits this seal added.
    pub added: u64,
    /// Commits covered in total.
    pub tree_size: u64,
    /// Merkle root (hex).
    pub root: String,
    /// Key id of the signing key, when signed.
    pub key_id: Option<String>,
    /// With `tsa=`: the seals whose time this call backed with an RFC 3161 token, oldest
    /// first (earlier seals left without one are asked again first).
    #[serde(default)]
    pub time_backed: Vec<u64>,
    /// With `tsa=`: why a seal's time could not be backed (`seal N: why`); the seal stands,
    /// and the next `seal(tsa=…)` asks again.
    #[serde(default)]
    pub time_not_backed: Option<String>,
}

impl Seal {
    /// With what a TSA run did.
    pub fn with_times(mut self, o: Option<lineage_store::timestamp::StampOutcome>) -> Self {
        if let Some(o) = o {
            self.time_backed = o.stamped.iter().map(|s| s.seq).collect();
            self.time_not_backed = o.failed.map(|f| format!("seal {}: {}", f.seq, f.why));
        }
        self
    }
}

impl From<SealOutcome> for Seal {
    fn from(s: SealOutcome) -> Self {
        Self {
            seq: s.seq,
            key: s.key,
            head: s.head,
            added: s.added,
            tree_size: s.tree_size,
            root: s.root,
            key_id: s.key_id,
            time_backed: Vec::new(),
            time_not_backed: None,
        }
    }
}

#[pymethods]
impl Seal {
    /// Pickled as plain data (its JSON).
    fn __reduce__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyAny>, (&'static str, String))> {
        reduce(py, "Seal", to_json(self)?)
    }
    fn __repr__(&self) -> String {
        format!(
            "Seal(seq={}, head={:?}, added={}, tree_size={})",
            self.seq, self.head, self.added, self.tree_size
        )
    }
}

/// An inclusion proof of one commit in one seal (`lineage prove`), checkable offline.
#[pyclass(module = "lineage_store", frozen, skip_from_py_object)]
#[derive(Debug, Clone)]
pub struct Proof {
    pub(crate) inner: LibProof,
}

#[pymethods]
impl Proof {
    /// Pickled as plain data (its JSON).
    fn __reduce__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyAny>, (&'static str, String))> {
        reduce(py, "Proof", to_json(&self.inner)?)
    }
    /// The commit proven.
    #[getter]
    fn commit_id(&self) -> String {
        self.inner.commit_id.clone()
    }
    /// Key of its pointer.
    #[getter]
    fn pointer_key(&self) -> String {
        self.inner.pointer_key.clone()
    }
    /// Position of the pointer's leaf in the seal's tree.
    #[getter]
    fn leaf_index(&self) -> u64 {
        self.inner.leaf_index
    }
    /// Leaves in the tree.
    #[getter]
    fn tree_size(&self) -> u64 {
        self.inner.tree_size
    }
    /// sha256 of the seal proven against (its head digest).
    #[getter]
    fn seal_sha256(&self) -> String {
        self.inner.seal_sha256.clone()
    }
    /// A row proof's event (`prove(event_id=...)`); `None` for a proof of a commit.
    #[getter]
    fn event_id(&self) -> Option<String> {
        self.inner.row.as_ref().map(|r| r.event_id.clone())
    }
    /// A row proof's row values (a dict, nulls as `None`); `None` for a proof of a commit.
    #[getter]
    fn row<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.inner
            .row
            .as_ref()
            .map(|r| {
                py.import("json")?
                    .call_method1("loads", (r.values.to_string(),))
            })
            .transpose()
    }
    /// The proof as JSON text. `embed_seal=False`: as `lineage prove` writes it, the
    /// compact form when the seal is signed (it carries a C2SP checkpoint): a commit's
    /// `c2sp.org/tlog-proof@v1`, a row's `lineage-row-proof/2`, both checked against the
    /// seal key alone; else the form with the seal. `embed_seal=True`: as `prove
    /// --embed-seal`, the `lineage-proof/1` (`lineage-row-proof/1`) that embeds the whole
    /// seal and is checked against a head digest. Not given: a row proof as `False`, a
    /// commit's proof as `True` (what earlier versions wrote).
    #[pyo3(signature = (embed_seal=None))]
    fn to_json(&self, embed_seal: Option<bool>) -> PyResult<String> {
        if !embed_seal.unwrap_or(self.inner.row.is_none()) {
            if let Some(t) = compact_proof(&self.inner) {
                return Ok(t);
            }
        }
        let mut text = serde_json::to_string_pretty(&self.inner)
            .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))?;
        text.push('\n');
        Ok(text)
    }
    fn __repr__(&self) -> String {
        format!(
            "Proof(commit_id={:?}, leaf_index={}, tree_size={}, seal_sha256={:?})",
            self.inner.commit_id,
            self.inner.leaf_index,
            self.inner.tree_size,
            self.inner.seal_sha256
        )
    }
}

/// A proof's compact form, as `lineage prove` writes it when the seal is signed (it
/// carries a C2SP checkpoint): a commit's `c2sp.org/tlog-proof@v1`, a row's
/// `lineage-row-proof/2`; `None` for a seal without one.
pub(crate) fn compact_proof(p: &LibProof) -> Option<String> {
    match p.row.is_some() {
        true => lineage_store::to_compact_row_proof(p),
        false => lineage_store::to_tlog_proof(p),
    }
}

/// What a valid proof establishes (`lineage verify-proof`).
#[pyclass(module = "lineage_store", frozen, eq, get_all, skip_from_py_object)]
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ProofSummary {
    /// The commit.
    pub commit_id: String,
    /// Its partition.
    pub run_id: String,
    /// Its partition.
    pub target_crs: String,
    /// The part's key.
    pub part_path: String,
    /// The part's sha256, as recorded.
    pub part_sha256: String,
    /// Rows recorded.
    pub rows: u64,
    /// The seal proven against.
    pub seal_seq: u64,
    /// When that seal was made.
    pub sealed_utc: String,
    /// Key id of the seal's signature, when signed and checked.
    pub signed_by: Option<String>,
    /// True when a part file was given and matched.
    pub part_file_checked: bool,
    /// A row proof's event, found in the part the proof carries; `None` for a commit's.
    pub event_id: Option<String>,
    /// Its row's position in that part.
    pub row_index: Option<u64>,
    /// Its values as JSON text (`row` gives them as a dict).
    pub row_json: Option<String>,
}

impl From<LibSummary> for ProofSummary {
    fn from(s: LibSummary) -> Self {
        Self {
            commit_id: s.commit_id,
            run_id: s.run_id,
            target_crs: s.target_crs,
            part_path: s.part_path,
            part_sha256: s.part_sha256,
            rows: s.rows,
            seal_seq: s.seal_seq,
            sealed_utc: s.sealed_utc,
            signed_by: s.signed_by.map(|by| by.render(&crate::errors::keyword)),
            part_file_checked: s.part_file_checked,
            event_id: s.row.as_ref().map(|r| r.event_id.clone()),
            row_index: s.row.as_ref().map(|r| r.row_index),
            row_json: s.row.as_ref().map(|r| r.values.to_string()),
        }
    }
}

#[pymethods]
impl ProofSummary {
    /// Pickled as plain data (its JSON).
    fn __reduce__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyAny>, (&'static str, String))> {
        reduce(py, "ProofSummary", to_json(self)?)
    }
    /// A row proof's row values (a dict); `None` for a proof of a commit.
    #[getter]
    fn row<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        self.row_json
            .as_ref()
            .map(|j| py.import("json")?.call_method1("loads", (j.as_str(),)))
            .transpose()
    }
    fn __repr__(&self) -> String {
        format!(
            "ProofSummary(commit_id={:?}, seal_seq={}, rows={}, part_file_checked={})",
            self.commit_id,
            self.seal_seq,
            self.rows,
            if self.part_file_checked {
                "True"
            } else {
                "False"
            }
        )
    }
}

/// `(_restore, (kind, json))`: what a value object pickles as.
fn reduce<'py>(
    py: Python<'py>,
    kind: &'static str,
    json: String,
) -> PyResult<(Bound<'py, PyAny>, (&'static str, String))> {
    let restore = py.import("lineage_store._native")?.getattr("_restore")?;
    Ok((restore, (kind, json)))
}

fn from_json<T: serde::de::DeserializeOwned>(text: &str) -> PyResult<T> {
    serde_json::from_str(text).map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))
}

/// Rebuild a pickled value object (see the module docs).
#[pyfunction]
pub fn _restore(py: Python<'_>, kind: &str, json: &str) -> PyResult<Py<PyAny>> {
    Ok(match kind {
        "Commit" => Py::new(py, from_json::<Commit>(json)?)?.into_any(),
        "Problem" => Py::new(py, from_json::<Problem>(json)?)?.into_any(),
        "VerifyReport" => Py::new(
            py,
            VerifyReport {
                inner: from_json(json)?,
            },
        )?
        .into_any(),
        "Seal" => Py::new(py, from_json::<Seal>(json)?)?.into_any(),
        "Proof" => Py::new(
            py,
            Proof {
                inner: from_json(json)?,
            },
        )?
        .into_any(),
        "ProofSummary" => Py::new(py, from_json::<ProofSummary>(json)?)?.into_any(),
        other => {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "no lineage_store value is called {other:?}"
            )))
        }
    })
}

/// Keyword arguments for an exception, from pairs.
pub fn kwargs<'py>(
    py: Python<'py>,
    pairs: &[(&str, Bound<'py, PyAny>)],
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (k, v) in pairs {
        d.set_item(k, v)?;
    }
    Ok(d)
}
