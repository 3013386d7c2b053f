//! Listing a local-disk store is not a snapshot: entries vanish between `read_dir` and
//! their `stat` while appends (a temp renamed into place) and `sweep` (a temp removed)
//! run. These tests make that window happen every time, through the publisher's listing
//! hook, instead of hoping a concurrent writer hits it (which is how `.ci/run` once failed:
//! `posix_verifies_clean_while_appends_run` with `NotFound` on a pointer temp).
//! They also fix what a file name that is not UTF-8 does: it is listed, escaped, and
//! reported by `verify` as foreign.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use lineage_store::internal::keys::classify;
use lineage_store::internal::keys::KeyKind;
use lineage_store::AtomicPublisher;
use lineage_store::PosixPublisher;
use lineage_store::ProblemKind;

use crate::support::audit::{append, of_kind, verify_later};

/// A temp file in the shape the POSIX publisher leaves while it publishes.
fn plant_temp(dir: &Path, name: &str) -> std::path::PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, b"half a part").unwrap();
    p
}

#[tokio::test]
async fn an_entry_removed_between_read_dir_and_stat_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let plain = PosixPublisher::new(dir.path());
    append(Arc::new(plain.clone()), 20, 1, 1).await;
    let listed_before = plain.list("").await.unwrap();

    // Temps of an in-flight publish, one beside a pointer and one beside a part.
    let ptr_dir = first_entry(&dir.path().join("_lineage/commits"), "run_id=");
    let part_dir = first_entry(&first_entry(dir.path(), "run_id="), "target_crs=");
    let temps = [
        plant_temp(
            &ptr_dir,
            ".0190f0e0-0000-7000-8000-000000000001.json.0123456789ab.tmp",
        ),
        plant_temp(
            &part_dir,
            ".part-0190f0e0-0000-7000-8000-000000000002.parquet.0123456789ab.tmp",
        ),
    ];

    // The hook removes each temp right after read_dir returned its entry: exactly what a
    // rename-into-place or a sweep does between the two steps.
    let vanished = Arc::new(AtomicUsize::new(0));
    let v = vanished.clone();
    let hooked = plain.with_list_hook(Arc::new(move |p: &Path| {
        let is_temp = p
            .file_name()
            .is_some_and(|n| n.to_string_lossy().ends_with(".tmp"));
        if is_temp && std::fs::remove_file(p).is_ok() {
            v.fetch_add(1, Ordering::SeqCst);
        }
    }));
    let listed = hooked.list("").await.unwrap();
    assert_eq!(
        vanished.load(Ordering::SeqCst),
        2,
        "the hook removed both temps"
    );
    assert_eq!(
        keys_of(&listed),
        keys_of(&listed_before),
        "the listing is what it would have been a moment later"
    );
    for t in &temps {
        assert!(!t.exists());
    }

    // Everything that lists goes through the same walk: verify is clean, not an I/O error.
    let r = verify_later(&hooked).await;
    assert!(r.is_clean(), "{:#?}", r.problems);
    // Three objects a commit: part, pointer, index entry.
    assert_eq!(r.commits, listed_before.len() as u64 / 3);
}

#[tokio::test]
async fn a_directory_removed_between_read_dir_and_its_walk_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let plain = PosixPublisher::new(dir.path());
    append(Arc::new(plain.clone()), 10, 1, 1).await;
    let before = keys_of(&plain.list("").await.unwrap());
    let extra = dir.path().join("run_id=gone");
    plant_temp(&extra.join("target_crs=EPSG:4326"), ".x.tmp");
    let hooked = plain.with_list_hook(Arc::new(|p: &Path| {
        if p.ends_with("run_id=gone") {
            std::fs::remove_dir_all(p).unwrap();
        }
    }));
    let listed = hooked.list("").await.unwrap();
    assert_eq!(keys_of(&listed), before);
}

#[tokio::test]
async fn a_temp_renamed_into_place_during_the_listing_leaves_the_listing_whole() {
    // The other half of the race: the temp becomes the object. The listing may or may not
    // include the new name (read_dir gives no snapshot), but it never fails, and a verify
    // that follows sees a consistent store.
    let dir = tempfile::tempdir().unwrap();
    let plain = PosixPublisher::new(dir.path());
    append(Arc::new(plain.clone()), 10, 1, 1).await;
    let target = first_entry(&dir.path().join("_lineage/commits"), "run_id=");
    let pointer = first_entry(&target, "");
    // Move a pointer aside as a temp, and let the hook publish it back mid-listing.
    let name = pointer.file_name().unwrap().to_string_lossy().into_owned();
    let temp = target.join(format!(".{name}.0123456789ab.tmp"));
    std::fs::rename(&pointer, &temp).unwrap();
    let (t, p) = (temp.clone(), pointer.clone());
    let hooked = plain.with_list_hook(Arc::new(move |seen: &Path| {
        if seen == t {
            std::fs::rename(&t, &p).unwrap();
        }
    }));
    let listed = hooked.list("").await.unwrap();
    assert!(!keys_of(&listed).iter().any(|k| k.ends_with(".tmp")));
    assert!(pointer.exists());
    let r = verify_later(&hooked).await;
    assert!(r.is_clean(), "{:#?}", r.problems);
}

