//! History benchmark on local disk, through the CLI (a bench binary, not a timed test):
//! what the routine audit commands cost, as processes, on the README's default store as
//! it grows from 10^3 to 10^6 commits.
//!
//! cargo bench --bench history_disk -- [--sizes 1000,20000,100000,1000000]
//!     [--pattern spread|bursty] [--cli-build-max 20000] [--rounds 5] [--new 100]
//!     [--seal-every 1000] [--lookback 1s] [--dir DIR] [--lineage-bin BIN] [--keep] [--reuse]
//!
//! `--lineage-bin` defaults to `target/release/lineage` if it exists (build it first:
//! `cargo build --release --bin lineage`; `just bench-history-disk` does), else to
//! `target/debug/lineage`.
//!
//! A store of up to `--cli-build-max` commits is built with the `lineage` binary, as a
//! user would: `append --batch-rows 10` of 10 × `--seal-every` rows, then `seal`, again
//! and again (commit times are real: a few hundred commits a second). A larger one is
//! generated through the library (the real writer and sealer, one-row parts, a simulated
//! clock making 10^6 commits a day, a seal every `--seal-every` commits) onto the same
//! directory layout, written without fsync (`Bulk`, create-only like the real publisher):
//! the bytes and keys are what `PosixPublisher` would write.
//!
//! Every CLI `seal` runs with `--lookback` (default 1 s, not the CLI's 5 minutes): a
//! seal's watermark is its time minus the lookback, and everything committed after the
//! watermark is listed again by the next `--since-seal` and carried in the seal's `ahead`
//! list. The CLI builds in a minute what a real store writes over days, so with 5 minutes
//! every commit of a CLI-built store stays inside the window and each routine command
//! reads all of them (measured: `log --since-seal` 52 ms at 10^3, 507 ms at 2×10^4):
//! O(commits of the last lookback), not O(history). With 1 s the window holds what a
//! round adds, as in a store sealed less often than its lookback.
//!
//! `--pattern bursty`: the store's commits arrive in one burst instead: one `lineage
//! append --batch-rows 10` of 10 × size rows (size commits, at the CLI's pace: 10^5 in a
//! few minutes), then one `seal`; every seal, the routine ones too, with the CLI's default
//! lookback (5 minutes, `--lookback` ignored), so the lookback holds the burst (all of it
//! up to about 2×10^4 commits, the last minutes of a larger one) as it would hold a
//! fleet's busy hour.
//!
//! Then each round appends `--new` commits with the CLI (`--batch-rows 10`, not timed)
//! and times, each as a whole process, `log --since-seal`, `verify --since-seal`,
//! `verify --since-seal --grace 1s`, `seal` (of those commits) and `prove` (of the store's
//! first commit, leaf 0, against the newest seal). On a local disk `verify --since-seal`
//! reads again every data directory changed after seal SEQ's file-system clock less the
//! grace (15 minutes by default): the store was built minutes ago, so with the default
//! grace it reads the whole data area, as it would in the 15 minutes after a real burst;
//! `--grace 1s` times it as it runs once the store's directories are older than the grace
//! (as `--lookback 1s` stands for a store sealed less often than its lookback). The table gives the fastest of `--rounds` rounds, and, from one more round run
//! under `strace -f -c`, the system calls each made (all, `statx`/`newfstatat`,
//! `getdents64`, `openat`). The first round after building is not measured (it seals the
//! store's tail with the real clock).
//!
//! `--keep` leaves each store in `--dir`; `--reuse` takes a store left there instead of
//! building it again (so a 10^6 store, which takes the better part of an hour to generate,
//! can be built once and timed again on a quiet machine; each run adds its rounds'
//! commits to it).
// A bench may read the real clock (clippy.toml keeps the library behind its injected one).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod common;

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicI64;
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use bytes::Bytes;
use common::{arg, validated, SimClock};
use lineage_store::{
    seal_with, AtomicPublisher, ObjectInfo, Outcome, PosixPublisher, Result, SealOptions, Writer,
};

/// The bench's bulk loader: a local-disk store whose creates are exclusive but not
/// fsynced (a generated store need not survive a power cut); reads and listings are the
/// real `PosixPublisher`'s.
#[derive(Debug)]
struct Bulk {
    root: PathBuf,
    read: PosixPublisher,
}

