//! The Delta log every seal writes (`_delta_log/<N>.json` = seal N): its contents against
//! the seals and pointers, byte-identical versions from re-sealing, races, retries and
//! replicas, completion after a sealer stopped, stores sealed before it, and `verify`
//! naming each bad or unknown object. Real clients read it in tests/python/test_delta.py.

mod checkpoint;
mod since;

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use lineage_store::internal::delta::{self, decode_path, version_key, DELTA_LOG_PREFIX};
use lineage_store::internal::encode::sha256_hex;
use lineage_store::internal::faulty::{Fault, FaultyPublisher};
use lineage_store::internal::keys::{self, KeyKind};
use lineage_store::replicate::{replicate, ReplicateOptions};
use lineage_store::AtomicPublisher;
use lineage_store::MemoryPublisher;
use lineage_store::Pointer;
use lineage_store::ProblemKind as K;
use lineage_store::Seal;
use lineage_store::SystemClock;
use lineage_store::{seal_with, SealOptions, SealOutcome};
use serde_json::Value;

use crate::support::audit::{append, of_kind, verify_later};

/// A seal also when nothing is new (`seal --allow-empty`): these tests count one Delta
/// version per seal they make.
async fn seal(store: &dyn AtomicPublisher) -> lineage_store::Result<SealOutcome> {
    let opts = SealOptions {
        allow_empty: true,
        ..SealOptions::default()
    };
    seal_with(store, &SystemClock, None, &opts).await
}

/// Every object under `_delta_log/`, by key.
async fn log(store: &dyn AtomicPublisher) -> BTreeMap<String, Bytes> {
    let mut out = BTreeMap::new();
    for o in store.list(DELTA_LOG_PREFIX).await.unwrap() {
        out.insert(o.key.clone(), store.get(&o.key).await.unwrap().unwrap());
    }
    out
}

/// The actions of version `v`, as (name, value).
async fn actions(store: &dyn AtomicPublisher, v: u64) -> Vec<(String, Value)> {
    let key = version_key(v);
    let b = store.get(&key).await.unwrap().unwrap();
    delta::parse_actions(&key, &b).unwrap()
}

fn of<'a>(a: &'a [(String, Value)], name: &str) -> Vec<&'a Value> {
    a.iter()
        .filter(|(k, _)| k == name)
        .map(|(_, v)| v)
        .collect()
}

async fn seal_of(store: &dyn AtomicPublisher, n: u64) -> (Seal, String) {
    let b = store.get(&keys::seal_key(n)).await.unwrap().unwrap();
    (Seal::from_bytes("s", &b).unwrap(), sha256_hex(&b))
}

/// Seal 1 over two appends, seal 2 over one more, seal 3 over nothing; then commits no
/// seal covers.
async fn sealed_store() -> (Arc<MemoryPublisher>, Vec<Pointer>, Vec<Pointer>) {
    let mem = Arc::new(MemoryPublisher::new());
    let mut sealed = append(mem.clone(), 300, 50, 1).await;
    sealed.extend(append(mem.clone(), 100, 50, 2).await);
    seal(mem.as_ref()).await.unwrap();
    sealed.extend(append(mem.clone(), 120, 40, 3).await);
    seal(mem.as_ref()).await.unwrap();
    seal(mem.as_ref()).await.unwrap();
    let unsealed = append(mem.clone(), 60, 30, 4).await;
    (mem, sealed, unsealed)
}

