//! The compaction itself, on memory and on local disk: records, the seal, the Delta
//! version, rows before and after, a second run that does nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use futures::TryStreamExt;
use lineage_store::compact::{compact, CompactOptions, CompactOutcome};
use lineage_store::internal::compaction::CompactionRecord;
use lineage_store::internal::delta::{self, decode_path, version_key, DELTA_LOG_PREFIX};
use lineage_store::internal::encode::sha256_hex;
use lineage_store::internal::keys;
use lineage_store::internal::multiset::RowMultiset;
use lineage_store::{
    scan, seal_with, snapshot, AtomicPublisher, MemoryPublisher, ReadOptions, ScanOptions, Seal,
    SealOptions, SystemClock, V7Ids,
};
use serde_json::Value;

use crate::support::audit::{append, verify_later};

pub(crate) async fn seal(store: &dyn AtomicPublisher) {
    seal_with(store, &SystemClock, None, &SealOptions::default())
        .await
        .unwrap();
}

pub(crate) fn opts(target_rows: usize) -> CompactOptions {
    CompactOptions {
        target_rows,
        ..CompactOptions::default()
    }
}

pub(crate) async fn run(store: Arc<dyn AtomicPublisher>, o: &CompactOptions) -> CompactOutcome {
    compact(store, &SystemClock, &V7Ids, None, o).await.unwrap()
}

/// 600 events of 2 runs in commits of at most 20 rows (≥ 30 parts), sealed.
pub(crate) async fn small_parts(store: Arc<dyn AtomicPublisher>) -> usize {
    let p = append(store.clone(), 600, 20, 7).await;
    seal(store.as_ref()).await;
    p.len()
}

/// The multiset of every row a snapshot reads (originals), and the row count.
pub(crate) async fn rows_of(store: Arc<dyn AtomicPublisher>) -> RowMultiset {
    let snap = snapshot(store.as_ref(), &ReadOptions::default())
        .await
        .unwrap();
    let batches: Vec<_> = scan(store, &snap, &ScanOptions::default())
        .unwrap()
        .into_stream()
        .try_collect()
        .await
        .unwrap();
    let mut m = RowMultiset::default();
    for b in &batches {
        m.add_batch(b).unwrap();
    }
    m
}

/// The files of the table's newest version (replaying adds and removes), with their rows.
pub(crate) async fn delta_files(store: &dyn AtomicPublisher) -> BTreeMap<String, u64> {
    let mut live = BTreeMap::new();
    let listed: BTreeSet<String> = store
        .list(DELTA_LOG_PREFIX)
        .await
        .unwrap()
        .into_iter()
        .map(|o| o.key)
        .filter(|k| k.ends_with(".json"))
        .collect();
    for key in listed {
        let b = store.get(&key).await.unwrap().unwrap();
        for (k, v) in delta::parse_actions(&key, &b).unwrap() {
            let path = v["path"].as_str().map(|p| decode_path(p).unwrap());
            match k.as_str() {
                "add" => {
                    let stats: Value = serde_json::from_str(v["stats"].as_str().unwrap()).unwrap();
                    let rows = stats["numRecords"].as_u64().unwrap();
                    assert!(
                        live.insert(path.unwrap(), rows).is_none(),
                        "{key}: added twice"
                    );
                }
                "remove" => {
                    assert_eq!(v["dataChange"], false, "{key}");
                    assert!(
                        live.remove(&path.unwrap()).is_some(),
                        "{key}: removes a file not there"
                    );
                }
                _ => {}
            }
        }
    }
    live
}

