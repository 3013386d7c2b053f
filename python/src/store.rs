//! `lineage_store.open(url)` and the `Store` it returns: append, log, verify, seal, prove,
//! and the trusted read path: files, scan.
//! Every method releases the GIL while it reads Arrow data, validates, encodes, hashes or
//! talks to the store, so Python threads can append to one store (or several) at once, and
//! looks for Ctrl-C while it waits ([`crate::runtime`]).
//!
//! A `Store` pickles as what reopens it: its URL (a local path made absolute when opened)
//! and `endpoint_url`; credentials always come from the environment of the process that
//! unpickles it. A `memory://` store lives in one process and refuses to be pickled.

use std::path::PathBuf;
use std::sync::Arc;

use arrow_pyarrow::IntoPyArrow;
use lineage_store::{
    check_all, parse_duration, part_listing, prove, read_pointers, read_signing_key,
    validate_all_listing, verify_with, Anchors, AtomicPublisher, DigestCheck, Error, Format, Input,
    Param, Piece, ProveAgainst, ReadOptions, ScanOptions, StoreOptions, SystemClock, Text,
    VerifyOptions, Writer, DEFAULT_BATCH_ROWS, DEFAULT_CONCURRENCY,
};
use pyo3::prelude::*;

use lineage_store::conform;
use lineage_store::report::{self, ReportFormat, ReportOptions};

use crate::anchors::{AnchorIn, AnchorKw};
use crate::arrow_in;
use crate::as_of::{as_of, one_as_of};
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
    endpoint_url: Option<String>,
    /// What reopens it in another process (`None`: a memory store).
    reopen: Option<String>,
    inner: Arc<dyn AtomicPublisher>,
}

// The defaults in `#[pyo3(signature)]` are literals, so that the signature Python sees
// (`inspect.signature`, the stub test) shows them; these keep them the library's.
const _: () = assert!(DEFAULT_BATCH_ROWS == 100000 && DEFAULT_CONCURRENCY == 8);

/// The URL that reopens `url` from any working directory: a local path made absolute;
/// `None` for `memory://`, which exists in this process only.
fn reopen_url(url: &str) -> Option<String> {
    if url.starts_with("memory:") {
        return None;
    }
    let is_url = url.contains("://");
    if is_url {
        return Some(url.to_string());
    }
    Some(
        std::path::absolute(url)
            .ok()
            .and_then(|p| p.to_str().map(str::to_string))
            .unwrap_or_else(|| url.to_string()),
    )
}

/// A path or URL argument as text.
pub fn path_text(p: &std::path::Path) -> LResult<String> {
    p.to_str()
        .map(str::to_string)
        .ok_or_else(|| Error::usage(format!("{} is not valid UTF-8", p.display())))
}

/// Open the store a URL names (see the README: a directory, `file:///abs`, `memory://`,
/// `s3://bucket/prefix`, `az://container/prefix`, `gs://bucket/prefix`). Credentials come
/// from the environment, as for the CLI. `max_seal_bytes`, `max_page_bytes` and
/// `max_decoded_bytes` are this store's read limits (the CLI's `--max-seal-bytes`,
/// `--max-page-bytes`, `--max-decoded-bytes`); `None`: the defaults of [`crate::limits`]
/// (`set_read_limits`).
#[pyfunction]
#[pyo3(signature = (url, *, endpoint_url=None, max_seal_bytes=None, max_page_bytes=None, max_decoded_bytes=None))]
pub fn open(
    py: Python<'_>,
    url: PathBuf,
    endpoint_url: Option<String>,
    max_seal_bytes: Option<u64>,
    max_page_bytes: Option<u64>,
    max_decoded_bytes: Option<u64>,
) -> PyResult<Store> {
    let url = path_text(&url).py_err(py)?;
    let limits = crate::limits::for_store(max_seal_bytes, max_page_bytes, max_decoded_bytes);
    let opts = StoreOptions::new()
        .endpoint_url(endpoint_url.clone())
        .limits(limits);
    let u = url.clone();
    let inner = block_on(py, async move { lineage_store::open(&u, &opts).await })?.py_err(py)?;
    Ok(Store {
        reopen: reopen_url(&url),
        url,
        endpoint_url,
        inner,
    })
}

/// What a pickled `Store` calls to come back: `open(url, endpoint_url=..., limits...)`.
#[pyfunction]
#[pyo3(signature = (url, endpoint_url=None, max_seal_bytes=None, max_page_bytes=None, max_decoded_bytes=None))]
pub fn _reopen(
    py: Python<'_>,
    url: PathBuf,
    endpoint_url: Option<String>,
    max_seal_bytes: Option<u64>,
    max_page_bytes: Option<u64>,
    max_decoded_bytes: Option<u64>,
) -> PyResult<Store> {
    open(
        py,
        url,
        endpoint_url,
        max_seal_bytes,
        max_page_bytes,
        max_decoded_bytes,
    )
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
            Error::usage(format!(
                "grace={secs} s: expected a duration of at least 0 s"
            )),
        ));
    }
    Ok(chrono::Duration::microseconds((secs * 1e6) as i64))
}

