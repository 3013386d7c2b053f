//! The write path's façade: [`Writer`] takes its settings through `with_*` methods and
//! appends whole inputs ([`Writer::append`]) or events as a job makes them
//! ([`Writer::sink`]).
//!
//! Inside, the stream ([`crate::write::stream`]) groups rows into flushes per
//! (run_id, target_crs) and the commit step ([`crate::write::flush`]) encodes each once and
//! publishes the part, its pointer and its index entry, create-only, reading back after
//! ambiguous answers. With a commit key, the payload is digested while it is validated and
//! the key is claimed for exactly this payload ([`crate::write::commit_key`]) before the
//! first part, so that a key reused for another payload is refused with nothing published.
//! See docs/architecture.md for the commit protocol and its failure table.

use std::sync::Arc;

use arrow_array::RecordBatch;
use ed25519_dalek::SigningKey;

use crate::base::clock::{Clock, IdGen};
use crate::base::env::Environment;
use crate::base::error::{Error, Result};
use crate::base::param::{text, Param};
use crate::format::pointer::Pointer;
use crate::format::writer_record::WriterRecord;
use crate::publish::AtomicPublisher;
use crate::write::flush::WriteConfig;
use crate::write::input::source::BatchSource;
use crate::write::stream::append::AppendSummary;
use crate::write::stream::sink::{Sink, SinkOptions};

pub use crate::write::flush::{DEFAULT_BATCH_ROWS, DEFAULT_CONCURRENCY, MAX_PART_BYTES};

/// Appends events to a store. Cheap to clone; configure with the `with_*` methods.
#[derive(Debug, Clone)]
pub struct Writer {
    cfg: WriteConfig,
}