#[tokio::test]
async fn a_name_that_is_not_utf8_is_listed_escaped_and_reported_as_foreign() {
    let dir = tempfile::tempdir().unwrap();
    let store = PosixPublisher::new(dir.path());
    append(Arc::new(store.clone()), 10, 1, 1).await;
    // A planted file whose name is not UTF-8, in a partition, and a directory whose
    // run_id is not UTF-8 holding a well-formed-looking part.
    let part_dir = first_entry(&first_entry(dir.path(), "run_id="), "target_crs=");
    let part_rel = part_dir.strip_prefix(dir.path()).unwrap().to_str().unwrap();
    std::fs::write(
        part_dir.join(OsStr::from_bytes(b"part-\xff\xfe.parquet")),
        b"x",
    )
    .unwrap();
    let bad_run = dir
        .path()
        .join(OsStr::from_bytes(b"run_id=r\xe9sum\xe9"))
        .join("target_crs=EPSG:4326");
    std::fs::create_dir_all(&bad_run).unwrap();
    std::fs::write(
        bad_run.join("part-0190f0e0-0000-7000-8000-000000000003.parquet"),
        b"y",
    )
    .unwrap();

    let listed = keys_of(&store.list("").await.unwrap());
    let escaped = [
        format!("{part_rel}/part-%FF%FE.parquet"),
        "run_id=r%E9sum%E9/target_crs=EPSG:4326/part-0190f0e0-0000-7000-8000-000000000003.parquet"
            .to_string(),
    ];
    for k in &escaped {
        assert!(listed.contains(k), "{k} not in {listed:#?}");
        assert_eq!(classify(k), KeyKind::Foreign, "{k}");
    }
    let r = verify_later(&store).await;
    let foreign: Vec<String> = of_kind(&r, ProblemKind::ForeignObject)
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    let mut want = escaped.to_vec();
    want.sort();
    assert_eq!(foreign, want, "{:#?}", r.problems);
    assert_eq!(r.problems.len(), 2, "{:#?}", r.problems);
}

/// The first entry of `dir` (sorted) whose name starts with `prefix`.
fn first_entry(dir: &Path, prefix: &str) -> std::path::PathBuf {
    let mut all: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
        .collect();
    all.sort();
    all.into_iter().next().unwrap()
}

fn keys_of(l: &[lineage_store::ObjectInfo]) -> Vec<String> {
    let mut k: Vec<String> = l.iter().map(|o| o.key.clone()).collect();
    k.sort();
    k
}

/// `list_after` on local disk judges entries by name: in a directory of 2,000 index-like
/// files and 20 subdirectories, a page after a bound near the end looks at (asks the type
/// of, and stats) only the entries that can be in the page, not the ones it skips
/// (issue 23: `log --since-seal` made one `statx` per entry of the day's directory).
#[tokio::test]
async fn list_after_examines_only_what_can_be_in_the_page() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("_lineage/index/2026-07-13");
    std::fs::create_dir_all(&big).unwrap();
    for i in 0..2000 {
        std::fs::write(big.join(format!("T{i:06}")), b"").unwrap();
    }
    for i in 0..20 {
        let sub = big.join(format!("S{i:02}"));
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(sub.join("x"), b"").unwrap();
    }
    let examined = Arc::new(AtomicUsize::new(0));
    let e = examined.clone();
    let store = PosixPublisher::new(dir.path()).with_list_hook(Arc::new(move |_: &Path| {
        e.fetch_add(1, Ordering::SeqCst);
    }));
    let page = store
        .list_after("_lineage/index/", "_lineage/index/2026-07-13/T001995", 1000)
        .await
        .unwrap();
    let keys: Vec<&str> = page.iter().map(|o| o.key.as_str()).collect();
    assert_eq!(
        keys,
        [1996, 1997, 1998, 1999]
            .iter()
            .map(|i| format!("_lineage/index/2026-07-13/T{i:06}"))
            .collect::<Vec<_>>()
    );
    // The day directory, `T001995` (a directory of that name would hold keys after the
    // bound: its type is asked) and the four files after the bound; the 1,995 files
    // before it and the subdirectories `S..` are skipped by name.
    assert_eq!(examined.load(Ordering::SeqCst), 6, "{keys:?}");
    // A bound before the subdirectories: they are walked, in key order.
    examined.store(0, Ordering::SeqCst);
    let page = store
        .list_after("_lineage/index/", "_lineage/index/2026-07-13/S18", 3)
        .await
        .unwrap();
    let keys: Vec<&str> = page.iter().map(|o| o.key.as_str()).collect();
    assert_eq!(
        keys,
        [
            "_lineage/index/2026-07-13/S18/x",
            "_lineage/index/2026-07-13/S19/x",
            "_lineage/index/2026-07-13/T000000"
        ]
    );
}

