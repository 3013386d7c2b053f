//! Delta checkpoints of the store's table: `_delta_log/<version, 20 digits>.checkpoint.parquet`,
//! a classic single-file (V1) checkpoint, so that a Delta reader opening the table reads one
//! Parquet file and the versions after it instead of every JSON version from 0.
//!
//! ```text
//! _delta_log/00000000000000000100.checkpoint.parquet   the table as of version 100
//! ```
//!
//! A checkpoint is the replay of the JSON versions 0..=N ([`Snapshot`]): the protocol, the
//! newest `metaData`, one `txn` per application id, every live `add` and every `remove`
//! still a tombstone (the table's file retention is a century, so every one is), one
//! action per row in the columns `txn`, `add`, `remove`, `metaData`, `protocol`.
//! Rows are ordered (protocol, metaData, txns by app id, adds by path, removes by path),
//! so the bytes are a pure function of the JSON versions: two sealers and a retry write
//! the same file, published create-only.
//!
//! Readers find a checkpoint by listing `_delta_log/` (delta-rs, delta-kernel-rs and so
//! DuckDB `delta_scan`, Polars and Spark all do when `_last_checkpoint` is absent).
//! `_last_checkpoint` is never written: it is rewritten in place, which a create-only
//! store refuses. Which versions get one is the sealer's choice ([`due`]); a checkpoint is
//! an optimisation, never required, and `verify` holds every one present to the replay
//! of the versions it covers.
//!
//! Checkpoints are off unless asked for (`lineage seal --delta-checkpoint-interval N`,
//! `lineage compact --delta-checkpoint`): a file named `*.parquet` under `_delta_log/` is
//! read as data by a recursive glob (`read_parquet('S/**/*.parquet')`), as in every Delta
//! table; the partition-layout glob (`S/run_id=*/target_crs=*/*.parquet`) and pyarrow's
//! dataset discovery never see it.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef};
use bytes::Bytes;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use serde_json::Value;

use crate::base::error::{Error, Result};
pub use crate::format::keys::{
    delta_checkpoint_key as checkpoint_key, parse_delta_checkpoint_key as parse_checkpoint_key,
};

/// Rows per record batch while encoding and decoding.
const BATCH_ROWS: usize = 8192;

/// Whether the sealer writes a checkpoint for version `v`: every `interval` versions
/// (0: never), and for a version that removes files (a compaction: the table shrinks,
/// and every reader would otherwise replay the adds and the removes).
pub fn due(v: u64, interval: u64, removes: bool) -> bool {
    interval > 0 && v > 0 && (v.is_multiple_of(interval) || removes)
}

/// The table state after replaying versions in order: what a checkpoint holds. Actions
/// are kept as their JSON text (the rows of the checkpoint, before encoding).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// The version replayed last (`None`: nothing yet).
    pub version: Option<u64>,
    protocol: Option<String>,
    metadata: Option<String>,
    txns: BTreeMap<String, String>,
    adds: BTreeMap<String, String>,
    removes: BTreeMap<String, String>,
}

impl Snapshot {
    /// Apply version `v`'s actions (as [`crate::format::delta::parse_actions`] gives them).
    pub fn apply(&mut self, v: u64, actions: &[(String, Value)]) -> Result<()> {
        let bad = |m: String| Error::Corrupt {
            what: "Delta version",
            key: crate::format::keys::delta_version_key(v),
            message: m.into(),
        };
        for (kind, body) in actions {
            let text = serde_json::to_string(body).map_err(Error::internal_from)?;
            let path = || {
                body.get("path")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .ok_or_else(|| bad(format!("a `{kind}` without a path")))
            };
            match kind.as_str() {
                "protocol" => self.protocol = Some(text),
                "metaData" => self.metadata = Some(text),
                "txn" => {
                    let app = body
                        .get("appId")
                        .and_then(Value::as_str)
                        .ok_or_else(|| bad("a `txn` without an appId".into()))?;
                    self.txns.insert(app.to_string(), text);
                }
                "add" => {
                    let p = path()?;
                    self.removes.remove(&p);
                    self.adds.insert(p, text);
                }
                "remove" => {
                    let p = path()?;
                    self.adds.remove(&p);
                    self.removes.insert(p, text);
                }
                _ => {} // commitInfo and anything a checkpoint does not keep
            }
        }
        self.version = Some(v);
        Ok(())
    }

    /// Live files (adds) in the table.
    pub fn files(&self) -> usize {
        self.adds.len()
    }