impl Writer {
    /// A writer with the system clock, UUIDv7 ids and default sizes.
    pub fn new(store: Arc<dyn AtomicPublisher>) -> Self {
        Self {
            cfg: WriteConfig::new(store),
        }
    }
    /// Inject the clock.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.cfg.clock = clock;
        self
    }
    /// Inject the id generator.
    pub fn with_ids(mut self, ids: Arc<dyn IdGen>) -> Self {
        self.cfg.ids = ids;
        self
    }
    /// Rows per flush (at least 1).
    pub fn with_batch_rows(mut self, n: usize) -> Self {
        self.cfg.batch_rows = n;
        self
    }
    /// Commits in flight at once (at least 1).
    pub fn with_concurrency(mut self, n: usize) -> Self {
        self.cfg.concurrency = n.max(1);
        self
    }
    /// Derive commit ids from this key (idempotent retries), see [`crate::format::claim::derived_commit_id`].
    pub fn with_commit_key(mut self, key: Option<String>) -> Self {
        self.cfg.commit_key = key;
        self
    }
    /// Resume a job retried under the commit key: flushes already committed under it are
    /// kept (not published again, reported by [`kept`](Self::kept) and
    /// [`AppendSummary::kept`]), the rest written; a flush whose payload differs from the
    /// committed one is reported, not refused. See [`crate::write::resume`].
    pub fn with_resume(mut self, resume: bool) -> Self {
        self.cfg.resume = resume;
        self
    }
    /// Whether the commit `commit_id` was kept by resuming (not published by this writer).
    pub fn kept(&self, commit_id: &str) -> Option<crate::write::resume::Kept> {
        self.cfg.kept.get(commit_id)
    }
    /// Largest part in bytes (tests lower it).
    pub fn with_max_part_bytes(mut self, n: usize) -> Self {
        self.cfg.max_part_bytes = n;
        self
    }
    /// Memory for rows waiting for their partition to fill before they spill to a temp
    /// file (see [`crate::write::stream`]).
    pub fn with_max_buffered_bytes(mut self, n: usize) -> Self {
        self.cfg.max_buffered_bytes = n;
        self
    }
    /// Contract version to write (`append --schema-version`); `None`: typed input (Arrow,
    /// Parquet, batches given to [`append`](Self::append)) keeps its own version, text
    /// input is written as the newest. Older input is widened with null columns; a version
    /// older than the input is refused.
    pub fn with_schema_version(mut self, v: Option<String>) -> Self {
        self.cfg.schema_version = v;
        self
    }
    /// Errors listed when an input is refused (`append --max-errors`; `0`: all; default
    /// 20): the whole input is validated either way, and the error counts them all.
    pub fn with_max_errors(mut self, n: usize) -> Self {
        self.cfg.max_errors = n;
        self
    }
    /// Sign every part with this writer key (`append --signing-key`, made by `lineage
    /// keygen`): its footer then ties the part's bytes to its store, commit id and rows,
    /// so `repair --writer-key` can prove an orphan part is this writer's
    /// ([`crate::parts::writer_sig`]). Without a key, parts are unsigned (as before).
    /// A keyed retry must use the key (or no key) of its first attempt: the signature is
    /// part of the bytes its read-back compares.
    pub fn with_signing_key(mut self, key: Option<SigningKey>) -> Self {
        self.cfg.signer = key.map(Arc::new);
        self
    }
    /// Record in every pointer who writes ([`WriterRecord`]): the host name, `process` (the
    /// program and its version), and the platform variables of the allow-list
    /// ([`crate::format::writer_record::PLATFORM_VARS`]), read from `env` once, now. Never
    /// a secret: no other variable is read. Without it, pointers carry no record (or only
    /// the writer key id and request id).
    pub fn with_environment(mut self, env: &dyn Environment, process: &str) -> Self {
        self.cfg.record = Some(WriterRecord::from_env(env, process));
        self
    }
    /// The request id the pointers' record carries (a Lambda invocation's `aws_request_id`).
    pub fn with_request_id(mut self, id: Option<String>) -> Self {
        self.cfg.request_id = id;
        self
    }
    /// The writer key's id, when parts are signed.
    pub fn signing_key_id(&self) -> Option<String> {
        self.cfg
            .signer
            .as_ref()
            .map(|k| crate::parts::writer_sig::key_id(&k.verifying_key()))
    }
    /// The store written to.
    pub fn store(&self) -> &Arc<dyn AtomicPublisher> {
        &self.cfg.store
    }
    /// The commit key, if any.
    pub fn commit_key(&self) -> Option<&str> {
        self.cfg.commit_key.as_deref()
    }
    /// Rows per flush.
    pub fn batch_rows(&self) -> usize {
        self.cfg.batch_rows
    }
    /// Commits in flight at once.
    pub fn concurrency(&self) -> usize {
        self.cfg.concurrency
    }
    /// Largest part in bytes.
    pub fn max_part_bytes(&self) -> usize {
        self.cfg.max_part_bytes
    }
    /// Memory budget of buffered rows.
    pub fn max_buffered_bytes(&self) -> usize {
        self.cfg.max_buffered_bytes
    }
    /// The contract version requested, if any.
    pub fn schema_version(&self) -> Option<&str> {
        self.cfg.schema_version.as_deref()
    }
    /// The injected clock.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.cfg.clock
    }

    /// Append validated batches (see [`crate::write::input::parse_validated`]); `on_commit` sees
    /// each commit as it lands, in the order flushes are cut. Returns every pointer.
    /// Memory beyond `batches` is bounded as for a [`Sink`].
    /// The batches are written as the contract version of the first (or the one set with
    /// [`with_schema_version`](Self::with_schema_version)); a batch that cannot be written
    /// as that version is refused before anything is published.
    pub async fn append(
        &self,
        batches: &[RecordBatch],
        on_commit: impl FnMut(&Pointer),
    ) -> Result<Vec<Pointer>> {
        crate::write::stream::append::check_versions(batches, self.schema_version())?;
        let src = Arc::new(crate::write::stream::append::Validated(batches.to_vec()));
        Ok(
            crate::write::stream::append::append(&self.cfg, src, true, on_commit)
                .await?
                .pointers,
        )
    }

    /// Append everything `source` holds (a file or spooled standard input, see
    /// [`crate::write::input::Input`]), validating all of it before the first commit;
    /// `on_commit` sees each commit as it lands, and the pointers are kept when `keep` says.
    pub async fn append_source(
        &self,
        source: Arc<dyn BatchSource>,
        keep: bool,
        on_commit: impl FnMut(&Pointer),
    ) -> Result<AppendSummary> {
        crate::write::stream::append::append(&self.cfg, source, keep, on_commit).await
    }

    /// A [`Sink`] writing to this writer's store with its clock and id generator. Must be
    /// called inside a tokio runtime (the sink's commits run on it); a non-async caller
    /// enters one first (`let _g = runtime.enter();`) and drives the sink's futures with
    /// `runtime.block_on(...)`. A commit key with `max_delay` is refused: flushes cut by
    /// `max_delay` depend on timing, so a retry could not re-derive the same commits.
    /// Without `max_delay` a keyed sink cuts flushes only when a partition reaches
    /// `batch_rows` (or on `flush`/`finish`), so a job that writes the same rows in the
    /// same order cuts the same flushes and, with [`with_resume`](Self::with_resume),
    /// resumes.
    pub fn sink(&self, opts: SinkOptions) -> Result<Sink> {
        if self.cfg.resume && self.cfg.commit_key.is_none() {
            return Err(Error::usage(text![
                Param::Resume,
                " needs ",
                Param::CommitKey
            ]));
        }
        if self.cfg.commit_key.is_some() && opts.max_delay.is_none() {
            crate::write::resume::check_key(self.cfg.commit_key.as_deref())?;
            return Sink::open(self.cfg.clone(), &opts, self.cfg.commit_key.clone());
        }
        if self.cfg.commit_key.is_some() {
            return Err(Error::usage(text!["a sink with max_delay cannot use a commit key: its flushes depend on when rows arrive, so a retried job would not cut the same commits; use append with ", Param::CommitKey, " for retried jobs"]));
        }
        Sink::open(self.cfg.clone(), &opts, None)
    }
}
