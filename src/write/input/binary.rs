//! Arrow IPC (file or stream) and Parquet input: the schema must be the contract, matched
//! by name with lossless string re-encodings only ([`crate::write::conform`]).

use std::io::{Cursor, Read, Seek};

use arrow_array::RecordBatch;
use bytes::Bytes;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use parquet::file::reader::ChunkReader;

use crate::base::error::{Error, Result};
use crate::base::rejection::{InputError, Place};
use crate::schema::events::{Origin, SourcedBatch};
use crate::write::conform;
use crate::write::input::guard::DEFAULT_MAX_LINE_BYTES;
use crate::write::input::ipc_frames;

/// Hands batches on in their contract version's schema, numbering rows from 1 across them;
/// a string value longer than `max_value` bytes refuses the input, naming its row and field.
fn sourced(
    batches: impl Iterator<Item = Result<RecordBatch>>,
    plan: &conform::Plan,
    max_value: usize,
    emit: &mut dyn FnMut(SourcedBatch) -> Result<()>,
) -> Result<()> {
    let mut first = 1u64;
    for b in batches {
        // Columns by name, without the input's metadata: ours is added per commit.
        let b = plan.apply(&b?)?;
        longest_values(&b, first, max_value)?;
        let n = b.num_rows() as u64;
        emit(SourcedBatch::new(b, Origin::Rows { first }))?;
        first += n;
    }
    Ok(())
}

/// Refuse the first string value of `b` (whose first row is `first`) longer than
/// `max_value` bytes: no value of a text input can be (`--max-line-bytes`), and a part
/// holding one would be a decompression bomb for its readers.
fn longest_values(b: &RecordBatch, first: u64, max_value: usize) -> Result<()> {
    use arrow_array::cast::AsArray;
    use arrow_array::Array;
    for (field, column) in b.schema().fields().iter().zip(b.columns()) {
        // Offsets say each value's length without touching the values.
        let lengths: Box<dyn Iterator<Item = usize>> = match column.data_type() {
            arrow_schema::DataType::Utf8 => Box::new(column.as_string::<i32>().offsets().lengths()),
            arrow_schema::DataType::LargeUtf8 => {
                Box::new(column.as_string::<i64>().offsets().lengths())
            }
            _ => continue,
        };
        if let Some((i, n)) = lengths
            .enumerate()
            .find(|&(i, n)| n > max_value && column.is_valid(i))
        {
            return Err(Error::input(InputError::new(
                Place::Row(first + i as u64),
                Some(field.name()),
                None,
                format!(
                    "a value of {n} bytes, longer than {max_value}, the longest value accepted (--max-line-bytes raises it); the input is refused and nothing was published"
                ),
            )));
        }
    }
    Ok(())
}

fn collect(
    f: impl FnOnce(&mut dyn FnMut(SourcedBatch) -> Result<()>) -> Result<()>,
) -> Result<Vec<SourcedBatch>> {
    let mut out = Vec::new();
    f(&mut |b| {
        out.push(b);
        Ok(())
    })?;
    Ok(out)
}

pub(super) fn parse_arrow(bytes: Bytes) -> Result<Vec<SourcedBatch>> {
    collect(|emit| {
        read_arrow(
            Cursor::new(bytes),
            std::path::Path::new("<input>"),
            DEFAULT_MAX_LINE_BYTES,
            emit,
        )
    })
}

pub(super) fn parse_parquet(bytes: Bytes) -> Result<Vec<SourcedBatch>> {
    collect(|emit| {
        read_parquet(
            bytes,
            DEFAULT_MAX_LINE_BYTES,
            crate::base::limits::DEFAULT_MAX_PAGE_BYTES,
            emit,
        )
    })
}

/// Run `f`, a step of a reader of a third party's format on input bytes: a panic in it
/// (a case its own checks missed) is refused input, `what` naming the format, not a crash.
fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|_| {
        Err(Error::usage(format!(
            "corrupt {what}: its reader failed on it; the input is refused"
        )))
    })
}

/// `reader`'s batches, each read under [`guarded`].
fn guarded_batches<I: Iterator<Item = Result<RecordBatch>>>(
    what: &'static str,
    mut reader: I,
) -> impl Iterator<Item = Result<RecordBatch>> {
    std::iter::from_fn(move || guarded(what, || Ok(reader.next())).unwrap_or_else(|e| Some(Err(e))))
}

