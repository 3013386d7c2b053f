//! The write path: group events into flushes ([`crate::stream`]), encode each once (in
//! parallel), publish the part create-only, then its pointer create-only.
//!
//! Commit protocol for one flush (see docs/architecture.md for the failure table):
//! 1. `part = run_id=<r>/target_crs=<c>/part-<commit-id>.parquet` ← encoded bytes;
//! 2. `_lineage/commits/run_id=<r>/<commit-id>.json` ← the pointer;
//! 3. `_lineage/index/<day>/T<time>Z.<commit-id>.run_id=<r>` ← empty: the commit's place in
//!    commit-time order, for seals that read only what is new ([`crate::history::index`]).
//!
//! A crash between 1 and 2 leaves an orphan part (visible to readers, unknown to the
//! pointers): `verify` reports it, `repair` adopts it. After an ambiguous or "already
//! exists" answer the object is read back and compared (commit id and sha256) before
//! deciding: our own earlier attempt counts as success, anything else is a conflict.
//!
//! With a commit key, the payload is digested while it is validated and the key is
//! claimed for exactly this payload ([`crate::commit_key`]) before step 1 of the first
//! flush, so that a key reused for another payload is refused with nothing published.

use std::sync::Arc;

use arrow_array::RecordBatch;
use bytes::Bytes;
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::clock::{Clock, IdGen, SystemClock, V7Ids};
use crate::encode::{self, sha256_hex, EncodedPart};
use crate::error::{Error, ErrorKind, Result};
use crate::keys;
use crate::pointer::{rfc3339, rfc3339_us, tool_version, Pointer, POINTER_FORMAT};
use crate::publish::{AtomicPublisher, Outcome};

/// Default rows per flush: one Parquet row group of ~4–5 MB per part, few enough parts
/// for fast scans, small enough to encode in well under a second.
pub const DEFAULT_BATCH_ROWS: usize = 100_000;
/// Largest part published as one PUT. Object stores cap a single PUT (S3: 5 GiB) and
/// `object_store` multipart uploads cannot be create-only, so bigger flushes are refused.
pub const MAX_PART_BYTES: usize = 4 * 1024 * 1024 * 1024;
/// Default number of commits in flight (uploads) at once. More does not help on a local
/// disk (measured: 64 in flight was slower than 8 at 1,000 and 10,000 rows per flush, the
/// journal serialising the fsyncs); object stores may want more (`Writer::with_concurrency`).
pub const DEFAULT_CONCURRENCY: usize = 8;

/// Rows of one (run_id, target_crs) group, at most `batch_rows` of them.
#[derive(Debug, Clone)]
pub(crate) struct Flush {
    /// Partition value.
    pub run_id: String,
    /// Partition value (canonical).
    pub target_crs: String,
    /// 0-based position of this flush within its group (for commit keys).
    pub index_in_group: u64,
    /// The rows (gathered into one batch by the encoder thread).
    pub rows: crate::stream::FlushRows,
}

/// The commit id a commit key derives for a flush: a UUIDv8 from
/// sha256(run_id, target_crs, key, flush index). The same job retried with the same key
/// re-publishes the same keys, so it ends with one part and one pointer per flush.
pub fn derived_commit_id(run_id: &str, target_crs: &str, key: &str, index: u64) -> Uuid {
    let mut h = Sha256::new();
    for part in ["lineage-commit-key/1", run_id, target_crs, key] {
        h.update((part.len() as u64).to_be_bytes());
        h.update(part.as_bytes());
    }
    h.update(index.to_be_bytes());
    let d = h.finalize();
    let mut b = [0u8; 16];
    b.copy_from_slice(&d[..16]);
    uuid::Builder::from_custom_bytes(b).into_uuid()
}

/// What happened to one object publish.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Published {
    /// We created it now.
    Created,
    /// It was there already and is ours (an earlier attempt landed).
    AlreadyOurs,
}

/// Create `key`; on `AlreadyExists` or an ambiguous error, read it back and ask `is_ours`
/// whether what is there is what we meant to write. Never accepts silently.
pub async fn publish_checked(
    store: &dyn AtomicPublisher,
    key: &str,
    bytes: Bytes,
    is_ours: impl Fn(&[u8]) -> std::result::Result<(), String>,
) -> Result<Published> {
    let first = match store.put_create(key, bytes).await {
        Ok(Outcome::Created) => return Ok(Published::Created),
        Ok(Outcome::AlreadyExists) => None,
        Err(e) if matches!(e.kind(), ErrorKind::Io | ErrorKind::Conflict) => Some(e),
        Err(e) => return Err(e),
    };
    match store.get(key).await {
        Ok(Some(existing)) => match is_ours(&existing) {
            Ok(()) => {
                tracing::info!(
                    key,
                    "object already present and identical: an earlier attempt landed"
                );
                Ok(Published::AlreadyOurs)
            }
            Err(why) => Err(Error::Conflict {
                key: key.to_string(),
                message: why,
            }),
        },
        Ok(None) => Err(first.unwrap_or_else(|| Error::Conflict {
            key: key.to_string(),
            message: "the store reported the key as existing, but it cannot be read".into(),
        })),
        Err(read_err) => Err(first.unwrap_or(read_err)),
    }
}

