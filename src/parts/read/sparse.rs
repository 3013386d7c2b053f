//! A sparse in-memory view of a Parquet file: the footer and the column chunks fetched.

use std::io::Cursor;

use bytes::Bytes;
use parquet::file::reader::{ChunkReader, Length};

/// Some byte ranges of a file, enough for the reader to decode the projected columns.
/// A read outside them is an error (it would mean the footer lied about its offsets).
pub(crate) struct Sparse {
    size: u64,
    pieces: Vec<(u64, Bytes)>,
}

impl Sparse {
    /// A file of `size` bytes of which only `pieces` (offset, bytes) are known.
    pub(crate) fn new(size: u64, pieces: Vec<(u64, Bytes)>) -> Self {
        Sparse { size, pieces }
    }

    fn find(&self, start: u64, len: u64) -> parquet::errors::Result<Bytes> {
        let Some(stop) = start.checked_add(len) else {
            return Err(parquet::errors::ParquetError::General(format!(
                "range {start}+{len} overflows"
            )));
        };
        for (s, b) in &self.pieces {
            let end = s + b.len() as u64;
            if start >= *s && stop <= end {
                let off = (start - s) as usize;
                return Ok(b.slice(off..off + len as usize));
            }
        }
        Err(parquet::errors::ParquetError::General(format!(
            "bytes {start}..{} were not fetched",
            start + len
        )))
    }
}

impl Length for Sparse {
    fn len(&self) -> u64 {
        self.size
    }
}

impl ChunkReader for Sparse {
    type T = Cursor<Bytes>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        for (s, b) in &self.pieces {
            let end = s + b.len() as u64;
            if start >= *s && start < end {
                return Ok(Cursor::new(b.slice((start - s) as usize..)));
            }
        }
        Err(parquet::errors::ParquetError::General(format!(
            "offset {start} was not fetched"
        )))
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        self.find(start, length as u64)
    }
}
