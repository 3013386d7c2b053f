//! `verify` proves every compaction: each tamper named with its problem kind.

use std::sync::Arc;

use bytes::Bytes;
use futures::TryStreamExt;
use lineage_store::internal::compaction::{
    CompactionRecord, CompactionRef, CompactionSource, COMPACTION_FORMAT,
};
use lineage_store::internal::encode::{encode_compacted, sha256_hex};
use lineage_store::internal::keys;
use lineage_store::internal::multiset::RowMultiset;
use lineage_store::{
    scan, seal_with, snapshot, AtomicPublisher, MemoryPublisher, ProblemKind as K, ReadOptions,
    ScanOptions, Seal, SealOptions, SystemClock,
};

use super::core::{opts, run, small_parts};
use crate::support::audit::{later, of_kind, verify_later};

/// `verify --since-seal` (the newest seal), a day later.
async fn verify_since(store: &dyn AtomicPublisher) -> lineage_store::Report {
    let opts = lineage_store::VerifyOptions {
        since_seal: Some(None),
        ..later()
    };
    lineage_store::verify_with(store, &opts).await.unwrap()
}

/// A store with one honest compaction sealed by seal 2; its first record.
async fn compacted() -> (Arc<MemoryPublisher>, CompactionRecord) {
    let mem = Arc::new(MemoryPublisher::new());
    small_parts(mem.clone()).await;
    run(mem.clone(), &opts(200)).await;
    let rec = first_record(mem.as_ref(), 2).await;
    let r = verify_later(mem.as_ref()).await;
    assert!(r.is_clean(), "{:?}", r.problems);
    (mem, rec)
}

async fn first_record(store: &dyn AtomicPublisher, seal: u64) -> CompactionRecord {
    let b = store.get(&keys::seal_key(seal)).await.unwrap().unwrap();
    let s = Seal::from_bytes("s", &b).unwrap();
    let r = &s.compactions.unwrap()[0];
    let b = store.get(&r.key).await.unwrap().unwrap();
    CompactionRecord::from_bytes(&r.key, &b).unwrap()
}

/// Publish `rec` (and `part` under its path) and a seal that puts it into effect.
async fn seal_forged(store: &dyn AtomicPublisher, rec: &CompactionRecord, part: Option<Bytes>) {
    if let Some(p) = part {
        store.put_create(&rec.part_path, p).await.unwrap();
    }
    let key = keys::compaction_record_key(&rec.compaction_id);
    let bytes = rec.to_bytes().unwrap();
    store
        .put_create(&key, Bytes::from(bytes.clone()))
        .await
        .unwrap();
    let head = lineage_store::delta_version(store)
        .await
        .unwrap()
        .unwrap_or(0);
    // The seal is published whatever its version's fate.
    let _ = seal_with(
        store,
        &SystemClock,
        None,
        &SealOptions {
            compactions: vec![CompactionRef {
                key,
                sha256: sha256_hex(&bytes),
            }],
            compactions_planned_at: head,
            ..SealOptions::default()
        },
    )
    .await;
}

fn renamed(rec: &CompactionRecord) -> CompactionRecord {
    let mut r = rec.clone();
    r.compaction_id = uuid::Uuid::now_v7().to_string();
    r.part_path = keys::compacted_part_key(&r.run_id, &r.target_crs, &r.compaction_id);
    r
}

#[tokio::test]
async fn a_changed_compacted_part_is_named() {
    let (mem, rec) = compacted().await;
    let mut b = mem.get(&rec.part_path).await.unwrap().unwrap().to_vec();
    let mid = b.len() / 2;
    b[mid] ^= 0x55;
    mem.tamper_put(&rec.part_path, Bytes::from(b));
    // A full verify and `--since-seal` of the seal that put it into effect (issue 34, 3).
    for r in [
        verify_later(mem.as_ref()).await,
        verify_since(mem.as_ref()).await,
    ] {
        let bad = of_kind(&r, K::BadCompactedPart);
        assert_eq!(bad.len(), 1, "{:?}", r.problems);
        assert_eq!(bad[0].0, rec.part_path);
        assert!(bad[0].1.contains("sha256"), "{}", bad[0].1);
    }
}

#[tokio::test]
async fn a_removed_compacted_part_is_named() {
    let (mem, rec) = compacted().await;
    assert!(mem.tamper_remove(&rec.part_path));
    let r = verify_later(mem.as_ref()).await;
    let bad = of_kind(&r, K::BadCompactedPart);
    assert_eq!(bad.len(), 1, "{:?}", r.problems);
    assert!(bad[0].1.contains("missing"), "{}", bad[0].1);
}

