//! Buffering validated rows per (run_id, target_crs) partition until a flush is full.
//!
//! A partition's rows are buffered in input order and cut into a flush when they reach
//! `batch_rows`; at the end of the input every partition's remainder is a last, shorter
//! flush, in order of first appearance. These are exactly the flushes of grouping the
//! whole input first and cutting each group into `batch_rows` chunks, so the flush index
//! within a partition (which commit keys derive ids from) does not depend on how the
//! input is chunked or interleaved; only the order in which flushes are cut differs.
//!
//! Memory: buffered rows are copied out of the input batch (a slice would keep the whole
//! input batch alive), unless the caller holds the input in memory anyway
//! ([`Grouper::push`] with `held`: `Writer::append`'s batches, the rows `append`'s first pass
//! kept): then a partition keeps only the row numbers and the gathering copy is made by
//! the encoder thread ([`FlushRows::into_batch`]), so the grouping thread (one core, the
//! serial part of an append) does no copying at all, and flushes are never concatenated
//! there either. When the rows waiting in all partitions exceed the memory budget,
//! the partitions holding the most are moved to a spill file ([`crate::write::stream::spill`]) until
//! half the budget is used, and read back when their flush is cut. Spilling never changes
//! which rows form a flush, so it needs no rule of its own to stay deterministic: the
//! flushes depend only on the input and `batch_rows`.
//!
//! A [`Sink`](super::Sink) with `max_delay` also cuts a partition early, when its oldest
//! buffered row has waited that long ([`Grouper::due`]).

use arrow_array::{RecordBatch, UInt32Array};
use chrono::{DateTime, Utc};

use crate::base::error::Result;
use crate::write::flush::{Flush, FlushRows};
use crate::write::stream::partition::PartitionIndex;
use crate::write::stream::spill::{Segment, SpillFile};

/// Buffered rows of one partition from one input batch.
#[derive(Debug, Clone)]
enum Piece {
    /// Copied out of their batch (or the whole batch).
    Owned(RecordBatch),
    /// Rows `rows` of a batch the caller holds in memory anyway: nothing copied yet.
    Held { batch: RecordBatch, rows: Vec<u32> },
}

impl Piece {
    fn rows(&self) -> usize {
        match self {
            Piece::Owned(b) => b.num_rows(),
            Piece::Held { rows, .. } => rows.len(),
        }
    }

    fn into_owned(self) -> Result<RecordBatch> {
        match self {
            Piece::Owned(b) => Ok(b),
            Piece::Held { batch, rows } => Ok(arrow_select::take::take_record_batch(
                &batch,
                &UInt32Array::from(rows),
            )?),
        }
    }
}

/// The rows of a cut flush, from its pieces: one batch when one piece owns them all, the
/// owned pieces to concatenate, or the rows to gather from the held batches.
fn flush_rows(mut pieces: Vec<Piece>) -> Result<FlushRows> {
    if let [Piece::Owned(_)] = pieces.as_slice() {
        if let Some(Piece::Owned(b)) = pieces.pop() {
            return Ok(FlushRows::Batch(b));
        }
    }
    if pieces.iter().all(|p| matches!(p, Piece::Owned(_))) {
        return Ok(FlushRows::Pieces(
            pieces
                .into_iter()
                .map(Piece::into_owned)
                .collect::<Result<_>>()?,
        ));
    }
    let total = pieces.iter().map(Piece::rows).sum();
    let mut sources = Vec::with_capacity(pieces.len());
    let mut rows = Vec::with_capacity(total);
    for (s, p) in pieces.into_iter().enumerate() {
        match p {
            Piece::Owned(b) => {
                rows.extend((0..b.num_rows()).map(|r| (s, r)));
                sources.push(b);
            }
            Piece::Held { batch, rows: r } => {
                rows.extend(r.into_iter().map(|r| (s, r as usize)));
                sources.push(batch);
            }
        }
    }
    Ok(FlushRows::Gather { sources, rows })
}

