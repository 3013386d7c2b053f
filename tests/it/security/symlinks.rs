//! Symlinks inside a local store: `verify` names each (`symlink`, with its target), and no
//! command reads, writes or deletes through one.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use lineage_store::internal::keys;
use lineage_store::AtomicPublisher;
use lineage_store::Pointer;
use lineage_store::PosixPublisher;
use lineage_store::ProblemKind as K;

use crate::support::audit::{append, of_kind, verify_later};

/// A local store of a few commits (verified clean), and a directory outside it.
pub async fn local_store() -> (tempfile::TempDir, PathBuf, Vec<Pointer>) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("lake");
    let store = Arc::new(PosixPublisher::new(&root));
    let ptrs = append(store.clone(), 60, 20, 3).await;
    let r = verify_later(store.as_ref()).await;
    assert!(r.is_clean(), "{:#?}", r.problems);
    std::fs::create_dir(tmp.path().join("outside")).unwrap();
    (tmp, root, ptrs)
}

/// Copy a directory tree (files only).
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let t = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &t);
        } else {
            std::fs::copy(e.path(), t).unwrap();
        }
    }
}

#[tokio::test]
async fn a_part_replaced_by_a_symlink_is_named_and_never_read_through() {
    let (tmp, root, ptrs) = local_store().await;
    let part = &ptrs[0].part_path;
    // The forged part: here a copy of the genuine one, so that only the link is wrong.
    let forged = tmp.path().join("outside/forged.parquet");
    std::fs::rename(root.join(part), &forged).unwrap();
    symlink(&forged, root.join(part)).unwrap();

    let store = PosixPublisher::new(&root);
    let r = verify_later(&store).await;
    let links = of_kind(&r, K::Symlink);
    assert_eq!(links.len(), 1, "{:#?}", r.problems);
    assert_eq!(&links[0].0, part);
    assert!(
        links[0].1.contains(&forged.display().to_string()),
        "{}",
        links[0].1
    );
    assert!(!r.is_clean());
    assert!(
        of_kind(&r, K::MissingPart).iter().any(|(k, _)| k == part),
        "{:#?}",
        r.problems
    );

    // Never followed: every read refuses, naming the link and its target.
    let e = store.get(part).await.unwrap_err().to_string();
    assert!(
        e.contains("refusing to follow the symlink") && e.contains("forged.parquet"),
        "{e}"
    );
    let e = store.get_range(part, 0..4).await.unwrap_err().to_string();
    assert!(e.contains("refusing to follow the symlink"), "{e}");
}

#[tokio::test]
async fn a_symlinked_partition_directory_is_named_not_walked() {
    let (tmp, root, ptrs) = local_store().await;
    // A decoy partition of forged parts outside the store, linked in as a new run's.
    let dir = Path::new(&ptrs[0].part_path)
        .parent()
        .unwrap()
        .to_path_buf();
    let decoy = tmp.path().join("outside/decoy");
    copy_tree(&root.join(&dir), &decoy);
    std::fs::create_dir_all(root.join("run_id=evil")).unwrap();
    symlink(&decoy, root.join("run_id=evil/target_crs=EPSG:4326")).unwrap();

    let r = verify_later(&PosixPublisher::new(&root)).await;
    let links = of_kind(&r, K::Symlink);
    assert_eq!(
        links.iter().map(|l| l.0.as_str()).collect::<Vec<_>>(),
        ["run_id=evil/target_crs=EPSG:4326"],
        "{:#?}",
        r.problems
    );
    assert!(links[0].1.contains("outside/decoy"), "{}", links[0].1);
    // Nothing under the link was listed (it would be a malformed or foreign part).
    assert!(
        r.problems
            .iter()
            .all(|p| !p.key.starts_with("run_id=evil/target_crs=EPSG:4326/")),
        "{:#?}",
        r.problems
    );
}

