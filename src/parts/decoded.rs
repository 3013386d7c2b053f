//! The most a Parquet object decodes to, bounded before any value is decoded.
//!
//! [`super::pages`] bounds each page; an object can still decode to far more than its pages
//! declare: a dictionary-encoded page of a few bytes repeats one dictionary value for
//! every row it holds (300,000 rows of one 10 KB value: 3 GB from a 32 KB checkpoint), and
//! many pages under the page limit add up. So before an object (a part, a compacted part,
//! a Delta checkpoint) is decoded, the bound of every column chunk is added up from its
//! page headers and its dictionary, and an object whose bound passes the store's
//! [`max_decoded_bytes`](crate::base::limits::ReadLimits::max_decoded_bytes) is refused,
//! naming row group and column.
//!
//! The bound of a chunk: every page's declared decoded size; plus, for each value a data
//! page declares, [`PER_VALUE`] bytes (an offset, a fixed-width value, validity) and, when
//! the page is dictionary-encoded, the longest value of the chunk's dictionary (read from
//! the dictionary page, which the page limit bounds); plus [`PER_VALUE`] for each row the
//! row group declares beyond the values its pages declare. It is never below what
//! arrow-rs allocates for the chunk (values are at most their dictionary's longest, or in
//! the page bytes counted already), and for our own parts about twice the Arrow size.

use std::sync::Arc;

use bytes::Bytes;
use parquet::basic::Type as PhysicalType;
use parquet::column::page::{Page, PageReader};
use parquet::file::metadata::{ColumnChunkMetaData, ParquetMetaData};
use parquet::file::serialized_reader::SerializedPageReader;

use crate::base::param::{text, Param, Text};
use crate::parts::pages::{heads, PageKind};
use crate::parts::read::sparse::Sparse;

/// Bytes a decoded value costs besides its own bytes: an offset (8 for large strings), a
/// fixed-width value (at most 12, INT96), its validity bit; rounded up.
pub(crate) const PER_VALUE: u64 = 16;

/// Check that the object of `meta`, whose column chunk at (`start`, `len`) is
/// `chunk_of(start, len)` (`None`: not there, refused), decodes to at most `max` bytes.
pub(crate) fn check(
    meta: &ParquetMetaData,
    max: u64,
    mut chunk_of: impl FnMut(u64, u64) -> Option<Bytes>,
) -> Result<u64, Text> {
    let mut total = 0u64;
    for (g, rg) in meta.row_groups().iter().enumerate() {
        for col in rg.columns() {
            let path = col.column_path().string();
            let (start, len) = col.byte_range();
            let bound = chunk_of(start, len)
                .ok_or_else(|| "lies outside the object".to_string())
                .and_then(|chunk| chunk_bound(&chunk, start, col, rg.num_rows()))
                .map_err(|why| Text::from(format!("row group {g}, column {path}: {why}")))?;
            total = total.saturating_add(bound);
            if total > max {
                return Err(too_much(max, total, g, &path));
            }
        }
    }
    Ok(total)
}

/// Why an object whose bound reached `total` at row group `g`, column `path` is refused.
pub(crate) fn too_much(max: u64, total: u64, g: usize, path: &str) -> Text {
    text![
        format!("decodes to more than the {max} bytes one object may decode to ("),
        Param::MaxDecodedBytes,
        format!(
            "): {total} bytes by row group {g}, column {path}, as its pages and dictionary declare; not decoded"
        )
    ]
}

/// [`check_object`] of an object in memory whose footer is read here (a Delta
/// checkpoint): every page against `max_page_bytes`, the whole against
/// `max_decoded_bytes`; the bound, or why not.
pub(crate) fn check_bytes(
    object: &Bytes,
    limits: crate::base::limits::ReadLimits,
) -> Result<u64, Text> {
    let meta = parquet::file::metadata::ParquetMetaDataReader::new()
        .parse_and_finish(object)
        .map_err(|e| Text::from(e.to_string()))?;
    crate::parts::pages::check_part(&meta, object, limits.max_page_bytes)?;
    check_object(&meta, object, limits.max_decoded_bytes)
}

