//! Lost responses at the HTTP level, through the real `object_store` client: the GCS fake
//! stores a create and then drops the connection, or answers 503 (which object_store
//! retries, the retry finding the object: 412 → AlreadyExists). In each case the object
//! is ours and the writer must read it back and succeed, never publish twice, never
//! accept silently what is not ours. The fake's S3 dialect injects S3's 409
//! `ConditionalRequestConflict`, which is retried, then reported as ambiguous.

use bytes::Bytes;
use lineage_store::verify;
use lineage_store::{Outcome, Writer};

use crate::support;
use crate::support::gcs_fake::{GcsFake, PutFault};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_create_that_landed_reports_already_exists() {
    let fake = GcsFake::start("lost-bucket").await.unwrap();
    let p = support::open_gcs_fake(&fake, "retried_create");
    fake.fail_puts(&[PutFault::ServiceUnavailable]);
    let key = "_lineage/commits/run_id=r/0190f000-0000-7000-8000-000000000041.json";
    // The first PUT landed; object_store retried the 503 and the retry found the object.
    let r = p.put_create(key, Bytes::from_static(b"mine")).await;
    assert_eq!(r.unwrap(), Outcome::AlreadyExists, "{:?}", fake.requests());
    assert_eq!(fake.refused_creates(), 1, "{:?}", fake.requests());
    assert_eq!(p.get(key).await.unwrap(), Some(Bytes::from_static(b"mine")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_writer_reads_back_after_lost_and_retried_creates() {
    let fake = GcsFake::start("lost-bucket").await.unwrap();
    let p = support::open_gcs_fake(&fake, "writer_lost");
    // The first four creates (part, pointer and index entry of the first flush, the part of
    // the second) lose their answers one way or another.
    fake.fail_puts(&[
        PutFault::DropConnection,
        PutFault::ServiceUnavailable,
        PutFault::ServiceUnavailable,
        PutFault::DropConnection,
    ]);
    let w = Writer::new(p.clone())
        .with_batch_rows(10)
        .with_concurrency(1);
    let pointers = w
        .append(&support::batches("run-lost", 40, "lost"), |_| {})
        .await
        .unwrap();
    assert_eq!(pointers.len(), 4);
    assert_eq!(fake.pending_faults(), 0, "every fault fired");
    assert!(
        fake.refused_creates() >= 2,
        "the 503s were retried into 412s"
    );
    let report = verify(p.as_ref()).await.unwrap();
    assert!(report.is_clean(), "{:?}", report.problems);
    assert_eq!((report.commits, report.parts_ok, report.rows), (4, 4, 40));
    // Exactly 13 objects (the identity, 4 parts, 4 pointers, 4 index entries): nothing
    // was published twice under another name.
    let listed = p.list("").await.unwrap();
    assert_eq!(listed.len(), 13, "{listed:?}");
    let index = listed
        .iter()
        .filter(|o| {
            o.key
                .starts_with(lineage_store::internal::keys::INDEX_PREFIX)
                && o.size == 0
        })
        .count();
    assert_eq!(index, 4, "{listed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_response_over_someone_elses_object_is_a_conflict() {
    let fake = GcsFake::start("lost-bucket").await.unwrap();
    let p = support::open_gcs_fake(&fake, "lost_conflict");
    let key = "_lineage/commits/run_id=r/0190f000-0000-7000-8000-000000000042.json";
    p.put_create(key, Bytes::from_static(b"theirs"))
        .await
        .unwrap();
    let e = lineage_store::internal::checked::publish_checked(
        p.as_ref(),
        key,
        Bytes::from_static(b"ours"),
        |have| {
            if have == b"ours" {
                Ok(())
            } else {
                Err("different content".into())
            }
        },
    )
    .await
    .unwrap_err();
    assert_eq!(e.kind(), lineage_store::ErrorKind::Conflict, "{e}");
    assert_eq!(
        p.get(key).await.unwrap(),
        Some(Bytes::from_static(b"theirs"))
    );
}

/// An S3 client on the fake's S3 dialect (path-style, fixed test credentials).
fn s3_on_fake(fake: &GcsFake, test: &str) -> std::sync::Arc<dyn lineage_store::AtomicPublisher> {
    let prefix = support::unique_prefix(test);
    let s3 = object_store::aws::AmazonS3Builder::new()
        .with_bucket_name(fake.bucket())
        .with_endpoint(fake.base_url())
        .with_allow_http(true)
        .with_region("us-east-1")
        .with_access_key_id("test")
        .with_secret_access_key("test")
        .build()
        .unwrap();
    std::sync::Arc::new(
        lineage_store::internal::object::ObjectStorePublisher::new(
            std::sync::Arc::new(s3),
            lineage_store::internal::object::Backend::S3,
            &prefix,
            format!("s3://{}/{prefix}", fake.bucket()),
        )
        .unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_conditional_request_conflicts_are_retried() {
    let fake = GcsFake::start_s3_dialect("s3-fake").await.unwrap();
    let p = s3_on_fake(&fake, "s3_409");
    let key = "_lineage/commits/run_id=r/0190f000-0000-7000-8000-000000000051.json";
    // Two 409s (another conditional write in flight), then the create goes through.
    fake.fail_puts(&[
        PutFault::ConditionalRequestConflict,
        PutFault::ConditionalRequestConflict,
    ]);
    assert_eq!(
        p.put_create(key, Bytes::from_static(b"mine"))
            .await
            .unwrap(),
        Outcome::Created
    );
    assert_eq!(fake.pending_faults(), 0);
    let puts = fake
        .requests()
        .iter()
        .filter(|r| r.starts_with("PUT "))
        .count();
    assert_eq!(puts, 3, "{:?}", fake.requests());
    assert_eq!(p.get(key).await.unwrap(), Some(Bytes::from_static(b"mine")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_conflicts_that_persist_are_ambiguous_and_read_back() {
    let fake = GcsFake::start_s3_dialect("s3-fake").await.unwrap();
    let p = s3_on_fake(&fake, "s3_409_persist");
    let key = "_lineage/commits/run_id=r/0190f000-0000-7000-8000-000000000052.json";
    fake.fail_puts(&[PutFault::ConditionalRequestConflict; 4]);
    let e = p
        .put_create(key, Bytes::from_static(b"mine"))
        .await
        .unwrap_err();
    // Not "already exists": the key is still empty. Kind Io, so the writer reads back.
    assert_eq!(e.kind(), lineage_store::ErrorKind::Io, "{e}");
    assert!(e.to_string().contains("ConditionalRequestConflict"), "{e}");
    assert_eq!(p.get(key).await.unwrap(), None);
    // Through the writer's read-back: absent, so the original error is returned.
    fake.fail_puts(&[PutFault::ConditionalRequestConflict; 4]);
    let e = lineage_store::internal::checked::publish_checked(
        p.as_ref(),
        key,
        Bytes::from_static(b"mine"),
        |_| Ok(()),
    )
    .await
    .unwrap_err();
    assert_eq!(e.kind(), lineage_store::ErrorKind::Io, "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_s3_dialect_of_the_fake_is_create_only_too() {
    let fake = GcsFake::start_s3_dialect("s3-fake").await.unwrap();
    let p = s3_on_fake(&fake, "s3_dialect");
    let key = "run_id=r/target_crs=EPSG:4326/part-0190f000-0000-7000-8000-000000000053.parquet";
    assert_eq!(
        p.put_create(key, Bytes::from_static(b"1")).await.unwrap(),
        Outcome::Created
    );
    assert_eq!(
        p.put_create(key, Bytes::from_static(b"2")).await.unwrap(),
        Outcome::AlreadyExists
    );
    assert_eq!(fake.refused_creates(), 1);
}
