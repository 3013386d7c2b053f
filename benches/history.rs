//! History benchmark (a bench binary, not a timed test): what the routine audit operations
//! cost as an archive grows from 10^3 to 10^6 commits.
//!
//! cargo bench --bench history -- [--sizes 1000,10000,100000,1000000] [--dir DIR]
//!     [--concurrency 64] [--new 100] [--seal-every 1000] [--full-verify-max N]
//!
//! Each store is built through the library (the real writer and sealer; one-row parts, a
//! job that commits once a simulated minute, a seal every `--seal-every` commits, a run per
//! seal) on local disk under DIR. Building stages objects in memory and writes them out
//! without fsync (a staging store, below): durability is not what is measured, and it keeps
//! a million commits to minutes. Then `--new` commits are appended, and each operation runs
//! through a metering wrapper ([`MeteredPublisher`]) that counts every request and models
//! S3's latency: 15 ms per GET/PUT, 50 ms per 1,000-key LIST page. The latency is slept on
//! tokio's paused clock, so it is virtual: "modelled" time is the latency on the critical
//! path of the operation's requests (as concurrent as the code makes them), and "local" is
//! the real time spent computing and reading the local disk. An operation on S3 would take
//! about modelled + local.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use async_trait::async_trait;
use bytes::Bytes;
use chrono::{DateTime, TimeZone, Utc};
use lineage_store::audit::proof::{prove, verify_proof, ProveAgainst};
use lineage_store::audit::verify::{verify_with, Report, VerifyOptions};
use lineage_store::clock::Clock;
use lineage_store::events::{Origin, SourcedBatch};
use lineage_store::history::sealer::{seal_with, SealOptions};
use lineage_store::publish::metered::{Latency, MeteredPublisher, Snapshot};
use lineage_store::publish::posix::PosixPublisher;
use lineage_store::publish::{AtomicPublisher, ObjectInfo};
use lineage_store::validate::Validator;
use lineage_store::{Outcome, Result, Writer};

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

/// Simulated time: every reading advances it by `step` (one commit a minute).
#[derive(Debug)]
struct SimClock {
    us: AtomicI64,
    step_us: i64,
}

impl Clock for SimClock {
    fn now(&self) -> DateTime<Utc> {
        let us = self.us.fetch_add(self.step_us, Ordering::SeqCst);
        Utc.timestamp_micros(us).single().unwrap()
    }
}

/// Building only: new objects in memory over the local-disk store, written out (without
/// fsync) by `flush`. Reads and listings see both layers, exactly like the store itself.
#[derive(Debug)]
struct Staging {
    disk: PosixPublisher,
    root: PathBuf,
    top: Mutex<BTreeMap<String, Bytes>>,
}

impl Staging {
    fn flush(&self) {
        let top = std::mem::take(&mut *self.top.lock().unwrap());
        for (k, b) in top {
            let p = self.root.join(&k);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, &b).unwrap();
        }
    }
    fn info(k: &str, b: &Bytes) -> ObjectInfo {
        ObjectInfo {
            key: k.to_string(),
            size: b.len() as u64,
            modified: Some(Utc::now()),
        }
    }
}

