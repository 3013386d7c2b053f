//! Two compactors at once, a compactor stopped at seeded points (the fault-injecting
//! publisher), and a compacted store replicated.

use std::sync::Arc;

use lineage_store::compact::compact;
use lineage_store::internal::faulty::{Fault, FaultyPublisher};
use lineage_store::replicate::{replicate, ReplicateOptions};
use lineage_store::{
    seal_with, snapshot, AtomicPublisher, ErrorKind, MemoryPublisher, ProblemKind as K,
    ReadOptions, SealOptions, SystemClock, V7Ids,
};

use super::core::{delta_files, opts, rows_of, run, small_parts};
use crate::support::audit::{of_kind, verify_later};

#[tokio::test]
async fn of_two_compactors_planned_at_one_seal_only_the_first_sealed_takes_effect() {
    let mem: Arc<dyn AtomicPublisher> = Arc::new(MemoryPublisher::new());
    small_parts(mem.clone()).await;
    let before = rows_of(mem.clone()).await;
    // B plans as of seal 1 and writes its parts and records; just before it publishes its
    // seal, A (also as of seal 1) compacts everything and seals.
    let a_store = mem.clone();
    let b = Arc::new(FaultyPublisher::new(mem.clone()));
    b.before_create(
        "_lineage/seals/",
        Box::pin(async move {
            let a = run(a_store, &opts(200)).await;
            assert_eq!(a.seal.unwrap().seq, 2);
        }),
    );
    let err = compact(b, &SystemClock, &V7Ids, None, &opts(200))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict, "{err}");
    assert!(
        err.to_string()
            .contains("seal 2 put other compactions into effect"),
        "{err}"
    );
    // One compaction of each commit in the table; B's objects are orphans, nothing else.
    let r = verify_later(mem.as_ref()).await;
    assert!(
        of_kind(&r, K::CompactedTwice).is_empty(),
        "{:?}",
        r.problems
    );
    let orphans = of_kind(&r, K::OrphanCompaction);
    assert!(!orphans.is_empty());
    assert_eq!(orphans.len(), r.problems.len(), "{:?}", r.problems);
    assert!(orphans
        .iter()
        .all(|(k, _)| k.starts_with("_lineage/compacted/")));
    let files = delta_files(mem.as_ref()).await;
    assert_eq!(files.values().sum::<u64>(), 600);
    assert_eq!(rows_of(mem.clone()).await, before);
    // Within the grace period they are in flight: a verify now is clean.
    assert!(lineage_store::verify(mem.as_ref())
        .await
        .unwrap()
        .is_clean());
}

#[tokio::test]
async fn a_compactor_stopped_at_any_point_leaves_nothing_readers_see() {
    for (point, skip) in [
        ("_lineage/compacted/parts/", 0),
        ("_lineage/compacted/parts/", 1),
        ("_lineage/compacted/records/", 0),
        ("_lineage/compacted/records/", 2),
        ("_lineage/seals/", 0),
        ("_delta_log/", 0),
    ] {
        let mem: Arc<dyn AtomicPublisher> = Arc::new(MemoryPublisher::new());
        small_parts(mem.clone()).await;
        let files = delta_files(mem.as_ref()).await;
        let faulty = Arc::new(FaultyPublisher::new(mem.clone()));
        faulty.fail_after(point, skip, Fault::Before);
        let err = compact(faulty.clone(), &SystemClock, &V7Ids, None, &opts(200)).await;
        assert!(err.is_err(), "{point}: stopped");
        assert!(!faulty.fired().is_empty(), "{point}");
        if point == "_delta_log/" {
            // The seal landed without its version: the next seal finishes it.
            seal_with(mem.as_ref(), &SystemClock, None, &SealOptions::default())
                .await
                .unwrap();
            let r = verify_later(mem.as_ref()).await;
            assert!(r.is_clean(), "{point}: {:?}", r.problems);
            assert_eq!(delta_files(mem.as_ref()).await.values().sum::<u64>(), 600);
            continue;
        }
        // Nothing a reader sees changed: the table, the snapshot.
        assert_eq!(delta_files(mem.as_ref()).await, files, "{point}");
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
            .all(|p| p.pointer.part_path.ends_with(".parquet")));
        // What it left is in flight now, orphaned later; compacting again succeeds.
        assert!(
            lineage_store::verify(mem.as_ref())
                .await
                .unwrap()
                .is_clean(),
            "{point}"
        );
        let again = run(mem.clone(), &opts(200)).await;
        assert!(again.seal.is_some(), "{point}");
        let r = verify_later(mem.as_ref()).await;
        assert_eq!(
            of_kind(&r, K::OrphanCompaction).len(),
            r.problems.len(),
            "{point}: {:?}",
            r.problems
        );
        assert_eq!(delta_files(mem.as_ref()).await.values().sum::<u64>(), 600);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_compacted_store_replicates_and_verifies() {
    let mem: Arc<dyn AtomicPublisher> = Arc::new(MemoryPublisher::new());
    small_parts(mem.clone()).await;
    run(mem.clone(), &opts(200)).await;
    let dst: Arc<dyn AtomicPublisher> = Arc::new(MemoryPublisher::new());
    replicate(mem.clone(), dst.clone(), ReplicateOptions::default())
        .await
        .unwrap();
    let r = verify_later(dst.as_ref()).await;
    assert!(r.is_clean(), "{:?}", r.problems);
    assert_eq!(
        delta_files(dst.as_ref()).await,
        delta_files(mem.as_ref()).await
    );
    let src: Vec<String> = mem
        .list("_lineage/compacted/")
        .await
        .unwrap()
        .into_iter()
        .map(|o| o.key)
        .collect();
    let got: Vec<String> = dst
        .list("_lineage/compacted/")
        .await
        .unwrap()
        .into_iter()
        .map(|o| o.key)
        .collect();
    assert!(!src.is_empty());
    assert_eq!(got, src);
    let snap = snapshot(
        dst.as_ref(),
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
        .any(|p| p.pointer.part_path.ends_with(".compacted")));
    assert_eq!(snap.rows(), 600);
}
