//! Stores written before the history structures: a store made by main at 27ef7d0
//! (`tests/fixtures/`, see its README) verifies, logs and proves unchanged; the first seal
//! of the new format reads it whole once and adds the index-free history structures beside
//! it (tiles, locators, head marker), leaving every existing byte as it was; from then on
//! seals, proofs and `verify --since-seal` read only what is new. A seal an older version
//! makes after that (mixed versions) is taken as it is and the next seal reads everything
//! again.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use lineage_store::internal::encode::sha256_hex;
use lineage_store::internal::keys;
use lineage_store::internal::keys::seal_key;
use lineage_store::internal::keys::KeyKind;
use lineage_store::internal::merkle;
use lineage_store::internal::metered::MeteredPublisher;
use lineage_store::internal::seal::SEAL_FORMAT;
use lineage_store::prove;
use lineage_store::read_pointers;
use lineage_store::seal_with;
use lineage_store::verify_proof;
use lineage_store::verify_with;
use lineage_store::AtomicPublisher;
use lineage_store::PosixPublisher;
use lineage_store::ProveAgainst;
use lineage_store::Seal;
use lineage_store::SealEntry;
use lineage_store::SealOptions;
use lineage_store::SystemClock;
use lineage_store::VerifyOptions;

use crate::support::audit::{append, later, verify_later};

const FIXTURE: &str = "tests/fixtures/store-main-27ef7d0";

pub(super) fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

/// A fresh copy of the fixture.
fn fixture() -> (tempfile::TempDir, Arc<PosixPublisher>) {
    fixture_copy(FIXTURE)
}

/// A fresh copy of a fixture store (`tests/fixtures/…`) in a temporary directory.
pub(super) fn fixture_copy(fixture: &str) -> (tempfile::TempDir, Arc<PosixPublisher>) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    copy_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join(fixture), &root);
    (dir, Arc::new(PosixPublisher::new(root)))
}

/// Every object: key → sha256.
pub(super) async fn snapshot(s: &dyn AtomicPublisher) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for o in s.list("").await.unwrap() {
        out.insert(
            o.key.clone(),
            sha256_hex(&s.get(&o.key).await.unwrap().unwrap()),
        );
    }
    out
}

#[tokio::test]
async fn a_store_written_by_main_verifies_logs_and_proves_unchanged() {
    let (_d, store) = fixture();
    let before = snapshot(store.as_ref()).await;
    assert!(before
        .keys()
        .all(|k| !matches!(keys::classify(k), KeyKind::History(_))));
    let r = verify_later(store.as_ref()).await;
    assert!(r.is_clean(), "{:#?}", r.problems);
    assert_eq!(
        (r.commits, r.seals, r.sealed_commits, r.unsealed_commits),
        (18, 2, 13, 5)
    );
    // Its pointers predate BLAKE3: every part is checked by the sha256 they record.
    assert_eq!(
        (
            r.parts_hashed,
            r.parts_sha256_checked,
            r.parts_blake3_checked
        ),
        (18, 18, 0)
    );
    assert_eq!(r.unfinished_seal, None);
    // --since-seal has no index to read from: it verifies the whole store.
    let s = verify_with(
        store.as_ref(),
        &VerifyOptions {
            since_seal: Some(None),
            ..later()
        },
    )
    .await
    .unwrap();
    assert!(s.is_clean(), "{:#?}", s.problems);
    assert_eq!(s.commits, 18);
    // log: commit-time order (the keyed commits' UUIDv8 ids are not time-ordered).
    let all = read_pointers(store.as_ref(), None).await.unwrap();
    assert_eq!(all.len(), 18);
    assert!(all
        .windows(2)
        .all(|w| (&w[0].committed_utc, &w[0].commit_id) <= (&w[1].committed_utc, &w[1].commit_id)));
    let since = lineage_store::since_seal(store.as_ref(), None, None)
        .await
        .unwrap();
    assert_eq!(since.len(), 5);
    let since1 = lineage_store::since_seal(store.as_ref(), Some(1), None)
        .await
        .unwrap();
    assert_eq!(
        since1.len(),
        8,
        "3 keyed commits sealed by seal 2, 5 not sealed"
    );
    // A proof from the whole chain, as before.
    let keyed = all.iter().find(|p| p.commit_key.is_some()).unwrap();
    let proof = prove(store.as_ref(), &keyed.commit_id, &ProveAgainst::Newest)
        .await
        .unwrap();
    assert!(verify_proof(&proof, &r.head.unwrap(), None, None)
        .unwrap()
        .is_ok());
    // Nothing was written by any of it.
    assert_eq!(snapshot(store.as_ref()).await, before);
}