#[tokio::test]
async fn a_symlinked_pointer_directory_cannot_hide_a_run() {
    let (tmp, root, ptrs) = local_store().await;
    let run = &ptrs[0].run_id;
    let pdir = format!("_lineage/commits/run_id={run}");
    // A copy of the run's pointers with one edited (wrong digests, rows), linked in place.
    let copy = tmp.path().join("outside/pointers");
    copy_tree(&root.join(&pdir), &copy);
    let pk = keys::pointer_key(run, &ptrs[0].commit_id);
    let name = Path::new(&pk).file_name().unwrap();
    let mut p: serde_json::Value =
        serde_json::from_slice(&std::fs::read(copy.join(name)).unwrap()).unwrap();
    p["sha256"] = serde_json::json!("0".repeat(64));
    p["row_count"] = serde_json::json!(999);
    std::fs::write(copy.join(name), serde_json::to_vec(&p).unwrap()).unwrap();
    std::fs::remove_dir_all(root.join(&pdir)).unwrap();
    symlink(&copy, root.join(&pdir)).unwrap();

    let store = PosixPublisher::new(&root);
    let r = verify_later(&store).await;
    assert!(!r.is_clean());
    let links = of_kind(&r, K::Symlink);
    assert_eq!(links.len(), 1, "{:#?}", r.problems);
    assert_eq!(links[0].0, pdir);
    // And every commit of the run is unaccounted for: its index entries name pointers
    // that are not in the store.
    let bad = of_kind(&r, K::BadIndexEntry);
    assert_eq!(
        bad.len(),
        ptrs.iter().filter(|p| &p.run_id == run).count(),
        "{:#?}",
        r.problems
    );
    // The pointer is never read through the link: nothing of the store is under it.
    assert!(store.get(&pk).await.unwrap().is_none());
}

/// Every file under `dir`, relative.
pub fn files_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else {
                out.push(e.path().strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

#[tokio::test]
async fn no_publish_writes_through_a_symlinked_directory() {
    let (tmp, root, ptrs) = local_store().await;
    let outside = tmp.path().join("outside");
    let run = &ptrs[0].run_id;
    // Each directory a publish goes through, swapped for a link to the outside.
    for (dir, key) in [
        (
            "run_id=x/target_crs=EPSG:4326".to_string(),
            "run_id=x/target_crs=EPSG:4326/part-01a234d7-5435-7313-b465-2822b322f0a8.parquet"
                .to_string(),
        ),
        (
            format!("_lineage/commits/run_id={run}"),
            keys::pointer_key(run, "01a234d7-5435-7313-b465-2822b322f0a8"),
        ),
        ("_lineage/seals".to_string(), keys::seal_key(99)),
    ] {
        let was = root.join(&dir);
        if was.exists() {
            std::fs::rename(&was, tmp.path().join("moved")).unwrap();
        }
        std::fs::create_dir_all(was.parent().unwrap()).unwrap();
        symlink(&outside, &was).unwrap();
        let e = PosixPublisher::new(&root)
            .put_create(&key, bytes::Bytes::from_static(b"{}"))
            .await
            .unwrap_err();
        assert!(
            matches!(e, lineage_store::Error::Symlink { .. }),
            "{key}: {e}"
        );
        assert_eq!(e.kind(), lineage_store::ErrorKind::Conflict);
        assert!(e.to_string().contains(&dir), "{e}");
        // Nothing was created where the link points, not even a temp.
        assert_eq!(files_under(&outside), Vec::<String>::new(), "{key}");
        std::fs::remove_file(&was).unwrap();
        if tmp.path().join("moved").exists() {
            std::fs::rename(tmp.path().join("moved"), &was).unwrap();
        }
    }
}

#[test]
fn append_seal_and_replicate_refuse_a_symlinked_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = tmp.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    let lake = tmp.path().join("lake");
    let input = crate::support::ndjson("x", 4, "t");
    let append = |store: &Path| {
        crate::support::lineage(
            &["append", "--store", store.to_str().unwrap(), "--input", "-"],
            Some(input.as_bytes()),
        )
    };
    // A partition directory planted as a link: the part is never written into it.
    std::fs::create_dir_all(lake.join("run_id=x")).unwrap();
    symlink(&outside, lake.join("run_id=x/target_crs=EPSG:4326")).unwrap();
    let o = append(&lake);
    let (_, err) = crate::support::text(&o);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(
        err.contains("refusing to follow the symlink")
            && err.contains("run_id=x/target_crs=EPSG:4326"),
        "{err}"
    );
    assert_eq!(files_under(&outside), Vec::<String>::new());
    std::fs::remove_file(lake.join("run_id=x/target_crs=EPSG:4326")).unwrap();

    // `_lineage` a link: no pointer, identity, index or seal lands where it points.
    let lake = tmp.path().join("lake2");
    std::fs::create_dir(&lake).unwrap();
    symlink(&outside, lake.join("_lineage")).unwrap();
    let o = append(&lake);
    assert_eq!(o.status.code(), Some(3), "{}", crate::support::text(&o).1);
    let o = crate::support::lineage(
        &[
            "seal",
            "--store",
            lake.to_str().unwrap(),
            "--unsigned",
            "--allow-empty",
        ],
        None,
    );
    assert_ne!(o.status.code(), Some(0), "{}", crate::support::text(&o).1);
    assert_eq!(files_under(&outside), Vec::<String>::new());
    std::fs::remove_file(lake.join("_lineage")).unwrap();

    // A replica whose partition directory is a link: replicate refuses, writes nothing there.
    let src = tmp.path().join("src");
    let o = append(&src);
    assert_eq!(o.status.code(), Some(0), "{}", crate::support::text(&o).1);
    let dst = tmp.path().join("dst");
    std::fs::create_dir_all(dst.join("run_id=x")).unwrap();
    symlink(&outside, dst.join("run_id=x/target_crs=EPSG:4326")).unwrap();
    let o = crate::support::lineage(
        &[
            "replicate",
            "--from",
            src.to_str().unwrap(),
            "--to",
            dst.to_str().unwrap(),
        ],
        None,
    );
    let (_, err) = crate::support::text(&o);
    assert_ne!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("refusing to follow the symlink"), "{err}");
    assert_eq!(files_under(&outside), Vec::<String>::new());
}

