//! Write-path benchmark (a bench binary, not a timed test). Prints these tables of
//! docs/performance.md (Append, Commit latency, Memory, Verify) from one run:
//!
//! 1. **Throughput against the shared bench** (`../shared/bench`: the design note's
//!    writer, pyarrow `write_dataset`, DuckDB `COPY`), side by side, same input, same
//!    flushes, repeats as the outer loop: 1 M events at 1,000 / 10,000 / 100,000 rows per
//!    flush and 10 k events at 10 rows (ms per commit). lineage-store fsyncs every part,
//!    pointer and directory; the others do not.
//! 2. **verify** of the page-cache-hot stores just written, in GB/s of parts.
//! 3. **Peak RSS** of `lineage append` (the release binary, a child process) on large
//!    NDJSON inputs, default `--batch-rows` and 10,000, and the 1 M-event NDJSON
//!    end-to-end time (against `--baseline-bin`, a build of the previous main, if given).
//! 4. **Object store**: commits per second of 10-row commits against LocalStack with 1, 4,
//!    16 and 64 commits in flight (when `LINEAGE_LOCALSTACK_ENDPOINT` is set; an emulator
//!    figure, not S3's).
//!
//! cargo bench --bench write -- --events ev-1m.arrow --events-small ev-10k.arrow
//!     [--rss-ndjson ev-5m.ndjson] [--ndjson ev-1m.ndjson] [--lineage-bin target/release/lineage]
//!     [--baseline-bin OLD] [--python VENV/bin/python] [--shared-bench ../shared/bench]
//!     [--repeats 3] [--sections write,verify,rss,s3]
//!
//! `just bench` runs it with the inputs made by the shared bench's `gen_events.py`.
// A bench may read the real clock (clippy.toml keeps the library behind its injected one).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use lineage_store::internal::input;
use lineage_store::verify;
use lineage_store::PosixPublisher;
use lineage_store::SinkOptions;
use lineage_store::Writer;

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn load(path: &str) -> Vec<arrow_array::RecordBatch> {
    let (bytes, fmt) = input::read_input(Some(Path::new(path)), None).unwrap();
    input::parse_validated(bytes, fmt).unwrap()
}

/// One of the shared bench's engines, as a child process: its JSON line's `seconds`. Its
/// output directory goes into `keep`, removed when the section ends (see [`Kept`]).
fn shared_engine(
    py: &str,
    dir: &Path,
    engine: &str,
    events: &str,
    batch_rows: usize,
    keep: &mut Kept,
) -> Option<f64> {
    let root = tempfile::tempdir().unwrap();
    let store = keep.push(root).join("store");
    let mut cmd = Command::new(py);
    cmd.current_dir(dir);
    match engine {
        "seed_ref" => cmd.args(["run_seed_ref.py", "write"]),
        e => cmd.args(["run_anchor.py", "--engine", e]),
    };
    cmd.args(["--events", events, "--root"])
        .arg(&store)
        .args(["--batch-rows", &batch_rows.to_string()]);
    let out = cmd.output().ok()?;
    if !out.status.success() {
        eprintln!("{engine}: {}", String::from_utf8_lossy(&out.stderr));
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().rev().find(|l| l.starts_with('{'))?;
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    v["seconds"].as_f64()
}

/// Every store a write section made, removed only when the section ends. ext4 makes a
/// file creation skip every inode freed in the last 5-35 s (`find_inode_bit` →
/// `recently_deleted`, one buffer lookup each): removing a 1,000-part store before the
/// next timed run made its creates O(files just removed) (perf: ~20 % of a 10-row-commit
/// run's CPU), charging whichever writer ran next for the previous one's cleanup.
#[derive(Default)]
struct Kept(Vec<tempfile::TempDir>);

impl Kept {
    fn push(&mut self, d: tempfile::TempDir) -> &Path {
        self.0.push(d);
        self.0.last().map(|d| d.path()).unwrap()
    }
}

struct Run {
    seconds: f64,
    flushes: usize,
    bytes: u64,
    store: tempfile::TempDir,
}

fn ours(
    rt: &tokio::runtime::Runtime,
    batches: &[arrow_array::RecordBatch],
    batch_rows: usize,
    in_flight: Option<usize>,
) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let mut w = Writer::new(Arc::new(PosixPublisher::new(dir.path()))).with_batch_rows(batch_rows);
    if let Some(n) = in_flight {
        w = w.with_concurrency(n);
    }
    // The engines before us write without fsync: settle their writeback first, so that
    // our fsyncs do not pay for their dirty pages (their timings exclude it too).
    rustix::fs::sync();
    let t = Instant::now();
    let ps = rt.block_on(w.append(batches, |_| {})).unwrap();
    Run {
        seconds: t.elapsed().as_secs_f64(),
        flushes: ps.len(),
        bytes: ps.iter().map(|p| p.size_bytes).sum(),
        store: dir,
    }
}

