//! The write path: group events into flushes, encode each once (in parallel), publish
//! the part create-only, then its pointer create-only.
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
//! With a commit key, every flush is encoded first and the key is claimed for exactly
//! this payload ([`crate::commit_key`]) before step 1 of the first flush, so that a key
//! reused for another payload is refused with nothing published.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{RecordBatch, UInt32Array};
use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use sha2::{Digest, Sha256};
use tokio::sync::Semaphore;
use uuid::Uuid;

use crate::clock::{Clock, IdGen, SystemClock, V7Ids};
use crate::contract::{self, col};
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
/// Default number of commits in flight (uploads) at once.
pub const DEFAULT_CONCURRENCY: usize = 8;

/// Rows of one (run_id, target_crs) group, at most `batch_rows` of them.
#[derive(Debug, Clone)]
pub struct Flush {
    /// Partition value.
    pub run_id: String,
    /// Partition value (canonical).
    pub target_crs: String,
    /// 0-based position of this flush within its group (for commit keys).
    pub index_in_group: u64,
    /// The rows.
    pub batch: RecordBatch,
}

/// Group validated batches by (run_id, target_crs), in order of first appearance, and cut
/// each group into flushes of at most `batch_rows` rows (input order kept within a group).
pub fn plan_flushes(batches: &[RecordBatch], batch_rows: usize) -> Result<Vec<Flush>> {
    if batch_rows == 0 {
        return Err(Error::Usage("--batch-rows must be at least 1".into()));
    }
    // One input, one contract version: the batches share their schema.
    let schema = batches
        .first()
        .map_or_else(contract::schema, |b| b.schema());
    let all = arrow_select::concat::concat_batches(&schema, batches)?;
    let run = all.column(col::RUN_ID).as_string::<i32>();
    let crs = all.column(col::TARGET_CRS).as_string::<i32>();
    let mut group_of: HashMap<(&str, &str), usize> = HashMap::new();
    let mut groups: Vec<((&str, &str), Vec<u32>)> = Vec::new();
    for i in 0..all.num_rows() {
        let k = (run.value(i), crs.value(i));
        let g = *group_of.entry(k).or_insert_with(|| {
            groups.push((k, Vec::new()));
            groups.len() - 1
        });
        let i = u32::try_from(i)
            .map_err(|_| Error::Usage("more than 4 billion events in one append".into()))?;
        groups[g].1.push(i);
    }
    // One gather per group, then zero-copy slices per flush: a take per flush costs a
    // fixed overhead per column that dominates at small --batch-rows.
    let mut out = Vec::new();
    for ((r, c), idx) in groups {
        let rows = idx.len();
        let group = arrow_select::take::take_record_batch(&all, &UInt32Array::from(idx))?;
        for (n, start) in (0..rows).step_by(batch_rows).enumerate() {
            out.push(Flush {
                run_id: r.to_string(),
                target_crs: c.to_string(),
                index_in_group: n as u64,
                batch: group.slice(start, batch_rows.min(rows - start)),
            });
        }
    }
    Ok(out)
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

/// Drain commits in flush order, showing each to `on_commit` as it lands; stop at the
/// first error (commits already landed stay, complete).
async fn collect_commits(
    stream: impl futures::Stream<Item = Result<Pointer>>,
    mut on_commit: impl FnMut(&Pointer),
) -> Result<Vec<Pointer>> {
    futures::pin_mut!(stream);
    let mut out = Vec::new();
    while let Some(r) = stream.next().await {
        let p = r?;
        on_commit(&p);
        out.push(p);
    }
    Ok(out)
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
    /// The store written to.
    pub fn store(&self) -> &Arc<dyn AtomicPublisher> {
        &self.store
    }

    /// Append validated batches (see [`crate::input::parse_validated`]); `on_commit` sees
    /// each commit as it lands, in flush order. Returns every pointer.
    pub async fn append(
        &self,
        batches: &[RecordBatch],
        on_commit: impl FnMut(&Pointer),
    ) -> Result<Vec<Pointer>> {
        if let Some(k) = &self.commit_key {
            if k.is_empty() || k.len() > 256 || k.chars().any(char::is_control) {
                return Err(Error::Usage(
                    "--commit-key must be 1 to 256 printable characters".into(),
                ));
            }
        }
        let flushes = plan_flushes(batches, self.batch_rows)?;
        let encoders = Arc::new(Semaphore::new(self.encoders.max(1)));
        if let Some(key) = &self.commit_key {
            return self.append_keyed(key, flushes, encoders, on_commit).await;
        }
        let stream = futures::stream::iter(flushes.into_iter().map(|f| {
            let id = self.ids.commit_id().to_string();
            let encoders = encoders.clone();
            async move {
                let enc = self.encode_flush(&f, &id, encoders).await?;
                self.publish_flush(&f, id, enc).await
            }
        }))
        .buffered(self.concurrency);
        collect_commits(stream, on_commit).await
    }

    /// With a commit key: encode every flush, claim the key for exactly this payload
    /// ([`crate::commit_key`]), and only then publish. A key used for another payload is
    /// refused before anything is published; a retried job finds its own claim and parts.
    async fn append_keyed(
        &self,
        key: &str,
        flushes: Vec<Flush>,
        encoders: Arc<Semaphore>,
        on_commit: impl FnMut(&Pointer),
    ) -> Result<Vec<Pointer>> {
        let encoded: Vec<(Flush, String, EncodedPart)> =
            futures::stream::iter(flushes.into_iter().map(|f| {
                let id =
                    derived_commit_id(&f.run_id, &f.target_crs, key, f.index_in_group).to_string();
                let encoders = encoders.clone();
                async move {
                    let enc = self.encode_flush(&f, &id, encoders).await?;
                    Ok::<_, Error>((f, id, enc))
                }
            }))
            .buffered(self.encoders.max(1))
            .try_collect()
            .await?;
        let commits = encoded
            .iter()
            .map(|(f, id, enc)| crate::commit_key::ClaimedCommit {
                run_id: f.run_id.clone(),
                target_crs: f.target_crs.clone(),
                commit_id: id.clone(),
                sha256: enc.sha256.clone(),
                rows: enc.rows,
            })
            .collect();
        let claimed =
            crate::commit_key::claim(self.store.as_ref(), key, commits, rfc3339(self.clock.now()))
                .await?;
        tracing::info!(commit_key = key, ?claimed, "commit key claimed");
        let stream = futures::stream::iter(
            encoded
                .into_iter()
                .map(|(f, id, enc)| async move { self.publish_flush(&f, id, enc).await }),
        )
        .buffered(self.concurrency);
        collect_commits(stream, on_commit).await
    }

    /// Encode one flush (on a blocking thread, at most `encoders` at once) and refuse it
    /// when it is over the single-PUT limit.
    async fn encode_flush(
        &self,
        f: &Flush,
        commit_id: &str,
        encoders: Arc<Semaphore>,
    ) -> Result<EncodedPart> {
        let permit = encoders
            .acquire_owned()
            .await
            .map_err(|e| Error::Internal(e.to_string()))?;
        let batch = f.batch.clone();
        let id = commit_id.to_string();
        let enc: EncodedPart = tokio::task::spawn_blocking(move || encode::encode(&batch, &id))
            .await
            .map_err(|e| Error::Internal(format!("encoder failed: {e}")))??;
        drop(permit);
        if enc.bytes.len() > self.max_part_bytes {
            return Err(Error::Usage(format!(
                "the flush of {} rows for run_id={} target_crs={} encodes to {} bytes, over the {}-byte limit of one create-only PUT; lower --batch-rows",
                enc.rows, f.run_id, f.target_crs, enc.bytes.len(), self.max_part_bytes
            )));
        }
        Ok(enc)
    }

    /// Publish an encoded flush: the part, then its pointer, both create-only.
    async fn publish_flush(
        &self,
        f: &Flush,
        commit_id: String,
        enc: EncodedPart,
    ) -> Result<Pointer> {
        let part_key = keys::part_key(&f.run_id, &f.target_crs, &commit_id);
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
            run_id: f.run_id.clone(),
            target_crs: f.target_crs.clone(),
            part_path: part_key,
            row_count: enc.rows,
            size_bytes: enc.bytes.len() as u64,
            schema_version: enc.schema_version.clone(),
            sha256: enc.sha256.clone(),
            committed_utc: rfc3339(self.clock.now()),
            first_sequence: enc.sequence.0,
            last_sequence: enc.sequence.1,
            min_event_time_utc: rfc3339_us(enc.event_time_us.0),
            max_event_time_utc: rfc3339_us(enc.event_time_us.1),
            tool_version: tool_version(),
            commit_key: self.commit_key.clone(),
            adopted: false,
        };
        let pkey = keys::pointer_key(&f.run_id, &commit_id);
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