/// Read an Arrow IPC file (it starts with `ARROW1`) or stream, batch by batch. Every
/// length it declares is held to the bytes that are there first ([`ipc_frames`]).
pub(super) fn read_arrow<R: Read + Seek>(
    mut r: R,
    name: &std::path::Path,
    max_value: usize,
    emit: &mut dyn FnMut(SourcedBatch) -> Result<()>,
) -> Result<()> {
    let mut magic = [0u8; 6];
    let n = read_full(&mut r, &mut magic).map_err(|e| Error::io("<input>", e))?;
    r.rewind().map_err(|e| Error::io("<input>", e))?;
    let file = n == 6 && &magic == b"ARROW1";
    let what = if file {
        "Arrow IPC file"
    } else {
        "Arrow IPC stream"
    };
    ipc_frames::check(&mut r, file).map_err(|refused| {
        let said = match refused.framing {
            true => "not a readable Arrow IPC file or stream".to_string(),
            false => format!("corrupt {what}"),
        };
        Error::usage(format!(
            "{}: {said}: {}; the input is refused",
            name.display(),
            refused.why
        ))
    })?;
    if file {
        let rd = guarded(what, || {
            arrow_ipc::reader::FileReader::try_new(r, None)
                .map_err(|e| Error::usage(format!("not a readable Arrow IPC file: {e}")))
        })?;
        let plan = conform::plan(rd.schema().as_ref())?;
        let batches =
            rd.map(|b| b.map_err(|e| Error::usage(format!("corrupt Arrow IPC file: {e}"))));
        sourced(guarded_batches(what, batches), &plan, max_value, emit)
    } else {
        let rd = guarded(what, || {
            arrow_ipc::reader::StreamReader::try_new(std::io::BufReader::new(r), None)
                .map_err(|e| Error::usage(format!("not a readable Arrow IPC file or stream: {e}")))
        })?;
        let plan = conform::plan(rd.schema().as_ref())?;
        let batches =
            rd.map(|b| b.map_err(|e| Error::usage(format!("corrupt Arrow IPC stream: {e}"))));
        sourced(guarded_batches(what, batches), &plan, max_value, emit)
    }
}

/// Read a Parquet file, batch by batch.
pub(super) fn read_parquet<R: ChunkReader + 'static>(
    r: R,
    max_value: usize,
    max_page: u64,
    emit: &mut dyn FnMut(SourcedBatch) -> Result<()>,
) -> Result<()> {
    let meta = guarded("Parquet file", || {
        ArrowReaderMetadata::load(&r, ArrowReaderOptions::new())
            .map_err(|e| Error::usage(format!("not a readable Parquet file: {e}")))
    })?;
    // No page decodes to more than the cap of every reader of parts (a few bytes of zeros
    // can claim gigabytes): each column chunk's page headers are walked first.
    for (g, rg) in meta.metadata().row_groups().iter().enumerate() {
        for col in rg.columns() {
            let (start, len) = col.byte_range();
            let chunk = usize::try_from(len)
                .ok()
                .and_then(|n| r.get_bytes(start, n).ok())
                .ok_or_else(|| {
                    Error::usage(format!(
                        "corrupt Parquet file: row group {g}, column {} lies outside the file",
                        col.column_path().string()
                    ))
                })?;
            crate::parts::pages::check_pages(&chunk, max_page).map_err(|why| {
                Error::usage(why.prefixed(format!(
                    "refused Parquet file: row group {g}, column {}: ",
                    col.column_path().string()
                )))
            })?;
        }
    }
    let builder = ParquetRecordBatchReaderBuilder::new_with_metadata(r, meta);
    let plan = conform::plan(builder.schema().as_ref())?;
    let reader = guarded("Parquet file", || {
        builder
            .build()
            .map_err(|e| Error::usage(format!("cannot read Parquet file: {e}")))
    })?;
    let batches = reader.map(|b| b.map_err(|e| Error::usage(format!("corrupt Parquet file: {e}"))));
    sourced(
        guarded_batches("Parquet file", batches),
        &plan,
        max_value,
        emit,
    )
}

/// Fill `buf`, or up to the end of the input.
pub(super) fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}
