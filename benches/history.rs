//! History benchmark (a bench binary, not a timed test): what the routine audit operations
//! cost as an archive grows from 10^3 to 10^6 commits.
//!
//! cargo bench --bench history -- [--sizes 1000,10000,100000,1000000] [--concurrency 64]
//!     [--new 100] [--seal-every 1000] [--full-verify-max N]
//!
//! Each store is built through the library (the real writer and sealer; one-row parts, a
//! job that commits once a simulated minute, a seal every `--seal-every` commits, a run per
//! seal) in memory ([`Compact`]). Then `--new` commits are appended, and each operation
//! runs through a metering wrapper ([`MeteredPublisher`]) that counts every request and
//! models S3's latency: 15 ms per GET/PUT, 50 ms per 1,000-key LIST page. The latency is
//! slept on tokio's paused clock, so it is virtual: "modelled" time is the latency on the
//! critical path of the operation's requests (as concurrent as the code makes them), and
//! "local" is the real time spent computing (parsing, hashing, decompressing the bench's
//! store). An operation against S3 would take about modelled + local.
// A bench may read the real clock (clippy.toml keeps the library behind its injected one).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod common;

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::atomic::AtomicI64;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use async_trait::async_trait;
use bytes::Bytes;
use common::{arg, validated, SimClock};
use lineage_store::internal::metered::Latency;
use lineage_store::internal::metered::MeteredPublisher;
use lineage_store::internal::metered::Snapshot;
use lineage_store::prove;
use lineage_store::seal_with;
use lineage_store::verify_proof;
use lineage_store::verify_with;
use lineage_store::AtomicPublisher;
use lineage_store::Clock;
use lineage_store::ObjectInfo;
use lineage_store::ProveAgainst;
use lineage_store::Report;
use lineage_store::SealOptions;
use lineage_store::VerifyOptions;
use lineage_store::{Outcome, Result, Writer};

/// The bench's store: in memory, each object compressed with zstd against a dictionary of
/// its class (a sample part, a sample pointer), because one-row parts are mostly metadata
/// that repeats from part to part: a million commits take about 2 GB instead of 7. Reads
/// return the exact bytes written (decompression is in "local time"). Everything else
/// behaves like the memory store: create-only, sorted listings.
#[derive(Debug)]
struct Compact {
    objects: Mutex<BTreeMap<String, Stored>>,
    dicts: [Vec<u8>; 2],
}

#[derive(Debug)]
struct Stored {
    class: Option<usize>,
    size: usize,
    data: Box<[u8]>,
}

impl Compact {
    fn new(sample_part: Vec<u8>, sample_pointer: Vec<u8>) -> Self {
        Self {
            objects: Mutex::new(BTreeMap::new()),
            dicts: [sample_part, sample_pointer],
        }
    }
    fn class(key: &str) -> Option<usize> {
        if key.ends_with(".parquet") {
            Some(0)
        } else if key.starts_with(lineage_store::internal::keys::COMMITS_PREFIX) {
            Some(1)
        } else {
            None
        }
    }
    fn pack(&self, key: &str, b: &[u8]) -> Stored {
        let class = Self::class(key);
        let data = match class {
            Some(c) => zstd::bulk::Compressor::with_dictionary(3, &self.dicts[c])
                .and_then(|mut z| z.compress(b))
                .unwrap(),
            None => b.to_vec(),
        };
        Stored {
            class,
            size: b.len(),
            data: data.into_boxed_slice(),
        }
    }
    fn unpack(&self, s: &Stored) -> Bytes {
        match s.class {
            Some(c) => Bytes::from(
                zstd::bulk::Decompressor::with_dictionary(&self.dicts[c])
                    .and_then(|mut z| z.decompress(&s.data, s.size))
                    .unwrap(),
            ),
            None => Bytes::copy_from_slice(&s.data),
        }
    }
    fn info(k: &str, s: &Stored) -> ObjectInfo {
        ObjectInfo {
            key: k.to_string(),
            size: s.size as u64,
            modified: None,
            link: None,
        }
    }
}

