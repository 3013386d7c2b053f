//! Read benchmark (a bench binary, not a timed test): the trusted read path on a local,
//! page-cache-hot store.
//!
//! cargo bench --bench read -- [--events 4000000] [--batch-rows 100000]
//!     [--lookup-parts 2000] [--lookup-rows 1000] [--repeat 3] [--dir DIR]
//!     [--lineage-bin target/release/lineage]
//!
//! 1. **scan throughput**: a store of `--events` demo events in parts of `--batch-rows`
//!    rows is appended and sealed, read once to warm the page cache, then (median of
//!    `--repeat`) `files` (every part fetched and checked, nothing decoded) and `scan`
//!    (every part fetched, checked and decoded into Arrow batches, all 15 columns, the
//!    batches dropped) run through the library; GB/s is of part bytes.
//! 2. **feature lookup**: a store of `--lookup-parts` parts of `--lookup-rows` rows, one
//!    `scan --feature-id F` of a feature that is in one part, with the bloom filters
//!    (footers and filters read, matching parts fetched) and without (`prune` off: every
//!    part fetched and checked), parts opened and time (median of `--repeat`).
//! 3. **size cost**: the same rows encoded with part encoding 2 (no filters) and 3
//!    (filters on feature_id and event_id), at `--lookup-rows` and `--batch-rows` rows.
//! 4. **through the CLI** (with `--lineage-bin target/release/lineage`): whole processes
//!    on the store of 1, page cache hot: `files`, `scan --out F.parquet` (every column and
//!    row: the parts' column chunks copied), `scan --out F.arrow` (decoded) and
//!    `scan --columns ... --out F.parquet` (decoded and encoded again); each run writes a
//!    new file, nothing is deleted between timed runs; median of `--repeat`.
// A bench may read the real clock (clippy.toml keeps the library behind its injected one).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use arrow_array::cast::AsArray;
use futures::StreamExt;
use lineage_store::internal::encode::{encode_with, PartEncoding};
use lineage_store::{
    check_all, open, scan, seal, snapshot, AtomicPublisher, DigestCheck, ReadOptions, ScanOptions,
    SystemClock, Writer,
};

