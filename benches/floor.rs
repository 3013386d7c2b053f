//! The write path against its physical floor (a bench binary, not a timed test): where the
//! time of `lineage append` of the shared bench's events goes, each step of the work
//! measured alone on the same data, single-threaded, at each flush size, beside the whole
//! `lineage append` process (and, when given, pyarrow `write_dataset` through the shared
//! bench's `run_anchor.py`, the comparison the project aims at; nothing of it is needed
//! for the floor itself).
//!
//! Steps, each over all the flushes of the input:
//! - read: the Arrow IPC file read and decoded into contract batches (once per input);
//! - validate: the contract's row rules on those batches (once per input);
//! - gather: every flush's rows copied into one batch (arrow `interleave`);
//! - Parquet, uncompressed: the part's encoder with every setting of the default part
//!   encoding but no compression;
//! - Parquet + zstd: the part's encoder exactly as `append` runs it, without digests;
//! - zstd alone: zstd at the level parts use (1) on each column chunk of the uncompressed
//!   parts, one reused context;
//! - SHA-256, BLAKE3 of every part; SHA-256 of every part's tail;
//! - write: every part written to a new file, without and with an fsync of each;
//! - publish: every commit's three objects (part, a pointer-sized JSON, an empty index
//!   entry) through the local-disk store's create-only protocol (temp, fsync, no-replace
//!   rename, directory fsync), one commit at a time (its CPU figure is the submitting
//!   thread's only: the store does the file work on tokio's blocking threads).
//!
//! Figures: CPU time (the thread's, from `/proc/thread-self/schedstat`; the whole process's
//! user+sys from `/proc/self/stat`, the child's from the waited-for children's times) and
//! wall time, each the fastest of `--repeats`. CPU is the primary figure: the machine is
//! shared and a loaded run stretches wall time, not CPU time.
//!
//! cargo bench --bench floor -- --events ev-1m.arrow [--batch-rows 1000,10000,100000]
//!     [--repeats 5] [--lineage-bin target/release/lineage] [--dir DIR] [--in-process]
//!     [--python VENV/bin/python --shared-bench ../shared/bench]
//!
//! Every write goes into a new directory under `--dir` (default: the system's temp
//! directory), kept until the bench ends: removing a store right before the next timed
//! run charges ext4's inode allocator to it (see benches/write.rs).
// A bench may read the real clock (clippy.toml keeps the library behind its injected one).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use arrow_array::cast::AsArray;
use arrow_array::RecordBatch;
use bytes::Bytes;
use lineage_store::internal::encode::{self, PartEncoding};
use lineage_store::internal::events::{Origin, SourcedBatch};
use lineage_store::internal::input::{self, Format};
use lineage_store::internal::validate::Validator;
use lineage_store::internal::{digest, keys};
use lineage_store::{AtomicPublisher, PosixPublisher, Writer};
use parquet::basic::Compression;
use parquet::file::metadata::ParquetMetaDataReader;

/// The value after `name` on the command line.
fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

/// CPU seconds and wall seconds of one step.
#[derive(Debug, Clone, Copy)]
struct Cost {
    cpu: f64,
    wall: f64,
}

impl Cost {
    const ZERO: Cost = Cost {
        cpu: 0.0,
        wall: 0.0,
    };
    fn add(self, o: Cost) -> Cost {
        Cost {
            cpu: self.cpu + o.cpu,
            wall: self.wall + o.wall,
        }
    }
    fn cell(self) -> String {
        format!("{:.3} ({:.3})", self.cpu, self.wall)
    }
}

/// This thread's time on a CPU so far, seconds (the scheduler's nanoseconds).
fn thread_cpu() -> f64 {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap();
    s.split_whitespace().next().unwrap().parse::<u64>().unwrap() as f64 / 1e9
}

