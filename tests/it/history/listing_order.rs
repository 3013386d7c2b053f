//! No listing order may turn into a reported problem: `verify --shard` (then `verify merge`),
//! `--since-seal`, `log --since-seal`, `seal`, `prove` and `replicate` give the same
//! answer through a publisher whose listings are out of S3's byte order and whose
//! `start-after` skips directories (`DisorderlyPublisher`, the way SeaweedFS 4.48 lists;
//! tests/it/publish/seaweedfs.rs runs the same operations on the real server).

use std::sync::Arc;

use lineage_store::internal::disorderly::{DisorderlyPublisher, Quirks};
use lineage_store::internal::list_pages;
use lineage_store::internal::shard::merge;
use lineage_store::replicate::{compare::compare, replicate, ReplicateOptions};
use lineage_store::{
    prove, seal, since_seal, verify_proof, verify_with, AtomicPublisher, MemoryPublisher, Pointer,
    ProblemKind, ProveAgainst, Report, ShardSpec, SystemClock, VerifyOptions, Writer,
};

use crate::support::audit::later;
use crate::support::batches;

/// Run ids that are prefixes of each other with a byte below `/` after them: their
/// directories list in another order than their keys sort (`run_id=nightly/…` after
/// `run_id=nightly-2/…` in bytes, before it directory by directory).
const RUNS: [&str; 6] = ["nightly", "nightly-2", "nightly.3", "nightly+4", "a", "a-b"];

async fn append_round(store: Arc<dyn AtomicPublisher>, round: usize) -> Vec<Pointer> {
    let mut out = Vec::new();
    for run in RUNS {
        out.extend(
            Writer::new(store.clone())
                .with_batch_rows(5)
                .append(&batches(run, 10, &format!("r{round}")), |_| {})
                .await
                .unwrap(),
        );
    }
    out
}

/// Three rounds of appends (two commits per run each), each of the first two sealed.
async fn store() -> (Arc<MemoryPublisher>, Arc<dyn AtomicPublisher>, Vec<Pointer>) {
    let plain = Arc::new(MemoryPublisher::new());
    let mut all = Vec::new();
    for round in 0..3 {
        all.extend(append_round(plain.clone(), round).await);
        if round < 2 {
            seal(plain.as_ref(), &SystemClock, None).await.unwrap();
        }
    }
    let quirky: Arc<dyn AtomicPublisher> =
        Arc::new(DisorderlyPublisher::new(plain.clone(), Quirks::all()));
    (plain, quirky, all)
}

fn counts(r: &Report) -> [u64; 7] {
    [
        r.commits,
        r.parts_ok,
        r.rows,
        r.sealed_commits,
        r.unsealed_commits,
        r.seals,
        r.problems.len() as u64,
    ]
}

async fn merged(store: &dyn AtomicPublisher, n: u32) -> Report {
    let mut reports = Vec::new();
    for i in 0..n {
        let opts = VerifyOptions {
            shard: Some(ShardSpec { index: i, count: n }),
            plan_seal: Some(2),
            ..later()
        };
        reports.push(verify_with(store, &opts).await.unwrap());
    }
    merge(reports).unwrap()
}

#[tokio::test]
async fn the_wrapper_lists_the_way_seaweedfs_does() {
    let (plain, quirky, _) = store().await;
    // Out of byte order, directory by directory.
    let raw: Vec<String> = quirky
        .list_after("run_id=", "", 1000)
        .await
        .unwrap()
        .into_iter()
        .map(|o| o.key)
        .collect();
    let mut sorted = raw.clone();
    sorted.sort();
    assert_ne!(raw, sorted);
    // An offset just past a directory's name skips the directory.
    let after = "_lineage/commits/run_id=nightly.\u{10FFFF}";
    let skipped = quirky
        .list_after("_lineage/commits/", after, 1000)
        .await
        .unwrap();
    let right = plain
        .list_after("_lineage/commits/", after, 1000)
        .await
        .unwrap();
    assert!(right
        .iter()
        .any(|o| o.key.starts_with("_lineage/commits/run_id=nightly/")));
    assert!(!skipped
        .iter()
        .any(|o| o.key.starts_with("_lineage/commits/run_id=nightly/")));
    // The pager checks every page and gives the byte-ordered answer.
    for (prefix, after, before) in [
        // `run_id=nightly-2/…` and `run_id=nightly.3/…`, and not `run_id=nightly/…`.
        ("run_id=", "run_id=nightly+4/", Some("run_id=nightly/")),
        // `run_id=nightly/…` sorts after this offset in bytes, before it by directory.
        ("run_id=", "run_id=nightly.3/", None),
        (
            "_lineage/commits/",
            "_lineage/commits/run_id=nightly-2/",
            None,
        ),
        ("_lineage/commits/", "", None),
        ("", "_lineage/index/", Some("run_id=")),
    ] {
        let want = list_pages(plain.as_ref(), prefix, after, before)
            .await
            .unwrap();
        let got = list_pages(quirky.as_ref(), prefix, after, before)
            .await
            .unwrap();
        assert_eq!(got, want, "{prefix:?} after {after:?} before {before:?}");
        assert!(!want.is_empty());
    }
}