fn arg<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> T {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

async fn build(
    dir: &std::path::Path,
    events: usize,
    batch_rows: usize,
) -> Arc<dyn AtomicPublisher> {
    let store = open(dir.to_str().unwrap(), &Default::default())
        .await
        .unwrap();
    let t = Instant::now();
    let mut left = events;
    let mut seed = 1;
    while left > 0 {
        let n = left.min(1_000_000);
        let batches =
            lineage_store::validate_all(lineage_store::generate_demo_events(n, 4, seed).unwrap())
                .unwrap();
        Writer::new(store.clone())
            .with_batch_rows(batch_rows)
            .append(&batches, |_| {})
            .await
            .unwrap();
        left -= n;
        seed += 1;
    }
    seal(store.as_ref(), &SystemClock, None).await.unwrap();
    eprintln!(
        "built {events} events in parts of {batch_rows} rows under {} in {:.1} s",
        dir.display(),
        t.elapsed().as_secs_f64()
    );
    store
}

async fn scan_once(store: &Arc<dyn AtomicPublisher>, opts: &ScanOptions) -> (u64, u64, u64, f64) {
    let t = Instant::now();
    let snap = snapshot(store.as_ref(), &ReadOptions::default())
        .await
        .unwrap();
    let s = scan(store.clone(), &snap, opts).unwrap();
    let stats = s.stats();
    let mut stream = s.into_stream();
    let mut rows = 0u64;
    while let Some(b) = stream.next().await {
        rows += b.unwrap().num_rows() as u64;
    }
    (
        rows,
        stats.parts_read.load(Ordering::Relaxed),
        stats.bytes_read.load(Ordering::Relaxed),
        t.elapsed().as_secs_f64(),
    )
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let events: usize = arg(&args, "--events", 4_000_000);
    let batch_rows: usize = arg(&args, "--batch-rows", 100_000);
    let lookup_parts: usize = arg(&args, "--lookup-parts", 2_000);
    let lookup_rows: usize = arg(&args, "--lookup-rows", 1_000);
    let repeat: usize = arg(&args, "--repeat", 3).max(1);
    let lineage_bin = args
        .iter()
        .position(|a| a == "--lineage-bin")
        .and_then(|i| args.get(i + 1))
        .map(std::path::PathBuf::from);
    let base = args
        .iter()
        .position(|a| a == "--dir")
        .and_then(|i| args.get(i + 1))
        .map(std::path::PathBuf::from);
    let tmp = tempfile::tempdir_in(base.unwrap_or_else(std::env::temp_dir)).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!("cores: {cores}");
    rt.block_on(async {
        // 1. Throughput.
        let store = build(&tmp.path().join("big"), events, batch_rows).await;
        let snap = snapshot(store.as_ref(), &ReadOptions::default()).await.unwrap();
        let bytes = snap.bytes();
        let parts = snap.parts.len();
        let conc = ScanOptions::default().concurrency;
        check_all(store.as_ref(), &snap, DigestCheck::Fastest, conc).await.unwrap(); // warm
        for (name, check) in [("fastest (BLAKE3)", DigestCheck::Fastest), ("all (sha256 + BLAKE3)", DigestCheck::All)] {
            let mut secs = Vec::new();
            for _ in 0..repeat {
                let t = Instant::now();
                let snap = snapshot(store.as_ref(), &ReadOptions::default()).await.unwrap();
                check_all(store.as_ref(), &snap, check, conc).await.unwrap();
                secs.push(t.elapsed().as_secs_f64());
            }
            let s = median(secs);
            println!(
                "files, digest {name}: {parts} parts, {:.1} MB in {s:.3} s = {:.2} GB/s",
                bytes as f64 / 1e6,
                bytes as f64 / s / 1e9
            );
        }
        for (name, check) in [("fastest (BLAKE3)", DigestCheck::Fastest), ("all (sha256 + BLAKE3)", DigestCheck::All)] {
            let mut secs = Vec::new();
            let mut rows = 0;
            for _ in 0..repeat {
                let opts = ScanOptions { digest: check, ..ScanOptions::default() };
                let (r, _, _, s) = scan_once(&store, &opts).await;
                rows = r;
                secs.push(s);
            }
            let s = median(secs);
            println!(
                "scan, digest {name}, all columns: {rows} rows, {:.1} MB in {s:.3} s = {:.2} GB/s ({:.1} M rows/s)",
                bytes as f64 / 1e6,
                bytes as f64 / s / 1e9,
                rows as f64 / s / 1e6
            );
        }

        // 4. Through the CLI, whole processes.
        if let Some(bin) = &lineage_bin {
            let root = tmp.path().join("big");
            let root = root.to_str().unwrap();
            let out = tmp.path().join("out");
            std::fs::create_dir_all(&out).unwrap();
            let runs: [(&str, Vec<&str>, Option<&str>); 4] = [
                ("files (checked, nothing decoded)", vec!["files"], None),
                ("scan --out F.parquet (chunks copied)", vec!["scan"], Some("parquet")),
                ("scan --out F.arrow (decoded)", vec!["scan"], Some("arrow")),
                (
                    "scan --columns (all 15 named) --out F.parquet (decoded, encoded)",
                    vec!["scan", "--columns", "event_id,run_id,sequence,event_time_utc,stage,event_type,feature_id,source_crs,target_crs,outcome,strategy_index,accuracy_m,rejection_reason,tool_version,audit_tag"],
                    Some("parquet"),
                ),
            ];
            for (k, (name, cmd, ext)) in runs.iter().enumerate() {
                let mut secs = Vec::new();
                for i in 0..=repeat {
                    let mut c = std::process::Command::new(bin);
                    c.args(cmd).args(["--store", root]);
                    if let Some(ext) = ext {
                        let f = out.join(format!("r{k}-{i}.{ext}"));
                        c.args(["--out", f.to_str().unwrap()]);
                    }
                    c.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
                    let t = Instant::now();
                    let status = c.status().unwrap();
                    let s = t.elapsed().as_secs_f64();
                    assert!(status.success(), "{name}: {status}");
                    if i > 0 {
                        secs.push(s); // run 0 warms the cache and the binary
                    }
                }
                let s = median(secs);
                println!(
                    "CLI {name}: {parts} parts, {:.1} MB in {s:.3} s = {:.2} GB/s",
                    bytes as f64 / 1e6,
                    bytes as f64 / s / 1e9
                );
            }
        }

        // 2. Feature lookup over many small parts.
        let small = build(
            &tmp.path().join("lookup"),
            lookup_parts * lookup_rows,
            lookup_rows,
        )
        .await;
        let snap = snapshot(small.as_ref(), &ReadOptions::default()).await.unwrap();
        // A feature of the middle part.
        let mid = &snap.parts[snap.parts.len() / 2].pointer;
        let bytes = small.get(&mid.part_path).await.unwrap().unwrap();
        let b = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(bytes)
            .unwrap()
            .build()
            .unwrap()
            .next()
            .unwrap()
            .unwrap();
        let feature = b
            .column_by_name("feature_id")
            .unwrap()
            .as_string::<i32>()
            .value(0)
            .to_string();
        let store_bytes = snap.bytes();
        check_all(small.as_ref(), &snap, DigestCheck::Fastest, conc).await.unwrap(); // warm
        println!(
            "lookup store: {} parts of {lookup_rows} rows, {:.1} MB; feature {feature}",
            snap.parts.len(),
            store_bytes as f64 / 1e6
        );
        for prune in [true, false] {
            let mut secs = Vec::new();
            let mut seen = (0, 0, 0);
            for _ in 0..repeat {
                let opts = ScanOptions {
                    feature_id: Some(feature.clone()),
                    prune,
                    ..ScanOptions::default()
                };
                let (rows, read, b, s) = scan_once(&small, &opts).await;
                seen = (rows, read, b);
                secs.push(s);
            }
            println!(
                "lookup {}: {} rows, {} of {} parts opened ({:.2} MB read whole), {:.3} s",
                if prune { "with bloom filters" } else { "without (every part read and checked)" },
                seen.0,
                seen.1,
                snap.parts.len(),
                seen.2 as f64 / 1e6,
                median(secs)
            );
        }
    });

    // 3. Size cost of the filters.
    for rows in [lookup_rows, batch_rows] {
        let batches =
            lineage_store::validate_all(lineage_store::generate_demo_events(rows, 1, 9).unwrap())
                .unwrap();
        let batch = arrow_select::concat::concat_batches(&batches[0].schema(), &batches).unwrap();
        let id = "01a00000-0000-7000-8000-000000000001";
        let v2 = encode_with(&batch, id, PartEncoding::V2)
            .unwrap()
            .bytes
            .len();
        let v3 = encode_with(&batch, id, PartEncoding::V3)
            .unwrap()
            .bytes
            .len();
        println!(
            "size of a {rows}-row part: {v2} bytes without filters, {v3} with (+{} bytes, +{:.1} %, {:.1} bytes per row)",
            v3 - v2,
            (v3 - v2) as f64 * 100.0 / v2 as f64,
            (v3 - v2) as f64 / rows as f64
        );
    }
}
