//! Building each seal's Iceberg objects from the table as of the seal before
//! ([`Table::step`]): a pure function of the store id, the location, the seals and what
//! they name (pointers, compaction records), so two sealers, a retry and `verify` build
//! identical bytes.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use futures::{StreamExt, TryStreamExt};

use crate::base::digest::sha256_hex;
use crate::base::error::{Error, Result};
use crate::format::compaction::CompactionRecord;
use crate::format::delta::millis;
use crate::format::iceberg::manifest::{
    manifest_bytes, manifest_entries, manifest_list_bytes, DataFile, Entry, ManifestFile,
    ManifestHeader, ADDED, DELETED, EXISTING,
};
use crate::format::iceberg::metadata::{
    sync_marker, Schema, Snapshot, TableMetadata, COMPACTIONS, ROOT, SEAL_SEQ, SEAL_SHA256,
    TREE_SIZE,
};
use crate::format::keys::{iceberg_manifest_key, iceberg_manifest_list_key, iceberg_metadata_key};
use crate::format::pointer::Pointer;
use crate::history::pointers::{get_pointer, READ_CONCURRENCY};
use crate::history::seal::{Seal, SealEntry, StoredSeal};
use crate::publish::AtomicPublisher;
use crate::schema::contract::{self, SCHEMA_VERSION};

/// The most an Iceberg object of ours is read at: a metadata file grows by about 700
/// bytes a seal, a manifest list by about 70, a manifest by about 300 bytes a file; 64
/// times the largest seal a reader reads.
pub(crate) fn max_object_bytes(store: &dyn AtomicPublisher) -> u64 {
    store.read_limits().max_seal_bytes.saturating_mul(64)
}

/// The objects one seal adds, in publishing order (each names only those before it).
#[derive(Debug, Clone)]
pub(crate) struct Objects {
    /// (key, bytes): the manifest (when the seal adds or removes files), the manifest
    /// list, the metadata file.
    pub objects: Vec<(String, Vec<u8>)>,
}

/// The table as of a seal: its metadata and its current manifest list.
#[derive(Debug, Clone)]
pub(crate) struct Table {
    pub meta: TableMetadata,
    pub list: Vec<ManifestFile>,
    /// Manifests built by this value (by path), so a rebuild never reads one back.
    built: HashMap<String, Vec<Entry>>,
}

/// The schema id of contract version `v`: its place in the registry.
fn schema_id(v: &str) -> Option<i32> {
    contract::versions()
        .iter()
        .position(|c| c.version == v)
        .and_then(|p| i32::try_from(p).ok())
}

fn schema_of(v: &str) -> Result<Schema> {
    let c = contract::version(v)?;
    Ok(Schema::of(schema_id(v).unwrap_or(0), &c.columns))
}

fn parsed(s: &StoredSeal) -> Result<&Seal> {
    s.seal.as_ref().map_err(|m| Error::Corrupt {
        what: "seal",
        key: s.key.clone(),
        message: format!("{m}; run `lineage verify`").into(),
    })
}

/// The absolute location of `key` in a table at `location`.
pub(crate) fn at(location: &str, key: &str) -> String {
    if location.ends_with('/') {
        format!("{location}{key}")
    } else {
        format!("{location}/{key}")
    }
}

impl Table {
    /// The table before seal 1.
    pub(crate) fn start(uuid: String, location: String) -> Result<Self> {
        Ok(Table {
            meta: TableMetadata::new(uuid, location, schema_of(SCHEMA_VERSION)?),
            list: Vec::new(),
            built: HashMap::new(),
        })
    }

    /// The table as stored: metadata and manifest list of its current snapshot.
    pub(crate) fn stored(meta: TableMetadata, list: Vec<ManifestFile>) -> Self {
        Table {
            meta,
            list,
            built: HashMap::new(),
        }
    }

    fn location(&self) -> &str {
        &self.meta.location
    }

