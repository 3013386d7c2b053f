//! The Delta Lake transaction log of a store: `_delta_log/<version, 20 digits>.json`, one
//! version per seal, so that every Delta reader (Spark, DuckDB `delta_scan`, Polars
//! `read_delta`, delta-rs) reads exactly the sealed commits, as of any seal.
//!
//! ```text
//! _delta_log/00000000000000000000.json   version 0: commitInfo, protocol, metaData (the table)
//! _delta_log/<N, 20 digits>.json         version N = seal N: commitInfo, [metaData], txn, add…
//! ```
//!
//! Seals are numbered from 1 ([`crate::history::seal`]), Delta versions from 0: version 0
//! creates the (empty) table, and version N is seal N for every N ≥ 1, so
//! `DeltaTable(store, version=N)` is the store as of seal N and `version()` is the newest
//! seal's sequence number. A seal that adds nothing is a version with only its provenance.
//!
//! Every byte is a pure function of the store's identity, the seals and the pointers (and
//! part footers) they name ([`version_bytes`]): two sealers, a retry and a replica write
//! identical versions, so each is published create-only and "already exists" is settled
//! by comparing bytes. No `_last_checkpoint` is ever written (it is rewritten in place).
//!
//! Choices (docs/architecture.md, "The Delta log"):
//! - **protocol**: reader 1, writer 7 with the writer features `appendOnly` and
//!   [`WRITER_FEATURE`]. Readers ignore writer features; every Delta writer refuses a table
//!   with a writer feature it does not know, so no foreign writer can take the version
//!   number the next seal needs (create-only objects would make that permanent).
//! - **metaData**: id [`table_id`] (from the store id), `schemaString` from the contract
//!   registry (every field nullable, as in the parts; `event_time_utc` a Delta
//!   `timestamp`), partition columns `run_id`, `target_crs`, `delta.appendOnly`, log and
//!   file retention of 100 years, no expired-log clean-up; `createdTime` is seal 1's time.
//!   Version 0 has the contract's first version (1.2.0); a newer version first sealed in
//!   version N adds a `metaData` there (the union schema: older parts read with nulls).
//! - **add**: `path` percent-encoded once (everything but unreserved characters, `=` and
//!   `/`, so `:` and `+` too), `partitionValues` plain, `size` the pointer's,
//!   `modificationTime` its `committed_utc`, stats from the part's footer, tags with the
//!   commit id and the part's and pointer's sha256.

use std::collections::BTreeMap;

use chrono::DateTime;
use serde::Serialize;
use serde_json::Value;

use crate::base::error::{Error, Result};
use crate::format::delta_stats::{FileStats, STATS_COLUMNS};
use crate::format::pointer::Pointer;
use crate::schema::contract::{Column, Kind, PARTITION_KEYS};

pub use crate::format::keys::{
    delta_version_key as version_key, parse_delta_version_key as parse_version_key,
    DELTA_LOG_PREFIX,
};
/// The `txn` application id of every seal's version (its `version` is the seal's sequence).
pub const SEAL_APP_ID: &str = "lineage-store/seal";
/// Our writer feature: readers ignore it, foreign writers refuse the table.
pub const WRITER_FEATURE: &str = "lineageStoreSeals";
/// Log and deleted-file retention: far beyond any audit period (delta-rs and Spark both
/// parse `interval <n> days`).
pub const RETENTION: &str = "interval 36500 days";
/// The table's `metaData.id`: a UUID (version 8) from the sha256 of the store id, so a store
/// and its replicas name one table, and two stores never do.
pub fn table_id(store_id: &str) -> String {
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    h.update(b"lineage-store delta table id/1\n");
    h.update(store_id.as_bytes());
    let d = h.finalize();
    let mut b = [0u8; 16];
    b.copy_from_slice(&d[..16]);
    uuid::Builder::from_custom_bytes(b).into_uuid().to_string()
}

