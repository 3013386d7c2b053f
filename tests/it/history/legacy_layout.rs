//! A store written by main at cd44522 (`tests/fixtures/store-main-cd44522`, see its
//! README), before issue 23 bounded the history's directories: its index entries, head
//! markers and leaf locators are in their first layout (`keys::Layout::V1`). It verifies,
//! logs and proves unchanged; the next seal is incremental (its seals are of the current
//! format), finds the older layout's unsealed index entries, and writes the new layout
//! beside it; proofs of commits in either layout; shards and `--since-seal` agree.

use std::collections::BTreeMap;
use std::sync::Arc;

use lineage_store::internal::keys::{self, HistoryKey, KeyKind, Layout};
use lineage_store::internal::shard::merge;
use lineage_store::{
    prove, read_pointers, seal, since_seal, verify_proof, verify_with, PosixPublisher,
    ProveAgainst, ShardSpec, SystemClock, VerifyOptions,
};

use super::legacy::{fixture_copy, snapshot};
use crate::support::audit::{append, later, verify_later};

const FIXTURE: &str = "tests/fixtures/store-main-cd44522";

fn fixture() -> (tempfile::TempDir, Arc<PosixPublisher>) {
    fixture_copy(FIXTURE)
}

/// The history keys of a listing, by layout: (V1, V2) counts of (index, heads, locators).
fn layouts(keys: &BTreeMap<String, String>) -> [(usize, usize); 3] {
    let mut c = [(0, 0); 3];
    for k in keys.keys() {
        let (slot, v1) = match keys::classify(k) {
            KeyKind::History(HistoryKey::Index {
                committed,
                ref commit_id,
                ref run_id,
            }) => (
                0,
                *k == keys::index_key_in(Layout::V1, committed, commit_id, run_id),
            ),
            KeyKind::History(HistoryKey::Head(seq)) => {
                (1, *k == keys::head_key_in(Layout::V1, seq))
            }
            KeyKind::History(HistoryKey::Leaf {
                ref commit_id,
                leaf_index,
                ref run_id,
            }) => (
                2,
                *k == keys::leaf_key_in(Layout::V1, commit_id, leaf_index, run_id),
            ),
            _ => continue,
        };
        if v1 {
            c[slot].0 += 1;
        } else {
            c[slot].1 += 1;
        }
    }
    c
}

#[tokio::test]
async fn a_store_of_the_first_layout_verifies_logs_and_proves_unchanged() {
    let (_d, store) = fixture();
    let before = snapshot(store.as_ref()).await;
    assert_eq!(layouts(&before), [(18, 0), (2, 0), (13, 0)]);
    let r = verify_later(store.as_ref()).await;
    assert!(r.is_clean(), "{:#?}", r.problems);
    assert_eq!(
        (
            r.commits,
            r.seals,
            r.sealed_commits,
            r.unsealed_commits,
            r.unfinished_seal
        ),
        (18, 2, 13, 5, None)
    );
    let since = verify_with(
        store.as_ref(),
        &VerifyOptions {
            since_seal: Some(None),
            ..later()
        },
    )
    .await
    .unwrap();
    assert!(since.is_clean(), "{:#?}", since.problems);
    assert_eq!(
        since.commits, 5,
        "only the unsealed commits, from the older index"
    );
    assert_eq!(
        since_seal(store.as_ref(), None, None).await.unwrap().len(),
        5
    );
    assert_eq!(
        since_seal(store.as_ref(), Some(1), None)
            .await
            .unwrap()
            .len(),
        8
    );
    // A proof from the older layout's locator and tiles.
    let all = read_pointers(store.as_ref(), None).await.unwrap();
    let keyed = all.iter().find(|p| p.commit_key.is_some()).unwrap();
    let proof = prove(store.as_ref(), &keyed.commit_id, &ProveAgainst::Newest)
        .await
        .unwrap();
    assert!(verify_proof(&proof, r.head.as_deref().unwrap(), None, None)
        .unwrap()
        .is_ok());
    assert_eq!(
        snapshot(store.as_ref()).await,
        before,
        "nothing was written"
    );
}

#[tokio::test]
async fn the_next_seals_read_the_first_layout_and_write_the_bounded_one() {
    let (_d, store) = fixture();
    let before = snapshot(store.as_ref()).await;
    let s3 = seal(store.as_ref(), &SystemClock, None).await.unwrap();
    assert_eq!((s3.added, s3.full_scan, s3.tree_size), (5, false, 18));
    // More commits, in the new layout, and a fourth seal from the index.
    let new = append(store.clone(), 60, 20, 9).await;
    let s4 = seal(store.as_ref(), &SystemClock, None).await.unwrap();
    assert_eq!((s4.added, s4.full_scan), (new.len() as u64, false));
    let after = snapshot(store.as_ref()).await;
    for (k, v) in &before {
        assert_eq!(after.get(k), Some(v), "{k} changed");
    }
    let n = new.len();
    assert_eq!(
        layouts(&after),
        [(18, n), (2, 2), (13, 5 + n)],
        "old keys kept as they are, every new one in the bounded layout"
    );
    let r = verify_later(store.as_ref()).await;
    assert!(r.is_clean(), "{:#?}", r.problems);
    assert_eq!((r.sealed_commits, r.unsealed_commits), (18 + n as u64, 0));
    // Proofs of a commit with an older locator and of one with a new locator.
    let all = read_pointers(store.as_ref(), None).await.unwrap();
    for c in [&all[0], &new[0]] {
        let proof = prove(store.as_ref(), &c.commit_id, &ProveAgainst::Newest)
            .await
            .unwrap();
        assert!(verify_proof(&proof, &s4.head, None, None).unwrap().is_ok());
    }
    // Shards agree with the full verify on the mixed layouts.
    for count in [2, 3] {
        let mut reports = Vec::new();
        for index in 0..count {
            reports.push(
                verify_with(
                    store.as_ref(),
                    &VerifyOptions {
                        shard: Some(ShardSpec { index, count }),
                        plan_seal: Some(4),
                        ..later()
                    },
                )
                .await
                .unwrap(),
            );
        }
        let m = merge(reports).unwrap();
        assert!(m.is_clean(), "{:#?}", m.problems);
        assert_eq!((m.commits, m.sealed_commits), (r.commits, r.sealed_commits));
    }
    // An entry of the older layout written late (an older writer still running) is
    // found by the next incremental seal like one of the new layout.
    let late = append(store.clone(), 20, 20, 11).await;
    let root = store.root().to_path_buf();
    for p in &late {
        let t = chrono::DateTime::parse_from_rfc3339(&p.committed_utc)
            .unwrap()
            .with_timezone(&chrono::Utc);
        let v2 = keys::index_key(t, &p.commit_id, &p.run_id);
        let v1 = keys::index_key_in(Layout::V1, t, &p.commit_id, &p.run_id);
        std::fs::create_dir_all(root.join(&v1).parent().unwrap()).unwrap();
        std::fs::rename(root.join(&v2), root.join(&v1)).unwrap();
    }
    let s5 = seal(store.as_ref(), &SystemClock, None).await.unwrap();
    assert_eq!((s5.added, s5.full_scan), (late.len() as u64, false));
    let r = verify_later(store.as_ref()).await;
    assert!(r.is_clean(), "{:#?}", r.problems);
    assert_eq!(r.unsealed_commits, 0);
}
