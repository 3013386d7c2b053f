//! Requests per commit on an object store (the metering wrapper counts what S3 would
//! bill): `append` at 10-row and 10,000-row flushes, `seal`, `verify --since-seal` and
//! `files` of the newest seal, each divided by the commits it handled. The counts are
//! pinned: a change that adds a request per commit fails here, and one that drops a
//! request updates the table in docs/performance.md ("Requests per commit").

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Duration, TimeZone, Utc};
use lineage_store::internal::metered::{MeteredPublisher, Request, Snapshot};
use lineage_store::{
    check_all, seal_with, snapshot, verify_with, AtomicPublisher, DigestCheck, FixedClock,
    MemoryPublisher, ReadOptions, SealOptions, VerifyOptions, Writer,
};

use crate::support::audit::events;

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 1, 12, 0, 0).unwrap()
}

/// One command's requests: what the metering wrapper counted, and its log by the kind of
/// request and of object (`part`, or the key's first two segments).
struct Cost {
    op: &'static str,
    counts: Snapshot,
    by: BTreeMap<(Request, String), u64>,
    commits: u64,
}

impl Cost {
    fn of(&self, r: Request, class: &str) -> u64 {
        self.by.get(&(r, class.to_string())).copied().unwrap_or(0)
    }
}

fn class(key: &str) -> String {
    if key.starts_with("run_id=") {
        return "part".into();
    }
    key.split('/').take(2).collect::<Vec<_>>().join("/")
}

fn cost(op: &'static str, m: &MeteredPublisher, commits: u64) -> Cost {
    let mut by = BTreeMap::new();
    for (r, key) in m.take_log() {
        *by.entry((r, class(&key))).or_default() += 1;
    }
    let counts = m.snapshot();
    m.reset();
    Cost {
        op,
        counts,
        by,
        commits,
    }
}

/// A store that holds one sealed round of `rows` rows flushed `batch_rows` at a time; then
/// one more round's `append`, `verify --since-seal` (of the round, before its seal),
/// `seal` and `files` (of the newest seal: every part checked), each metered.
async fn round_costs(rows: usize, batch_rows: usize) -> Vec<Cost> {
    let mem: Arc<dyn AtomicPublisher> = Arc::new(MemoryPublisher::new());
    let m = Arc::new(MeteredPublisher::new(mem, None).with_log());
    let store: Arc<dyn AtomicPublisher> = m.clone();
    let mut out = Vec::new();
    for round in 0..2 {
        let at = t0() + Duration::minutes(10 * round as i64);
        let sealed_at = at + Duration::minutes(6);
        m.reset();
        let n = Writer::new(store.clone())
            .with_clock(Arc::new(FixedClock(at)))
            .with_batch_rows(batch_rows)
            .append(&events(rows, 1, round as u64), |_| {})
            .await
            .unwrap()
            .len() as u64;
        let append = cost("append", &m, n);
        let since = VerifyOptions {
            since_seal: Some(None),
            now: sealed_at,
            ..VerifyOptions::default()
        };
        let r = verify_with(store.as_ref(), &since).await.unwrap();
        assert!(r.is_clean(), "{:#?}", r.problems);
        assert_eq!(r.unsealed_commits, n);
        let verify = cost("verify --since-seal", &m, n);
        let sealed = seal_with(
            store.as_ref(),
            &FixedClock(sealed_at),
            None,
            &SealOptions::default(),
        )
        .await
        .unwrap();
        assert_eq!(sealed.added, n);
        let seal = cost("seal", &m, n);
        let snap = snapshot(store.as_ref(), &ReadOptions::default())
            .await
            .unwrap();
        check_all(store.as_ref(), &snap, DigestCheck::Fastest, 16)
            .await
            .unwrap();
        let files = cost("files", &m, snap.parts.len() as u64);
        out = vec![append, verify, seal, files];
    }
    out
}

fn print(batch_rows: usize, costs: &[Cost]) {
    for c in costs {
        let s = &c.counts;
        let per = |x: u64| x as f64 / c.commits as f64;
        println!(
            "| {batch_rows} | {} | {} | {:.2} | {:.2} | {:.2} | {:.2} |",
            c.op,
            c.commits,
            per(s.puts),
            per(s.gets + s.range_gets),
            per(s.list_pages),
            per(s.requests())
        );
    }
}

