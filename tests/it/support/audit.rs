//! Shared helpers of the audit tests: real stores (memory and POSIX), real Parquet parts.

use std::sync::Arc;

use arrow_array::RecordBatch;
use chrono::{Duration, Utc};
use lineage_store::internal::events::Origin;
use lineage_store::internal::events::SourcedBatch;
use lineage_store::internal::validate::Validator;
use lineage_store::verify_with;
use lineage_store::Pointer;
use lineage_store::ProblemKind;
use lineage_store::Report;
use lineage_store::VerifyOptions;
use lineage_store::{AtomicPublisher, Writer};

/// Validated sample events.
pub fn events(rows: usize, runs: usize, seed: u64) -> Vec<RecordBatch> {
    let mut v = Validator::new();
    let mut first = 1u64;
    lineage_store::generate_demo_events(rows, runs, seed)
        .unwrap()
        .into_iter()
        .map(|b| {
            let n = b.num_rows() as u64;
            let out = v
                .validate(&SourcedBatch::new(b, Origin::Rows { first }))
                .unwrap();
            first += n;
            out
        })
        .collect()
}

/// Append `rows` events in commits of at most `batch_rows`.
pub async fn append(
    store: Arc<dyn AtomicPublisher>,
    rows: usize,
    batch_rows: usize,
    seed: u64,
) -> Vec<Pointer> {
    Writer::new(store)
        .with_batch_rows(batch_rows)
        .append(&events(rows, 2, seed), |_| {})
        .await
        .unwrap()
}

/// Options that treat everything as old (no grace), as an auditor a day later would.
pub fn later() -> VerifyOptions {
    VerifyOptions {
        now: Utc::now() + Duration::days(1),
        ..VerifyOptions::default()
    }
}

/// Verify a day later.
pub async fn verify_later(store: &dyn AtomicPublisher) -> Report {
    verify_with(store, &later()).await.unwrap()
}

/// The problems of a kind, as (key, detail).
pub fn of_kind(r: &Report, kind: ProblemKind) -> Vec<(String, String)> {
    r.problems
        .iter()
        .filter(|p| p.kind == kind)
        .map(|p| (p.key.clone(), p.detail.to_string()))
        .collect()
}

/// Assert exactly these kinds (sorted, with repetition) were found.
pub fn assert_kinds(r: &Report, want: &[ProblemKind]) {
    let mut got: Vec<ProblemKind> = r.problems.iter().map(|p| p.kind).collect();
    got.sort();
    let mut want = want.to_vec();
    want.sort();
    assert_eq!(got, want, "problems: {:#?}", r.problems);
}

/// One round of a store's life on a fixed clock: `rows` demo events (one run, `seed`)
/// appended at `at` in commits of `batch` rows, then sealed 30 seconds later (with
/// `signing` when given).
pub async fn append_and_seal(
    store: &Arc<dyn AtomicPublisher>,
    at: chrono::DateTime<Utc>,
    (rows, batch, seed): (usize, usize, u64),
    signing: Option<&ed25519_dalek::SigningKey>,
) {
    Writer::new(store.clone())
        .with_clock(Arc::new(lineage_store::FixedClock(at)))
        .with_batch_rows(batch)
        .append(&events(rows, 1, seed), |_| {})
        .await
        .unwrap();
    lineage_store::seal_with(
        store.as_ref(),
        &lineage_store::FixedClock(at + Duration::seconds(30)),
        signing,
        &lineage_store::SealOptions::default(),
    )
    .await
    .unwrap();
}
