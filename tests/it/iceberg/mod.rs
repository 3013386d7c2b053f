//! The Iceberg snapshot `seal --iceberg` makes of every seal (`_iceberg/metadata/`): each
//! metadata file against the seals and pointers, manifests that list only a seal's new
//! parts, byte-identical objects from re-sealing, concurrent completion and a store that
//! gains them later, a compaction as a `replace`, and `verify` naming each bad, missing
//! or unknown object. Real readers (pyiceberg, Polars) read it in
//! tests/python/test_iceberg.py.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use bytes::Bytes;
use lineage_store::compact::CompactOptions;
use lineage_store::internal::iceberg::manifest::{
    manifest_bytes, manifest_entries, manifest_list_entries, Entry, ManifestHeader, ADDED, DELETED,
    EXISTING,
};
use lineage_store::internal::iceberg::metadata::{sync_marker, TableMetadata};
use lineage_store::internal::keys::{
    iceberg_manifest_key, iceberg_manifest_list_key, iceberg_metadata_key, ICEBERG_PREFIX,
};
use lineage_store::internal::{complete_iceberg_table, encode::sha256_hex};
use lineage_store::replicate::{replicate, ReplicateOptions};
use lineage_store::{
    seal_with, AtomicPublisher, MemoryPublisher, Pointer, ProblemKind as K, SealOptions,
    SealOutcome, SystemClock, V7Ids,
};

use crate::support::audit::{append, of_kind, verify_later};

mod location;
mod since;

fn opts(iceberg: bool) -> SealOptions {
    SealOptions {
        allow_empty: true,
        iceberg,
        ..SealOptions::default()
    }
}

async fn seal(store: &dyn AtomicPublisher, iceberg: bool) -> SealOutcome {
    seal_with(store, &SystemClock, None, &opts(iceberg))
        .await
        .unwrap()
}

/// Every object under `_iceberg/`, by key.
async fn objects(store: &dyn AtomicPublisher) -> BTreeMap<String, Bytes> {
    let mut out = BTreeMap::new();
    for o in store.list(ICEBERG_PREFIX).await.unwrap() {
        out.insert(o.key.clone(), store.get(&o.key).await.unwrap().unwrap());
    }
    out
}

async fn metadata(store: &dyn AtomicPublisher, k: u64) -> TableMetadata {
    let b = store.get(&iceberg_metadata_key(k)).await.unwrap().unwrap();
    TableMetadata::parse(&b).unwrap()
}

fn key_of(path: &str) -> String {
    path.strip_prefix("memory:///")
        .or_else(|| path.strip_prefix("memory://"))
        .unwrap_or(path)
        .to_string()
}

/// The live entries (not `DELETED`) of snapshot `k`, from its manifest list and manifests.
async fn live(store: &dyn AtomicPublisher, k: u64) -> Vec<Entry> {
    let l = store
        .get(&iceberg_manifest_list_key(k))
        .await
        .unwrap()
        .unwrap();
    let mut out = Vec::new();
    for m in manifest_list_entries(&l).unwrap() {
        let b = store.get(&key_of(&m.path)).await.unwrap().unwrap();
        assert_eq!(m.length, b.len() as u64, "{}", m.path);
        out.extend(
            manifest_entries(&b)
                .unwrap()
                .into_iter()
                .filter(|e| e.status != DELETED),
        );
    }
    out
}

/// Seal 1 over two appends, seal 2 over one more, seal 3 over nothing, all with
/// `--iceberg`; then commits no seal covers. Returns the pointers each seal sealed.
async fn sealed_store() -> (Arc<MemoryPublisher>, Vec<Vec<Pointer>>) {
    let mem = Arc::new(MemoryPublisher::new());
    let mut one = append(mem.clone(), 300, 50, 1).await;
    one.extend(append(mem.clone(), 100, 50, 2).await);
    seal(mem.as_ref(), true).await;
    let two = append(mem.clone(), 120, 40, 3).await;
    seal(mem.as_ref(), true).await;
    seal(mem.as_ref(), true).await;
    append(mem.clone(), 60, 30, 4).await;
    (mem, vec![one, two, Vec::new()])
}

