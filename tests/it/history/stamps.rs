//! Directory stamps on local disk: a seal records the change stamp of each per-second
//! index directory of its window that it listed whole, and a later seal or `--since-seal`
//! reader does not read a directory whose stamp is unchanged. An entry that lands in such
//! a directory afterwards changes its stamp (also when the directory's times are set back)
//! and is found; one that lands while the seal is listing it leaves it unstamped, so the
//! next seal reads it again.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use chrono::Duration;
use lineage_store::internal::keys;
use lineage_store::{AtomicPublisher, PosixPublisher};

use super::burst::{burst, commit_at, newest_seal, seal_at, t0};

/// The per-second index directory of a commit at `secs` after t0.
fn second_dir(secs: i64) -> String {
    keys::index_dir(t0() + Duration::seconds(secs))
}

async fn commit_ids(store: &dyn AtomicPublisher) -> Vec<String> {
    let mut v: Vec<String> = lineage_store::since_seal(store, None, None)
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.commit_id)
        .collect();
    v.sort();
    v
}

#[tokio::test]
async fn the_seal_stamps_the_directories_it_listed_whole_and_a_late_entry_unstamps_one() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _, new) = burst(dir.path(), 300).await;
    let seal = newest_seal(store.as_ref()).await;
    let window = seal.index_window.as_ref().unwrap();
    // Every second of the burst that the window counts is stamped (they were last changed
    // before the seal listed them).
    let counted: Vec<&String> = window
        .counts
        .keys()
        .filter(|d| d.as_str() < second_dir(30).as_str())
        .collect();
    assert!(counted.len() >= 25, "{counted:?}");
    for d in &counted {
        assert!(
            window.stamps.contains_key(*d),
            "{d} not stamped: {:?}",
            window.stamps
        );
    }
    let d5 = second_dir(5);
    let before = std::fs::metadata(dir.path().join(&d5)).unwrap();
    // A writer 55 seconds behind lands an entry there; then the directory's times are set
    // back to what they were: its change time still moves.
    let late = commit_at(store.clone(), t0() + Duration::seconds(5), 1, 300).await;
    let times = rustix::fs::Timestamps {
        last_access: timespec(&before, false),
        last_modification: timespec(&before, true),
    };
    rustix::fs::utimensat(
        rustix::fs::CWD,
        dir.path().join(&d5),
        &times,
        rustix::fs::AtFlags::empty(),
    )
    .unwrap();
    let shown = commit_ids(store.as_ref()).await;
    for p in &late {
        assert!(
            shown.contains(&p.commit_id),
            "{} not shown: {shown:?}",
            p.commit_id
        );
    }
    assert_eq!(shown.len(), new + late.len());
    let at = t0() + Duration::seconds(60);
    assert_eq!(seal_at(store.as_ref(), at).await, (new + late.len()) as u64);
    assert_eq!(seal_at(store.as_ref(), at).await, 0);
}

/// A directory's access or modification time as it was.
fn timespec(m: &std::fs::Metadata, modified: bool) -> rustix::fs::Timespec {
    use std::os::unix::fs::MetadataExt;
    let (tv_sec, tv_nsec) = if modified {
        (m.mtime(), m.mtime_nsec())
    } else {
        (m.atime(), m.atime_nsec())
    };
    rustix::fs::Timespec { tv_sec, tv_nsec }
}

/// The path of the index entry of the newest commit at `secs` after t0 under `root`.
fn entry_path(root: &Path, secs: i64, commit_id: &str, run_id: &str) -> PathBuf {
    root.join(keys::index_key(
        t0() + Duration::seconds(secs),
        commit_id,
        run_id,
    ))
}

/// The race the stamps must survive: an entry lands in a directory after the seal read
/// it and before the seal reads its stamp. The seal records no stamp for it (its change
/// time is not before the clock read before the listing), so the next seal reads it and
/// seals the entry; a seal that recorded the stamp anyway would skip the directory
/// forever. Made deterministic with the listing hook: the entry is put back while the seal
/// lists the new commits' directory, after the one it lands in.
#[tokio::test]
async fn an_entry_landing_in_a_directory_after_the_seal_read_it_is_sealed_next_time() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _, new) = burst(dir.path(), 300).await;
    // Late commits at second 6 whose index entries are held back.
    let held = commit_at(store.clone(), t0() + Duration::seconds(6), 1, 400).await;
    let moves: Vec<(PathBuf, PathBuf)> = held
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let entry = entry_path(dir.path(), 6, &p.commit_id, &p.run_id);
            let aside = dir.path().join(format!("held-entry-{i}"));
            std::fs::rename(&entry, &aside).unwrap();
            (entry, aside)
        })
        .collect();
    // The newest seal stamped second 6 before: moving the entry out changed it, so the
    // seal below lists it (and finds its count as recorded).
    let new_dir = dir.path().join(second_dir(40).trim_end_matches('/'));
    let done = Arc::new(AtomicBool::new(false));
    let hooked = {
        let done = done.clone();
        PosixPublisher::new(dir.path()).with_list_hook(Arc::new(move |p: &Path| {
            // An entry of the new commits' directory (not the directory itself, which is
            // looked at before the directories in it are read).
            if p.parent() == Some(new_dir.as_path()) && !done.swap(true, Ordering::SeqCst) {
                for (entry, aside) in &moves {
                    std::fs::rename(aside, entry).unwrap();
                }
            }
        }))
    };
    let at = t0() + Duration::seconds(60);
    assert_eq!(seal_at(&hooked, at).await, new as u64);
    assert!(done.load(Ordering::SeqCst), "the hook never ran");
    let seal = newest_seal(store.as_ref()).await;
    let window = seal.index_window.as_ref().unwrap();
    assert!(window.counts.contains_key(&second_dir(6)));
    assert!(
        !window.stamps.contains_key(&second_dir(6)),
        "the directory changed while it was listed, yet its stamp was recorded"
    );
    assert!(
        window.stamps.contains_key(&second_dir(7)),
        "{:?}",
        window.stamps
    );
    // The next seal reads second 6 again and seals the held commit.
    let mut want: Vec<String> = held.iter().map(|p| p.commit_id.clone()).collect();
    want.sort();
    assert_eq!(commit_ids(store.as_ref()).await, want);
    assert_eq!(
        seal_at(store.as_ref(), at + Duration::seconds(1)).await,
        held.len() as u64
    );
    assert_eq!(seal_at(store.as_ref(), at + Duration::seconds(2)).await, 0);
}

/// A copy of a stamped store (other inodes, other change times: `cp -a` keeps a
/// directory's modification time, not its change time) reads every directory of the
/// window once, and shows what the original shows.
#[tokio::test]
async fn a_copied_store_reads_its_window_again() {
    let dir = tempfile::tempdir().unwrap();
    let (store, first, _) = burst(dir.path(), 600).await;
    let copy = tempfile::tempdir().unwrap();
    let status = std::process::Command::new("cp")
        .arg("-a")
        .arg(format!("{}/.", dir.path().display()))
        .arg(copy.path())
        .status()
        .unwrap();
    assert!(status.success());
    let names = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let hooked = {
        let names = names.clone();
        PosixPublisher::new(copy.path()).with_list_hook(Arc::new(move |p: &Path| {
            if p.to_string_lossy().contains("/_lineage/index/") {
                names.fetch_add(1, Ordering::SeqCst);
            }
        }))
    };
    assert_eq!(commit_ids(&hooked).await, commit_ids(store.as_ref()).await);
    let read = names.load(Ordering::SeqCst);
    assert!(
        read >= first.len() / 2,
        "{read} index names read of {}",
        first.len()
    );
}
