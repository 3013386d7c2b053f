//! Report benchmark (a bench binary, not a timed test): `lineage report` of a large store,
//! its time and the size of what it writes.
//!
//! cargo bench --bench report -- [--events 1000000] [--batch-rows 100] [--runs 4]
//!     [--seals 10] [--repeat 3] [--dir DIR]
//!
//! A store of `--events` demo events in parts of `--batch-rows` rows (1 M events at 100
//! rows: about 10,000 commits) is appended in `--seals` chunks, each sealed; then (median
//! of `--repeat`, page cache hot after one warm-up) the report's data is collected (the
//! full verify with every part re-hashed, then the streamed count over the trusted read)
//! and rendered as HTML, Markdown and JSON. Prints the time of each step and each size.
// A bench may read the real clock (clippy.toml keeps the library behind its injected one).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use std::time::Instant;

use lineage_store::report::{collect, render, ReportFormat, ReportOptions};
use lineage_store::{open, seal, SystemClock, Writer};

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

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let events: usize = arg(&args, "--events", 1_000_000);
    let batch_rows: usize = arg(&args, "--batch-rows", 100);
    let runs: usize = arg(&args, "--runs", 4);
    let seals: usize = arg(&args, "--seals", 10);
    let repeat: usize = arg(&args, "--repeat", 3);
    let tmp = tempfile::tempdir().unwrap();
    let dir = args
        .iter()
        .position(|a| a == "--dir")
        .and_then(|i| args.get(i + 1))
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| tmp.path().join("store"));
    let url = dir.to_str().unwrap().to_string();
    let store = open(&url, &Default::default()).await.unwrap();
    let t = Instant::now();
    let chunk = events.div_ceil(seals.max(1));
    let mut left = events;
    let mut seed = 1;
    while left > 0 {
        let n = left.min(chunk);
        let batches = lineage_store::validate_all(
            lineage_store::generate_demo_events(n, runs, seed).unwrap(),
        )
        .unwrap();
        Writer::new(store.clone())
            .with_batch_rows(batch_rows)
            .append(&batches, |_| {})
            .await
            .unwrap();
        seal(store.as_ref(), &SystemClock, None).await.unwrap();
        left -= n;
        seed += 1;
    }
    eprintln!(
        "built {events} events in parts of {batch_rows} rows, {seals} seals, under {} in {:.1} s",
        dir.display(),
        t.elapsed().as_secs_f64()
    );
    let opts = ReportOptions {
        store_url: url.clone(),
        ..ReportOptions::default()
    };
    // Warm-up (page cache).
    let r = collect(store.as_ref(), &opts).await.unwrap();
    let mut collect_s = Vec::new();
    let mut render_s: Vec<Vec<f64>> = vec![Vec::new(); 3];
    let mut sizes = [0usize; 3];
    let formats = [
        ReportFormat::Html,
        ReportFormat::Markdown,
        ReportFormat::Json,
    ];
    for _ in 0..repeat.max(1) {
        let t = Instant::now();
        let r = collect(store.as_ref(), &opts).await.unwrap();
        collect_s.push(t.elapsed().as_secs_f64());
        for (i, f) in formats.iter().enumerate() {
            let t = Instant::now();
            sizes[i] = render(&r, *f).unwrap().len();
            render_s[i].push(t.elapsed().as_secs_f64());
        }
    }
    println!(
        "store: {} commits, {} rows, {} bytes, {} runs, {} seals; verdict: {}",
        r.identity.commits,
        r.identity.rows,
        r.identity.bytes.unwrap_or(0),
        r.runs.total,
        r.identity.seals,
        r.verdict.headline
    );
    println!(
        "collect (verify + one counting pass): {:.2} s (median of {repeat})",
        median(collect_s)
    );
    for (i, name) in ["html", "md", "json"].iter().enumerate() {
        println!(
            "render {name}: {:.3} s, {} bytes",
            median(render_s[i].clone()),
            sizes[i]
        );
    }
}