/// A `format=` argument: the CLI's `--format` names.
fn parse_format(f: &str) -> LResult<Format> {
    match f.to_ascii_lowercase().as_str() {
        "ndjson" | "jsonl" | "json" => Ok(Format::Ndjson),
        "csv" => Ok(Format::Csv),
        "arrow" | "ipc" | "feather" => Ok(Format::Arrow),
        "parquet" => Ok(Format::Parquet),
        _ => Err(Error::usage(format!(
            "format={f:?}: expected ndjson, csv, arrow or parquet"
        ))),
    }
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

    /// The newest version of the Delta Lake table the seals make (version N is seal N), as
    /// Delta readers see it; `None` when the store has no Delta log (never sealed, or
    /// sealed only before Delta versions existed: the next seal writes it).
    fn delta_version(&self, py: Python<'_>) -> PyResult<Option<u64>> {
        let store = self.inner.clone();
        block_on(py, async move {
            lineage_store::delta_version(store.as_ref()).await
        })?
        .py_err(py)
    }

    /// Validate all of `data`, then commit it, one part per flush of at most `batch_rows`
    /// rows per (run_id, target_crs). Refused input raises `InputError` and publishes
    /// nothing. With `commit_key`, a retried job re-publishes the same commits. A table or
    /// data frame is read where it is; a stream (a `RecordBatchReader`, a DuckDB relation)
    /// is spooled to a temp file first, as the CLI spools standard input, so memory stays
    /// bounded whatever its size.
    /// `max_errors`: how many errors a refused input's `InputError.errors` lists (`0`:
    /// all; `InputError` counts them all either way), as `lineage append --max-errors`.
    /// `resume` (with `commit_key`): a retried job keeps the flushes an earlier attempt
    /// committed under the key (`Commit.kept`; `Commit.payload_differs` when this attempt's
    /// rows differ from the kept ones) and writes the rest, instead of raising
    /// `ConflictError` for a rebuilt payload.
    /// `signing_key`: a writer key file (`lineage keygen`): every part is signed, so
    /// `repair --writer-key` can prove an orphan part is this writer's. `request_id`:
    /// recorded in each pointer's `writer` record (a Lambda handler passes
    /// `context.aws_request_id`), beside the host and the platform's job and role names.
    #[pyo3(signature = (data, *, batch_rows=100000, commit_key=None, max_errors=20, resume=false, signing_key=None, request_id=None))]
    #[allow(clippy::too_many_arguments)]
    fn append(
        &self,
        py: Python<'_>,
        data: &Bound<'_, PyAny>,
        batch_rows: usize,
        commit_key: Option<String>,
        max_errors: usize,
        resume: bool,
        signing_key: Option<PathBuf>,
        request_id: Option<String>,
    ) -> PyResult<Vec<Commit>> {
        let mut source = arrow_in::import(py, data)?;
        // The schema first, also when no row follows (the CLI's rule for an Arrow file).
        if let Some(e) = crate::refusal::schema_error(py, source.producer, &source.schema) {
            return Err(e);
        }
        let writer = self
            .lib_writer(py, signing_key, request_id)?
            .with_batch_rows(batch_rows)
            .with_commit_key(commit_key)
            .with_resume(resume)
            .with_max_errors(max_errors);
        let made = writer.clone();
        if source.held {
            // Everything is read and validated before the first commit; the batches refer
            // to the producer's buffers (no copy).
            let validated = detached(py, move || {
                source
                    .read_all()
                    .and_then(|b| validate_all_listing(b, max_errors))
            })
            .py_err(py)?;
            let pointers =
                block_on(py, async move { writer.append(&validated, |_| {}).await })?.py_err(py)?;
            return Ok(pointers.into_iter().map(|p| Commit::by(p, &made)).collect());
        }
        // A stream is read once, into the spool; the append reads the spool twice.
        let plan = conform::plan(&source.schema).py_err(py)?;
        let schema = plan.version().schema();
        let mut interrupted = None;
        let spooled = detached(py, || {
            Input::spool_arrow(&schema, || {
                if let Err(e) = crate::runtime::signalled() {
                    interrupted = Some(e);
                    return Err(Error::internal("interrupted"));
                }
                source.next_batch()?.map(|b| plan.apply(&b)).transpose()
            })
        });
        if let Some(e) = interrupted {
            return Err(e);
        }
        let input = Arc::new(spooled.py_err(py)?);
        let done = block_on(py, async move {
            writer.append_source(input, true, |_| {}).await
        })?
        .py_err(py)?;
        Ok(done
            .pointers
            .into_iter()
            .map(|p| Commit::by(p, &made))
            .collect())
    }

    /// Append the events of a file (NDJSON, CSV, Arrow IPC or Parquet; the format from the
    /// extension unless `format` says) as `lineage append --input` does, with the same
    /// bounded memory whatever the file's size: the file is read twice, validated whole
    /// first (refused input raises `InputError` naming the line or row and field, and
    /// publishes nothing), then committed flush by flush. pyarrow is not needed.
    /// `resume`: as for `append`.
    /// `signing_key`, `request_id`: as for `append`.
    #[pyo3(signature = (path, *, format=None, batch_rows=100000, commit_key=None, max_errors=20, resume=false, signing_key=None, request_id=None))]
    #[allow(clippy::too_many_arguments)]
    fn append_file(
        &self,
        py: Python<'_>,
        path: PathBuf,
        format: Option<String>,
        batch_rows: usize,
        commit_key: Option<String>,
        max_errors: usize,
        resume: bool,
        signing_key: Option<PathBuf>,
        request_id: Option<String>,
    ) -> PyResult<Vec<Commit>> {
        let format = format.map(|f| parse_format(&f)).transpose().py_err(py)?;
        // A file named `-` is that file, never standard input.
        let path = if path.as_os_str() == "-" {
            PathBuf::from("./-")
        } else {
            path
        };
        let max_page = self.inner.read_limits().max_page_bytes;
        let input = detached(py, move || {
            Input::open(Some(&path), format).map(|i| i.with_max_page_bytes(max_page))
        })
        .py_err(py)?;
        let writer = self
            .lib_writer(py, signing_key, request_id)?
            .with_batch_rows(batch_rows)
            .with_commit_key(commit_key)
            .with_resume(resume)
            .with_max_errors(max_errors);
        let made = writer.clone();
        let done = block_on(py, async move {
            writer.append_source(Arc::new(input), true, |_| {}).await
        })?
        .py_err(py)?;
        Ok(done
            .pointers
            .into_iter()
            .map(|p| Commit::by(p, &made))
            .collect())
    }

    /// A streaming writer for jobs that emit events as they go, on the library's `Sink`:
    /// `with store.writer() as w: w.write(batch)`. Partitions are committed as they reach
    /// `batch_rows` rows, or once their oldest row has waited `max_delay` (seconds or a
    /// `timedelta`); at most `max_in_flight` commits run at once (`write` waits beyond).
    /// Leaving the block publishes the rest; an exception in it publishes nothing of the
    /// rows still buffered.
    /// `commit_key` (without `max_delay`, whose flushes depend on timing): commit ids are
    /// derived from the key, partition and flush index, so a job that writes the same rows
    /// in the same order cuts the same flushes; with `resume`, a rerun keeps the flushes
    /// an earlier attempt committed (`Commit.kept`) and writes the rest.
    /// `signing_key`, `request_id`: as for `append`.
    #[pyo3(signature = (*, batch_rows=100000, max_delay=None, max_in_flight=8, commit_key=None, resume=false, signing_key=None, request_id=None))]
    #[allow(clippy::too_many_arguments)]
    fn writer(
        &self,
        py: Python<'_>,
        batch_rows: usize,
        max_delay: Option<Bound<'_, PyAny>>,
        max_in_flight: usize,
        commit_key: Option<String>,
        resume: bool,
        signing_key: Option<PathBuf>,
        request_id: Option<String>,
    ) -> PyResult<crate::writer::Writer> {
        crate::writer::Writer::open(
            py,
            self.lib_writer(py, signing_key, request_id)?
                .with_commit_key(commit_key)
                .with_resume(resume),
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
        })?
        .py_err(py)?;
        log_table::to_pyarrow(py, &pointers)
    }

    /// The commits (of one run, if given), oldest first, as `Commit` objects.
    #[pyo3(signature = (run_id=None))]
    fn commits(&self, py: Python<'_>, run_id: Option<String>) -> PyResult<Vec<Commit>> {
        let store = self.inner.clone();
        let pointers = block_on(py, async move {
            read_pointers(store.as_ref(), run_id.as_deref()).await
        })?
        .py_err(py)?;
        Ok(pointers.into_iter().map(Commit::from).collect())
    }

    /// Prove every recorded part present and byte-identical, walk the seal chain, and
    /// report anything else in the store (as `lineage verify`). Returns the report; with
    /// `check=True`, raises `VerifyError` (carrying it) when it is not clean.
    /// `public_key`: a key file, or a list of them (every signed seal must verify under one;
    /// keys rotate); `signed_from`: every seal from that number on must be signed (seals
    /// before it may be unsigned), as `lineage verify --signed-from`.
    /// `shard=(i, n)`: check one n-th of the store (`--shard I/N`; merge the n reports with
    /// `merge_reports`); `plan_seal`: cut the shards from that seal's commits (give every
    /// shard the same, `--plan-seal`); `report_dir`: a URL where the shard's report is also
    /// published as its next attempt (`--report-dir`), before this returns.
    /// `accept_adopted=True`: the commits `lineage repair` adopted that `expect_head` does
    /// not cover (all of them without it) are accepted, not `adopted_commit` problems
    /// (`--accept-adopted`); `adopted_commits` lists every one either way.
    /// `witness_keys`: outside C2SP witnesses' verifier keys (`cosignature/v1`); the newest
    /// seal's checkpoint must carry a stored cosignature by `witness_quorum` of them
    /// (default: all), as `lineage verify --witness-key … --witness-quorum K`.
    /// `tsa_root`: the root certificate(s) (PEM or DER file) every seal's RFC 3161 token
    /// must chain to (`--tsa-root`; a full verify): each token's imprint, nonce, signature
    /// and time are checked, and `seal_times` says which held.
    /// `trust_expected_head=True`: what `expect_head` covers is not read again; a
    /// consistency proof from the hash tiles must show the newest seal extends it, and only
    /// what came after it is read (`--trust-expected-head`; `trusted_head` in the report).
    #[pyo3(signature = (*, public_key=None, expect_head=None, sample=None, sample_seed=None, since_seal=None, grace=None, check=false, digest="fastest", signed_from=None, witness=None, witness_endpoint_url=None, shard=None, plan_seal=None, report_dir=None, accept_adopted=false, witness_keys=None, witness_quorum=None, tsa_root=None, trust_expected_head=false))]
    #[allow(clippy::too_many_arguments)]
    fn verify(
        &self,
        py: Python<'_>,
        public_key: Option<Bound<'_, PyAny>>,
        expect_head: Option<String>,
        sample: Option<usize>,
        sample_seed: Option<u64>,
        since_seal: Option<Bound<'_, PyAny>>,
        grace: Option<Bound<'_, PyAny>>,
        check: bool,
        digest: &str,
        signed_from: Option<u64>,
        witness: Option<String>,
        witness_endpoint_url: Option<String>,
        shard: Option<(u32, u32)>,
        plan_seal: Option<u64>,
        report_dir: Option<String>,
        accept_adopted: bool,
        witness_keys: Option<Vec<String>>,
        witness_quorum: Option<usize>,
        tsa_root: Option<PathBuf>,
        trust_expected_head: bool,
    ) -> PyResult<VerifyReport> {
        let digest = digest
            .parse::<DigestCheck>()
            .map_err(|e| errors::to_py(py, Error::usage(format!("digest={e}"))))?;
        let kw = AnchorKw::new(
            py,
            AnchorIn {
                expect_head,
                public_key,
                signed_from,
                witness,
                witness_endpoint_url,
                witness_keys,
                witness_quorum,
            },
        )?;
        let shard = crate::distributed::shard_spec(shard, report_dir.as_deref()).py_err(py)?;
        let tsa_roots = tsa_root.as_deref().map(tsa_roots).transpose().py_err(py)?;
        let since_seal = since_seal_arg(since_seal)?;
        if tsa_roots.is_some() && since_seal.is_some() {
            return Err(errors::to_py(
                py,
                Error::invalid(
                    Param::TsaRoot,
                    Text::from_pieces(vec![
                        Piece::from("the seals' times are checked by a full verify; leave out "),
                        Piece::from(Param::SinceSeal),
                    ]),
                ),
            ));
        }
        let mut opts = VerifyOptions {
            sample,
            sample_seed,
            since_seal,
            tsa_roots,
            trust_expected_head,
            digest,
            shard,
            plan_seal,
            accept_adopted,
            ..VerifyOptions::default()
        }
        .with_anchors(&kw.base);
        if let Some(g) = grace {
            opts.grace = self::grace(py, &g)?;
        }
        let store = self.inner.clone();
        let endpoint = self.endpoint_url.clone();
        let report = block_on_local(py, move || async move {
            let mut report = verify_with(store.as_ref(), &opts).await?;
            // The witness, beside the verification (as `lineage verify --witness`).
            let anchors = kw.anchors(&store).await?;
            if anchors.witness.is_some() {
                let w = Anchors {
                    witness: anchors.witness,
                    ..Anchors::default()
                };
                let c = w.check(store.as_ref()).await?;
                report.anchors.extend(c.outcomes);
                report.problems.extend(c.problems);
                report.settle();
            }
            // The witness keys, beside it (as `lineage verify --witness-key`).
            if let Some(k) = &kw.base.witness_keys {
                k.judge_into(store.as_ref(), &mut report).await?;
            }
            if let Some(url) = report_dir {
                crate::distributed::publish(&url, endpoint, &report).await?;
            }
            Ok(report)
        })?
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
    /// `allow_empty`: publish a seal even with nothing new (a heartbeat, as `lineage seal
    /// --allow-empty`); `allow_unsigned`: seal without a key a store whose newest seal is
    /// signed (as `--unsigned`; otherwise that raises); `delta_checkpoint_interval`: a
    /// Delta checkpoint for the seal's version when it is a multiple of this (0: none);
    /// `tsa`: an RFC 3161 time-stamping authority's URL, as `lineage seal --tsa` (a TSA
    /// that fails does not raise: `Seal.time_not_backed` says why), each request bounded by
    /// `tsa_timeout` seconds.
    #[pyo3(signature = (signing_key=None, *, allow_empty=false, allow_unsigned=false, delta_checkpoint_interval=0, tsa=None, tsa_timeout=30.0))]
    #[allow(clippy::too_many_arguments)]
    fn seal(
        &self,
        py: Python<'_>,
        signing_key: Option<PathBuf>,
        allow_empty: bool,
        allow_unsigned: bool,
        delta_checkpoint_interval: u64,
        tsa: Option<String>,
        tsa_timeout: f64,
    ) -> PyResult<Seal> {
        let tsa = tsa
            .map(|u| {
                let t = std::time::Duration::try_from_secs_f64(tsa_timeout).map_err(|e| {
                    lineage_store::Error::invalid(
                        lineage_store::Param::Tsa,
                        format!("tsa_timeout {tsa_timeout}: {e}"),
                    )
                })?;
                lineage_store::timestamp::Tsa::new(&u, t)
            })
            .transpose()
            .py_err(py)?;
        let key = signing_key
            .as_deref()
            .map(read_signing_key)
            .transpose()
            .py_err(py)?;
        let opts = lineage_store::SealOptions {
            allow_empty,
            allow_unsigned,
            delta_checkpoint_interval,
            ..lineage_store::SealOptions::default()
        };
        let store = self.inner.clone();
        let (out, times) = block_on(py, async move {
            let s =
                lineage_store::seal_with(store.as_ref(), &SystemClock, key.as_ref(), &opts).await?;
            let times = match &tsa {
                Some(t) if s.seq > 0 => {
                    Some(lineage_store::timestamp::stamp_seals(store.as_ref(), t, s.seq).await?)
                }
                _ => None,
            };
            Ok::<_, lineage_store::Error>((s, times))
        })?
        .py_err(py)?;
        Ok(Seal::from(out).with_times(times))
    }

    /// Merge the sealed parts of each (run_id, target_crs) into compacted parts of about
    /// `target_rows` rows and publish the seal that puts them into effect, as `lineage
    /// compact` does (nothing is deleted; see docs/operations.md, "Compaction"). Returns
    /// what `lineage compact --json` prints, as a dict.
    #[pyo3(signature = (*, run_id=None, target_rows=100000, min_parts=2, dry_run=false, signing_key=None, allow_unsigned=false, delta_checkpoint=false))]
    #[allow(clippy::too_many_arguments)]
    fn compact<'py>(
        &self,
        py: Python<'py>,
        run_id: Option<String>,
        target_rows: usize,
        min_parts: usize,
        dry_run: bool,
        signing_key: Option<PathBuf>,
        allow_unsigned: bool,
        delta_checkpoint: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let key = signing_key
            .as_deref()
            .map(read_signing_key)
            .transpose()
            .py_err(py)?;
        let opts = lineage_store::compact::CompactOptions {
            run_id,
            target_rows,
            min_parts,
            dry_run,
            allow_unsigned,
            delta_checkpoint,
            ..Default::default()
        };
        let store = self.inner.clone();
        let out = block_on(py, async move {
            lineage_store::compact::compact(
                store,
                &SystemClock,
                &lineage_store::V7Ids,
                key.as_ref(),
                &opts,
            )
            .await
        })?
        .py_err(py)?;
        let text =
            serde_json::to_string(&out).map_err(|e| errors::to_py(py, Error::internal_from(e)))?;
        py.import("json")?.call_method1("loads", (text,))
    }

    /// An inclusion proof of `commit_id` in the seal whose digest is `head` (default: the
    /// newest seal, or seal number `seal`), checkable offline with `verify_proof`. With
    /// `event_id` instead: a row proof of that event (`lineage prove --event-id`): its
    /// values, its commit's inclusion proof and the part that holds it.
    /// `Proof.to_json(embed_seal=False)` is the text `lineage prove` writes (a signed
    /// seal's compact proof), `embed_seal=True` the text `prove --embed-seal` writes.
    #[pyo3(signature = (commit_id=None, head=None, *, seal=None, event_id=None))]
    fn prove(
        &self,
        py: Python<'_>,
        commit_id: Option<String>,
        head: Option<String>,
        seal: Option<u64>,
        event_id: Option<String>,
    ) -> PyResult<Proof> {
        let against = match (seal, head) {
            (Some(_), Some(_)) => {
                return Err(errors::to_py(
                    py,
                    Error::usage("give either head or seal, not both"),
                ))
            }
            (Some(n), None) => ProveAgainst::Seq(n),
            (None, Some(h)) => ProveAgainst::Head(h),
            (None, None) => ProveAgainst::Newest,
        };
        let store = self.inner.clone();
        let p = match (commit_id, event_id) {
            (Some(c), None) => {
                block_on(py, async move { prove(store.as_ref(), &c, &against).await })?
            }
            (None, Some(e)) => block_on(py, async move {
                lineage_store::prove_row(store, &e, &against).await
            })?,
            _ => Err(Error::usage("give either commit_id or event_id")),
        }
        .py_err(py)?;
        Ok(Proof { inner: p })
    }

    /// Write the audit report of the store (`lineage report`) to `path`: `format` "html"
    /// (one self-contained page), "md" or "json". The same checks as `verify` with the
    /// trust anchors given (`expect_head`, `public_key`: a path or a list of paths,
    /// `signed_from`, `witness`: another store's URL, `witness_keys`/`witness_quorum`: as
    /// for `verify`), then what the runs' rows say (only
    /// `run_id`'s runs: a str or a list; as of seal `as_of_seal`). An existing file is
    /// refused unless `force`. Returns the report's data (the JSON format) as a dict; the
    /// file is written whether or not problems were found (`["verdict"]["clean"]`).
    /// `accept_adopted=True`: adopted commits the anchors do not cover are accepted, as
    /// `verify(accept_adopted=True)`.
    #[pyo3(signature = (path, format="html", *, expect_head=None, public_key=None, signed_from=None, witness=None, witness_endpoint_url=None, witness_keys=None, witness_quorum=None, run_id=None, as_of_seal=None, force=false, as_of_time=None, accept_adopted=false))]
    #[allow(clippy::too_many_arguments)]
    fn report<'py>(
        &self,
        py: Python<'py>,
        path: PathBuf,
        format: &str,
        expect_head: Option<String>,
        public_key: Option<Bound<'py, PyAny>>,
        signed_from: Option<u64>,
        witness: Option<String>,
        witness_endpoint_url: Option<String>,
        witness_keys: Option<Vec<String>>,
        witness_quorum: Option<usize>,
        run_id: Option<Bound<'py, PyAny>>,
        as_of_seal: Option<u64>,
        force: bool,
        as_of_time: Option<String>,
        accept_adopted: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let format: ReportFormat = format.parse().py_err(py)?;
        one_as_of(as_of_seal, as_of_time.as_deref()).py_err(py)?;
        let kw = AnchorKw::new(
            py,
            AnchorIn {
                expect_head,
                public_key,
                signed_from,
                witness,
                witness_endpoint_url,
                witness_keys,
                witness_quorum,
            },
        )?;
        let run_ids: Vec<String> = match run_id {
            None => Vec::new(),
            Some(r) => match r.extract::<String>() {
                Ok(one) => vec![one],
                Err(_) => r.extract::<Vec<String>>()?,
            },
        };
        if !force && path.exists() {
            return Err(errors::to_py(
                py,
                Error::usage(format!(
                    "{}: the file exists; pass force=True to replace it",
                    path.display()
                )),
            ));
        }
        let store = self.inner.clone();
        let url = self.url.clone();
        let (text, json) = block_on_local(py, move || async move {
            let witness = kw.open_witness(&store).await?;
            let as_of_seal = as_of(store.as_ref(), as_of_seal, as_of_time.as_deref()).await?;
            let opts = ReportOptions {
                verify: VerifyOptions {
                    accept_adopted,
                    ..VerifyOptions::default()
                }
                .with_anchors(&kw.base),
                key_sources: kw
                    .key_paths
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect(),
                witness,
                witness_keys: kw.base.witness_keys.clone(),
                run_ids,
                as_of_seal,
                store_url: url,
            };
            let r = report::collect(store.as_ref(), &opts).await?;
            Ok((
                report::render(&r, format)?,
                report::render(&r, ReportFormat::Json)?,
            ))
        })?
        .py_err(py)?;
        std::fs::write(&path, text)
            .map_err(|e| Error::io(&path, e))
            .py_err(py)?;
        py.import("json")?.call_method1("loads", (json,))
    }

    /// The parts of exactly the commits sealed by seals 1..`as_of_seal` (default: the
    /// newest seal), of one run if given, each checked against its sealed pointer (size and
    /// digest) before any is named: paths (local disk) or URLs (object stores) for
    /// `duckdb.read_parquet([...])`, Polars and pyarrow. A part that fails raises
    /// `ConflictError` naming it; a part planted beside them is never listed.
    /// Compacted parts are listed for the commits a compaction in effect covers (each
    /// checked against its record), as `lineage files` does; `originals=True` lists the
    /// original parts instead (`--originals`).
    /// `as_of_time`: as of the newest seal sealed at or before it (`--as-of-time`).
    /// The anchors (`expect_head`, `public_key`, `signed_from`, `witness`, `witness_keys`
    /// with `witness_quorum`: outside witnesses' cosignatures of the newest checkpoint, as
    /// for `verify`) are checked first: one that does not hold raises `ConflictError`
    /// naming it, and nothing is read.
    /// `detail=True`: a dict per part instead of its location, as `lineage files --json`
    /// prints it (`location`, `part_path`, `commit_id`, ..., `sealed_by`, `adopted`; a
    /// compacted part names its compaction under `compaction`, its `commit_id` None).
    /// `since_seal=K`: only the commits sealed after seal K, reading only seals K..N
    /// (`--since-seal`): the original parts; the anchors checked against those seals
    /// (`expect_head` must be the head of one of them; `witness`: its records of those
    /// seals must hold, its records of earlier seals are counted, not checked; no
    /// `as_of_time`).
    #[pyo3(signature = (as_of_seal=None, run_id=None, *, include_unsealed=false, originals=false, as_of_time=None, expect_head=None, public_key=None, signed_from=None, witness=None, witness_endpoint_url=None, witness_keys=None, witness_quorum=None, detail=false, since_seal=None))]
    #[allow(clippy::too_many_arguments)]
    fn files<'py>(
        &self,
        py: Python<'py>,
        as_of_seal: Option<u64>,
        run_id: Option<String>,
        include_unsealed: bool,
        originals: bool,
        as_of_time: Option<String>,
        expect_head: Option<String>,
        public_key: Option<Bound<'_, PyAny>>,
        signed_from: Option<u64>,
        witness: Option<String>,
        witness_endpoint_url: Option<String>,
        witness_keys: Option<Vec<String>>,
        witness_quorum: Option<usize>,
        detail: bool,
        since_seal: Option<u64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        one_as_of(as_of_seal, as_of_time.as_deref()).py_err(py)?;
        since_not_as_of_time(since_seal, as_of_time.as_deref()).py_err(py)?;
        let kw = AnchorKw::new(
            py,
            AnchorIn {
                expect_head,
                public_key,
                signed_from,
                witness,
                witness_endpoint_url,
                witness_keys,
                witness_quorum,
            },
        )?;
        let mut opts = ReadOptions {
            as_of_seal,
            run_id,
            include_unsealed,
            prefer_compacted: !originals,
            since_seal,
            ..ReadOptions::default()
        };
        let store = self.inner.clone();
        let listed = block_on_local(py, move || async move {
            opts.as_of_seal = as_of(store.as_ref(), opts.as_of_seal, as_of_time.as_deref()).await?;
            let snap = kw.read(&store, &opts).await?;
            let concurrency = ScanOptions::default().concurrency;
            check_all(store.as_ref(), &snap, DigestCheck::Fastest, concurrency).await?;
            Ok(snap
                .parts
                .iter()
                .map(|p| part_listing(store.as_ref(), p))
                .collect::<Vec<_>>())
        })?
        .py_err(py)?;
        if detail {
            return crate::types::json_to_py(py, &crate::types::to_json(&listed)?);
        }
        let locations: Vec<String> = listed.into_iter().map(|l| l.location).collect();
        Ok(pyo3::types::PyList::new(py, locations)?.into_any())
    }

    /// The parts of a read (the commits sealed by seals 1..`as_of_seal`, default the
    /// newest; of one `run_id` and `target_crs` when given) as picklable `PartRef`s, for
    /// an engine's workers to read with `read_part`, each part checked there against its
    /// sealed pointer. Nothing is read but the seals and pointers here. `feature_id`: each
    /// `read_part` returns only that feature's rows. The other arguments as for `files`.
    /// The anchors (`expect_head`, `public_key`, `signed_from`, `witness`, `witness_keys`,
    /// `witness_quorum`) are checked here, on the driver, first, as by `files` and `scan`: one that does not hold raises
    /// `ConflictError` naming it, and nothing is planned. Each ref's `anchors` says what
    /// was checked (one line per anchor, as `VerifyReport.anchors` states them).
    #[pyo3(signature = (as_of_seal=None, run_id=None, *, target_crs=None, feature_id=None, include_unsealed=false, originals=false, as_of_time=None, expect_head=None, public_key=None, signed_from=None, witness=None, witness_endpoint_url=None, witness_keys=None, witness_quorum=None))]
    #[allow(clippy::too_many_arguments)]
    fn plan(
        &self,
        py: Python<'_>,
        as_of_seal: Option<u64>,
        run_id: Option<String>,
        target_crs: Option<String>,
        feature_id: Option<String>,
        include_unsealed: bool,
        originals: bool,
        as_of_time: Option<String>,
        expect_head: Option<String>,
        public_key: Option<Bound<'_, PyAny>>,
        signed_from: Option<u64>,
        witness: Option<String>,
        witness_endpoint_url: Option<String>,
        witness_keys: Option<Vec<String>>,
        witness_quorum: Option<usize>,
    ) -> PyResult<Vec<crate::parts::PartRef>> {
        one_as_of(as_of_seal, as_of_time.as_deref()).py_err(py)?;
        let anchors = AnchorKw::new(
            py,
            AnchorIn {
                expect_head,
                public_key,
                signed_from,
                witness,
                witness_endpoint_url,
                witness_keys,
                witness_quorum,
            },
        )?;
        let Some(url) = self.reopen.clone() else {
            return Err(errors::to_py(py, Error::usage(
                "plan: a memory:// store exists in this process only; workers cannot read it (open a directory or a bucket)",
            )));
        };
        let request = crate::parts::PlanRequest {
            url,
            endpoint_url: self.endpoint_url.clone(),
            opts: ReadOptions {
                as_of_seal,
                run_id,
                target_crs,
                include_unsealed,
                prefer_compacted: !originals,
                since_seal: None,
            },
            as_of_time,
            feature_id,
            anchors,
        };
        crate::parts::plan(py, self.inner.clone(), request)
    }

    /// The rows of exactly the commits sealed by seals 1..`as_of_seal` (default: the
    /// newest), as a `pyarrow.RecordBatchReader` (through the Arrow C stream: DuckDB
    /// queries it, `polars.from_arrow` reads it). Each part is read once and checked
    /// against its sealed pointer before any of its rows is handed on; a part that fails
    /// ends the stream with an error naming it. `columns`: only these, in this order.
    /// `filter`: a dict of `target_crs` and/or `feature_id` values rows must have
    /// (`feature_id` skips parts by their bloom filters).
    /// Compacted parts are read for the commits a compaction in effect covers, as
    /// `lineage scan` does; `originals=True` reads the original parts (`--originals`).
    /// `provenance=True` adds each row's `commit_id`, `sealed_by_seal` and `part_path`
    /// (`--with-provenance`; the original parts are read, so a compacted row keeps its
    /// original commit and seal).
    /// `as_of_time`: as of the newest seal sealed at or before it (`--as-of-time`).
    /// The anchors are checked first, as by `files`.
    /// `since_seal=K`: only the rows of the commits sealed after seal K, as for `files`.
    #[pyo3(signature = (as_of_seal=None, run_id=None, columns=None, filter=None, *, include_unsealed=false, originals=false, provenance=false, as_of_time=None, expect_head=None, public_key=None, signed_from=None, witness=None, witness_endpoint_url=None, witness_keys=None, witness_quorum=None, since_seal=None))]
    #[allow(clippy::too_many_arguments)]
    fn scan<'py>(
        &self,
        py: Python<'py>,
        as_of_seal: Option<u64>,
        run_id: Option<String>,
        columns: Option<Vec<String>>,
        filter: Option<std::collections::HashMap<String, String>>,
        include_unsealed: bool,
        originals: bool,
        provenance: bool,
        as_of_time: Option<String>,
        expect_head: Option<String>,
        public_key: Option<Bound<'py, PyAny>>,
        signed_from: Option<u64>,
        witness: Option<String>,
        witness_endpoint_url: Option<String>,
        witness_keys: Option<Vec<String>>,
        witness_quorum: Option<usize>,
        since_seal: Option<u64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        one_as_of(as_of_seal, as_of_time.as_deref()).py_err(py)?;
        since_not_as_of_time(since_seal, as_of_time.as_deref()).py_err(py)?;
        let kw = AnchorKw::new(
            py,
            AnchorIn {
                expect_head,
                public_key,
                signed_from,
                witness,
                witness_endpoint_url,
                witness_keys,
                witness_quorum,
            },
        )?;
        let mut opts = ReadOptions {
            as_of_seal,
            run_id,
            include_unsealed,
            prefer_compacted: !originals && !provenance,
            since_seal,
            ..ReadOptions::default()
        };
        let mut scan_opts = ScanOptions {
            columns,
            provenance,
            ..ScanOptions::default()
        };
        for (k, v) in filter.unwrap_or_default() {
            match k.as_str() {
                "target_crs" => opts.target_crs = Some(v),
                "feature_id" => scan_opts.feature_id = Some(v),
                other => {
                    return Err(errors::to_py(
                        py,
                        Error::usage(format!(
                            "filter: no filter on {other:?} (filters: target_crs, feature_id; run_id is an argument)"
                        )),
                    ))
                }
            }
        }
        let store = self.inner.clone();
        let scan = block_on_local(py, move || async move {
            opts.as_of_seal = as_of(store.as_ref(), opts.as_of_seal, as_of_time.as_deref()).await?;
            let snap = kw.read(&store, &opts).await?;
            lineage_store::scan(store, &snap, &scan_opts)
        })?
        .py_err(py)?;
        let rt = crate::runtime::runtime().py_err(py)?;
        let reader: Box<dyn arrow_array::RecordBatchReader + Send> = Box::new(
            crate::errors::Worded(Box::new(scan.into_reader(rt.handle()))),
        );
        reader.into_pyarrow(py)
    }

    /// Every seal, as `lineage seals --json` lists them (seq, sealed_utc, sha256, key_id,
    /// commits_added, tree_size, compactions, witnessed, tool_version), checked against
    /// the anchors given: `public_key` (a path or a list), `signed_from`, `expect_head`,
    /// `witness` (another store's URL), `witness_keys` (outside witnesses' verifier keys,
    /// judged on the newest seal's checkpoint) with `witness_quorum`. Returns {"seals",
    /// "problems", "expect_head_seq", "witness_problems", "witness_keys" (what each key
    /// anchor found), "witness_keys_problems"}: empty problems when the chain and every
    /// anchor hold.
    #[pyo3(signature = (*, public_key=None, signed_from=None, expect_head=None, witness=None, witness_endpoint_url=None, witness_keys=None, witness_quorum=None))]
    #[allow(clippy::too_many_arguments)]
    fn seals<'py>(
        &self,
        py: Python<'py>,
        public_key: Option<Bound<'py, PyAny>>,
        signed_from: Option<u64>,
        expect_head: Option<String>,
        witness: Option<String>,
        witness_endpoint_url: Option<String>,
        witness_keys: Option<Vec<String>>,
        witness_quorum: Option<usize>,
    ) -> PyResult<Bound<'py, PyAny>> {
        crate::questions::seals(
            py,
            self.inner.clone(),
            public_key,
            signed_from,
            expect_head,
            witness,
            witness_endpoint_url,
            (witness_keys, witness_quorum),
        )
    }

    /// One commit (by id) or seal (by number or sha256), as `lineage show --json` prints
    /// it: a dict with `kind` "commit" or "seal". The anchors (`expect_head`, `public_key`,
    /// `signed_from`, `witness`, `witness_keys`, `witness_quorum`) are checked first, as by
    /// `files`; raises when one does not hold or the seal chain does not.
    #[pyo3(signature = (what, *, public_key=None, signed_from=None, expect_head=None, witness=None, witness_endpoint_url=None, witness_keys=None, witness_quorum=None))]
    #[allow(clippy::too_many_arguments)]
    fn show<'py>(
        &self,
        py: Python<'py>,
        what: Bound<'py, PyAny>,
        public_key: Option<Bound<'py, PyAny>>,
        signed_from: Option<u64>,
        expect_head: Option<String>,
        witness: Option<String>,
        witness_endpoint_url: Option<String>,
        witness_keys: Option<Vec<String>>,
        witness_quorum: Option<usize>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let what: String = what.str()?.extract()?;
        let kw = AnchorKw::new(
            py,
            AnchorIn {
                expect_head,
                public_key,
                signed_from,
                witness,
                witness_endpoint_url,
                witness_keys,
                witness_quorum,
            },
        )?;
        crate::questions::show_one(py, self.inner.clone(), what, kw)
    }

    /// What changed from seal `a` to seal `b` (`lineage diff a b --json`): the commits
    /// added, the compactions put into effect, the runs touched and the rows added. The
    /// anchors are checked first, as by `show`.
    #[pyo3(signature = (a, b, *, public_key=None, signed_from=None, expect_head=None, witness=None, witness_endpoint_url=None, witness_keys=None, witness_quorum=None))]
    #[allow(clippy::too_many_arguments)]
    fn diff<'py>(
        &self,
        py: Python<'py>,
        a: u64,
        b: u64,
        public_key: Option<Bound<'py, PyAny>>,
        signed_from: Option<u64>,
        expect_head: Option<String>,
        witness: Option<String>,
        witness_endpoint_url: Option<String>,
        witness_keys: Option<Vec<String>>,
        witness_quorum: Option<usize>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let kw = AnchorKw::new(
            py,
            AnchorIn {
                expect_head,
                public_key,
                signed_from,
                witness,
                witness_endpoint_url,
                witness_keys,
                witness_quorum,
            },
        )?;
        crate::questions::diff(py, self.inner.clone(), a, b, kw)
    }

    /// The `endpoint_url` this store was opened with.
    #[getter]
    fn endpoint_url(&self) -> Option<String> {
        self.endpoint_url.clone()
    }

    /// Pickled as what reopens it: the URL (a local path made absolute) and
    /// `endpoint_url`, never credentials. A `memory://` store refuses.
    #[allow(clippy::type_complexity)]
    #[allow(clippy::type_complexity)]
    fn __reduce__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(
        Bound<'py, PyAny>,
        (
            String,
            Option<String>,
            Option<u64>,
            Option<u64>,
            Option<u64>,
        ),
    )> {
        let Some(url) = &self.reopen else {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "cannot pickle a memory:// store: it exists in this process only (open a directory or a bucket to share a store between processes)",
            ));
        };
        let reopen = py.import("lineage_store._native")?.getattr("_reopen")?;
        let limits = self.inner.read_limits();
        Ok((
            reopen,
            (
                url.clone(),
                self.endpoint_url.clone(),
                Some(limits.max_seal_bytes),
                Some(limits.max_page_bytes),
                Some(limits.max_decoded_bytes),
            ),
        ))
    }

    fn __repr__(&self) -> String {
        format!("Store({:?})", self.url)
    }
}

