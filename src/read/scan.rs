//! A scan: the rows of a [`Snapshot`]'s parts, each part read once and checked against its
//! pointer before any of its rows is handed on.
//!
//! Each part is fetched whole in one read (its size must be the pointer's), hashed on the
//! encoder pool with the digest its pointer records (BLAKE3 where recorded, else sha256,
//! as `verify` does by default; [`Check::All`] for both), and only then decoded from those
//! same bytes: no row of a part that fails reaches the caller, and the failure ends the
//! scan with an [`Error::Integrity`] naming the part. A few parts are in flight at once
//! (fetch, hash, decode overlap); batches come out in snapshot order.
//!
//! Parts of older contract versions lack the columns later versions append: they read as
//! nulls, so every batch has one schema (the newest version among the snapshot's parts,
//! projected to the columns asked for).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arrow_array::{new_null_array, Array, ArrayRef, BooleanArray, RecordBatch, StringArray};
use arrow_schema::{Schema, SchemaRef};
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use parquet::arrow::ProjectionMask;

use crate::base::digest::{Check, Hasher, Want};
use crate::base::error::{Error, Failed, Result};
use crate::base::param::{text, Param};
use crate::publish::AtomicPublisher;
use crate::read::prune::{self, Verdict};
use crate::read::snapshot::types::SnapshotPart;
use crate::read::snapshot::Snapshot;
use crate::schema::contract;

/// Rows per batch handed on.
pub const SCAN_BATCH_ROWS: usize = 64 * 1024;

/// How to scan.
#[derive(Debug, Clone)]
pub struct ScanOptions {
    /// Only these columns, in this order (default: every column of the newest version).
    pub columns: Option<Vec<String>>,
    /// Only the rows of this `feature_id`; parts whose footer statistics or bloom filter
    /// rule it out are skipped unread ([`crate::read::prune`]) unless `prune` is off.
    pub feature_id: Option<String>,
    /// Skip parts by their footers and bloom filters for `feature_id` (default on). Off:
    /// every part is read and checked, so the absence of the feature from the parts not
    /// returned rests on their digests, not on their (unhashed) filters.
    pub prune: bool,
    /// Which recorded digests to recompute.
    pub digest: Check,
    /// Parts in flight at once (each held whole while it is hashed and decoded).
    pub concurrency: usize,
    /// Add each row's provenance ([`crate::PROVENANCE_COLUMNS`]): the commit, the seal
    /// that sealed it and the part. Needs a snapshot of original parts
    /// ([`crate::read::ReadOptions::prefer_compacted`] off), so a compacted row keeps
    /// its original commit and seal.
    pub provenance: bool,
}

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions {
            columns: None,
            feature_id: None,
            prune: true,
            digest: Check::Fastest,
            concurrency: default_concurrency(),
            provenance: false,
        }
    }
}

/// Two parts per core: one being fetched while one is hashed and decoded.
pub fn default_concurrency() -> usize {
    2 * std::thread::available_parallelism().map_or(2, |n| n.get())
}

/// What a scan did, updated as it runs.
#[derive(Debug, Default)]
pub struct ScanStats {
    /// Parts fetched, checked and decoded.
    pub parts_read: AtomicU64,
    /// Parts skipped by their footer statistics or bloom filter (not fetched whole).
    pub parts_skipped: AtomicU64,
    /// Parts read whole by a feature lookup because their pointer records no digest of
    /// their footer and filters (written before issue 35): pruning does not trust them.
    pub parts_unrecorded: AtomicU64,
    /// Bytes of the parts read (all checked).
    pub bytes_read: AtomicU64,
    /// Rows handed on.
    pub rows: AtomicU64,
}

/// A running scan: its schema and its batches.
pub struct Scan {
    schema: SchemaRef,
    batches: BoxStream<'static, Result<RecordBatch>>,
    stats: Arc<ScanStats>,
}

