//! Delta checkpoints (`_delta_log/<N>.checkpoint.parquet`): written by the sealer every
//! `--delta-checkpoint-interval` versions and for a compaction's version, a pure function
//! of the JSON versions (a retry accepts the same rows), copied by `replicate`, and held by
//! `verify` to the replay of the versions they cover. Real readers use them in
//! tests/python/test_delta.py.

use std::sync::Arc;

use bytes::Bytes;
use lineage_store::internal::delta::{parse_actions, version_key, DELTA_LOG_PREFIX};
use lineage_store::internal::delta_checkpoint::{checkpoint_key, decode_rows, Snapshot};
use lineage_store::internal::{write_delta_checkpoint, write_delta_checkpoint_if_due};
use lineage_store::replicate::{replicate, ReplicateOptions};
use lineage_store::AtomicPublisher;
use lineage_store::MemoryPublisher;
use lineage_store::ProblemKind as K;
use lineage_store::SystemClock;
use lineage_store::{seal_with, SealOptions};

use crate::support::audit::{append, of_kind, verify_later};

async fn seal_every(store: &dyn AtomicPublisher, interval: u64) {
    let opts = SealOptions {
        allow_empty: true,
        delta_checkpoint_interval: interval,
        ..SealOptions::default()
    };
    seal_with(store, &SystemClock, None, &opts).await.unwrap();
}

/// The checkpoints listed, by version.
async fn checkpoints(store: &dyn AtomicPublisher) -> Vec<String> {
    store
        .list(DELTA_LOG_PREFIX)
        .await
        .unwrap()
        .into_iter()
        .map(|o| o.key)
        .filter(|k| k.ends_with(".checkpoint.parquet"))
        .collect()
}

/// The table after versions 0..=v, replayed here from the JSON versions.
async fn replayed(store: &dyn AtomicPublisher, v: u64) -> Snapshot {
    let mut s = Snapshot::default();
    for i in 0..=v {
        let b = store.get(&version_key(i)).await.unwrap().unwrap();
        s.apply(i, &parse_actions("v", &b).unwrap()).unwrap();
    }
    s
}

/// Five seals (each over new commits), a checkpoint every 2 versions.
async fn store_with_checkpoints() -> Arc<MemoryPublisher> {
    let mem = Arc::new(MemoryPublisher::new());
    for n in 1..=5u64 {
        append(mem.clone(), 40, 20, n).await;
        seal_every(mem.as_ref(), 2).await;
    }
    mem
}

#[tokio::test]
async fn the_sealer_writes_a_checkpoint_every_interval_holding_the_replayed_table() {
    let mem = store_with_checkpoints().await;
    let store = mem.as_ref();
    assert_eq!(
        checkpoints(store).await,
        [checkpoint_key(2), checkpoint_key(4)]
    );
    for v in [2u64, 4] {
        let have = store.get(&checkpoint_key(v)).await.unwrap().unwrap();
        let want = replayed(store, v).await;
        // Every add of versions 1..=v is live (nothing removed).
        let mut adds = 0;
        for i in 1..=v {
            let b = store.get(&version_key(i)).await.unwrap().unwrap();
            adds += parse_actions("v", &b)
                .unwrap()
                .iter()
                .filter(|(k, _)| k == "add")
                .count();
        }
        assert!(adds > 0);
        assert_eq!(want.files(), adds);
        assert_eq!(
            have.as_ref(),
            want.encode().unwrap().as_slice(),
            "checkpoint {v}"
        );
        let rows = decode_rows("c", have).unwrap();
        let kinds: Vec<&str> = rows
            .iter()
            .map(|r| r.split('"').nth(1).unwrap_or(""))
            .collect();
        let mut expect = vec!["protocol", "metaData", "txn"];
        expect.extend(std::iter::repeat_n("add", adds));
        assert_eq!(kinds, expect, "checkpoint {v}");
        assert!(rows[2].contains(&format!("\"version\":{v}")), "{}", rows[2]);
    }
    let r = verify_later(store).await;
    assert!(r.problems.is_empty(), "{:#?}", r.problems);

    // A retry (a second sealer) finds the same rows there and accepts them.
    let before = store.get(&checkpoint_key(4)).await.unwrap().unwrap();
    assert_eq!(
        write_delta_checkpoint(store, 4).await.unwrap(),
        checkpoint_key(4)
    );
    assert_eq!(
        store.get(&checkpoint_key(4)).await.unwrap().unwrap(),
        before
    );
    // Not due: nothing written. Interval 0: never.
    assert_eq!(
        write_delta_checkpoint_if_due(store, 5, 2, false)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        write_delta_checkpoint_if_due(store, 4, 0, true)
            .await
            .unwrap(),
        None
    );
    assert_eq!(checkpoints(store).await.len(), 2);
}