/// `since_seal=True`: the newest seal; an int: that seal.
fn since_seal_arg(since_seal: Option<Bound<'_, PyAny>>) -> PyResult<Option<Option<u64>>> {
    Ok(match since_seal {
        None => None,
        Some(v) if v.is_instance_of::<pyo3::types::PyBool>() => {
            v.extract::<bool>()?.then_some(None)
        }
        Some(v) => Some(Some(v.extract::<u64>()?)),
    })
}

/// `since_seal` reads only the seals from K on; `as_of_time` would read every seal to find
/// its own.
fn since_not_as_of_time(since_seal: Option<u64>, as_of_time: Option<&str>) -> LResult<()> {
    match (since_seal, as_of_time) {
        (Some(_), Some(_)) => Err(Error::usage(
            "give since_seal with as_of_seal, not as_of_time (which reads every seal to find its own)",
        )),
        _ => Ok(()),
    }
}

impl Store {
    /// The library writer behind `append`, `append_file` and `writer`: parts signed with
    /// the writer key file `signing_key` when given, and each pointer recording who wrote
    /// it (the process environment, read once here: host, platform job and role names,
    /// never a secret; and `request_id`).
    fn lib_writer(
        &self,
        py: Python<'_>,
        signing_key: Option<PathBuf>,
        request_id: Option<String>,
    ) -> PyResult<Writer> {
        let key = signing_key
            .as_deref()
            .map(read_signing_key)
            .transpose()
            .py_err(py)?;
        let process = format!("lineage-store/{} python", env!("CARGO_PKG_VERSION"));
        Ok(Writer::new(self.inner.clone())
            .with_signing_key(key)
            .with_environment(&lineage_store::ProcessEnv, &process)
            .with_request_id(request_id))
    }
}

/// The TSA roots in the file `path` (PEM or DER), as `--tsa-root` reads them.
fn tsa_roots(path: &std::path::Path) -> lineage_store::Result<lineage_store::TsaRoots> {
    let bytes = std::fs::read(path)
        .map_err(|e| Error::invalid(Param::TsaRoot, format!("{}: {e}", path.display())))?;
    lineage_store::parse_tsa_roots(&bytes)
        .map_err(|why| Error::invalid(Param::TsaRoot, format!("{}: {why}", path.display())))
}