const ENGINES: [&str; 3] = ["seed_ref", "pyarrow_dataset", "duckdb"];

fn section_write(args: &[String], rt: &tokio::runtime::Runtime, repeats: usize, verify_too: bool) {
    let big = arg(args, "--events").expect("--events ev-1m.arrow");
    let small = arg(args, "--events-small");
    let py = arg(args, "--python");
    let shared =
        PathBuf::from(arg(args, "--shared-bench").unwrap_or_else(|| "../shared/bench".into()));
    let shared = shared.canonicalize().ok();
    let in_flight: Option<usize> = arg(args, "--in-flight").map(|v| v.parse().unwrap());
    let sizes: Vec<usize> = arg(args, "--batch-rows")
        .unwrap_or_else(|| "1000,10000,100000".into())
        .split(',')
        .map(|v| v.parse().unwrap())
        .collect();
    let mut sets: Vec<(String, usize)> = sizes.into_iter().map(|b| (big.clone(), b)).collect();
    if let Some(s) = small {
        sets.push((s, 10));
    }
    // Each file once (the 1 M events serve three flush sizes).
    let mut cache: std::collections::HashMap<String, Arc<Vec<arrow_array::RecordBatch>>> =
        std::collections::HashMap::new();
    let loaded: Vec<Arc<Vec<arrow_array::RecordBatch>>> = sets
        .iter()
        .map(|(p, _)| {
            cache
                .entry(p.clone())
                .or_insert_with(|| Arc::new(load(p)))
                .clone()
        })
        .collect();
    // [set][engine] → seconds per repeat; engine 0 is lineage-store.
    let mut secs = vec![vec![Vec::new(); ENGINES.len() + 1]; sets.len()];
    let mut info = vec![(0usize, 0u64); sets.len()];
    let mut stores: Vec<Option<Run>> = (0..sets.len()).map(|_| None).collect();
    let mut keep = Kept::default();
    for rep in 0..repeats {
        for (si, (path, batch_rows)) in sets.iter().enumerate() {
            let r = ours(rt, &loaded[si], *batch_rows, in_flight);
            eprintln!(
                "rep {rep} {path} × {batch_rows}: lineage-store {:.3} s",
                r.seconds
            );
            secs[si][0].push(r.seconds);
            info[si] = (r.flushes, r.bytes);
            if let Some(old) = stores[si].replace(r) {
                keep.push(old.store);
            }
            if let (Some(py), Some(dir)) = (&py, &shared) {
                for (ei, e) in ENGINES.iter().enumerate() {
                    let abs = std::fs::canonicalize(path).unwrap();
                    if let Some(s) =
                        shared_engine(py, dir, e, abs.to_str().unwrap(), *batch_rows, &mut keep)
                    {
                        eprintln!("rep {rep} {path} × {batch_rows}: {e} {s:.3} s");
                        secs[si][ei + 1].push(s);
                    }
                }
            }
        }
    }
    println!(
        "\n### Write throughput (median of {repeats}; lineage-store durable, the others not)\n"
    );
    println!("| events × batch rows (flushes) | lineage-store | design-note writer | pyarrow `write_dataset` | DuckDB `COPY` | × design note | × pyarrow |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for (si, (_, batch_rows)) in sets.iter().enumerate() {
        let rows: usize = loaded[si].iter().map(|b| b.num_rows()).sum();
        let (flushes, _) = info[si];
        let per_commit = *batch_rows <= 10;
        let fmt = |v: &mut Vec<f64>| -> (String, f64) {
            if v.is_empty() {
                return ("–".into(), f64::NAN);
            }
            let m = median(v);
            if per_commit {
                (format!("{:.2} ms", 1000.0 * m / flushes as f64), m)
            } else {
                (format!("{m:.2} s"), m)
            }
        };
        let (o, om) = fmt(&mut secs[si][0]);
        let (s, sm) = fmt(&mut secs[si][1]);
        let (p, pm) = fmt(&mut secs[si][2]);
        let (d, _) = fmt(&mut secs[si][3]);
        println!(
            "| {} × {batch_rows} ({flushes}) | **{o}** | {s} | {p} | {d} | {:.1}× | {:.1}× |",
            human(rows),
            sm / om,
            pm / om
        );
    }
    if verify_too {
        println!("\n### verify of the stores just written (page-cache hot, median of 5)\n");
        println!("| store | parts | MB | seconds | GB/s |");
        println!("|---|---:|---:|---:|---:|");
        for (si, (_, batch_rows)) in sets.iter().enumerate() {
            let Some(run) = &stores[si] else { continue };
            let store = PosixPublisher::new(run.store.path());
            let mut v: Vec<f64> = (0..5)
                .map(|_| {
                    let t = Instant::now();
                    let rep = rt.block_on(verify(&store)).unwrap();
                    assert!(rep.is_clean());
                    t.elapsed().as_secs_f64()
                })
                .collect();
            let m = median(&mut v);
            let rows: usize = loaded[si].iter().map(|b| b.num_rows()).sum();
            println!(
                "| {} × {batch_rows} | {} | {:.1} | {m:.3} | {:.2} |",
                human(rows),
                run.flushes,
                run.bytes as f64 / 1e6,
                run.bytes as f64 / m / 1e9
            );
        }
    }
}

