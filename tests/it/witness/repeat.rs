//! A repeat `witness` of a store the witness recorded before reads the store's seal its
//! newest record names and the seals after it, however many seals came before (metered:
//! every request logged); and what that quick path cannot vouch for (the witnessed seal
//! rewritten or cut off, a gap or a broken link after it, another store at the location)
//! is reported exactly as the walk of every seal reports it.

use std::sync::Arc;

use bytes::Bytes;
use lineage_store::internal::digest::sha256_hex;
use lineage_store::internal::keys::seal_key;
use lineage_store::internal::metered::{MeteredPublisher, Request};
use lineage_store::seal;
use lineage_store::witness::{
    record_key, witness, witness_with, WitnessOptions, WitnessOutcome, WitnessProblemKind as W,
    HEADS_PREFIX,
};
use lineage_store::{AtomicPublisher, MemoryPublisher, Seal, SystemClock};

use crate::support::audit::append;

/// A store (in memory, reached through a metering wrapper: its location is the wrapper's)
/// and a witness store (likewise), with their memory stores to tamper with.
struct Fixture {
    mem: Arc<MemoryPublisher>,
    store: Arc<MeteredPublisher>,
    wmem: Arc<MemoryPublisher>,
    wit: Arc<MeteredPublisher>,
}

impl Fixture {
    fn new() -> Self {
        let mem = Arc::new(MemoryPublisher::new());
        let store = Arc::new(MeteredPublisher::new(mem.clone(), None).with_log());
        let wmem = Arc::new(MemoryPublisher::new());
        let wit = Arc::new(MeteredPublisher::new(wmem.clone(), None).with_log());
        Fixture {
            mem,
            store,
            wmem,
            wit,
        }
    }

    /// `n` more seals, each over a few new commits (`seed` onwards).
    async fn seals(&self, n: u64, seed: u64) {
        for s in seed..seed + n {
            append(self.store.clone(), 6, 3, s).await;
            seal(self.store.as_ref(), &SystemClock, None).await.unwrap();
        }
    }

    async fn witness(&self) -> WitnessOutcome {
        self.store.reset();
        self.wit.reset();
        witness(self.store.as_ref(), self.wit.as_ref(), &SystemClock)
            .await
            .unwrap()
    }

    /// The seals the last command read, in key order.
    fn seals_read(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .store
            .take_log()
            .into_iter()
            .filter(|(r, k)| *r == Request::Get && k.starts_with("_lineage/seals/"))
            .map(|(_, k)| k)
            .collect();
        v.sort();
        v
    }

    async fn seal_bytes(&self, n: u64) -> Bytes {
        self.mem.get(&seal_key(n)).await.unwrap().unwrap()
    }
}

fn kinds(o: &WitnessOutcome) -> Vec<(W, String)> {
    o.problems.iter().map(|p| (p.kind, p.key.clone())).collect()
}

/// A store of 30 seals, witnessed at seal 30.
async fn witnessed_at_30() -> (Fixture, String) {
    let f = Fixture::new();
    f.seals(30, 1).await;
    let o = f.witness().await;
    assert!(o.created && o.problems.is_empty(), "{o:#?}");
    assert_eq!(o.seq, 30);
    assert_eq!(
        f.seals_read().len(),
        30,
        "the first record walks every seal"
    );
    (f, o.store_id)
}

