//! Skipping the parts a feature lookup cannot match: `feature_id` statistics in the footer
//! where a part has them, then the Parquet bloom filter of `feature_id` (written in parts
//! of [`crate::parts::encode::PartEncoding::V3`] on, sized for the part's rows).
//!
//! Costs three small ranged reads per part (the footer's length, the footer, the filter)
//! instead of the whole part. What it rests on: a skipped part is judged by its own footer
//! and filter, which are not hashed (hashing them means reading the whole part); the rows
//! a scan returns are all checked, and `lineage verify` proves the skipped parts intact.

use bytes::Bytes;
use parquet::bloom_filter::Sbbf;
use parquet::file::statistics::Statistics;

use crate::base::error::Result;
use crate::format::pointer::Pointer;
use crate::parts::read::{fetch_footer, Source, MAX_FETCH_BYTES};
use crate::publish::AtomicPublisher;

/// Whether a part may hold a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Its statistics or bloom filter rule the value out in every row group.
    Absent,
    /// It may hold it (or nothing says it cannot): read it.
    Maybe,
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
/// statistics, no filter, an unreadable one) is [`Verdict::Maybe`]: the part is then read
/// and checked, so a footer that fails to parse surfaces as the part's digest failure.
pub async fn verdict(
    store: &dyn AtomicPublisher,
    p: &Pointer,
    column: &str,
    value: &str,
) -> Result<Verdict> {
    let key = p.part_path.as_str();
    let src = Source::Store(store);
    let Ok(footer) = fetch_footer(&src, key, p.size_bytes).await else {
        return Ok(Verdict::Maybe);
    };
    let meta = &footer.meta;
    let Some(leaf) = meta
        .file_metadata()
        .schema_descr()
        .columns()
        .iter()
        .position(|c| c.path().parts() == [column.to_string()])
    else {
        return Ok(Verdict::Maybe);
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
            return Ok(Verdict::Maybe);
        };
        let (Ok(off), Ok(len)) = (u64::try_from(off), u64::try_from(len)) else {
            return Ok(Verdict::Maybe);
        };
        if len > MAX_FETCH_BYTES || off.saturating_add(len) > p.size_bytes {
            return Ok(Verdict::Maybe);
        }
        let bytes: Bytes = src.range(key, off..off + len).await?;
        match Sbbf::from_bytes(&bytes) {
            Ok(f) if !f.check(value) => continue,
            _ => return Ok(Verdict::Maybe),
        }
    }
    Ok(Verdict::Absent)
}
