//! The library's streaming `Sink`: validation on arrival, flushes by size and by
//! `max_delay` (an injected clock, no sleeping), back-pressure on flushes in flight, and
//! what `finish`, `abort` and a plain drop leave in the store.

use std::ops::Range;
use std::sync::{Arc, Mutex};

use arrow_array::RecordBatch;
use async_trait::async_trait;
use bytes::Bytes;
use chrono::TimeZone;
use lineage_store::internal::events::EventRow;
use lineage_store::internal::input::parse_validated;
use lineage_store::internal::keys;
use lineage_store::internal::keys::KeyKind;
use lineage_store::verify;
use lineage_store::Format;
use lineage_store::ManualClock;
use lineage_store::MemoryPublisher;
use lineage_store::ObjectInfo;
use lineage_store::Outcome;
use lineage_store::SeqIds;
use lineage_store::SinkOptions;
use lineage_store::{AtomicPublisher, ErrorKind, Writer};

use crate::support::sample;

fn rows(run: &str, crs: &str, from: i64, n: i64) -> RecordBatch {
    let v: Vec<_> = (from..from + n)
        .map(|i| sample::event(i, run, crs))
        .collect();
    let mut b = parse_validated(Bytes::from(sample::ndjson(&v)), Format::Ndjson).unwrap();
    assert_eq!(b.len(), 1);
    b.remove(0)
}

fn t0() -> chrono::DateTime<chrono::Utc> {
    chrono::Utc.with_ymd_and_hms(2026, 7, 13, 8, 0, 0).unwrap()
}

async fn parts(store: &dyn AtomicPublisher) -> Vec<String> {
    let mut v: Vec<String> = store
        .list("")
        .await
        .unwrap()
        .into_iter()
        .filter(|o| matches!(keys::classify(&o.key), KeyKind::Part { .. }))
        .map(|o| o.key)
        .collect();
    v.sort();
    v
}

fn opts(batch_rows: usize) -> SinkOptions {
    SinkOptions {
        batch_rows,
        ..SinkOptions::default()
    }
}

#[tokio::test]
async fn full_partitions_are_committed_as_they_fill_and_finish_returns_every_pointer() {
    let mem = Arc::new(MemoryPublisher::new());
    let w = Writer::new(mem.clone()).with_ids(Arc::new(SeqIds::default()));
    let mut sink = w.sink(opts(10)).unwrap();
    sink.write(rows("run-a", "EPSG:4326", 1, 7)).await.unwrap();
    sink.write(rows("run-b", "EPSG:4326", 1, 4)).await.unwrap();
    assert_eq!(sink.buffered_rows(), 11);
    sink.write(rows("run-a", "EPSG:4326", 8, 5)).await.unwrap(); // run-a reaches 12
    assert_eq!(sink.buffered_rows(), 6);
    sink.write_events(&[EventRow {
        event_id: Some("00000000-0000-4000-8000-000000009999"),
        run_id: Some("run-b"),
        sequence: Some(99),
        event_time_us: Some(1_783_929_600_000_000),
        stage: Some("reproject"),
        event_type: Some("crs_transform"),
        feature_id: Some("f:1"),
        source_crs: Some("epsg:4258"),
        target_crs: Some("urn:ogc:def:crs:EPSG::4326"),
        outcome: Some("transformed"),
        strategy_index: Some(0),
        accuracy_m: Some(0.5),
        rejection_reason: None,
        tool_version: Some("geostd/2.4.1"),
        audit_tag: None,
        ..EventRow::default()
    }])
    .await
    .unwrap();
    let ps = sink.finish().await.unwrap();
    let summary: Vec<(String, u64)> = ps.iter().map(|p| (p.run_id.clone(), p.row_count)).collect();
    assert_eq!(
        summary,
        [
            ("run-a".to_string(), 10),
            ("run-a".to_string(), 2),
            ("run-b".to_string(), 5)
        ]
    );
    assert_eq!(parts(mem.as_ref()).await.len(), 3);
    assert!(verify(mem.as_ref()).await.unwrap().is_clean());
}