/// Fields of `/proc/self/stat` after the command name, in clock ticks: (user, system,
/// waited-for children's user, children's system).
fn proc_times() -> [f64; 4] {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap();
    let rest = &s[s.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // utime is field 14 of the line, the 12th after the name (state is the first).
    let tick = |i: usize| f[i].parse::<u64>().unwrap() as f64 / 100.0;
    [tick(11), tick(12), tick(13), tick(14)]
}

/// The fastest of `repeats` runs of `f`, by this thread's CPU time and by wall time.
fn fastest(repeats: usize, mut f: impl FnMut()) -> Cost {
    let mut best = Cost {
        cpu: f64::MAX,
        wall: f64::MAX,
    };
    for _ in 0..repeats {
        let (c, t) = (thread_cpu(), Instant::now());
        f();
        let wall = t.elapsed().as_secs_f64();
        best.cpu = best.cpu.min(thread_cpu() - c);
        best.wall = best.wall.min(wall);
    }
    best
}

/// One flush: its partition and its rows as (input batch, row).
struct Cut {
    run_id: String,
    target_crs: String,
    rows: Vec<(usize, usize)>,
}

/// The flushes `append` cuts: the rows grouped by (run_id, target_crs) in input order,
/// each group cut into chunks of `batch_rows`.
fn cut(batches: &[RecordBatch], batch_rows: usize) -> Vec<Cut> {
    let mut groups: Vec<Cut> = Vec::new();
    let mut at: HashMap<(String, String), usize> = HashMap::new();
    for (bi, b) in batches.iter().enumerate() {
        let run = b.column_by_name("run_id").unwrap().as_string::<i32>();
        let crs = b.column_by_name("target_crs").unwrap().as_string::<i32>();
        for r in 0..b.num_rows() {
            let k = (run.value(r).to_string(), crs.value(r).to_string());
            let g = *at.entry(k.clone()).or_insert_with(|| {
                groups.push(Cut {
                    run_id: k.0.clone(),
                    target_crs: k.1.clone(),
                    rows: Vec::new(),
                });
                groups.len() - 1
            });
            groups[g].rows.push((bi, r));
        }
    }
    groups
        .into_iter()
        .flat_map(|g| {
            let (run_id, target_crs) = (g.run_id, g.target_crs);
            g.rows
                .chunks(batch_rows)
                .map(|c| Cut {
                    run_id: run_id.clone(),
                    target_crs: target_crs.clone(),
                    rows: c.to_vec(),
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

fn gather(batches: &[RecordBatch], cuts: &[Cut]) -> Vec<RecordBatch> {
    let refs: Vec<&RecordBatch> = batches.iter().collect();
    cuts.iter()
        .map(|c| arrow_select::interleave::interleave_record_batch(&refs, &c.rows).unwrap())
        .collect()
}

const STORE_ID: &str = "0190f000-0000-7000-8000-000000000000";

fn commit_id(i: usize) -> String {
    format!("0190f000-0000-7000-8000-{i:012}")
}

/// zstd level 1 of each column chunk of an uncompressed part (one reused context).
fn zstd_chunks(z: &mut zstd::bulk::Compressor<'_>, part: &[u8]) -> usize {
    let bytes = Bytes::copy_from_slice(part);
    let meta = ParquetMetaDataReader::new()
        .parse_and_finish(&bytes)
        .unwrap();
    let mut out = 0;
    for rg in meta.row_groups() {
        for c in rg.columns() {
            let (start, len) = c.byte_range();
            let chunk = &part[start as usize..(start + len) as usize];
            out += z.compress(chunk).unwrap().len();
        }
    }
    out
}

/// A new directory under `base`, kept until the bench ends.
fn new_dir(base: &Path, keep: &mut Vec<tempfile::TempDir>) -> PathBuf {
    let d = tempfile::tempdir_in(base).unwrap();
    let p = d.path().to_path_buf();
    keep.push(d);
    p
}

/// Every part written to a new file in a new directory; with `fsync`, each fsynced.
fn write_files(base: &Path, keep: &mut Vec<tempfile::TempDir>, parts: &[Bytes], fsync: bool) {
    let dir = new_dir(base, keep);
    for (i, p) in parts.iter().enumerate() {
        let mut f = std::fs::File::create_new(dir.join(format!("part-{i}.parquet"))).unwrap();
        f.write_all(p).unwrap();
        if fsync {
            f.sync_all().unwrap();
        }
    }
}

/// Every commit's part, pointer and index entry through the local-disk store, one at a time.
fn publish(
    rt: &tokio::runtime::Runtime,
    base: &Path,
    keep: &mut Vec<tempfile::TempDir>,
    cuts: &[Cut],
    parts: &[Bytes],
) {
    let store = PosixPublisher::new(new_dir(base, keep));
    // A pointer as `append` writes it is ~1.2 kB of JSON.
    let pointer = Bytes::from(vec![b' '; 1200]);
    rt.block_on(async {
        for (i, (c, p)) in cuts.iter().zip(parts).enumerate() {
            let id = commit_id(i);
            let part = keys::part_key(&c.run_id, &c.target_crs, &id);
            store.put_create(&part, p.clone()).await.unwrap();
            let ptr = keys::pointer_key(&c.run_id, &id);
            store.put_create(&ptr, pointer.clone()).await.unwrap();
            let t = chrono::DateTime::UNIX_EPOCH + chrono::Duration::seconds(i as i64);
            let entry = keys::index_key(t, &id, &c.run_id);
            store.put_create(&entry, Bytes::new()).await.unwrap();
        }
    });
}

/// `Writer::append` of the validated batches into a new store: the process's CPU
/// (user+sys, every thread) and wall time, fastest of `repeats`.
fn append_in_process(
    rt: &tokio::runtime::Runtime,
    base: &Path,
    keep: &mut Vec<tempfile::TempDir>,
    batches: &[RecordBatch],
    batch_rows: usize,
    repeats: usize,
) -> Cost {
    let mut best = Cost {
        cpu: f64::MAX,
        wall: f64::MAX,
    };
    for _ in 0..repeats {
        let dir = new_dir(base, keep);
        let w = Writer::new(Arc::new(PosixPublisher::new(dir))).with_batch_rows(batch_rows);
        let (c, t) = (proc_times(), Instant::now());
        rt.block_on(w.append(batches, |_| {})).unwrap();
        let wall = t.elapsed().as_secs_f64();
        let d = proc_times();
        best.cpu = best.cpu.min(d[0] + d[1] - c[0] - c[1]);
        best.wall = best.wall.min(wall);
    }
    best
}

/// `lineage append` as a child process into a new store: (CPU user+sys, wall), fastest
/// of `repeats`, and the user and system CPU of that fastest run.
fn append_child(
    bin: &str,
    events: &Path,
    base: &Path,
    keep: &mut Vec<tempfile::TempDir>,
    batch_rows: usize,
    repeats: usize,
) -> (Cost, f64, f64) {
    let mut best = (
        Cost {
            cpu: f64::MAX,
            wall: f64::MAX,
        },
        0.0,
        0.0,
    );
    for _ in 0..repeats {
        let dir = new_dir(base, keep);
        let (c, t) = (proc_times(), Instant::now());
        let out = Command::new(bin)
            .args(["append", "--store"])
            .arg(&dir)
            .arg("--input")
            .arg(events)
            .args(["--batch-rows", &batch_rows.to_string()])
            .output()
            .unwrap();
        let wall = t.elapsed().as_secs_f64();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let d = proc_times();
        let (user, sys) = (d[2] - c[2], d[3] - c[3]);
        if user + sys < best.0.cpu {
            best = (
                Cost {
                    cpu: user + sys,
                    wall: best.0.wall,
                },
                user,
                sys,
            );
        }
        best.0.wall = best.0.wall.min(wall);
    }
    best
}

/// pyarrow `write_dataset` through the shared bench (`run_anchor.py`): its write loop's
/// CPU and wall seconds, fastest of `repeats` by each.
fn pyarrow(
    py: &str,
    shared: &Path,
    events: &Path,
    base: &Path,
    keep: &mut Vec<tempfile::TempDir>,
    batch_rows: usize,
    repeats: usize,
) -> Option<Cost> {
    let mut best = Cost {
        cpu: f64::MAX,
        wall: f64::MAX,
    };
    for _ in 0..repeats {
        let root = new_dir(base, keep).join("store");
        let out = Command::new(py)
            .current_dir(shared)
            .args(["run_anchor.py", "--engine", "pyarrow_dataset", "--events"])
            .arg(events)
            .arg("--root")
            .arg(&root)
            .args(["--batch-rows", &batch_rows.to_string()])
            .output()
            .ok()?;
        if !out.status.success() {
            eprintln!("pyarrow: {}", String::from_utf8_lossy(&out.stderr));
            return None;
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text.lines().rev().find(|l| l.starts_with('{'))?;
        let v: serde_json::Value = serde_json::from_str(line).ok()?;
        best.cpu = best.cpu.min(v["cpu_s"].as_f64()?);
        best.wall = best.wall.min(v["seconds"].as_f64()?);
    }
    Some(best)
}

/// One flush size's figures, by step.
struct Column {
    batch_rows: usize,
    flushes: usize,
    part_bytes: u64,
    steps: Vec<(&'static str, Cost)>,
}

fn floor_of(
    rt: &tokio::runtime::Runtime,
    base: &Path,
    keep: &mut Vec<tempfile::TempDir>,
    batches: &[RecordBatch],
    batch_rows: usize,
    repeats: usize,
) -> Column {
    let cuts = cut(batches, batch_rows);
    let flushes = gather(batches, &cuts);
    let mut steps = vec![(
        "gather rows into flushes",
        fastest(repeats, || {
            std::hint::black_box(gather(batches, &cuts));
        }),
    )];
    let enc = |f: &RecordBatch, i: usize, c: Option<Compression>| {
        encode::parquet_bytes(f, &commit_id(i), PartEncoding::default(), Some(STORE_ID), c).unwrap()
    };
    let plain: Vec<Vec<u8>> = flushes
        .iter()
        .enumerate()
        .map(|(i, f)| enc(f, i, Some(Compression::UNCOMPRESSED)))
        .collect();
    steps.push((
        "Parquet encoding, uncompressed",
        fastest(repeats, || {
            for (i, f) in flushes.iter().enumerate() {
                std::hint::black_box(enc(f, i, Some(Compression::UNCOMPRESSED)));
            }
        }),
    ));
    steps.push((
        "Parquet encoding + zstd (as parts are written)",
        fastest(repeats, || {
            for (i, f) in flushes.iter().enumerate() {
                std::hint::black_box(enc(f, i, None));
            }
        }),
    ));
    let mut z = zstd::bulk::Compressor::new(1).unwrap();
    steps.push((
        "zstd level 1 alone (the column chunks)",
        fastest(repeats, || {
            for p in &plain {
                std::hint::black_box(zstd_chunks(&mut z, p));
            }
        }),
    ));
    let parts: Vec<encode::EncodedPart> = flushes
        .iter()
        .enumerate()
        .map(|(i, f)| {
            encode::encode_for_store(f, &commit_id(i), PartEncoding::default(), Some(STORE_ID))
                .unwrap()
        })
        .collect();
    let bytes: Vec<Bytes> = parts.iter().map(|p| p.bytes.clone()).collect();
    steps.push((
        "SHA-256 of the parts",
        fastest(repeats, || {
            for b in &bytes {
                std::hint::black_box(digest::sha256_hex(b));
            }
        }),
    ));
    steps.push((
        "BLAKE3 of the parts",
        fastest(repeats, || {
            for b in &bytes {
                std::hint::black_box(digest::blake3_hex(b));
            }
        }),
    ));
    steps.push((
        "SHA-256 of the parts' tails",
        fastest(repeats, || {
            for p in &parts {
                std::hint::black_box(digest::sha256_hex(&p.bytes[p.tail.0 as usize..]));
            }
        }),
    ));
    steps.push((
        "write() each part to a new file",
        fastest(repeats, || write_files(base, keep, &bytes, false)),
    ));
    steps.push((
        "write() + fsync each part",
        fastest(repeats, || write_files(base, keep, &bytes, true)),
    ));
    steps.push((
        "publish part + pointer + index entry (temp, fsync, rename, dir fsync)",
        fastest(repeats, || publish(rt, base, keep, &cuts, &bytes)),
    ));
    Column {
        batch_rows,
        flushes: cuts.len(),
        part_bytes: bytes.iter().map(|b| b.len() as u64).sum(),
        steps,
    }
}

/// The floor: what `append` cannot avoid doing (read, validate, gather, encode with
/// zstd, both digests and the tail's, publish), summed.
const FLOOR: [&str; 7] = [
    "read the Arrow IPC input",
    "validate",
    "gather rows into flushes",
    "Parquet encoding + zstd (as parts are written)",
    "SHA-256 of the parts",
    "BLAKE3 of the parts",
    "publish part + pointer + index entry (temp, fsync, rename, dir fsync)",
];

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let events = PathBuf::from(arg(&args, "--events").expect("--events ev-1m.arrow"));
    let repeats: usize = arg(&args, "--repeats").map_or(5, |v| v.parse().unwrap());
    let sizes: Vec<usize> = arg(&args, "--batch-rows")
        .unwrap_or_else(|| "1000,10000,100000".into())
        .split(',')
        .map(|v| v.parse().unwrap())
        .collect();
    let base = arg(&args, "--dir").map_or_else(std::env::temp_dir, PathBuf::from);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut keep = Vec::new();
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

    // Read and validate: once per input, the same for every flush size.
    let mut parsed = Vec::new();
    let read = fastest(repeats, || {
        let (bytes, fmt) = input::read_input(Some(&events), Some(Format::Arrow)).unwrap();
        parsed = input::parse(bytes, fmt).unwrap();
    });
    let mut batches = Vec::new();
    let validate = fastest(repeats, || {
        let mut v = Validator::new();
        batches = parsed
            .iter()
            .map(|sb| {
                v.validate(&SourcedBatch::new(
                    sb.batch.clone(),
                    Origin::Rows { first: 1 },
                ))
                .unwrap()
            })
            .collect();
    });
    let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();

    let bin = arg(&args, "--lineage-bin");
    let py = arg(&args, "--python");
    let shared = arg(&args, "--shared-bench").map(|s| std::fs::canonicalize(s).unwrap());
    let events_abs = std::fs::canonicalize(&events).unwrap();
    let mut columns = Vec::new();
    let mut ends: Vec<Vec<(String, Cost)>> = Vec::new();
    for &b in &sizes {
        eprintln!("{b} rows per flush: floor steps");
        let mut col = floor_of(&rt, &base, &mut keep, &batches, b, repeats);
        col.steps.insert(0, ("validate", validate));
        col.steps.insert(0, ("read the Arrow IPC input", read));
        let mut end = Vec::new();
        if args.iter().any(|a| a == "--in-process") {
            eprintln!("{b} rows per flush: Writer::append");
            end.push((
                "`Writer::append` in process (2 encoder threads)".to_string(),
                append_in_process(&rt, &base, &mut keep, &batches, b, repeats),
            ));
        }
        if let Some(bin) = &bin {
            eprintln!("{b} rows per flush: lineage append");
            let (c, user, sys) = append_child(bin, &events_abs, &base, &mut keep, b, repeats);
            end.push((
                format!("`lineage append`, whole process (user {user:.2} + sys {sys:.2})"),
                c,
            ));
        }
        if let (Some(py), Some(dir)) = (&py, &shared) {
            eprintln!("{b} rows per flush: pyarrow");
            if let Some(c) = pyarrow(py, dir, &events_abs, &base, &mut keep, b, repeats) {
                end.push((
                    "pyarrow `write_dataset` (write loop only, no fsync)".into(),
                    c,
                ));
            }
        }
        columns.push(col);
        ends.push(end);
    }
    print_table(rows, repeats, &columns, &ends);
}

fn print_table(rows: usize, repeats: usize, columns: &[Column], ends: &[Vec<(String, Cost)>]) {
    println!(
        "\n### The floor: {rows} events, each step alone, single thread, CPU s (wall s), fastest of {repeats}\n"
    );
    let head: Vec<String> = columns
        .iter()
        .map(|c| {
            format!(
                "{} rows ({} flushes, {:.1} MB)",
                c.batch_rows,
                c.flushes,
                c.part_bytes as f64 / 1e6
            )
        })
        .collect();
    println!("| step | {} |", head.join(" | "));
    println!("|---|{}", "---:|".repeat(columns.len()));
    for (i, (name, _)) in columns[0].steps.iter().enumerate() {
        let cells: Vec<String> = columns.iter().map(|c| c.steps[i].1.cell()).collect();
        println!("| {name} | {} |", cells.join(" | "));
    }
    let floors: Vec<Cost> = columns
        .iter()
        .map(|c| {
            c.steps
                .iter()
                .filter(|(n, _)| FLOOR.contains(n))
                .fold(Cost::ZERO, |a, (_, s)| a.add(*s))
        })
        .collect();
    let cells: Vec<String> = floors.iter().map(|f| format!("**{}**", f.cell())).collect();
    println!(
        "| **floor** (read, validate, gather, encode + zstd, both digests, publish) | {} |",
        cells.join(" | ")
    );
    for (i, (name, _)) in ends[0].iter().enumerate() {
        let cells: Vec<String> = ends
            .iter()
            .map(|e| e.get(i).map_or("–".into(), |(_, c)| c.cell()))
            .collect();
        println!("| {name} | {} |", cells.join(" | "));
    }
    // Ratios: the whole process against the floor and against pyarrow, when they ran.
    let find = |e: &[(String, Cost)], what: &str| {
        e.iter().find(|(n, _)| n.contains(what)).map(|(_, c)| *c)
    };
    if ends
        .iter()
        .all(|e| find(e.as_slice(), "lineage append").is_some())
    {
        let v: Vec<String> = ends
            .iter()
            .zip(&floors)
            .map(|(e, f)| {
                let c = find(e.as_slice(), "lineage append").unwrap_or(Cost::ZERO);
                format!("{:.2}× CPU", c.cpu / f.cpu)
            })
            .collect();
        println!("| `lineage append` ÷ floor | {} |", v.join(" | "));
    }
    if ends.iter().all(|e| {
        find(e.as_slice(), "lineage append").is_some() && find(e.as_slice(), "pyarrow").is_some()
    }) {
        let v: Vec<String> = ends
            .iter()
            .map(|e| {
                let (c, p) = (
                    find(e.as_slice(), "lineage append").unwrap_or(Cost::ZERO),
                    find(e.as_slice(), "pyarrow").unwrap_or(Cost::ZERO),
                );
                format!("{:.2} CPU ({:.2} wall)", c.cpu / p.cpu, c.wall / p.wall)
            })
            .collect();
        println!("| `lineage append` ÷ pyarrow | {} |", v.join(" | "));
    }
}