#[tokio::test]
async fn shards_since_seal_log_seal_prove_and_replicate_ignore_listing_order() {
    let (plain, quirky, all) = store().await;
    let full = verify_with(plain.as_ref(), &later()).await.unwrap();
    assert!(full.is_clean(), "{:#?}", full.problems);
    assert_eq!(full.commits, all.len() as u64);
    assert_eq!(full.unsealed_commits, (RUNS.len() * 2) as u64);

    // verify --shard i/n, then `verify merge`: what the full verify says, for every n.
    for n in [2, 4, 7] {
        let m = merged(quirky.as_ref(), n).await;
        assert!(m.is_clean(), "{n} shards: {:#?}", m.problems);
        let on_plain = merged(plain.as_ref(), n).await;
        assert_eq!(counts(&m), counts(&on_plain), "{n} shards");
        assert_eq!(m.commits, full.commits, "{n} shards");
    }

    // verify --since-seal and log --since-seal.
    let since = VerifyOptions {
        since_seal: Some(None),
        ..later()
    };
    let a = verify_with(quirky.as_ref(), &since).await.unwrap();
    let b = verify_with(plain.as_ref(), &since).await.unwrap();
    assert!(a.is_clean(), "{:#?}", a.problems);
    assert_eq!(counts(&a), counts(&b));
    let logged = |v: Vec<Pointer>| v.into_iter().map(|p| p.commit_id).collect::<Vec<_>>();
    let got = logged(since_seal(quirky.as_ref(), None, None).await.unwrap());
    assert_eq!(
        got,
        logged(since_seal(plain.as_ref(), None, None).await.unwrap())
    );
    assert_eq!(got.len(), RUNS.len() * 2);

    // seal through the quirky listing: exactly the unsealed commits, once.
    let s = seal(quirky.as_ref(), &SystemClock, None).await.unwrap();
    assert_eq!(s.added, (RUNS.len() * 2) as u64);
    assert!(!s.full_scan);
    let after = verify_with(plain.as_ref(), &later()).await.unwrap();
    assert!(after.is_clean(), "{:#?}", after.problems);
    assert_eq!(after.sealed_commits, all.len() as u64);
    assert_eq!(after.unsealed_commits, 0);

    // A real problem is still found, by exactly one shard.
    let gone = &all[3];
    let key = lineage_store::internal::keys::pointer_key(&gone.run_id, &gone.commit_id);
    let tampered = Arc::new(MemoryPublisher::new());
    for o in plain.list("").await.unwrap() {
        if o.key != key {
            tampered.tamper_put(&o.key, plain.get(&o.key).await.unwrap().unwrap());
        }
    }
    let tq = DisorderlyPublisher::new(tampered.clone(), Quirks::all());
    for n in [2, 7] {
        let m = merged(&tq, n).await;
        let missing: Vec<&str> = m
            .problems
            .iter()
            .filter(|p| p.kind == ProblemKind::SealedPointerMissing)
            .map(|p| p.key.as_str())
            .collect();
        assert_eq!(missing, vec![key.as_str()], "{n} shards: {:#?}", m.problems);
    }

    // prove through it.
    let target = &all[all.len() - 1];
    let proof = prove(quirky.as_ref(), &target.commit_id, &ProveAgainst::Newest)
        .await
        .unwrap();
    verify_proof(&proof, &s.head, None, None).unwrap().unwrap();

    // replicate from and to it: a replica byte for byte.
    let dst = Arc::new(MemoryPublisher::new());
    let dq: Arc<dyn AtomicPublisher> =
        Arc::new(DisorderlyPublisher::new(dst.clone(), Quirks::all()));
    let summary = replicate(quirky.clone(), dq.clone(), ReplicateOptions::default())
        .await
        .unwrap();
    assert!(summary.conflicts.is_empty());
    let r = compare(dst.as_ref(), plain.as_ref()).await.unwrap();
    assert!(r.is_clean(), "{r:#?}");
    let again = verify_with(dq.as_ref(), &later()).await.unwrap();
    assert!(again.is_clean(), "{:#?}", again.problems);
    assert_eq!(again.commits, all.len() as u64);
}