#[async_trait]
impl AtomicPublisher for Staging {
    fn describe(&self) -> String {
        format!("staging({})", self.disk.describe())
    }
    async fn put_create(&self, key: &str, bytes: Bytes) -> Result<Outcome> {
        if self.root.join(key).exists() {
            return Ok(Outcome::AlreadyExists);
        }
        let mut top = self.top.lock().unwrap();
        if top.contains_key(key) {
            return Ok(Outcome::AlreadyExists);
        }
        top.insert(key.to_string(), bytes);
        Ok(Outcome::Created)
    }
    async fn get(&self, key: &str) -> Result<Option<Bytes>> {
        if let Some(b) = self.top.lock().unwrap().get(key) {
            return Ok(Some(b.clone()));
        }
        self.disk.get(key).await
    }
    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes> {
        if let Some(b) = self.top.lock().unwrap().get(key) {
            return Ok(b.slice(range.start as usize..(range.end as usize).min(b.len())));
        }
        self.disk.get_range(key, range).await
    }
    async fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>> {
        let mut v = self.disk.list(prefix).await?;
        v.extend(
            self.top
                .lock()
                .unwrap()
                .range(prefix.to_string()..)
                .take_while(|(k, _)| k.starts_with(prefix))
                .map(|(k, b)| Self::info(k, b)),
        );
        Ok(v)
    }
    async fn list_after(&self, prefix: &str, after: &str, limit: usize) -> Result<Vec<ObjectInfo>> {
        let mut v = self.disk.list_after(prefix, after, limit).await?;
        let from = if after < prefix { prefix } else { after };
        v.extend(
            self.top
                .lock()
                .unwrap()
                .range(from.to_string()..)
                .filter(|(k, _)| k.as_str() > after)
                .take_while(|(k, _)| k.starts_with(prefix))
                .take(limit)
                .map(|(k, b)| Self::info(k, b)),
        );
        v.sort_by(|a, b| a.key.cmp(&b.key));
        v.dedup_by(|a, b| a.key == b.key);
        v.truncate(limit);
        Ok(v)
    }
    async fn delete_temp(&self, key: &str) -> Result<()> {
        self.disk.delete_temp(key).await
    }
}

fn validated(rows: usize, seed: u64) -> Vec<arrow_array::RecordBatch> {
    let mut v = Validator::new();
    lineage_store::demo::generate(rows, 1, seed)
        .unwrap()
        .into_iter()
        .map(|b| {
            v.validate(&SourcedBatch {
                batch: b,
                origin: Origin::Rows { first: 1 },
            })
            .unwrap()
        })
        .collect()
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
    dir: PathBuf,
    new: usize,
    seal_every: usize,
    concurrency: usize,
    full_verify_max: u64,
}

async fn build(root: &Path, size: usize, s: &Settings, clock: Arc<SimClock>) -> String {
    let _ = std::fs::remove_dir_all(root);
    std::fs::create_dir_all(root).unwrap();
    let staging = Arc::new(Staging {
        disk: PosixPublisher::new(root),
        root: root.to_path_buf(),
        top: Mutex::new(BTreeMap::new()),
    });
    let t = Instant::now();
    let mut first = String::new();
    let chunks = size.div_ceil(s.seal_every);
    for c in 0..chunks {
        let rows = s.seal_every.min(size - c * s.seal_every);
        let ps = Writer::new(staging.clone())
            .with_clock(clock.clone())
            .with_batch_rows(1)
            .append(&validated(rows, 1_000 + c as u64), |_| {})
            .await
            .unwrap();
        if first.is_empty() {
            first = ps[0].commit_id.clone();
        }
        seal_with(
            staging.as_ref(),
            clock.as_ref(),
            None,
            &SealOptions::default(),
        )
        .await
        .unwrap();
        if c % 20 == 19 {
            staging.flush();
            eprintln!(
                "  built {} commits in {:.0} s",
                (c + 1) * s.seal_every,
                t.elapsed().as_secs_f64()
            );
        }
    }
    Writer::new(staging.clone())
        .with_clock(clock.clone())
        .with_batch_rows(1)
        .append(&validated(s.new, 7), |_| {})
        .await
        .unwrap();
    staging.flush();
    eprintln!(
        "  built {size} + {} commits in {:.0} s",
        s.new,
        t.elapsed().as_secs_f64()
    );
    first
}

async fn run_size(size: usize, s: &Settings) -> Vec<Row> {
    eprintln!("{size} commits:");
    let root = s.dir.join(format!("store-{size}"));
    // 2020-01-01, one commit (one clock reading) a minute.
    let clock = Arc::new(SimClock {
        us: AtomicI64::new(1_577_836_800_000_000),
        step_us: 60_000_000,
    });
    let first = build(&root, size, s, clock.clone()).await;
    let m = MeteredPublisher::new(Arc::new(PosixPublisher::new(&root)), Some(Latency::s3()));
    let n = size as u64;
    let mut rows = Vec::new();

    let (log, r) = measure(&m, n, "log --since-seal", async {
        lineage_store::history::log::since_seal(&m, None, None).await
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
        dir: arg(&args, "--dir").map_or_else(
            || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/history-bench"),
            PathBuf::from,
        ),
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
        let _ = std::fs::remove_dir_all(s.dir.join(format!("store-{size}")));
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
