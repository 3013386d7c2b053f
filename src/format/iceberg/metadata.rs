//! The Iceberg table metadata file (`v<N>.metadata.json`, format version 2).
//!
//! Key order, number format and field order are fixed by the structs here (maps are
//! ordered), so the bytes are a pure function of the values. [`TableMetadata::parse`]
//! reads back only a file these structs write: one that does not re-serialise to its own
//! bytes is not ours.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::manifest::{RUN_ID_PARTITION_FIELD, TARGET_CRS_PARTITION_FIELD};
use crate::schema::contract::{field_id, Column, Kind};

/// The table property naming each column id's name, for readers of parts written
/// without Parquet field ids (part encodings 1 to 3, compacted parts).
pub const NAME_MAPPING: &str = "schema.name-mapping.default";

/// Snapshot summary keys of ours: the seal a snapshot is.
pub const SEAL_SEQ: &str = "lineage.seal-seq";
/// See [`SEAL_SEQ`].
pub const SEAL_SHA256: &str = "lineage.seal-sha256";
/// See [`SEAL_SEQ`].
pub const TREE_SIZE: &str = "lineage.tree-size";
/// See [`SEAL_SEQ`].
pub const ROOT: &str = "lineage.root";
/// See [`SEAL_SEQ`]: the compaction ids a seal puts into effect, comma-separated.
pub const COMPACTIONS: &str = "lineage.compactions";

/// How many snapshots a metadata file holds: the newest seal's and the 99 before it
/// (older ones expire from newer files, as Iceberg's snapshot expiry does; seal k's own
/// `v<k>.metadata.json` keeps it). So a metadata file stays at most about 70 KB.
pub const SNAPSHOTS_KEPT: usize = 100;

/// The Iceberg type of a contract kind.
pub fn iceberg_type(kind: Kind) -> &'static str {
    match kind {
        Kind::Str => "string",
        Kind::I64 => "long",
        Kind::I32 => "int",
        Kind::F64 => "double",
        Kind::Bool => "boolean",
        Kind::TimestampUtc => "timestamptz",
    }
}

/// One column of a schema.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchemaField {
    /// The column id (the contract's, [`field_id`]).
    pub id: i32,
    /// Its name.
    pub name: String,
    /// Always false: every column is nullable in the parts.
    pub required: bool,
    /// Its Iceberg type.
    #[serde(rename = "type")]
    pub kind: String,
}

/// A schema (one per contract version the table has had).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Schema {
    /// Always `struct`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Its id.
    #[serde(rename = "schema-id")]
    pub schema_id: i32,
    /// Its columns.
    pub fields: Vec<SchemaField>,
}

impl Schema {
    /// The schema of a contract version's `columns`, as schema `id`.
    pub fn of(id: i32, columns: &[Column]) -> Self {
        Schema {
            kind: "struct".into(),
            schema_id: id,
            fields: columns
                .iter()
                .enumerate()
                .map(|(i, c)| SchemaField {
                    id: field_id(i),
                    name: c.name.to_string(),
                    required: false,
                    kind: iceberg_type(c.kind).to_string(),
                })
                .collect(),
        }
    }

    /// Its JSON (as a manifest's header names it).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The id of column `name`.
    fn id_of(&self, name: &str) -> i32 {
        self.fields
            .iter()
            .find(|f| f.name == name)
            .map_or(0, |f| f.id)
    }

    /// The name mapping ([`NAME_MAPPING`]): each column id with its name.
    pub fn name_mapping(&self) -> String {
        let m: Vec<serde_json::Value> = self
            .fields
            .iter()
            .map(|f| serde_json::json!({"field-id": f.id, "names": [f.name]}))
            .collect();
        serde_json::Value::Array(m).to_string()
    }
}

/// A partition field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionField {
    /// The partition column's name.
    pub name: String,
    /// Always `identity`.
    pub transform: String,
    /// The source column id.
    #[serde(rename = "source-id")]
    pub source_id: i32,
    /// The partition field id.
    #[serde(rename = "field-id")]
    pub field_id: i32,
}

/// The partition spec: identity on `run_id` and `target_crs`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionSpec {
    /// Always 0.
    #[serde(rename = "spec-id")]
    pub spec_id: i32,
    /// Its fields.
    pub fields: Vec<PartitionField>,
}

impl PartitionSpec {
    /// The spec over `schema`'s `run_id` and `target_crs`.
    pub fn of(schema: &Schema) -> Self {
        let f = |name: &str, id| PartitionField {
            name: name.to_string(),
            transform: "identity".into(),
            source_id: schema.id_of(name),
            field_id: id,
        };
        PartitionSpec {
            spec_id: 0,
            fields: vec![
                f("run_id", RUN_ID_PARTITION_FIELD),
                f("target_crs", TARGET_CRS_PARTITION_FIELD),
            ],
        }
    }

    /// Its fields as JSON (as a manifest's header names them).
    pub fn fields_json(&self) -> String {
        serde_json::to_string(&self.fields).unwrap_or_default()
    }
}

