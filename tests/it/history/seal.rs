//! Sealing from the index: its cost does not grow with the history, an index entry that
//! lands late (within the lookback) is sealed exactly once, one later than that is named
//! by `verify` and sealed by `seal --rescan`, a sealer that dies before finishing is
//! completed by the next, and keyed retries add no second index entry.

use std::sync::Arc;

use chrono::{DateTime, Duration, TimeZone, Utc};
use lineage_store::internal::faulty::Fault;
use lineage_store::internal::faulty::FaultyPublisher;
use lineage_store::internal::keys;
use lineage_store::internal::metered::MeteredPublisher;
use lineage_store::internal::metered::Snapshot;
use lineage_store::prove;
use lineage_store::read_pointers;
use lineage_store::seal_with;
use lineage_store::verify_with;
use lineage_store::FixedClock;
use lineage_store::MemoryPublisher;
use lineage_store::Pointer;
use lineage_store::ProblemKind as K;
use lineage_store::ProveAgainst;
use lineage_store::SealOptions;
use lineage_store::VerifyOptions;
use lineage_store::{AtomicPublisher, Writer};

use crate::support::audit::{events, of_kind, verify_later};

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 1, 12, 0, 0).unwrap()
}

async fn commit_at(
    store: Arc<dyn AtomicPublisher>,
    at: DateTime<Utc>,
    rows: usize,
    seed: u64,
) -> Vec<Pointer> {
    Writer::new(store)
        .with_clock(Arc::new(FixedClock(at)))
        .with_batch_rows(10)
        .append(&events(rows, 1, seed), |_| {})
        .await
        .unwrap()
}

async fn seal_at(store: &dyn AtomicPublisher, at: DateTime<Utc>, rescan: bool) -> u64 {
    let opts = SealOptions {
        rescan,
        ..SealOptions::default()
    };
    seal_with(store, &FixedClock(at), None, &opts)
        .await
        .unwrap()
        .added
}

fn at(t: DateTime<Utc>) -> VerifyOptions {
    VerifyOptions {
        now: t,
        ..VerifyOptions::default()
    }
}

/// A store of `seals` seals, each over one append made a minute before it, appends ten
/// minutes apart (more than the lookback); then one append more, not sealed. Returns the
/// store, a time after all that, the first commits and how many are not sealed.
async fn history(seals: u64) -> (Arc<MemoryPublisher>, DateTime<Utc>, Vec<Pointer>, usize) {
    let mem = Arc::new(MemoryPublisher::new());
    let mut t = t0();
    let mut first = Vec::new();
    for i in 0..seals {
        first.extend(commit_at(mem.clone(), t, 200, i).await);
        seal_at(mem.as_ref(), t + Duration::minutes(1), false).await;
        t += Duration::minutes(10);
    }
    let new = commit_at(mem.clone(), t, 200, 999).await;
    (mem, t + Duration::minutes(1), first, new.len())
}