#[tokio::test]
async fn sweep_never_deletes_through_a_directory_swapped_for_a_symlink_after_its_listing() {
    let (tmp, root, ptrs) = local_store().await;
    let dir = Path::new(&ptrs[0].part_path)
        .parent()
        .unwrap()
        .to_path_buf();
    // A stale temp in the partition, and a file of the same name outside.
    let name = ".part-x.parquet.01a234d7d1f871bf905b92fa03a6ffe4.tmp";
    std::fs::write(root.join(&dir).join(name), b"stale").unwrap();
    let outside = tmp.path().join("outside");
    std::fs::write(outside.join(name), b"not the store's").unwrap();
    // Between the listing and the unlink, the partition becomes a link to the outside.
    let (from, moved) = (root.join(&dir), tmp.path().join("moved"));
    let link_to = outside.clone();
    let swapped = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let once = swapped.clone();
    let store = PosixPublisher::new(&root).with_delete_hook(Arc::new(move |_| {
        if !once.swap(true, std::sync::atomic::Ordering::SeqCst) {
            std::fs::rename(&from, &moved).unwrap();
            symlink(&link_to, &from).unwrap();
        }
    }));
    let out = lineage_store::sweep_all(&store, false).await.unwrap();
    assert!(swapped.load(std::sync::atomic::Ordering::SeqCst));
    assert_eq!(out.removed, Vec::<String>::new());
    assert_eq!(out.refused.len(), 1, "{:?}", out.refused);
    assert!(
        out.refused[0].contains("refusing to follow the symlink"),
        "{:?}",
        out.refused
    );
    assert_eq!(
        std::fs::read(outside.join(name)).unwrap(),
        b"not the store's"
    );
    // The temp is still where it was (in the moved directory).
    assert!(tmp.path().join("moved").join(name).exists());
}
