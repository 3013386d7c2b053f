//! A part's *tail*: the bytes from its first bloom filter (or, without one, its footer) to
//! its end, which hold everything pruning reads (the footer's statistics and the bloom
//! filters). Parts written since issue 35 record the tail's offset and sha256 in their
//! pointer ([`crate::format::pointer::Pointer::tail_sha256`]), so a part is skipped only
//! on bytes whose digest is checked: one ranged read, hashed, then parsed.

use bytes::Bytes;
use parquet::file::metadata::{ParquetMetaData, ParquetMetaDataReader};

use crate::base::digest::sha256_hex;
use crate::base::error::{Error, Result};

/// Where a part's tail begins and its sha256, from the part's bytes (its footer parsed).
pub(crate) fn tail_of(part: &[u8]) -> Result<(u64, String)> {
    let (start, meta) =
        footer(part, 0).map_err(|m| Error::internal(format!("encoded part: {m}")))?;
    let from = first_filter(&meta).unwrap_or(start).min(start);
    let idx = usize::try_from(from).map_err(Error::internal_from)?;
    Ok((from, sha256_hex(&part[idx..])))
}

/// Offset of the first bloom filter of a footer's column chunks.
fn first_filter(meta: &ParquetMetaData) -> Option<u64> {
    meta.row_groups()
        .iter()
        .flat_map(|rg| rg.columns())
        .filter_map(|c| c.bloom_filter_offset())
        .filter_map(|o| u64::try_from(o).ok())
        .min()
}

/// The footer of a part whose bytes from `offset` on are `tail`: where the footer starts
/// (in the part) and the metadata, or why it cannot be read.
pub(crate) fn footer(
    tail: &[u8],
    offset: u64,
) -> std::result::Result<(u64, ParquetMetaData), String> {
    let n = tail.len();
    if n < 8 || &tail[n - 4..] != b"PAR1" {
        return Err("does not end in the Parquet magic PAR1".into());
    }
    let len = u32::from_le_bytes([tail[n - 8], tail[n - 7], tail[n - 6], tail[n - 5]]) as usize;
    let Some(start) = (n - 8).checked_sub(len) else {
        return Err(format!("footer length {len} does not fit in the tail"));
    };
    let meta = ParquetMetaDataReader::decode_metadata(&Bytes::copy_from_slice(&tail[start..n - 8]))
        .map_err(|e| format!("unreadable footer: {e}"))?;
    Ok((offset + start as u64, meta))
}