    /// The manifest list bytes of the current snapshot, as written here.
    pub(crate) fn list_bytes(&self) -> Vec<u8> {
        let Some(s) = self.meta.current() else {
            return Vec::new();
        };
        let key = iceberg_manifest_list_key(s.snapshot_id.unsigned_abs());
        manifest_list_bytes(
            s.snapshot_id,
            s.parent_snapshot_id,
            &self.list,
            sync_marker(&self.meta.table_uuid, &key),
        )
    }

    /// The objects of seal `seal`, and the table after it.
    pub(crate) async fn step(
        &mut self,
        store: &dyn AtomicPublisher,
        seal: &StoredSeal,
    ) -> Result<Objects> {
        let s = parsed(seal)?;
        let seq = i64::try_from(seal.key_seq).map_err(Error::internal_from)?;
        let loc = self.location().to_string();
        let news: Vec<(DataFile, String)> = futures::stream::iter(s.entries.clone())
            .map(|e| new_file(store, &seal.key, &loc, e))
            .buffered(READ_CONCURRENCY)
            .try_collect()
            .await?;
        let mut compacted = Vec::new();
        for r in s.compactions.iter().flatten() {
            compacted.push(compaction(store, &seal.key, &r.key, &r.sha256).await?);
        }
        let versions = news
            .iter()
            .map(|(_, v)| v.as_str())
            .chain(compacted.iter().map(|r| r.schema_version.as_str()));
        self.evolve(versions)?;
        let added: Vec<Entry> = news
            .into_iter()
            .map(|(file, _)| Entry {
                status: ADDED,
                snapshot_id: seq,
                sequence_number: seq,
                file,
            })
            .collect();
        let mut objects = Vec::new();
        let entries = if compacted.is_empty() {
            if added.is_empty() {
                added
            } else {
                self.merge(store, seq, added).await?
            }
        } else {
            self.replace(store, seq, &compacted, added).await?
        };
        if !entries.is_empty() {
            let key = iceberg_manifest_key(seal.key_seq);
            let schema = self
                .meta
                .schema()
                .cloned()
                .unwrap_or_else(|| Schema::of(0, &[]));
            let spec = self
                .meta
                .partition_specs
                .first()
                .map(|p| p.fields_json())
                .unwrap_or_default();
            let bytes = manifest_bytes(
                &ManifestHeader {
                    schema_json: &schema.to_json(),
                    schema_id: schema.schema_id,
                    spec_fields_json: &spec,
                },
                &entries,
                sync_marker(&self.meta.table_uuid, &key),
            );
            let path = at(&loc, &key);
            if !compacted.is_empty() {
                self.list.clear();
            }
            self.list.push(ManifestFile::of(
                path.clone(),
                bytes.len() as u64,
                seq,
                &entries,
            ));
            self.built.insert(path, entries.clone());
            objects.push((key, bytes));
        }
        let snap = self.snapshot(seal, s, seq, &entries, &compacted)?;
        self.meta.push(snap);
        objects.push((iceberg_manifest_list_key(seal.key_seq), self.list_bytes()));
        objects.push((iceberg_metadata_key(seal.key_seq), self.meta.to_bytes()));
        Ok(Objects { objects })
    }