#[async_trait]
impl AtomicPublisher for Compact {
    fn describe(&self) -> String {
        "bench-memory://".into()
    }
    async fn put_create(&self, key: &str, bytes: Bytes) -> Result<Outcome> {
        let packed = self.pack(key, &bytes);
        let mut m = self.objects.lock().unwrap();
        if m.contains_key(key) {
            return Ok(Outcome::AlreadyExists);
        }
        m.insert(key.to_string(), packed);
        Ok(Outcome::Created)
    }
    async fn get(&self, key: &str) -> Result<Option<Bytes>> {
        let m = self.objects.lock().unwrap();
        Ok(m.get(key).map(|s| self.unpack(s)))
    }
    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes> {
        let b = self
            .get(key)
            .await?
            .ok_or_else(|| lineage_store::Error::NotFound(key.to_string()))?;
        Ok(b.slice(range.start as usize..(range.end as usize).min(b.len())))
    }
    async fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>> {
        let m = self.objects.lock().unwrap();
        Ok(m.range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(k, s)| Self::info(k, s))
            .collect())
    }
    async fn list_after(&self, prefix: &str, after: &str, limit: usize) -> Result<Vec<ObjectInfo>> {
        use std::ops::Bound;
        let start = if after < prefix {
            Bound::Included(prefix.to_string())
        } else {
            Bound::Excluded(after.to_string())
        };
        let m = self.objects.lock().unwrap();
        Ok(m.range((start, Bound::Unbounded))
            .take_while(|(k, _)| k.starts_with(prefix))
            .take(limit)
            .map(|(k, s)| Self::info(k, s))
            .collect())
    }
    async fn delete_temp(&self, _key: &str) -> Result<()> {
        Ok(())
    }
}

/// One measured operation.
struct Row {
    size: u64,
    op: String,
    counts: Snapshot,
    modelled_s: f64,
    local_s: f64,
}

async fn measure<T, F: std::future::Future<Output = T>>(
    m: &MeteredPublisher,
    size: u64,
    op: &str,
    f: F,
) -> (T, Row) {
    m.reset();
    let virt = tokio::time::Instant::now();
    let real = Instant::now();
    let out = f.await;
    let row = Row {
        size,
        op: op.to_string(),
        counts: m.snapshot(),
        modelled_s: virt.elapsed().as_secs_f64(),
        local_s: real.elapsed().as_secs_f64(),
    };
    eprintln!(
        "  {op}: {} requests, modelled {:.3} s, local {:.3} s",
        row.counts.requests(),
        row.modelled_s,
        row.local_s
    );
    (out, row)
}

struct Settings {
    new: usize,
    seal_every: usize,
    concurrency: usize,
    full_verify_max: u64,
}

/// Samples of a part and a pointer, for the compression dictionaries.
async fn samples() -> (Vec<u8>, Vec<u8>) {
    let mem = Arc::new(lineage_store::MemoryPublisher::new());
    let ps = Writer::new(mem.clone())
        .with_batch_rows(1)
        .append(&validated(1, 1), |_| {})
        .await
        .unwrap();
    let part = mem.get(&ps[0].part_path).await.unwrap().unwrap().to_vec();
    let pointer = ps[0].to_bytes().unwrap();
    (part, pointer)
}

async fn build(size: usize, s: &Settings, clock: Arc<SimClock>) -> (Arc<Compact>, String) {
    let (part, pointer) = samples().await;
    let store = Arc::new(Compact::new(part, pointer));
    let t = Instant::now();
    let mut first = String::new();
    let chunks = size.div_ceil(s.seal_every);
    for c in 0..chunks {
        let rows = s.seal_every.min(size - c * s.seal_every);
        let ps = Writer::new(store.clone())
            .with_clock(clock.clone())
            .with_batch_rows(1)
            .append(&validated(rows, 1_000 + c as u64), |_| {})
            .await
            .unwrap();
        if first.is_empty() {
            first = ps[0].commit_id.clone();
        }
        seal_with(
            store.as_ref(),
            clock.as_ref(),
            None,
            &SealOptions::default(),
        )
        .await
        .unwrap();
        if c % 50 == 49 {
            eprintln!(
                "  built {} commits in {:.0} s",
                (c + 1) * s.seal_every,
                t.elapsed().as_secs_f64()
            );
        }
    }
    Writer::new(store.clone())
        .with_clock(clock.clone())
        .with_batch_rows(1)
        .append(&validated(s.new, 7), |_| {})
        .await
        .unwrap();
    eprintln!(
        "  built {size} + {} commits in {:.0} s",
        s.new,
        t.elapsed().as_secs_f64()
    );
    (store, first)
}

