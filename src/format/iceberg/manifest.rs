//! Iceberg manifests and manifest lists (format version 2), as Avro files ([`super::avro`]).
//!
//! The Avro schemas are the specification's ("Manifests", "Manifest Lists"), with its
//! field ids, which readers resolve by (pyiceberg, Java) or by name (DuckDB). Every
//! optional field this store does not state (column sizes, value counts, bounds, key
//! metadata, split offsets, partition summaries) is written as null: a reader then plans
//! without pruning by them, which is never wrong (a wrong bound makes an engine skip a
//! file that holds matching rows).

use super::avro::{self, ReadError, Reader, Writer};

/// An entry's status: a file already in the table when the manifest was written.
pub const EXISTING: i32 = 0;
/// An entry's status: a file the manifest's snapshot added.
pub const ADDED: i32 = 1;
/// An entry's status: a file the manifest's snapshot removed.
pub const DELETED: i32 = 2;

/// The partition field ids (1000 and up, the specification's convention).
pub const RUN_ID_PARTITION_FIELD: i32 = 1000;
/// See [`RUN_ID_PARTITION_FIELD`].
pub const TARGET_CRS_PARTITION_FIELD: i32 = 1001;

/// Avro type of an optional map with int keys (an array of key/value records).
fn int_map(field_id: i32, name: &str, key_id: i32, value_id: i32, value: &str) -> String {
    format!(
        r#"{{"name":"{name}","type":["null",{{"type":"array","items":{{"type":"record","name":"k{key_id}_v{value_id}","fields":[{{"name":"key","type":"int","field-id":{key_id}}},{{"name":"value","type":"{value}","field-id":{value_id}}}]}},"logicalType":"map"}}],"default":null,"field-id":{field_id}}}"#
    )
}

/// The manifest entry's Avro schema.
pub fn manifest_entry_schema() -> String {
    let data_file = [
        r#"{"name":"content","type":"int","field-id":134}"#.to_string(),
        r#"{"name":"file_path","type":"string","field-id":100}"#.into(),
        r#"{"name":"file_format","type":"string","field-id":101}"#.into(),
        format!(
            r#"{{"name":"partition","type":{{"type":"record","name":"r102","fields":[{{"name":"run_id","type":["null","string"],"default":null,"field-id":{RUN_ID_PARTITION_FIELD}}},{{"name":"target_crs","type":["null","string"],"default":null,"field-id":{TARGET_CRS_PARTITION_FIELD}}}]}},"field-id":102}}"#
        ),
        r#"{"name":"record_count","type":"long","field-id":103}"#.into(),
        r#"{"name":"file_size_in_bytes","type":"long","field-id":104}"#.into(),
        int_map(108, "column_sizes", 117, 118, "long"),
        int_map(109, "value_counts", 119, 120, "long"),
        int_map(110, "null_value_counts", 121, 122, "long"),
        int_map(137, "nan_value_counts", 138, 139, "long"),
        int_map(125, "lower_bounds", 126, 127, "bytes"),
        int_map(128, "upper_bounds", 129, 130, "bytes"),
        r#"{"name":"key_metadata","type":["null","bytes"],"default":null,"field-id":131}"#.into(),
        r#"{"name":"split_offsets","type":["null",{"type":"array","items":"long","element-id":133}],"default":null,"field-id":132}"#.into(),
        r#"{"name":"equality_ids","type":["null",{"type":"array","items":"int","element-id":136}],"default":null,"field-id":135}"#.into(),
        r#"{"name":"sort_order_id","type":["null","int"],"default":null,"field-id":140}"#.into(),
    ]
    .join(",");
    format!(
        r#"{{"type":"record","name":"manifest_entry","fields":[{{"name":"status","type":"int","field-id":0}},{{"name":"snapshot_id","type":["null","long"],"default":null,"field-id":1}},{{"name":"sequence_number","type":["null","long"],"default":null,"field-id":3}},{{"name":"file_sequence_number","type":["null","long"],"default":null,"field-id":4}},{{"name":"data_file","type":{{"type":"record","name":"r2","fields":[{data_file}]}},"field-id":2}}]}}"#
    )
}

/// The manifest list's Avro schema.
pub const MANIFEST_FILE_SCHEMA: &str = r#"{"type":"record","name":"manifest_file","fields":[{"name":"manifest_path","type":"string","field-id":500},{"name":"manifest_length","type":"long","field-id":501},{"name":"partition_spec_id","type":"int","field-id":502},{"name":"content","type":"int","field-id":517},{"name":"sequence_number","type":"long","field-id":515},{"name":"min_sequence_number","type":"long","field-id":516},{"name":"added_snapshot_id","type":"long","field-id":503},{"name":"added_files_count","type":"int","field-id":504},{"name":"existing_files_count","type":"int","field-id":505},{"name":"deleted_files_count","type":"int","field-id":506},{"name":"added_rows_count","type":"long","field-id":512},{"name":"existing_rows_count","type":"long","field-id":513},{"name":"deleted_rows_count","type":"long","field-id":514},{"name":"partitions","type":["null",{"type":"array","items":{"type":"record","name":"r508","fields":[{"name":"contains_null","type":"boolean","field-id":509},{"name":"contains_nan","type":["null","boolean"],"default":null,"field-id":518},{"name":"lower_bound","type":["null","bytes"],"default":null,"field-id":510},{"name":"upper_bound","type":["null","bytes"],"default":null,"field-id":511}]},"element-id":508}],"default":null,"field-id":507},{"name":"key_metadata","type":["null","bytes"],"default":null,"field-id":519}]}"#;

