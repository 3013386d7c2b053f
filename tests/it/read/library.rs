//! The library API of the read path: snapshot and scan.

use futures::TryStreamExt;
use lineage_store::{open, scan, snapshot, AtomicPublisher, ReadOptions, ScanOptions};

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

/// Read limits belong to the opened store, not the process: two handles on one store in
/// one process, one whose seals may be at most 100 bytes, the other with the defaults.
/// The first refuses the seal (naming the limit), the second reads it, in either order.
#[tokio::test]
async fn two_stores_in_one_process_keep_their_own_read_limits() {
    use lineage_store::{ErrorKind, ReadLimits, StoreOptions};
    let s = Store::new();
    let small = StoreOptions::new().limits(ReadLimits {
        max_seal_bytes: 100,
        ..ReadLimits::default()
    });
    let tight = open(&s.path, &small).await.unwrap();
    let roomy = open(&s.path, &Default::default()).await.unwrap();
    for _ in 0..2 {
        let e = snapshot(tight.as_ref(), &ReadOptions::default())
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Integrity, "{e}");
        assert!(e.to_string().contains("a seal is at most 100"), "{e}");
        let snap = snapshot(roomy.as_ref(), &ReadOptions::default())
            .await
            .unwrap();
        assert_eq!(snap.rows(), SEAL2_ROWS);
    }
    assert_eq!(tight.read_limits().max_seal_bytes, 100);
    assert_eq!(roomy.read_limits(), ReadLimits::default());
}