/// A sort order (the table has only the unsorted one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SortOrder {
    /// Always 0.
    #[serde(rename = "order-id")]
    pub order_id: i32,
    /// Always empty.
    pub fields: Vec<serde_json::Value>,
}

/// One snapshot: one seal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    /// The seal's sequence number.
    #[serde(rename = "snapshot-id")]
    pub snapshot_id: i64,
    /// The seal before (absent for seal 1).
    #[serde(
        rename = "parent-snapshot-id",
        skip_serializing_if = "Option::is_none",
        default
    )]
    pub parent_snapshot_id: Option<i64>,
    /// The seal's sequence number.
    #[serde(rename = "sequence-number")]
    pub sequence_number: i64,
    /// The seal's time in ms, at least the snapshot before's.
    #[serde(rename = "timestamp-ms")]
    pub timestamp_ms: i64,
    /// Its manifest list's absolute location.
    #[serde(rename = "manifest-list")]
    pub manifest_list: String,
    /// `operation`, the counts, and the seal ([`SEAL_SEQ`] and beside it).
    pub summary: BTreeMap<String, String>,
    /// The schema as of it.
    #[serde(rename = "schema-id")]
    pub schema_id: i32,
}

/// A snapshot-log entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotLogEntry {
    /// The snapshot.
    #[serde(rename = "snapshot-id")]
    pub snapshot_id: i64,
    /// When it became current.
    #[serde(rename = "timestamp-ms")]
    pub timestamp_ms: i64,
}

/// A branch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ref {
    /// The snapshot it points at.
    #[serde(rename = "snapshot-id")]
    pub snapshot_id: i64,
    /// Always `branch`.
    #[serde(rename = "type")]
    pub kind: String,
}

/// A table metadata file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableMetadata {
    /// Always 2.
    #[serde(rename = "format-version")]
    pub format_version: i32,
    /// From the store's identity ([`table_uuid`]).
    #[serde(rename = "table-uuid")]
    pub table_uuid: String,
    /// The store's absolute location.
    pub location: String,
    /// The newest snapshot's sequence number.
    #[serde(rename = "last-sequence-number")]
    pub last_sequence_number: i64,
    /// The newest snapshot's time.
    #[serde(rename = "last-updated-ms")]
    pub last_updated_ms: i64,
    /// The highest column id.
    #[serde(rename = "last-column-id")]
    pub last_column_id: i32,
    /// The current schema.
    #[serde(rename = "current-schema-id")]
    pub current_schema_id: i32,
    /// Every schema the table has had.
    pub schemas: Vec<Schema>,
    /// Always 0.
    #[serde(rename = "default-spec-id")]
    pub default_spec_id: i32,
    /// The one spec.
    #[serde(rename = "partition-specs")]
    pub partition_specs: Vec<PartitionSpec>,
    /// The highest partition field id.
    #[serde(rename = "last-partition-id")]
    pub last_partition_id: i32,
    /// Always 0.
    #[serde(rename = "default-sort-order-id")]
    pub default_sort_order_id: i32,
    /// The unsorted order.
    #[serde(rename = "sort-orders")]
    pub sort_orders: Vec<SortOrder>,
    /// [`NAME_MAPPING`] and the store's own.
    pub properties: BTreeMap<String, String>,
    /// The newest snapshot.
    #[serde(rename = "current-snapshot-id")]
    pub current_snapshot_id: i64,
    /// `main` at the newest snapshot.
    pub refs: BTreeMap<String, Ref>,
    /// The newest [`SNAPSHOTS_KEPT`] snapshots, oldest first.
    pub snapshots: Vec<Snapshot>,
    /// The same snapshots with their times.
    #[serde(rename = "snapshot-log")]
    pub snapshot_log: Vec<SnapshotLogEntry>,
    /// Always empty: each seal's metadata file is named by its number.
    #[serde(rename = "metadata-log")]
    pub metadata_log: Vec<serde_json::Value>,
}

/// The table's UUID: a v8 UUID from the sha256 of the store id (so a replica shares it,
/// and it is not the Delta table's id).
pub fn table_uuid(store_id: &str) -> String {
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    h.update(b"lineage-store iceberg table uuid/1\n");
    h.update(store_id.as_bytes());
    let d = h.finalize();
    let mut b = [0u8; 16];
    b.copy_from_slice(&d[..16]);
    uuid::Builder::from_custom_bytes(b).into_uuid().to_string()
}

/// The sync marker of an Avro file named `name` of table `uuid`: fixed by both, never random.
pub fn sync_marker(uuid: &str, name: &str) -> [u8; 16] {
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    h.update(b"lineage-store iceberg avro sync/1\n");
    h.update(uuid.as_bytes());
    h.update(b"\n");
    h.update(name.as_bytes());
    let d = h.finalize();
    let mut b = [0u8; 16];
    b.copy_from_slice(&d[..16]);
    b
}