/// `--verify-stores a,b,...`: verify existing POSIX stores (page-cache hot after the
/// first run), `repeats` times each, for comparing builds side by side.
fn section_verify_stores(rt: &tokio::runtime::Runtime, dirs: &str, repeats: usize) {
    println!("| store | MB | median s | GB/s | runs |");
    println!("|---|---:|---:|---:|---|");
    for dir in dirs.split(',') {
        let store = PosixPublisher::new(dir);
        let bytes = parts_bytes(std::path::Path::new(dir));
        let _ = rt.block_on(verify(&store)).unwrap();
        let mut v: Vec<f64> = (0..repeats)
            .map(|_| {
                let t = Instant::now();
                let rep = rt.block_on(verify(&store)).unwrap();
                assert!(rep.is_clean());
                t.elapsed().as_secs_f64()
            })
            .collect();
        let runs: Vec<String> = v.iter().map(|s| format!("{s:.4}")).collect();
        let m = median(&mut v);
        println!(
            "| {dir} | {:.1} | {m:.4} | {:.2} | {} |",
            bytes as f64 / 1e6,
            bytes as f64 / m / 1e9,
            runs.join(" ")
        );
    }
}

/// Bytes of the `.parquet` files under `dir`.
fn parts_bytes(dir: &std::path::Path) -> u64 {
    let mut n = 0;
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            n += parts_bytes(&p);
        } else if p.extension().is_some_and(|x| x == "parquet") {
            n += e.metadata().map_or(0, |m| m.len());
        }
    }
    n
}

fn human(rows: usize) -> String {
    if rows >= 1_000_000 {
        format!("{} M", rows / 1_000_000)
    } else {
        format!("{} k", rows / 1000)
    }
}

/// `lineage append` as a child process: (seconds, peak RSS MiB, commits).
fn append_child(bin: &str, input: &str, batch_rows: Option<usize>) -> (f64, f64, u64) {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(bin);
    cmd.args(["append", "--store"])
        .arg(dir.path())
        .args(["--input", input]);
    if let Some(b) = batch_rows {
        cmd.args(["--batch-rows", &b.to_string()]);
    }
    cmd.env("LINEAGE_LOG", "lineage_store=info,warn");
    let t = Instant::now();
    let out = cmd.output().unwrap();
    let s = t.elapsed().as_secs_f64();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The log is coloured (ANSI escapes around field names and `=`): drop the escapes.
    let err = strip_ansi(&String::from_utf8_lossy(&out.stderr));
    let field = |name: &str| -> Option<u64> {
        err.lines()
            .rev()
            .find_map(|l| l.split_whitespace().find_map(|w| w.strip_prefix(name)))
            .and_then(|v| v.parse().ok())
    };
    let rss = field("peak_rss_kib=").map_or(f64::NAN, |k| k as f64 / 1024.0);
    let text = String::from_utf8_lossy(&out.stdout);
    let commits = text.lines().filter(|l| l.starts_with("committed ")).count() as u64;
    (s, rss, commits)
}

