//! `lineage files`: exactly the parts of the commits sealed up to a seal.

use std::collections::BTreeSet;

use super::{ok, plant, Store, ALL_ROWS, SEAL1_ROWS, SEAL2_ROWS};

fn rows(lines: &[serde_json::Value]) -> u64 {
    lines.iter().map(|l| l["rows"].as_u64().unwrap()).sum()
}

#[test]
fn files_lists_the_parts_of_the_sealed_commits_as_of_each_seal() {
    let s = Store::new();
    let newest = s.files_json(&[]);
    assert_eq!(
        rows(&newest),
        SEAL2_ROWS,
        "seals 1..2, not the unsealed commits"
    );
    assert!(newest.iter().all(|l| l["sealed_by"].as_u64().is_some()));
    let first = s.files_json(&["--as-of-seal", "1"]);
    assert_eq!(rows(&first), SEAL1_ROWS);
    assert!(first.iter().all(|l| l["sealed_by"] == 1));
    let all = s.files_json(&["--include-unsealed"]);
    assert_eq!(rows(&all), ALL_ROWS);
    assert_eq!(
        all.len(),
        s.part_files().len(),
        "every part of the store, once"
    );
    // Plain lines are the locations: absolute paths of files that exist.
    let plain = ok(&s.run(&["files"]));
    let locs: Vec<&str> = plain.lines().collect();
    assert_eq!(locs.len(), newest.len());
    for (l, j) in locs.iter().zip(&newest) {
        assert_eq!(*l, j["location"].as_str().unwrap());
        assert!(std::path::Path::new(l).is_absolute() && std::path::Path::new(l).exists());
        let bytes = std::fs::read(l).unwrap();
        assert_eq!(bytes.len() as u64, j["size_bytes"].as_u64().unwrap());
        assert_eq!(
            lineage_store::internal::digest::sha256_hex(&bytes),
            j["sha256"].as_str().unwrap()
        );
    }
    // Filters.
    let a = s.files_json(&["--run-id", "run-a"]);
    assert!(!a.is_empty() && a.iter().all(|l| l["run_id"] == "run-a"));
    let b = s.files_json(&["--run-id", "run-b"]);
    assert_eq!(rows(&a) + rows(&b), SEAL2_ROWS);
    let t = s.files_json(&["--target-crs", "EPSG:3857"]);
    assert!(!t.is_empty() && t.iter().all(|l| l["target_crs"] == "EPSG:3857"));
    // A seal that does not exist is a usage error.
    let o = s.run(&["files", "--as-of-seal", "3"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(crate::support::text(&o).1.contains("seals are 1..=2"));
}

#[test]
fn a_planted_part_is_not_listed() {
    let s = Store::new();
    let before = ok(&s.run(&["files", "--include-unsealed"]));
    let (_, part) = s.sealed_commit();
    plant(&s, &part);
    assert_eq!(ok(&s.run(&["files", "--include-unsealed"])), before);
    let listed: BTreeSet<&str> = before.lines().collect();
    assert_eq!(
        listed.len(),
        s.part_files().len() - 1,
        "the planted copy is on disk"
    );
}

#[test]
fn a_store_without_a_seal_has_nothing_to_vouch_for() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s");
    let input = dir.path().join("in.ndjson");
    std::fs::write(
        &input,
        crate::support::sample::ndjson(&crate::support::sample::events(5)),
    )
    .unwrap();
    let p = path.to_str().unwrap();
    ok(&crate::support::lineage(
        &["append", "--store", p, "--input", input.to_str().unwrap()],
        None,
    ));
    let o = crate::support::lineage(&["files", "--store", p], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(crate::support::text(&o).1.contains("has no seal"));
    let o = crate::support::lineage(&["files", "--store", p, "--include-unsealed"], None);
    assert_eq!(ok(&o).lines().count(), 3, "one part per run and target CRS");
}

/// The README's synopsis of `files` and `scan` names every flag their `--help` lists
/// (`--endpoint-url`, which every command takes, is said once above the synopsis).
#[test]
fn the_readme_synopsis_lists_every_flag_of_files_and_scan() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let synopsis = &readme[readme.find("## The CLI").unwrap()..];
    for cmd in ["files", "scan"] {
        let line = synopsis
            .lines()
            .find(|l| l.starts_with(&format!("lineage {cmd} ")))
            .unwrap_or_else(|| panic!("no synopsis of {cmd}"));
        let help = ok(&crate::support::lineage(&[cmd, "--help"], None));
        for flag in help
            .split_whitespace()
            .filter(|w| w.starts_with("--"))
            .map(|w| w.trim_end_matches([',', '.', ')', ':']))
        {
            if ["--help", "--endpoint-url"].contains(&flag)
                || !flag[2..]
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c == '-')
            {
                continue;
            }
            assert!(
                line.contains(flag),
                "README's `lineage {cmd}` lacks {flag}: {line}"
            );
        }
    }
}