#[tokio::test]
async fn a_repeat_record_reads_the_newest_witnessed_seal_and_the_new_ones_only() {
    let (f, id) = witnessed_at_30().await;
    f.seals(2, 100).await;
    let o = f.witness().await;
    assert!(o.created && o.problems.is_empty(), "{o:#?}");
    assert_eq!((o.seq, o.store_id.as_str()), (32, id.as_str()));
    assert_eq!(
        f.seals_read(),
        vec![seal_key(30), seal_key(31), seal_key(32)],
        "seal 30 (the newest record's) and the two new ones, not the 29 before"
    );
    let mut bytes = 0;
    for n in 30..=32 {
        bytes += f.seal_bytes(n).await.len() as u64;
    }
    assert_eq!(f.store.snapshot().bytes_read, bytes);
    // The witness: one listing of the records' names, the newest record read.
    let wlog = f.wit.take_log();
    let gets: Vec<&String> = wlog
        .iter()
        .filter(|(r, _)| *r == Request::Get)
        .map(|(_, k)| k)
        .collect();
    assert_eq!(gets, vec![&record_key(&id, 30)], "{wlog:?}");
    // The record names the one before it, as a full walk's record would.
    let rec: serde_json::Value =
        serde_json::from_slice(&f.wit.get(&record_key(&id, 32)).await.unwrap().unwrap()).unwrap();
    let r30 = sha256_hex(&f.wit.get(&record_key(&id, 30)).await.unwrap().unwrap());
    assert_eq!(rec["prev"]["seq"], 30);
    assert_eq!(rec["prev"]["sha256"], r30.as_str());
    assert_eq!(rec["head"], sha256_hex(&f.seal_bytes(32).await).as_str());

    // Again without a new seal: seal 32 alone, nothing recorded; the newest record's
    // `prev` (record 30) is read to check its link.
    let o = f.witness().await;
    assert!(!o.created && o.problems.is_empty(), "{o:#?}");
    assert_eq!(o.seq, 32);
    assert_eq!(f.seals_read(), vec![seal_key(32)]);
    let wgets = f
        .wit
        .take_log()
        .into_iter()
        .filter(|(r, _)| *r == Request::Get)
        .count();
    assert_eq!(wgets, 2);

    // Every record agrees with the whole chain.
    let chain = lineage_store::internal::chain::walk(f.store.as_ref(), None)
        .await
        .unwrap();
    let r = lineage_store::witness::check(&chain, &f.store.describe(), f.wit.as_ref())
        .await
        .unwrap();
    assert!(r.is_clean() && r.records == 2, "{r:#?}");
}