    /// Make the newest contract version among `versions` current, when newer.
    fn evolve<'a>(&mut self, versions: impl Iterator<Item = &'a str>) -> Result<()> {
        let newest = versions.filter_map(|v| schema_id(v).map(|i| (i, v))).max();
        if let Some((id, v)) = newest {
            if id > self.meta.current_schema_id {
                self.meta.evolve(schema_of(v)?);
            }
        }
        Ok(())
    }

    /// An appending seal's manifest: its new files `ADDED`, and the files of the manifests
    /// it takes over `EXISTING`. Counting seals from the newest compaction's (`base`, 0
    /// without one) as n, seal `seq` takes over the manifests written by seals
    /// `seq - 2^t + 1 ..= seq - 1`, where 2^t is n's lowest set bit: as a binary counter
    /// carries, so the manifest list names about log2(n) manifests and each file is
    /// rewritten about log2(n) times in all.
    async fn merge(
        &mut self,
        store: &dyn AtomicPublisher,
        seq: i64,
        added: Vec<Entry>,
    ) -> Result<Vec<Entry>> {
        let base = self
            .list
            .iter()
            .find(|m| m.deleted.0 > 0)
            .map_or(0, |m| m.added_snapshot_id);
        let n = (seq - base).max(1);
        let lo = seq - (n & n.wrapping_neg());
        let (taken, kept): (Vec<ManifestFile>, Vec<ManifestFile>) = std::mem::take(&mut self.list)
            .into_iter()
            .partition(|m| m.added_snapshot_id > lo && m.deleted.0 == 0);
        self.list = kept;
        let mut out = Vec::new();
        for m in &taken {
            for mut e in self.entries_of(store, &m.path).await? {
                if e.status != DELETED {
                    e.status = EXISTING;
                    out.push(e);
                }
            }
        }
        out.extend(added);
        Ok(out)
    }

    /// A compaction seal's one manifest: every live file (the sources `DELETED` by this
    /// snapshot, the rest `EXISTING`), the compacted parts and `added` `ADDED`.
    async fn replace(
        &mut self,
        store: &dyn AtomicPublisher,
        seq: i64,
        compacted: &[CompactionRecord],
        added: Vec<Entry>,
    ) -> Result<Vec<Entry>> {
        let loc = self.location().to_string();
        let mut sources: BTreeMap<String, &str> = BTreeMap::new();
        for r in compacted {
            for src in &r.sources {
                sources.insert(at(&loc, &src.part_path), r.compaction_id.as_str());
            }
        }
        let mut out = Vec::new();
        let mut found = BTreeSet::new();
        for m in &self.list.clone() {
            for mut e in self.entries_of(store, &m.path).await? {
                if e.status == DELETED {
                    continue;
                }
                e.status = if sources.contains_key(&e.file.path) {
                    found.insert(e.file.path.clone());
                    e.snapshot_id = seq;
                    DELETED
                } else {
                    EXISTING
                };
                out.push(e);
            }
        }
        if let Some((path, id)) = sources.iter().find(|(p, _)| !found.contains(*p)) {
            return Err(Error::Corrupt {
                what: "compaction record",
                key: crate::format::keys::compaction_record_key(id),
                message: format!(
                    "names source {path}, which the Iceberg table before seal {seq} does not hold; run `lineage verify`"
                )
                .into(),
            });
        }
        out.extend(compacted.iter().map(|r| Entry {
            status: ADDED,
            snapshot_id: seq,
            sequence_number: seq,
            file: DataFile {
                path: at(&loc, &r.part_path),
                run_id: r.run_id.clone(),
                target_crs: r.target_crs.clone(),
                record_count: r.row_count,
                size: r.size_bytes,
            },
        }));
        out.extend(added);
        Ok(out)
    }

    /// The entries of the manifest at `path`: built here, or read from the store.
    async fn entries_of(&self, store: &dyn AtomicPublisher, path: &str) -> Result<Vec<Entry>> {
        if let Some(e) = self.built.get(path) {
            return Ok(e.clone());
        }
        let key = path
            .strip_prefix(self.location())
            .map(|k| k.trim_start_matches('/'))
            .unwrap_or(path)
            .to_string();
        let bytes = store
            .get_at_most(&key, max_object_bytes(store))
            .await?
            .ok_or_else(|| Error::NotFound(key.clone()))?;
        manifest_entries(&bytes).map_err(|m| Error::Corrupt {
            what: "Iceberg manifest",
            key,
            message: m.into(),
        })
    }

    fn snapshot(
        &self,
        seal: &StoredSeal,
        s: &Seal,
        seq: i64,
        entries: &[Entry],
        compacted: &[CompactionRecord],
    ) -> Result<Snapshot> {
        let count = |status: i32| {
            let e = entries
                .iter()
                .filter(|e| e.status == status && e.snapshot_id == seq);
            (
                e.clone().count() as u64,
                e.map(|e| e.file.record_count).sum::<u64>(),
            )
        };
        let (added_files, added_rows) = count(ADDED);
        let (deleted_files, deleted_rows) = count(DELETED);
        let total_files: u64 = self.list.iter().map(|m| m.added.0 + m.existing.0).sum();
        let total_rows: u64 = self.list.iter().map(|m| m.added.1 + m.existing.1).sum();
        let operation = match (compacted.is_empty(), s.entries.is_empty()) {
            (true, _) => "append",
            (false, true) => "replace",
            (false, false) => "overwrite",
        };
        let mut summary = BTreeMap::new();
        let mut put = |k: &str, v: String| {
            summary.insert(k.to_string(), v);
        };
        put("operation", operation.into());
        put("added-data-files", added_files.to_string());
        put("added-records", added_rows.to_string());
        put("deleted-data-files", deleted_files.to_string());
        put("deleted-records", deleted_rows.to_string());
        put("total-data-files", total_files.to_string());
        put("total-records", total_rows.to_string());
        put("total-delete-files", "0".into());
        put("total-position-deletes", "0".into());
        put("total-equality-deletes", "0".into());
        put(SEAL_SEQ, seal.key_seq.to_string());
        put(SEAL_SHA256, seal.digest.to_lowercase());
        put(TREE_SIZE, s.tree_size.to_string());
        put(ROOT, s.root.clone());
        if !compacted.is_empty() {
            let ids: Vec<&str> = compacted.iter().map(|r| r.compaction_id.as_str()).collect();
            put(COMPACTIONS, ids.join(","));
        }
        Ok(Snapshot {
            snapshot_id: seq,
            parent_snapshot_id: self.meta.current().map(|p| p.snapshot_id),
            sequence_number: seq,
            timestamp_ms: millis(&s.sealed_utc, "sealed_utc")?,
            manifest_list: at(self.location(), &iceberg_manifest_list_key(seal.key_seq)),
            summary,
            schema_id: self.meta.current_schema_id,
        })
    }
}