/// Ten-row and 10,000-row flushes: every request a commit costs, by command, pinned.
#[tokio::test]
async fn requests_per_commit_are_the_pinned_ones() {
    for (rows, batch_rows) in [(1_000, 10), (50_000, 10_000)] {
        let costs = round_costs(rows, batch_rows).await;
        print(batch_rows, &costs);
        let [append, verify, seal, files] = &costs[..] else {
            panic!("four commands")
        };
        let n = append.commits;
        assert!(n >= 5, "{n}");
        // append: the part, its pointer, its index entry; the store's identity once.
        assert_eq!(append.of(Request::Put, "part"), n);
        assert_eq!(append.of(Request::Put, "_lineage/commits"), n);
        assert_eq!(append.of(Request::Put, "_lineage/index"), n);
        assert_eq!(append.counts.puts, 3 * n, "{:?}", append.by);
        assert_eq!(
            append.counts.requests() - append.counts.puts,
            1,
            "{:?}",
            append.by
        );
        // seal: a leaf locator per commit, a pointer GET per commit (the Delta `add`
        // takes the bytes the draft read) and one ranged GET of each part's end for the
        // add's statistics; the rest does not grow with the commits.
        assert_eq!(seal.of(Request::Put, "_lineage/leaves"), n);
        assert_eq!(
            seal.of(Request::Get, "_lineage/commits"),
            n,
            "{:?}",
            seal.by
        );
        assert_eq!(seal.of(Request::RangeGet, "part"), n, "{:?}", seal.by);
        assert!(seal.counts.requests() <= 3 * n + 30, "{:?}", seal.by);
        // verify --since-seal: each new commit's pointer and part, and its footer for the
        // sequence check; each commit of the newest seal's pointer and footer (its Delta
        // version rebuilt). One round each: 2n pointer GETs, n part GETs, 2n ranged GETs.
        assert_eq!(
            verify.of(Request::Get, "_lineage/commits"),
            2 * n,
            "{:?}",
            verify.by
        );
        assert_eq!(verify.of(Request::Get, "part"), n, "{:?}", verify.by);
        assert_eq!(
            verify.of(Request::RangeGet, "part"),
            2 * n,
            "{:?}",
            verify.by
        );
        assert!(verify.counts.requests() <= 5 * n + 40, "{:?}", verify.by);
        // files: each sealed part's pointer and bytes (checked before it is named).
        let parts = files.commits;
        assert_eq!(files.of(Request::Get, "_lineage/commits"), parts);
        assert_eq!(files.of(Request::Get, "part"), parts);
        assert!(files.counts.requests() <= 2 * parts + 10, "{:?}", files.by);
    }
}

/// `log --since-seal` lists the compactions of the seals after the one asked about: it
/// reads those seals only (none after the newest), not every seal of the store.
#[tokio::test]
async fn the_compactions_log_reads_only_the_seals_after_the_one_asked_about() {
    use lineage_store::internal::compaction_log::compactions;
    let mem: Arc<dyn AtomicPublisher> = Arc::new(MemoryPublisher::new());
    let m = Arc::new(MeteredPublisher::new(mem, None).with_log());
    let store: Arc<dyn AtomicPublisher> = m.clone();
    for round in 0..30 {
        let at = t0() + Duration::minutes(round);
        crate::support::audit::append_and_seal(&store, at, (10, 10, round as u64), None).await;
    }
    let seal_reads = |m: &MeteredPublisher| {
        m.take_log()
            .into_iter()
            .filter(|(r, k)| *r == Request::Get && k.starts_with("_lineage/seals/"))
            .count()
    };
    m.reset();
    let (listed, unlisted) = compactions(store.as_ref(), Some(u64::MAX), None)
        .await
        .unwrap();
    assert!(listed.is_empty() && unlisted.is_empty());
    assert_eq!(m.snapshot().requests(), 0);
    let (listed, _) = compactions(store.as_ref(), Some(28), None).await.unwrap();
    assert!(listed.is_empty());
    assert_eq!(seal_reads(&m), 3, "seals 29 and 30, and 31 found missing");
    let (listed, _) = compactions(store.as_ref(), None, None).await.unwrap();
    assert!(listed.is_empty());
    assert_eq!(seal_reads(&m), 30, "every seal");
}