#[async_trait]
impl AtomicPublisher for Bulk {
    fn describe(&self) -> String {
        format!("bulk+file://{}", self.root.display())
    }
    async fn put_create(&self, key: &str, bytes: Bytes) -> Result<Outcome> {
        use std::io::Write;
        let path = self.root.join(key);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(mut f) => {
                f.write_all(&bytes).unwrap();
                Ok(Outcome::Created)
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(Outcome::AlreadyExists),
            Err(e) => Err(lineage_store::Error::internal(format!(
                "{}: {e}",
                path.display()
            ))),
        }
    }
    async fn get(&self, key: &str) -> Result<Option<Bytes>> {
        self.read.get(key).await
    }
    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes> {
        self.read.get_range(key, range).await
    }
    async fn list(&self, prefix: &str) -> Result<Vec<ObjectInfo>> {
        self.read.list(prefix).await
    }
    async fn list_after(&self, prefix: &str, after: &str, limit: usize) -> Result<Vec<ObjectInfo>> {
        self.read.list_after(prefix, after, limit).await
    }
    async fn delete_temp(&self, key: &str) -> Result<()> {
        self.read.delete_temp(key).await
    }
}

/// `rows` demo events of one run as an Arrow IPC file (the CLI's input).
fn input_file(dir: &Path, rows: usize, seed: u64) -> PathBuf {
    let batches = validated(rows, seed);
    let path = dir.join(format!("events-{rows}-{seed}.arrow"));
    let f = std::fs::File::create(&path).unwrap();
    let mut w = arrow_ipc::writer::FileWriter::try_new(f, &batches[0].schema()).unwrap();
    for b in &batches {
        w.write(b).unwrap();
    }
    w.finish().unwrap();
    path
}

struct Settings {
    new: usize,
    /// `seal --lookback` of every CLI seal (`None`: the CLI's default).
    lookback: Option<String>,
    /// One burst of commits (`--pattern bursty`) rather than seal after seal.
    bursty: bool,
    seal_every: usize,
    rounds: usize,
    cli_build_max: usize,
    bin: PathBuf,
    /// Take a store left by `--keep` instead of building it.
    reuse: bool,
}

/// Run `lineage` and return its stdout; panics on failure.
fn lineage(s: &Settings, args: &[&str]) -> String {
    let o = Command::new(&s.bin).args(args).output().unwrap();
    assert!(
        o.status.success(),
        "lineage {args:?}: {}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// Append about `commits` commits (`--batch-rows 10`) with the CLI.
fn append(s: &Settings, store: &str, work: &Path, commits: usize, seed: u64) {
    let input = input_file(work, commits * 10, seed);
    lineage(
        s,
        &[
            "append",
            "--store",
            store,
            "--input",
            input.to_str().unwrap(),
            "--batch-rows",
            "10",
        ],
    );
    std::fs::remove_file(input).unwrap();
}

fn build_cli(size: usize, s: &Settings, store: &str, work: &Path) {
    let t = Instant::now();
    let mut done = 0;
    let mut seed = 1000;
    while done < size {
        let n = s.seal_every.min(size - done);
        append(s, store, work, n, seed);
        seed += 1;
        lineage(s, &seal_args(store, s));
        done += n;
    }
    eprintln!(
        "  built {size} commits with the CLI in {:.0} s",
        t.elapsed().as_secs_f64()
    );
}

/// `seal`, with the bench's lookback when it has one.
fn seal_args<'a>(store: &'a str, s: &'a Settings) -> Vec<&'a str> {
    let mut v = vec!["seal", "--store", store];
    if let Some(l) = &s.lookback {
        v.extend(["--lookback", l.as_str()]);
    }
    v
}

/// `size` commits in one `append` (`--batch-rows 10`), then one `seal`.
fn build_burst(size: usize, s: &Settings, store: &str, work: &Path) {
    let t = Instant::now();
    append(s, store, work, size, 1000);
    let appended = t.elapsed().as_secs_f64();
    lineage(s, &seal_args(store, s));
    eprintln!(
        "  appended {size} commits in one burst in {appended:.0} s, sealed in {:.0} s",
        t.elapsed().as_secs_f64() - appended
    );
}

async fn build_library(size: usize, s: &Settings, root: &Path) {
    let t = Instant::now();
    let store = Arc::new(Bulk {
        root: root.to_path_buf(),
        read: PosixPublisher::new(root),
    });
    // 2020-01-01, 10^6 commits a day.
    let clock = Arc::new(SimClock {
        us: AtomicI64::new(1_577_836_800_000_000),
        step_us: 86_400,
    });
    let chunks = size.div_ceil(s.seal_every);
    for c in 0..chunks {
        let rows = s.seal_every.min(size - c * s.seal_every);
        Writer::new(store.clone())
            .with_clock(clock.clone())
            .with_batch_rows(1)
            .append(&validated(rows, 1_000 + c as u64), |_| {})
            .await
            .unwrap();
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
                "  generated {} commits in {:.0} s",
                (c + 1) * s.seal_every,
                t.elapsed().as_secs_f64()
            );
        }
    }
    eprintln!(
        "  generated {size} commits through the library in {:.0} s",
        t.elapsed().as_secs_f64()
    );
}