#[derive(Debug, Default)]
struct Buffer {
    pieces: Vec<Piece>,
    spilled: Vec<Segment>,
    rows: usize,
    mem_bytes: usize,
    oldest: Option<DateTime<Utc>>,
    next_index: u64,
}

/// Partitions and their buffered rows.
#[derive(Debug)]
pub(crate) struct Grouper {
    batch_rows: usize,
    budget: usize,
    index: PartitionIndex,
    buffers: Vec<Buffer>,
    mem_bytes: usize,
    spill: Option<SpillFile>,
}

impl Grouper {
    /// Flushes of at most `batch_rows` (≥ 1) rows; at most `budget` bytes of rows held in
    /// memory while waiting.
    pub(crate) fn new(batch_rows: usize, budget: usize) -> Self {
        Self {
            batch_rows: batch_rows.max(1),
            budget,
            index: PartitionIndex::default(),
            buffers: Vec::new(),
            mem_bytes: 0,
            spill: None,
        }
    }

    /// Every partition seen, in order of first appearance.
    pub(crate) fn partitions(&self) -> Vec<(String, String)> {
        (0..self.index.len())
            .map(|p| {
                let (r, c) = self.index.name(p);
                (r.to_string(), c.to_string())
            })
            .collect()
    }

    /// Rows waiting (in memory or spilled).
    pub(crate) fn buffered_rows(&self) -> usize {
        self.buffers.iter().map(|b| b.rows).sum()
    }

    /// Bytes of rows waiting in memory.
    pub(crate) fn buffered_bytes(&self) -> usize {
        self.mem_bytes
    }

    /// Bytes written to the spill file so far.
    pub(crate) fn spilled_bytes(&self) -> u64 {
        self.spill.as_ref().map_or(0, SpillFile::len)
    }

    /// Buffer a validated batch; returns the flushes it completed. `held`: the caller
    /// keeps `batch` in memory until the append ends (so keeping a reference costs
    /// nothing): only row numbers are kept, the copy is made when the flush is encoded,
    /// and none of it counts against the memory budget. Otherwise the rows are copied.
    pub(crate) fn push(
        &mut self,
        batch: &RecordBatch,
        now: DateTime<Utc>,
        held: bool,
    ) -> Result<Vec<Flush>> {
        let mut out = Vec::new();
        let whole = batch.num_rows();
        for (p, rows) in self.index.split(batch) {
            if self.buffers.len() <= p {
                self.buffers.resize_with(p + 1, Buffer::default);
            }
            let mut rest = &rows[..];
            while !rest.is_empty() {
                let room = self.batch_rows - self.buffers[p].rows;
                let n = room.min(rest.len());
                // The whole batch for one partition is kept as it is (no copy).
                let (piece, bytes) = if n == whole {
                    (
                        Piece::Owned(batch.clone()),
                        if held { 0 } else { data_bytes(batch) },
                    )
                } else if held {
                    let rows = rest[..n].to_vec();
                    (
                        Piece::Held {
                            batch: batch.clone(),
                            rows,
                        },
                        0,
                    )
                } else {
                    let b = arrow_select::take::take_record_batch(
                        batch,
                        &UInt32Array::from(rest[..n].to_vec()),
                    )?;
                    let bytes = data_bytes(&b);
                    (Piece::Owned(b), bytes)
                };
                let b = &mut self.buffers[p];
                b.pieces.push(piece);
                b.rows += n;
                b.mem_bytes += bytes;
                b.oldest.get_or_insert(now);
                self.mem_bytes += bytes;
                if b.rows == self.batch_rows {
                    out.push(self.cut(p)?);
                }
                rest = &rest[n..];
            }
        }
        if self.mem_bytes > self.budget {
            self.spill_largest()?;
        }
        Ok(out)
    }