async fn run_size(size: usize, s: &Settings) -> Vec<Row> {
    eprintln!("{size} commits:");
    // 2020-01-01, one commit (one clock reading) a minute.
    let clock = Arc::new(SimClock {
        us: AtomicI64::new(1_577_836_800_000_000),
        step_us: 60_000_000,
    });
    let (store, first) = build(size, s, clock.clone()).await;
    let m = MeteredPublisher::new(store, Some(Latency::s3()));
    let n = size as u64;
    let mut rows = Vec::new();

    let (log, r) = measure(&m, n, "log --since-seal", async {
        lineage_store::since_seal(&m, None, None).await
    })
    .await;
    assert_eq!(log.unwrap().len(), s.new);
    rows.push(r);

    let since = VerifyOptions {
        since_seal: Some(None),
        now: clock.now(),
        concurrency: 16,
        ..VerifyOptions::default()
    };
    let (rep, r) = measure(&m, n, "verify --since-seal", verify_with(&m, &since)).await;
    let rep: Report = rep.unwrap();
    assert!(rep.is_clean(), "{:#?}", rep.problems);
    assert_eq!(rep.commits, s.new as u64);
    rows.push(r);

    let (sealed, r) = measure(
        &m,
        n,
        "seal",
        seal_with(&m, clock.as_ref(), None, &SealOptions::default()),
    )
    .await;
    let sealed = sealed.unwrap();
    assert_eq!((sealed.added, sealed.full_scan), (s.new as u64, false));
    rows.push(r);

    let (proof, r) = measure(&m, n, "prove", prove(&m, &first, &ProveAgainst::Newest)).await;
    let proof = proof.unwrap();
    assert!(verify_proof(&proof, &sealed.head, None, None)
        .unwrap()
        .is_ok());
    rows.push(r);

    if n <= s.full_verify_max {
        let full = VerifyOptions {
            now: clock.now(),
            concurrency: s.concurrency,
            ..VerifyOptions::default()
        };
        let op = format!("full verify (--concurrency {})", s.concurrency);
        let (rep, r) = measure(&m, n, &op, verify_with(&m, &full)).await;
        let rep = rep.unwrap();
        assert!(rep.is_clean(), "{:#?}", rep.problems);
        assert_eq!(rep.commits, n + s.new as u64);
        rows.push(r);
    }
    rows
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let sizes: Vec<usize> = arg(&args, "--sizes")
        .unwrap_or_else(|| "1000,10000,100000,1000000".into())
        .split(',')
        .map(|v| v.parse().unwrap())
        .collect();
    let s = Settings {
        new: arg(&args, "--new").map_or(100, |v| v.parse().unwrap()),
        seal_every: arg(&args, "--seal-every").map_or(1000, |v| v.parse().unwrap()),
        concurrency: arg(&args, "--concurrency").map_or(64, |v| v.parse().unwrap()),
        full_verify_max: arg(&args, "--full-verify-max").map_or(u64::MAX, |v| v.parse().unwrap()),
    };
    // Latency is slept on a paused clock: virtual, so a modelled half hour takes no time.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    let mut rows = Vec::new();
    for &size in &sizes {
        rows.extend(rt.block_on(run_size(size, &s)));
    }
    println!("\n| commits | operation | requests (GET / PUT / LIST pages) | MB read | modelled S3 time | local time |");
    println!("|---:|---|---:|---:|---:|---:|");
    for r in &rows {
        let c = &r.counts;
        println!(
            "| {} | {} | {} ({} / {} / {}) | {:.2} | {} | {:.2} s |",
            r.size,
            r.op,
            c.requests(),
            c.gets + c.range_gets,
            c.puts,
            c.list_pages,
            c.bytes_read as f64 / 1e6,
            human(r.modelled_s),
            r.local_s
        );
    }
    // Routine operations at the largest size against the smallest (the 2x target).
    let (lo, hi) = (sizes.iter().min().copied(), sizes.iter().max().copied());
    if let (Some(lo), Some(hi)) = (lo, hi) {
        if lo < hi {
            println!(
                "\n| operation | requests {lo} → {hi} | modelled time {lo} → {hi} | within 2x |"
            );
            println!("|---|---:|---:|---|");
            for op in ["log --since-seal", "verify --since-seal", "seal", "prove"] {
                let find = |n: usize| rows.iter().find(|r| r.size == n as u64 && r.op == op);
                if let (Some(a), Some(b)) = (find(lo), find(hi)) {
                    let (ra, rb) = (a.counts.requests(), b.counts.requests());
                    let ok = rb <= 2 * ra
                        && b.modelled_s + b.local_s <= 2.0 * (a.modelled_s + a.local_s);
                    println!(
                        "| {op} | {ra} → {rb} | {} → {} | {} |",
                        human(a.modelled_s + a.local_s),
                        human(b.modelled_s + b.local_s),
                        if ok { "yes" } else { "NO" }
                    );
                }
            }
        }
    }
}

fn human(s: f64) -> String {
    if s >= 120.0 {
        format!("{:.1} min", s / 60.0)
    } else {
        format!("{s:.2} s")
    }
}
