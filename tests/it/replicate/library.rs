//! `replicate` through the library, on memory stores: publication order under
//! concurrency, idempotence, lost responses at the destination, conflicts, refused
//! corrupt sources, stops, follow, and the replica comparison.

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use lineage_store::internal::encode::sha256_hex;
use lineage_store::internal::faulty::Fault;
use lineage_store::internal::faulty::FaultyPublisher;
use lineage_store::internal::keys;
use lineage_store::internal::keys::KeyKind;
use lineage_store::replicate::compare::{compare, Relation, ReplicaProblemKind as RK};
use lineage_store::replicate::{follow, replicate, ReplicateOptions, Replicator, Stop};
use lineage_store::seal;
use lineage_store::MemoryPublisher;
use lineage_store::ObjectInfo;
use lineage_store::Outcome;
use lineage_store::Seal;
use lineage_store::SystemClock;
use lineage_store::{AtomicPublisher, Result, Writer};

use crate::support::audit::{append, events, verify_later};

/// Records every object created through it, in order.
#[derive(Debug)]
struct Recording {
    inner: Arc<dyn AtomicPublisher>,
    created: Mutex<Vec<String>>,
}

impl Recording {
    fn new(inner: Arc<dyn AtomicPublisher>) -> Arc<Self> {
        Arc::new(Self {
            inner,
            created: Mutex::new(Vec::new()),
        })
    }
    fn created(&self) -> Vec<String> {
        self.created.lock().unwrap().clone()
    }
}

#[async_trait]
impl AtomicPublisher for Recording {
    fn describe(&self) -> String {
        self.inner.describe()
    }
    async fn put_create(&self, key: &str, bytes: Bytes) -> Result<Outcome> {
        let o = self.inner.put_create(key, bytes).await?;
        if o == Outcome::Created {
            self.created.lock().unwrap().push(key.to_string());
        }
        Ok(o)
    }
    async fn get(&self, key: &str) -> Result<Option<Bytes>> {
        self.inner.get(key).await
    }
    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes> {
        self.inner.get_range(key, range).await
    }
    async fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>> {
        self.inner.list(prefix).await
    }
    async fn list_after(&self, prefix: &str, after: &str, limit: usize) -> Result<Vec<ObjectInfo>> {
        self.inner.list_after(prefix, after, limit).await
    }
    async fn delete_temp(&self, key: &str) -> Result<()> {
        self.inner.delete_temp(key).await
    }
}

/// A source of three appends (one with a commit key), each sealed: seals 1..=3.
async fn source() -> Arc<MemoryPublisher> {
    let mem = Arc::new(MemoryPublisher::new());
    let store: Arc<dyn AtomicPublisher> = mem.clone();
    append(store.clone(), 120, 30, 1).await;
    seal(mem.as_ref(), &SystemClock, None).await.unwrap();
    Writer::new(store.clone())
        .with_batch_rows(25)
        .with_commit_key(Some("job-7".into()))
        .append(&events(60, 1, 2), |_| {})
        .await
        .unwrap();
    seal(mem.as_ref(), &SystemClock, None).await.unwrap();
    append(store, 90, 40, 3).await;
    seal(mem.as_ref(), &SystemClock, None).await.unwrap();
    mem
}

/// Every object: key → sha256.
async fn snapshot(s: &dyn AtomicPublisher) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for o in s.list("").await.unwrap() {
        let b = s.get(&o.key).await.unwrap().unwrap();
        out.insert(o.key, sha256_hex(&b));
    }
    out
}

