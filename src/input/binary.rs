//! Arrow IPC (file or stream) and Parquet input: the schema must be the contract exactly.

use std::io::Cursor;

use arrow_array::RecordBatch;
use bytes::Bytes;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use crate::contract;
use crate::error::{Error, Result};
use crate::events::{Origin, SourcedBatch};

/// Batches of the registered contract version `schema` is (any registered version is
/// accepted and kept as that version).
fn sourced(schema: &arrow_schema::Schema, batches: Vec<RecordBatch>) -> Result<Vec<SourcedBatch>> {
    let version = contract::version_of_schema(schema)?;
    let mut first = 1u64;
    batches
        .into_iter()
        .map(|b| {
            // Drop the input's schema metadata: ours is added per commit.
            let b = RecordBatch::try_new(version.schema(), b.columns().to_vec())?;
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
    let batches = if bytes.starts_with(b"ARROW1") {
        let r = arrow_ipc::reader::FileReader::try_new(Cursor::new(bytes), None)
            .map_err(|e| Error::Usage(format!("not a readable Arrow IPC file: {e}")))?;
        let schema = r.schema();
        contract::version_of_schema(schema.as_ref())?;
        let b = r
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| Error::Usage(format!("corrupt Arrow IPC file: {e}")))?;
        (schema, b)
    } else {
        let r = arrow_ipc::reader::StreamReader::try_new(Cursor::new(bytes), None)
            .map_err(|e| Error::Usage(format!("not a readable Arrow IPC file or stream: {e}")))?;
        let schema = r.schema();
        contract::version_of_schema(schema.as_ref())?;
        let b = r
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| Error::Usage(format!("corrupt Arrow IPC stream: {e}")))?;
        (schema, b)
    };
    sourced(&batches.0, batches.1)
}

pub(super) fn parse_parquet(bytes: Bytes) -> Result<Vec<SourcedBatch>> {
    let builder = ParquetRecordBatchReaderBuilder::try_new(bytes)
        .map_err(|e| Error::Usage(format!("not a readable Parquet file: {e}")))?;
    let schema = builder.schema().clone();
    contract::version_of_schema(schema.as_ref())?;
    let reader = builder
        .build()
        .map_err(|e| Error::Usage(format!("cannot read Parquet file: {e}")))?;
    let batches = reader
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Error::Usage(format!("corrupt Parquet file: {e}")))?;
    sourced(&schema, batches)
}
