//! Tampering with each history object kind (index entries, head markers, hash tiles, leaf
//! locators, and a `lineage-seal/2`'s frontier, watermark and ahead): `verify` names the
//! object, and `verify --since-seal` names what it looks at.

use std::sync::Arc;

use bytes::Bytes;
use lineage_store::internal::index;
use lineage_store::internal::keys;
use lineage_store::internal::keys::seal_key;
use lineage_store::internal::keys::HistoryKey;
use lineage_store::internal::keys::KeyKind;
use lineage_store::seal;
use lineage_store::verify_with;
use lineage_store::AtomicPublisher;
use lineage_store::MemoryPublisher;
use lineage_store::Pointer;
use lineage_store::ProblemKind as K;
use lineage_store::Seal;
use lineage_store::SystemClock;
use lineage_store::VerifyOptions;

use crate::support::audit::{append, later, of_kind, verify_later};

/// Three seals (the first over 300+ commits, so a full tile exists), then commits not
/// sealed yet. Returns the store, the sealed and the unsealed pointers.
async fn store() -> (Arc<MemoryPublisher>, Vec<Pointer>, Vec<Pointer>) {
    let mem = Arc::new(MemoryPublisher::new());
    let mut sealed = append(mem.clone(), 600, 2, 1).await;
    seal(mem.as_ref(), &SystemClock, None).await.unwrap();
    for seed in 2..=3 {
        sealed.extend(append(mem.clone(), 60, 20, seed).await);
        seal(mem.as_ref(), &SystemClock, None).await.unwrap();
    }
    let unsealed = append(mem.clone(), 60, 20, 4).await;
    let r = verify_later(mem.as_ref()).await;
    assert!(r.is_clean(), "{:#?}", r.problems);
    assert_eq!(r.unsealed_commits, unsealed.len() as u64);
    (mem, sealed, unsealed)
}

async fn keys_under(mem: &MemoryPublisher, prefix: &str) -> Vec<String> {
    mem.list(prefix)
        .await
        .unwrap()
        .into_iter()
        .map(|o| o.key)
        .collect()
}

fn since() -> VerifyOptions {
    VerifyOptions {
        since_seal: Some(None),
        ..later()
    }
}

/// Exactly these (kind, key) problems.
fn assert_named(r: &lineage_store::Report, want: &[(K, &str)]) {
    let mut got: Vec<(K, String)> = r.problems.iter().map(|p| (p.kind, p.key.clone())).collect();
    got.sort();
    let mut want: Vec<(K, String)> = want.iter().map(|(k, s)| (*k, s.to_string())).collect();
    want.sort();
    assert_eq!(got, want, "{:#?}", r.problems);
}

