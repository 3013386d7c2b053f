//! `list_pages` past one 1,000-key page on a listing in directory order (the way
//! SeaweedFS lists an unversioned bucket: `DisorderlyPublisher` without the scramble, so
//! each page on its own can pass the order check), over real files on local disk: the
//! next page is asked from the last key of a full page, a short page ends the listing,
//! and a key the directory order put out of place shows up on a later page as disorder,
//! which makes the range be read whole instead. The result is always the byte-ordered
//! answer of the plain store (issue 23, Deliver 3).

use std::path::Path;
use std::sync::Arc;

use lineage_store::internal::disorderly::{DisorderlyPublisher, Quirks};
use lineage_store::internal::list_pages;
use lineage_store::{AtomicPublisher, PosixPublisher};

use crate::support::listings::{Listed, Recorder};

/// Directory order and a `start-after` that skips subtrees, pages not scrambled.
const DIRECTORY_ORDER: Quirks = Quirks {
    directory_order: true,
    skip_subtrees: true,
    shuffle: false,
};

/// Empty files `<dir>/k0000` … under `root`.
fn files(root: &Path, dir: &str, n: usize) -> Vec<String> {
    std::fs::create_dir_all(root.join(dir)).unwrap();
    (0..n)
        .map(|i| {
            let key = format!("{dir}/k{i:04}");
            std::fs::write(root.join(&key), b"").unwrap();
            key
        })
        .collect()
}

/// The plain store, and the same store listed in directory order through a recorder.
fn stores(root: &Path) -> (Arc<PosixPublisher>, Recorder) {
    let plain = Arc::new(PosixPublisher::new(root));
    let quirky = Recorder::new(Arc::new(DisorderlyPublisher::new(
        plain.clone(),
        DIRECTORY_ORDER,
    )));
    (plain, quirky)
}

async fn keys(store: &dyn AtomicPublisher, prefix: &str, before: Option<&str>) -> Vec<String> {
    list_pages(store, prefix, "", before)
        .await
        .unwrap()
        .into_iter()
        .map(|o| o.key)
        .collect()
}

fn after(prefix: &str, after: &str, got: usize) -> Listed {
    Listed::After {
        prefix: prefix.into(),
        after: after.into(),
        got,
    }
}

#[tokio::test]
async fn full_pages_are_followed_from_their_last_key_and_a_short_page_ends_the_listing() {
    let dir = tempfile::tempdir().unwrap();
    let mut want = files(dir.path(), "run_id=a", 2500);
    let exact = files(dir.path(), "run_id=b", 2000);
    let (plain, quirky) = stores(dir.path());

    // 2,500 keys: two full pages, each continued from its last key, then a short one.
    assert_eq!(keys(&quirky, "run_id=a/", None).await, want);
    assert_eq!(
        quirky.take(),
        [
            after("run_id=a/", "", 1000),
            after("run_id=a/", "run_id=a/k0999", 1000),
            after("run_id=a/", "run_id=a/k1999", 500),
        ]
    );
    // Exactly two pages: the second is full, so a third (empty) one is asked for.
    assert_eq!(keys(&quirky, "run_id=b/", None).await, exact);
    assert_eq!(
        quirky.take(),
        [
            after("run_id=b/", "", 1000),
            after("run_id=b/", "run_id=b/k0999", 1000),
            after("run_id=b/", "run_id=b/k1999", 0),
        ]
    );
    // A bound on the second page: no third page.
    assert_eq!(
        keys(&quirky, "run_id=a/", Some("run_id=a/k1500")).await,
        want[..1500]
    );
    assert_eq!(quirky.take().len(), 2);
    // Both directories: the same answer as the plain store, paged throughout.
    want.extend(exact);
    assert_eq!(keys(&quirky, "run_id=", None).await, want);
    assert_eq!(keys(plain.as_ref(), "run_id=", None).await, want);
    let listed = quirky.take();
    assert_eq!(listed.len(), 5, "{listed:?}");
    assert!(listed.iter().all(|l| matches!(l, Listed::After { .. })));
}

#[tokio::test]
async fn a_key_directory_order_put_after_a_full_page_makes_the_range_be_read_whole() {
    // `run_id=a-b/…` sorts before `run_id=a/…` in bytes, after it directory by directory.
    for (in_a, page_two) in [
        // The second page holds the rest of `run_id=a/`, then `run_id=a-b/`.
        (1500, 510),
        // The first page ends with the last key of `run_id=a/`: the second page starts
        // with `run_id=a-b/`, before the offset.
        (1000, 10),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let a = files(dir.path(), "run_id=a", in_a);
        let ab = files(dir.path(), "run_id=a-b", 10);
        let (plain, quirky) = stores(dir.path());
        let want: Vec<String> = ab.iter().chain(&a).cloned().collect();
        assert_eq!(keys(plain.as_ref(), "run_id=", None).await, want);

        assert_eq!(keys(&quirky, "run_id=", None).await, want, "{in_a}");
        // The first page (1,000 keys of `run_id=a/`) passed the check; the second broke
        // it, and the range was read from a plain listing.
        assert_eq!(
            quirky.take(),
            [
                after("run_id=", "", 1000),
                after("run_id=", "run_id=a/k0999", page_two),
                Listed::Whole("run_id=".into()),
            ],
            "{in_a}"
        );
    }
}
