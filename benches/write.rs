//! Write-path benchmark (a bench binary, not a timed test): the same input and flush
//! sizes as ../shared/bench (the design note's writer and the pyarrow / DuckDB / delta-rs
//! anchors), on a fresh local-disk store per run.
//!
//! cargo bench --bench write -- [--events FILE.arrow|.ndjson] [--rows N] [--batch-rows A,B,..] [--repeats R]
//!
//! Without --events it generates --rows events with the demo generator. Prints one JSON
//! line per (batch size, repeat) and a median table. Timing covers `Writer::append` only
//! (like the harness, which excludes loading the events); parse + validate is reported
//! separately. Unlike the harness's engines, every part and directory is fsynced.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Instant;

use lineage_store::audit::verify::verify;
use lineage_store::events::{Origin, SourcedBatch};
use lineage_store::input;
use lineage_store::publish::posix::PosixPublisher;
use lineage_store::validate::Validator;
use lineage_store::Writer;

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let repeats: usize = arg(&args, "--repeats").map_or(3, |v| v.parse().unwrap());
    let sizes: Vec<usize> = arg(&args, "--batch-rows")
        .unwrap_or_else(|| "1000,10000,100000".into())
        .split(',')
        .map(|s| s.parse().unwrap())
        .collect();
    let t0 = Instant::now();
    let batches = match arg(&args, "--events") {
        Some(path) => {
            let p = std::path::Path::new(&path);
            let (bytes, fmt) = input::read_input(Some(p), None).unwrap();
            input::parse_validated(bytes, fmt).unwrap()
        }
        None => {
            let rows: usize = arg(&args, "--rows").map_or(1_000_000, |v| v.parse().unwrap());
            let mut v = Validator::new();
            lineage_store::demo::generate(rows, 3, 42)
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
    };
    let load_s = t0.elapsed().as_secs_f64();
    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    eprintln!("loaded + validated {rows} events in {load_s:.2} s");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut table = Vec::new();
    for &batch_rows in &sizes {
        // Where the time goes, single-threaded: grouping/cutting, then encode + sha256.
        let mut plan_s = f64::MAX;
        let mut flushes = Vec::new();
        for _ in 0..5 {
            let t = Instant::now();
            flushes = lineage_store::writer::plan_flushes(&batches, batch_rows).unwrap();
            plan_s = plan_s.min(t.elapsed().as_secs_f64());
        }
        let t = Instant::now();
        for f in &flushes {
            std::hint::black_box(
                lineage_store::encode::encode(&f.batch, "019b76da-a800-7000-8000-000000000001")
                    .unwrap(),
            );
        }
        eprintln!(
            "batch {batch_rows}: plan (best of 5) {plan_s:.3} s, encode+hash (1 thread) {:.3} s",
            t.elapsed().as_secs_f64()
        );
        let mut secs = Vec::new();
        let mut last = (0usize, 0u64, 0.0f64);
        for rep in 0..repeats {
            let dir = tempfile::tempdir().unwrap();
            let store = Arc::new(PosixPublisher::new(dir.path()));
            let w = Writer::new(store.clone()).with_batch_rows(batch_rows);
            let t = Instant::now();
            let ps = rt.block_on(w.append(&batches, |_| {})).unwrap();
            let s = t.elapsed().as_secs_f64();
            let data: u64 = ps.iter().map(|p| p.size_bytes).sum();
            let tv = Instant::now();
            let report = rt.block_on(verify(store.as_ref())).unwrap();
            let verify_s = tv.elapsed().as_secs_f64();
            assert!(report.is_clean());
            println!(
                "{{\"engine\":\"lineage-store\",\"rows\":{rows},\"batch_rows\":{batch_rows},\"repeat\":{rep},\"flushes\":{},\"seconds\":{s:.4},\"rows_per_s\":{:.0},\"ms_per_flush\":{:.3},\"data_bytes\":{data},\"verify_s\":{verify_s:.4}}}",
                ps.len(),
                rows as f64 / s,
                1000.0 * s / ps.len() as f64
            );
            secs.push(s);
            last = (ps.len(), data, verify_s);
        }
        secs.sort_by(|a, b| a.total_cmp(b));
        table.push((
            batch_rows,
            last.0,
            secs[secs.len() / 2],
            secs[0],
            secs[secs.len() - 1],
            last.1,
            last.2,
        ));
    }
    println!(
        "\n| batch rows | flushes | median s (min–max) | rows/s | ms/flush | data MB | verify s |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    for (b, f, med, lo, hi, data, vs) in table {
        println!(
            "| {b} | {f} | {med:.2} ({lo:.2}–{hi:.2}) | {:.0} | {:.2} | {:.1} | {vs:.3} |",
            rows as f64 / med,
            1000.0 * med / f as f64,
            data as f64 / 1e6
        );
    }
}
