//! A busy lookback: when every commit of the store landed within the seal's lookback (a
//! burst, or a fleet's busy hour), what `log --since-seal`, `verify --since-seal`, `seal`
//! and `prove` read is still the new commits plus a constant, on local disk (metadata
//! reads: one `statx` per object a listing returns) and in requests (GETs, bytes read);
//! only the names of the lookback's index directories are listed again (LIST pages, one
//! per 1,000 names). And an entry that lands late in that window is still found, by
//! readers and by the next seal, exactly once.

use std::sync::Arc;

use chrono::{DateTime, Duration, TimeZone, Utc};
use lineage_store::internal::keys;
use lineage_store::internal::metered::MeteredPublisher;
use lineage_store::internal::metered::Snapshot;
use lineage_store::{
    prove, seal_with, verify_with, AtomicPublisher, FixedClock, Pointer, PosixPublisher,
    ProveAgainst, SealOptions, VerifyOptions, Writer,
};

use crate::support::audit::events;

pub(super) fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 1, 12, 0, 0).unwrap()
}

pub(super) async fn commit_at(
    store: Arc<dyn AtomicPublisher>,
    at: DateTime<Utc>,
    commits: usize,
    seed: u64,
) -> Vec<Pointer> {
    Writer::new(store)
        .with_clock(Arc::new(FixedClock(at)))
        .with_batch_rows(10)
        .append(&events(commits * 10, 1, seed), |_| {})
        .await
        .unwrap()
}

pub(super) async fn seal_at(store: &dyn AtomicPublisher, at: DateTime<Utc>) -> u64 {
    seal_with(store, &FixedClock(at), None, &SealOptions::default())
        .await
        .unwrap()
        .added
}

/// The store's newest seal, parsed.
pub(super) async fn newest_seal(
    store: &dyn AtomicPublisher,
) -> lineage_store::internal::seal::Seal {
    let newest = store
        .list(keys::SEALS_PREFIX)
        .await
        .unwrap()
        .into_iter()
        .max_by(|a, b| a.key.cmp(&b.key))
        .unwrap();
    lineage_store::internal::seal::Seal::from_bytes(
        &newest.key,
        &store.get(&newest.key).await.unwrap().unwrap(),
    )
    .unwrap()
}

const NEW: usize = 20;

/// A local store whose `burst` commits land in 30 seconds (one append a second), sealed;
/// then twice 10 commits more, sealed (seals that count the window); then `NEW` more, not
/// sealed. Everything lies within the lookback (5 minutes) of a seal a minute later.
pub(super) async fn burst(
    dir: &std::path::Path,
    burst: usize,
) -> (Arc<PosixPublisher>, Vec<Pointer>, usize) {
    let store = Arc::new(PosixPublisher::new(dir));
    let mut first = Vec::new();
    for i in 0..30 {
        let t = t0() + Duration::seconds(i);
        first.extend(commit_at(store.clone(), t, burst / 30, i as u64).await);
    }
    assert_eq!(
        seal_at(store.as_ref(), t0() + Duration::seconds(31)).await,
        first.len() as u64
    );
    for i in 0..2 {
        let more = commit_at(
            store.clone(),
            t0() + Duration::seconds(32 + 2 * i),
            10,
            100 + i as u64,
        )
        .await;
        assert_eq!(
            seal_at(store.as_ref(), t0() + Duration::seconds(33 + 2 * i)).await,
            more.len() as u64
        );
        first.extend(more);
    }
    let new = commit_at(store.clone(), t0() + Duration::seconds(40), NEW, 110).await;
    (store, first, new.len())
}

/// Each routine operation at a minute after the burst: its requests and the metadata its
/// listings read.
async fn costs(
    store: Arc<PosixPublisher>,
    first: &[Pointer],
    new: usize,
) -> Vec<(&'static str, Snapshot, u64)> {
    let at = t0() + Duration::seconds(60);
    let m = MeteredPublisher::new(store.clone(), None);
    let mut out = Vec::new();
    let step = |op, m: &MeteredPublisher| {
        let s = m.snapshot();
        m.reset();
        (op, s)
    };
    let stat0 = store.metadata_reads();
    let log = lineage_store::since_seal(&m, None, None).await.unwrap();
    assert_eq!(log.len(), new);
    let (op, s) = step("log --since-seal", &m);
    let stat1 = store.metadata_reads();
    out.push((op, s, stat1 - stat0));
    let since = VerifyOptions {
        since_seal: Some(None),
        now: at,
        ..VerifyOptions::default()
    };
    let r = verify_with(&m, &since).await.unwrap();
    assert!(r.is_clean(), "{:#?}", r.problems);
    assert_eq!(r.unsealed_commits, new as u64);
    let (op, s) = step("verify --since-seal", &m);
    let stat2 = store.metadata_reads();
    out.push((op, s, stat2 - stat1));
    assert_eq!(seal_at(&m, at).await, new as u64);
    let (op, s) = step("seal", &m);
    let stat3 = store.metadata_reads();
    out.push((op, s, stat3 - stat2));
    prove(&m, &first[0].commit_id, &ProveAgainst::Newest)
        .await
        .unwrap();
    let (op, s) = step("prove", &m);
    out.push((op, s, store.metadata_reads() - stat3));
    out
}

