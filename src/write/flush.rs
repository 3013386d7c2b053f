//! Committing one flush: encode it once (on the encoder pool), publish the part create-only,
//! then its pointer create-only, then its index entry. The stream ([`crate::write::stream`])
//! cuts the flushes; [`Writer`](crate::Writer) is the façade.
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
//! claimed for exactly this payload ([`crate::write::commit_key`]) before step 1 of the first
//! flush, so that a key reused for another payload is refused with nothing published.

use std::sync::Arc;

use arrow_array::RecordBatch;
use bytes::Bytes;
use ed25519_dalek::SigningKey;
use uuid::Uuid;

use crate::base::clock::{Clock, IdGen, SystemClock, V7Ids};
use crate::base::digest::sha256_hex;
use crate::base::error::{Error, Result};
use crate::base::param::{text, Param};
use crate::base::time::{rfc3339, rfc3339_us};
use crate::format::identity::StoreIdentity;
use crate::format::keys;
use crate::format::pointer::{tool_version, Pointer, POINTER_FORMAT};
use crate::format::writer_record::WriterRecord;
use crate::history::identity::ensure_identity;
use crate::parts::encode;
use crate::parts::encode::EncodedPart;
use crate::publish::checked::{publish_checked, Published};
use crate::publish::AtomicPublisher;

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
/// Default memory for rows waiting for their partition to fill, before they spill to a
/// temp file.
pub const DEFAULT_MAX_BUFFERED_BYTES: usize = 256 * 1024 * 1024;

/// Everything a write needs, set through [`Writer`](crate::Writer)'s `with_*` methods: the store, the
/// injected clock and ids, the sizes. The stream and commit steps take it; the façade
/// ([`Writer`](crate::Writer)) owns one.
#[derive(Debug, Clone)]
pub(crate) struct WriteConfig {
    pub(crate) store: Arc<dyn AtomicPublisher>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) ids: Arc<dyn IdGen>,
    pub(crate) batch_rows: usize,
    pub(crate) concurrency: usize,
    pub(crate) encoders: usize,
    pub(crate) commit_key: Option<String>,
    /// Keep flushes already committed under the commit key ([`crate::write::resume`]).
    pub(crate) resume: bool,
    /// What resuming kept, shared by the writer's clones.
    pub(crate) kept: Arc<crate::write::resume::KeptLog>,
    pub(crate) max_part_bytes: usize,
    pub(crate) max_buffered_bytes: usize,
    pub(crate) schema_version: Option<String>,
    pub(crate) part_encoding: encode::PartEncoding,
    /// The store's identity, read (or created) once per writer and its clones.
    pub(crate) identity: Arc<tokio::sync::OnceCell<StoreIdentity>>,
    /// Errors listed when an append's input is refused (`0`: all).
    pub(crate) max_errors: usize,
    /// The writer key parts are signed with ([`crate::parts::writer_sig`]), if any.
    pub(crate) signer: Option<Arc<SigningKey>>,
    /// Who writes, as the environment said when the writer was set up (read once); the
    /// pointers' `writer` object with the key id and request id added.
    pub(crate) record: Option<WriterRecord>,
    /// The request id the caller passed (a Lambda invocation's), for the record.
    pub(crate) request_id: Option<String>,
}

