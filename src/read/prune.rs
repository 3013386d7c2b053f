//! Skipping the parts a feature lookup cannot match: `feature_id` statistics in the footer
//! where a part has them, then the Parquet bloom filter of `feature_id` (written in parts
//! of [`crate::parts::encode::PartEncoding::V3`] on, sized for the part's rows).
//!
//! A part is skipped only on bytes whose integrity is checked: its pointer records the
//! offset and sha256 of the part's tail ([`crate::parts::tail`]: the bloom filters and the
//! footer), which is read in one ranged read and hashed before it is parsed. A tail that
//! does not hash to the recorded digest, and a part whose pointer records none (written
//! before issue 35), is read whole and checked like every part a scan returns
//! ([`Verdict::Unrecorded`] counts the latter).

use parquet::bloom_filter::Sbbf;
use parquet::file::metadata::ParquetMetaData;
use parquet::file::statistics::Statistics;

use crate::base::digest::sha256_hex;
use crate::base::error::Result;
use crate::format::pointer::Pointer;
use crate::parts::read::{Source, MAX_FETCH_BYTES};
use crate::parts::tail::footer;
use crate::publish::AtomicPublisher;

/// Whether a part may hold a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Its checked statistics or bloom filter rule the value out in every row group.
    Absent,
    /// It may hold it (or nothing checked says it cannot): read it.
    Maybe,
    /// Its pointer records no digest of what pruning would read: read it.
    Unrecorded,
}

/// Whether the part of `p` may hold rows of `feature_id`.
pub async fn feature_verdict(
    store: &dyn AtomicPublisher,
    p: &Pointer,
    feature_id: &str,
) -> Result<Verdict> {
    verdict(store, p, "feature_id", feature_id).await
}

/// Whether the part of `p` may hold `value` in the string column `column`. Any doubt (no
/// recorded tail digest, a tail that does not hash to it, no statistics, no filter) is not
/// [`Verdict::Absent`]: the part is then read and checked whole.
pub async fn verdict(
    store: &dyn AtomicPublisher,
    p: &Pointer,
    column: &str,
    value: &str,
) -> Result<Verdict> {
    let (Some(from), Some(digest)) = (p.tail_offset, p.tail_sha256.as_deref()) else {
        return Ok(Verdict::Unrecorded);
    };
    if from >= p.size_bytes || p.size_bytes - from > MAX_FETCH_BYTES {
        return Ok(Verdict::Maybe);
    }
    let Ok(tail) = Source::Store(store)
        .range(&p.part_path, from..p.size_bytes)
        .await
    else {
        return Ok(Verdict::Maybe); // read whole: that read names what is wrong
    };
    if sha256_hex(&tail) != digest {
        tracing::warn!(part = %p.part_path, "the part's footer and filters are not the bytes its pointer records: read whole");
        return Ok(Verdict::Maybe);
    }
    let Ok((_, meta)) = footer(&tail, from) else {
        return Ok(Verdict::Maybe);
    };
    Ok(judge(&meta, &tail, from, column, value))
}

/// The verdict of a checked tail (starting at `from` in the part).
fn judge(meta: &ParquetMetaData, tail: &[u8], from: u64, column: &str, value: &str) -> Verdict {
    let Some(leaf) = meta
        .file_metadata()
        .schema_descr()
        .columns()
        .iter()
        .position(|c| c.path().parts() == [column.to_string()])
    else {
        return Verdict::Maybe;
    };
    for rg in meta.row_groups() {
        let chunk = rg.column(leaf);
        if let Some(Statistics::ByteArray(s)) = chunk.statistics() {
            if let (Some(lo), Some(hi)) = (s.min_opt(), s.max_opt()) {
                if s.min_is_exact()
                    && s.max_is_exact()
                    && (value.as_bytes() < lo.data() || value.as_bytes() > hi.data())
                {
                    continue; // this row group cannot hold it
                }
            }
        }
        let (Some(off), Some(len)) = (chunk.bloom_filter_offset(), chunk.bloom_filter_length())
        else {
            return Verdict::Maybe;
        };
        let (Ok(off), Ok(len)) = (u64::try_from(off), usize::try_from(len)) else {
            return Verdict::Maybe;
        };
        let Some(at) = off.checked_sub(from).and_then(|a| usize::try_from(a).ok()) else {
            return Verdict::Maybe;
        };
        let Some(bytes) = tail.get(at..at.saturating_add(len)) else {
            return Verdict::Maybe;
        };
        match Sbbf::from_bytes(bytes) {
            Ok(f) if !f.check(value) => continue,
            _ => return Verdict::Maybe,
        }
    }
    Verdict::Absent
}