/// The store's first commit: leaf 0 of its Merkle tree (what `prove` proves, against the
/// newest seal). Seals add commits in index order, so it is the first entry of the time
/// index (found by descending to the smallest name at each level); its leaf-0 locator
/// must exist, or this is not the first commit and the bench stops.
fn first_commit(root: &Path) -> String {
    use lineage_store::internal::keys::{self, HistoryKey, KeyKind};
    let mut key = keys::INDEX_PREFIX.to_string();
    loop {
        let dir = root.join(&key);
        let least = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .min()
            .expect("a directory of the index is empty");
        key.push_str(&least);
        if !root.join(&key).is_dir() {
            break;
        }
        key.push('/');
    }
    let KeyKind::History(HistoryKey::Index {
        commit_id, run_id, ..
    }) = keys::classify(&key)
    else {
        unreachable!("{key} is not an index entry");
    };
    let locator = keys::leaf_key(&commit_id, 0, &run_id);
    assert!(
        root.join(&locator).is_file(),
        "{key} is the first index entry, but {locator} (leaf 0) is missing"
    );
    commit_id
}

const OPS: [&str; 5] = [
    "log --since-seal",
    "verify --since-seal",
    "verify --since-seal --grace 1s",
    "seal",
    "prove",
];

fn op_args<'a>(op: &str, store: &'a str, first: &'a str, s: &'a Settings) -> Vec<&'a str> {
    match op {
        "log --since-seal" => vec!["log", "--store", store, "--since-seal"],
        "verify --since-seal" => vec!["verify", "--store", store, "--since-seal"],
        "verify --since-seal --grace 1s" => {
            vec!["verify", "--store", store, "--since-seal", "--grace", "1s"]
        }
        "seal" => seal_args(store, s),
        _ => vec!["prove", "--store", store, first],
    }
}

/// System calls of one run under `strace -f -c`: (all, stat family, getdents64, openat).
fn syscalls(s: &Settings, args: &[&str], work: &Path) -> [u64; 4] {
    let out = work.join("strace.txt");
    let o = Command::new("strace")
        .args(["-f", "-c", "-o", out.to_str().unwrap()])
        .arg(&s.bin)
        .args(args)
        .output()
        .unwrap();
    assert!(o.status.success(), "strace lineage {args:?}");
    let text = std::fs::read_to_string(&out).unwrap();
    let mut c = [0u64; 4];
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        // % time, seconds, usecs/call, calls, [errors], syscall
        let (Some(name), Some(calls)) = (f.last(), f.get(3).and_then(|v| v.parse::<u64>().ok()))
        else {
            continue;
        };
        match *name {
            "total" => c[0] = calls,
            "statx" | "newfstatat" | "stat" | "lstat" | "fstat" => c[1] += calls,
            "getdents64" => c[2] += calls,
            "openat" | "open" => c[3] += calls,
            _ => {}
        }
    }
    c
}

struct Row {
    size: usize,
    op: &'static str,
    best_ms: f64,
    calls: [u64; 4],
}

fn run_size(size: usize, s: &Settings, base: &Path, rt: &tokio::runtime::Runtime) -> Vec<Row> {
    eprintln!("{size} commits:");
    let work = base.join(format!("{}n{size}", if s.bursty { "burst-" } else { "" }));
    let root = work.join("store");
    let store = root.to_str().unwrap().to_string();
    if s.reuse && root.join("_lineage").is_dir() {
        eprintln!("  reusing {}", root.display());
    } else {
        let _ = std::fs::remove_dir_all(&work);
        std::fs::create_dir_all(&work).unwrap();
        if s.bursty {
            build_burst(size, s, &store, &work);
        } else if size <= s.cli_build_max {
            build_cli(size, s, &store, &work);
        } else {
            rt.block_on(build_library(size, s, &root));
        }
    }
    let first = first_commit(&root);
    // Not measured: the tail sealed by the real clock.
    append(s, &store, &work, s.new, 1);
    lineage(s, &seal_args(&store, s));
    let mut best: BTreeMap<&str, f64> = BTreeMap::new();
    for round in 0..s.rounds {
        append(s, &store, &work, s.new, 2 + round as u64);
        for op in OPS {
            let t = Instant::now();
            let out = lineage(s, &op_args(op, &store, &first, s));
            let ms = t.elapsed().as_secs_f64() * 1e3;
            if op == "log --since-seal" {
                let n = out.lines().filter(|l| !l.trim().is_empty()).count();
                assert!(n >= s.new, "log --since-seal listed {n} commits: {out}");
            }
            let b = best.entry(op).or_insert(f64::MAX);
            *b = b.min(ms);
        }
    }
    append(s, &store, &work, s.new, 99);
    let mut rows = Vec::new();
    for op in OPS {
        let calls = syscalls(s, &op_args(op, &store, &first, s), &work);
        eprintln!("  {op}: {:.0} ms, {} system calls", best[op], calls[0]);
        rows.push(Row {
            size,
            op,
            best_ms: best[op],
            calls,
        });
    }
    rows
}

