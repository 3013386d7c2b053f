//! Group commit of directory fsyncs (src/publish/dirsync.rs), driven by an injected
//! fsync so that the interleavings are forced, not timed: no publish returns before an
//! fsync that started after its rename succeeded; concurrent publishes share fsyncs; a
//! failed fsync fails every publish it covered.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use lineage_store::publish::dirsync::{DirSyncs, SyncFn};
use lineage_store::Error;

/// What the injected fsync saw: for each call, the names "renamed" before it started.
#[derive(Default)]
struct Log {
    renamed: Mutex<Vec<usize>>,
    syncs: Mutex<Vec<Vec<usize>>>,
}

/// An fsync that records what it covers and, on its first call, holds until `waiters`
/// tickets are issued for the directory (so the others are queued behind it); it fails
/// when `fail(call)` says so.
fn injected(
    log: Arc<Log>,
    me: Arc<OnceLock<Arc<DirSyncs>>>,
    waiters: u64,
    fail: fn(usize) -> bool,
) -> SyncFn {
    Arc::new(move |dir: &Path| {
        let call = log.syncs.lock().unwrap().len();
        if call == 0 {
            let syncs = me.get().unwrap();
            while syncs.issued(dir) < waiters {
                std::thread::yield_now();
            }
        }
        let covered = log.renamed.lock().unwrap().clone();
        log.syncs.lock().unwrap().push(covered);
        if fail(call) {
            Err(Error::io(dir, std::io::Error::from_raw_os_error(5)))
        } else {
            Ok(())
        }
    })
}

fn setup(waiters: u64, fail: fn(usize) -> bool) -> (Arc<Log>, Arc<DirSyncs>) {
    let log = Arc::new(Log::default());
    let me = Arc::new(OnceLock::new());
    let syncs = Arc::new(DirSyncs::new(injected(
        log.clone(),
        me.clone(),
        waiters,
        fail,
    )));
    me.set(syncs.clone()).ok().unwrap();
    (log, syncs)
}

/// Thread `i` "renames" its name into `dir`, then waits for it to be durable.
fn publish(log: &Log, syncs: &DirSyncs, dir: &Path, i: usize) -> Result<(), String> {
    log.renamed.lock().unwrap().push(i);
    syncs.after_rename(dir).map_err(|e| e.to_string())
}

#[test]
fn concurrent_publishes_share_fsyncs_and_none_returns_before_an_fsync_covering_it() {
    const N: usize = 8;
    let (log, syncs) = setup(N as u64, |_| false);
    let dir = Path::new("/store/_lineage/index/2026-11-30");
    let results: Vec<(usize, Result<(), String>, usize)> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..N)
            .map(|i| {
                let (log, syncs) = (&log, &syncs);
                s.spawn(move || {
                    let r = publish(log, syncs, dir, i);
                    // How many fsyncs had run when it returned.
                    (i, r, log.syncs.lock().unwrap().len())
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let syncs_run = log.syncs.lock().unwrap().clone();
    // The first fsync is credited only to its caller (the others' tickets came after it was
    // started); the second covers everyone: two in all, not eight.
    assert_eq!(syncs_run.len(), 2, "{syncs_run:?}");
    assert_eq!(syncs_run[1].len(), N, "{syncs_run:?}");
    for (i, r, seen) in results {
        assert_eq!(r, Ok(()));
        // Returned only after an fsync that started after its rename.
        assert!(
            syncs_run[..seen].iter().any(|c| c.contains(&i)),
            "{i} returned after {seen} fsyncs: {syncs_run:?}"
        );
    }
    assert_eq!(syncs.tracked(), 0, "idle directories are forgotten");
}

#[test]
fn a_failed_fsync_fails_every_publish_it_covered_and_the_next_runs_its_own() {
    const N: usize = 3;
    let (log, syncs) = setup(N as u64, |call| call == 0);
    let dir = Path::new("/store/_lineage/commits/run_id=r");
    let results: Vec<Result<(), String>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..N)
            .map(|i| {
                let (log, syncs) = (&log, &syncs);
                s.spawn(move || publish(log, syncs, dir, i))
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    // All three renamed before the failing fsync returned, so any of them may be lost:
    // each publish fails, none retries into a success that would prove nothing.
    assert_eq!(log.syncs.lock().unwrap().len(), 1);
    for r in &results {
        let e = r.as_ref().unwrap_err();
        assert!(e.contains("/store/_lineage/commits/run_id=r"), "{e}");
    }
    // A publish after it runs its own fsync, which succeeds.
    assert_eq!(publish(&log, &syncs, dir, 9), Ok(()));
    let runs = log.syncs.lock().unwrap().clone();
    assert_eq!(runs.len(), 2);
    assert!(runs[1].contains(&9));
    assert_eq!(syncs.tracked(), 0);
}

#[test]
fn different_directories_do_not_share_an_fsync() {
    let (log, syncs) = setup(1, |_| false);
    publish(&log, &syncs, Path::new("/s/a"), 0).unwrap();
    publish(&log, &syncs, Path::new("/s/b"), 1).unwrap();
    publish(&log, &syncs, Path::new("/s/a"), 2).unwrap();
    assert_eq!(
        log.syncs.lock().unwrap().len(),
        3,
        "one each: nothing was in flight"
    );
}