#[tokio::test]
async fn a_busy_lookback_costs_the_new_commits_not_the_burst() {
    let (small_dir, large_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (small, small_first, small_new) = burst(small_dir.path(), 60).await;
    let (large, large_first, large_new) = burst(large_dir.path(), 1_200).await;
    assert_eq!(small_new, large_new);
    let extra = (large_first.len() - small_first.len()) as u64;
    assert!(extra > 1_000, "{extra}");
    let a = costs(small, &small_first, small_new).await;
    let b = costs(large, &large_first, large_new).await;
    for ((op, a, a_stat), (_, b, b_stat)) in a.iter().zip(&b) {
        // Reads: the same (pointers and parts of the new commits, the seal, the tiles;
        // `prove` one tile level more at most).
        assert!(
            b.gets + b.range_gets <= a.gets + a.range_gets + 2,
            "{op}: {a:?} / {b:?}"
        );
        // The newest seal holds the new commits, about a second of `ahead` and one count
        // per directory of the lookback: the same size whatever the burst.
        assert!(
            b.bytes_read <= a.bytes_read + a.bytes_read / 4,
            "{op}: {} bytes read after a burst of 60, {} after 1,200",
            a.bytes_read,
            b.bytes_read
        );
        // Metadata reads on local disk: what the listings return (the new commits' entries,
        // a second of `ahead`), not the burst. `verify --since-seal` lists the data area and
        // the pointers by name (no metadata).
        assert!(
            *b_stat <= a_stat + 12,
            "{op}: {a_stat} metadata reads after a burst of 60, {b_stat} after 1,200"
        );
        // Listings: the window's names (one page per 1,000) and, for `verify`, the data
        // area's and the pointers'.
        let more = if *op == "verify --since-seal" {
            2 * extra
        } else {
            0
        } + extra;
        assert!(
            b.list_pages <= a.list_pages + more.div_ceil(1000) + 2,
            "{op}: {a:?} / {b:?}"
        );
    }
}

#[tokio::test]
async fn an_entry_landing_late_in_a_busy_lookback_is_found_and_sealed_once() {
    let dir = tempfile::tempdir().unwrap();
    let (store, first, new) = burst(dir.path(), 300).await;
    // A writer 50 seconds behind: its entries land in directories the newest seal counted.
    let late = commit_at(store.clone(), t0() + Duration::seconds(5), 3, 200).await;
    let log = lineage_store::since_seal(store.as_ref(), None, None)
        .await
        .unwrap();
    let mut want: Vec<&str> = late.iter().map(|p| p.commit_id.as_str()).collect();
    let shown: Vec<&str> = log.iter().map(|p| p.commit_id.as_str()).collect();
    want.retain(|c| !shown.contains(c));
    assert!(
        want.is_empty(),
        "log --since-seal misses late commits {want:?}"
    );
    assert_eq!(log.len(), new + late.len());
    let at = t0() + Duration::seconds(60);
    let since = VerifyOptions {
        since_seal: Some(None),
        now: at,
        ..VerifyOptions::default()
    };
    let r = verify_with(store.as_ref(), &since).await.unwrap();
    assert!(r.is_clean(), "{:#?}", r.problems);
    assert_eq!(r.unsealed_commits, (new + late.len()) as u64);
    assert_eq!(seal_at(store.as_ref(), at).await, (new + late.len()) as u64);
    assert_eq!(seal_at(store.as_ref(), at).await, 0);
    let full = verify_with(
        store.as_ref(),
        &VerifyOptions {
            now: at + Duration::days(1),
            ..VerifyOptions::default()
        },
    )
    .await
    .unwrap();
    assert!(full.is_clean(), "{:#?}", full.problems);
    assert_eq!(full.sealed_commits, (first.len() + new + late.len()) as u64);
    // The newest seal records a second of `ahead` and the window's counts, not the burst.
    let seal = newest_seal(store.as_ref()).await;
    assert!(
        seal.ahead.as_ref().unwrap().len() <= new,
        "{:?}",
        seal.ahead
    );
    let window = seal.index_window.as_ref().unwrap();
    assert!(window.counts.values().sum::<u64>() >= first.len() as u64);
}

/// On local disk the window is listed in one walk: each directory of the lookback read
/// once, each name looked at once, however many pages of 1,000 keys the window holds.
/// (Listed a page at a time, every page after the first walked again from the root to
/// where the last one stopped, reading the directories on the way once more.)
#[tokio::test]
async fn a_busy_window_on_local_disk_reads_each_name_once() {
    use std::collections::HashMap;
    use std::sync::Mutex;
    let dir = tempfile::tempdir().unwrap();
    let (_, first, new) = burst(dir.path(), 2_400).await;
    assert!(first.len() > 2_000, "{}", first.len());
    let seen: Arc<Mutex<HashMap<std::path::PathBuf, u32>>> = Arc::default();
    let hooked = {
        let seen = seen.clone();
        PosixPublisher::new(dir.path()).with_list_hook(Arc::new(move |p: &std::path::Path| {
            *seen.lock().unwrap().entry(p.to_path_buf()).or_default() += 1;
        }))
    };
    let log = lineage_store::since_seal(&hooked, None, None)
        .await
        .unwrap();
    assert_eq!(log.len(), new);
    let seen = seen.lock().unwrap();
    let again: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
    assert!(
        again.is_empty(),
        "{} of {} names were looked at more than once, e.g. {:?}",
        again.len(),
        seen.len(),
        again.iter().take(3).collect::<Vec<_>>()
    );
    // The burst's directories are not read at all: the newest seal recorded their stamps
    // (history::stamps).
    let index_names = seen
        .keys()
        .filter(|p| p.to_string_lossy().contains("/_lineage/index/"))
        .count();
    assert!(
        index_names < 200,
        "{index_names} of {} index names looked at",
        first.len()
    );
}