#[tokio::test]
async fn a_rewritten_witnessed_seal_is_refused_even_with_new_seals_over_it() {
    let (f, _) = witnessed_at_30().await;
    let key = seal_key(30);
    let mut s = Seal::from_bytes(&key, &f.seal_bytes(30).await).unwrap();
    s.tool_version = "0.0.0-rewritten".into();
    f.mem.tamper_put(&key, Bytes::from(s.to_bytes().unwrap()));
    let o = f.witness().await;
    assert_eq!(kinds(&o), vec![(W::WitnessedSealRewritten, key.clone())]);
    assert!(!o.created);
    // Seal 30 read by the quick path, found rewritten: then every seal, by the full walk.
    assert_eq!(f.seals_read().len(), 31);
    // A new seal over the rewritten one chains to it: still refused, naming seal 30.
    f.seals(1, 200).await;
    let o = f.witness().await;
    assert_eq!(kinds(&o), vec![(W::WitnessedSealRewritten, key)]);
    assert!(o.problems[0]
        .detail
        .contains("rewritten after the witness saw it"));
    assert_eq!(f.wit.list(HEADS_PREFIX).await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_cut_off_witnessed_seal_is_refused() {
    let (f, _) = witnessed_at_30().await;
    assert!(f.mem.tamper_remove(&seal_key(30)));
    let o = f.witness().await;
    assert_eq!(kinds(&o), vec![(W::WitnessedSealMissing, seal_key(30))]);
    assert!(o.problems[0].detail.contains("its newest is 29"), "{o:#?}");
    assert!(!o.created);
    assert_eq!(f.wit.list(HEADS_PREFIX).await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_gap_or_a_broken_link_after_the_witnessed_seal_is_refused() {
    let (f, _) = witnessed_at_30().await;
    f.seals(2, 300).await;
    let s31 = f.seal_bytes(31).await;
    assert!(f.mem.tamper_remove(&seal_key(31)));
    let o = f.witness().await;
    assert_eq!(kinds(&o), vec![(W::StoreChain, seal_key(31))]);
    assert!(
        o.problems[0].detail.contains("seal 31 is missing"),
        "{o:#?}"
    );
    // Seal 31 back with other bytes: seal 32's link to it is broken.
    let mut s = Seal::from_bytes(&seal_key(31), &s31).unwrap();
    s.tool_version = "0.0.0-edited".into();
    f.mem
        .tamper_put(&seal_key(31), Bytes::from(s.to_bytes().unwrap()));
    let o = f.witness().await;
    assert_eq!(kinds(&o), vec![(W::StoreChain, seal_key(31))]);
    assert!(
        o.problems[0].detail.starts_with("seal_chain_broken"),
        "{o:#?}"
    );
    assert_eq!(f.wit.list(HEADS_PREFIX).await.unwrap().len(), 1);
    // Put back: recorded from the witnessed seal on.
    f.mem.tamper_put(&seal_key(31), s31);
    let o = f.witness().await;
    assert!(o.created && o.seq == 32, "{o:#?}");
    assert_eq!(f.seals_read().len(), 3);
}

#[tokio::test]
async fn another_store_at_the_location_is_refused_and_a_replacement_then_goes_quick() {
    let (old, old_id) = witnessed_at_30().await;
    // Another store at the same location (every metered memory store is at
    // `metered(memory://)`), witnessed by the same witness.
    let new = Fixture {
        wmem: old.wmem.clone(),
        wit: old.wit.clone(),
        ..Fixture::new()
    };
    new.seals(3, 400).await;
    let o = new.witness().await;
    assert_eq!(
        kinds(&o),
        vec![(
            W::AnotherStoreAtLocation,
            format!("{HEADS_PREFIX}{old_id}/")
        )]
    );
    assert!(o.problems[0].detail.contains("witnessed up to seal 30"));
    assert!(!o.created);
    // Recorded on explicit request, naming the store it replaces.
    let opts = WitnessOptions {
        new_store_at_location: true,
    };
    let o = witness_with(new.store.as_ref(), new.wit.as_ref(), &SystemClock, &opts)
        .await
        .unwrap();
    assert!(o.created && o.problems.is_empty(), "{o:#?}");
    // Its next record is a repeat one: its seal 3, the new seal 4, and its seal 30 that
    // would match the old store's record (it has none).
    new.seals(1, 500).await;
    let o = new.witness().await;
    assert!(o.created && o.seq == 4 && o.problems.is_empty(), "{o:#?}");
    assert_eq!(
        new.seals_read(),
        vec![seal_key(3), seal_key(4), seal_key(30)]
    );
}

#[tokio::test]
async fn a_deleted_or_unreadable_witness_record_is_named_as_by_the_full_walk() {
    let (f, id) = witnessed_at_30().await;
    f.seals(2, 600).await;
    assert!(f.witness().await.created);
    // The record the newest one names is gone: the record of seal 32 names it.
    let r30 = f.wmem.get(&record_key(&id, 30)).await.unwrap().unwrap();
    assert!(f.wmem.tamper_remove(&record_key(&id, 30)));
    let o = f.witness().await;
    assert_eq!(
        kinds(&o),
        vec![(W::WitnessRecordMissing, record_key(&id, 30))]
    );
    assert!(!o.created);
    // Put back, and the newest record made unreadable: named, nothing recorded over it.
    f.wmem.tamper_put(&record_key(&id, 30), r30);
    f.wmem
        .tamper_put(&record_key(&id, 32), Bytes::from_static(b"{"));
    f.seals(1, 700).await;
    let o = f.witness().await;
    assert_eq!(
        kinds(&o),
        vec![(W::WitnessRecordCorrupt, record_key(&id, 32))]
    );
    assert!(!o.created);
    assert_eq!(f.wmem.list(HEADS_PREFIX).await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_repeat_record_checks_the_new_seals_signatures() {
    let (f, _) = witnessed_at_30().await;
    let key = ed25519_dalek::SigningKey::from_bytes(&[7; 32]);
    append(f.store.clone(), 6, 3, 800).await;
    seal(f.store.as_ref(), &SystemClock, Some(&key))
        .await
        .unwrap();
    let o = f.witness().await;
    assert!(o.created && o.seq == 31 && o.problems.is_empty(), "{o:#?}");
    assert_eq!(f.seals_read(), vec![seal_key(30), seal_key(31)]);
    // A signed seal edited after signing: its signature fails, named as the walk names it.
    append(f.store.clone(), 6, 3, 801).await;
    seal(f.store.as_ref(), &SystemClock, Some(&key))
        .await
        .unwrap();
    let k32 = seal_key(32);
    let mut s = Seal::from_bytes(&k32, &f.seal_bytes(32).await).unwrap();
    assert!(s.signature.is_some());
    s.tool_version = "0.0.0-edited".into();
    f.mem.tamper_put(&k32, Bytes::from(s.to_bytes().unwrap()));
    let o = f.witness().await;
    assert_eq!(kinds(&o), vec![(W::StoreChain, k32)]);
    assert!(o.problems[0].detail.starts_with("bad_signature"), "{o:#?}");
    assert!(!o.created);
}
