//! Arrow IPC (file or stream) and Parquet input: the schema must be the contract, matched
//! by name with lossless string re-encodings only ([`crate::write::conform`]).

use std::io::{Cursor, Read, Seek};

use arrow_array::RecordBatch;
use bytes::Bytes;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::file::reader::ChunkReader;

use crate::base::error::{Error, Result};
use crate::schema::events::{Origin, SourcedBatch};
use crate::write::conform;

/// Hands batches on in their contract version's schema, numbering rows from 1 across them.
fn sourced(
    batches: impl Iterator<Item = Result<RecordBatch>>,
    plan: &conform::Plan,
    emit: &mut dyn FnMut(SourcedBatch) -> Result<()>,
) -> Result<()> {
    let mut first = 1u64;
    for b in batches {
        // Columns by name, without the input's metadata: ours is added per commit.
        let b = plan.apply(&b?)?;
        let n = b.num_rows() as u64;
        emit(SourcedBatch::new(b, Origin::Rows { first }))?;
        first += n;
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
    collect(|emit| read_arrow(Cursor::new(bytes), emit))
}

pub(super) fn parse_parquet(bytes: Bytes) -> Result<Vec<SourcedBatch>> {
    collect(|emit| read_parquet(bytes, emit))
}

/// Read an Arrow IPC file (it starts with `ARROW1`) or stream, batch by batch.
pub(super) fn read_arrow<R: Read + Seek>(
    mut r: R,
    emit: &mut dyn FnMut(SourcedBatch) -> Result<()>,
) -> Result<()> {
    let mut magic = [0u8; 6];
    let n = read_full(&mut r, &mut magic).map_err(|e| Error::io("<input>", e))?;
    r.rewind().map_err(|e| Error::io("<input>", e))?;
    if n == 6 && &magic == b"ARROW1" {
        let rd = arrow_ipc::reader::FileReader::try_new(r, None)
            .map_err(|e| Error::Usage(format!("not a readable Arrow IPC file: {e}")))?;
        let plan = conform::plan(rd.schema().as_ref())?;
        sourced(
            rd.map(|b| b.map_err(|e| Error::Usage(format!("corrupt Arrow IPC file: {e}")))),
            &plan,
            emit,
        )
    } else {
        let rd = arrow_ipc::reader::StreamReader::try_new(std::io::BufReader::new(r), None)
            .map_err(|e| Error::Usage(format!("not a readable Arrow IPC file or stream: {e}")))?;
        let plan = conform::plan(rd.schema().as_ref())?;
        sourced(
            rd.map(|b| b.map_err(|e| Error::Usage(format!("corrupt Arrow IPC stream: {e}")))),
            &plan,
            emit,
        )
    }
}

/// Read a Parquet file, batch by batch.
pub(super) fn read_parquet<R: ChunkReader + 'static>(
    r: R,
    emit: &mut dyn FnMut(SourcedBatch) -> Result<()>,
) -> Result<()> {
    let builder = ParquetRecordBatchReaderBuilder::try_new(r)
        .map_err(|e| Error::Usage(format!("not a readable Parquet file: {e}")))?;
    let plan = conform::plan(builder.schema().as_ref())?;
    let reader = builder
        .build()
        .map_err(|e| Error::Usage(format!("cannot read Parquet file: {e}")))?;
    sourced(
        reader.map(|b| b.map_err(|e| Error::Usage(format!("corrupt Parquet file: {e}")))),
        &plan,
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