impl std::fmt::Debug for Scan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scan")
            .field("schema", &self.schema)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl Scan {
    /// The schema of every batch.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// The counters, shared with the running scan.
    pub fn stats(&self) -> Arc<ScanStats> {
        self.stats.clone()
    }

    /// The batches, in snapshot order; the first error ends them.
    pub fn into_stream(self) -> BoxStream<'static, Result<RecordBatch>> {
        self.batches
    }

    /// The batches as a blocking Arrow reader, the scan running on `runtime` (for callers
    /// outside async code: the Python package, through the Arrow C stream).
    pub fn into_reader(self, runtime: &tokio::runtime::Handle) -> ScanReader {
        let (tx, rx) = tokio::sync::mpsc::channel(2);
        let mut batches = self.batches;
        runtime.spawn(async move {
            while let Some(b) = batches.next().await {
                let stop = b.is_err();
                if tx.send(b).await.is_err() || stop {
                    return;
                }
            }
        });
        ScanReader {
            schema: self.schema,
            rx,
        }
    }
}

/// [`Scan::into_reader`]: an [`arrow_array::RecordBatchReader`] over a running scan.
#[derive(Debug)]
pub struct ScanReader {
    schema: SchemaRef,
    rx: tokio::sync::mpsc::Receiver<Result<RecordBatch>>,
}

impl Iterator for ScanReader {
    type Item = std::result::Result<RecordBatch, arrow_schema::ArrowError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.rx
            .blocking_recv()
            .map(|r| r.map_err(|e| arrow_schema::ArrowError::ExternalError(Box::new(e))))
    }
}

impl arrow_array::RecordBatchReader for ScanReader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

/// The newest contract version among the snapshot's parts (1.2.0 for none).
fn newest_version(snap: &Snapshot) -> Result<Arc<contract::ContractVersion>> {
    let mut best = contract::version(contract::SCHEMA_VERSION)?;
    for p in &snap.parts {
        let v = contract::version(&p.pointer.schema_version).map_err(|_| {
            Error::Integrity(vec![Failed::new(
                p.pointer_key.clone(),
                format!(
                    "records contract version {}, which is not registered",
                    p.pointer.schema_version
                ),
            )])
        })?;
        if v.columns.len() > best.columns.len() {
            best = v;
        }
    }
    Ok(best)
}

/// The schema a scan of `snap` yields with `columns`.
pub fn scan_schema(snap: &Snapshot, columns: Option<&[String]>) -> Result<SchemaRef> {
    let full = newest_version(snap)?.schema();
    let Some(cols) = columns else {
        return Ok(full);
    };
    let fields = cols
        .iter()
        .map(|c| {
            full.field_with_name(c).cloned().map_err(|_| {
                let names: Vec<&str> = full.fields().iter().map(|f| f.name().as_str()).collect();
                Error::invalid(
                    Param::Columns,
                    text![format!(
                        "no column {c:?} (the columns are {})",
                        names.join(", ")
                    )],
                )
            })
        })
        .collect::<Result<Vec<_>>>()?;
    if fields.is_empty() {
        return Err(Error::invalid(
            Param::Columns,
            text!["name at least one column"],
        ));
    }
    Ok(Arc::new(Schema::new(fields)))
}

/// Start scanning the parts of `snap`.
pub fn scan(store: Arc<dyn AtomicPublisher>, snap: &Snapshot, opts: &ScanOptions) -> Result<Scan> {
    let schema = scan_schema(snap, opts.columns.as_deref())?;
    if opts.provenance {
        crate::read::provenance::require_originals(snap)?;
    }
    let out_schema = match opts.provenance {
        true => crate::read::provenance::schema(&schema),
        false => schema.clone(),
    };
    let stats = Arc::new(ScanStats::default());
    let parts = snap.parts.clone();
    let (s, st, o) = (schema.clone(), stats.clone(), opts.clone());
    let batches = futures::stream::iter(parts)
        .map(move |part| {
            let (store, schema, stats, opts) = (store.clone(), s.clone(), st.clone(), o.clone());
            async move { read_part(store, part, schema, &opts, &stats).await }
        })
        .buffered(opts.concurrency.max(1))
        .map_ok(|batches| futures::stream::iter(batches.into_iter().map(Ok)))
        .try_flatten()
        .boxed();
    Ok(Scan {
        schema: out_schema,
        batches,
        stats,
    })
}