/// A data file (a part or a compacted part) as a manifest records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataFile {
    /// Its absolute location.
    pub path: String,
    /// Partition value.
    pub run_id: String,
    /// Partition value.
    pub target_crs: String,
    /// Its rows.
    pub record_count: u64,
    /// Its size in bytes.
    pub size: u64,
}

/// One manifest entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// [`EXISTING`], [`ADDED`] or [`DELETED`].
    pub status: i32,
    /// The snapshot that added (or, [`DELETED`], removed) the file.
    pub snapshot_id: i64,
    /// The data sequence number of the file (the snapshot that added it).
    pub sequence_number: i64,
    /// The file.
    pub file: DataFile,
}

fn i64_of(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

impl Entry {
    fn encode(&self, w: &mut Writer) {
        w.long(i64::from(self.status));
        w.opt_long(Some(self.snapshot_id));
        w.opt_long(Some(self.sequence_number));
        w.opt_long(Some(self.sequence_number));
        let f = &self.file;
        w.long(0); // content: data
        w.string(&f.path);
        w.string("PARQUET");
        w.opt_string(Some(&f.run_id));
        w.opt_string(Some(&f.target_crs));
        w.long(i64_of(f.record_count));
        w.long(i64_of(f.size));
        // column_sizes .. sort_order_id: not stated.
        for _ in 0..10 {
            w.null();
        }
    }

    fn decode(r: &mut Reader<'_>) -> Result<Self, ReadError> {
        let status = i32::try_from(r.long()?).map_err(|_| "status out of range")?;
        let snapshot_id = r.opt_long()?.ok_or("an entry without snapshot_id")?;
        let sequence_number = r.opt_long()?.ok_or("an entry without sequence_number")?;
        let file_seq = r.opt_long()?;
        if file_seq != Some(sequence_number) {
            return Err("file_sequence_number differs from sequence_number".into());
        }
        if r.long()? != 0 {
            return Err("not a data file".into());
        }
        let path = r.string()?;
        if r.string()? != "PARQUET" {
            return Err("not a Parquet file".into());
        }
        let run_id = r.opt_string()?.ok_or("no run_id partition value")?;
        let target_crs = r.opt_string()?.ok_or("no target_crs partition value")?;
        let record_count = u64::try_from(r.long()?).map_err(|_| "negative record_count")?;
        let size = u64::try_from(r.long()?).map_err(|_| "negative file size")?;
        for _ in 0..10 {
            if r.is_some()? {
                return Err("a statistic this store never writes".into());
            }
        }
        Ok(Entry {
            status,
            snapshot_id,
            sequence_number,
            file: DataFile {
                path,
                run_id,
                target_crs,
                record_count,
                size,
            },
        })
    }
}

/// What a manifest's header names besides its Avro schema: the table schema (Iceberg
/// JSON) and the partition spec's fields (JSON), both with id 0... as the table states.
#[derive(Debug, Clone)]
pub struct ManifestHeader<'a> {
    /// The table schema as JSON (`{"type":"struct","schema-id":…}`).
    pub schema_json: &'a str,
    /// Its id.
    pub schema_id: i32,
    /// The partition spec's fields as JSON (an array).
    pub spec_fields_json: &'a str,
}

/// A manifest holding `entries`, with sync marker `sync`.
pub fn manifest_bytes(h: &ManifestHeader<'_>, entries: &[Entry], sync: [u8; 16]) -> Vec<u8> {
    let mut w = Writer::new();
    for e in entries {
        e.encode(&mut w);
    }
    avro::container(
        &manifest_entry_schema(),
        &[
            ("schema", h.schema_json.to_string()),
            ("schema-id", h.schema_id.to_string()),
            ("partition-spec", h.spec_fields_json.to_string()),
            ("partition-spec-id", "0".into()),
            ("format-version", "2".into()),
            ("content", "data".into()),
        ],
        sync,
        entries.len(),
        &w.into_bytes(),
    )
}

/// The entries of a manifest written by [`manifest_bytes`].
pub fn manifest_entries(bytes: &[u8]) -> Result<Vec<Entry>, ReadError> {
    avro::records(bytes, Entry::decode)
}

/// One manifest as a manifest list names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestFile {
    /// Its absolute location.
    pub path: String,
    /// Its size in bytes.
    pub length: u64,
    /// The sequence number of the snapshot that wrote it.
    pub sequence_number: i64,
    /// The smallest data sequence number of its live entries.
    pub min_sequence_number: i64,
    /// The snapshot that wrote it.
    pub added_snapshot_id: i64,
    /// Entries by status: added, existing, deleted (files, rows).
    pub added: (u64, u64),
    /// See `added`.
    pub existing: (u64, u64),
    /// See `added`.
    pub deleted: (u64, u64),
}