/// A reader of a whole Parquet object in memory, every page checked first against the
/// store's `max_page_bytes` and the whole object's decoded bound against its
/// `max_decoded_bytes` ([`crate::parts::decoded`]; see the module docs).
pub(crate) fn builder(
    part: bytes::Bytes,
    limits: crate::base::limits::ReadLimits,
) -> std::result::Result<parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder<Bytes>, Text>
{
    let b = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(part.clone())
        .map_err(|e| Text::from(e.to_string()))?;
    crate::parts::pages::check_part(b.metadata(), &part, limits.max_page_bytes)?;
    check_object(b.metadata(), &part, limits.max_decoded_bytes)?;
    Ok(b)
}

/// [`check`] of an object whole in memory.
pub(crate) fn check_object(meta: &ParquetMetaData, object: &Bytes, max: u64) -> Result<u64, Text> {
    check(meta, max, |start, len| {
        let end = start.checked_add(len)?;
        let (start, end) = (usize::try_from(start).ok()?, usize::try_from(end).ok()?);
        (end <= object.len()).then(|| object.slice(start..end))
    })
}

/// The bound of one column chunk, starting at byte `start` of its object, in a row group
/// of `rows` rows (module docs).
pub(crate) fn chunk_bound(
    chunk: &Bytes,
    start: u64,
    col: &ColumnChunkMetaData,
    rows: i64,
) -> Result<u64, String> {
    let mut longest: Option<u64> = None;
    let (mut total, mut values_total) = (0u64, 0u64);
    for head in heads(chunk)? {
        total = total.saturating_add(head.decoded);
        if let PageKind::Data { values, dictionary } = head.kind {
            values_total = values_total.saturating_add(values);
            let each = match (dictionary, longest) {
                (false, _) => 0,
                (true, Some(l)) => l,
                (true, None) => {
                    let l = longest_dictionary_value(chunk, start, col)?;
                    longest = Some(l);
                    l
                }
            };
            total = total.saturating_add(values.saturating_mul(PER_VALUE.saturating_add(each)));
        }
    }
    let rows = u64::try_from(rows).unwrap_or(0);
    Ok(total.saturating_add(rows.saturating_sub(values_total).saturating_mul(PER_VALUE)))
}

/// The longest value of the dictionary page that starts `chunk`.
fn longest_dictionary_value(
    chunk: &Bytes,
    start: u64,
    col: &ColumnChunkMetaData,
) -> Result<u64, String> {
    let end = start.saturating_add(chunk.len() as u64);
    let file = Arc::new(Sparse::new(end, vec![(start, chunk.clone())]));
    let mut pages = SerializedPageReader::new(file, col, 0, None).map_err(|e| e.to_string())?;
    match pages.get_next_page().map_err(|e| e.to_string())? {
        Some(Page::DictionaryPage {
            buf, num_values, ..
        }) => match col.column_type() {
            PhysicalType::BYTE_ARRAY => longest_plain(&buf, num_values),
            PhysicalType::FIXED_LEN_BYTE_ARRAY => {
                Ok(u64::try_from(col.column_descr().type_length()).unwrap_or(0))
            }
            _ => Ok(0), // fixed width: counted in PER_VALUE
        },
        _ => Err("dictionary-encoded pages, and no dictionary page first".into()),
    }
}