#[tokio::test]
async fn a_refused_batch_names_row_and_field_and_nothing_of_it_is_kept() {
    let mem = Arc::new(MemoryPublisher::new());
    let mut sink = Writer::new(mem.clone()).sink(opts(5)).unwrap();
    sink.write(rows("run-a", "EPSG:4326", 1, 3)).await.unwrap();
    // Eight rows that would fill the partition, the sixth with an unknown CRS.
    let v: Vec<_> = (10..18)
        .map(|i| sample::event(i, "run-a", if i == 15 { "EPSG:99999" } else { "EPSG:4326" }))
        .collect();
    let raw =
        lineage_store::internal::input::parse(Bytes::from(sample::ndjson(&v)), Format::Ndjson)
            .unwrap();
    let e = sink.write(raw[0].batch.clone()).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Input);
    assert!(
        e.to_string().starts_with("row 6, field `target_crs`"),
        "{e}"
    );
    assert_eq!(sink.buffered_rows(), 3);
    assert!(mem.list("").await.unwrap().is_empty());
    // Still usable.
    sink.write(rows("run-a", "EPSG:4326", 4, 2)).await.unwrap();
    let ps = sink.finish().await.unwrap();
    assert_eq!(ps.iter().map(|p| p.row_count).collect::<Vec<_>>(), [5]);
}

#[tokio::test]
async fn max_delay_commits_a_partition_by_its_oldest_row_on_the_injected_clock() {
    let mem = Arc::new(MemoryPublisher::new());
    let clock = Arc::new(ManualClock::new(t0()));
    let w = Writer::new(mem.clone()).with_clock(clock.clone());
    let mut sink = w
        .sink(SinkOptions {
            batch_rows: 1000,
            max_delay: Some(std::time::Duration::from_secs(60)),
            ..SinkOptions::default()
        })
        .unwrap();
    assert_eq!(sink.next_deadline(), None);
    sink.write(rows("run-a", "EPSG:4326", 1, 3)).await.unwrap();
    assert_eq!(
        sink.next_deadline(),
        Some(t0() + chrono::Duration::seconds(60))
    );
    clock.advance(chrono::Duration::seconds(40));
    sink.write(rows("run-b", "EPSG:3857", 1, 2)).await.unwrap();
    sink.tick().await.unwrap();
    assert!(
        parts(mem.as_ref()).await.is_empty(),
        "nothing is due at 40 s"
    );
    clock.advance(chrono::Duration::seconds(20)); // run-a's oldest row is 60 s old
    sink.write(rows("run-a", "EPSG:4326", 4, 1)).await.unwrap(); // joins the due flush
    assert_eq!(sink.in_flight() + sink.committed().len(), 1);
    assert_eq!(sink.buffered_rows(), 2, "run-b's rows wait on");
    assert_eq!(
        sink.next_deadline(),
        Some(t0() + chrono::Duration::seconds(100))
    );
    clock.advance(chrono::Duration::seconds(39));
    sink.tick().await.unwrap();
    assert_eq!(sink.buffered_rows(), 2);
    clock.advance(chrono::Duration::seconds(1));
    sink.tick().await.unwrap();
    assert_eq!(sink.buffered_rows(), 0);
    assert_eq!(sink.in_flight() + sink.committed().len(), 2);
    let ps = sink.finish().await.unwrap();
    assert_eq!(ps.iter().map(|p| p.row_count).collect::<Vec<_>>(), [4, 2]);
}

/// A memory store whose creates wait until the test lets them through (a test wrapper
/// around the real in-memory backend, to hold commits in flight).
#[derive(Debug)]
struct Gated {
    inner: MemoryPublisher,
    gate: tokio::sync::Semaphore,
    creates: Mutex<Vec<String>>,
}

#[async_trait]
impl AtomicPublisher for Gated {
    fn describe(&self) -> String {
        "gated memory".into()
    }
    async fn put_create(&self, key: &str, bytes: Bytes) -> lineage_store::Result<Outcome> {
        self.gate.acquire().await.unwrap().forget();
        self.creates.lock().unwrap().push(key.to_string());
        self.inner.put_create(key, bytes).await
    }
    async fn get(&self, key: &str) -> lineage_store::Result<Option<Bytes>> {
        self.inner.get(key).await
    }
    async fn get_range(&self, key: &str, range: Range<u64>) -> lineage_store::Result<Bytes> {
        self.inner.get_range(key, range).await
    }
    async fn list(&self, prefix: &str) -> lineage_store::Result<Vec<ObjectInfo>> {
        self.inner.list(prefix).await
    }
    async fn list_after(
        &self,
        prefix: &str,
        after: &str,
        limit: usize,
    ) -> lineage_store::Result<Vec<ObjectInfo>> {
        self.inner.list_after(prefix, after, limit).await
    }
    async fn delete_temp(&self, key: &str) -> lineage_store::Result<()> {
        self.inner.delete_temp(key).await
    }
}

