//! One flush → one Parquet file in memory (zstd, statistics on), its sha256 and the
//! summary the pointer records. Encoded once; the hash is over exactly the bytes that
//! will be published, so nothing is written twice or read back.

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, TimestampMicrosecondType};
use arrow_array::RecordBatch;
use bytes::Bytes;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use sha2::{Digest, Sha256};

use crate::contract::{self, col};
use crate::error::{Error, Result};

/// A flush ready to publish.
#[derive(Debug, Clone)]
pub struct EncodedPart {
    /// The commit id written into the footer.
    pub commit_id: String,
    /// The Parquet file.
    pub bytes: Bytes,
    /// Lower-case hex sha256 of `bytes`.
    pub sha256: String,
    /// Rows in the part.
    pub rows: u64,
    /// Smallest and largest `sequence`.
    pub sequence: (i64, i64),
    /// Earliest and latest `event_time_utc`, microseconds.
    pub event_time_us: (i64, i64),
    /// The contract version written into the footer (the batch's columns say which).
    pub schema_version: String,
}

/// Writer settings. The schema version and commit id go into the footer's key-value
/// metadata here (what `pq.read_metadata` shows) and, through the Arrow schema, into the
/// embedded `ARROW:schema` (what `pq.read_schema` shows); arrow-rs does not copy one into
/// the other, so both are set.
fn props(commit_id: &str, version: &str) -> WriterProperties {
    WriterProperties::builder()
        .set_key_value_metadata(Some(vec![
            KeyValue::new(
                contract::META_SCHEMA_VERSION.to_string(),
                version.to_string(),
            ),
            KeyValue::new(contract::META_COMMIT_ID.to_string(), commit_id.to_string()),
        ]))
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .set_statistics_enabled(EnabledStatistics::Page)
        .set_created_by(format!("lineage-store {}", env!("CARGO_PKG_VERSION")))
        .build()
}

/// Lower-case hex sha256.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Encode `batch` (already validated) as the part of `commit_id`, as the contract version
/// its columns are (see [`contract::version_of_schema`]).
pub fn encode(batch: &RecordBatch, commit_id: &str) -> Result<EncodedPart> {
    let rows = batch.num_rows();
    if rows == 0 {
        return Err(Error::Internal("refusing to encode an empty flush".into()));
    }
    let version = contract::version_of_schema(batch.schema().as_ref())?;
    let schema = version.schema_for_commit(commit_id);
    let batch = RecordBatch::try_new(schema.clone(), batch.columns().to_vec())?;
    // Parquet with zstd comes to ~45 bytes per event; start near that to avoid regrowth.
    let mut writer = ArrowWriter::try_new(
        Vec::with_capacity(rows * 48 + 4096),
        schema,
        Some(props(commit_id, &version.version)),
    )?;
    writer.write(&batch)?;
    let buf = writer.into_inner()?;
    let sha256 = sha256_hex(&buf);
    let seq = batch.column(col::SEQUENCE).as_primitive::<Int64Type>();
    let time = batch
        .column(col::EVENT_TIME_UTC)
        .as_primitive::<TimestampMicrosecondType>();
    Ok(EncodedPart {
        commit_id: commit_id.to_string(),
        sha256,
        rows: rows as u64,
        sequence: min_max(seq.values()),
        event_time_us: min_max(time.values()),
        schema_version: version.version.clone(),
        bytes: Bytes::from(buf),
    })
}

fn min_max(v: &[i64]) -> (i64, i64) {
    v.iter()
        .fold((i64::MAX, i64::MIN), |(lo, hi), &x| (lo.min(x), hi.max(x)))
}
