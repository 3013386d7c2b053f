//! Commit keys through the library: derived ids, a retried job after a crash between part
//! and pointer, and refusals that publish nothing (a different payload, an oversize flush).

use std::sync::Arc;

use lineage_store::internal::claim::derived_commit_id;
use lineage_store::internal::faulty::Fault;
use lineage_store::internal::faulty::FaultyPublisher;
use lineage_store::internal::keys;
use lineage_store::internal::keys::KeyKind;
use lineage_store::verify;
use lineage_store::verify_with;
use lineage_store::MemoryPublisher;
use lineage_store::ProblemKind;
use lineage_store::VerifyOptions;
use lineage_store::{AtomicPublisher, ErrorKind, Writer};

use crate::support;

#[test]
fn derived_ids_depend_on_every_input_and_nothing_else() {
    let a = derived_commit_id("run", "EPSG:4326", "key", 0);
    assert_eq!(a, derived_commit_id("run", "EPSG:4326", "key", 0));
    for other in [
        derived_commit_id("run2", "EPSG:4326", "key", 0),
        derived_commit_id("run", "EPSG:3857", "key", 0),
        derived_commit_id("run", "EPSG:4326", "key2", 0),
        derived_commit_id("run", "EPSG:4326", "key", 1),
        // Length-prefixed fields: moving a character between fields changes the id.
        derived_commit_id("ru", "nEPSG:4326", "key", 0),
    ] {
        assert_ne!(a, other);
    }
    assert!(keys::is_commit_id(&a.to_string()));
}

async fn counts(store: &dyn AtomicPublisher) -> (usize, usize, usize) {
    let l = store.list("").await.unwrap();
    let n = |f: &dyn Fn(&KeyKind) -> bool| l.iter().filter(|o| f(&keys::classify(&o.key))).count();
    (
        n(&|k| matches!(k, KeyKind::Part { .. })),
        n(&|k| matches!(k, KeyKind::Pointer { .. })),
        l.iter()
            .filter(|o| o.key.starts_with(keys::COMMIT_KEYS_PREFIX))
            .count(),
    )
}

#[tokio::test]
async fn a_job_that_crashed_between_part_and_pointer_is_retried_to_one_commit_per_flush() {
    let mem = Arc::new(MemoryPublisher::new());
    let faulty = Arc::new(FaultyPublisher::new(mem.clone()));
    // First attempt: every pointer create fails before reaching the store.
    faulty.fail("_lineage/commits/", Fault::Before, 100);
    let key = Some("nightly-2026-07-13".to_string());
    let input = support::batches("run-crash", 24, "crash");
    let w = Writer::new(faulty.clone())
        .with_batch_rows(5)
        .with_commit_key(key.clone());
    let e = w.append(&input, |_| {}).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io, "{e}");
    let (parts, pointers, claims) = counts(mem.as_ref()).await;
    assert!(
        parts >= 1 && pointers == 0 && claims == 1,
        "{parts} {pointers} {claims}"
    );
    // No grace: the orphan parts of the crashed attempt are reported at once.
    let opts = VerifyOptions {
        grace: chrono::Duration::zero(),
        ..VerifyOptions::default()
    };
    let report = verify_with(mem.as_ref(), &opts).await.unwrap();
    assert!(
        report
            .problems
            .iter()
            .any(|p| p.kind == ProblemKind::OrphanPart),
        "orphans are reported: {:?}",
        report.problems
    );

    // The platform retries the job; this time the store answers.
    let w = Writer::new(mem.clone())
        .with_batch_rows(5)
        .with_commit_key(key.clone());
    let pointers = w.append(&input, |_| {}).await.unwrap();
    // 12 rows per CRS, 5 per flush → 3 + 3 flushes.
    assert_eq!(pointers.len(), 6);
    assert_eq!(counts(mem.as_ref()).await, (6, 6, 1));
    let report = verify(mem.as_ref()).await.unwrap();
    assert!(report.is_clean(), "{:?}", report.problems);
    assert_eq!(report.rows, 24);
    for p in &pointers {
        assert_eq!(p.commit_key, key);
    }
}

#[tokio::test]
async fn an_oversize_flush_with_a_key_publishes_nothing_not_even_the_claim() {
    let mem = Arc::new(MemoryPublisher::new());
    let w = Writer::new(mem.clone())
        .with_batch_rows(5)
        .with_max_part_bytes(1000)
        .with_commit_key(Some("k".into()));
    let e = w
        .append(&support::batches("run-big", 10, "big"), |_| {})
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Input, "{e}");
    assert!(
        e.to_string().contains("limit of one create-only PUT"),
        "{e}"
    );
    assert!(mem.list("").await.unwrap().is_empty());
}

#[tokio::test]
async fn the_same_key_with_another_payload_publishes_nothing() {
    let mem = Arc::new(MemoryPublisher::new());
    let key = Some("job-7".to_string());
    Writer::new(mem.clone())
        .with_commit_key(key.clone())
        .append(&support::batches("run-x", 4, "first"), |_| {})
        .await
        .unwrap();
    let before = mem.list("").await.unwrap();
    let e = Writer::new(mem.clone())
        .with_commit_key(key)
        .append(&support::batches("run-y", 9, "second"), |_| {})
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("existing payload sha256") && msg.contains("this payload sha256"),
        "{msg}"
    );
    assert_eq!(mem.list("").await.unwrap(), before);
}