/// Fetch a part whole and check it against its pointer: present, the recorded size, the
/// recorded digests (`check` says which). The bytes returned are the bytes checked.
pub async fn fetch_checked(
    store: &dyn AtomicPublisher,
    part: &SnapshotPart,
    check: Check,
) -> Result<Bytes> {
    let p = &part.pointer;
    let whose = whose(part);
    let fail = |m: String| Error::Integrity(vec![Failed::new(p.part_path.clone(), m)]);
    // Never more than the pointer records: a larger file under its name is not read.
    let got = match store.get_at_most(&p.part_path, p.size_bytes).await {
        Err(Error::TooLarge { size, .. }) => {
            return Err(fail(format!(
                "is {size} bytes, {whose} records {}",
                p.size_bytes
            )))
        }
        got => got?,
    };
    let Some(bytes) = got else {
        return Err(fail(format!("is missing ({whose} records it)")));
    };
    if bytes.len() as u64 != p.size_bytes {
        return Err(fail(format!(
            "is {} bytes, {whose} records {}",
            bytes.len(),
            p.size_bytes
        )));
    }
    let want = Want::for_check(check, p.blake3.is_some());
    let b = bytes.clone();
    let got = crate::base::pool::run(move || Hasher::of(want, &b)).await?;
    let bad = got.mismatches(&p.sha256, p.blake3.as_deref(), &whose);
    if !bad.is_empty() {
        return Err(fail(bad.join("; ")));
    }
    Ok(bytes)
}

/// What vouches for `part`: its sealed or unsealed pointer, or the compaction record it
/// is read by.
fn whose(part: &SnapshotPart) -> String {
    match &part.sealed_by {
        Some(s) => format!("sealed pointer {} (seal {})", part.pointer_key, s.seq),
        None => format!("unsealed pointer {}", part.pointer_key),
    }
}

/// `Ok` when `rows`, the rows part `part` holds as read, are the rows its pointer (or the
/// compaction record it is read by) records; else an [`Error::Integrity`] naming the part:
/// a read never serves other rows than the record it trusts counts.
pub(crate) fn check_rows(part: &SnapshotPart, rows: u64) -> Result<()> {
    if rows == part.pointer.row_count {
        return Ok(());
    }
    Err(Error::Integrity(vec![Failed::new(
        part.pointer.part_path.clone(),
        format!(
            "holds {rows} rows, {} records {}; none of its rows is served (`lineage verify` names it)",
            whose(part),
            part.pointer.row_count
        ),
    )]))
}

async fn read_part(
    store: Arc<dyn AtomicPublisher>,
    part: SnapshotPart,
    schema: SchemaRef,
    opts: &ScanOptions,
    stats: &ScanStats,
) -> Result<Vec<RecordBatch>> {
    if let Some(f) = opts.feature_id.as_ref().filter(|_| opts.prune) {
        match prune::feature_verdict(store.as_ref(), &part.pointer, f).await? {
            Verdict::Absent => {
                stats.parts_skipped.fetch_add(1, Ordering::Relaxed);
                return Ok(Vec::new());
            }
            Verdict::Unrecorded => {
                stats.parts_unrecorded.fetch_add(1, Ordering::Relaxed);
            }
            Verdict::Maybe => {}
        }
    }
    let bytes = fetch_checked(store.as_ref(), &part, opts.digest).await?;
    stats.parts_read.fetch_add(1, Ordering::Relaxed);
    stats
        .bytes_read
        .fetch_add(part.pointer.size_bytes, Ordering::Relaxed);
    let key = part.pointer.part_path.clone();
    let feature = opts.feature_id.clone();
    let limits = store.read_limits();
    let (mut batches, decoded) =
        crate::base::pool::run(move || decode(&key, bytes, &schema, feature.as_deref(), limits))
            .await??;
    check_rows(&part, decoded)?;
    if opts.provenance {
        batches = crate::read::provenance::add(&part, batches)?;
    }
    let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
    stats.rows.fetch_add(rows as u64, Ordering::Relaxed);
    Ok(batches)
}