impl WriteConfig {
    /// The system clock, UUIDv7 ids and default sizes.
    pub(crate) fn new(store: Arc<dyn AtomicPublisher>) -> Self {
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
            resume: false,
            kept: Arc::default(),
            max_part_bytes: MAX_PART_BYTES,
            max_buffered_bytes: DEFAULT_MAX_BUFFERED_BYTES,
            schema_version: None,
            part_encoding: encode::PartEncoding::default(),
            identity: Arc::default(),
            max_errors: crate::base::rejection::DEFAULT_MAX_ERRORS,
            signer: None,
            record: None,
            request_id: None,
        }
    }
    /// The same writer encoding parts with `encoding` (a keyed append retried under a
    /// claim of an earlier encoder, see [`crate::write::commit_key`]).
    pub(crate) fn with_part_encoding(mut self, encoding: encode::PartEncoding) -> Self {
        self.part_encoding = encoding;
        self
    }

    /// Encoder threads (at least 1).
    pub(crate) fn encoders(&self) -> usize {
        self.encoders.max(1)
    }
    /// The store's identity: read, or created when the store has none, before the first
    /// object this writer publishes (once per writer and its clones).
    pub(crate) async fn store_identity(&self) -> Result<&StoreIdentity> {
        self.identity
            .get_or_try_init(|| ensure_identity(self.store.as_ref(), self.clock.as_ref()))
            .await
    }

    /// A new commit id from the injected generator.
    pub(crate) fn new_commit_id(&self) -> Uuid {
        self.ids.commit_id()
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
        // The part names this store (its identity is created first when it has none).
        let store_id = match how.names_store() {
            true => Some(self.store_identity().await?.store_id.clone()),
            false => None,
        };
        let signer = self.signer.clone();
        let enc: EncodedPart = crate::base::pool::run(move || {
            encode::encode_signed(
                &rows.into_batch()?,
                &id,
                how,
                store_id.as_deref(),
                signer.as_deref(),
            )
        })
        .await??;
        drop(permit);
        if enc.bytes.len() > self.max_part_bytes {
            return Err(Error::usage(text![format!("the flush of {} rows for run_id={run_id} target_crs={target_crs} encodes to {} bytes, over the {}-byte limit of one create-only PUT; lower ", enc.rows, enc.bytes.len(), self.max_part_bytes), Param::BatchRows]));
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
        self.store_identity().await?;
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
        let pointer = self.pointer_of(run_id, target_crs, commit_id.clone(), part_key, &enc);
        let (outcome, stored) = self.publish_pointer(run_id, &pointer).await?;
        tracing::info!(commit = %commit_id, rows = enc.rows, bytes = enc.bytes.len(), ?outcome, "committed");
        let pointer = match (outcome, stored) {
            // Another pointer than ours (an earlier run's time): the commit existed.
            (Published::AlreadyOurs, Some(p)) if p != pointer => Pointer { existed: true, ..p },
            // Our own bytes (an ambiguous answer to our publish): committed now.
            (Published::AlreadyOurs, Some(p)) => p,
            _ => pointer,
        };
        // 3. the index entry, named after the pointer as stored (a retry's is the same key).
        crate::history::index::publish_entry(self.store.as_ref(), &pointer).await;
        Ok(pointer)
    }

    /// Resuming under a commit key ([`crate::write::resume`]): the pointer already
    /// committed as `commit_id`, recorded as kept (saying whether its part's sha256 differs
    /// from `sha256`, this attempt's); `None` when not resuming or nothing stands there.
    ///
    /// The kept commit must be the same flush: the same number of rows and the same
    /// `sequence` range, else (the rerun cut other flushes: another `batch_rows`, other
    /// rows) it is refused as a conflict, since keeping it would drop or duplicate rows.
    pub(crate) async fn kept_flush(
        &self,
        run_id: &str,
        commit_id: &str,
        enc: &EncodedPart,
    ) -> Result<Option<Pointer>> {
        if !self.resume || self.commit_key.is_none() {
            return Ok(None);
        }
        let Some(p) =
            crate::write::resume::committed(self.store.as_ref(), run_id, commit_id).await?
        else {
            return Ok(None);
        };
        if (p.row_count, p.first_sequence, p.last_sequence)
            != (enc.rows, enc.sequence.0, enc.sequence.1)
        {
            return Err(Error::Conflict {
                key: keys::pointer_key(run_id, commit_id),
                message: format!(
                    "resuming: commit {commit_id} holds {} rows (sequence {}..={}), this attempt's flush {} rows (sequence {}..={}): not the same flush (another batch size or other rows); nothing was published for it",
                    p.row_count, p.first_sequence, p.last_sequence, enc.rows, enc.sequence.0, enc.sequence.1
                ),
            });
        }
        let differs = p.sha256 != enc.sha256;
        tracing::info!(commit = %commit_id, rows = p.row_count, payload_differs = differs, "kept: committed by an earlier attempt");
        self.kept.record(commit_id, differs);
        Ok(Some(p))
    }

    /// The pointer of the encoded flush `enc`, published as `part_key`, committed now.
    fn pointer_of(
        &self,
        run_id: &str,
        target_crs: &str,
        commit_id: String,
        part_key: String,
        enc: &EncodedPart,
    ) -> Pointer {
        Pointer {
            format: POINTER_FORMAT.to_string(),
            commit_id,
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
            tail_offset: Some(enc.tail.0),
            tail_sha256: Some(enc.tail.1.clone()),
            adopted: false,
            writer: self.writer_record(),
            existed: false,
        }
    }

    /// The pointers' `writer` object: the environment's record, the writer key's id when
    /// parts are signed, the caller's request id; `None` when there is nothing to say.
    fn writer_record(&self) -> Option<WriterRecord> {
        let key_id = self
            .signer
            .as_ref()
            .map(|k| crate::parts::writer_sig::key_id(&k.verifying_key()));
        if self.record.is_none() && key_id.is_none() && self.request_id.is_none() {
            return None;
        }
        let base = self.record.clone().unwrap_or_default();
        Some(base.with(key_id, self.request_id.as_deref()))
    }

    /// Publish `pointer` create-only. A pointer already there for the same commit and
    /// part is ours (a retry): it is returned as stored, with the outcome.
    async fn publish_pointer(
        &self,
        run_id: &str,
        pointer: &Pointer,
    ) -> Result<(Published, Option<Pointer>)> {
        let pkey = keys::pointer_key(run_id, &pointer.commit_id);
        let kept = publish_checked(
            self.store.as_ref(),
            &pkey,
            Bytes::from(pointer.to_bytes()?),
            |have| {
                let other = Pointer::from_bytes(&pkey, have).map_err(|e| e.to_string())?;
                if other.commit_id == pointer.commit_id
                    && other.sha256 == pointer.sha256
                    && other.part_path == pointer.part_path
                {
                    Ok(other)
                } else {
                    Err(format!(
                        "pointer already exists for another part: existing sha256 {}, ours {}",
                        other.sha256, pointer.sha256
                    ))
                }
            },
        )
        .await?;
        Ok((kept.published, kept.found))
    }
}

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
    pub rows: FlushRows,
}

