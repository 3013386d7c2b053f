//! No false alarms: a clean store of a thousand commits verifies clean, also while appends
//! and seals run concurrently.

use std::sync::Arc;

use lineage_store::seal;
use lineage_store::verify;
use lineage_store::verify_with;
use lineage_store::AtomicPublisher;
use lineage_store::MemoryPublisher;
use lineage_store::PosixPublisher;
use lineage_store::SystemClock;
use lineage_store::VerifyOptions;

use crate::support::audit::{self, append, verify_later};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_commits_verify_clean_also_while_appends_run() {
    let mem = Arc::new(MemoryPublisher::new());
    // 2 runs × 5 target CRSs, 5 rows a commit: about a thousand commits.
    let ptrs = append(mem.clone(), 5_000, 5, 1).await;
    assert!(ptrs.len() >= 1_000, "{} commits", ptrs.len());
    seal(mem.as_ref(), &SystemClock, None).await.unwrap();
    let r = verify_later(mem.as_ref()).await;
    assert!(r.is_clean(), "{:#?}", r.problems);
    assert_eq!(r.commits, ptrs.len() as u64);
    assert_eq!(r.parts_hashed, ptrs.len() as u64);
    assert_eq!(r.rows, 5_000);

    // Appends (and a sealer) racing with verifies: every verify must be clean. The
    // writer publishes parts before pointers, so verifies see parts without pointers.
    let writer = {
        let m = mem.clone();
        tokio::spawn(async move {
            for seed in 2..6 {
                append(m.clone(), 400, 2, seed).await;
                seal(m.as_ref(), &SystemClock, None).await.unwrap();
            }
        })
    };
    let mut rounds = 0;
    while !writer.is_finished() || rounds < 2 {
        let r = verify(mem.as_ref()).await.unwrap();
        assert!(r.is_clean(), "round {rounds}: {:#?}", r.problems);
        rounds += 1;
    }
    writer.await.unwrap();
    let r = verify_later(mem.as_ref()).await;
    assert!(r.is_clean(), "{:#?}", r.problems);
    assert_eq!(r.unsealed_commits, 0);
    assert_eq!(r.seals, 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn posix_verifies_clean_while_appends_run() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn AtomicPublisher> = Arc::new(PosixPublisher::new(dir.path()));
    append(store.clone(), 200, 10, 1).await;
    let writer = {
        let s = store.clone();
        tokio::spawn(async move { append(s, 600, 3, 2).await })
    };
    let mut rounds = 0;
    while !writer.is_finished() || rounds < 2 {
        let r = verify(store.as_ref()).await.unwrap();
        assert!(r.is_clean(), "round {rounds}: {:#?}", r.problems);
        rounds += 1;
    }
    writer.await.unwrap();
    assert!(verify_later(store.as_ref()).await.is_clean());
}

#[tokio::test]
async fn sample_hashes_fewer_parts_and_since_seal_checks_only_the_new() {
    let mem = Arc::new(MemoryPublisher::new());
    let first = append(mem.clone(), 200, 10, 1).await;
    seal(mem.as_ref(), &SystemClock, None).await.unwrap();
    let second = append(mem.clone(), 60, 10, 2).await;
    let total = (first.len() + second.len()) as u64;

    let sampled = |seed| VerifyOptions {
        sample: Some(5),
        sample_seed: Some(seed),
        ..audit::later()
    };
    let a = verify_with(mem.as_ref(), &sampled(7)).await.unwrap();
    assert!(a.is_clean());
    assert_eq!((a.parts_hashed, a.parts_not_hashed), (5, total - 5));
    assert_eq!(a.sample_seed, Some(7));
    assert_eq!(a.parts_ok, total);

    // --since-seal looks only at what came after the newest seal: the unsealed commits
    // (found through the index), never the sealed ones.
    let since = VerifyOptions {
        since_seal: Some(None),
        ..audit::later()
    };
    let s = verify_with(mem.as_ref(), &since).await.unwrap();
    assert!(s.is_clean(), "{:#?}", s.problems);
    assert_eq!(s.since_seal, Some(1));
    assert_eq!(
        (s.commits, s.unsealed_commits),
        (second.len() as u64, second.len() as u64)
    );
    assert_eq!(s.parts_hashed, second.len() as u64);
    assert_eq!(s.parts_not_hashed, 0);

    // A sealed part truncated: --since-seal does not look at it (an earlier full verify
    // vouched for it); the full verify names it.
    let p = &first[0];
    let mut b = mem.get(&p.part_path).await.unwrap().unwrap().to_vec();
    b.truncate(b.len() - 1);
    mem.tamper_put(&p.part_path, bytes::Bytes::from(b));
    let s = verify_with(mem.as_ref(), &since).await.unwrap();
    assert!(s.is_clean(), "{:#?}", s.problems);
    let full = verify_with(mem.as_ref(), &audit::later()).await.unwrap();
    assert_eq!(full.problems.len(), 1, "{:#?}", full.problems);
    assert_eq!(full.problems[0].key, p.part_path);
    // An unsealed part changed: --since-seal names it.
    let q = &second[0];
    let mut b = mem.get(&q.part_path).await.unwrap().unwrap().to_vec();
    b.truncate(b.len() - 1);
    mem.tamper_put(&q.part_path, bytes::Bytes::from(b));
    let s = verify_with(mem.as_ref(), &since).await.unwrap();
    assert_eq!(s.problems.len(), 1, "{:#?}", s.problems);
    assert_eq!(s.problems[0].key, q.part_path);
}

/// A wrapper around a real store that records how parts are read (not a fake: every call
/// goes to the wrapped store).
#[derive(Debug)]
struct Recording {
    inner: Arc<MemoryPublisher>,
    whole_part_reads: std::sync::atomic::AtomicU64,
    largest_range: std::sync::atomic::AtomicU64,
    part_range_reads: std::sync::atomic::AtomicU64,
}

#[async_trait::async_trait]
impl AtomicPublisher for Recording {
    fn describe(&self) -> String {
        self.inner.describe()
    }
    async fn put_create(
        &self,
        key: &str,
        bytes: bytes::Bytes,
    ) -> lineage_store::Result<lineage_store::Outcome> {
        self.inner.put_create(key, bytes).await
    }
    async fn get(&self, key: &str) -> lineage_store::Result<Option<bytes::Bytes>> {
        if key.ends_with(".parquet") {
            self.whole_part_reads.fetch_add(1, Ordering::Relaxed);
        }
        self.inner.get(key).await
    }
    async fn get_range(
        &self,
        key: &str,
        range: std::ops::Range<u64>,
    ) -> lineage_store::Result<bytes::Bytes> {
        self.largest_range
            .fetch_max(range.end - range.start, Ordering::Relaxed);
        if key.ends_with(".parquet") {
            self.part_range_reads.fetch_add(1, Ordering::Relaxed);
        }
        self.inner.get_range(key, range).await
    }
    async fn list(&self, prefix: &str) -> lineage_store::Result<Vec<lineage_store::ObjectInfo>> {
        self.inner.list(prefix).await
    }
    async fn list_after(
        &self,
        prefix: &str,
        after: &str,
        limit: usize,
    ) -> lineage_store::Result<Vec<lineage_store::ObjectInfo>> {
        self.inner.list_after(prefix, after, limit).await
    }
    async fn delete_temp(&self, key: &str) -> lineage_store::Result<()> {
        self.inner.delete_temp(key).await
    }
}

use std::sync::atomic::Ordering;

#[tokio::test]
async fn verify_and_repair_read_parts_in_bounded_ranges_never_whole() {
    use lineage_store::internal::part::HASH_CHUNK_BYTES;
    let mem = Arc::new(MemoryPublisher::new());
    let ptrs = append(mem.clone(), 300, 100, 1).await;
    // Lose one pointer (and the index entry written after it, as a crash between part and
    // pointer leaves it) so that repair has to read a part too.
    let pkey = lineage_store::internal::keys::pointer_key(&ptrs[0].run_id, &ptrs[0].commit_id);
    assert!(mem.tamper_remove(&pkey));
    let ikey = lineage_store::internal::index::key_of(&ptrs[0]).unwrap();
    assert!(mem.tamper_remove(&ikey));
    let rec = Recording {
        inner: mem.clone(),
        whole_part_reads: Default::default(),
        largest_range: Default::default(),
        part_range_reads: Default::default(),
    };
    let r = verify_later(&rec).await;
    // The orphan is the one problem.
    assert_eq!(r.problems.len(), 1, "{:#?}", r.problems);
    // Each recorded part fits one hash chunk: one read serves its hash and its footer
    // checks. The orphan's footer is read as well, tail and footer in one ranged read of
    // the part's end (the footer prefetch); its partition values come from the column
    // chunks' exact statistics, so no column is read for them.
    let reads = rec.part_range_reads.load(Ordering::Relaxed);
    assert_eq!(
        reads,
        // ... and its `sequence` column chunk, decoded for its real row count.
        (ptrs.len() as u64 - 1) + 2,
        "{reads} ranged part reads"
    );
    rec.part_range_reads.store(0, Ordering::Relaxed);
    let now = chrono::Utc::now() + chrono::Duration::days(1);
    let orphan = lineage_store::Adoption::parts(r.problems.iter().map(|p| p.key.clone()));
    let rep = lineage_store::repair(&rec, now, chrono::Duration::minutes(1), &orphan, false)
        .await
        .unwrap();
    assert_eq!(rep.adopted, vec![pkey]);
    assert_eq!(
        rec.part_range_reads.load(Ordering::Relaxed),
        1,
        "repair reads the orphan once"
    );
    assert_eq!(rec.whole_part_reads.load(Ordering::Relaxed), 0);
    let largest = rec.largest_range.load(Ordering::Relaxed);
    assert!(largest > 0 && largest <= HASH_CHUNK_BYTES, "{largest}");
}

#[tokio::test]
async fn the_streamed_hash_equals_the_whole_object_hash_for_any_chunk_size() {
    use lineage_store::internal::digest::Want;
    use lineage_store::internal::part::stream_digests_chunked;
    let mem = Arc::new(MemoryPublisher::new());
    let p = &append(mem.clone(), 200, 200, 1).await[0];
    let seen = std::sync::atomic::AtomicU64::new(0);
    for chunk in [1, 7, 1000, p.size_bytes - 1, p.size_bytes, p.size_bytes * 2] {
        seen.store(0, Ordering::Relaxed);
        let on = |n: u64| {
            seen.fetch_add(n, Ordering::Relaxed);
        };
        let size = p.size_bytes;
        let got = stream_digests_chunked(mem.as_ref(), &p.part_path, size, chunk, Want::BOTH, &on)
            .await
            .unwrap();
        assert_eq!(got.sha256.as_ref(), Some(&p.sha256), "chunk {chunk}");
        assert_eq!(got.blake3, p.blake3, "chunk {chunk}");
        assert_eq!(seen.load(Ordering::Relaxed), p.size_bytes);
    }
}