#[tokio::test]
async fn index_entries_tampered_are_named() {
    let (mem, _, unsealed) = store().await;
    let entry = |p: &Pointer| index::key_of(p).unwrap();

    // Bytes written into an (empty) index entry.
    let a = entry(&unsealed[0]);
    mem.tamper_put(&a, Bytes::from_static(b"x"));
    // An unsealed pointer removed: its index entry is the evidence.
    let b = entry(&unsealed[1]);
    let b_ptr = keys::pointer_key(&unsealed[1].run_id, &unsealed[1].commit_id);
    assert!(mem.tamper_remove(&b_ptr));
    // A second entry for a commit, at another time.
    let p = &unsealed[2];
    let fake = keys::index_key(
        index::committed(p).unwrap() + chrono::Duration::seconds(1),
        &p.commit_id,
        &p.run_id,
    );
    mem.tamper_put(&fake, Bytes::new());
    // An unsealed commit's entry removed: no incremental seal would find it.
    let d = entry(&unsealed[3]);
    assert!(mem.tamper_remove(&d));
    let d_ptr = keys::pointer_key(&unsealed[3].run_id, &unsealed[3].commit_id);
    // A pointer rewritten to claim another commit id: named as corrupt in both modes.
    let e_ptr = keys::pointer_key(&unsealed[4].run_id, &unsealed[4].commit_id);
    let e_bytes = mem.get(&e_ptr).await.unwrap().unwrap();
    let mut forged = unsealed[4].clone();
    forged.commit_id = unsealed[5].commit_id.clone();
    mem.tamper_put(&e_ptr, Bytes::from(serde_json::to_vec(&forged).unwrap()));

    let r = verify_later(mem.as_ref()).await;
    assert_named(
        &r,
        &[
            (K::BadIndexEntry, &a),
            (K::BadIndexEntry, &b),
            (K::BadIndexEntry, &fake),
            (K::MissedBySeals, &d_ptr),
            (K::CorruptPointer, &e_ptr),
            // The removed pointer's part is no orphan: its index entry records that the
            // commit had a pointer (named above), which `repair --from` restores.
        ],
    );
    assert!(of_kind(&r, K::BadIndexEntry)
        .iter()
        .any(|(k, d)| k == &b && d.contains(&b_ptr) && d.contains("removed")));

    // --since-seal reads the index after the newest seal: it names the same entries (the
    // commit without an entry is invisible to it, as to incremental seals).
    let s = verify_with(mem.as_ref(), &since()).await.unwrap();
    assert_named(
        &s,
        &[
            (K::BadIndexEntry, &a),
            (K::BadIndexEntry, &b),
            (K::BadIndexEntry, &fake),
            (K::CorruptPointer, &e_ptr),
        ],
    );
    assert!(of_kind(&s, K::CorruptPointer)
        .iter()
        .any(|(k, d)| k == &e_ptr && d.contains(&unsealed[5].commit_id)));
    // Every commit an entry stands for is checked, the one with a non-empty entry too;
    // not the removed, the forged, or the one without an entry.
    assert_eq!(s.unsealed_commits, unsealed.len() as u64 - 3);

    // `seal --rescan` leaves the forged pointer out, naming it, and seals the rest; put
    // back, it is sealed by the next one, and nothing trips over the rest.
    let opts = lineage_store::SealOptions {
        rescan: true,
        ..Default::default()
    };
    let left = lineage_store::seal_with(mem.as_ref(), &SystemClock, None, &opts)
        .await
        .unwrap();
    let named: Vec<&str> = left.not_sealed.iter().map(|n| n.key.as_str()).collect();
    assert_eq!(named, [e_ptr.as_str()]);
    mem.tamper_put(&e_ptr, e_bytes);
    let opts = lineage_store::SealOptions {
        rescan: true,
        ..Default::default()
    };
    let out = lineage_store::seal_with(mem.as_ref(), &SystemClock, None, &opts)
        .await
        .unwrap();
    assert!(out.full_scan);
    let r = verify_later(mem.as_ref()).await;
    assert!(
        of_kind(&r, K::MissedBySeals).is_empty(),
        "{:#?}",
        r.problems
    );
}

#[tokio::test]
async fn head_markers_tampered_are_named() {
    let (mem, _, _) = store().await;
    let fake = keys::head_key(99);
    mem.tamper_put(&fake, Bytes::new());
    let heavy = keys::head_key(2);
    mem.tamper_put(&heavy, Bytes::from_static(b"not empty"));
    let r = verify_later(mem.as_ref()).await;
    assert_named(&r, &[(K::BadHeadMarker, &fake), (K::BadHeadMarker, &heavy)]);
    assert!(mem.tamper_remove(&fake));

    // The newest seal's marker removed: that seal looks unfinished (said, not a problem:
    // a sealer that died there leaves the same).
    let newest = keys::head_key(3);
    assert!(mem.tamper_remove(&newest));
    let r = verify_later(mem.as_ref()).await;
    assert_named(&r, &[(K::BadHeadMarker, &heavy)]);
    assert_eq!(r.unfinished_seal, Some(3));
    let s = verify_with(mem.as_ref(), &since()).await.unwrap();
    assert_named(&s, &[]);
    assert_eq!(s.unfinished_seal, Some(3));
    // The next seal completes seal 3 again (its marker comes back) and adds its own.
    seal(mem.as_ref(), &SystemClock, None).await.unwrap();
    assert!(mem.get(&newest).await.unwrap().is_some());
    assert!(mem.get(&keys::head_key(4)).await.unwrap().is_some());
}

#[tokio::test]
async fn hash_tiles_tampered_are_named() {
    let (mem, _, _) = store().await;
    let tiles = keys_under(&mem, keys::TILES_PREFIX).await;
    let full = keys::tile_key(0, 0, 256);
    assert!(tiles.contains(&full), "{tiles:?}");
    // One hash of the full tile changed.
    let mut b = mem.get(&full).await.unwrap().unwrap().to_vec();
    b[40] ^= 1;
    mem.tamper_put(&full, Bytes::from(b));
    // The widest partial tile of level 0 (the newest tree's right edge) removed.
    let widest = tiles
        .iter()
        .filter_map(|k| match keys::classify(k) {
            KeyKind::History(HistoryKey::Tile {
                level: 0,
                index: 1,
                width,
            }) => Some((width, k.clone())),
            _ => None,
        })
        .max()
        .unwrap()
        .1;
    let bytes = mem.get(&widest).await.unwrap().unwrap();
    assert!(mem.tamper_remove(&widest));
    let r = verify_later(mem.as_ref()).await;
    assert_named(&r, &[(K::BadTile, &full), (K::BadTile, &widest)]);

    // --since-seal checks the newest seal's right edge: it sees the missing tile.
    let s = verify_with(mem.as_ref(), &since()).await.unwrap();
    assert_eq!(of_kind(&s, K::BadTile).len(), 1, "{:#?}", s.problems);
    // A proof that needs the changed tile fails rather than mislead (or falls back).
    mem.tamper_put(&widest, bytes);
    let r = verify_later(mem.as_ref()).await;
    assert_named(&r, &[(K::BadTile, &full)]);
}