/// `text` without ANSI escape sequences (`ESC [ ... letter`).
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn section_rss(args: &[String], repeats: usize) {
    let bin = arg(args, "--lineage-bin").unwrap_or_else(|| "target/release/lineage".into());
    println!("\n### Peak RSS of `lineage append` (child process, NDJSON, durable)\n");
    println!("| input | --batch-rows | commits | seconds | peak RSS MiB |");
    println!("|---|---:|---:|---:|---:|");
    if let Some(big) = arg(args, "--rss-ndjson") {
        let mb = std::fs::metadata(&big).unwrap().len() as f64 / 1e6;
        for b in [None, Some(10_000)] {
            let (s, rss, commits) = append_child(&bin, &big, b);
            println!(
                "| {} ({mb:.0} MB) | {} | {commits} | {s:.1} | **{rss:.0}** |",
                Path::new(&big).file_name().unwrap().to_string_lossy(),
                b.map_or("default (100,000)".into(), |b| b.to_string())
            );
        }
    }
    if let Some(nd) = arg(args, "--ndjson") {
        let mut bins = vec![("this build", bin.clone())];
        if let Some(base) = arg(args, "--baseline-bin") {
            bins.push(("baseline", base));
        }
        let mut med = Vec::new();
        for (name, b) in &bins {
            let mut v = Vec::new();
            let mut rss = 0.0;
            let mut commits = 0;
            for _ in 0..repeats {
                let (s, r, c) = append_child(b, &nd, None);
                v.push(s);
                rss = r;
                commits = c;
            }
            let m = median(&mut v);
            med.push(m);
            println!(
                "| {} ({name}, median of {repeats}) | default | {commits} | {m:.2} | {rss:.0} |",
                Path::new(&nd).file_name().unwrap().to_string_lossy()
            );
        }
        if med.len() == 2 {
            println!(
                "\nend-to-end throughput, this build / baseline: {:.2}×",
                med[1] / med[0]
            );
        }
    }
}

fn section_s3(rt: &tokio::runtime::Runtime) {
    let Ok(endpoint) = std::env::var("LINEAGE_LOCALSTACK_ENDPOINT") else {
        println!("\n(object-store table skipped: LINEAGE_LOCALSTACK_ENDPOINT is not set; `just bench` starts LocalStack)");
        return;
    };
    let bucket = std::env::var("LINEAGE_S3_BUCKET").unwrap_or_else(|_| "lineage-test".into());
    let batches = lineage_store::generate_demo_events(2000, 1, 7).unwrap();
    let mut v = lineage_store::internal::validate::Validator::new();
    let batches: Vec<_> = batches
        .into_iter()
        .map(|b| {
            v.validate(&lineage_store::internal::events::SourcedBatch::new(
                b,
                lineage_store::internal::events::Origin::Rows { first: 1 },
            ))
            .unwrap()
        })
        .collect();
    println!("\n### Object store: LocalStack 4.0.3 on this machine (an emulator figure, not S3)\n");
    println!("| commits in flight | commits (10 rows each) | seconds | commits/s |");
    println!("|---:|---:|---:|---:|");
    for in_flight in [1usize, 4, 16, 64] {
        let url = format!("s3://{bucket}/bench/{}", uuid::Uuid::new_v4().simple());
        let opts = lineage_store::StoreOptions::new().endpoint_url(Some(endpoint.clone()));
        let store = rt.block_on(lineage_store::open(&url, &opts)).unwrap();
        let w = Writer::new(store);
        let t = Instant::now();
        let n = rt.block_on(async {
            let mut sink = w
                .sink(SinkOptions {
                    batch_rows: 10,
                    max_in_flight: in_flight,
                    ..SinkOptions::default()
                })
                .unwrap();
            for b in &batches {
                sink.write(b.clone()).await.unwrap();
            }
            sink.finish().await.unwrap().len()
        });
        let s = t.elapsed().as_secs_f64();
        println!("| {in_flight} | {n} | {s:.2} | {:.0} |", n as f64 / s);
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let repeats: usize = arg(&args, "--repeats").map_or(3, |v| v.parse().unwrap());
    let sections = arg(&args, "--sections").unwrap_or_else(|| "write,verify,rss,s3".into());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "lineage-store {} · {} cores · load average at start {}",
        env!("CARGO_PKG_VERSION"),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    if sections.contains("write") {
        section_write(&args, &rt, repeats, sections.contains("verify"));
    }
    if let Some(dirs) = arg(&args, "--verify-stores") {
        section_verify_stores(&rt, &dirs, repeats);
    }
    if sections.contains("rss") {
        section_rss(&args, repeats);
    }
    if sections.contains("s3") {
        section_s3(&rt);
    }
}
