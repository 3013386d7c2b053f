//! Witnessed heads through the library, on memory stores: truncation, rewrites, deleted
//! and edited witness records, the identity of a store and of its replica.

use std::sync::Arc;

use bytes::Bytes;
use lineage_store::internal::chain::walk;
use lineage_store::internal::keys::seal_key;
use lineage_store::replicate::{replicate, ReplicateOptions};
use lineage_store::seal;
use lineage_store::witness::{
    check, record_key, store_identity, witness, WitnessProblemKind as W, WitnessReport,
};
use lineage_store::AtomicPublisher;
use lineage_store::MemoryPublisher;
use lineage_store::Seal;
use lineage_store::SystemClock;

use crate::support::audit::append;

/// A store with three seals, each witnessed right after it was made.
async fn witnessed() -> (Arc<MemoryPublisher>, Arc<MemoryPublisher>, String) {
    let store = Arc::new(MemoryPublisher::new());
    let wit = Arc::new(MemoryPublisher::new());
    let mut id = String::new();
    for seed in 1..=3u64 {
        append(store.clone(), 40, 20, seed).await;
        seal(store.as_ref(), &SystemClock, None).await.unwrap();
        let o = witness(store.as_ref(), wit.as_ref(), &SystemClock)
            .await
            .unwrap();
        assert!(o.problems.is_empty() && o.created, "{o:#?}");
        assert_eq!(o.seq, seed);
        id = o.store_id;
    }
    (store, wit, id)
}

async fn checked(store: &MemoryPublisher, wit: &MemoryPublisher) -> WitnessReport {
    let chain = walk(store, None).await.unwrap();
    check(&chain, &store.describe(), wit).await.unwrap()
}

fn kinds(r: &WitnessReport) -> Vec<(W, String)> {
    r.problems.iter().map(|p| (p.kind, p.key.clone())).collect()
}

#[tokio::test]
async fn a_witnessed_store_checks_clean_and_witnessing_again_records_nothing() {
    let (store, wit, id) = witnessed().await;
    let r = checked(&store, &wit).await;
    assert!(r.is_clean(), "{:#?}", r.problems);
    assert_eq!((r.records, r.unwitnessed_seals), (3, 0));
    assert_eq!(r.newest_witnessed.as_ref().map(|w| w.seq), Some(3));
    let chain = walk(store.as_ref(), None).await.unwrap();
    assert_eq!(store_identity(&chain).as_deref(), Some(id.as_str()));
    assert_eq!(id, chain.seals[0].digest);
    let again = witness(store.as_ref(), wit.as_ref(), &SystemClock)
        .await
        .unwrap();
    assert!(!again.created && again.problems.is_empty());
    assert_eq!(wit.list("").await.unwrap().len(), 3);
    // A newer seal is not witnessed yet: said, not a problem.
    append(store.clone(), 10, 10, 9).await;
    seal(store.as_ref(), &SystemClock, None).await.unwrap();
    let r = checked(&store, &wit).await;
    assert!(r.is_clean());
    assert_eq!(r.unwitnessed_seals, 1);
}

#[tokio::test]
async fn cutting_off_the_newest_seal_after_witnessing_is_detected_and_not_witnessed_over() {
    let (store, wit, _) = witnessed().await;
    assert!(store.tamper_remove(&seal_key(3)));
    let r = checked(&store, &wit).await;
    assert_eq!(kinds(&r), vec![(W::WitnessedSealMissing, seal_key(3))]);
    let d = &r.problems[0].detail;
    assert!(
        d.contains("cut off") && d.contains("its newest is 2"),
        "{d}"
    );
    // The witness refuses to record a head that contradicts what it saw.
    let o = witness(store.as_ref(), wit.as_ref(), &SystemClock)
        .await
        .unwrap();
    assert_eq!(o.problems.len(), 1);
    assert!(!o.created);
    assert_eq!(wit.list("").await.unwrap().len(), 3);
}