impl TableMetadata {
    /// The table with no snapshot yet: `schema` current, at `location`.
    pub fn new(uuid: String, location: String, schema: Schema) -> Self {
        let spec = PartitionSpec::of(&schema);
        let mut properties = BTreeMap::new();
        properties.insert(NAME_MAPPING.to_string(), schema.name_mapping());
        TableMetadata {
            format_version: 2,
            table_uuid: uuid,
            location,
            last_sequence_number: 0,
            last_updated_ms: 0,
            last_column_id: schema.fields.iter().map(|f| f.id).max().unwrap_or(0),
            current_schema_id: schema.schema_id,
            schemas: vec![schema],
            default_spec_id: 0,
            partition_specs: vec![spec],
            last_partition_id: TARGET_CRS_PARTITION_FIELD,
            default_sort_order_id: 0,
            sort_orders: vec![SortOrder {
                order_id: 0,
                fields: Vec::new(),
            }],
            properties,
            current_snapshot_id: -1,
            refs: BTreeMap::new(),
            snapshots: Vec::new(),
            snapshot_log: Vec::new(),
            metadata_log: Vec::new(),
        }
    }

    /// The current schema.
    pub fn schema(&self) -> Option<&Schema> {
        self.schemas
            .iter()
            .find(|s| s.schema_id == self.current_schema_id)
    }

    /// Make `schema` (a later contract version's) current.
    pub fn evolve(&mut self, schema: Schema) {
        self.last_column_id = self
            .last_column_id
            .max(schema.fields.iter().map(|f| f.id).max().unwrap_or(0));
        self.current_schema_id = schema.schema_id;
        self.properties
            .insert(NAME_MAPPING.to_string(), schema.name_mapping());
        self.schemas.push(schema);
    }

    /// The newest snapshot.
    pub fn current(&self) -> Option<&Snapshot> {
        self.snapshots.last()
    }

    /// Add `snap` as the newest snapshot (its time at least the one before's).
    pub fn push(&mut self, mut snap: Snapshot) {
        snap.timestamp_ms = snap.timestamp_ms.max(self.last_updated_ms);
        self.last_sequence_number = snap.sequence_number;
        self.last_updated_ms = snap.timestamp_ms;
        self.current_snapshot_id = snap.snapshot_id;
        self.refs.insert(
            "main".into(),
            Ref {
                snapshot_id: snap.snapshot_id,
                kind: "branch".into(),
            },
        );
        self.snapshot_log.push(SnapshotLogEntry {
            snapshot_id: snap.snapshot_id,
            timestamp_ms: snap.timestamp_ms,
        });
        self.snapshots.push(snap);
        let expired = self.snapshots.len().saturating_sub(SNAPSHOTS_KEPT);
        self.snapshots.drain(..expired);
        let expired = self.snapshot_log.len().saturating_sub(SNAPSHOTS_KEPT);
        self.snapshot_log.drain(..expired);
    }

    /// Its bytes: compact JSON (a snapshot is about 700 bytes of it) and a newline.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut b = serde_json::to_vec(self).unwrap_or_default();
        b.push(b'\n');
        b
    }

    /// A metadata file written by [`Self::to_bytes`] (any other bytes: an error).
    pub fn parse(bytes: &[u8]) -> Result<Self, String> {
        let m: TableMetadata = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
        if m.to_bytes() != bytes {
            return Err("not in the form lineage-store writes".into());
        }
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::contract::COLUMNS;

    #[test]
    fn round_trips_and_ids() {
        let s = Schema::of(0, &COLUMNS);
        assert_eq!(s.fields[0].id, 1);
        assert_eq!(s.fields[14].id, 15);
        let spec = PartitionSpec::of(&s);
        assert_eq!(spec.fields[0].source_id, 2);
        let mut m = TableMetadata::new(table_uuid("x"), "/s".into(), s);
        m.push(Snapshot {
            snapshot_id: 1,
            parent_snapshot_id: None,
            sequence_number: 1,
            timestamp_ms: 5,
            manifest_list: "/s/_iceberg/metadata/snap-1.avro".into(),
            summary: BTreeMap::new(),
            schema_id: 0,
        });
        let b = m.to_bytes();
        assert_eq!(TableMetadata::parse(&b).unwrap(), m);
        let mut other = b.clone();
        other.insert(1, b'\n');
        assert!(TableMetadata::parse(&other).is_err());
        assert_ne!(table_uuid("x"), table_uuid("y"));
    }

    #[test]
    fn keeps_the_newest_snapshots_with_time_never_going_back() {
        let mut m = TableMetadata::new(table_uuid("x"), "/s".into(), Schema::of(0, &COLUMNS));
        for k in 1..=150i64 {
            m.push(Snapshot {
                snapshot_id: k,
                parent_snapshot_id: (k > 1).then(|| k - 1),
                sequence_number: k,
                timestamp_ms: if k == 120 { 0 } else { k * 10 },
                manifest_list: String::new(),
                summary: BTreeMap::new(),
                schema_id: 0,
            });
        }
        assert_eq!(m.snapshots.len(), SNAPSHOTS_KEPT);
        assert_eq!(m.snapshots[0].snapshot_id, 51);
        assert_eq!(m.snapshot_log.len(), SNAPSHOTS_KEPT);
        assert_eq!(m.current_snapshot_id, 150);
        assert_eq!(m.snapshots[69].timestamp_ms, 1190); // seal 120's clock was behind
    }
}
