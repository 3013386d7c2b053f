//! The decoded size of every page, read from the page headers before any page is decoded.
//!
//! A Parquet reader allocates what a page header says the page decodes to
//! (`uncompressed_page_size`) and decompresses into it: a part of a few kilobytes can hold a
//! page of zeros that decodes to gigabytes. Every reader of parts (`verify`, `repair`, the
//! trusted read `files`/`scan`, the exports and the report, compaction) walks the headers
//! of the column chunks it is about to decode first (Thrift compact protocol, skipping
//! what it does not need) and refuses a page over the store's
//! [`max_page_bytes`](crate::base::limits::ReadLimits::max_page_bytes),
//! naming the part, the row group and the column. A value is never larger than its page,
//! so this bounds every value decoded as well.

use crate::base::param::{text, Param, Text};
use parquet::file::metadata::ParquetMetaData;

/// Check the pages of every column chunk of `meta` that `bytes_of` holds (`None`: not
/// fetched, so not decoded either) against `max` decoded bytes a page: why not, naming
/// row group and column.
pub(crate) fn check_chunks<'a>(
    meta: &ParquetMetaData,
    max: u64,
    mut bytes_of: impl FnMut(u64, u64) -> Option<&'a [u8]>,
) -> std::result::Result<(), Text> {
    for (g, rg) in meta.row_groups().iter().enumerate() {
        for col in rg.columns() {
            let (start, len) = col.byte_range();
            if let Some(chunk) = bytes_of(start, len) {
                check_pages(chunk, max).map_err(|why| {
                    why.prefixed(format!(
                        "row group {g}, column {}: ",
                        col.column_path().string()
                    ))
                })?;
            }
        }
    }
    Ok(())
}

/// The pages of a whole part in memory, its footer `meta`, at most `max` bytes each.
pub(crate) fn check_part(
    meta: &ParquetMetaData,
    part: &[u8],
    max: u64,
) -> std::result::Result<(), Text> {
    check_chunks(meta, max, |start, len| {
        let end = start.checked_add(len)?;
        part.get(usize::try_from(start).ok()?..usize::try_from(end).ok()?)
    })
}

/// Walk the pages of one column chunk: each header, then its (compressed) data.
pub fn check_pages(chunk: &[u8], max: u64) -> std::result::Result<(), Text> {
    let mut at = 0usize;
    let mut page = 0u64;
    while at < chunk.len() {
        let mut r = Thrift {
            b: &chunk[at..],
            pos: 0,
        };
        let (decoded, stored) = r
            .page_header()
            .map_err(|why| format!("page {page} at byte {at}: unreadable header ({why})"))?;
        if decoded > max {
            return Err(text![
                format!(
                    "page {page} decodes to {decoded} bytes, more than the {max} decoded at most ("
                ),
                Param::MaxPageBytes,
                "; not decoded)"
            ]);
        }
        at = at
            .checked_add(r.pos)
            .and_then(|a| a.checked_add(usize::try_from(stored).ok()?))
            .ok_or_else(|| Text::from(format!("page {page}: a size past the end")))?;
        page += 1;
    }
    Ok(())
}

/// What one page header declares: its decoded and stored sizes and its kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PageHead {
    /// `uncompressed_page_size`.
    pub decoded: u64,
    /// `compressed_page_size`.
    pub stored: u64,
    /// What the page holds.
    pub kind: PageKind,
}

/// The kind of a page, as much as the decoded-size bound needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PageKind {
    /// A dictionary page.
    Dictionary,
    /// A data page of `values` values (nulls included), `dictionary`-encoded or not.
    Data {
        /// `num_values`.
        values: u64,
        /// Whether its values are indices into the chunk's dictionary.
        dictionary: bool,
    },
    /// Anything else (an index page).
    Other,
}

/// Each page header of one column chunk, in order; why not, naming the page.
pub(crate) fn heads(chunk: &[u8]) -> std::result::Result<Vec<PageHead>, String> {
    let mut at = 0usize;
    let mut out = Vec::new();
    while at < chunk.len() {
        let mut r = Thrift {
            b: &chunk[at..],
            pos: 0,
        };
        let page = out.len();
        let head = r
            .page_head()
            .map_err(|why| format!("page {page} at byte {at}: unreadable header ({why})"))?;
        at = at
            .checked_add(r.pos)
            .and_then(|a| a.checked_add(usize::try_from(head.stored).ok()?))
            .ok_or_else(|| format!("page {page}: a size past the end"))?;
        out.push(head);
    }
    Ok(out)
}

/// A Thrift compact-protocol reader of just enough to walk page headers.
struct Thrift<'a> {
    b: &'a [u8],
    pos: usize,
}

/// Nesting deeper than any page header has.
const MAX_DEPTH: u32 = 16;