#[tokio::test]
async fn compaction_merges_sealed_parts_and_its_seal_version_removes_and_adds() {
    let mem: Arc<dyn AtomicPublisher> = Arc::new(MemoryPublisher::new());
    let parts = small_parts(mem.clone()).await;
    assert!(parts >= 30, "{parts}");
    let before = rows_of(mem.clone()).await;
    let files_before = delta_files(mem.as_ref()).await;
    assert_eq!(files_before.len(), parts);
    let out = run(
        mem.clone(),
        &CompactOptions {
            delta_checkpoint: true,
            ..opts(200)
        },
    )
    .await;
    assert_eq!(out.as_of_seal, 1);
    let s = out.seal.clone().expect("sealed");
    assert_eq!(s.seq, 2);
    assert!(out.compactions.len() >= 3, "{:?}", out.compactions);
    // Every commit compacted at most once; each compacted part ≥ 200 rows but the last
    // of a partition; the records are what the seal names.
    let seal_bytes = mem.get(&keys::seal_key(2)).await.unwrap().unwrap();
    let seal2 = Seal::from_bytes("s", &seal_bytes).unwrap();
    let refs = seal2.compactions.clone().unwrap();
    assert_eq!(refs.len(), out.compactions.len());
    let mut seen = BTreeSet::new();
    let mut records = Vec::new();
    for r in &refs {
        let b = mem.get(&r.key).await.unwrap().unwrap();
        assert_eq!(sha256_hex(&b), r.sha256);
        let rec = CompactionRecord::from_bytes(&r.key, &b).unwrap();
        assert!(rec.sources.len() >= 2);
        for s in &rec.sources {
            assert!(seen.insert(s.commit_id.clone()), "{} twice", s.commit_id);
            assert_eq!(s.sealed_by, 1);
        }
        // The compacted part: its bytes as recorded, its name no glob reads, rows as the
        // record says, sorted.
        let part = mem.get(&rec.part_path).await.unwrap().unwrap();
        assert_eq!(part.len() as u64, rec.size_bytes);
        assert_eq!(sha256_hex(&part), rec.sha256);
        assert!(!rec.part_path.ends_with(".parquet"), "{}", rec.part_path);
        assert!(rec
            .part_path
            .starts_with("_lineage/compacted/parts/run_id="));
        records.push(rec);
    }
    // Delta: version 2 is seal 2 (read from its txn and commitInfo), removes every source
    // with dataChange false and adds each compacted part; the newest version's files hold
    // exactly the sealed rows.
    let v2 = mem.get(&version_key(2)).await.unwrap().unwrap();
    let actions = delta::parse_actions("v2", &v2).unwrap();
    let txn: Vec<&Value> = actions
        .iter()
        .filter(|(k, _)| k == "txn")
        .map(|(_, v)| v)
        .collect();
    assert_eq!(txn[0]["appId"], "lineage-store/seal");
    assert_eq!(txn[0]["version"], 2);
    let info = &actions.iter().find(|(k, _)| k == "commitInfo").unwrap().1;
    assert_eq!(info["lineageStore"]["sealSeq"], 2);
    assert_eq!(
        info["lineageStore"]["compactions"]
            .as_array()
            .unwrap()
            .len(),
        records.len()
    );
    let removes = actions.iter().filter(|(k, _)| k == "remove").count();
    assert_eq!(removes, seen.len());
    let after_files = delta_files(mem.as_ref()).await;
    assert_eq!(after_files.len(), parts - seen.len() + records.len());
    assert_eq!(
        after_files.values().sum::<u64>(),
        files_before.values().sum::<u64>()
    );
    for rec in &records {
        assert_eq!(after_files.get(&rec.part_path), Some(&rec.row_count));
    }
    // The originals are untouched: the snapshot's rows are the same multiset.
    assert_eq!(rows_of(mem.clone()).await, before);
    // The compaction's version gets a checkpoint (readers then skip the adds and removes):
    // the compacted files live, every source a tombstone.
    let cp_key = lineage_store::internal::delta_checkpoint::checkpoint_key(2);
    let cp = mem
        .get(&cp_key)
        .await
        .unwrap()
        .expect("checkpoint of version 2");
    let rows = lineage_store::internal::delta_checkpoint::decode_rows(&cp_key, cp).unwrap();
    let count = |kind: &str| {
        rows.iter()
            .filter(|r| r.starts_with(&format!("{{\"{kind}\"")))
            .count()
    };
    assert_eq!(count("add"), after_files.len());
    assert_eq!(count("remove"), seen.len());
    assert!(mem
        .get(&lineage_store::internal::delta_checkpoint::checkpoint_key(
            1
        ))
        .await
        .unwrap()
        .is_none());
    let r = verify_later(mem.as_ref()).await;
    assert!(r.is_clean(), "{:?}", r.problems);
    // A second compact with nothing new to merge publishes nothing.
    let listed = mem.list("").await.unwrap().len();
    let again = run(mem.clone(), &opts(200)).await;
    assert!(again.compactions.is_empty(), "{:?}", again.compactions);
    assert!(again.seal.is_none());
    assert_eq!(mem.list("").await.unwrap().len(), listed);
}