#[tokio::test]
async fn every_seal_is_the_delta_version_of_its_number_holding_exactly_its_commits() {
    let (mem, sealed, unsealed) = sealed_store().await;
    let store = mem.as_ref();
    let listed: Vec<String> = log(store).await.into_keys().collect();
    assert_eq!(listed, (0..=3).map(version_key).collect::<Vec<_>>());

    // Version 0: the table.
    let v0 = actions(store, 0).await;
    let names: Vec<&str> = v0.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(names, ["commitInfo", "protocol", "metaData"]);
    let p = of(&v0, "protocol")[0];
    assert_eq!(p["minReaderVersion"], 1);
    assert_eq!(p["minWriterVersion"], 7);
    assert_eq!(
        p["writerFeatures"],
        serde_json::json!(["appendOnly", delta::WRITER_FEATURE])
    );
    let m = of(&v0, "metaData")[0];
    let id = lineage_store::read_identity(store).await.unwrap().unwrap();
    assert_eq!(m["id"], delta::table_id(&id.store_id));
    assert_eq!(
        m["partitionColumns"],
        serde_json::json!(["run_id", "target_crs"])
    );
    assert_eq!(m["configuration"]["delta.appendOnly"], "true");
    let (s1, _) = seal_of(store, 1).await;
    assert_eq!(
        m["createdTime"],
        delta::millis(&s1.sealed_utc, "t").unwrap()
    );
    let schema: Value = serde_json::from_str(m["schemaString"].as_str().unwrap()).unwrap();
    assert_eq!(schema["fields"][3]["type"], "timestamp");

    // Version N: seal N's commits, nothing else.
    let by_key: BTreeMap<String, &Pointer> = sealed
        .iter()
        .map(|p| (keys::pointer_key(&p.run_id, &p.commit_id), p))
        .collect();
    let mut seen = 0;
    for n in 1..=3u64 {
        let a = actions(store, n).await;
        let (s, digest) = seal_of(store, n).await;
        let info = &of(&a, "commitInfo")[0]["lineageStore"];
        assert_eq!(info["sealSeq"], n);
        assert_eq!(info["sealSha256"], digest.as_str());
        assert_eq!(info["treeSize"], s.tree_size);
        assert_eq!(info["root"], s.root.as_str());
        let txn = of(&a, "txn");
        assert_eq!(txn.len(), 1);
        assert_eq!(txn[0]["appId"], delta::SEAL_APP_ID);
        assert_eq!(txn[0]["version"], n);
        assert!(of(&a, "metaData").is_empty(), "no contract change");
        let adds = of(&a, "add");
        assert_eq!(adds.len(), s.entries.len());
        for (add, e) in adds.iter().zip(&s.entries) {
            let p = by_key[&e.key];
            assert_eq!(
                decode_path(add["path"].as_str().unwrap()).unwrap(),
                p.part_path
            );
            assert!(!add["path"].as_str().unwrap().contains(':'));
            assert_eq!(add["size"], p.size_bytes);
            assert_eq!(add["partitionValues"]["run_id"], p.run_id.as_str());
            assert_eq!(add["partitionValues"]["target_crs"], p.target_crs.as_str());
            assert_eq!(add["dataChange"], true);
            assert_eq!(
                add["modificationTime"],
                delta::millis(&p.committed_utc, "t").unwrap()
            );
            assert_eq!(add["tags"][delta::TAG_COMMIT_ID], p.commit_id.as_str());
            assert_eq!(add["tags"][delta::TAG_SHA256], p.sha256.as_str());
            assert_eq!(add["tags"][delta::TAG_POINTER_SHA256], e.sha256.as_str());
            let stats: Value = serde_json::from_str(add["stats"].as_str().unwrap()).unwrap();
            assert_eq!(stats["numRecords"], p.row_count);
            assert_eq!(stats["minValues"]["sequence"], p.first_sequence);
            assert_eq!(stats["maxValues"]["sequence"], p.last_sequence);
            assert!(
                stats["minValues"].get("run_id").is_none(),
                "no partition stats"
            );
            assert!(stats["nullCount"].get("target_crs").is_none());
            assert_eq!(stats["nullCount"]["event_time_utc"], 0);
        }
        seen += adds.len();
    }
    assert_eq!(seen, sealed.len());
    // Seal 3 added nothing: a version with only its provenance.
    let a3 = actions(store, 3).await;
    assert_eq!(
        a3.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
        ["commitInfo", "txn"]
    );
    // Unsealed commits are in no version.
    let all: String = log(store)
        .await
        .values()
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .collect();
    for p in &unsealed {
        assert!(!all.contains(&p.commit_id), "{} is not sealed", p.commit_id);
    }
    let r = verify_later(store).await;
    assert!(r.is_clean(), "{:#?}", r.problems);
}

/// A copy of every object but the Delta log (same identity: a store sealed before Delta
/// versions existed).
async fn without_log(from: &MemoryPublisher) -> Arc<MemoryPublisher> {
    let to = Arc::new(MemoryPublisher::new());
    for o in from.list("").await.unwrap() {
        if !o.key.starts_with(DELTA_LOG_PREFIX) {
            to.tamper_put(&o.key, from.get(&o.key).await.unwrap().unwrap());
        }
    }
    to
}