/// A store directory with `n` Delta versions (the first keys of a store in byte order), a
/// part, and optionally the store's identity.
fn wide_store(n: usize, identity: bool) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("_delta_log");
    std::fs::create_dir_all(&log).unwrap();
    for v in 0..n {
        std::fs::write(log.join(format!("{v:020}.json")), b"{}\n").unwrap();
    }
    let part = dir.path().join("run_id=r/target_crs=EPSG:4326");
    std::fs::create_dir_all(&part).unwrap();
    std::fs::write(part.join("part-x.parquet"), b"x").unwrap();
    if identity {
        std::fs::create_dir_all(dir.path().join("_lineage")).unwrap();
        std::fs::write(dir.path().join("_lineage/store.json"), b"{}").unwrap();
    }
    dir
}

#[tokio::test]
async fn a_listing_reads_the_metadata_of_what_it_returns_not_of_every_entry_it_sorts() {
    // Issue 23: `log --since-seal` on a 10^6-commit store stat'ed every Delta version (1,007)
    // to return one key; the directory's own type of each entry (d_type) is enough to sort.
    let dir = wide_store(500, false);
    let p = PosixPublisher::new(dir.path());
    let first = p.list_after("", "", 1).await.unwrap();
    assert_eq!(keys_of(&first), ["_delta_log/00000000000000000000.json"]);
    assert!(
        p.metadata_reads() <= 1,
        "{} entries stat'ed for one key",
        p.metadata_reads()
    );
    let before = p.metadata_reads();
    let page = p
        .list_after("_delta_log/", "_delta_log/00000000000000000249.json", 10)
        .await
        .unwrap();
    assert_eq!(page.len(), 10);
    assert_eq!(page[0].key, "_delta_log/00000000000000000250.json");
    assert_eq!(page[0].size, 3, "the objects returned carry their metadata");
    assert!(
        p.metadata_reads() - before <= 10,
        "{}",
        p.metadata_reads() - before
    );
    // The whole listing still reads each object's metadata once.
    let before = p.metadata_reads();
    assert_eq!(p.list("").await.unwrap().len(), 501);
    assert_eq!(p.metadata_reads() - before, 501);
}

#[tokio::test]
async fn a_names_only_listing_reads_no_files_metadata_and_a_prefix_walk_skips_other_trees() {
    let dir = wide_store(500, false);
    let p = PosixPublisher::new(dir.path());
    let before = p.metadata_reads();
    let names = p.list_names("_delta_log/").await.unwrap();
    assert_eq!(names.len(), 500);
    assert_eq!(p.metadata_reads() - before, 0, "a stat per name");
    let page = p
        .list_after_sized_from(
            "_delta_log/",
            "_delta_log/00000000000000000249.json",
            10,
            "_delta_log/00000000000000000258.json",
        )
        .await
        .unwrap();
    assert_eq!(page[0].key, "_delta_log/00000000000000000250.json");
    assert_eq!(page.len(), 10);
    assert_eq!((page[7].size, page[8].size), (0, 3), "{page:?}");
    assert_eq!(
        p.metadata_reads() - before,
        2,
        "a stat per key before the bound"
    );
    // A prefix of the root (`run_id=`) does not walk `_delta_log/`: nothing in it is read.
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let hook = seen.clone();
    let p = PosixPublisher::new(dir.path()).with_list_hook(Arc::new(move |path: &Path| {
        hook.lock().unwrap().push(path.to_path_buf());
    }));
    let listed = p.list("run_id=").await.unwrap();
    assert_eq!(
        keys_of(&listed),
        ["run_id=r/target_crs=EPSG:4326/part-x.parquet"]
    );
    let seen = seen.lock().unwrap();
    let log = dir.path().join("_delta_log");
    assert!(
        seen.iter().all(|path| path.parent() != Some(log.as_path())),
        "{} entries of _delta_log/ read",
        seen.iter()
            .filter(|p| p.parent() == Some(log.as_path()))
            .count()
    );
}

#[tokio::test]
async fn a_command_finds_a_store_by_its_identity_without_listing_it() {
    // Every command but `append` refuses a store with no objects; a store with its
    // identity is known by one read, and its listing (O(seals) on local disk) is not made.
    let dir = wide_store(500, true);
    let p = PosixPublisher::new(dir.path());
    lineage_store::internal::require_objects(&p).await.unwrap();
    assert_eq!(p.metadata_reads(), 0);
    // An older store without an identity: one key listed.
    let old = wide_store(3, false);
    let p = PosixPublisher::new(old.path());
    lineage_store::internal::require_objects(&p).await.unwrap();
    assert_eq!(p.metadata_reads(), 1);
    // An empty one is refused.
    let empty = tempfile::tempdir().unwrap();
    let e = lineage_store::internal::require_objects(&PosixPublisher::new(empty.path()))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("the store holds no objects"), "{e}");
}
