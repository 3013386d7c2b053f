//! Retries that resume (`Writer::with_resume`, `append --commit-key K --resume`): a job
//! stopped after two flushes and run again with the same key ends with every event once,
//! the two flushes kept and named as kept, a rebuilt payload reported and not refused.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use futures::TryStreamExt;
use lineage_store::internal::faulty::{Fault, FaultyPublisher};
use lineage_store::{
    scan, snapshot, verify, AtomicPublisher, ErrorKind, MemoryPublisher, ReadOptions, ScanOptions,
    SinkOptions, Writer,
};

use crate::support;

/// The job's events; `day` is the day its timestamps were taken (a rerun rebuilds its
/// events with `now()`: the same events, other timestamps, so another payload).
fn events(n: usize, day: u32) -> Vec<arrow_array::RecordBatch> {
    let text =
        support::ndjson("run-r", n, "job").replace("2026-07-13T", &format!("2026-07-{day}T"));
    lineage_store::internal::input::parse_validated(
        bytes::Bytes::from(text),
        lineage_store::Format::Ndjson,
    )
    .unwrap()
}

/// How often each event id is in the store.
async fn event_ids(store: Arc<dyn AtomicPublisher>) -> BTreeMap<String, usize> {
    let opts = ReadOptions {
        include_unsealed: true,
        ..ReadOptions::default()
    };
    let snap = snapshot(store.as_ref(), &opts).await.unwrap();
    let batches: Vec<_> = scan(store, &snap, &ScanOptions::default())
        .unwrap()
        .into_stream()
        .try_collect()
        .await
        .unwrap();
    let mut ids = BTreeMap::new();
    for b in &batches {
        let col = b.column_by_name("event_id").unwrap().as_string::<i32>();
        for v in col.iter().flatten() {
            *ids.entry(v.to_string()).or_insert(0) += 1;
        }
    }
    ids
}

/// A first attempt that stops after two flushes: the third part's create fails before
/// reaching the store (one commit at a time, so exactly two commits are complete).
async fn stopped_after_two_flushes(mem: Arc<MemoryPublisher>, key: &str) {
    let faulty = Arc::new(FaultyPublisher::new(mem.clone()));
    faulty.fail_after("/part-", 2, Fault::Before);
    let e = Writer::new(faulty.clone())
        .with_batch_rows(5)
        .with_concurrency(1)
        .with_commit_key(Some(key.into()))
        .append(&events(24, 13), |_| {})
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io, "{e}");
    assert_eq!(faulty.fired().len(), 1);
    let ids = event_ids(mem.clone()).await;
    assert_eq!(ids.len(), 10, "two flushes of 5: {ids:?}");
}

#[tokio::test]
async fn a_job_stopped_after_two_flushes_and_resumed_has_every_event_once() {
    let mem = Arc::new(MemoryPublisher::new());
    stopped_after_two_flushes(mem.clone(), "nightly").await;
    // Rerun: same events, rebuilt with other timestamps.
    let w = Writer::new(mem.clone())
        .with_batch_rows(5)
        .with_commit_key(Some("nightly".into()))
        .with_resume(true);
    let done = w.append(&events(24, 14), |_| {}).await.unwrap();
    // 12 rows per CRS, 5 per flush → 3 + 3 flushes, 2 of them kept.
    assert_eq!(done.len(), 6);
    assert_eq!(done.iter().map(|p| p.row_count).sum::<u64>(), 24);
    let kept: Vec<_> = done
        .iter()
        .filter(|p| w.kept(&p.commit_id).is_some())
        .collect();
    assert_eq!(kept.len(), 2);
    for p in kept {
        assert_eq!(w.kept(&p.commit_id).map(|k| k.payload_differs), Some(true));
        // The kept commit is the first attempt's: its events carry the first day.
        assert!(p.min_event_time_utc.starts_with("2026-07-13"), "{p:?}");
    }
    let ids = event_ids(mem.clone()).await;
    assert_eq!(ids.len(), 24);
    assert!(ids.values().all(|&n| n == 1), "{ids:?}");
    let report = verify(mem.as_ref()).await.unwrap();
    assert!(report.is_clean(), "{:?}", report.problems);
    assert_eq!(report.rows, 24);
}

#[tokio::test]
async fn without_resume_the_rebuilt_payload_is_refused_and_nothing_is_added() {
    let mem = Arc::new(MemoryPublisher::new());
    stopped_after_two_flushes(mem.clone(), "nightly").await;
    let before = mem.list("").await.unwrap();
    let e = Writer::new(mem.clone())
        .with_batch_rows(5)
        .with_commit_key(Some("nightly".into()))
        .append(&events(24, 14), |_| {})
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
    assert!(e.to_string().contains("different payload"), "{e}");
    assert_eq!(mem.list("").await.unwrap(), before);
}

#[tokio::test]
async fn resuming_the_same_payload_keeps_flushes_as_identical() {
    let mem = Arc::new(MemoryPublisher::new());
    stopped_after_two_flushes(mem.clone(), "k").await;
    let done = Writer::new(mem.clone())
        .with_batch_rows(5)
        .with_commit_key(Some("k".into()))
        .with_resume(true)
        .append(&events(24, 13), |_| {})
        .await
        .unwrap();
    assert_eq!(done.len(), 6);
    assert_eq!(event_ids(mem.clone()).await.values().sum::<usize>(), 24);
    // Resuming a finished job keeps everything and writes nothing.
    let before = mem.list("").await.unwrap();
    let w = Writer::new(mem.clone())
        .with_batch_rows(5)
        .with_commit_key(Some("k".into()))
        .with_resume(true);
    let again = w.append(&events(24, 13), |_| {}).await.unwrap();
    assert_eq!(again.len(), 6);
    for p in &again {
        assert_eq!(w.kept(&p.commit_id).map(|k| k.payload_differs), Some(false));
    }
    assert_eq!(mem.list("").await.unwrap(), before);
}