#[tokio::test]
async fn a_store_sealed_before_delta_gains_the_whole_log_on_its_next_seal_byte_identical() {
    let (mem, _, _) = sealed_store().await;
    let before = log(mem.as_ref()).await;
    let old = without_log(&mem).await;
    // No log at all: sealed before Delta versions existed; not a problem.
    let r = verify_later(old.as_ref()).await;
    assert!(r.is_clean(), "{:#?}", r.problems);
    assert_eq!(r.delta_version, None);
    let s = seal(old.as_ref()).await.unwrap();
    assert_eq!(s.seq, 4);
    let after = log(old.as_ref()).await;
    assert_eq!(after.len(), 5);
    for (k, b) in &before {
        assert_eq!(after.get(k), Some(b), "{k} is byte-identical");
    }
    let r = verify_later(old.as_ref()).await;
    assert!(r.is_clean(), "{:#?}", r.problems);
    assert_eq!(r.delta_version, Some(4));
}

#[tokio::test]
async fn resealing_retries_and_concurrent_sealers_leave_every_version_byte_identical() {
    let (mem, _, _) = sealed_store().await;
    let before = log(mem.as_ref()).await;
    // Re-sealing (nothing new) adds version 4 and leaves 0..3 as they were.
    seal(mem.as_ref()).await.unwrap();
    let after = log(mem.as_ref()).await;
    for (k, b) in &before {
        assert_eq!(after.get(k), Some(b));
    }
    // Lost responses and retried creates at the Delta version: read back, ours.
    append(mem.clone(), 40, 20, 9).await;
    let f = Arc::new(FaultyPublisher::new(mem.clone()));
    f.fail(&version_key(5), Fault::After, 1);
    seal(f.as_ref()).await.unwrap();
    append(mem.clone(), 40, 20, 10).await;
    f.fail(&version_key(6), Fault::AfterAsExisting, 1);
    seal(f.as_ref()).await.unwrap();
    assert_eq!(f.fired(), [version_key(5), version_key(6)]);
    // Two sealers at once: whoever takes seal 7 and 8, each version is written once, and
    // equals what a fresh completion of the same seals writes.
    append(mem.clone(), 40, 20, 11).await;
    let (a, b) = tokio::join!(seal(mem.as_ref()), seal(mem.as_ref()));
    let mut seqs = [a.unwrap().seq, b.unwrap().seq];
    seqs.sort();
    assert_eq!(seqs, [7, 8]);
    let whole = log(mem.as_ref()).await;
    assert_eq!(whole.len(), 9);
    let again = without_log(&mem).await;
    seal(again.as_ref()).await.unwrap();
    let rebuilt = log(again.as_ref()).await;
    for (k, b) in &whole {
        assert_eq!(
            rebuilt.get(k),
            Some(b),
            "{k}: the same bytes from a fresh completion"
        );
    }
    let r = verify_later(mem.as_ref()).await;
    assert!(r.is_clean(), "{:#?}", r.problems);
}

#[tokio::test]
async fn a_sealer_stopped_between_its_seal_and_its_version_is_completed_by_the_next_seal() {
    let (mem, _, _) = sealed_store().await;
    let f = Arc::new(FaultyPublisher::new(mem.clone()));
    f.fail(&version_key(4), Fault::Before, 1);
    let e = seal(f.as_ref()).await.unwrap_err();
    assert!(e.to_string().contains("injected"), "{e}");
    assert!(mem.get(&keys::seal_key(4)).await.unwrap().is_some());
    assert!(mem.get(&version_key(4)).await.unwrap().is_none());
    assert!(mem.get(&keys::head_key(4)).await.unwrap().is_none());
    // Not a problem while unfinished: the newest seal, no marker yet.
    let r = verify_later(mem.as_ref()).await;
    assert!(r.is_clean(), "{:#?}", r.problems);
    assert_eq!(r.unfinished_seal, Some(4));
    assert_eq!((r.delta_version, r.head_seq), (Some(3), Some(4)));
    let s = seal(mem.as_ref()).await.unwrap();
    assert_eq!(s.seq, 5);
    let listed: Vec<String> = log(mem.as_ref()).await.into_keys().collect();
    assert_eq!(listed, (0..=5).map(version_key).collect::<Vec<_>>());
    let r = verify_later(mem.as_ref()).await;
    assert!(r.is_clean(), "{:#?}", r.problems);
}