#[tokio::test]
async fn dry_run_publishes_nothing_and_min_parts_leaves_partitions_alone() {
    let mem: Arc<dyn AtomicPublisher> = Arc::new(MemoryPublisher::new());
    small_parts(mem.clone()).await;
    let listed = mem.list("").await.unwrap().len();
    let plan = run(
        mem.clone(),
        &CompactOptions {
            dry_run: true,
            ..opts(200)
        },
    )
    .await;
    assert!(!plan.compactions.is_empty());
    assert!(plan.compactions.iter().all(|c| c.record.is_none()));
    assert_eq!(mem.list("").await.unwrap().len(), listed);
    let none = run(
        mem.clone(),
        &CompactOptions {
            min_parts: 1000,
            ..opts(200)
        },
    )
    .await;
    assert!(none.compactions.is_empty());
    assert_eq!(mem.list("").await.unwrap().len(), listed);
}

/// The same on an object store (moto's S3): compaction, the table's rows, verify.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_on_moto_s3_keeps_the_rows_and_verifies() {
    use crate::support::{open_s3, s3_bucket, Emulator};
    let Some(store) = open_s3(Emulator::Moto, &s3_bucket(), "compact_moto").await else {
        return;
    };
    let parts = small_parts(store.clone()).await;
    let before = rows_of(store.clone()).await;
    let out = run(store.clone(), &opts(200)).await;
    assert_eq!(out.seal.unwrap().seq, 2);
    let files = delta_files(store.as_ref()).await;
    assert!(files.len() < parts);
    assert_eq!(files.values().sum::<u64>(), 600);
    assert_eq!(rows_of(store.clone()).await, before);
    let snap = snapshot(
        store.as_ref(),
        &ReadOptions {
            prefer_compacted: true,
            ..ReadOptions::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(snap.rows(), 600);
    assert_eq!(snap.parts.len(), files.len());
    let r = verify_later(store.as_ref()).await;
    assert!(r.is_clean(), "{:?}", r.problems);
    assert!(run(store.clone(), &opts(200)).await.seal.is_none());
}

/// Inclusion proofs of compacted commits work as before, against the compaction's seal.
#[tokio::test]
async fn inclusion_proofs_of_compacted_commits_keep_working() {
    use lineage_store::{prove, verify_proof, ProveAgainst};
    let mem: Arc<dyn AtomicPublisher> = Arc::new(MemoryPublisher::new());
    small_parts(mem.clone()).await;
    let out = run(mem.clone(), &opts(200)).await;
    let head = out.seal.unwrap().head;
    for commit in out
        .compactions
        .iter()
        .flat_map(|c| c.commits.iter().take(2))
    {
        let proof = prove(mem.as_ref(), commit, &ProveAgainst::Newest)
            .await
            .unwrap();
        let ok = verify_proof(&proof, &head, None, None).unwrap();
        assert!(ok.is_ok(), "{commit}: {ok:?}");
    }
}