#[tokio::test]
async fn write_waits_while_max_in_flight_commits_are_in_flight() {
    let store = Arc::new(Gated {
        inner: MemoryPublisher::new(),
        // One permit: the store's identity, created before the first commit's objects.
        gate: tokio::sync::Semaphore::new(1),
        creates: Mutex::new(Vec::new()),
    });
    let mut sink = Writer::new(store.clone())
        .sink(SinkOptions {
            batch_rows: 5,
            max_in_flight: 1,
            ..SinkOptions::default()
        })
        .unwrap();
    // The first flush takes the only slot and waits at the gate.
    sink.write(rows("run-a", "EPSG:4326", 1, 5)).await.unwrap();
    {
        let second = sink.write(rows("run-b", "EPSG:4326", 1, 5));
        tokio::pin!(second);
        assert!(
            futures::poll!(second.as_mut()).is_pending(),
            "write must wait for a slot"
        );
        // The store's identity (created once, before the first part), then part, pointer
        // and commit-index entry of the first commit may pass: the second write proceeds.
        store.gate.add_permits(4);
        second.await.unwrap();
    }
    store.gate.add_permits(3);
    let ps = sink.finish().await.unwrap();
    assert_eq!(ps.len(), 2);
    let creates = store.creates.lock().unwrap().clone();
    assert!(
        creates[0] == "_lineage/store.json"
            && creates[1].starts_with("run_id=run-a/")
            && creates[3].starts_with("_lineage/index/")
            && creates[4].starts_with("run_id=run-b/"),
        "{creates:?}"
    );
}

/// Collects what `tracing` logs in this thread.
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Logs {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_sink_dropped_without_finish_publishes_nothing_partial_and_warns() {
    let logs = Logs::default();
    let l = logs.clone();
    let sub = tracing_subscriber::fmt()
        .with_writer(move || l.clone())
        .with_ansi(false)
        .finish();
    let _g = tracing::subscriber::set_default(sub);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let mem = Arc::new(MemoryPublisher::new());
    {
        let _e = rt.enter();
        let mut sink = Writer::new(mem.clone()).sink(opts(100)).unwrap();
        rt.block_on(sink.write(rows("run-a", "EPSG:4326", 1, 30)))
            .unwrap();
        rt.block_on(sink.write(rows("run-b", "EPSG:4326", 1, 12)))
            .unwrap();
        drop(sink);
    }
    assert!(rt.block_on(mem.list("")).unwrap().is_empty());
    let text = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    assert!(
        text.contains("WARN")
            && text.contains("sink dropped without finish()")
            && text.contains("rows=42"),
        "{text}"
    );
}

#[tokio::test]
async fn flush_commits_short_partitions_and_waits_for_them() {
    let mem = Arc::new(MemoryPublisher::new());
    let mut sink = Writer::new(mem.clone()).sink(opts(100)).unwrap();
    sink.write(rows("run-a", "EPSG:4326", 1, 3)).await.unwrap();
    sink.write(rows("run-b", "EPSG:4326", 1, 2)).await.unwrap();
    sink.flush().await.unwrap();
    assert_eq!((sink.in_flight(), sink.committed().len()), (0, 2));
    assert_eq!(parts(mem.as_ref()).await.len(), 2);
    sink.write(rows("run-a", "EPSG:4326", 4, 1)).await.unwrap();
    assert_eq!(sink.finish().await.unwrap().len(), 3);
}

#[tokio::test]
async fn abort_discards_buffered_rows_and_keeps_landed_commits() {
    let mem = Arc::new(MemoryPublisher::new());
    let mut sink = Writer::new(mem.clone()).sink(opts(4)).unwrap();
    sink.write(rows("run-a", "EPSG:4326", 1, 6)).await.unwrap();
    let landed = sink.abort().await.unwrap();
    assert_eq!(landed.iter().map(|p| p.row_count).collect::<Vec<_>>(), [4]);
    assert_eq!(parts(mem.as_ref()).await.len(), 1);
    assert!(verify(mem.as_ref()).await.unwrap().is_clean());
}

#[tokio::test]
async fn a_writer_with_a_commit_key_cannot_open_a_sink_with_max_delay() {
    // Without max_delay a keyed sink opens (tests/it/write/resume.rs).
    let w = Writer::new(Arc::new(MemoryPublisher::new())).with_commit_key(Some("k".into()));
    let e = w
        .sink(SinkOptions {
            max_delay: Some(std::time::Duration::from_secs(1)),
            ..SinkOptions::default()
        })
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Input);
}

#[test]
fn a_sink_outside_a_runtime_is_a_usage_error() {
    let w = Writer::new(Arc::new(MemoryPublisher::new()));
    let e = w.sink(SinkOptions::default()).unwrap_err();
    assert!(e.to_string().contains("tokio runtime"), "{e}");
}