#[tokio::test]
async fn every_seal_is_a_snapshot_of_exactly_the_parts_sealed_up_to_it() {
    let (mem, by_seal) = sealed_store().await;
    let mut want: BTreeSet<String> = BTreeSet::new();
    let mut rows = 0;
    for k in 1..=3u64 {
        for p in &by_seal[k as usize - 1] {
            want.insert(format!("memory://{}", p.part_path));
            rows += p.row_count;
        }
        let m = metadata(mem.as_ref(), k).await;
        assert_eq!(m.current_snapshot_id, k as i64);
        let ids: Vec<i64> = m.snapshots.iter().map(|s| s.snapshot_id).collect();
        assert_eq!(ids, (1..=k as i64).collect::<Vec<_>>());
        let seal = mem
            .get(&lineage_store::internal::keys::seal_key(k))
            .await
            .unwrap()
            .unwrap();
        let s = m.current().unwrap();
        assert_eq!(s.summary["lineage.seal-seq"], k.to_string());
        assert_eq!(s.summary["lineage.seal-sha256"], sha256_hex(&seal));
        assert_eq!(s.summary["total-records"], rows.to_string());
        let entries = live(mem.as_ref(), k).await;
        let got: BTreeSet<String> = entries.iter().map(|e| e.file.path.clone()).collect();
        assert_eq!(got, want, "seal {k}");
        assert_eq!(
            entries.iter().map(|e| e.file.record_count).sum::<u64>(),
            rows
        );
        for e in &entries {
            let p = by_seal
                .iter()
                .flatten()
                .find(|p| format!("memory://{}", p.part_path) == e.file.path)
                .unwrap();
            assert_eq!(
                (e.file.size, &e.file.run_id, &e.file.target_crs),
                (p.size_bytes, &p.run_id, &p.target_crs)
            );
        }
    }
    assert!(verify_later(mem.as_ref()).await.is_clean());
}

/// The manifests snapshot `k`'s manifest list names, by key.
async fn listed(store: &dyn AtomicPublisher, k: u64) -> Vec<String> {
    let l = store
        .get(&iceberg_manifest_list_key(k))
        .await
        .unwrap()
        .unwrap();
    manifest_list_entries(&l)
        .unwrap()
        .into_iter()
        .map(|m| key_of(&m.path))
        .collect()
}

