//! Issue 34, 3: `verify --since-seal` looks at the Delta log after its seal, not only at
//! the versions of its seals: a planted version, a rewritten, future or multi-part
//! checkpoint and a planted `_last_checkpoint` are each named, as a full verify names them.

use std::sync::Arc;

use bytes::Bytes;
use lineage_store::internal::delta::{version_key, DELTA_LOG_PREFIX};
use lineage_store::internal::delta_checkpoint::checkpoint_key;
use lineage_store::AtomicPublisher;
use lineage_store::MemoryPublisher;
use lineage_store::ProblemKind as K;
use lineage_store::{seal_with, SealOptions, SystemClock, VerifyOptions};

use crate::support::audit::{append, later, verify_later};

/// Five seals over new commits, a checkpoint every 2 versions (2 and 4).
async fn store() -> Arc<MemoryPublisher> {
    let mem = Arc::new(MemoryPublisher::new());
    for n in 1..=5u64 {
        append(mem.clone(), 40, 20, n).await;
        let opts = SealOptions {
            delta_checkpoint_interval: 2,
            ..SealOptions::default()
        };
        seal_with(mem.as_ref(), &SystemClock, None, &opts)
            .await
            .unwrap();
    }
    let r = verify_later(mem.as_ref()).await;
    assert!(r.is_clean(), "{:#?}", r.problems);
    mem
}

async fn bytes(mem: &MemoryPublisher, key: &str) -> Bytes {
    mem.get(key).await.unwrap().unwrap()
}

#[tokio::test]
async fn since_seal_names_every_tampering_of_the_delta_log_a_full_verify_names() {
    let multi = format!(
        "{DELTA_LOG_PREFIX}{:020}.checkpoint.0000000001.0000000002.parquet",
        5
    );
    let last = format!("{DELTA_LOG_PREFIX}_last_checkpoint");
    // (what, key named, kind)
    let cases: Vec<(&str, String, K)> = vec![
        ("planted version 6", version_key(6), K::BadDeltaVersion),
        (
            "rewritten checkpoint 4",
            checkpoint_key(4),
            K::BadDeltaCheckpoint,
        ),
        (
            "future checkpoint 9",
            checkpoint_key(9),
            K::BadDeltaCheckpoint,
        ),
        ("multi-part checkpoint", multi, K::UnknownDeltaObject),
        ("planted _last_checkpoint", last, K::UnknownDeltaObject),
    ];
    for (what, key, kind) in cases {
        let mem = store().await;
        let body = match what {
            "planted version 6" => bytes(&mem, &version_key(5)).await,
            "planted _last_checkpoint" => Bytes::from_static(b"{\"version\":4,\"size\":9}"),
            // Another checkpoint's bytes: readable, but not the replay of its versions.
            _ => bytes(&mem, &checkpoint_key(2)).await,
        };
        mem.tamper_put(&key, body);
        for since in [None, Some(Some(5)), Some(Some(4))] {
            let opts = VerifyOptions {
                since_seal: since,
                ..later()
            };
            let r = lineage_store::verify_with(mem.as_ref(), &opts)
                .await
                .unwrap();
            let named: Vec<(K, &str)> = r
                .problems
                .iter()
                .map(|p| (p.kind, p.key.as_str()))
                .collect();
            assert_eq!(
                named,
                [(kind, key.as_str())],
                "{what}, since {since:?}: {:#?}",
                r.problems
            );
        }
    }
}