#[tokio::test]
async fn routine_operations_cost_the_same_requests_with_a_long_history() {
    /// The costs, and the keys of the data area and the pointers (which `verify
    /// --since-seal` lists, to name any file under a part's name no pointer names).
    async fn costs(seals: u64) -> (Vec<(String, Snapshot)>, u64) {
        let (mem, t, first, new) = history(seals).await;
        let data = mem.list("run_id=").await.unwrap().len()
            + mem.list(keys::COMMITS_PREFIX).await.unwrap().len();
        let m = MeteredPublisher::new(mem.clone(), None);
        let mut out = Vec::new();
        m.reset();
        let log = lineage_store::since_seal(&m, None, None).await.unwrap();
        assert_eq!(log.len(), new);
        out.push(("log".to_string(), m.snapshot()));
        m.reset();
        let since = VerifyOptions {
            since_seal: Some(None),
            ..at(t)
        };
        let r = verify_with(&m, &since).await.unwrap();
        assert!(r.is_clean(), "{:#?}", r.problems);
        out.push(("verify --since-seal".to_string(), m.snapshot()));
        m.reset();
        assert_eq!(seal_at(&m, t, false).await, new as u64);
        out.push(("seal".to_string(), m.snapshot()));
        m.reset();
        prove(&m, &first[0].commit_id, &ProveAgainst::Newest)
            .await
            .unwrap();
        out.push(("prove".to_string(), m.snapshot()));
        (out, data as u64)
    }
    let (short, short_data) = costs(1).await;
    let (long, long_data) = costs(40).await;
    for ((op, a), (_, b)) in short.iter().zip(&long) {
        // `verify --since-seal` also lists the data area and the pointers' keys (no reads):
        // one listing request per 1,000 keys more.
        let (more_keys, more_pages) = if op == "verify --since-seal" {
            let more = long_data - short_data;
            (more, more.div_ceil(1000))
        } else {
            (0, 0)
        };
        // ~20 vs ~800 sealed commits: one more tile level at most (a read and a write), and
        // `verify --since-seal` reads the seal before the newest.
        assert!(
            b.requests() <= a.requests() + 3 + more_pages,
            "{op}: {} requests with 1 seal, {} with 40 ({a:?} / {b:?})",
            a.requests(),
            b.requests()
        );
        assert!(
            b.list_pages <= a.list_pages + more_pages,
            "{op}: {a:?} / {b:?}"
        );
        assert!(
            b.listed_keys <= a.listed_keys + 2 + more_keys,
            "{op}: {a:?} / {b:?}"
        );
    }
}

#[tokio::test]
async fn an_index_entry_late_within_the_lookback_is_sealed_exactly_once() {
    let mem = Arc::new(MemoryPublisher::new());
    let on_time = commit_at(mem.clone(), t0(), 30, 1).await;
    assert_eq!(
        seal_at(mem.as_ref(), t0() + Duration::minutes(1), false).await,
        on_time.len() as u64
    );
    // A writer whose clock is 2 minutes behind commits after that seal: its commit time is
    // before the seal was made, but after the seal's watermark (5 minutes back).
    let late = commit_at(mem.clone(), t0() - Duration::minutes(1), 30, 2).await;
    let t = t0() + Duration::minutes(2);
    assert_eq!(seal_at(mem.as_ref(), t, false).await, late.len() as u64);
    assert_eq!(seal_at(mem.as_ref(), t, false).await, 0);
    let r = verify_with(mem.as_ref(), &at(t + Duration::days(1)))
        .await
        .unwrap();
    assert!(r.is_clean(), "{:#?}", r.problems);
    assert_eq!(r.sealed_commits, (on_time.len() + late.len()) as u64);
}

#[tokio::test]
async fn a_commit_later_than_the_lookback_is_named_and_rescanned() {
    let mem = Arc::new(MemoryPublisher::new());
    commit_at(mem.clone(), t0(), 30, 1).await;
    seal_at(mem.as_ref(), t0() + Duration::minutes(1), false).await;
    // 10 minutes behind: before the newest seal's watermark.
    let lost = commit_at(mem.clone(), t0() - Duration::minutes(10), 10, 2).await;
    assert_eq!(
        seal_at(mem.as_ref(), t0() + Duration::minutes(2), false).await,
        0
    );
    let later = at(t0() + Duration::days(1));
    let r = verify_with(mem.as_ref(), &later).await.unwrap();
    let missed: Vec<String> = of_kind(&r, K::MissedBySeals)
        .into_iter()
        .map(|p| p.0)
        .collect();
    let mut want: Vec<String> = lost
        .iter()
        .map(|p| keys::pointer_key(&p.run_id, &p.commit_id))
        .collect();
    want.sort();
    assert_eq!(missed, want, "{:#?}", r.problems);
    assert!(r.problems.iter().all(|p| p.detail.contains("--rescan")));
    assert_eq!(
        seal_at(mem.as_ref(), t0() + Duration::minutes(3), true).await,
        lost.len() as u64
    );
    let r = verify_with(mem.as_ref(), &later).await.unwrap();
    assert!(r.is_clean(), "{:#?}", r.problems);
    // After the rescan, incremental seals go on from its watermark.
    let next = commit_at(mem.clone(), t0() + Duration::minutes(4), 10, 3).await;
    assert_eq!(
        seal_at(mem.as_ref(), t0() + Duration::minutes(5), false).await,
        next.len() as u64
    );
}