    /// Cut every partition whose oldest buffered row is at least `max_delay` old.
    pub(crate) fn due(
        &mut self,
        now: DateTime<Utc>,
        max_delay: chrono::Duration,
    ) -> Result<Vec<Flush>> {
        let due: Vec<usize> = (0..self.buffers.len())
            .filter(|&p| self.buffers[p].oldest.is_some_and(|t| now - t >= max_delay))
            .collect();
        due.into_iter().map(|p| self.cut(p)).collect()
    }

    /// When the next partition becomes due under `max_delay`.
    pub(crate) fn next_deadline(&self, max_delay: chrono::Duration) -> Option<DateTime<Utc>> {
        self.buffers
            .iter()
            .filter_map(|b| b.oldest)
            .min()
            .map(|t| t + max_delay)
    }

    /// Cut every partition's remainder, in order of first appearance.
    pub(crate) fn finish(&mut self) -> Result<Vec<Flush>> {
        (0..self.buffers.len())
            .filter(|&p| self.buffers[p].rows > 0)
            .collect::<Vec<_>>()
            .into_iter()
            .map(|p| self.cut(p))
            .collect()
    }

    /// Forget every buffered row.
    pub(crate) fn discard(&mut self) -> usize {
        let rows = self.buffered_rows();
        for b in &mut self.buffers {
            b.pieces.clear();
            b.spilled.clear();
            b.rows = 0;
            b.mem_bytes = 0;
            b.oldest = None;
        }
        self.mem_bytes = 0;
        rows
    }

    fn cut(&mut self, p: usize) -> Result<Flush> {
        let b = &mut self.buffers[p];
        let mut pieces = Vec::new();
        if let Some(spill) = &self.spill {
            for seg in b.spilled.drain(..) {
                pieces.extend(spill.read(seg)?.into_iter().map(Piece::Owned));
            }
        }
        pieces.append(&mut b.pieces);
        self.mem_bytes -= b.mem_bytes;
        b.mem_bytes = 0;
        b.rows = 0;
        b.oldest = None;
        let index_in_group = b.next_index;
        b.next_index += 1;
        let (run_id, target_crs) = self.index.name(p);
        Ok(Flush {
            run_id: run_id.to_string(),
            target_crs: target_crs.to_string(),
            index_in_group,
            rows: flush_rows(pieces)?,
        })
    }

    /// Move the partitions holding the most memory to the spill file until half the
    /// budget is in use.
    fn spill_largest(&mut self) -> Result<()> {
        let mut order: Vec<usize> = (0..self.buffers.len())
            .filter(|&p| self.buffers[p].mem_bytes > 0)
            .collect();
        order.sort_by_key(|&p| std::cmp::Reverse(self.buffers[p].mem_bytes));
        let spill = match &mut self.spill {
            Some(s) => s,
            None => self.spill.insert(SpillFile::new()?),
        };
        for p in order {
            if self.mem_bytes <= self.budget / 2 {
                break;
            }
            let b = &mut self.buffers[p];
            // Held rows cost nothing in memory and are never counted, so a partition
            // chosen here holds copies; any held rows among them are copied now.
            let pieces: Vec<RecordBatch> = b
                .pieces
                .drain(..)
                .map(Piece::into_owned)
                .collect::<Result<_>>()?;
            let seg = spill.write(&pieces)?;
            b.spilled.push(seg);
            self.mem_bytes -= b.mem_bytes;
            b.mem_bytes = 0;
        }
        tracing::debug!(
            spilled_bytes = spill.len(),
            in_memory = self.mem_bytes,
            "buffered rows over the memory budget moved to the spill file"
        );
        Ok(())
    }
}

/// Bytes of data a batch holds (buffer lengths, not their capacity: builders reserve
/// ahead, and reserved pages no row touched are not resident).
pub(crate) fn data_bytes(batch: &arrow_array::RecordBatch) -> usize {
    use arrow_array::Array;
    batch
        .columns()
        .iter()
        .map(|c| {
            let d = c.to_data();
            d.buffers().iter().map(|b| b.len()).sum::<usize>()
                + d.nulls().map_or(0, |n| n.buffer().len())
        })
        .sum()
}
