//! Arrow IPC (file or stream) and Parquet input: the schema must be the contract, matched
//! by name with lossless string re-encodings only ([`crate::conform`]).

use std::io::Cursor;

use arrow_array::RecordBatch;
use bytes::Bytes;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use crate::conform;
use crate::error::{Error, Result};
use crate::events::{Origin, SourcedBatch};

fn sourced(batches: Vec<RecordBatch>, plan: &conform::Plan) -> Result<Vec<SourcedBatch>> {
    let mut first = 1u64;
    batches
        .into_iter()
        .map(|b| {
            // In the contract schema, without the input's metadata: ours is added per commit.
            let b = plan.apply(&b)?;
            let sb = SourcedBatch {
                origin: Origin::Rows { first },
                batch: b,
            };
            first += sb.batch.num_rows() as u64;
            Ok(sb)
        })
        .collect()
}

pub(super) fn parse_arrow(bytes: Bytes) -> Result<Vec<SourcedBatch>> {
    let plan;
    let batches = if bytes.starts_with(b"ARROW1") {
        let r = arrow_ipc::reader::FileReader::try_new(Cursor::new(bytes), None)
            .map_err(|e| Error::Usage(format!("not a readable Arrow IPC file: {e}")))?;
        plan = conform::plan(r.schema().as_ref())?;
        r.collect::<Result<Vec<_>, _>>()
            .map_err(|e| Error::Usage(format!("corrupt Arrow IPC file: {e}")))?
    } else {
        let r = arrow_ipc::reader::StreamReader::try_new(Cursor::new(bytes), None)
            .map_err(|e| Error::Usage(format!("not a readable Arrow IPC file or stream: {e}")))?;
        plan = conform::plan(r.schema().as_ref())?;
        r.collect::<Result<Vec<_>, _>>()
            .map_err(|e| Error::Usage(format!("corrupt Arrow IPC stream: {e}")))?
    };
    sourced(batches, &plan)
}

pub(super) fn parse_parquet(bytes: Bytes) -> Result<Vec<SourcedBatch>> {
    let builder = ParquetRecordBatchReaderBuilder::try_new(bytes)
        .map_err(|e| Error::Usage(format!("not a readable Parquet file: {e}")))?;
    let plan = conform::plan(builder.schema().as_ref())?;
    let reader = builder
        .build()
        .map_err(|e| Error::Usage(format!("cannot read Parquet file: {e}")))?;
    let batches = reader
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Error::Usage(format!("corrupt Parquet file: {e}")))?;
    sourced(batches, &plan)
}
