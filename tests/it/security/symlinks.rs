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
pub(crate) async fn local_store() -> (tempfile::TempDir, PathBuf, Vec<Pointer>) {
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
pub(crate) fn copy_tree(from: &Path, to: &Path) {
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
