//! A temporary file that buffered rows move to when the rows waiting for their
//! partition to fill would exceed the memory budget (see [`crate::write::stream::group`]).
//!
//! One unnamed file per append (removed by the OS when closed, also after a crash),
//! written append-only as self-contained Arrow IPC stream segments and read back with
//! positional reads. Its size is at most the rows buffered at once, so at most the
//! input's size in Arrow form.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::os::unix::fs::FileExt;

use arrow_array::RecordBatch;
use arrow_ipc::reader::StreamReader;
use arrow_ipc::writer::StreamWriter;

use crate::base::error::{Error, Result};

/// Where one spilled run of rows lies in the file.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Segment {
    offset: u64,
    len: u64,
}

/// The spill file.
#[derive(Debug)]
pub(crate) struct SpillFile {
    file: File,
    len: u64,
}

fn io_err(e: std::io::Error) -> Error {
    Error::io(std::env::temp_dir().join("<lineage spill file>"), e)
}

/// Counts bytes on their way to the file.
struct Counting<'a> {
    inner: BufWriter<&'a File>,
    n: u64,
}

impl Write for Counting<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let k = self.inner.write(buf)?;
        self.n += k as u64;
        Ok(k)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Reads `[pos, end)` of the file without moving its offset.
struct At<'a> {
    file: &'a File,
    pos: u64,
    end: u64,
}

impl Read for At<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let want = usize::try_from(self.end - self.pos)
            .unwrap_or(usize::MAX)
            .min(buf.len());
        if want == 0 {
            return Ok(0);
        }
        let k = self.file.read_at(&mut buf[..want], self.pos)?;
        self.pos += k as u64;
        Ok(k)
    }
}

impl SpillFile {
    /// A new, empty, unnamed file in the temp directory (`TMPDIR`).
    pub(crate) fn new() -> Result<Self> {
        let file = tempfile::tempfile().map_err(io_err)?;
        Ok(Self { file, len: 0 })
    }

    /// Bytes written so far.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Append `batches` (of one schema, at least one) as one segment.
    pub(crate) fn write(&mut self, batches: &[RecordBatch]) -> Result<Segment> {
        let Some(first) = batches.first() else {
            return Err(Error::internal("spilling no rows"));
        };
        let mut out = Counting {
            inner: BufWriter::with_capacity(1 << 20, &self.file),
            n: 0,
        };
        {
            let mut w = StreamWriter::try_new(&mut out, &first.schema())?;
            for b in batches {
                w.write(b)?;
            }
            w.finish()?;
        }
        out.flush().map_err(io_err)?;
        let seg = Segment {
            offset: self.len,
            len: out.n,
        };
        self.len += out.n;
        Ok(seg)
    }

    /// The batches of a segment.
    pub(crate) fn read(&self, seg: Segment) -> Result<Vec<RecordBatch>> {
        let at = At {
            file: &self.file,
            pos: seg.offset,
            end: seg.offset + seg.len,
        };
        let r = StreamReader::try_new(BufReader::with_capacity(1 << 20, at), None)?;
        Ok(r.collect::<std::result::Result<Vec<_>, _>>()?)
    }
}