#[tokio::test]
async fn a_sealer_that_dies_before_finishing_is_completed_by_the_next() {
    for (pattern, what) in [
        ("_lineage/heads/", "marker"),
        ("_lineage/tiles/", "tiles"),
        ("_lineage/leaves/", "locators"),
    ] {
        let mem = Arc::new(MemoryPublisher::new());
        let faulty = Arc::new(FaultyPublisher::new(mem.clone()));
        commit_at(mem.clone(), t0(), 30, 1).await;
        seal_at(mem.as_ref(), t0() + Duration::minutes(1), false).await;
        commit_at(mem.clone(), t0() + Duration::minutes(2), 30, 2).await;
        faulty.fail(pattern, Fault::Before, 1);
        let opts = SealOptions::default();
        let died = seal_with(
            faulty.as_ref(),
            &FixedClock(t0() + Duration::minutes(3)),
            None,
            &opts,
        )
        .await;
        assert!(died.is_err(), "{what}");
        let later = at(t0() + Duration::days(1));
        // Unfinished, not broken: every seal, pointer and part still checks out.
        let r = verify_with(mem.as_ref(), &later).await.unwrap();
        assert!(r.is_clean(), "{what}: {:#?}", r.problems);
        assert_eq!(r.unfinished_seal, Some(2), "{what}");
        // The next sealer completes seal 2; nothing is new, so it publishes no seal 3.
        assert_eq!(
            seal_at(mem.as_ref(), t0() + Duration::minutes(4), false).await,
            0
        );
        let r = verify_with(mem.as_ref(), &later).await.unwrap();
        assert!(r.is_clean(), "{what}: {:#?}", r.problems);
        assert_eq!((r.seals, r.unfinished_seal), (2, None));
    }
}

#[tokio::test]
async fn keyed_retries_add_no_second_index_entry_and_log_is_in_commit_time_order() {
    let mem = Arc::new(MemoryPublisher::new());
    let keyed = |at: DateTime<Utc>, seed: u64| {
        let mem = mem.clone();
        async move {
            Writer::new(mem)
                .with_clock(Arc::new(FixedClock(at)))
                .with_batch_rows(10)
                .with_commit_key(Some(format!("job-{seed}")))
                .append(&events(20, 1, seed), |_| {})
                .await
                .unwrap()
        }
    };
    let a = keyed(t0() + Duration::minutes(2), 1).await;
    let b = commit_at(mem.clone(), t0() + Duration::minutes(1), 20, 2).await;
    let c = keyed(t0() + Duration::minutes(3), 3).await;
    // The platform retries job 1 later: same commits, same index entries.
    let again = keyed(t0() + Duration::minutes(9), 1).await;
    // The same pointers, each said to have been there already.
    assert!(again.iter().all(|p| p.existed) && !a.iter().any(|p| p.existed));
    let stored: Vec<_> = again
        .iter()
        .map(|p| lineage_store::Pointer {
            writer: None,
            existed: false,
            ..p.clone()
        })
        .collect();
    assert_eq!(stored, a);
    let entries = mem.list(keys::INDEX_PREFIX).await.unwrap();
    assert_eq!(entries.len(), a.len() + b.len() + c.len());
    // Commit-time order, whatever the ids (UUIDv8 of keyed commits are hashes); within
    // one append every commit has the same (fixed) time, then commit id decides.
    let ids = |v: &[Pointer]| v.iter().map(|p| p.commit_id.clone()).collect::<Vec<_>>();
    let got = ids(&read_pointers(mem.as_ref(), None).await.unwrap());
    let group = |v: &[Pointer]| {
        let mut g = ids(v);
        g.sort();
        g
    };
    let mut expect = group(&b);
    expect.extend(group(&a));
    expect.extend(group(&c));
    assert_eq!(got, expect);
    let since = lineage_store::since_seal(mem.as_ref(), None, None)
        .await
        .unwrap();
    assert_eq!(ids(&since), expect);
    // Sealed in that order too, each once.
    assert_eq!(
        seal_at(mem.as_ref(), t0() + Duration::minutes(10), false).await,
        expect.len() as u64
    );
    assert!(verify_later(mem.as_ref()).await.is_clean());
}