/// The rows of a cut flush, not yet one contiguous batch: gathering them is a copy of
/// every row, made by the encoder thread that encodes the flush ([`Self::into_batch`]),
/// in parallel with the other flushes and with the grouping of the rest of the input.
#[derive(Debug, Clone)]
pub(crate) enum FlushRows {
    /// Already one batch.
    Batch(RecordBatch),
    /// Copied pieces, concatenated in order.
    Pieces(Vec<RecordBatch>),
    /// Rows of `sources`, in order: (source, row).
    Gather {
        sources: Vec<RecordBatch>,
        rows: Vec<(usize, usize)>,
    },
}

impl FlushRows {
    /// One contiguous batch of the rows, in order. The encoder sees the same arrays
    /// whichever way the rows were buffered, so the part's bytes (and sha256) are the
    /// same as encoding a slice of the whole group (tests/it/write/streaming.rs compares them).
    pub(crate) fn into_batch(self) -> Result<RecordBatch> {
        match self {
            FlushRows::Batch(b) => Ok(b),
            // One append or sink writes one contract version: the pieces share a schema.
            FlushRows::Pieces(p) => Ok(arrow_select::concat::concat_batches(&p[0].schema(), &p)?),
            // arrow's interleave: measured on the bench's 1 M events as fast as a hand-written
            // gather copying short strings as fixed-width blocks (which was dropped) and
            // as taking per batch then concatenating.
            FlushRows::Gather { sources, rows } => {
                let refs: Vec<&RecordBatch> = sources.iter().collect();
                Ok(arrow_select::interleave::interleave_record_batch(
                    &refs, &rows,
                )?)
            }
        }
    }
}