/// Issue 34, 1: a file under a compaction's part name in a directory its record does not
/// name is not accounted for by that record.
#[tokio::test]
async fn a_compacted_part_planted_beside_its_record_in_effect_is_named() {
    let (mem, rec) = compacted().await;
    let bytes = mem.get(&rec.part_path).await.unwrap().unwrap();
    let planted = keys::compacted_part_key(&rec.run_id, "garbage", &rec.compaction_id);
    mem.put_create(&planted, bytes).await.unwrap();
    let r = verify_later(mem.as_ref()).await;
    let named: Vec<(K, &str)> = r
        .problems
        .iter()
        .map(|p| (p.kind, p.key.as_str()))
        .collect();
    assert_eq!(
        named,
        [(K::OrphanCompaction, planted.as_str())],
        "{:#?}",
        r.problems
    );
}

#[tokio::test]
async fn a_changed_record_is_named() {
    let (mem, rec) = compacted().await;
    let key = keys::compaction_record_key(&rec.compaction_id);
    let mut changed = rec.clone();
    changed.row_count += 1;
    changed.sources[0].row_count += 1;
    mem.tamper_put(&key, Bytes::from(changed.to_bytes().unwrap()));
    let r = verify_later(mem.as_ref()).await;
    let bad = of_kind(&r, K::BadCompactionRecord);
    assert_eq!(bad.len(), 1, "{:?}", r.problems);
    assert_eq!(bad[0].0, key);
    assert!(bad[0].1.contains("sha256"), "{}", bad[0].1);
}

#[tokio::test]
async fn a_planted_record_and_part_no_seal_names_are_orphans() {
    let (mem, rec) = compacted().await;
    let planted = renamed(&rec);
    let part = mem.get(&rec.part_path).await.unwrap().unwrap();
    mem.tamper_put(&planted.part_path, part);
    let key = keys::compaction_record_key(&planted.compaction_id);
    mem.tamper_put(&key, Bytes::from(planted.to_bytes().unwrap()));
    let r = verify_later(mem.as_ref()).await;
    let orphans: Vec<String> = of_kind(&r, K::OrphanCompaction)
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(
        orphans,
        vec![planted.part_path.clone(), key.clone()],
        "{:?}",
        r.problems
    );
    assert_eq!(r.problems.len(), 2, "{:?}", r.problems);
    // Within the grace period it is in flight, not a problem.
    let now = lineage_store::verify(mem.as_ref()).await.unwrap();
    assert!(now.is_clean(), "{:?}", now.problems);
    assert!(now.in_flight_objects.iter().any(|f| f.key == key));
}

#[tokio::test]
async fn a_commit_compacted_twice_into_the_table_is_named() {
    let (mem, rec) = compacted().await;
    let again = renamed(&rec);
    let part = mem.get(&rec.part_path).await.unwrap().unwrap();
    seal_forged(mem.as_ref(), &again, Some(part)).await;
    // `--since-seal` of the seal that put the second compaction into effect names it too
    // (issue 34, 3).
    let since = verify_since(mem.as_ref()).await;
    let r = verify_later(mem.as_ref()).await;
    for r in [&r, &since] {
        let twice = of_kind(r, K::CompactedTwice);
        assert_eq!(twice.len(), rec.sources.len(), "{:?}", r.problems);
        assert!(twice
            .iter()
            .all(|(k, _)| *k == keys::compaction_record_key(&again.compaction_id)));
    }
    // The table's newest version now reads those rows twice.
    let rows = of_kind(&r, K::DeltaRowsDiffer);
    assert_eq!(rows.len(), 1, "{:?}", r.problems);
    assert!(
        rows[0].1.contains(&format!("{} rows", 600 + rec.row_count)),
        "{}",
        rows[0].1
    );
}

#[tokio::test]
async fn a_record_naming_a_commit_twice_is_named() {
    let (mem, rec) = compacted().await;
    let mut dup = renamed(&rec);
    dup.sources.push(dup.sources[0].clone());
    dup.row_count += dup.sources[0].row_count;
    let part = mem.get(&rec.part_path).await.unwrap().unwrap();
    seal_forged(mem.as_ref(), &dup, Some(part)).await;
    let r = verify_later(mem.as_ref()).await;
    let bad = of_kind(&r, K::BadCompactionRecord);
    assert_eq!(bad.len(), 1, "{:?}", r.problems);
    assert!(bad[0].1.contains("twice"), "{}", bad[0].1);
}