#[tokio::test]
async fn the_first_new_seal_adds_the_history_beside_and_later_ones_read_only_the_new() {
    let (_d, store) = fixture();
    let before = snapshot(store.as_ref()).await;
    let first = seal_with(store.as_ref(), &SystemClock, None, &SealOptions::default())
        .await
        .unwrap();
    assert!(first.full_scan);
    assert_eq!((first.seq, first.added, first.tree_size), (3, 5, 18));
    // Every byte written before is as it was; what is new is history and seal 3.
    let after = snapshot(store.as_ref()).await;
    for (k, d) in &before {
        assert_eq!(after.get(k), Some(d), "{k} changed");
    }
    let added: Vec<&String> = after.keys().filter(|k| !before.contains_key(*k)).collect();
    let count = |p: &str| added.iter().filter(|k| k.starts_with(p)).count();
    assert_eq!(
        count(keys::LEAVES_PREFIX),
        18,
        "a locator per leaf, old ones too"
    );
    assert_eq!(count(keys::HEADS_PREFIX), 1);
    assert_eq!(count(keys::TILES_PREFIX), 1, "{added:?}");
    assert_eq!(
        count(keys::INDEX_PREFIX),
        0,
        "old commits get no index entry"
    );
    // The store's identity (this store predates it) and Delta versions 0..=3.
    assert_eq!(count(keys::IDENTITY_KEY), 1);
    assert_eq!(count(keys::DELTA_LOG_PREFIX), 4);
    // The tree in the C2SP layout: a tile and an entry bundle of 18.
    assert_eq!(count(keys::TLOG_TILES_PREFIX), 2);
    assert_eq!(added.len(), 18 + 1 + 1 + 1 + 1 + 4 + 2);
    let r = verify_later(store.as_ref()).await;
    assert!(r.is_clean(), "{:#?}", r.problems);
    assert_eq!((r.seals, r.unsealed_commits), (3, 0));

    // New commits: index entries; the next seal reads only them.
    let new = append(store.clone(), 40, 10, 77).await;
    let m = MeteredPublisher::new(store.clone(), None);
    let next = seal_with(&m, &SystemClock, None, &SealOptions::default())
        .await
        .unwrap();
    assert!(!next.full_scan);
    assert_eq!(next.added, new.len() as u64);
    // Create-only: the history the first seal wrote (tiles, locators, head marker) is
    // grown beside, never rewritten.
    let later_snapshot = snapshot(store.as_ref()).await;
    for (k, d) in &after {
        assert_eq!(later_snapshot.get(k), Some(d), "{k} changed");
    }
    let reads = m.snapshot();
    // The Delta version reads the store id, version N-1, the seal and each new pointer
    // again (and each new part's footer: ranged reads).
    assert!(
        reads.gets as usize <= 2 * new.len() + 4 + 3 + 2,
        "{reads:?}: the new pointers, the newest seal, a probe, a tile; for the Delta version the store id, the version before, the seal, the new pointers; the C2SP tile probe and entry bundle at the old edge"
    );
    // An old commit (sealed by a seal of the old format) is proven from the tiles.
    let old = read_pointers(store.as_ref(), None).await.unwrap()[0].clone();
    m.reset();
    let proof = prove(&m, &old.commit_id, &ProveAgainst::Newest)
        .await
        .unwrap();
    assert!(verify_proof(&proof, &next.head, None, None)
        .unwrap()
        .is_ok());
    assert!(m.snapshot().requests() <= 10, "{:?}", m.snapshot());
    let s = verify_with(
        store.as_ref(),
        &VerifyOptions {
            since_seal: Some(Some(3)),
            ..later()
        },
    )
    .await
    .unwrap();
    assert!(s.is_clean(), "{:#?}", s.problems);
    assert_eq!(s.commits, new.len() as u64);
    let n = new.len() as u64;
    assert_eq!((s.parts_blake3_checked, s.parts_sha256_checked), (n, 0));
    // Old and new pointers side by side: each part by its own pointer's fastest digest.
    let r = verify_later(store.as_ref()).await;
    assert!(r.is_clean(), "{:#?}", r.problems);
    assert_eq!((r.parts_sha256_checked, r.parts_blake3_checked), (18, n));
}