/// Issue 35: `files --run-id nope` printed nothing (exit 0) while `log --run-id nope`
/// exited 2. One rule in every read: a run the store never had is refused (exit 2, named);
/// a run that has commits, none of them in the snapshot, is an empty answer.
#[test]
fn a_run_the_store_never_had_is_refused_by_every_read() {
    let s = Store::new();
    let out = s.dir.path().join("x.ndjson");
    for args in [
        vec!["files", "--run-id", "nope"],
        vec!["scan", "--run-id", "nope", "--out", out.to_str().unwrap()],
        vec!["log", "--run-id", "nope"],
    ] {
        let o = s.run(&args);
        let (_, err) = crate::support::text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("no commits of run_id nope"), "{args:?}: {err}");
    }
    assert!(!out.exists());
    // run-a has commits, but none sealed by seal 1 with this CRS filter: an empty answer.
    let o = s.run(&[
        "files",
        "--run-id",
        "run-a",
        "--as-of-seal",
        "1",
        "--target-crs",
        "EPSG:25832",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", crate::support::text(&o).1);
}

/// Issue 35: `scan --out F.ndjson` left out null keys, so `check` refused the scan's own
/// output (`field rejection_reason: is missing`). A scan to NDJSON or CSV is `append`
/// input: appended to a new store, it holds the same rows.
#[test]
fn a_scan_to_ndjson_or_csv_appends_back_as_the_same_rows() {
    let s = Store::new();
    let parquet = s.dir.path().join("all.parquet");
    ok(&s.run(&["scan", "--out", parquet.to_str().unwrap()]));
    let want = sorted_rows(&parquet);
    for ext in ["ndjson", "csv"] {
        let out = s.dir.path().join(format!("all.{ext}"));
        ok(&s.run(&["scan", "--out", out.to_str().unwrap()]));
        let o = crate::support::lineage(&["check", "--input", out.to_str().unwrap()], None);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{ext}: {}",
            crate::support::text(&o).1
        );
        let copy = s.dir.path().join(format!("copy-{ext}"));
        let c = copy.to_str().unwrap();
        ok(&crate::support::lineage(
            &["append", "--store", c, "--input", out.to_str().unwrap()],
            None,
        ));
        ok(&crate::support::lineage(&["seal", "--store", c], None));
        let back = s.dir.path().join(format!("back-{ext}.parquet"));
        ok(&crate::support::lineage(
            &["scan", "--store", c, "--out", back.to_str().unwrap()],
            None,
        ));
        assert_eq!(sorted_rows(&back), want, "{ext}");
    }
}

/// Every row of a Parquet file as JSON text, sorted.
fn sorted_rows(p: &std::path::Path) -> Vec<String> {
    let f = std::fs::File::open(p).unwrap();
    let r = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(f)
        .unwrap()
        .build()
        .unwrap();
    let mut out = Vec::new();
    for b in r {
        let b = b.unwrap();
        let mut w = arrow_json::WriterBuilder::new()
            .with_explicit_nulls(true)
            .build::<_, arrow_json::writer::LineDelimited>(Vec::new());
        w.write(&b).unwrap();
        w.finish().unwrap();
        out.extend(
            String::from_utf8(w.into_inner())
                .unwrap()
                .lines()
                .map(str::to_string),
        );
    }
    out.sort();
    assert!(!out.is_empty());
    out
}
