//! [`Sink`]: a job feeds events as it produces them; the sink validates each batch on
//! arrival, buffers rows per (run_id, target_crs) partition, commits a partition when it
//! holds `batch_rows` rows or when its oldest row has waited `max_delay`, keeps at most
//! `max_in_flight` commits in flight (`write` waits for a free slot rather than growing
//! memory), and [`finish`](Sink::finish) commits the rest and returns every pointer.
//!
//! Guarantees:
//! - A batch is taken as `lineage append` takes Arrow input: columns matched by name to a
//!   registered contract version, lossless string re-encodings accepted
//!   ([`crate::write::conform`]); the sink writes one version, the requested one or the first
//!   accepted batch's (single events: the newest), widening older batches with null
//!   columns (see `version`).
//! - A refused batch (a schema the contract does not accept, a row that breaks it) is
//!   refused whole, naming the field (and the row, 1-based within that batch); nothing of
//!   it is kept, and the sink stays usable.
//! - Every commit is complete (part, then pointer), as in `lineage append`; the commits
//!   returned by `finish` are exactly those published, in the order they were cut.
//! - Dropped without `finish` or `abort`: buffered rows are discarded and never published
//!   (a warning is logged saying how many); commits already started run to their end.
//! - Time comes from the writer's injected [`Clock`](crate::base::clock::Clock), and is read
//!   only when the sink is called: a caller that may go quiet for longer than
//!   `max_delay` calls [`tick`](Sink::tick) (at [`next_deadline`](Sink::next_deadline)).

use std::time::Duration;

use arrow_array::RecordBatch;
use chrono::{DateTime, Utc};

use crate::base::error::{Error, Result};
use crate::format::pointer::Pointer;
use crate::schema::events::{EventBuilder, EventRow, Origin, SourcedBatch};
use crate::write::flush::Flush;
use crate::write::flush::{
    WriteConfig, DEFAULT_BATCH_ROWS, DEFAULT_CONCURRENCY, DEFAULT_MAX_BUFFERED_BYTES,
};
use crate::write::stream::commit::Committer;
use crate::write::stream::group::Grouper;
use crate::write::stream::version::VersionPin;
use crate::write::validate::Validator;

/// How a [`Sink`] cuts and commits flushes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SinkOptions {
    /// Most rows per commit (one Parquet part each); at least 1.
    pub batch_rows: usize,
    /// Commit a partition once its oldest buffered row has waited this long; `None`:
    /// only when full, or at `flush`/`finish`.
    pub max_delay: Option<Duration>,
    /// Most commits (encode + publish) in flight; `write` waits beyond that. At least 1.
    pub max_in_flight: usize,
    /// Memory for buffered rows; beyond it the fullest partitions move to a temp file.
    pub max_buffered_bytes: usize,
    /// Contract version to write (`lineage append --schema-version`); `None`: the version
    /// of the first batch written (the newest when that is single events).
    pub schema_version: Option<String>,
}

