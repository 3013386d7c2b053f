//! `verify --since-seal` on a local disk reads only the data directories changed since
//! seal SEQ's file-system clock less the grace (issue 38): a file planted after that in a
//! directory of an old run is named (also beside its commit's own part, in a directory not
//! read, and inside a subdirectory of an old directory); one planted before it is left to
//! the full `verify` that `--since-seal` trusts, and the report says how much was not read.

use std::path::Path;
use std::sync::Arc;

use chrono::{Duration, Utc};
use lineage_store::internal::keys;
use lineage_store::{
    verify_with, AtomicPublisher, Pointer, PosixPublisher, ProblemKind, Report, VerifyOptions,
};

use crate::support::audit::append;
use crate::support::{lineage, text};

/// The change time of `path` in nanoseconds.
fn ctime_ns(path: &Path) -> i128 {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::symlink_metadata(path).unwrap();
    i128::from(m.ctime()) * 1_000_000_000 + i128::from(m.ctime_nsec())
}

/// Every directory under the data area (`run_id=*` and below), as keys ending in `/`.
fn data_dirs(root: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                let rel = e
                    .path()
                    .strip_prefix(root)
                    .unwrap()
                    .to_str()
                    .unwrap()
                    .to_string();
                if rel.starts_with("run_id=") {
                    out.push(format!("{rel}/"));
                    walk(root, &e.path(), out);
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out.sort();
    out
}

/// Until the file system's clock (what a seal reads) is past the change time of every
/// data directory and of the root: the next seal's clock is then later than all of them,
/// whatever the clock's tick. A wait on the file system's own clock, not a sleep.
async fn fs_clock_past_the_data_area(store: &PosixPublisher, root: &Path) {
    let newest = data_dirs(root)
        .iter()
        .map(|d| ctime_ns(&root.join(d)))
        .chain([ctime_ns(root)])
        .max()
        .unwrap();
    for _ in 0..1_000_000 {
        let clock = store.stamp_clock(keys::INDEX_PREFIX).await.unwrap();
        if clock.expect("this file system makes unnamed files") > newest {
            return;
        }
    }
    panic!("the file system's clock did not pass {newest}");
}

/// A verify since seal `seq` now, with grace `grace`.
async fn since(store: &dyn AtomicPublisher, seq: u64, grace: Duration) -> Report {
    let opts = VerifyOptions {
        since_seal: Some(Some(seq)),
        grace,
        now: Utc::now(),
        ..VerifyOptions::default()
    };
    verify_with(store, &opts).await.unwrap()
}

/// The keys of the problems a verify named.
fn named(r: &Report) -> Vec<&str> {
    r.problems.iter().map(|p| p.key.as_str()).collect()
}

/// A local store of two rounds (four runs), each sealed once the file system's clock is
/// past everything written: seal 2 records a clock later than every data directory.
async fn two_rounds() -> (tempfile::TempDir, Arc<PosixPublisher>, Vec<Pointer>) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("lake");
    let store = Arc::new(PosixPublisher::new(&root));
    let first = append(store.clone(), 60, 10, 3).await;
    fs_clock_past_the_data_area(&store, &root).await;
    lineage_store::seal(store.as_ref(), &lineage_store::SystemClock, None)
        .await
        .unwrap();
    append(store.clone(), 60, 10, 4).await;
    fs_clock_past_the_data_area(&store, &root).await;
    lineage_store::seal(store.as_ref(), &lineage_store::SystemClock, None)
        .await
        .unwrap();
    (tmp, store, first)
}

/// A commit of the first round whose run has a partition directory other than its part's.
fn commit_with_another_dir(first: &[Pointer], root: &Path) -> (Pointer, String) {
    for p in first {
        let run = root.join(format!("run_id={}", p.run_id));
        for e in std::fs::read_dir(&run).unwrap() {
            let name = e.unwrap().file_name().into_string().unwrap();
            if name != format!("target_crs={}", p.target_crs) {
                return (p.clone(), format!("run_id={}/{name}/", p.run_id));
            }
        }
    }
    panic!("no run with two partition directories");
}

