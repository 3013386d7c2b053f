//! The digest a commit key is claimed for (claim format 2, see [`crate::write::commit_key`]),
//! computed in the validation pass without buffering or encoding anything: the same
//! partitions and flush cuts as [`crate::write::stream::group`], a sha256 over each flush's rows.
//!
//! A flush's content digest is sha256 over its rows in order, each row its values in the
//! order of the columns of the contract version written (15 for 1.2.0), each value a tag
//! byte (0 null, 1 present) and, when present, the value: strings as a u32 little-endian
//! length and UTF-8 bytes, integers and timestamps as little-endian i64/i32, floats as
//! the little-endian bits of the f64, booleans as one byte (0 false, 1 true). Each partition hashes one line per flush,
//! `run_id \t target_crs \t commit_id \t rows \t schema_version \t content \n`; the
//! payload digest is sha256 over the partitions' line digests (lower-case hex, one per
//! line) in order of first appearance. (The version is in the line: the same events
//! written as another version make other parts.)

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int32Type, Int64Type, TimestampMicrosecondType};
use arrow_array::{Array, RecordBatch};
use sha2::{Digest, Sha256};

use crate::base::error::{Error, Result};
use crate::base::param::{text, Param};
use crate::format::claim::derived_commit_id;
use crate::schema::contract::{self, Kind};
use crate::write::stream::partition::PartitionIndex;

/// What the first pass learned about a keyed payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PayloadSummary {
    /// The payload digest (claim format 2).
    pub payload_sha256: String,
    /// Flushes (commits) the payload makes.
    pub flushes: u64,
    /// Rows in all of them.
    pub rows: u64,
}

#[derive(Debug, Default)]
struct Part {
    rows: u64,
    plain: u64,
    index: u64,
    content: Sha256,
    lines: Sha256,
}

/// Digests a keyed payload batch by batch.
#[derive(Debug)]
pub(crate) struct PayloadDigest {
    key: String,
    batch_rows: u64,
    max_part_bytes: usize,
    index: PartitionIndex,
    parts: Vec<Part>,
    flushes: u64,
    rows: u64,
    row: Vec<u8>,
    /// The column kinds and version of the batches (one version per append).
    kinds: Vec<Kind>,
    version: String,
}

/// An upper bound of the Parquet size of a flush whose values take `plain` bytes as
/// serialised here: every value plain-encoded (dictionary pages are at most 1 MiB per
/// column), zstd's worst-case expansion, a page header with statistics per 1,024 values
/// or MiB per column, and the footer.
fn encoded_bound(plain: u64, rows: u64, cols: usize) -> u64 {
    let cols = cols as u64;
    plain
        + plain / 64
        + cols * (1 << 20)
        + cols * (rows / 1024 + plain / (1 << 20) + 2) * 512
        + (1 << 20)
}

impl PayloadDigest {
    pub(crate) fn new(key: &str, batch_rows: usize, max_part_bytes: usize) -> Self {
        Self {
            key: key.to_string(),
            batch_rows: batch_rows.max(1) as u64,
            max_part_bytes,
            index: PartitionIndex::default(),
            parts: Vec::new(),
            flushes: 0,
            rows: 0,
            row: Vec::with_capacity(512),
            kinds: Vec::new(),
            version: String::new(),
        }
    }

    /// Add a validated batch (every batch of a payload in the same contract version).
    pub(crate) fn push(&mut self, batch: &RecordBatch) -> Result<()> {
        if self.kinds.len() != batch.num_columns() {
            let v = contract::version_of_schema(batch.schema().as_ref())?;
            self.kinds = v.columns.iter().map(|c| c.kind).collect();
            self.version = v.version.clone();
        }
        for (p, rows) in self.index.split(batch) {
            if self.parts.len() <= p {
                self.parts.resize_with(p + 1, Part::default);
            }
            for i in rows {
                self.row.clear();
                serialize_row(batch, &self.kinds, i as usize, &mut self.row);
                let part = &mut self.parts[p];
                part.content.update(&self.row);
                part.plain += self.row.len() as u64;
                part.rows += 1;
                if part.rows == self.batch_rows {
                    self.close(p)?;
                }
            }
        }
        Ok(())
    }

    fn close(&mut self, p: usize) -> Result<()> {
        let (run, crs) = self.index.name(p);
        let part = &mut self.parts[p];
        let bound = encoded_bound(part.plain, part.rows, self.kinds.len());
        if bound > self.max_part_bytes as u64 {
            return Err(Error::usage(text![format!("the flush of {} rows for run_id={run} target_crs={crs} may encode to up to {bound} bytes, over the {}-byte limit of one create-only PUT; lower ", part.rows, self.max_part_bytes), Param::BatchRows]));
        }
        let id = derived_commit_id(run, crs, &self.key, part.index);
        let content = hex::encode(part.content.finalize_reset());
        part.lines.update(
            format!(
                "{run}\t{crs}\t{id}\t{}\t{}\t{content}\n",
                part.rows, self.version
            )
            .as_bytes(),
        );
        self.rows += part.rows;
        self.flushes += 1;
        part.index += 1;
        part.rows = 0;
        part.plain = 0;
        Ok(())
    }

    /// Close the last flush of every partition; the payload's digest.
    pub(crate) fn finish(mut self) -> Result<PayloadSummary> {
        for p in 0..self.parts.len() {
            if self.parts[p].rows > 0 {
                self.close(p)?;
            }
        }
        let mut h = Sha256::new();
        for part in self.parts {
            h.update(hex::encode(part.lines.finalize()).as_bytes());
            h.update(b"\n");
        }
        Ok(PayloadSummary {
            payload_sha256: hex::encode(h.finalize()),
            flushes: self.flushes,
            rows: self.rows,
        })
    }
}

fn serialize_row(batch: &RecordBatch, kinds: &[Kind], i: usize, out: &mut Vec<u8>) {
    for (ci, kind) in kinds.iter().enumerate() {
        let a = batch.column(ci);
        if a.is_null(i) {
            out.push(0);
            continue;
        }
        out.push(1);
        match kind {
            Kind::Str => {
                let v = a.as_string::<i32>().value(i).as_bytes();
                out.extend_from_slice(&(v.len() as u32).to_le_bytes());
                out.extend_from_slice(v);
            }
            Kind::I64 => {
                out.extend_from_slice(&a.as_primitive::<Int64Type>().value(i).to_le_bytes())
            }
            Kind::I32 => {
                out.extend_from_slice(&a.as_primitive::<Int32Type>().value(i).to_le_bytes())
            }
            Kind::F64 => out.extend_from_slice(
                &a.as_primitive::<Float64Type>()
                    .value(i)
                    .to_bits()
                    .to_le_bytes(),
            ),
            Kind::TimestampUtc => out.extend_from_slice(
                &a.as_primitive::<TimestampMicrosecondType>()
                    .value(i)
                    .to_le_bytes(),
            ),
            Kind::Bool => out.push(u8::from(a.as_boolean().value(i))),
        }
    }
}