#[tokio::test]
async fn a_rewritten_seal_is_detected_naming_the_witnessed_head() {
    let (store, wit, _) = witnessed().await;
    let key = seal_key(2);
    let before = store.get(&key).await.unwrap().unwrap();
    let mut s = Seal::from_bytes(&key, &before).unwrap();
    s.sealed_utc = "2020-01-01T00:00:00.000000Z".into();
    store.tamper_put(&key, Bytes::from(s.to_bytes().unwrap()));
    let r = checked(&store, &wit).await;
    assert_eq!(kinds(&r), vec![(W::WitnessedSealRewritten, key.clone())]);
    let want = lineage_store::internal::encode::sha256_hex(&before);
    assert!(
        r.problems[0].detail.contains(&want),
        "{}",
        r.problems[0].detail
    );

    // Rewriting from seal 1 gives a new store id: at this location the witness recorded
    // the old one, and names both.
    let old_id = walk(store.as_ref(), None).await.unwrap().seals[0]
        .digest
        .clone();
    let k1 = seal_key(1);
    let mut s1 = Seal::from_bytes(&k1, &store.get(&k1).await.unwrap().unwrap()).unwrap();
    s1.sealed_utc = "2020-01-01T00:00:00.000000Z".into();
    store.tamper_put(&k1, Bytes::from(s1.to_bytes().unwrap()));
    let r = checked(&store, &wit).await;
    assert_eq!(r.problems.len(), 1, "{:#?}", r.problems);
    assert_eq!(r.problems[0].kind, W::AnotherStoreAtLocation);
    let new_id = r.store_id.clone().unwrap();
    assert_ne!(new_id, old_id);
    let d = &r.problems[0].detail;
    assert!(
        d.contains(&format!(
            "the witness recorded store {old_id} (witnessed up to seal 3) at memory://"
        )) && d.contains(&format!("the store there now is store {new_id}")),
        "{d}"
    );
}

#[tokio::test]
async fn a_deleted_witness_record_is_named_by_the_record_after_it() {
    let (store, wit, id) = witnessed().await;
    assert!(wit.tamper_remove(&record_key(&id, 2)));
    let r = checked(&store, &wit).await;
    assert_eq!(
        kinds(&r),
        vec![(W::WitnessRecordMissing, record_key(&id, 2))]
    );
    // An edited record is named by the record after it too.
    let (store, wit, id) = witnessed().await;
    let k2 = record_key(&id, 2);
    let mut b = wit.get(&k2).await.unwrap().unwrap().to_vec();
    b.extend_from_slice(b" ");
    wit.tamper_put(&k2, Bytes::from(b));
    let r = checked(&store, &wit).await;
    assert_eq!(kinds(&r), vec![(W::WitnessRecordCorrupt, k2)]);
    // The newest record names none after it: deleting it (and 2) leaves no trace but an
    // older newest witnessed head. The witness store must refuse deletes for this reason.
    let (store, wit, id) = witnessed().await;
    assert!(wit.tamper_remove(&record_key(&id, 3)));
    assert!(wit.tamper_remove(&record_key(&id, 2)));
    let r = checked(&store, &wit).await;
    assert!(r.is_clean());
    assert_eq!((r.records, r.unwitnessed_seals), (1, 2));
}

#[tokio::test]
async fn an_unwitnessed_store_and_a_store_without_seals_are_problems() {
    // A witness of its own: every memory store is at the same location, `memory://`.
    let wit = Arc::new(MemoryPublisher::new());
    let other = Arc::new(MemoryPublisher::new());
    append(other.clone(), 10, 10, 5).await;
    let r = checked(&other, &wit).await;
    assert_eq!(kinds(&r), vec![(W::NotWitnessed, seal_key(1))]);
    let e = witness(other.as_ref(), wit.as_ref(), &SystemClock)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("no seals"), "{e}");
    seal(other.as_ref(), &SystemClock, None).await.unwrap();
    let r = checked(&other, &wit).await;
    assert_eq!(r.problems.len(), 1);
    assert_eq!(r.problems[0].kind, W::NotWitnessed);
}

#[tokio::test]
async fn a_replica_is_the_same_store_to_the_witness() {
    let (store, wit, _) = witnessed().await;
    let replica = Arc::new(MemoryPublisher::new());
    replicate(store.clone(), replica.clone(), ReplicateOptions::default())
        .await
        .unwrap();
    let r = checked(&replica, &wit).await;
    assert!(r.is_clean(), "{:#?}", r.problems);
    assert_eq!(r.records, 3);
    // A truncated replica is caught by its source's witness.
    replica.tamper_remove(&seal_key(3));
    let r = checked(&replica, &wit).await;
    assert_eq!(kinds(&r), vec![(W::WitnessedSealMissing, seal_key(3))]);
}