impl Thrift<'_> {
    fn byte(&mut self) -> Result<u8, String> {
        let v = *self.b.get(self.pos).ok_or("ends early")?;
        self.pos += 1;
        Ok(v)
    }

    fn skip_bytes(&mut self, n: u64) -> Result<(), String> {
        let n = usize::try_from(n).map_err(|_| "a length past the end")?;
        self.pos = self
            .pos
            .checked_add(n)
            .filter(|&p| p <= self.b.len())
            .ok_or("a length past the end")?;
        Ok(())
    }

    fn varint(&mut self) -> Result<u64, String> {
        let mut v = 0u64;
        for shift in (0..70).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err("a varint of more than 10 bytes".into())
    }

    fn zigzag(&mut self) -> Result<i64, String> {
        let v = self.varint()?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    /// The decoded and the stored size of the page whose header starts here.
    fn page_header(&mut self) -> Result<(u64, u64), String> {
        self.page_head().map(|h| (h.decoded, h.stored))
    }

    /// What the header starting here declares ([`PageHead`]).
    fn page_head(&mut self) -> Result<PageHead, String> {
        let (mut decoded, mut stored) = (None, None);
        let mut kind = PageKind::Other;
        self.fields(0, |t, id, ty| {
            match (id, ty) {
                (2, 5) => decoded = Some(t.zigzag()?),
                (3, 5) => stored = Some(t.zigzag()?),
                // DataPageHeader (num_values 1, encoding 2) and V2 (num_values 1, encoding 4).
                (5, 12) => kind = t.data_page(2)?,
                (8, 12) => kind = t.data_page(4)?,
                (7, 12) => {
                    t.skip(ty, 1)?;
                    kind = PageKind::Dictionary;
                }
                _ => t.skip(ty, 1)?,
            }
            Ok(())
        })?;
        let size = |v: Option<i64>, what: &str| {
            v.and_then(|v| u64::try_from(v).ok())
                .ok_or(format!("no valid {what}"))
        };
        Ok(PageHead {
            decoded: size(decoded, "uncompressed_page_size")?,
            stored: size(stored, "compressed_page_size")?,
            kind,
        })
    }

    /// A data page header's values and whether its encoding is a dictionary's (field
    /// `encoding_field`: 2 in a V1 header, 4 in a V2 one).
    fn data_page(&mut self, encoding_field: i64) -> Result<PageKind, String> {
        let (mut values, mut dictionary) = (None, false);
        self.fields(1, |t, id, ty| {
            match (id, ty) {
                (1, 5) => values = Some(t.zigzag()?),
                (f, 5) if f == encoding_field => {
                    // PLAIN_DICTIONARY (2) or RLE_DICTIONARY (8).
                    dictionary = matches!(t.zigzag()?, 2 | 8);
                }
                _ => t.skip(ty, 2)?,
            }
            Ok(())
        })?;
        let values = values
            .and_then(|v| u64::try_from(v).ok())
            .ok_or("no valid num_values")?;
        Ok(PageKind::Data { values, dictionary })
    }

    /// Each field of a struct, to `f` with its id and type, up to its stop byte.
    fn fields(
        &mut self,
        depth: u32,
        mut f: impl FnMut(&mut Self, i64, u8) -> Result<(), String>,
    ) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err("nested too deep".into());
        }
        let mut id = 0i64;
        loop {
            let h = self.byte()?;
            if h == 0 {
                return Ok(());
            }
            let delta = i64::from(h >> 4);
            id = if delta == 0 {
                self.zigzag()?
            } else {
                id + delta
            };
            f(self, id, h & 0x0f)?;
        }
    }

    /// Skip a value of compact type `ty`.
    fn skip(&mut self, ty: u8, depth: u32) -> Result<(), String> {
        match ty {
            1 | 2 => Ok(()), // a boolean field: the value is in the type
            3 => self.skip_bytes(1),
            4..=6 => self.varint().map(drop),
            7 => self.skip_bytes(8),
            8 => {
                let n = self.varint()?;
                self.skip_bytes(n)
            }
            9 | 10 => {
                let h = self.byte()?;
                let mut n = u64::from(h >> 4);
                if n == 15 {
                    n = self.varint()?;
                }
                // Every element takes at least one byte: the walk ends with the bytes.
                for _ in 0..n {
                    self.element(h & 0x0f, depth)?;
                }
                Ok(())
            }
            11 => {
                let n = self.varint()?;
                if n > 0 {
                    let kv = self.byte()?;
                    for _ in 0..n {
                        self.element(kv >> 4, depth)?;
                        self.element(kv & 0x0f, depth)?;
                    }
                }
                Ok(())
            }
            12 => self.fields(depth + 1, |t, _, ty| t.skip(ty, depth + 1)),
            t => Err(format!("unknown type {t}")),
        }
    }

    /// Skip an element of a list, set or map (booleans there take a byte).
    fn element(&mut self, ty: u8, depth: u32) -> Result<(), String> {
        match ty {
            1 | 2 => self.skip_bytes(1),
            t => self.skip(t, depth + 1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(value: &str) -> bytes::Bytes {
        use std::sync::Arc;
        let a = arrow_array::StringArray::from(vec!["x", value, "y"]);
        let b =
            arrow_array::RecordBatch::try_from_iter([("v", Arc::new(a) as arrow_array::ArrayRef)])
                .unwrap();
        let mut w = parquet::arrow::ArrowWriter::try_new(Vec::new(), b.schema(), None).unwrap();
        w.write(&b).unwrap();
        bytes::Bytes::from(w.into_inner().unwrap())
    }

    #[test]
    fn every_page_of_a_part_is_walked_and_one_over_the_cap_is_named() {
        let p = part(&"z".repeat(10_000));
        let b = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(p.clone())
            .unwrap();
        let meta = b.metadata().clone();
        let (start, len) = meta.row_group(0).column(0).byte_range();
        let chunk = &p[start as usize..(start + len) as usize];
        assert_eq!(check_pages(chunk, u64::MAX), Ok(()));
        let e = check_pages(chunk, 1000).unwrap_err();
        assert!(
            e.contains("decodes to ") && e.contains("more than the 1000"),
            "{e}"
        );
        // A header cut short, or a size past the end, is a reason, never a panic.
        assert!(check_pages(&chunk[..3], u64::MAX)
            .unwrap_err()
            .contains("unreadable header"));
    }
}