/// Past one 1,000-key page: after a seal, 1,040 commits of run `a` and 20 of `a-b` (whose
/// pointers sort before `a`'s in bytes, after them directory by directory), listed in
/// directory order with pages not scrambled, so a page can pass the order check and the
/// next one is asked from its last key. `log --since-seal`, `verify --since-seal`, an incremental seal and
/// shards 2/4/7 give what the plain store gives; the index (where both orders agree) is
/// asked once, from the window's first directory on (an object store pages that answer
/// with continuation tokens, not offsets; the local disk walks it once), never read whole.
#[tokio::test]
async fn since_seal_seal_and_shards_agree_past_one_page_of_a_directory_ordered_listing() {
    use crate::support::listings::{Listed, Recorder};
    let plain = Arc::new(MemoryPublisher::new());
    Writer::new(plain.clone())
        .with_batch_rows(1)
        .append(&batches("a", 10, "first"), |_| {})
        .await
        .unwrap();
    seal(plain.as_ref(), &SystemClock, None).await.unwrap();
    for (run, n) in [("a", 1040), ("a-b", 20)] {
        Writer::new(plain.clone())
            .with_batch_rows(1)
            .append(&batches(run, n, run), |_| {})
            .await
            .unwrap();
    }
    let recorder = Arc::new(Recorder::new(Arc::new(DisorderlyPublisher::new(
        plain.clone(),
        Quirks {
            directory_order: true,
            skip_subtrees: true,
            shuffle: false,
        },
    ))));
    let quirky: Arc<dyn AtomicPublisher> = recorder.clone();
    let index_pages = |log: &[Listed]| -> (Vec<(String, usize)>, bool) {
        let pages = log
            .iter()
            .filter_map(|l| match l {
                Listed::After { prefix, after, got } if prefix.starts_with("_lineage/index/") => {
                    Some((after.clone(), *got))
                }
                _ => None,
            })
            .collect();
        let whole = log
            .iter()
            .any(|l| matches!(l, Listed::Whole(p) if p.starts_with("_lineage/index/")));
        (pages, whole)
    };

    let logged = |v: Vec<Pointer>| v.into_iter().map(|p| p.commit_id).collect::<Vec<_>>();
    let got = logged(since_seal(quirky.as_ref(), None, None).await.unwrap());
    assert_eq!(got.len(), 1060);
    assert_eq!(
        got,
        logged(since_seal(plain.as_ref(), None, None).await.unwrap())
    );
    let (pages, whole) = index_pages(&recorder.take());
    assert!(!whole, "the index was read whole: {pages:?}");
    // One answer: every key from the window's first directory on.
    let index = list_pages(plain.as_ref(), "_lineage/index/", "", None)
        .await
        .unwrap();
    assert_eq!(index.len(), 1070);
    let from = index
        .iter()
        .filter(|o| o.key.as_str() > pages[0].0.as_str())
        .count();
    assert!(from > 1000, "{pages:?}");
    assert_eq!(pages, [(pages[0].0.clone(), from)]);

    let since = VerifyOptions {
        since_seal: Some(None),
        ..later()
    };
    let a = verify_with(quirky.as_ref(), &since).await.unwrap();
    assert!(a.is_clean(), "{:#?}", a.problems);
    assert_eq!(a.commits, 1060);
    assert_eq!(
        counts(&a),
        counts(&verify_with(plain.as_ref(), &since).await.unwrap())
    );

    recorder.take();
    let s = seal(quirky.as_ref(), &SystemClock, None).await.unwrap();
    assert_eq!((s.added, s.full_scan), (1060, false));
    let (pages, whole) = index_pages(&recorder.take());
    assert!(!whole, "the index was read whole: {pages:?}");
    assert!(pages.iter().any(|p| p.1 >= 1060), "{pages:?}");

    let full = verify_with(plain.as_ref(), &later()).await.unwrap();
    assert!(full.is_clean(), "{:#?}", full.problems);
    assert_eq!((full.sealed_commits, full.unsealed_commits), (1070, 0));
    for n in [2, 4, 7] {
        let m = merged(quirky.as_ref(), n).await;
        assert!(m.is_clean(), "{n} shards: {:#?}", m.problems);
        assert_eq!(counts(&m), counts(&merged(plain.as_ref(), n).await), "{n}");
        assert_eq!(m.commits, 1070, "{n} shards");
    }
}