/// Replace the first add's `field` in version `v` with `value`.
async fn edit_add(mem: &MemoryPublisher, v: u64, field: &str, value: Value) -> String {
    let key = version_key(v);
    let a = delta::parse_actions(&key, &mem.get(&key).await.unwrap().unwrap()).unwrap();
    let mut out = String::new();
    let mut done = false;
    let mut part = String::new();
    for (k, mut val) in a {
        if k == "add" && !done {
            part = decode_path(val["path"].as_str().unwrap()).unwrap();
            val[field] = value.clone();
            done = true;
        }
        out.push_str(&serde_json::to_string(&serde_json::json!({ k: val })).unwrap());
        out.push('\n');
    }
    mem.tamper_put(&key, Bytes::from(out));
    part
}

#[tokio::test]
async fn verify_names_an_edited_add_a_missing_version_and_planted_objects() {
    let (mem, _, _) = sealed_store().await;
    let part = edit_add(&mem, 1, "size", Value::from(12345)).await;
    let r = verify_later(mem.as_ref()).await;
    let bad = of_kind(&r, K::BadDeltaVersion);
    assert_eq!(bad.len(), 1, "{:#?}", r.problems);
    assert_eq!(bad[0].0, version_key(1));
    assert!(
        bad[0].1.contains(&format!("add of {part}: size 12345")),
        "{}",
        bad[0].1
    );

    let (mem, _, _) = sealed_store().await;
    let part = edit_add(
        &mem,
        2,
        "path",
        Value::from("run_id=x/target_crs=EPSG%3A4326/part-y.parquet"),
    )
    .await;
    mem.tamper_remove(&version_key(1));
    mem.tamper_put(
        "_delta_log/_last_checkpoint",
        Bytes::from_static(b"{\"version\":3}"),
    );
    mem.tamper_put(
        &format!("{DELTA_LOG_PREFIX}00000000000000000003.checkpoint.parquet"),
        Bytes::from_static(b"PAR1"),
    );
    mem.tamper_put(&version_key(9), Bytes::from_static(b"{\"add\":{}}\n"));
    let r = verify_later(mem.as_ref()).await;
    assert_eq!(
        of_kind(&r, K::MissingDeltaVersion)
            .into_iter()
            .map(|(k, _)| k)
            .collect::<Vec<_>>(),
        [version_key(1)]
    );
    let bad = of_kind(&r, K::BadDeltaVersion);
    let keys_bad: Vec<&str> = bad.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        keys_bad,
        [version_key(2), version_key(9)],
        "{:#?}",
        r.problems
    );
    assert!(
        bad[0].1.contains(&format!("no add for {part}")),
        "{}",
        bad[0].1
    );
    assert!(
        bad[0].1.contains(
            "add of run_id=x/target_crs=EPSG:4326/part-y.parquet: not a part the seal seals"
        ),
        "{}",
        bad[0].1
    );
    assert!(bad[1].1.contains("no seal 9"), "{}", bad[1].1);
    let unknown: Vec<String> = of_kind(&r, K::UnknownDeltaObject)
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(unknown, ["_delta_log/_last_checkpoint".to_string()]);
    // A checkpoint under our name is held to the versions it covers (version 1 is gone).
    let cp = of_kind(&r, K::BadDeltaCheckpoint);
    assert_eq!(cp.len(), 1, "{:#?}", r.problems);
    assert_eq!(
        cp[0].0,
        format!("{DELTA_LOG_PREFIX}00000000000000000003.checkpoint.parquet")
    );
    assert!(
        cp[0]
            .1
            .contains("covers versions 0..=3, but version 1 is not there"),
        "{}",
        cp[0].1
    );
    assert!(
        of_kind(&r, K::ForeignObject).is_empty(),
        "{:#?}",
        r.problems
    );
    // A foreign writer's version 4 takes the number seal 4 needs: seal 4 is published and
    // complete without its version (create-only: it cannot be replaced), naming it.
    mem.tamper_put(&version_key(4), Bytes::from_static(b"{\"add\":{}}\n"));
    let s = seal(mem.as_ref()).await.unwrap();
    let c = s.delta_conflict.expect("named");
    assert_eq!((s.seq, c.key.as_str()), (4, version_key(4).as_str()));
    assert!(
        c.reason.contains("other bytes than seal 4 gives"),
        "{}",
        c.reason
    );
    assert!(mem.get(&keys::head_key(4)).await.unwrap().is_some());
}