/// The Delta primitive type of a contract kind.
pub fn delta_type(kind: Kind) -> &'static str {
    match kind {
        Kind::Str => "string",
        Kind::I64 => "long",
        Kind::I32 => "integer",
        Kind::F64 => "double",
        Kind::TimestampUtc => "timestamp",
        Kind::Bool => "boolean",
    }
}

#[derive(Serialize)]
struct StructField<'a> {
    name: &'a str,
    #[serde(rename = "type")]
    kind: &'a str,
    nullable: bool,
    metadata: BTreeMap<String, String>,
}

#[derive(Serialize)]
struct StructType<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    fields: Vec<StructField<'a>>,
}

/// The `schemaString` of a contract version's columns: every field nullable, as in the
/// parts (which fields may hold null is a rule checked row by row, not the schema's).
pub fn schema_string(columns: &[Column]) -> Result<String> {
    let s = StructType {
        kind: "struct",
        fields: columns
            .iter()
            .map(|c| StructField {
                name: c.name,
                kind: delta_type(c.kind),
                nullable: true,
                metadata: BTreeMap::new(),
            })
            .collect(),
    };
    serde_json::to_string(&s).map_err(Error::internal_from)
}

/// A part's key as a Delta `add.path`: a relative URI, percent-encoded once. Every byte
/// but ASCII letters, digits, `-._~` and the layout's `=` and `/` is encoded, so a
/// `run_id` like `scheduled__2026-07-13T06:00:00+00:00` is one path segment to a URI
/// parser (`:` would start a scheme, `+` may be read as a space).
pub fn encode_path(key: &str) -> String {
    let mut out = String::with_capacity(key.len() + 16);
    for b in key.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'=' | b'/') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Decode [`encode_path`] (any `%XX` escape; `None` when one is malformed or the bytes are
/// not UTF-8).
pub fn decode_path(path: &str) -> Option<String> {
    let b = path.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = path.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The table as of a version: what a `metaData` action says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// [`table_id`] of the store.
    pub id: String,
    /// Seal 1's time, milliseconds.
    pub created_ms: i64,
    /// The contract version whose columns are the schema.
    pub contract: String,
    /// Whether its `metaData` declares [`STATS_COLUMNS`] (every version written since
    /// issue 35 says so in `commitInfo.lineageStore.statsColumns`; a table sealed before
    /// gets the declaration in the next seal's version).
    pub declared: bool,
}

/// What a seal's version says of the seal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealFacts {
    /// Its sequence number (= the version).
    pub seq: u64,
    /// sha256 of the seal object's exact bytes.
    pub sha256: String,
    /// Commits covered.
    pub tree_size: u64,
    /// Merkle root (hex).
    pub root: String,
    /// `sealed_utc`, milliseconds.
    pub sealed_ms: i64,
    /// The lineage-store that made the seal (the version's `engineInfo`).
    pub tool_version: String,
}

/// One sealed commit, as its `add` describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct AddFile {
    /// The pointer as sealed.
    pub pointer: Pointer,
    /// sha256 of the pointer's bytes (the seal entry's digest).
    pub pointer_sha256: String,
    /// From the part's footer; `None` when the footer could not be read.
    pub stats: Option<FileStats>,
}

/// A compaction a seal puts into effect, as its version describes it: the sources
/// removed (`dataChange` false) and the compacted part added (`dataChange` false).
#[derive(Debug, Clone, PartialEq)]
pub struct CompactedFile {
    /// The record.
    pub record: crate::format::compaction::CompactionRecord,
    /// sha256 of the record's bytes (the seal's).
    pub record_sha256: String,
    /// From the compacted part's footer; `None` when it could not be read.
    pub stats: Option<FileStats>,
}