impl Default for SinkOptions {
    fn default() -> Self {
        Self {
            batch_rows: DEFAULT_BATCH_ROWS,
            max_delay: None,
            max_in_flight: DEFAULT_CONCURRENCY,
            max_buffered_bytes: DEFAULT_MAX_BUFFERED_BYTES,
            schema_version: None,
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
enum State {
    Open,
    /// A commit failed: the sink takes no more rows.
    Failed(String),
    Closed,
}

/// A streaming writer: see the module docs. Create it with [`Writer::sink`](crate::Writer::sink).
#[derive(Debug)]
pub struct Sink {
    writer: WriteConfig,
    max_delay: Option<chrono::Duration>,
    validator: Validator,
    version: VersionPin,
    grouper: Grouper,
    committer: Committer,
    pointers: Vec<Pointer>,
    state: State,
}

impl Sink {
    /// A sink deriving commit ids from `commit_key` when given (the caller claimed it).
    pub(crate) fn open(
        writer: WriteConfig,
        opts: &SinkOptions,
        commit_key: Option<String>,
    ) -> Result<Self> {
        if opts.batch_rows == 0 {
            return Err(Error::usage("batch_rows must be at least 1"));
        }
        let max_delay = match opts.max_delay {
            None => None,
            Some(d) => Some(
                chrono::Duration::from_std(d)
                    .map_err(|_| Error::usage(format!("max_delay {d:?} is too long")))?,
            ),
        };
        let committer = Committer::new(writer.clone(), opts.max_in_flight, commit_key)?;
        Ok(Self {
            writer,
            max_delay,
            validator: Validator::new(),
            version: VersionPin::new(opts.schema_version.as_deref())?,
            grouper: Grouper::new(opts.batch_rows, opts.max_buffered_bytes),
            committer,
            pointers: Vec::new(),
            state: State::Open,
        })
    }

    /// Validate `batch` and buffer it; commits the partitions it fills and those past
    /// `max_delay`. Waits while `max_in_flight` commits are in flight. Its schema is taken
    /// as `lineage append` takes an Arrow file's (columns by name, any registered contract
    /// version, lossless string re-encodings: [`crate::write::conform`]). A refused batch names
    /// the field (and row, 1-based within `batch`), and nothing of it is kept.
    pub async fn write(&mut self, batch: RecordBatch) -> Result<()> {
        self.check_open()?;
        let batch = crate::write::conform::plan(batch.schema().as_ref())?.apply(&batch)?;
        let sb = SourcedBatch::new(batch, Origin::Rows { first: 1 });
        let valid = self.accept(sb, true)?;
        self.buffer(valid, false).await
    }

    /// [`write`](Self::write) for single events (or a few): they form one batch.
    pub async fn write_events(&mut self, events: &[EventRow<'_>]) -> Result<()> {
        if events.is_empty() {
            return Ok(());
        }
        self.check_open()?;
        let mut b = EventBuilder::new();
        for e in events {
            b.push(e);
        }
        let sb = SourcedBatch::new(b.finish()?, Origin::Rows { first: 1 });
        // Single events are text-like: written as the newest version unless requested.
        let valid = self.accept(sb, false)?;
        self.buffer(valid, false).await
    }

    /// Write a batch in a contract version's schema whose origin names input lines (used
    /// by `append`; `typed`: the input's schema says its version, see `version`).
    pub(crate) async fn write_sourced(&mut self, sb: SourcedBatch, typed: bool) -> Result<()> {
        self.check_open()?;
        let valid = self.accept(sb, typed)?;
        self.buffer(valid, false).await
    }

    /// Write a batch that went through [`Validator::validate`] already; `held`: the
    /// caller keeps it in memory until the sink finishes (rows are then referred to, not
    /// copied, see `group`).
    pub(crate) async fn write_validated(
        &mut self,
        batch: RecordBatch,
        typed: bool,
        held: bool,
    ) -> Result<()> {
        self.check_open()?;
        let (batch, v) = self.version.conform(batch, typed)?;
        self.version.accept(v);
        self.buffer(batch, held).await
    }

    /// `sb` as the version this sink writes, validated; the version is fixed by the first
    /// batch accepted (a refused one fixes nothing).
    fn accept(&mut self, sb: SourcedBatch, typed: bool) -> Result<RecordBatch> {
        let (batch, v) = self.version.conform(sb.batch, typed)?;
        let valid = self.validator.validate(&SourcedBatch { batch, ..sb })?;
        self.version.accept(v);
        Ok(valid)
    }

    /// Buffer validated rows (`held`: see [`Grouper::push`]) and commit what they fill.
    async fn buffer(&mut self, valid: RecordBatch, held: bool) -> Result<()> {
        if valid.num_rows() == 0 {
            return Ok(());
        }
        let now = self.writer.clock.now();
        let mut flushes = self
            .grouper
            .push(&valid, now, held)
            .inspect_err(|e| self.fail(e))?;
        if let Some(d) = self.max_delay {
            flushes.extend(self.grouper.due(now, d).inspect_err(|e| self.fail(e))?);
        }
        self.commit(flushes).await
    }

    /// Commit the partitions whose oldest row has waited `max_delay` (by the clock now).
    pub async fn tick(&mut self) -> Result<()> {
        self.check_open()?;
        let Some(d) = self.max_delay else {
            return Ok(());
        };
        let flushes = self
            .grouper
            .due(self.writer.clock.now(), d)
            .inspect_err(|e| self.fail(e))?;
        self.commit(flushes).await
    }

    /// When the next partition becomes due under `max_delay` (`None`: nothing buffered,
    /// or no `max_delay`).
    pub fn next_deadline(&self) -> Option<DateTime<Utc>> {
        self.max_delay.and_then(|d| self.grouper.next_deadline(d))
    }

    /// Commit every buffered row now, as short flushes where a partition is not full, and
    /// wait until every commit in flight has landed (a durability point); the sink stays
    /// open.
    pub async fn flush(&mut self) -> Result<()> {
        self.check_open()?;
        let flushes = self.grouper.finish().inspect_err(|e| self.fail(e))?;
        self.commit(flushes).await?;
        let r = self.committer.drain().await;
        self.pointers.extend(self.committer.take_landed());
        r.inspect_err(|e| self.fail(e))
    }

    /// Commits cut and not yet landed.
    pub fn in_flight(&self) -> usize {
        self.committer.in_flight()
    }

    /// Rows buffered, not yet committed.
    pub fn buffered_rows(&self) -> usize {
        self.grouper.buffered_rows()
    }

    /// Bytes of buffered rows held in memory (the rest is spilled).
    pub fn buffered_bytes(&self) -> usize {
        self.grouper.buffered_bytes()
    }

    /// Bytes written to the spill file so far.
    pub fn spilled_bytes(&self) -> u64 {
        self.grouper.spilled_bytes()
    }

    /// Commits that have landed so far, in the order they were cut.
    pub fn committed(&self) -> &[Pointer] {
        &self.pointers
    }

    /// Collect the commits that have landed since the sink was last called, without
    /// waiting for any: a commit cut by [`tick`](Self::tick) (or by a `write`) lands after
    /// the call that cut it returned, and shows in [`committed`](Self::committed) once
    /// collected. After a failed commit: waits for the commits in flight, then the error.
    pub async fn collect_landed(&mut self) -> Result<()> {
        let r = self.committer.collect_ready().await;
        self.pointers.extend(self.committer.take_landed());
        r.inspect_err(|e| self.fail(e))
    }

    /// Commits that landed since the last call (used by `append` to print and forget them).
    pub(crate) fn take_landed(&mut self) -> Vec<Pointer> {
        self.pointers.extend(self.committer.take_landed());
        std::mem::take(&mut self.pointers)
    }

    /// Commit every buffered row, wait for every commit, and return all of them (those
    /// taken earlier by `append` excepted), in the order they were cut. After a failed
    /// commit: the first error, once every commit in flight has ended.
    pub async fn finish(mut self) -> Result<Vec<Pointer>> {
        let r = self.finish_inner().await;
        self.state = State::Closed;
        r?;
        Ok(std::mem::take(&mut self.pointers))
    }

    async fn finish_inner(&mut self) -> Result<()> {
        if let State::Failed(m) = &self.state {
            let m = m.clone();
            self.grouper.discard();
            self.committer.drain().await.ok();
            return Err(Error::usage(format!("the sink failed earlier: {m}")));
        }
        let flushes = self.grouper.finish()?;
        self.commit(flushes).await?;
        let r = self.committer.drain().await;
        self.pointers.extend(self.committer.take_landed());
        r
    }

    /// Discard the buffered rows (nothing of them is published), wait for the commits in
    /// flight, and return the commits that landed.
    pub async fn abort(mut self) -> Result<Vec<Pointer>> {
        let rows = self.grouper.discard();
        if rows > 0 {
            tracing::info!(rows, "sink aborted: buffered rows discarded, not published");
        }
        let r = self.committer.drain().await;
        self.pointers.extend(self.committer.take_landed());
        self.state = State::Closed;
        r?;
        Ok(std::mem::take(&mut self.pointers))
    }

    fn check_open(&self) -> Result<()> {
        match &self.state {
            State::Open => Ok(()),
            State::Failed(m) => Err(Error::usage(format!(
                "the sink failed earlier ({m}); it takes no more rows: finish or abort it"
            ))),
            State::Closed => Err(Error::internal("the sink is closed")),
        }
    }

    fn fail(&mut self, e: &Error) {
        self.state = State::Failed(e.to_string());
    }

    async fn commit(&mut self, flushes: Vec<Flush>) -> Result<()> {
        for f in flushes {
            if let Err(e) = self.committer.submit(f).await {
                self.fail(&e);
                self.pointers.extend(self.committer.take_landed());
                return Err(e);
            }
        }
        self.pointers.extend(self.committer.take_landed());
        Ok(())
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        if self.state != State::Closed {
            let rows = self.grouper.buffered_rows();
            let in_flight = self.committer.in_flight();
            tracing::warn!(
                rows,
                in_flight,
                "sink dropped without finish(): its buffered rows were discarded and not published; commits already started complete"
            );
        }
    }
}