/// A compaction of two sealed commits whose part lacks one row, its record otherwise
/// consistent (the sources' rows, digest and count): the missing row is named.
#[tokio::test]
async fn a_compacted_part_missing_a_row_is_named() {
    let mem = Arc::new(MemoryPublisher::new());
    small_parts(mem.clone()).await;
    let snap = snapshot(mem.as_ref(), &ReadOptions::default())
        .await
        .unwrap();
    let first = snap.parts[0].pointer.clone();
    let mut chunk = snap.clone();
    chunk.parts = snap
        .parts
        .iter()
        .filter(|p| p.pointer.run_id == first.run_id && p.pointer.target_crs == first.target_crs)
        .take(2)
        .cloned()
        .collect();
    assert_eq!(chunk.parts.len(), 2);
    let batches: Vec<_> = scan(mem.clone(), &chunk, &ScanOptions::default())
        .unwrap()
        .into_stream()
        .try_collect()
        .await
        .unwrap();
    let mut rows = RowMultiset::default();
    batches.iter().for_each(|b| rows.add_batch(b).unwrap());
    let all = arrow_select::concat::concat_batches(&batches[0].schema(), &batches).unwrap();
    let short = all.slice(1, all.num_rows() - 1);
    let id = uuid::Uuid::now_v7().to_string();
    let enc = encode_compacted(&short, &id, None).unwrap();
    let rec = CompactionRecord {
        format: COMPACTION_FORMAT.into(),
        compaction_id: id.clone(),
        run_id: first.run_id.clone(),
        target_crs: first.target_crs.clone(),
        schema_version: first.schema_version.clone(),
        part_path: keys::compacted_part_key(&first.run_id, &first.target_crs, &id),
        size_bytes: enc.bytes.len() as u64,
        sha256: enc.sha256.clone(),
        blake3: enc.blake3.clone(),
        row_count: rows.rows,
        rows_digest: rows.hex(),
        first_sequence: 0,
        last_sequence: 0,
        min_event_time_utc: first.min_event_time_utc.clone(),
        max_event_time_utc: first.max_event_time_utc.clone(),
        planned_at_seal: 1,
        compacted_utc: first.committed_utc.clone(),
        tool_version: "forged".into(),
        tail_offset: None,
        tail_sha256: None,
        sources: chunk
            .parts
            .iter()
            .map(|p| CompactionSource {
                commit_id: p.pointer.commit_id.clone(),
                pointer_key: p.pointer_key.clone(),
                pointer_sha256: p.pointer_sha256.clone(),
                sealed_by: 1,
                part_path: p.pointer.part_path.clone(),
                size_bytes: p.pointer.size_bytes,
                sha256: p.pointer.sha256.clone(),
                row_count: p.pointer.row_count,
            })
            .collect(),
    };
    seal_forged(mem.as_ref(), &rec, Some(enc.bytes.clone())).await;
    let r = verify_later(mem.as_ref()).await;
    let bad = of_kind(&r, K::CompactionRowsDiffer);
    assert_eq!(bad.len(), 1, "{:?}", r.problems);
    assert_eq!(bad[0].0, rec.part_path);
    assert!(
        bad[0].1.contains(&format!("holds {} rows", rows.rows - 1)),
        "{}",
        bad[0].1
    );
    let delta = of_kind(&r, K::DeltaRowsDiffer);
    assert_eq!(delta.len(), 1, "{:?}", r.problems);
    // `--since-seal` recounts the rows of the compactions its seals put into effect.
    let since = verify_since(mem.as_ref()).await;
    let bad = of_kind(&since, K::CompactionRowsDiffer);
    assert_eq!(bad.len(), 1, "{:?}", since.problems);
    assert_eq!(bad[0].0, rec.part_path);
    // Issue 34, 8: the trusted read refuses to serve the compacted part's 16 rows for the
    // record's 17, naming it (exit 1), whether it decodes or copies column chunks.
    let snap = snapshot(
        mem.as_ref(),
        &ReadOptions {
            prefer_compacted: true,
            ..ReadOptions::default()
        },
    )
    .await
    .unwrap();
    assert!(snap
        .parts
        .iter()
        .any(|p| p.pointer.part_path == rec.part_path));
    let want = format!("holds {} rows", rows.rows - 1);
    let judged = |e: lineage_store::Error| {
        assert_eq!(e.kind().exit_code(), 1, "{e}");
        let text = e.to_string();
        assert!(
            text.contains(&rec.part_path) && text.contains(&want),
            "{text}"
        );
        assert!(text.contains(&format!("records {}", rows.rows)), "{text}");
    };
    let read: lineage_store::Result<Vec<_>> = scan(mem.clone(), &snap, &ScanOptions::default())
        .unwrap()
        .into_stream()
        .try_collect()
        .await;
    judged(read.unwrap_err());
    let dir = tempfile::tempdir().unwrap();
    for name in ["out.parquet", "out.csv"] {
        let out = lineage_store::scan_to_file(
            mem.clone(),
            &snap,
            &ScanOptions::default(),
            &dir.path().join(name),
        )
        .await;
        judged(out.unwrap_err());
    }
}