/// Decode a checked part into batches of `schema` (its columns by name; a column its
/// version lacks is null), keeping only the rows of `feature` when given; with the rows
/// decoded (before that filter).
pub(crate) fn decode(
    key: &str,
    bytes: Bytes,
    schema: &SchemaRef,
    feature: Option<&str>,
    limits: crate::base::limits::ReadLimits,
) -> Result<(Vec<RecordBatch>, u64)> {
    let bad = |m: String| Error::Corrupt {
        what: "part",
        key: key.to_string(),
        message: m.into(),
    };
    let builder = crate::parts::decoded::builder(bytes, limits).map_err(|m| Error::Corrupt {
        what: "part",
        key: key.to_string(),
        message: m,
    })?;
    let part_schema = builder.schema().clone();
    // Leaves to read: the output columns the part has, and feature_id for the filter.
    let mut wanted: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    if feature.is_some() && !wanted.contains(&"feature_id") {
        wanted.push("feature_id");
    }
    let leaves: Vec<usize> = wanted
        .iter()
        .filter_map(|n| part_schema.index_of(n).ok())
        .collect();
    let mask = ProjectionMask::roots(builder.parquet_schema(), leaves);
    let reader = builder
        .with_projection(mask)
        .with_batch_size(SCAN_BATCH_ROWS)
        .build()
        .map_err(|e| bad(e.to_string()))?;
    let mut out = Vec::new();
    let mut decoded = 0u64;
    for batch in reader {
        let batch = batch.map_err(|e| bad(format!("unreadable column data: {e}")))?;
        decoded += batch.num_rows() as u64;
        let batch = match feature {
            Some(f) => keep_feature(&batch, f).map_err(|e| bad(e.to_string()))?,
            None => batch,
        };
        if batch.num_rows() == 0 {
            continue;
        }
        let n = batch.num_rows();
        let columns: Vec<ArrayRef> = schema
            .fields()
            .iter()
            .map(|f| {
                batch
                    .column_by_name(f.name())
                    .cloned()
                    .unwrap_or_else(|| new_null_array(f.data_type(), n))
            })
            .collect();
        out.push(RecordBatch::try_new(schema.clone(), columns).map_err(|e| bad(e.to_string()))?);
    }
    Ok((out, decoded))
}

fn keep_feature(batch: &RecordBatch, feature: &str) -> Result<RecordBatch> {
    let ids = batch
        .column_by_name("feature_id")
        .and_then(|a| a.as_any().downcast_ref::<StringArray>())
        .ok_or_else(|| Error::internal("feature_id is not a string column"))?;
    let keep: BooleanArray = (0..ids.len())
        .map(|i| Some(ids.is_valid(i) && ids.value(i) == feature))
        .collect();
    Ok(arrow_select::filter::filter_record_batch(batch, &keep)?)
}

/// Fetch and check every part of `snap` (`concurrency` at once), without decoding: what
/// `lineage files` and the exports vouch for before they name a part. Every failing part
/// is named in one [`Error::Integrity`].
pub async fn check_all(
    store: &dyn AtomicPublisher,
    snap: &Snapshot,
    check: Check,
    concurrency: usize,
) -> Result<()> {
    let failed: Vec<Failed> = futures::stream::iter(snap.parts.iter())
        .map(|p| async move {
            match fetch_checked(store, p, check).await {
                Ok(_) => Ok(Vec::new()),
                Err(Error::Integrity(f)) => Ok(f),
                Err(e) => Err(e),
            }
        })
        .buffered(concurrency.max(1))
        .try_concat()
        .await?;
    if failed.is_empty() {
        Ok(())
    } else {
        Err(Error::Integrity(failed))
    }
}