#[tokio::test]
async fn verify_names_a_checkpoint_that_is_not_the_replay_and_accepts_one_that_is() {
    let mem = store_with_checkpoints().await;
    let store = mem.as_ref();
    // A correct checkpoint at a version the sealer skipped: fine.
    mem.tamper_put(
        &checkpoint_key(3),
        Bytes::from(replayed(store, 3).await.encode().unwrap()),
    );
    // Checkpoint 4 made to hide a file: version 4's first add removed.
    let mut hiding = replayed(store, 3).await;
    let mut v4 = parse_actions("v", &store.get(&version_key(4)).await.unwrap().unwrap()).unwrap();
    let i = v4.iter().position(|(k, _)| k == "add").unwrap();
    let hidden = v4.remove(i).1["path"].as_str().unwrap().to_string();
    hiding.apply(4, &v4).unwrap();
    mem.tamper_remove(&checkpoint_key(4));
    mem.tamper_put(&checkpoint_key(4), Bytes::from(hiding.encode().unwrap()));
    // Checkpoint 2 replaced by bytes that are no Parquet file; one beyond the log.
    mem.tamper_remove(&checkpoint_key(2));
    mem.tamper_put(&checkpoint_key(2), Bytes::from_static(b"PAR1 not really"));
    mem.tamper_put(
        &checkpoint_key(9),
        Bytes::from(replayed(store, 5).await.encode().unwrap()),
    );

    let r = verify_later(store).await;
    let bad = of_kind(&r, K::BadDeltaCheckpoint);
    let keys: Vec<&str> = bad.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        keys,
        [checkpoint_key(2), checkpoint_key(4), checkpoint_key(9)],
        "{:#?}",
        r.problems
    );
    assert!(
        bad[0].1.contains("not a readable checkpoint"),
        "{}",
        bad[0].1
    );
    assert!(
        bad[1].1.contains("lacks 1 rows the replay holds")
            && bad[1].1.contains(&format!("add {}", &hidden[..40])),
        "{}",
        bad[1].1
    );
    assert!(
        bad[2]
            .1
            .contains("covers versions 0..=9, but version 6 is not there"),
        "{}",
        bad[2].1
    );
    assert!(
        of_kind(&r, K::UnknownDeltaObject).is_empty(),
        "{:#?}",
        r.problems
    );
    // A checkpoint far larger than the versions it stands for is named, not read.
    mem.tamper_remove(&checkpoint_key(3));
    mem.tamper_put(&checkpoint_key(3), Bytes::from(vec![0u8; 8 << 20]));
    let big = verify_later(store).await;
    let named = of_kind(&big, K::BadDeltaCheckpoint);
    let three = named.iter().find(|(k, _)| *k == checkpoint_key(3)).unwrap();
    assert!(
        three.1.contains("more than the") && three.1.contains("(not read)"),
        "{}",
        three.1
    );
    mem.tamper_remove(&checkpoint_key(3));
    mem.tamper_put(
        &checkpoint_key(3),
        Bytes::from(replayed(store, 3).await.encode().unwrap()),
    );
    assert_eq!(r.problems.len(), 3, "{:#?}", r.problems);

    // The sealer does not build on a checkpoint (it replays the versions), and a forged
    // one where its next checkpoint goes is left for verify to name: the seal stands.
    mem.tamper_put(&checkpoint_key(6), Bytes::from_static(b"PAR1 forged"));
    append(mem.clone(), 10, 10, 99).await;
    seal_every(store, 2).await;
    assert!(store.get(&version_key(6)).await.unwrap().is_some());
    let r = verify_later(store).await;
    let keys: Vec<String> = of_kind(&r, K::BadDeltaCheckpoint)
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert!(keys.contains(&checkpoint_key(6)), "{keys:?}");
}

#[tokio::test]
async fn replicate_copies_checkpoints_and_the_replica_verifies_clean() {
    let src = store_with_checkpoints().await;
    let dst = Arc::new(MemoryPublisher::new());
    replicate(src.clone(), dst.clone(), ReplicateOptions::default())
        .await
        .unwrap();
    assert_eq!(
        checkpoints(dst.as_ref()).await,
        [checkpoint_key(2), checkpoint_key(4)]
    );
    for v in [2u64, 4] {
        assert_eq!(
            dst.get(&checkpoint_key(v)).await.unwrap(),
            src.get(&checkpoint_key(v)).await.unwrap()
        );
    }
    let r = verify_later(dst.as_ref()).await;
    assert!(r.problems.is_empty(), "{:#?}", r.problems);
}