/// What one version holds.
#[derive(Debug, Clone, PartialEq)]
pub enum Version<'a> {
    /// Version 0: the table.
    Create {
        /// The table.
        table: &'a Table,
        /// Columns of `table.contract`.
        columns: &'a [Column],
        /// The engine that created it (seal 1's tool version).
        tool_version: &'a str,
    },
    /// Version N ≥ 1: seal N.
    Seal {
        /// The seal.
        seal: &'a SealFacts,
        /// The table after this version.
        table: &'a Table,
        /// Columns of `table.contract`, when this version changes the schema (a newer
        /// contract version first sealed here): then a `metaData` is written.
        new_columns: Option<&'a [Column]>,
        /// The commits the seal adds, in its entry order.
        adds: &'a [AddFile],
        /// The compactions the seal puts into effect, in its order.
        compactions: &'a [CompactedFile],
    },
}

#[derive(Serialize)]
struct Protocol {
    #[serde(rename = "minReaderVersion")]
    min_reader: u32,
    #[serde(rename = "minWriterVersion")]
    min_writer: u32,
    #[serde(rename = "writerFeatures")]
    writer_features: Vec<&'static str>,
}

#[derive(Serialize)]
struct Format {
    provider: &'static str,
    options: BTreeMap<String, String>,
}

#[derive(Serialize)]
struct MetaData<'a> {
    id: &'a str,
    format: Format,
    #[serde(rename = "schemaString")]
    schema_string: String,
    #[serde(rename = "partitionColumns")]
    partition_columns: [&'static str; 2],
    configuration: BTreeMap<&'static str, String>,
    #[serde(rename = "createdTime")]
    created_time: i64,
}

#[derive(Serialize)]
struct LineageInfo<'a> {
    #[serde(rename = "storeTable")]
    table: &'a str,
    #[serde(rename = "contractVersion")]
    contract: &'a str,
    #[serde(rename = "sealSeq", skip_serializing_if = "Option::is_none")]
    seq: Option<u64>,
    #[serde(rename = "sealSha256", skip_serializing_if = "Option::is_none")]
    sha256: Option<&'a str>,
    #[serde(rename = "treeSize", skip_serializing_if = "Option::is_none")]
    tree_size: Option<u64>,
    #[serde(rename = "root", skip_serializing_if = "Option::is_none")]
    root: Option<&'a str>,
    #[serde(rename = "compactions", skip_serializing_if = "Vec::is_empty")]
    compactions: Vec<&'a str>,
    #[serde(rename = "statsColumns", skip_serializing_if = "is_false")]
    declared: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

#[derive(Serialize)]
struct CommitInfo<'a> {
    timestamp: i64,
    operation: &'static str,
    #[serde(rename = "operationParameters")]
    operation_parameters: BTreeMap<&'static str, String>,
    #[serde(rename = "engineInfo")]
    engine_info: &'a str,
    #[serde(rename = "isBlindAppend")]
    is_blind_append: bool,
    #[serde(rename = "lineageStore")]
    lineage: LineageInfo<'a>,
}

#[derive(Serialize)]
struct Txn {
    #[serde(rename = "appId")]
    app_id: &'static str,
    version: u64,
    #[serde(rename = "lastUpdated")]
    last_updated: i64,
}

#[derive(Serialize)]
struct Add<'a> {
    path: String,
    #[serde(rename = "partitionValues")]
    partition_values: BTreeMap<&'static str, &'a str>,
    size: u64,
    #[serde(rename = "modificationTime")]
    modification_time: i64,
    #[serde(rename = "dataChange")]
    data_change: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stats: Option<String>,
    tags: BTreeMap<&'static str, &'a str>,
}

#[derive(Serialize)]
struct Remove<'a> {
    path: String,
    #[serde(rename = "deletionTimestamp")]
    deletion_timestamp: i64,
    #[serde(rename = "dataChange")]
    data_change: bool,
    #[serde(rename = "extendedFileMetadata")]
    extended_file_metadata: bool,
    #[serde(rename = "partitionValues")]
    partition_values: BTreeMap<&'static str, &'a str>,
    size: u64,
    tags: BTreeMap<&'static str, &'a str>,
}