/// The longest of the `n` PLAIN-encoded byte arrays (a 4-byte length, then the bytes)
/// that `buf` holds.
fn longest_plain(buf: &[u8], n: u32) -> Result<u64, String> {
    let (mut at, mut longest) = (0usize, 0u64);
    for i in 0..n {
        let len = buf
            .get(at..at.saturating_add(4))
            .and_then(|b| <[u8; 4]>::try_from(b).ok())
            .map(u32::from_le_bytes)
            .ok_or_else(|| format!("dictionary value {i} lies past the page's end"))?;
        at = at
            .checked_add(4 + len as usize)
            .filter(|&e| e <= buf.len())
            .ok_or_else(|| format!("dictionary value {i} lies past the page's end"))?;
        longest = longest.max(u64::from(len));
    }
    Ok(longest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{ArrayRef, RecordBatch, StringArray};
    use parquet::arrow::ArrowWriter;

    fn object(values: Vec<String>) -> (Bytes, ParquetMetaData) {
        let a: ArrayRef = Arc::new(StringArray::from(values));
        let b = RecordBatch::try_from_iter([("v", a)]).unwrap();
        let mut w = ArrowWriter::try_new(Vec::new(), b.schema(), None).unwrap();
        w.write(&b).unwrap();
        let bytes = Bytes::from(w.into_inner().unwrap());
        let meta = parquet::file::metadata::ParquetMetaDataReader::new()
            .parse_and_finish(&bytes)
            .unwrap();
        (bytes, meta)
    }

    #[test]
    fn one_long_dictionary_value_repeated_is_bounded_by_every_repetition() {
        let (bytes, meta) = object(vec!["z".repeat(10_000); 3_000]);
        assert!(bytes.len() < 64 << 10, "{} bytes", bytes.len());
        let bound = check_object(&meta, &bytes, u64::MAX).unwrap();
        assert!(bound >= 3_000 * 10_000, "{bound}");
        let e = check_object(&meta, &bytes, 10 << 20)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("more than the 10485760 bytes")
                && e.contains(&crate::base::param::Param::MaxDecodedBytes.to_string()),
            "{e}"
        );
        assert!(e.contains("row group 0, column v"), "{e}");
    }

    #[test]
    fn distinct_short_values_are_bounded_near_their_size() {
        let values: Vec<String> = (0..100_000).map(|i| format!("event-{i:08}")).collect();
        let (bytes, meta) = object(values);
        let bound = check_object(&meta, &bytes, u64::MAX).unwrap();
        // 1.4 MB of values and 100,000 offsets: the bound is a few times that at most.
        assert!(bound < 8 << 20, "{bound}");
    }

    /// Our own part of the default 100,000 rows (demo events): its bound, in MiB, is far
    /// under the default limit (docs/security.md quotes it).
    #[test]
    fn a_part_of_the_default_rows_is_bounded_far_under_the_default() {
        let batches = crate::write::demo::generate(100_000, 1, 7).unwrap();
        let batch = arrow_select::concat::concat_batches(&batches[0].schema(), &batches).unwrap();
        let part =
            crate::parts::encode::encode(&batch, "01900000-0000-7000-8000-000000000000").unwrap();
        let bytes = part.bytes.clone();
        let meta = parquet::file::metadata::ParquetMetaDataReader::new()
            .parse_and_finish(&bytes)
            .unwrap();
        let bound = check_object(&meta, &bytes, u64::MAX).unwrap();
        let arrow = batch.get_array_memory_size() as u64;
        eprintln!(
            "100,000 rows: part {} bytes, Arrow {} MiB, bound {} MiB",
            bytes.len(),
            arrow >> 20,
            bound >> 20
        );
        assert!(bound >= arrow / 2, "{bound} against {arrow}");
        assert!(
            bound < crate::base::limits::DEFAULT_MAX_DECODED_BYTES / 4,
            "{bound}"
        );
    }

    #[test]
    fn a_dictionary_shorter_than_it_says_is_a_reason() {
        assert!(longest_plain(&[3, 0, 0, 0, b'a'], 1).is_err());
        assert_eq!(longest_plain(&[1, 0, 0, 0, b'a', 0, 0, 0, 0], 2), Ok(1));
    }
}