#[tokio::test]
async fn manifests_merge_as_a_binary_counter_so_the_list_stays_logarithmic() {
    let mem = Arc::new(MemoryPublisher::new());
    let mut by_seal = Vec::new();
    for k in 1..=6u64 {
        by_seal.push(append(mem.clone(), 40, 20, k).await);
        seal(mem.as_ref(), true).await;
    }
    seal(mem.as_ref(), true).await; // seal 7 adds nothing: no manifest
    let m = |k: u64| iceberg_manifest_key(k);
    let want: [Vec<String>; 7] = [
        vec![m(1)],
        vec![m(2)],
        vec![m(2), m(3)],
        vec![m(4)],
        vec![m(4), m(5)],
        vec![m(4), m(6)],
        vec![m(4), m(6)],
    ];
    for (k, w) in (1..=7u64).zip(want) {
        assert_eq!(listed(mem.as_ref(), k).await, w, "seal {k}");
    }
    assert!(mem.get(&m(7)).await.unwrap().is_none());
    // Manifest 3 holds only seal 3's parts; manifest 4 takes over seals 1..3's as
    // EXISTING (their own snapshot and sequence numbers) and adds seal 4's.
    let m3 = manifest_entries(&mem.get(&m(3)).await.unwrap().unwrap()).unwrap();
    assert_eq!(m3.len(), by_seal[2].len());
    assert!(m3.iter().all(|e| e.status == ADDED && e.snapshot_id == 3));
    let m4 = manifest_entries(&mem.get(&m(4)).await.unwrap().unwrap()).unwrap();
    let want4: usize = by_seal[..4].iter().map(Vec::len).sum();
    assert_eq!(m4.len(), want4);
    for e in &m4 {
        let from = by_seal
            .iter()
            .position(|ps| {
                ps.iter()
                    .any(|p| format!("memory://{}", p.part_path) == e.file.path)
            })
            .unwrap() as i64
            + 1;
        assert_eq!((e.snapshot_id, e.sequence_number), (from, from));
        assert_eq!(e.status, if from == 4 { ADDED } else { EXISTING });
    }
    assert!(verify_later(mem.as_ref()).await.is_clean());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn re_sealing_concurrent_completion_and_a_store_that_gains_it_later_write_identical_bytes() {
    let (mem, _) = sealed_store().await;
    let before = objects(mem.as_ref()).await;
    assert_eq!(before.len(), 3 + 3 + 2);
    // Seal 3's table is there: completing it again writes nothing, changes nothing.
    let again = complete_iceberg_table(mem.as_ref(), 3)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(again.seals_written, 0);
    assert_eq!(
        again.metadata_location,
        "memory://_iceberg/metadata/v3.metadata.json"
    );
    assert_eq!(objects(mem.as_ref()).await, before);
    // A replica (same identity and seals; its `_iceberg/` is its own, written by the
    // pass, never copied: here both are `memory://`), its objects removed, then two
    // completions at once: every seal's objects, byte for byte the source's.
    let dst = Arc::new(MemoryPublisher::new());
    let r = replicate(mem.clone(), dst.clone(), ReplicateOptions::default())
        .await
        .unwrap();
    assert_eq!(r.iceberg.unwrap().seals_written, 3);
    assert_eq!(objects(dst.as_ref()).await, before);
    for k in objects(dst.as_ref()).await.keys() {
        assert!(dst.tamper_remove(k));
    }
    let (a, b) = tokio::join!(
        complete_iceberg_table(dst.as_ref(), 3),
        complete_iceberg_table(dst.as_ref(), 3)
    );
    assert_eq!(a.unwrap().unwrap().metadata_key, iceberg_metadata_key(3));
    b.unwrap().unwrap();
    assert_eq!(objects(dst.as_ref()).await, before);
    // A store sealed without it gains every seal's on its next seal with it.
    let plain = Arc::new(MemoryPublisher::new());
    append(plain.clone(), 100, 50, 1).await;
    seal(plain.as_ref(), false).await;
    append(plain.clone(), 100, 50, 2).await;
    seal(plain.as_ref(), false).await;
    assert!(objects(plain.as_ref()).await.is_empty());
    let s = seal(plain.as_ref(), true).await;
    assert_eq!(s.iceberg.unwrap().seals_written, 3);
    for k in 1..=3 {
        assert_eq!(
            metadata(plain.as_ref(), k).await.current_snapshot_id,
            k as i64
        );
    }
    assert!(verify_later(plain.as_ref()).await.is_clean());
}

#[tokio::test]
async fn a_compaction_is_a_replace_snapshot_with_the_same_rows() {
    let mem = Arc::new(MemoryPublisher::new());
    let parts = append(mem.clone(), 600, 20, 7).await;
    seal(mem.as_ref(), true).await;
    let out = lineage_store::compact::compact(
        mem.clone(),
        &SystemClock,
        &V7Ids,
        None,
        &CompactOptions {
            target_rows: 200,
            iceberg: true,
            ..CompactOptions::default()
        },
    )
    .await
    .unwrap();
    let seq = out.seal.unwrap().seq;
    let m = metadata(mem.as_ref(), seq).await;
    let s = m.current().unwrap();
    assert_eq!(s.summary["operation"], "replace");
    assert_eq!(s.summary["deleted-data-files"], parts.len().to_string());
    assert_eq!(s.summary["total-records"], "600");
    let entries = live(mem.as_ref(), seq).await;
    assert_eq!(entries.len(), out.compactions.len());
    assert!(entries
        .iter()
        .all(|e| e.file.path.contains("_lineage/compacted/parts/")));
    assert_eq!(
        entries.iter().map(|e| e.file.record_count).sum::<u64>(),
        600
    );
    // The snapshot before still reads the originals.
    assert_eq!(live(mem.as_ref(), seq - 1).await.len(), parts.len());
    // Seals after it count from it: the compaction's manifest stays first, the next ones
    // merge after it.
    for k in 1..=3u64 {
        append(mem.clone(), 20, 20, 100 + k).await;
        seal(mem.as_ref(), true).await;
    }
    let last = seq + 3;
    assert_eq!(
        listed(mem.as_ref(), last).await,
        [
            iceberg_manifest_key(seq),
            iceberg_manifest_key(seq + 2),
            iceberg_manifest_key(last)
        ]
    );
    let rows: u64 = live(mem.as_ref(), last)
        .await
        .iter()
        .map(|e| e.file.record_count)
        .sum();
    assert_eq!(rows, 660);
    assert!(verify_later(mem.as_ref()).await.is_clean());
}

/// Plant `bytes` under `key` (replacing what is there).
fn plant(mem: &MemoryPublisher, key: &str, bytes: Vec<u8>) {
    mem.tamper_put(key, Bytes::from(bytes));
}

#[tokio::test]
async fn verify_names_each_bad_missing_or_unknown_iceberg_object() {
    let (mem, by_seal) = sealed_store().await;
    let m = metadata(mem.as_ref(), 2).await;
    let schema = m.schema().unwrap().to_json();
    let spec = m.partition_specs[0].fields_json();
    let header = ManifestHeader {
        schema_json: &schema,
        schema_id: 0,
        spec_fields_json: &spec,
    };
    let key1 = iceberg_manifest_key(1);
    let sync = sync_marker(&m.table_uuid, &key1);
    let mut m1 = manifest_entries(&mem.get(&key1).await.unwrap().unwrap()).unwrap();
    // Manifest 1 adds a planted part.
    let mut extra = m1[0].clone();
    extra.file.path = "memory://run_id=x/target_crs=EPSG:4326/part-planted.parquet".into();
    let mut planted = m1.clone();
    planted.push(extra.clone());
    plant(&mem, &key1, manifest_bytes(&header, &planted, sync));
    // Manifest 2 drops a sealed part.
    let key2 = iceberg_manifest_key(2);
    let mut m2 = manifest_entries(&mem.get(&key2).await.unwrap().unwrap()).unwrap();
    let dropped = m2.pop().unwrap();
    plant(
        &mem,
        &key2,
        manifest_bytes(&header, &m2, sync_marker(&m.table_uuid, &key2)),
    );
    // Metadata 3 claims another record count; snap-1 is gone; an unknown object.
    let mut m3 = metadata(mem.as_ref(), 3).await;
    m3.snapshots[2]
        .summary
        .insert("total-records".into(), "1".into());
    m3.snapshots[2]
        .summary
        .insert("lineage.seal-sha256".into(), "0".repeat(64));
    plant(&mem, &iceberg_metadata_key(3), m3.to_bytes());
    assert!(mem.tamper_remove(&iceberg_manifest_list_key(1)));
    plant(&mem, "_iceberg/metadata/version-hint.text", b"3".to_vec());
    plant(&mem, "_iceberg/data/stash.parquet", b"x".to_vec());

    let r = verify_later(mem.as_ref()).await;
    let bad = of_kind(&r, K::BadIcebergObject);
    let bad_keys: Vec<&str> = bad.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        bad_keys,
        [key1.as_str(), key2.as_str(), &iceberg_metadata_key(3)],
        "{bad:?}"
    );
    assert!(
        bad[0]
            .1
            .contains(&format!("lists {}, which no seal adds", extra.file.path)),
        "{}",
        bad[0].1
    );
    assert!(
        bad[1]
            .1
            .contains(&format!("drops {}, which the seal adds", dropped.file.path)),
        "{}",
        bad[1].1
    );
    assert!(
        bad[2].1.contains("`snapshots` (snapshot ids 3)"),
        "{}",
        bad[2].1
    );
    let missing = of_kind(&r, K::MissingIcebergObject);
    assert_eq!(missing.len(), 1);
    assert_eq!(missing[0].0, iceberg_manifest_list_key(1));
    let unknown: BTreeSet<String> = of_kind(&r, K::UnknownIcebergObject)
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(
        unknown,
        BTreeSet::from([
            "_iceberg/data/stash.parquet".to_string(),
            "_iceberg/metadata/version-hint.text".to_string()
        ])
    );
    // A later seal does not build on a metadata file that records another seal.
    drop(by_seal);
    m1.truncate(0);
    let err = seal_with(mem.as_ref(), &SystemClock, None, &opts(true))
        .await
        .unwrap_err();
    assert!(err.to_string().contains(&iceberg_metadata_key(3)), "{err}");
    assert!(err.to_string().contains("not seal 3 with"), "{err}");
}