/// Tag of a compacted part's `add`: the compaction id.
pub const TAG_COMPACTION_ID: &str = "lineage.compactionId";
/// Tag of a compacted part's `add`: the sha256 of its compaction record's bytes.
pub const TAG_RECORD_SHA256: &str = "lineage.recordSha256";
/// Tag of an `add`: the commit id.
pub const TAG_COMMIT_ID: &str = "lineage.commitId";
/// Tag of an `add`: the part's sha256.
pub const TAG_SHA256: &str = "lineage.sha256";
/// Tag of an `add`: the sha256 of the pointer's bytes, as sealed.
pub const TAG_POINTER_SHA256: &str = "lineage.pointerSha256";

/// Milliseconds of an RFC 3339 time, for `modificationTime` and timestamps.
pub fn millis(rfc3339: &str, what: &str) -> Result<i64> {
    DateTime::parse_from_rfc3339(rfc3339)
        .map(|t| t.timestamp_millis())
        .map_err(|e| Error::internal(format!("{what} {rfc3339:?} is not a time: {e}")))
}

fn line<T: Serialize>(out: &mut Vec<u8>, action: &str, v: &T) -> Result<()> {
    let mut m = BTreeMap::new();
    m.insert(action, v);
    serde_json::to_writer(&mut *out, &m).map_err(Error::internal_from)?;
    out.push(b'\n');
    Ok(())
}

fn metadata<'a>(table: &'a Table, columns: &[Column]) -> Result<MetaData<'a>> {
    Ok(MetaData {
        id: &table.id,
        format: Format {
            provider: "parquet",
            options: BTreeMap::new(),
        },
        schema_string: schema_string(columns)?,
        partition_columns: PARTITION_KEYS,
        configuration: configuration(table.declared),
        created_time: table.created_ms,
    })
}

/// The table properties of a `metaData`.
fn configuration(declared: bool) -> BTreeMap<&'static str, String> {
    let mut c = BTreeMap::from([
        ("delta.appendOnly", "true".to_string()),
        ("delta.logRetentionDuration", RETENTION.to_string()),
        ("delta.deletedFileRetentionDuration", RETENTION.to_string()),
        ("delta.enableExpiredLogCleanup", "false".to_string()),
    ]);
    if declared {
        c.insert("delta.dataSkippingStatsColumns", STATS_COLUMNS.to_string());
    }
    c
}

/// The protocol every version 0 writes.
fn protocol() -> Protocol {
    Protocol {
        min_reader: 1,
        min_writer: 7,
        writer_features: vec!["appendOnly", WRITER_FEATURE],
    }
}

/// The exact bytes of a version: one action per line, each line ending in `\n`, keys in a
/// fixed order (the same in every build).
pub fn version_bytes(v: &Version<'_>) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    match v {
        Version::Create {
            table,
            columns,
            tool_version,
        } => create_lines(&mut out, table, columns, tool_version)?,
        Version::Seal {
            seal,
            table,
            new_columns,
            adds,
            compactions,
        } => {
            seal_head_lines(&mut out, seal, table, *new_columns, compactions)?;
            for a in adds.iter() {
                line(&mut out, "add", &add(a, table.declared)?)?;
            }
            for c in compactions.iter() {
                compaction_lines(&mut out, seal.sealed_ms, c, table.declared)?;
            }
        }
    }
    Ok(out)
}

