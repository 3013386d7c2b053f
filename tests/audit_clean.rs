//! No false alarms: a clean store of a thousand commits verifies clean, also while appends
//! and seals run concurrently.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::{append, verify_later};
use lineage_store::audit::seal::seal;
use lineage_store::audit::verify::{verify, verify_with, VerifyOptions};
use lineage_store::clock::SystemClock;
use lineage_store::publish::memory::MemoryPublisher;
use lineage_store::publish::posix::PosixPublisher;
use lineage_store::AtomicPublisher;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_commits_verify_clean_also_while_appends_run() {
    let mem = Arc::new(MemoryPublisher::new());
    // 2 runs × 5 target CRSs, 5 rows a commit: about a thousand commits.
    let ptrs = append(mem.clone(), 5_000, 5, 1).await;
    assert!(ptrs.len() >= 1_000, "{} commits", ptrs.len());
    seal(mem.as_ref(), &SystemClock, None).await.unwrap();
    let r = verify_later(mem.as_ref()).await;
    assert!(r.is_clean(), "{:#?}", r.problems);
    assert_eq!(r.commits, ptrs.len() as u64);
    assert_eq!(r.parts_hashed, ptrs.len() as u64);
    assert_eq!(r.rows, 5_000);

    // Appends (and a sealer) racing with verifies: every verify must be clean. The
    // writer publishes parts before pointers, so verifies see parts without pointers.
    let writer = {
        let m = mem.clone();
        tokio::spawn(async move {
            for seed in 2..6 {
                append(m.clone(), 400, 2, seed).await;
                seal(m.as_ref(), &SystemClock, None).await.unwrap();
            }
        })
    };
    let mut rounds = 0;
    while !writer.is_finished() || rounds < 2 {
        let r = verify(mem.as_ref()).await.unwrap();
        assert!(r.is_clean(), "round {rounds}: {:#?}", r.problems);
        rounds += 1;
    }
    writer.await.unwrap();
    let r = verify_later(mem.as_ref()).await;
    assert!(r.is_clean(), "{:#?}", r.problems);
    assert_eq!(r.unsealed_commits, 0);
    assert_eq!(r.seals, 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn posix_verifies_clean_while_appends_run() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn AtomicPublisher> = Arc::new(PosixPublisher::new(dir.path()));
    append(store.clone(), 200, 10, 1).await;
    let writer = {
        let s = store.clone();
        tokio::spawn(async move { append(s, 600, 3, 2).await })
    };
    let mut rounds = 0;
    while !writer.is_finished() || rounds < 2 {
        let r = verify(store.as_ref()).await.unwrap();
        assert!(r.is_clean(), "round {rounds}: {:#?}", r.problems);
        rounds += 1;
    }
    writer.await.unwrap();
    assert!(verify_later(store.as_ref()).await.is_clean());
}

#[tokio::test]
async fn sample_and_since_seal_hash_fewer_parts_but_check_all() {
    let mem = Arc::new(MemoryPublisher::new());
    let first = append(mem.clone(), 200, 10, 1).await;
    seal(mem.as_ref(), &SystemClock, None).await.unwrap();
    let second = append(mem.clone(), 60, 10, 2).await;
    let total = (first.len() + second.len()) as u64;

    let sampled = |seed| VerifyOptions {
        sample: Some(5),
        sample_seed: Some(seed),
        ..common::later()
    };
    let a = verify_with(mem.as_ref(), &sampled(7)).await.unwrap();
    assert!(a.is_clean());
    assert_eq!((a.parts_hashed, a.parts_not_hashed), (5, total - 5));
    assert_eq!(a.sample_seed, Some(7));
    assert_eq!(a.parts_ok, total);

    let since = VerifyOptions {
        since_seal: Some(None),
        ..common::later()
    };
    let s = verify_with(mem.as_ref(), &since).await.unwrap();
    assert!(s.is_clean());
    assert_eq!(s.parts_hashed, second.len() as u64);
    assert_eq!(s.parts_not_hashed, first.len() as u64);

    // A sealed part changed in place, same size: --since-seal skips its hash, but a
    // truncated one is still caught by its size, and a changed pointer by the seal.
    let p = &first[0];
    let mut b = mem.get(&p.part_path).await.unwrap().unwrap().to_vec();
    b.truncate(b.len() - 1);
    mem.tamper_put(&p.part_path, bytes::Bytes::from(b));
    let s = verify_with(mem.as_ref(), &since).await.unwrap();
    assert_eq!(s.problems.len(), 1);
    assert_eq!(s.problems[0].key, p.part_path);
}