    /// Rows of the checkpoint, in order: `{"<action>": {…}}` lines.
    fn rows(&self) -> impl Iterator<Item = (&'static str, &String)> + '_ {
        let protocol = self.protocol.iter().map(|t| ("protocol", t));
        let metadata = self.metadata.iter().map(|t| ("metaData", t));
        protocol
            .chain(metadata)
            .chain(self.txns.values().map(|t| ("txn", t)))
            .chain(self.adds.values().map(|t| ("add", t)))
            .chain(self.removes.values().map(|t| ("remove", t)))
    }

    /// The checkpoint's bytes (a Parquet file of [`schema`]).
    pub fn encode(&self) -> Result<Vec<u8>> {
        let schema = schema();
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .build();
        let mut out = Vec::new();
        let mut writer = ArrowWriter::try_new(&mut out, schema.clone(), Some(props))?;
        let mut decoder = arrow_json::ReaderBuilder::new(schema.clone())
            .with_batch_size(BATCH_ROWS)
            .build_decoder()?;
        let mut pending = 0usize;
        let mut line = Vec::new();
        for (kind, text) in self.rows() {
            line.clear();
            line.extend_from_slice(b"{\"");
            line.extend_from_slice(kind.as_bytes());
            line.extend_from_slice(b"\":");
            line.extend_from_slice(text.as_bytes());
            line.extend_from_slice(b"}\n");
            let used = decoder.decode(&line)?;
            if used != line.len() {
                // The batch filled: flush it and decode the rest of the line.
                flush(&mut decoder, &mut writer)?;
                decoder.decode(&line[used..])?;
                pending = 0;
            }
            pending += 1;
            if pending == BATCH_ROWS {
                flush(&mut decoder, &mut writer)?;
                pending = 0;
            }
        }
        flush(&mut decoder, &mut writer)?;
        writer.close()?;
        Ok(out)
    }
}

fn flush(
    decoder: &mut arrow_json::reader::Decoder,
    writer: &mut ArrowWriter<&mut Vec<u8>>,
) -> Result<()> {
    if let Some(batch) = decoder.flush()? {
        writer.write(&batch)?;
    }
    Ok(())
}

/// A checkpoint's rows as canonical JSON lines (`{"add":{…}}`, nulls left out), in file
/// order: what two checkpoints are compared by, whatever their Parquet encoding.
pub fn decode_rows(key: &str, bytes: Bytes) -> Result<Vec<String>> {
    let bad = |m: String| Error::Corrupt {
        what: "Delta checkpoint",
        key: key.to_string(),
        message: m.into(),
    };
    let reader = ParquetRecordBatchReaderBuilder::try_new(bytes)
        .map_err(|e| bad(e.to_string()))?
        .with_batch_size(BATCH_ROWS)
        .build()
        .map_err(|e| bad(e.to_string()))?;
    let mut out = Vec::new();
    for batch in reader {
        let batch: RecordBatch = batch.map_err(|e| bad(e.to_string()))?;
        let mut w = arrow_json::LineDelimitedWriter::new(Vec::new());
        w.write(&batch).map_err(|e| bad(e.to_string()))?;
        w.finish().map_err(|e| bad(e.to_string()))?;
        let text = String::from_utf8(w.into_inner()).map_err(|e| bad(e.to_string()))?;
        for l in text.lines() {
            // Canonical: keys sorted (serde_json's map is ordered), nulls already left out.
            let v: Value = serde_json::from_str(l).map_err(|e| bad(e.to_string()))?;
            out.push(v.to_string());
        }
    }
    Ok(out)
}

fn string_map(name: &str, values_nullable: bool) -> Field {
    let entries = Field::new(
        "key_value",
        DataType::Struct(Fields::from(vec![
            Field::new("key", DataType::Utf8, false),
            Field::new("value", DataType::Utf8, values_nullable),
        ])),
        false,
    );
    Field::new(name, DataType::Map(Arc::new(entries), false), true)
}

fn string_list(name: &str) -> Field {
    Field::new(
        name,
        DataType::List(Arc::new(Field::new("element", DataType::Utf8, false))),
        true,
    )
}

fn strukt(name: &str, fields: Vec<Field>) -> Field {
    Field::new(name, DataType::Struct(Fields::from(fields)), true)
}

/// The checkpoint's Arrow schema: the actions a table of ours has, with the field names
/// and types of the Delta protocol (as delta-rs and Spark write them; nullable wherever
/// a reader accepts a null).
pub fn schema() -> SchemaRef {
    use DataType::{Boolean, Int32, Int64, Utf8};
    let s = |n: &str| Field::new(n, Utf8, true);
    let i = |n: &str| Field::new(n, Int64, true);
    let b = |n: &str| Field::new(n, Boolean, true);
    Arc::new(Schema::new(vec![
        strukt(
            "txn",
            vec![
                Field::new("appId", Utf8, false),
                Field::new("version", Int64, false),
                i("lastUpdated"),
            ],
        ),
        strukt(
            "add",
            vec![
                Field::new("path", Utf8, false),
                string_map("partitionValues", true),
                Field::new("size", Int64, false),
                Field::new("modificationTime", Int64, false),
                Field::new("dataChange", Boolean, false),
                s("stats"),
                string_map("tags", true),
            ],
        ),
        strukt(
            "remove",
            vec![
                Field::new("path", Utf8, false),
                i("deletionTimestamp"),
                Field::new("dataChange", Boolean, false),
                b("extendedFileMetadata"),
                string_map("partitionValues", true),
                i("size"),
                string_map("tags", true),
            ],
        ),
        strukt(
            "metaData",
            vec![
                Field::new("id", Utf8, false),
                s("name"),
                s("description"),
                strukt(
                    "format",
                    vec![
                        Field::new("provider", Utf8, false),
                        string_map("options", true),
                    ],
                ),
                s("schemaString"),
                string_list("partitionColumns"),
                string_map("configuration", true),
                i("createdTime"),
            ],
        ),
        strukt(
            "protocol",
            vec![
                Field::new("minReaderVersion", Int32, false),
                Field::new("minWriterVersion", Int32, false),
                string_list("readerFeatures"),
                string_list("writerFeatures"),
            ],
        ),
    ]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn actions(lines: &str) -> Vec<(String, Value)> {
        crate::format::delta::parse_actions("t", lines.as_bytes()).unwrap()
    }

    #[test]
    fn keys_round_trip_and_nothing_else_parses() {
        assert_eq!(
            checkpoint_key(7),
            "_delta_log/00000000000000000007.checkpoint.parquet"
        );
        assert_eq!(parse_checkpoint_key(&checkpoint_key(123)), Some(123));
        for k in [
            "_delta_log/00000000000000000007.json",
            "_delta_log/7.checkpoint.parquet",
            "_delta_log/00000000000000000007.checkpoint.0000000001.0000000002.parquet",
            "_delta_log/_last_checkpoint",
        ] {
            assert_eq!(parse_checkpoint_key(k), None, "{k}");
        }
    }

    #[test]
    fn due_every_interval_and_on_removes() {
        assert!(!due(0, 10, true));
        assert!(due(10, 10, false));
        assert!(!due(11, 10, false));
        assert!(due(11, 10, true));
        assert!(!due(10, 0, true));
    }

    #[test]
    fn replay_encode_decode_round_trips_every_row() {
        let mut s = Snapshot::default();
        s.apply(0, &actions(concat!(
            r#"{"commitInfo":{"timestamp":1}}"#, "\n",
            r#"{"protocol":{"minReaderVersion":1,"minWriterVersion":7,"writerFeatures":["appendOnly","x"]}}"#, "\n",
            r#"{"metaData":{"id":"t","format":{"provider":"parquet","options":{}},"schemaString":"{}","partitionColumns":["run_id","target_crs"],"configuration":{"delta.appendOnly":"true"},"createdTime":5}}"#, "\n",
        ))).unwrap();
        s.apply(1, &actions(concat!(
            r#"{"txn":{"appId":"lineage-store/seal","version":1,"lastUpdated":9}}"#, "\n",
            r#"{"add":{"path":"run_id=a/target_crs=EPSG%3A4326/p1","partitionValues":{"run_id":"a","target_crs":"EPSG:4326"},"size":10,"modificationTime":3,"dataChange":true,"stats":"{\"numRecords\":2}","tags":{"k":"v"}}}"#, "\n",
            r#"{"add":{"path":"p2","partitionValues":{"run_id":"a","target_crs":"EPSG:4326"},"size":11,"modificationTime":4,"dataChange":true}}"#, "\n",
        ))).unwrap();
        s.apply(2, &actions(concat!(
            r#"{"txn":{"appId":"lineage-store/seal","version":2,"lastUpdated":10}}"#, "\n",
            r#"{"remove":{"path":"p2","deletionTimestamp":10,"dataChange":false,"extendedFileMetadata":true,"partitionValues":{"run_id":"a","target_crs":"EPSG:4326"},"size":11,"tags":{}}}"#, "\n",
        ))).unwrap();
        assert_eq!(s.files(), 1);
        let bytes = s.encode().unwrap();
        assert_eq!(bytes, s.encode().unwrap(), "a pure function");
        let rows = decode_rows("k", Bytes::from(bytes)).unwrap();
        assert_eq!(rows.len(), 5, "{rows:#?}");
        assert!(rows[0].starts_with(r#"{"protocol":{"minReaderVersion":1,"minWriterVersion":7,"writerFeatures":["appendOnly","x"]}"#), "{}", rows[0]);
        assert!(
            rows[1].contains(r#""configuration":{"delta.appendOnly":"true"}"#),
            "{}",
            rows[1]
        );
        assert!(
            rows[2].contains(r#""version":2"#),
            "the newest txn: {}",
            rows[2]
        );
        assert!(
            rows[3].contains(r#""stats":"{\"numRecords\":2}""#)
                && rows[3].contains(r#""tags":{"k":"v"}"#),
            "{}",
            rows[3]
        );
        assert!(
            rows[4].starts_with(r#"{"remove":{"dataChange":false"#),
            "{}",
            rows[4]
        );
    }
}