/// Version 0's actions: `commitInfo`, `protocol`, `metaData`.
fn create_lines(
    out: &mut Vec<u8>,
    table: &Table,
    columns: &[Column],
    tool_version: &str,
) -> Result<()> {
    let info = CommitInfo {
        timestamp: table.created_ms,
        operation: "CREATE TABLE",
        operation_parameters: BTreeMap::from([
            ("mode", "ErrorIfExists".to_string()),
            ("partitionBy", r#"["run_id","target_crs"]"#.to_string()),
        ]),
        engine_info: tool_version,
        is_blind_append: true,
        lineage: LineageInfo {
            table: &table.id,
            contract: &table.contract,
            seq: None,
            sha256: None,
            tree_size: None,
            root: None,
            compactions: Vec::new(),
            declared: table.declared,
        },
    };
    line(out, "commitInfo", &info)?;
    line(out, "protocol", &protocol())?;
    line(out, "metaData", &metadata(table, columns)?)
}

/// A seal's version up to its adds: `commitInfo`, a `metaData` when the schema changes,
/// and the seal's `txn`.
fn seal_head_lines(
    out: &mut Vec<u8>,
    seal: &SealFacts,
    table: &Table,
    new_columns: Option<&[Column]>,
    compactions: &[CompactedFile],
) -> Result<()> {
    let info = CommitInfo {
        timestamp: seal.sealed_ms,
        operation: "WRITE",
        operation_parameters: BTreeMap::from([
            ("mode", "Append".to_string()),
            ("partitionBy", r#"["run_id","target_crs"]"#.to_string()),
        ]),
        engine_info: &seal.tool_version,
        is_blind_append: compactions.is_empty(),
        lineage: LineageInfo {
            table: &table.id,
            contract: &table.contract,
            seq: Some(seal.seq),
            sha256: Some(&seal.sha256),
            tree_size: Some(seal.tree_size),
            root: Some(&seal.root),
            compactions: compactions
                .iter()
                .map(|c| c.record.compaction_id.as_str())
                .collect(),
            declared: table.declared,
        },
    };
    line(out, "commitInfo", &info)?;
    if let Some(columns) = new_columns {
        line(out, "metaData", &metadata(table, columns)?)?;
    }
    line(
        out,
        "txn",
        &Txn {
            app_id: SEAL_APP_ID,
            version: seal.seq,
            last_updated: seal.sealed_ms,
        },
    )
}

/// One compaction's actions: a `remove` of each source part (no data change), then the
/// `add` of the compacted part.
fn compaction_lines(
    out: &mut Vec<u8>,
    sealed_ms: i64,
    c: &CompactedFile,
    declared: bool,
) -> Result<()> {
    let r = &c.record;
    let values = BTreeMap::from([
        ("run_id", r.run_id.as_str()),
        ("target_crs", r.target_crs.as_str()),
    ]);
    for src in &r.sources {
        line(
            out,
            "remove",
            &Remove {
                path: encode_path(&src.part_path),
                deletion_timestamp: sealed_ms,
                data_change: false,
                extended_file_metadata: true,
                partition_values: values.clone(),
                size: src.size_bytes,
                tags: BTreeMap::from([
                    (TAG_COMMIT_ID, src.commit_id.as_str()),
                    (TAG_SHA256, src.sha256.as_str()),
                    (TAG_POINTER_SHA256, src.pointer_sha256.as_str()),
                ]),
            },
        )?;
    }
    let stats = c.stats.as_ref().map(|s| s.json(declared)).transpose()?;
    line(
        out,
        "add",
        &Add {
            path: encode_path(&r.part_path),
            partition_values: values,
            size: r.size_bytes,
            modification_time: millis(&r.compacted_utc, "compacted_utc")?,
            data_change: false,
            stats,
            tags: BTreeMap::from([
                (TAG_COMPACTION_ID, r.compaction_id.as_str()),
                (TAG_SHA256, r.sha256.as_str()),
                (TAG_RECORD_SHA256, c.record_sha256.as_str()),
            ]),
        },
    )
}

fn add(a: &AddFile, declared: bool) -> Result<Add<'_>> {
    let p = &a.pointer;
    let stats = a.stats.as_ref().map(|s| s.json(declared)).transpose()?;
    Ok(Add {
        path: encode_path(&p.part_path),
        partition_values: BTreeMap::from([
            ("run_id", p.run_id.as_str()),
            ("target_crs", p.target_crs.as_str()),
        ]),
        size: p.size_bytes,
        modification_time: millis(&p.committed_utc, "committed_utc")?,
        data_change: true,
        stats,
        tags: BTreeMap::from([
            (TAG_COMMIT_ID, p.commit_id.as_str()),
            (TAG_SHA256, p.sha256.as_str()),
            (TAG_POINTER_SHA256, a.pointer_sha256.as_str()),
        ]),
    })
}

/// One version's actions, parsed back (each line one JSON object with one key).
pub fn parse_actions(key: &str, bytes: &[u8]) -> Result<Vec<(String, Value)>> {
    let bad = |m: String| Error::Corrupt {
        what: "Delta version",
        key: key.to_string(),
        message: m.into(),
    };
    let text = std::str::from_utf8(bytes).map_err(|e| bad(format!("not UTF-8: {e}")))?;
    let mut out = Vec::new();
    for (i, l) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let v: serde_json::Map<String, Value> =
            serde_json::from_str(l).map_err(|e| bad(format!("line {}: {e}", i + 1)))?;
        let mut it = v.into_iter();
        match (it.next(), it.next()) {
            (Some((k, v)), None) => out.push((k, v)),
            _ => return Err(bad(format!("line {} is not one action", i + 1))),
        }
    }
    Ok(out)
}