/// Appends events to a store. Cheap to clone; configure with the `with_*` methods.
#[derive(Debug, Clone)]
pub struct Writer {
    store: Arc<dyn AtomicPublisher>,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdGen>,
    batch_rows: usize,
    concurrency: usize,
    encoders: usize,
    commit_key: Option<String>,
    max_part_bytes: usize,
    max_buffered_bytes: usize,
    schema_version: Option<String>,
    part_encoding: encode::PartEncoding,
}

impl Writer {
    /// A writer with the system clock, UUIDv7 ids and default sizes.
    pub fn new(store: Arc<dyn AtomicPublisher>) -> Self {
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2);
        Self {
            store,
            clock: Arc::new(SystemClock),
            ids: Arc::new(V7Ids),
            batch_rows: DEFAULT_BATCH_ROWS,
            concurrency: DEFAULT_CONCURRENCY,
            encoders: cores,
            commit_key: None,
            max_part_bytes: MAX_PART_BYTES,
            max_buffered_bytes: crate::stream::DEFAULT_MAX_BUFFERED_BYTES,
            schema_version: None,
            part_encoding: encode::PartEncoding::default(),
        }
    }
    /// Inject the clock.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }
    /// Inject the id generator.
    pub fn with_ids(mut self, ids: Arc<dyn IdGen>) -> Self {
        self.ids = ids;
        self
    }
    /// Rows per flush (at least 1).
    pub fn with_batch_rows(mut self, n: usize) -> Self {
        self.batch_rows = n;
        self
    }
    /// Commits in flight at once (at least 1).
    pub fn with_concurrency(mut self, n: usize) -> Self {
        self.concurrency = n.max(1);
        self
    }
    /// Derive commit ids from this key (idempotent retries), see [`derived_commit_id`].
    pub fn with_commit_key(mut self, key: Option<String>) -> Self {
        self.commit_key = key;
        self
    }
    /// Largest part in bytes (tests lower it).
    pub fn with_max_part_bytes(mut self, n: usize) -> Self {
        self.max_part_bytes = n;
        self
    }
    /// Memory for rows waiting for their partition to fill before they spill to a temp
    /// file (see [`crate::stream`]).
    pub fn with_max_buffered_bytes(mut self, n: usize) -> Self {
        self.max_buffered_bytes = n;
        self
    }
    /// Contract version to write (`append --schema-version`); `None`: typed input (Arrow,
    /// Parquet, batches given to [`append`](Self::append)) keeps its own version, text
    /// input is written as the newest. Older input is widened with null columns; a version
    /// older than the input is refused.
    pub fn with_schema_version(mut self, v: Option<String>) -> Self {
        self.schema_version = v;
        self
    }
    /// The store written to.
    pub fn store(&self) -> &Arc<dyn AtomicPublisher> {
        &self.store
    }
    /// The commit key, if any.
    pub fn commit_key(&self) -> Option<&str> {
        self.commit_key.as_deref()
    }
    /// Rows per flush.
    pub fn batch_rows(&self) -> usize {
        self.batch_rows
    }
    /// Commits in flight at once.
    pub fn concurrency(&self) -> usize {
        self.concurrency
    }
    /// Largest part in bytes.
    pub fn max_part_bytes(&self) -> usize {
        self.max_part_bytes
    }
    /// Memory budget of buffered rows.
    pub fn max_buffered_bytes(&self) -> usize {
        self.max_buffered_bytes
    }
    /// The contract version requested, if any.
    pub fn schema_version(&self) -> Option<&str> {
        self.schema_version.as_deref()
    }
    /// The injected clock.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }
    /// The same writer encoding parts with `encoding` (a keyed append retried under a
    /// claim of an earlier encoder, see [`crate::commit_key`]).
    pub(crate) fn with_part_encoding(mut self, encoding: encode::PartEncoding) -> Self {
        self.part_encoding = encoding;
        self
    }

    pub(crate) fn encoders(&self) -> usize {
        self.encoders.max(1)
    }
    pub(crate) fn new_commit_id(&self) -> Uuid {
        self.ids.commit_id()
    }

    /// Append validated batches (see [`crate::input::parse_validated`]); `on_commit` sees
    /// each commit as it lands, in the order flushes are cut. Returns every pointer.
    /// Memory beyond `batches` is bounded as for a [`Sink`](crate::stream::Sink).
    /// The batches are written as the contract version of the first (or the one set with
    /// [`with_schema_version`](Self::with_schema_version)); a batch that cannot be written
    /// as that version is refused before anything is published.
    pub async fn append(
        &self,
        batches: &[RecordBatch],
        on_commit: impl FnMut(&Pointer),
    ) -> Result<Vec<Pointer>> {
        crate::stream::append::check_versions(batches, self.schema_version())?;
        let src = Arc::new(crate::stream::append::Validated(batches.to_vec()));
        Ok(crate::stream::append::append(self, src, true, on_commit)
            .await?
            .pointers)
    }

    /// Encode one flush on a blocking thread, holding an encoder `permit` (acquired by the
    /// caller: waiting for it is the back-pressure that bounds raw flushes in memory), and
    /// refuse it when it is over the single-PUT limit. The rows are dropped once encoded.
    pub(crate) async fn encode_flush(
        &self,
        f: Flush,
        commit_id: &str,
        permit: tokio::sync::OwnedSemaphorePermit,
    ) -> Result<EncodedPart> {
        let Flush {
            run_id,
            target_crs,
            rows,
            ..
        } = f;
        let id = commit_id.to_string();
        let how = self.part_encoding;
        let enc: EncodedPart =
            crate::stream::pool::run(move || encode::encode_with(&rows.into_batch()?, &id, how))
                .await??;
        drop(permit);
        if enc.bytes.len() > self.max_part_bytes {
            return Err(Error::Usage(format!(
                "the flush of {} rows for run_id={run_id} target_crs={target_crs} encodes to {} bytes, over the {}-byte limit of one create-only PUT; lower --batch-rows",
                enc.rows, enc.bytes.len(), self.max_part_bytes
            )));
        }
        Ok(enc)
    }

    /// Publish an encoded flush of partition (`run_id`, `target_crs`): the part, then its
    /// pointer, both create-only.
    pub(crate) async fn publish_flush(
        &self,
        run_id: &str,
        target_crs: &str,
        commit_id: String,
        enc: EncodedPart,
    ) -> Result<Pointer> {
        let part_key = keys::part_key(run_id, target_crs, &commit_id);
        let want = enc.sha256.clone();
        publish_checked(self.store.as_ref(), &part_key, enc.bytes.clone(), |have| {
            let got = sha256_hex(have);
            if got == want {
                Ok(())
            } else {
                Err(format!(
                    "part already exists with different content: existing sha256 {got}, ours {want} (commit {commit_id})"
                ))
            }
        })
        .await?;
        let pointer = Pointer {
            format: POINTER_FORMAT.to_string(),
            commit_id: commit_id.clone(),
            run_id: run_id.to_string(),
            target_crs: target_crs.to_string(),
            part_path: part_key,
            row_count: enc.rows,
            size_bytes: enc.bytes.len() as u64,
            schema_version: enc.schema_version.clone(),
            sha256: enc.sha256.clone(),
            blake3: Some(enc.blake3.clone()),
            committed_utc: rfc3339(self.clock.now()),
            first_sequence: enc.sequence.0,
            last_sequence: enc.sequence.1,
            min_event_time_utc: rfc3339_us(enc.event_time_us.0),
            max_event_time_utc: rfc3339_us(enc.event_time_us.1),
            tool_version: tool_version(),
            commit_key: self.commit_key.clone(),
            adopted: false,
        };
        let pkey = keys::pointer_key(run_id, &commit_id);
        let existing = std::sync::Mutex::new(None);
        let outcome = publish_checked(
            self.store.as_ref(),
            &pkey,
            Bytes::from(pointer.to_bytes()?),
            |have| {
                let other = Pointer::from_bytes(&pkey, have).map_err(|e| e.to_string())?;
                if other.commit_id == pointer.commit_id
                    && other.sha256 == pointer.sha256
                    && other.part_path == pointer.part_path
                {
                    if let Ok(mut g) = existing.lock() {
                        *g = Some(other);
                    }
                    Ok(())
                } else {
                    Err(format!(
                        "pointer already exists for another part: existing sha256 {}, ours {}",
                        other.sha256, pointer.sha256
                    ))
                }
            },
        )
        .await?;
        let stored = existing.into_inner().ok().flatten();
        tracing::info!(commit = %commit_id, rows = enc.rows, bytes = enc.bytes.len(), ?outcome, "committed");
        let pointer = match (outcome, stored) {
            (Published::AlreadyOurs, Some(p)) => p,
            _ => pointer,
        };
        // 3. the index entry, named after the pointer as stored (a retry's is the same key).
        crate::history::index::publish_entry(self.store.as_ref(), &pointer).await;
        Ok(pointer)
    }
}