#[tokio::test]
async fn delta_keys_are_classified_and_never_foreign() {
    assert_eq!(keys::classify(&version_key(3)), KeyKind::DeltaVersion(3));
    assert_eq!(
        keys::classify("_delta_log/_last_checkpoint"),
        KeyKind::DeltaOther
    );
    assert_eq!(keys::classify("_delta_log/3.json"), KeyKind::DeltaOther);
    assert_eq!(
        keys::classify(
            "_delta_log/.00000000000000000003.json.0190b2f3000070008000000000000001.tmp"
        ),
        KeyKind::Temp
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_replica_holds_the_same_log_byte_for_byte() {
    let (mem, _, _) = sealed_store().await;
    mem.tamper_put("_delta_log/_last_checkpoint", Bytes::from_static(b"{}"));
    let dst = Arc::new(MemoryPublisher::new());
    let opts = ReplicateOptions {
        concurrency: 4,
        ..ReplicateOptions::default()
    };
    replicate(mem.clone(), dst.clone(), opts).await.unwrap();
    let mut src = log(mem.as_ref()).await;
    src.remove("_delta_log/_last_checkpoint");
    assert_eq!(
        log(dst.as_ref()).await,
        src,
        "every version, and nothing foreign"
    );
    let r = verify_later(dst.as_ref()).await;
    assert!(r.is_clean(), "{:#?}", r.problems);
}

#[tokio::test]
async fn verify_since_seal_checks_the_versions_of_the_seals_it_looks_at() {
    let (mem, _, _) = sealed_store().await;
    append(mem.clone(), 40, 20, 5).await;
    seal(mem.as_ref()).await.unwrap();
    let since = |n: u64| lineage_store::VerifyOptions {
        since_seal: Some(Some(n)),
        ..crate::support::audit::later()
    };
    let clean = lineage_store::verify_with(mem.as_ref(), &since(2))
        .await
        .unwrap();
    assert!(clean.is_clean(), "{:#?}", clean.problems);
    let part = edit_add(&mem, 4, "size", Value::from(7)).await;
    mem.tamper_remove(&version_key(3));
    let r = lineage_store::verify_with(mem.as_ref(), &since(2))
        .await
        .unwrap();
    assert_eq!(
        of_kind(&r, K::MissingDeltaVersion)
            .into_iter()
            .map(|(k, _)| k)
            .collect::<Vec<_>>(),
        [version_key(3)]
    );
    let bad = of_kind(&r, K::BadDeltaVersion);
    assert_eq!(bad.len(), 1, "{:#?}", r.problems);
    assert_eq!(bad[0].0, version_key(4));
    assert!(
        bad[0].1.contains(&format!("add of {part}: size 7")),
        "{}",
        bad[0].1
    );
}

#[tokio::test]
async fn a_seals_delta_version_costs_three_reads_a_put_and_two_requests_per_commit() {
    use lineage_store::internal::complete_delta_log;
    use lineage_store::internal::metered::MeteredPublisher;
    let (mem, _, _) = sealed_store().await;
    let new = append(mem.clone(), 100, 1, 8).await;
    seal(mem.as_ref()).await.unwrap();
    let v = version_key(4);
    let want = mem.get(&v).await.unwrap().unwrap();
    mem.tamper_remove(&v);
    let m = MeteredPublisher::new(mem.clone(), None);
    assert_eq!(complete_delta_log(&m, 4).await.unwrap(), 1);
    assert_eq!(mem.get(&v).await.unwrap().unwrap(), want);
    let s = m.snapshot();
    // The seal, the store id and version 3; each new pointer; each new part's footer
    // (one ranged read of its end holds the footer); one PUT.
    // Seal 4 sealed these and the commits sealed_store left unsealed.
    let n = seal_of(mem.as_ref(), 4).await.0.entries.len() as u64;
    assert!(n > new.len() as u64);
    assert_eq!(
        (s.gets, s.range_gets, s.puts, s.list_pages),
        (3 + n, n, 1, 0),
        "{s:?}"
    );
    println!(
        "Delta version of a seal of {n} commits: {s:?}, {} bytes",
        want.len()
    );
}