/// Whether a version of ours says its table declares [`STATS_COLUMNS`]
/// (`commitInfo.lineageStore.statsColumns`).
pub fn recorded_declared(actions: &[(String, Value)]) -> bool {
    actions
        .iter()
        .find(|(k, _)| k == "commitInfo")
        .and_then(|(_, v)| v.pointer("/lineageStore/statsColumns"))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// The contract version a version of ours records as its table's schema
/// (`commitInfo.lineageStore.contractVersion`).
pub fn recorded_contract(actions: &[(String, Value)]) -> Option<String> {
    actions
        .iter()
        .find(|(k, _)| k == "commitInfo")
        .and_then(|(_, v)| v.pointer("/lineageStore/contractVersion"))
        .and_then(Value::as_str)
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::contract::COLUMNS;

    #[test]
    fn keys_paths_and_ids() {
        assert_eq!(version_key(7), "_delta_log/00000000000000000007.json");
        assert_eq!(parse_version_key(&version_key(7)), Some(7));
        for bad in [
            "_delta_log/7.json",
            "_delta_log/00000000000000000007.checkpoint.parquet",
            "_delta_log/_last_checkpoint",
        ] {
            assert_eq!(parse_version_key(bad), None, "{bad}");
        }
        let k = "run_id=scheduled__2026-07-13T06:00:00+00:00/target_crs=EPSG:4326/part-x.parquet";
        let e = encode_path(k);
        assert_eq!(
            e,
            "run_id=scheduled__2026-07-13T06%3A00%3A00%2B00%3A00/target_crs=EPSG%3A4326/part-x.parquet"
        );
        assert_eq!(decode_path(&e).as_deref(), Some(k));
        assert_eq!(encode_path("run_id=é @"), "run_id=%C3%A9%20%40");
        let a = table_id("0b6f0b8e-1111-4222-8333-444455556666");
        assert_eq!(a, table_id("0b6f0b8e-1111-4222-8333-444455556666"));
        assert_ne!(a, table_id("0b6f0b8e-1111-4222-8333-444455556667"));
        assert_eq!(uuid::Uuid::parse_str(&a).unwrap().get_version_num(), 8);
    }

    #[test]
    fn schema_has_every_column_nullable_with_a_delta_timestamp() {
        let s: Value = serde_json::from_str(&schema_string(&COLUMNS).unwrap()).unwrap();
        let fields = s["fields"].as_array().unwrap();
        assert_eq!(fields.len(), 15);
        assert!(fields.iter().all(|f| f["nullable"] == true));
        assert_eq!(fields[3]["name"], "event_time_utc");
        assert_eq!(fields[3]["type"], "timestamp");
        assert_eq!(fields[2]["type"], "long");
        assert_eq!(fields[10]["type"], "integer");
    }
}