fn opts(concurrency: usize) -> ReplicateOptions {
    ReplicateOptions {
        concurrency,
        ..ReplicateOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn objects_land_in_publication_order_and_the_replica_is_the_source_byte_for_byte() {
    let src = source().await;
    // An object under `_lineage/` of no kind lineage-store writes: named, never copied.
    let planted = "_lineage/checkpoints/00000000000000000001.json";
    src.tamper_put(planted, Bytes::from_static(b"{\"covers\": \"seal 3\"}\n"));
    let dst_mem = Arc::new(MemoryPublisher::new());
    let dst = Recording::new(dst_mem.clone());
    let s = replicate(src.clone(), dst.clone(), opts(8)).await.unwrap();
    assert!(s.is_complete(), "{s:#?}");
    assert_eq!(s.skipped.len(), 1, "{s:#?}");
    assert_eq!(s.skipped[0].key, planted);
    assert!(
        s.skipped[0]
            .reason
            .contains("not an object lineage-store writes"),
        "{s:#?}"
    );
    assert!(dst_mem.get(planted).await.unwrap().is_none());
    assert!(src.tamper_remove(planted));
    // "Other": the history objects (index entries, tiles, locators, head markers).
    let history = src
        .list("")
        .await
        .unwrap()
        .iter()
        .filter(|o| matches!(keys::classify(&o.key), KeyKind::History(_)))
        .count() as u64;
    assert!(history > 0);
    // ... and the Delta versions (0 and one per seal); the planted object is not copied.
    assert_eq!(s.copied.other, history + 4);
    let want = snapshot(src.as_ref()).await;
    assert_eq!(snapshot(dst_mem.as_ref()).await, want);
    assert_eq!(s.copied.objects as usize, want.len());
    assert_eq!((s.copied.seals, s.copied.claims), (3, 1));
    assert_eq!(s.copied.parts, s.copied.pointers);
    assert_eq!(s.destination_head, s.source_head);

    // Order: a part before its pointer; a claim after every commit it names; a seal after
    // every pointer it covers and after the seal before it.
    let order = dst.created();
    let at: HashMap<&str, usize> = order
        .iter()
        .enumerate()
        .map(|(i, k)| (k.as_str(), i))
        .collect();
    for (i, k) in order.iter().enumerate() {
        match keys::classify(k) {
            KeyKind::Pointer { run_id, commit_id } => {
                let ptr: lineage_store::Pointer =
                    serde_json::from_slice(&src.get(k).await.unwrap().unwrap()).unwrap();
                assert_eq!((ptr.run_id, ptr.commit_id), (run_id, commit_id));
                assert!(
                    at[ptr.part_path.as_str()] < i,
                    "pointer {k} before its part"
                );
            }
            KeyKind::Seal(n) => {
                let seal = Seal::from_bytes(k, &src.get(k).await.unwrap().unwrap()).unwrap();
                for e in &seal.entries {
                    assert!(at[e.key.as_str()] < i, "seal {n} before {}", e.key);
                }
                if n > 1 {
                    let prev = lineage_store::internal::keys::seal_key(n - 1);
                    assert!(at[prev.as_str()] < i, "seal {n} before seal {}", n - 1);
                }
            }
            // An index entry after its pointer; a head marker after its seal and after
            // every tile and locator (they are what it vouches for).
            KeyKind::History(h @ keys::HistoryKey::Index { .. }) => {
                let ptr = h.pointer_key().unwrap();
                assert!(at[ptr.as_str()] < i, "index entry {k} before its pointer");
            }
            KeyKind::History(keys::HistoryKey::Head(n)) => {
                let seal = lineage_store::internal::keys::seal_key(n);
                assert!(at[seal.as_str()] < i, "marker {k} before its seal");
                for (j, o) in order.iter().enumerate() {
                    if o.starts_with(keys::TILES_PREFIX) || o.starts_with(keys::LEAVES_PREFIX) {
                        assert!(j < i, "marker {k} before {o}");
                    }
                }
            }
            KeyKind::Claim => {
                let claim: lineage_store::internal::claim::Claim =
                    serde_json::from_slice(&src.get(k).await.unwrap().unwrap()).unwrap();
                for c in &claim.commits {
                    let ptr = keys::pointer_key(&c.run_id, &c.commit_id);
                    assert!(at[ptr.as_str()] < i, "claim before {ptr}");
                }
            }
            _ => {}
        }
    }
    let r = verify_later(dst_mem.as_ref()).await;
    assert!(r.is_clean(), "{:#?}", r.problems);
    assert_eq!(r.head, s.source_head.map(|h| h.sha256));
    let c = compare(dst_mem.as_ref(), src.as_ref()).await.unwrap();
    assert!(c.is_clean(), "{:#?}", c.problems);
    assert_eq!(c.relation, Relation::Identical);
    assert_eq!(c.objects_compared as usize, want.len());

    // Again: nothing to copy, nothing created.
    let again = replicate(src.clone(), dst.clone(), opts(8)).await.unwrap();
    assert_eq!(again.copied.objects, 0);
    assert_eq!(again.already_present as usize, want.len());
    assert_eq!(dst.created().len(), order.len());
}

#[tokio::test]
async fn only_new_objects_are_copied_after_an_append_and_a_seal() {
    let src = source().await;
    let dst = Arc::new(MemoryPublisher::new());
    replicate(src.clone(), dst.clone(), opts(4)).await.unwrap();
    let before: std::collections::HashSet<String> = src
        .list("")
        .await
        .unwrap()
        .into_iter()
        .map(|o| o.key)
        .collect();
    let new = append(src.clone(), 50, 25, 9).await;
    seal(src.as_ref(), &SystemClock, None).await.unwrap();
    let rec = Recording::new(dst.clone());
    let s = replicate(src.clone(), rec.clone(), opts(4)).await.unwrap();
    assert_eq!(
        (
            s.copied.parts,
            s.copied.pointers,
            s.copied.seals,
            s.copied.claims
        ),
        (new.len() as u64, new.len() as u64, 1, 0)
    );
    // Exactly what is new at the source: the commits (part, pointer, index entry), seal 4
    // and what it added (locators, tiles, its head marker).
    let mut want: Vec<String> = src
        .list("")
        .await
        .unwrap()
        .into_iter()
        .map(|o| o.key)
        .filter(|k| !before.contains(k))
        .collect();
    for p in &new {
        assert!(want.contains(&p.part_path));
        assert!(want.contains(&lineage_store::internal::index::key_of(p).unwrap()));
    }
    assert!(want.contains(&keys::head_key(4)));
    let mut got = rec.created();
    want.sort();
    got.sort();
    assert_eq!(got, want);
}

#[tokio::test]
async fn a_lost_response_at_the_destination_is_read_back_and_accepted() {
    let src = source().await;
    let mem = Arc::new(MemoryPublisher::new());
    let faulty = Arc::new(FaultyPublisher::new(mem.clone()));
    faulty.fail("part-", Fault::After, 2);
    faulty.fail("_lineage/commits/", Fault::AfterAsExisting, 1);
    faulty.fail("_lineage/seals/", Fault::After, 1);
    let s = replicate(src.clone(), faulty.clone(), opts(4))
        .await
        .unwrap();
    assert_eq!(faulty.fired().len(), 4, "{:?}", faulty.fired());
    assert!(s.is_complete(), "{s:#?}");
    assert_eq!(s.already_present, 4, "the four lost answers, read back");
    assert_eq!(snapshot(mem.as_ref()).await, snapshot(src.as_ref()).await);
}

#[tokio::test]
async fn an_ambiguous_failure_that_did_not_land_is_an_error_and_the_next_run_completes() {
    let src = source().await;
    let mem = Arc::new(MemoryPublisher::new());
    let faulty = Arc::new(FaultyPublisher::new(mem.clone()));
    faulty.fail("_lineage/commits/", Fault::Before, 1);
    let e = replicate(src.clone(), faulty.clone(), opts(1))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("_lineage/commits/"), "{e}");
    // What landed is a valid store: complete commits and at most one orphan part.
    let r = verify_later(mem.as_ref()).await;
    assert!(
        r.problems
            .iter()
            .all(|p| p.kind == lineage_store::ProblemKind::OrphanPart),
        "{:#?}",
        r.problems
    );
    let s = replicate(src.clone(), mem.clone(), opts(1)).await.unwrap();
    assert!(s.is_complete());
    assert_eq!(snapshot(mem.as_ref()).await, snapshot(src.as_ref()).await);
}

#[tokio::test]
async fn a_conflicting_destination_object_is_named_with_both_digests_and_left_alone() {
    let src = source().await;
    let ptrs = lineage_store::read_pointers(src.as_ref(), None)
        .await
        .unwrap();
    let dst = Arc::new(MemoryPublisher::new());
    // Another store's pointer under one of our keys, and another part under another key.
    let victim = keys::pointer_key(&ptrs[0].run_id, &ptrs[0].commit_id);
    dst.tamper_put(&victim, Bytes::from_static(b"{\"not\": \"ours\"}\n"));
    dst.tamper_put(&ptrs[5].part_path, Bytes::from_static(b"other bytes"));
    let s = replicate(src.clone(), dst.clone(), opts(4)).await.unwrap();
    let got: Vec<(&str, Option<&str>, &str)> = s
        .conflicts
        .iter()
        .map(|c| {
            (
                c.key.as_str(),
                c.source_sha256.as_deref(),
                c.destination_sha256.as_str(),
            )
        })
        .collect();
    let src_ptr = sha256_hex(&src.get(&victim).await.unwrap().unwrap());
    let mut want = [
        (
            victim.as_str(),
            Some(src_ptr.as_str()),
            sha256_hex(b"{\"not\": \"ours\"}\n"),
        ),
        (
            ptrs[5].part_path.as_str(),
            Some(ptrs[5].sha256.as_str()),
            sha256_hex(b"other bytes"),
        ),
    ];
    want.sort();
    assert_eq!(
        got,
        want.iter()
            .map(|(k, s, d)| (*k, *s, d.as_str()))
            .collect::<Vec<_>>()
    );
    // Nothing overwritten; the conflicting commit's other half and every seal covering
    // either are not published.
    assert_eq!(
        dst.get(&victim).await.unwrap().unwrap(),
        Bytes::from_static(b"{\"not\": \"ours\"}\n")
    );
    assert_eq!(
        dst.get(&ptrs[5].part_path).await.unwrap().unwrap(),
        Bytes::from_static(b"other bytes")
    );
    let p5 = keys::pointer_key(&ptrs[5].run_id, &ptrs[5].commit_id);
    assert!(dst.get(&p5).await.unwrap().is_none());
    assert!(s.refused.iter().any(|n| n.key == p5), "{:#?}", s.refused);
    assert!(dst.list(keys::SEALS_PREFIX).await.unwrap().is_empty());
    assert!(s
        .refused
        .iter()
        .any(|n| n.key.starts_with(keys::SEALS_PREFIX) && n.reason.contains("covers")));
}

#[tokio::test]
async fn corrupt_source_objects_are_refused_and_nothing_naming_them_is_copied() {
    let src = source().await;
    let ptrs = lineage_store::read_pointers(src.as_ref(), None)
        .await
        .unwrap();
    // Seal 1 covers the first append's commits; find one of the last append's (seal 3).
    let seals = lineage_store::internal::chain::walk(src.as_ref(), None)
        .await
        .unwrap();
    let last = ptrs
        .iter()
        .find(|p| seals.leaves[seals.by_key[&keys::pointer_key(&p.run_id, &p.commit_id)]].seq == 3)
        .unwrap();
    let mut b = src.get(&last.part_path).await.unwrap().unwrap().to_vec();
    b[20] ^= 0xff;
    src.tamper_put(&last.part_path, Bytes::from(b));
    let dst = Arc::new(MemoryPublisher::new());
    let s = replicate(src.clone(), dst.clone(), opts(4)).await.unwrap();
    assert!(s.conflicts.is_empty());
    let refused: BTreeMap<&str, &str> = s
        .refused
        .iter()
        .map(|n| (n.key.as_str(), n.reason.as_str()))
        .collect();
    let lp = keys::pointer_key(&last.run_id, &last.commit_id);
    assert!(
        refused[last.part_path.as_str()].contains(&format!("records {}", last.sha256)),
        "{refused:#?}"
    );
    assert!(refused[lp.as_str()].contains("was not copied"));
    assert!(refused[lineage_store::internal::keys::seal_key(3).as_str()].contains(&lp));
    assert_eq!(refused.len(), 3, "{refused:#?}");
    assert!(dst.get(&last.part_path).await.unwrap().is_none());
    // Everything else landed, and the replica is a valid store behind its source.
    assert_eq!(s.copied.seals, 2);
    assert_eq!(s.destination_head.as_ref().map(|h| h.seq), Some(2));
    let r = verify_later(dst.as_ref()).await;
    assert!(r.is_clean(), "{:#?}", r.problems);
    assert_eq!(r.commits as usize, ptrs.len() - 1);

    // A sealed pointer edited at the source is refused too (as is its seal).
    let first = keys::pointer_key(&ptrs[0].run_id, &ptrs[0].commit_id);
    let mut pb = src.get(&first).await.unwrap().unwrap().to_vec();
    pb.extend_from_slice(b" ");
    src.tamper_put(&first, Bytes::from(pb));
    let dst2 = Arc::new(MemoryPublisher::new());
    let s = replicate(src.clone(), dst2.clone(), opts(4)).await.unwrap();
    let why = &s.refused.iter().find(|n| n.key == first).unwrap().reason;
    assert!(why.contains("edited after it was sealed"), "{why}");
    assert_eq!(s.copied.seals, 0);
}

#[tokio::test]
async fn a_broken_source_chain_stops_seal_copying_at_the_broken_seal() {
    let src = source().await;
    let key = lineage_store::internal::keys::seal_key(2);
    let mut seal2 = Seal::from_bytes(&key, &src.get(&key).await.unwrap().unwrap()).unwrap();
    // Edited a microsecond later (earlier would also make it `seal_out_of_order`).
    let t = chrono::DateTime::parse_from_rfc3339(&seal2.sealed_utc).unwrap()
        + chrono::Duration::microseconds(1);
    seal2.sealed_utc = t.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string();
    src.tamper_put(&key, Bytes::from(seal2.to_bytes().unwrap()));
    let dst = Arc::new(MemoryPublisher::new());
    let s = replicate(src.clone(), dst.clone(), opts(4)).await.unwrap();
    assert_eq!(s.copied.seals, 1);
    let why = &s.refused.iter().find(|n| n.key == key).unwrap().reason;
    assert!(why.contains("seal_chain_broken"), "{why}");
    assert!(dst.get(&key).await.unwrap().is_none());
}

#[tokio::test]
async fn a_source_that_lost_its_newest_seal_conflicts_with_its_replica() {
    let src = source().await;
    let dst = Arc::new(MemoryPublisher::new());
    replicate(src.clone(), dst.clone(), opts(4)).await.unwrap();
    let key = lineage_store::internal::keys::seal_key(3);
    let theirs = sha256_hex(&dst.get(&key).await.unwrap().unwrap());
    assert!(src.tamper_remove(&key));
    let s = replicate(src.clone(), dst.clone(), opts(4)).await.unwrap();
    assert_eq!(s.conflicts.len(), 1, "{s:#?}");
    let c = &s.conflicts[0];
    assert_eq!(
        (c.key.as_str(), c.source_sha256.as_deref()),
        (key.as_str(), None)
    );
    assert_eq!(c.destination_sha256, theirs);
    let r = compare(dst.as_ref(), src.as_ref()).await.unwrap();
    assert_eq!(r.relation, Relation::SourceBehind);
    assert!(r
        .problems
        .iter()
        .any(|p| p.kind == RK::OnlyInReplica && p.key == key));
}

#[tokio::test]
async fn a_stop_lets_the_commit_in_flight_finish_and_starts_nothing_new() {
    let src = source().await;
    let dst = Arc::new(MemoryPublisher::new());
    let stop = Stop::new();
    let hook_stop = stop.clone();
    let o = ReplicateOptions {
        concurrency: 1,
        stop: stop.clone(),
        on_published: Some(Arc::new(move |n, key| {
            let stop = hook_stop.clone();
            Box::pin(async move {
                // The first object created is the store's identity, the second a part:
                // stop right after the part.
                if n == 1 {
                    assert_eq!(key, "_lineage/store.json");
                }
                if n == 2 {
                    assert!(key.ends_with(".parquet"), "{key}");
                    stop.request();
                }
            })
        })),
        ..ReplicateOptions::default()
    };
    let s = replicate(src.clone(), dst.clone(), o).await.unwrap();
    assert!(s.stopped);
    assert_eq!(
        (s.copied.parts, s.copied.pointers, s.copied.seals),
        (1, 1, 0)
    );
    let r = verify_later(dst.as_ref()).await;
    assert!(r.is_clean(), "{:#?}", r.problems);
    assert_eq!(r.commits, 1);
}

#[tokio::test]
async fn passes_of_one_replicator_read_only_what_is_new() {
    let src = source().await;
    let dst = Arc::new(MemoryPublisher::new());
    let mut r = Replicator::new(src.clone(), dst.clone(), opts(4));
    let first = r.pass().await.unwrap();
    assert!(first.is_complete());
    // The next pass settles nothing again: it reads no destination object.
    let second = r.pass().await.unwrap();
    assert_eq!((second.copied.objects, second.already_present), (0, 0));
    let new = append(src.clone(), 20, 10, 11).await;
    seal(src.as_ref(), &SystemClock, None).await.unwrap();
    let third = r.pass().await.unwrap();
    assert_eq!(
        (third.copied.pointers, third.copied.seals),
        (new.len() as u64, 1)
    );
    assert_eq!(snapshot(dst.as_ref()).await, snapshot(src.as_ref()).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follow_runs_until_stopped() {
    let src = source().await;
    let dst = Arc::new(MemoryPublisher::new());
    let stop = Stop::new();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let o = ReplicateOptions {
        stop: stop.clone(),
        ..ReplicateOptions::default()
    };
    let task = tokio::spawn(follow(
        src.clone(),
        dst.clone(),
        o,
        std::time::Duration::from_secs(3600),
        move |p| {
            let _ = tx.send(p.copied.objects);
        },
    ));
    let copied = rx.recv().await.unwrap();
    assert!(copied > 0);
    stop.request(); // while it waits an hour for the next pass
    let total = task.await.unwrap().unwrap();
    assert!(total.stopped);
    assert_eq!((total.passes, total.copied.objects), (1, copied));
}

#[tokio::test]
async fn compare_names_what_is_missing_differs_or_extra_on_either_side() {
    let src = source().await;
    let dst = Arc::new(MemoryPublisher::new());
    replicate(src.clone(), dst.clone(), opts(4)).await.unwrap();
    let ptrs = lineage_store::read_pointers(src.as_ref(), None)
        .await
        .unwrap();
    // Behind is not a problem.
    let new = append(src.clone(), 20, 10, 12).await;
    let c = compare(dst.as_ref(), src.as_ref()).await.unwrap();
    assert!(c.is_clean(), "{:#?}", c.problems);
    assert_eq!(
        (c.behind.commits, c.behind.objects),
        // A part, a pointer and an index entry per commit.
        (new.len() as u64, 3 * new.len() as u64)
    );
    seal(src.as_ref(), &SystemClock, None).await.unwrap();
    let c = compare(dst.as_ref(), src.as_ref()).await.unwrap();
    assert!(c.is_clean(), "{:#?}", c.problems);
    assert_eq!((c.relation, c.behind.seals), (Relation::ReplicaBehind, 1));

    let p0 = keys::pointer_key(&ptrs[0].run_id, &ptrs[0].commit_id);
    dst.tamper_remove(&ptrs[1].part_path); // deleted on the replica
    src.tamper_remove(&p0); // deleted on the source
    dst.tamper_put(&ptrs[2].part_path, Bytes::from_static(b"edited")); // edited on the replica
    let p3 = keys::pointer_key(&ptrs[3].run_id, &ptrs[3].commit_id);
    src.tamper_put(&p3, Bytes::from_static(b"edited")); // edited on the source
    dst.tamper_put("run_id=x/stray.parquet", Bytes::from_static(b"x")); // extra on the replica
    src.tamper_put("notes.txt", Bytes::from_static(b"x")); // extra on the source
    let c = compare(dst.as_ref(), src.as_ref()).await.unwrap();
    let got: Vec<(RK, &str)> = c
        .problems
        .iter()
        .map(|p| (p.kind, p.key.as_str()))
        .collect();
    let mut want = vec![
        (RK::OnlyInSource, ptrs[1].part_path.as_str()),
        (RK::OnlyInReplica, p0.as_str()),
        (RK::Differs, ptrs[2].part_path.as_str()),
        (RK::Differs, p3.as_str()),
        (RK::OnlyInReplica, "run_id=x/stray.parquet"),
        (RK::OnlyInSource, "notes.txt"),
    ];
    want.sort();
    assert_eq!(got, want, "{:#?}", c.problems);
    let d = c.problems.iter().find(|p| p.key == p3).unwrap();
    assert!(d.detail.contains(&sha256_hex(b"edited")), "{}", d.detail);

    // A rewritten seal: the chains diverge from it.
    let key = lineage_store::internal::keys::seal_key(2);
    let mut s2 = Seal::from_bytes(&key, &dst.get(&key).await.unwrap().unwrap()).unwrap();
    s2.sealed_utc = "2020-01-01T00:00:00.000000Z".into();
    dst.tamper_put(&key, Bytes::from(s2.to_bytes().unwrap()));
    let c = compare(dst.as_ref(), src.as_ref()).await.unwrap();
    assert_eq!(c.relation, Relation::Diverged);
    assert!(c
        .problems
        .iter()
        .any(|p| p.kind == RK::Diverged && p.key == key));
}