/// A seal as the version at 27ef7d0 makes it: every pointer not sealed yet, by commit id,
/// the root over every leaf, `lineage-seal/1`.
async fn seal_as_older_version(store: &dyn AtomicPublisher) -> String {
    let chain = lineage_store::internal::chain::walk(store, None)
        .await
        .unwrap();
    let (seq, prev) = chain.head().map(|(n, d)| (n, d.to_string())).unwrap();
    let mut new: Vec<(String, SealEntry)> = Vec::new();
    for o in store.list(keys::COMMITS_PREFIX).await.unwrap() {
        if let KeyKind::Pointer { commit_id, .. } = keys::classify(&o.key) {
            if !chain.by_key.contains_key(&o.key) {
                let b = store.get(&o.key).await.unwrap().unwrap();
                new.push((
                    commit_id,
                    SealEntry {
                        key: o.key.clone(),
                        sha256: sha256_hex(&b),
                        adopted: false,
                    },
                ));
            }
        }
    }
    new.sort_by(|a, b| (&a.0, &a.1.key).cmp(&(&b.0, &b.1.key)));
    let mut leaves = chain.leaf_hashes(chain.leaves.len());
    for (_, e) in &new {
        leaves.push(merkle::leaf_hash(&merkle::parse_hash(&e.sha256).unwrap()));
    }
    let s = Seal {
        format: SEAL_FORMAT.to_string(),
        seq: seq + 1,
        prev_sha256: Some(prev),
        tree_size: leaves.len() as u64,
        root: hex::encode(merkle::root_of_leaf_hashes(&leaves)),
        sealed_utc: lineage_store::internal::time::rfc3339(chrono::Utc::now()),
        tool_version: "lineage-store/0.1.0".into(),
        entries: new.into_iter().map(|(_, e)| e).collect(),
        frontier: None,
        watermark_utc: None,
        ahead: None,
        index_window: None,
        compactions: None,
        public_key: None,
        key_id: None,
        signature: None,
        checkpoint: None,
    };
    let bytes = s.to_bytes().unwrap();
    store
        .put_create(&seal_key(seq + 1), Bytes::from(bytes.clone()))
        .await
        .unwrap();
    sha256_hex(&bytes)
}

#[tokio::test]
async fn a_seal_by_an_older_version_after_new_ones_is_taken_as_it_is() {
    let (_d, store) = fixture();
    seal_with(store.as_ref(), &SystemClock, None, &SealOptions::default())
        .await
        .unwrap();
    let a = append(store.clone(), 30, 10, 5).await;
    let old_head = seal_as_older_version(store.as_ref()).await;
    // The older seal is valid; the new history just stops at seal 3's tree.
    let r = verify_later(store.as_ref()).await;
    assert!(r.is_clean(), "{:#?}", r.problems);
    assert_eq!(r.head.as_deref(), Some(old_head.as_str()));
    // The next seal reads everything again (the older seal recorded no watermark), then
    // seals nothing twice; after it, seals are incremental again.
    let b = append(store.clone(), 30, 10, 6).await;
    let next = seal_with(store.as_ref(), &SystemClock, None, &SealOptions::default())
        .await
        .unwrap();
    assert!(next.full_scan);
    assert_eq!(next.added, b.len() as u64);
    assert_eq!(next.tree_size, (18 + a.len() + b.len()) as u64);
    let c = append(store.clone(), 20, 10, 7).await;
    let last = seal_with(store.as_ref(), &SystemClock, None, &SealOptions::default())
        .await
        .unwrap();
    assert!(!last.full_scan);
    assert_eq!(last.added, c.len() as u64);
    let r = verify_later(store.as_ref()).await;
    assert!(r.is_clean(), "{:#?}", r.problems);
    assert_eq!(r.unsealed_commits, 0);
}
