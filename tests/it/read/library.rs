//! The library API of the read path: snapshot and scan.

use futures::TryStreamExt;
use lineage_store::{open, scan, snapshot, ReadOptions, ScanOptions};

use super::{Store, SEAL1_ROWS, SEAL2_ROWS};

#[tokio::test]
async fn snapshot_and_scan_agree_with_the_seals() {
    let s = Store::new();
    let store = open(&s.path, &Default::default()).await.unwrap();
    let snap = snapshot(store.as_ref(), &ReadOptions::default())
        .await
        .unwrap();
    let seal = snap.seal.clone().unwrap();
    assert_eq!(seal.seq, 2);
    assert_eq!(snap.rows(), SEAL2_ROWS);
    assert_eq!(snap.sealed_total, seal.tree_size);
    assert_eq!(snap.unsealed(), 0);
    let first = snapshot(
        store.as_ref(),
        &ReadOptions {
            as_of_seal: Some(1),
            ..ReadOptions::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(first.rows(), SEAL1_ROWS);
    assert!(first
        .parts
        .iter()
        .all(|p| p.sealed_by.as_ref().unwrap().seq == 1));
    let sc = scan(store.clone(), &snap, &ScanOptions::default()).unwrap();
    let stats = sc.stats();
    let batches: Vec<_> = sc.into_stream().try_collect().await.unwrap();
    let n: usize = batches.iter().map(|b| b.num_rows()).sum();
    assert_eq!(n as u64, SEAL2_ROWS);
    assert_eq!(
        stats.parts_read.load(std::sync::atomic::Ordering::Relaxed),
        snap.parts.len() as u64
    );
    assert_eq!(
        stats.bytes_read.load(std::sync::atomic::Ordering::Relaxed),
        snap.bytes()
    );
}
