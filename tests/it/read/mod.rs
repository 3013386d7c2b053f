//! The trusted read path: `lineage files`, `lineage scan` and the exports read exactly
//! what the seals cover, each part checked against its sealed pointer; a tampered store
//! is refused naming the object; a planted file is never read.

mod anchors;
mod exit_codes;
mod files;
mod library;
mod scan;
mod since;
mod since_witness;
mod tamper;

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

use crate::support::{self, sample};

/// A store: 40 events of run-a/run-b sealed by seal 1, 30 more sealed by seal 2, then 10
/// unsealed. Returns (store path, rows of seal 1, rows of seals 1..2, rows in all).
pub(super) struct Store {
    pub dir: tempfile::TempDir,
    pub path: String,
}

pub(super) const SEAL1_ROWS: u64 = 40;
pub(super) const SEAL2_ROWS: u64 = 70;
pub(super) const ALL_ROWS: u64 = 80;

impl Store {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store").display().to_string();
        let rows = sample::events(80);
        let s = Store { dir, path };
        s.append(&rows[..40]);
        ok(&s.run(&["seal"]));
        s.append(&rows[40..70]);
        ok(&s.run(&["seal"]));
        s.append(&rows[70..]);
        s
    }

    fn append(&self, rows: &[Value]) {
        let input = self.dir.path().join("in.ndjson");
        std::fs::write(&input, sample::ndjson(rows)).unwrap();
        ok(&self.run(&[
            "append",
            "--input",
            input.to_str().unwrap(),
            "--batch-rows",
            "6",
        ]));
    }

    /// `lineage <cmd> --store <store> <rest...>`.
    pub fn run(&self, args: &[&str]) -> Output {
        let mut a = vec![args[0], "--store", &self.path];
        a.extend_from_slice(&args[1..]);
        if args[0] == "export" {
            a = vec!["export", args[1], "--store", &self.path];
            a.extend_from_slice(&args[2..]);
        }
        support::lineage(&a, None)
    }

    pub fn root(&self) -> PathBuf {
        PathBuf::from(&self.path)
    }

    /// The JSON lines of `lineage files --json` (must succeed).
    pub fn files_json(&self, extra: &[&str]) -> Vec<Value> {
        let mut a = vec!["files", "--json"];
        a.extend_from_slice(extra);
        ok(&self.run(&a))
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// Every part file under the store (relative paths), sorted.
    pub fn part_files(&self) -> Vec<String> {
        sample::snapshot(&self.root())
            .into_keys()
            .filter(|k| k.starts_with("run_id=") && k.ends_with(".parquet"))
            .collect()
    }

    /// A sealed pointer (of seal 1) and the part it names.
    pub fn sealed_commit(&self) -> (PathBuf, PathBuf) {
        let seal: Value = serde_json::from_slice(
            &std::fs::read(self.root().join("_lineage/seals/00000000000000000001.json")).unwrap(),
        )
        .unwrap();
        let key = seal["entries"][0]["key"].as_str().unwrap();
        let ptr = self.root().join(key);
        let p: Value = serde_json::from_slice(&std::fs::read(&ptr).unwrap()).unwrap();
        (ptr, self.root().join(p["part_path"].as_str().unwrap()))
    }
}

pub(super) fn ok(o: &Output) -> String {
    let (out, err) = support::text(o);
    assert_eq!(o.status.code(), Some(0), "stdout: {out}\nstderr: {err}");
    out
}

/// Flip one byte in the middle of a file.
pub(super) fn flip_byte(p: &Path) {
    let mut b = std::fs::read(p).unwrap();
    let i = b.len() / 2;
    b[i] ^= 0x01;
    std::fs::write(p, b).unwrap();
}

/// Copy a part under a new `part-<uuid>.parquet` name beside it, and to
/// `_lineage/stash.parquet`: what a raw glob reads and the trusted path must not.
pub(super) fn plant(store: &Store, part: &Path) {
    let planted = part
        .parent()
        .unwrap()
        .join("part-01a00000-0000-7000-8000-000000000001.parquet");
    std::fs::copy(part, planted).unwrap();
    std::fs::copy(part, store.root().join("_lineage/stash.parquet")).unwrap();
}
