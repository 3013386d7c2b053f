//! `lineage scan`: the rows of exactly the sealed parts, in every output format.

use std::collections::BTreeSet;

use serde_json::Value;

use super::{ok, plant, Store, ALL_ROWS, SEAL1_ROWS, SEAL2_ROWS};
use crate::support;

fn ndjson_rows(s: &Store, extra: &[&str]) -> Vec<Value> {
    let out = s.dir.path().join("out.ndjson");
    let mut a = vec!["scan", "--out", out.to_str().unwrap()];
    a.extend_from_slice(extra);
    ok(&s.run(&a));
    std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn scan_reads_exactly_the_sealed_rows() {
    let s = Store::new();
    let rows = ndjson_rows(&s, &[]);
    assert_eq!(rows.len() as u64, SEAL2_ROWS);
    let seqs: BTreeSet<i64> = rows
        .iter()
        .map(|r| r["sequence"].as_i64().unwrap())
        .collect();
    assert_eq!(seqs, (1..=70).collect(), "each sealed event once");
    assert_eq!(
        ndjson_rows(&s, &["--as-of-seal", "1"]).len() as u64,
        SEAL1_ROWS
    );
    let o = s.run(&[
        "scan",
        "--include-unsealed",
        "--out",
        s.dir.path().join("u.csv").to_str().unwrap(),
    ]);
    let (_, err) = support::text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("unsealed (checked against their own pointers only"),
        "{err}"
    );
    let csv = std::fs::read_to_string(s.dir.path().join("u.csv")).unwrap();
    assert_eq!(
        csv.lines().count() as u64,
        ALL_ROWS + 1,
        "a header and every row"
    );
    // Filters and projection.
    let a = ndjson_rows(&s, &["--run-id", "run-a", "--columns", "sequence,run_id"]);
    assert_eq!(a.len(), 35);
    assert!(a
        .iter()
        .all(|r| r["run_id"] == "run-a" && r.as_object().unwrap().len() == 2));
    let t = ndjson_rows(&s, &["--target-crs", "urn:ogc:def:crs:EPSG::3857"]);
    assert_eq!(t.len(), 23, "every third of 1..=70");
    assert!(t.iter().all(|r| r["target_crs"] == "EPSG:3857"));
    let f = ndjson_rows(&s, &["--feature-id", "buildings:00000042"]);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0]["sequence"], 42);
    assert!(
        ndjson_rows(&s, &["--feature-id", "buildings:00000075"]).is_empty(),
        "unsealed"
    );
    let o = s.run(&["scan", "--columns", "nope", "--out", "x.ndjson"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(support::text(&o).1.contains("no column \"nope\""));
}

#[test]
fn scan_writes_parquet_arrow_and_a_stream() {
    let s = Store::new();
    let pq = s.dir.path().join("o.parquet");
    ok(&s.run(&["scan", "--out", pq.to_str().unwrap()]));
    let r = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
        std::fs::File::open(&pq).unwrap(),
    )
    .unwrap()
    .build()
    .unwrap();
    let n: usize = r.map(|b| b.unwrap().num_rows()).sum();
    assert_eq!(n as u64, SEAL2_ROWS);
    let arrow = s.dir.path().join("o.arrow");
    ok(&s.run(&["scan", "--out", arrow.to_str().unwrap()]));
    let r =
        arrow_ipc::reader::FileReader::try_new(std::fs::File::open(&arrow).unwrap(), None).unwrap();
    assert_eq!(r.schema().fields().len(), 15);
    let n: usize = r.map(|b| b.unwrap().num_rows()).sum();
    assert_eq!(n as u64, SEAL2_ROWS);
    let o = s.run(&["scan", "--out", "-"]);
    assert_eq!(o.status.code(), Some(0));
    let r = arrow_ipc::reader::StreamReader::try_new(std::io::Cursor::new(o.stdout), None).unwrap();
    let n: usize = r.map(|b| b.unwrap().num_rows()).sum();
    assert_eq!(n as u64, SEAL2_ROWS);
    let o = s.run(&["scan", "--out", "o.txt"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(support::text(&o)
        .1
        .contains("the extension names the format"));
}

#[test]
fn a_planted_part_is_never_scanned() {
    let s = Store::new();
    let (_, part) = s.sealed_commit();
    plant(&s, &part);
    let rows = ndjson_rows(&s, &["--include-unsealed"]);
    assert_eq!(rows.len() as u64, ALL_ROWS);
}

#[test]
fn a_feature_lookup_skips_parts_by_their_bloom_filters() {
    let s = Store::new();
    let out = s.dir.path().join("f.ndjson");
    let o = s.run(&[
        "scan",
        "--feature-id",
        "buildings:00000042",
        "--out",
        out.to_str().unwrap(),
    ]);
    let (_, err) = support::text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let parts = s.files_json(&[]).len();
    // "<read> parts read and checked (...), <skipped> skipped by ..."
    let read: usize = err
        .split(" parts read")
        .next()
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let skipped: usize = err
        .split("), ")
        .nth(1)
        .and_then(|t| t.split(" skipped").next())
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(read + skipped, parts, "{err}");
    assert!(
        read <= 2,
        "one part holds it (a false positive at most): {err}"
    );
    assert_eq!(std::fs::read_to_string(&out).unwrap().lines().count(), 1);
}