/// The data file of sealed entry `e` (sealed by `seal_key`) and its contract version: its
/// pointer, which must still be the one sealed.
async fn new_file(
    store: &dyn AtomicPublisher,
    seal_key: &str,
    location: &str,
    e: SealEntry,
) -> Result<(DataFile, String)> {
    let bytes = get_pointer(store, &e.key).await?.ok_or_else(|| Error::Corrupt {
        what: "pointer",
        key: e.key.clone(),
        message: format!(
            "sealed by {seal_key} but missing: its Iceberg snapshot cannot be written; run `lineage verify`"
        )
        .into(),
    })?;
    let digest = sha256_hex(&bytes);
    if !digest.eq_ignore_ascii_case(&e.sha256) {
        return Err(Error::Corrupt {
            what: "pointer",
            key: e.key.clone(),
            message: format!(
                "sha256 {digest}, sealed by {seal_key} as {}: its Iceberg snapshot cannot be written; run `lineage verify`",
                e.sha256
            )
            .into(),
        });
    }
    let p = Pointer::from_bytes(&e.key, &bytes)?;
    Ok((
        DataFile {
            path: at(location, &p.part_path),
            run_id: p.run_id,
            target_crs: p.target_crs,
            record_count: p.row_count,
            size: p.size_bytes,
        },
        p.schema_version,
    ))
}

/// The compaction record `key` named by `seal_key` with digest `sha256`.
async fn compaction(
    store: &dyn AtomicPublisher,
    seal_key: &str,
    key: &str,
    sha256: &str,
) -> Result<CompactionRecord> {
    let bytes = crate::history::delta::read_record(store, key)
        .await?
        .ok_or_else(|| Error::Corrupt {
            what: "compaction record",
            key: key.to_string(),
            message: format!(
                "named by {seal_key} but missing: its Iceberg snapshot cannot be written; run `lineage verify`"
            )
            .into(),
        })?;
    let digest = sha256_hex(&bytes);
    if !digest.eq_ignore_ascii_case(sha256) {
        return Err(Error::Corrupt {
            what: "compaction record",
            key: key.to_string(),
            message: format!(
                "sha256 {digest}, named by {seal_key} as {sha256}: its Iceberg snapshot cannot be written; run `lineage verify`"
            )
            .into(),
        });
    }
    CompactionRecord::from_bytes(key, &bytes)
}