#[tokio::test]
async fn a_since_seal_verify_reads_only_the_data_directories_changed_since_the_seals_clock() {
    let (tmp, store, first) = two_rounds().await;
    let root = tmp.path().join("lake");
    let key = keys::seal_key(2);
    let bytes = store.get(&key).await.unwrap().unwrap();
    let seal2 = lineage_store::internal::seal::Seal::from_bytes(&key, &bytes).unwrap();
    let clock = seal2.index_window.as_ref().unwrap().fs_clock().unwrap();
    // Every partition directory is older than the clock: none is read.
    let leaves: Vec<String> = data_dirs(&root)
        .into_iter()
        .filter(|d| d.contains("/target_crs="))
        .collect();
    assert!(leaves.len() >= 4, "{leaves:?}");
    assert!(leaves.iter().all(|d| ctime_ns(&root.join(d)) < clock));
    let r = since(store.as_ref(), 2, Duration::zero()).await;
    assert!(r.is_clean(), "{:#?}", r.problems);
    let area = r.data_area.clone().unwrap();
    assert_eq!(area.unchanged_dirs, leaves.len() as u64, "{area:?}");
    // RFC 3339 in nanoseconds, UTC.
    let t = area.unchanged_before_utc.unwrap();
    let frac = t.split('.').nth(1).unwrap_or_default();
    assert!(frac.len() == 10 && frac.ends_with('Z'), "{t}");

    // A part planted afterwards under a first-round commit's name, in another partition
    // directory of its run: that directory is read; the commit's own part lies in one
    // that is not, so its pointer is read to tell which is the commit's.
    let (real, other_dir) = commit_with_another_dir(&first, &root);
    let planted = format!("{other_dir}part-{}.parquet", real.commit_id);
    std::fs::copy(root.join(&real.part_path), root.join(&planted)).unwrap();
    let r = since(store.as_ref(), 2, Duration::zero()).await;
    let named: Vec<(&str, ProblemKind)> = r
        .problems
        .iter()
        .map(|p| (p.key.as_str(), p.kind))
        .collect();
    assert_eq!(named, [(planted.as_str(), ProblemKind::PlantedPart)]);
    assert!(
        r.problems[0].detail.contains(&real.part_path),
        "{:?}",
        r.problems
    );
    assert_eq!(
        r.data_area.unwrap().unchanged_dirs,
        leaves.len() as u64 - 1,
        "the planted file's directory is read"
    );
}

#[tokio::test]
async fn a_file_planted_inside_a_subdirectory_of_an_unchanged_directory_is_named() {
    let (tmp, store, first) = two_rounds().await;
    let root = tmp.path().join("lake");
    // A directory made inside a partition directory of the first round (a writer can):
    // the partition directory changes, and its link count, for good.
    let dir = root.join(format!(
        "run_id={}/target_crs={}",
        first[0].run_id, first[0].target_crs
    ));
    std::fs::create_dir(dir.join("sub")).unwrap();
    // Once seal 3's clock is past it, only that link count keeps the partition directory
    // from being left unread, and a file put in `sub` changes only `sub`.
    append(store.clone(), 20, 10, 5).await;
    fs_clock_past_the_data_area(&store, &root).await;
    lineage_store::seal(store.as_ref(), &lineage_store::SystemClock, None)
        .await
        .unwrap();
    let key = format!(
        "run_id={}/target_crs={}/sub/part-x.parquet",
        first[0].run_id, first[0].target_crs
    );
    let before = ctime_ns(&dir);
    std::fs::write(root.join(&key), b"planted").unwrap();
    assert_eq!(ctime_ns(&dir), before, "the parent did not change");
    let r = since(store.as_ref(), 3, Duration::zero()).await;
    assert_eq!(named(&r), [key.as_str()], "{:#?}", r.problems);
    assert_eq!(r.problems[0].kind, ProblemKind::ForeignObject);
}

#[tokio::test]
async fn a_file_planted_before_the_seals_clock_is_left_to_the_full_verify_and_said_so() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("lake");
    let store = Arc::new(PosixPublisher::new(&root));
    let first = append(store.clone(), 60, 10, 3).await;
    lineage_store::seal(store.as_ref(), &lineage_store::SystemClock, None)
        .await
        .unwrap();
    let (real, other_dir) = commit_with_another_dir(&first, &root);
    let planted = format!("{other_dir}part-{}.parquet", real.commit_id);
    std::fs::copy(root.join(&real.part_path), root.join(&planted)).unwrap();
    append(store.clone(), 20, 10, 4).await;
    fs_clock_past_the_data_area(&store, &root).await;
    lineage_store::seal(store.as_ref(), &lineage_store::SystemClock, None)
        .await
        .unwrap();
    // Planted before seal 2 read its clock: a full verify after seal 2 names it, and a
    // verify since seal 2 trusts that one (no grace: every directory is older).
    let full = crate::support::audit::verify_later(store.as_ref()).await;
    assert_eq!(named(&full), [planted.as_str()]);
    let r = since(store.as_ref(), 2, Duration::zero()).await;
    assert!(r.is_clean(), "{:#?}", r.problems);
    assert!(r.data_area.as_ref().unwrap().unchanged_dirs > 0);
    // With the default grace (15 minutes), directories changed in the 15 minutes before
    // the seal's clock are read: it is named.
    let r = since(store.as_ref(), 2, Duration::minutes(15)).await;
    assert_eq!(named(&r), [planted.as_str()]);
    assert_eq!(r.data_area.unwrap().unchanged_dirs, 0);
    // The CLI says what it did not read, and against which time.
    let s = root.to_str().unwrap();
    let o = lineage(
        &["verify", "--store", s, "--since-seal", "2", "--grace", "0s"],
        None,
    );
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    let line = out
        .lines()
        .find(|l| l.starts_with("data area: "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        line.contains("directories unchanged since then were not read")
            && line.contains("a full `verify` reads them"),
        "{line}"
    );
}