#[tokio::test]
async fn leaf_locators_tampered_are_named() {
    let (mem, sealed, _) = store().await;
    let loc = |i: usize| {
        let p = &sealed[i];
        let prefix = keys::leaf_prefix(&p.commit_id);
        (prefix, p.clone())
    };
    let all = keys_under(&mem, keys::LEAVES_PREFIX).await;
    assert_eq!(all.len(), sealed.len());
    // Removed.
    let (p0, _) = loc(0);
    let k0 = all.iter().find(|k| k.starts_with(&p0)).unwrap().clone();
    assert!(mem.tamper_remove(&k0));
    // Given bytes.
    let (p1, _) = loc(1);
    let k1 = all.iter().find(|k| k.starts_with(&p1)).unwrap().clone();
    mem.tamper_put(&k1, Bytes::from_static(b"1"));
    // Moved to another leaf (a new name; the real one removed).
    let (p2, c2) = loc(2);
    let k2 = all.iter().find(|k| k.starts_with(&p2)).unwrap().clone();
    assert!(mem.tamper_remove(&k2));
    let moved = keys::leaf_key(&c2.commit_id, 5_000, &c2.run_id);
    mem.tamper_put(&moved, Bytes::new());
    let r = verify_later(mem.as_ref()).await;
    assert_named(
        &r,
        &[
            (K::BadLocator, &k0),
            (K::BadLocator, &k1),
            (K::BadLocator, &k2),
            (K::BadLocator, &moved),
        ],
    );
    // prove still works for a commit without its locator: the whole chain is walked.
    let proof = lineage_store::prove(
        mem.as_ref(),
        &sealed[0].commit_id,
        &lineage_store::ProveAgainst::Newest,
    )
    .await
    .unwrap();
    assert_eq!(proof.commit_id, sealed[0].commit_id);
}

#[tokio::test]
async fn a_seals_frontier_watermark_and_ahead_tampered_are_named() {
    for edit in ["frontier", "watermark", "ahead"] {
        let (mem, _, _) = store().await;
        // Seal 2 (not the newest): seal 3 also records seal 2's digest.
        let key = seal_key(2);
        let mut s = Seal::from_bytes(&key, &mem.get(&key).await.unwrap().unwrap()).unwrap();
        let prev = Seal::from_bytes("1", &mem.get(&seal_key(1)).await.unwrap().unwrap()).unwrap();
        match edit {
            "frontier" => {
                let f = s.frontier.as_mut().unwrap();
                let last = f.len() - 1;
                f[last] = "00".repeat(32);
            }
            "watermark" => {
                s.watermark_utc = Some("2000-01-01T00:00:00.000000Z".into());
                assert!(prev.watermark_utc.unwrap().as_str() > "2000");
            }
            _ => s.ahead.as_mut().unwrap().push(keys::index_key(
                chrono::Utc::now(),
                "019b76da-a800-7000-8000-00000000abcd",
                "nobody",
            )),
        }
        mem.tamper_put(&key, Bytes::from(s.to_bytes().unwrap()));
        let r = verify_later(mem.as_ref()).await;
        let on_seal: Vec<K> = r
            .problems
            .iter()
            .filter(|p| p.key == key)
            .map(|p| p.kind)
            .collect();
        let want = if edit == "frontier" {
            K::SealRootMismatch
        } else {
            K::SealCorrupt
        };
        assert!(on_seal.contains(&want), "{edit}: {:#?}", r.problems);
        // The successor's link names the edited seal too.
        assert!(
            on_seal.contains(&K::SealChainBroken),
            "{edit}: {:#?}",
            r.problems
        );
        // --since-seal 2 checks seal 2 itself (whether `ahead` names sealed commits needs
        // every seal: only the full verify knows).
        if edit == "ahead" {
            continue;
        }
        let s = verify_with(
            mem.as_ref(),
            &VerifyOptions {
                since_seal: Some(Some(2)),
                ..later()
            },
        )
        .await
        .unwrap();
        assert!(
            s.problems.iter().any(|p| p.key == key && p.kind == want),
            "{edit}: {:#?}",
            s.problems
        );
    }
}