#[tokio::test]
async fn resuming_with_another_batch_size_is_refused_not_kept() {
    let mem = Arc::new(MemoryPublisher::new());
    stopped_after_two_flushes(mem.clone(), "k").await;
    let e = Writer::new(mem.clone())
        .with_batch_rows(4)
        .with_concurrency(1)
        .with_commit_key(Some("k".into()))
        .with_resume(true)
        .append(&events(24, 14), |_| {})
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("holds 5 rows")
            && msg.contains("flush 4 rows")
            && msg.contains("not the same flush"),
        "{msg}"
    );
    let ids = event_ids(mem.clone()).await;
    assert!(ids.values().all(|&n| n == 1), "{ids:?}");
}

#[tokio::test]
async fn resume_without_a_key_is_refused() {
    let mem = Arc::new(MemoryPublisher::new());
    let e = Writer::new(mem.clone())
        .with_resume(true)
        .append(&events(4, 13), |_| {})
        .await
        .unwrap_err();
    assert!(e.to_string().contains("--resume needs --commit-key"), "{e}");
}

/// A keyed sink without `max_delay` (Python's `Writer(commit_key=…, resume=True)`): a job
/// that died after two flushes (its sink dropped) is rerun and ends with every event once.
#[tokio::test]
async fn a_keyed_sink_resumes() {
    let mem = Arc::new(MemoryPublisher::new());
    let opts = || SinkOptions {
        batch_rows: 5,
        ..SinkOptions::default()
    };
    let keyed = || Writer::new(mem.clone()).with_commit_key(Some("stream".into()));
    let mut first = keyed().sink(opts()).unwrap();
    for b in events(24, 13) {
        // 10 rows (5 per CRS): two full flushes, then the job dies.
        first.write(b.slice(0, 10)).await.unwrap();
    }
    let landed = first.abort().await.unwrap();
    assert_eq!(landed.len(), 2);
    let w = keyed().with_resume(true);
    let mut again = w.sink(opts()).unwrap();
    for b in events(24, 14) {
        again.write(b).await.unwrap();
    }
    let ps = again.finish().await.unwrap();
    assert_eq!(ps.len(), 6);
    let kept: Vec<_> = ps.iter().filter_map(|p| w.kept(&p.commit_id)).collect();
    assert_eq!(kept.len(), 2);
    assert!(kept.iter().all(|k| k.payload_differs));
    let ids = event_ids(mem.clone()).await;
    assert_eq!((ids.len(), ids.values().sum::<usize>()), (24, 24));
    // Without resume the rerun's differing flush is refused, as before.
    let mut plain = keyed().sink(opts()).unwrap();
    let r = async {
        for b in events(24, 15) {
            plain.write(b).await?;
        }
        plain.finish().await
    }
    .await;
    assert_eq!(r.unwrap_err().kind(), ErrorKind::Conflict);
    // A key with max_delay stays refused: timing would cut the flushes.
    let e = keyed()
        .sink(SinkOptions {
            max_delay: Some(std::time::Duration::from_secs(1)),
            ..opts()
        })
        .unwrap_err();
    assert!(e.to_string().contains("max_delay"), "{e}");
}

#[test]
fn the_cli_names_kept_flushes() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let store = store.to_str().unwrap();
    let day = |d: u32, n: usize| {
        support::ndjson("run-c", n, "cli").replace("2026-07-13T", &format!("2026-07-{d}T"))
    };
    let args = [
        "append",
        "--store",
        store,
        "--batch-rows",
        "5",
        "--commit-key",
        "cli-job",
    ];
    // The first attempt got through its first 10 events (two flushes of 5) only.
    let o = support::lineage(&args, Some(day(13, 10).as_bytes()));
    assert!(o.status.success(), "{:?}", support::text(&o));
    // Without --resume the rebuilt input is refused, as before.
    let o = support::lineage(&args, Some(day(14, 24).as_bytes()));
    assert!(!o.status.success());
    assert!(
        support::text(&o).1.contains("different payload"),
        "{:?}",
        support::text(&o)
    );
    let mut resume = args.to_vec();
    resume.push("--resume");
    let o = support::lineage(&resume, Some(day(14, 24).as_bytes()));
    let (out, err) = support::text(&o);
    assert!(o.status.success(), "{out} {err}");
    assert_eq!(
        out.lines().filter(|l| l.starts_with("kept ")).count(),
        2,
        "{out}"
    );
    assert_eq!(
        out.lines().filter(|l| l.starts_with("committed ")).count(),
        4,
        "{out}"
    );
    assert!(
        out.lines()
            .filter(|l| l.starts_with("kept "))
            .all(|l| l.ends_with(" payload_differs")),
        "{out}"
    );
    assert!(out.contains("6 commits, 24 rows (2 kept from an earlier attempt, 2 of them with a different payload)"), "{out}");
    resume.push("--json");
    let o = support::lineage(&resume, Some(day(14, 24).as_bytes()));
    let (out, _) = support::text(&o);
    let kept: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|v: &serde_json::Value| v["kept"] == true)
        .collect();
    assert_eq!(kept.len(), 6, "{out}");
    assert_eq!(
        kept.iter().filter(|v| v["payload_differs"] == true).count(),
        2
    );
    // --resume alone is refused by the parser.
    let o = support::lineage(&["append", "--store", store, "--resume"], Some(b""));
    assert!(!o.status.success());
}