impl ManifestFile {
    /// The manifest `path` of `length` bytes holding `entries`, written by snapshot `seq`.
    pub fn of(path: String, length: u64, seq: i64, entries: &[Entry]) -> Self {
        let mut counts = [(0u64, 0u64); 3];
        for e in entries {
            if let Some(c) = usize::try_from(e.status)
                .ok()
                .and_then(|s| counts.get_mut(s))
            {
                c.0 += 1;
                c.1 += e.file.record_count;
            }
        }
        let min = entries
            .iter()
            .filter(|e| e.status != DELETED)
            .map(|e| e.sequence_number)
            .min()
            .unwrap_or(seq);
        ManifestFile {
            path,
            length,
            sequence_number: seq,
            min_sequence_number: min,
            added_snapshot_id: seq,
            added: counts[ADDED as usize],
            existing: counts[EXISTING as usize],
            deleted: counts[DELETED as usize],
        }
    }

    fn encode(&self, w: &mut Writer) {
        w.string(&self.path);
        w.long(i64_of(self.length));
        w.long(0); // partition_spec_id
        w.long(0); // content: data
        w.long(self.sequence_number);
        w.long(self.min_sequence_number);
        w.long(self.added_snapshot_id);
        for (files, _) in [self.added, self.existing, self.deleted] {
            w.long(i64_of(files));
        }
        for (_, rows) in [self.added, self.existing, self.deleted] {
            w.long(i64_of(rows));
        }
        w.null(); // partitions
        w.null(); // key_metadata
    }

    fn decode(r: &mut Reader<'_>) -> Result<Self, ReadError> {
        let path = r.string()?;
        let length = u64::try_from(r.long()?).map_err(|_| "negative manifest_length")?;
        if r.long()? != 0 || r.long()? != 0 {
            return Err("another partition spec or content".into());
        }
        let sequence_number = r.long()?;
        let min_sequence_number = r.long()?;
        let added_snapshot_id = r.long()?;
        let mut n = [0u64; 6];
        for v in &mut n {
            *v = u64::try_from(r.long()?).map_err(|_| "a negative count")?;
        }
        if r.is_some()? || r.is_some()? {
            return Err("partition summaries or key metadata this store never writes".into());
        }
        Ok(ManifestFile {
            path,
            length,
            sequence_number,
            min_sequence_number,
            added_snapshot_id,
            added: (n[0], n[3]),
            existing: (n[1], n[4]),
            deleted: (n[2], n[5]),
        })
    }
}

/// The manifest list of snapshot `seq` (parent `parent`), naming `manifests`.
pub fn manifest_list_bytes(
    seq: i64,
    parent: Option<i64>,
    manifests: &[ManifestFile],
    sync: [u8; 16],
) -> Vec<u8> {
    let mut w = Writer::new();
    for m in manifests {
        m.encode(&mut w);
    }
    avro::container(
        MANIFEST_FILE_SCHEMA,
        &[
            ("snapshot-id", seq.to_string()),
            (
                "parent-snapshot-id",
                parent.map_or_else(|| "null".to_string(), |p| p.to_string()),
            ),
            ("sequence-number", seq.to_string()),
            ("format-version", "2".into()),
        ],
        sync,
        manifests.len(),
        &w.into_bytes(),
    )
}

/// The manifests a manifest list written by [`manifest_list_bytes`] names.
pub fn manifest_list_entries(bytes: &[u8]) -> Result<Vec<ManifestFile>, ReadError> {
    avro::records(bytes, ManifestFile::decode)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_are_json() {
        serde_json::from_str::<serde_json::Value>(&manifest_entry_schema()).unwrap();
        serde_json::from_str::<serde_json::Value>(MANIFEST_FILE_SCHEMA).unwrap();
    }

    #[test]
    fn round_trips() {
        let e = Entry {
            status: ADDED,
            snapshot_id: 3,
            sequence_number: 3,
            file: DataFile {
                path: "/s/run_id=a/target_crs=EPSG:4326/part-1.parquet".into(),
                run_id: "a".into(),
                target_crs: "EPSG:4326".into(),
                record_count: 10,
                size: 999,
            },
        };
        let h = ManifestHeader {
            schema_json: "{}",
            schema_id: 0,
            spec_fields_json: "[]",
        };
        let m = manifest_bytes(&h, &[e.clone(), e.clone()], [1; 16]);
        assert_eq!(manifest_entries(&m).unwrap(), vec![e.clone(), e.clone()]);
        let f = ManifestFile::of("/s/m.avro".into(), m.len() as u64, 3, &[e]);
        assert_eq!(f.added, (1, 10));
        let l = manifest_list_bytes(3, Some(2), std::slice::from_ref(&f), [2; 16]);
        assert_eq!(manifest_list_entries(&l).unwrap(), vec![f]);
    }
}