/// `target/release/lineage` when it was built, else `target/debug/lineage` (said on
/// stderr: an unoptimised binary's times are not the ones to publish).
fn default_bin(root: &Path) -> PathBuf {
    let release = root.join("target/release/lineage");
    if release.exists() {
        return release;
    }
    let debug = root.join("target/debug/lineage");
    eprintln!(
        "no target/release/lineage: timing {} (a debug build)",
        debug.display()
    );
    debug
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let sizes: Vec<usize> = arg(&args, "--sizes")
        .unwrap_or_else(|| "1000,20000,100000,1000000".into())
        .split(',')
        .map(|v| v.parse().unwrap())
        .collect();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let pattern = arg(&args, "--pattern").unwrap_or_else(|| "spread".into());
    assert!(
        ["spread", "bursty"].contains(&pattern.as_str()),
        "--pattern {pattern}: spread or bursty"
    );
    let bursty = pattern == "bursty";
    let s = Settings {
        new: arg(&args, "--new").map_or(100, |v| v.parse().unwrap()),
        lookback: (!bursty).then(|| arg(&args, "--lookback").unwrap_or_else(|| "1s".into())),
        bursty,
        seal_every: arg(&args, "--seal-every").map_or(1000, |v| v.parse().unwrap()),
        rounds: arg(&args, "--rounds").map_or(5, |v| v.parse().unwrap()),
        cli_build_max: arg(&args, "--cli-build-max").map_or(20_000, |v| v.parse().unwrap()),
        bin: arg(&args, "--lineage-bin").map_or_else(|| default_bin(&root), PathBuf::from),
        reuse: args.iter().any(|a| a == "--reuse"),
    };
    assert!(
        s.bin.exists(),
        "{} missing: cargo build --release --bin lineage (or --lineage-bin)",
        s.bin.display()
    );
    let base =
        arg(&args, "--dir").map_or_else(|| root.join("target/bench-history-disk"), PathBuf::from);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut rows = Vec::new();
    for &size in &sizes {
        rows.extend(run_size(size, &s, &base, &rt));
        if !args.iter().any(|a| a == "--keep") {
            let name = format!("{}n{size}", if s.bursty { "burst-" } else { "" });
            let _ = std::fs::remove_dir_all(base.join(name));
        }
    }
    println!(
        "\n| commits | operation | fastest of {} | system calls | stat | getdents64 | openat |",
        s.rounds
    );
    println!("|---:|---|---:|---:|---:|---:|---:|");
    for r in &rows {
        println!(
            "| {} | {} | {:.0} ms | {} | {} | {} | {} |",
            r.size, r.op, r.best_ms, r.calls[0], r.calls[1], r.calls[2], r.calls[3]
        );
    }
    let (lo, hi) = (sizes.iter().min().copied(), sizes.iter().max().copied());
    if let (Some(lo), Some(hi)) = (lo, hi) {
        if lo < hi {
            println!("\n| operation | time {lo} → {hi} | system calls {lo} → {hi} | within 2x |");
            println!("|---|---:|---:|---|");
            for op in OPS {
                let find = |n: usize| rows.iter().find(|r| r.size == n && r.op == op);
                if let (Some(a), Some(b)) = (find(lo), find(hi)) {
                    let ok = b.best_ms <= 2.0 * a.best_ms;
                    println!(
                        "| {op} | {:.0} ms → {:.0} ms ({:.2}×) | {} → {} | {} |",
                        a.best_ms,
                        b.best_ms,
                        b.best_ms / a.best_ms,
                        a.calls[0],
                        b.calls[0],
                        if ok { "yes" } else { "NO" }
                    );
                }
            }
        }
    }
}
