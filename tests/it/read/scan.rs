//! `lineage scan`: the rows of exactly the sealed parts, in every output format.

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde_json::Value;

use super::{ok, plant, Store, ALL_ROWS, SEAL1_ROWS, SEAL2_ROWS};
use crate::support::{self, sample};

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
    assert_eq!(r.schema().fields().len(), 21, "NDJSON was written as 1.3.0");
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

/// Every row group of a file, concatenated.
fn parquet_rows(p: &std::path::Path) -> arrow_array::RecordBatch {
    let b = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
        std::fs::File::open(p).unwrap(),
    )
    .unwrap();
    let schema = b.schema().clone();
    let batches: Vec<_> = b.build().unwrap().map(|b| b.unwrap()).collect();
    arrow_select::concat::concat_batches(&schema, &batches).unwrap()
}

#[test]
fn scan_to_parquet_copies_the_checked_column_chunks_and_holds_the_decoded_rows() {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let s = Store::new();
    // Every column and row to Parquet: the parts' row groups copied (one per part);
    // to Arrow IPC: decoded. The same rows, in the same (snapshot) order.
    let pq = s.dir.path().join("all.parquet");
    let (_, err) = support::text(&s.run(&["scan", "--out", pq.to_str().unwrap()]));
    assert!(err.contains("70 rows"), "{err}");
    let arrow = s.dir.path().join("all.arrow");
    ok(&s.run(&["scan", "--out", arrow.to_str().unwrap()]));
    let r =
        arrow_ipc::reader::FileReader::try_new(std::fs::File::open(&arrow).unwrap(), None).unwrap();
    let schema = r.schema();
    let decoded: Vec<_> = r.map(|b| b.unwrap()).collect();
    let decoded = arrow_select::concat::concat_batches(&schema, &decoded).unwrap();
    let copied = parquet_rows(&pq);
    assert_eq!(
        copied.schema(),
        decoded.schema(),
        "the contract's Arrow schema"
    );
    assert_eq!(copied, decoded);
    // Copied, not re-encoded: one row group per sealed part, each column chunk the
    // part's own bytes (same compressed size), bloom filters kept.
    let files = s.files_json(&[]);
    let out = SerializedFileReader::new(std::fs::File::open(&pq).unwrap()).unwrap();
    let meta = out.metadata();
    assert_eq!(meta.num_row_groups(), files.len());
    let first = files[0]["location"].as_str().unwrap();
    let part = SerializedFileReader::new(std::fs::File::open(first).unwrap()).unwrap();
    let (a, b) = (meta.row_group(0), part.metadata().row_group(0));
    for j in 0..b.num_columns() {
        assert_eq!(
            a.column(j).compressed_size(),
            b.column(j).compressed_size(),
            "column {j}"
        );
    }
    let fid = (0..a.num_columns())
        .find(|&j| a.column(j).column_path().string() == "feature_id")
        .unwrap();
    assert!(a.column(fid).bloom_filter_offset().is_some());
    // With a projection or a filter the scan decodes: the same rows as before.
    let some = s.dir.path().join("some.parquet");
    ok(&s.run(&[
        "scan",
        "--columns",
        "sequence,run_id",
        "--out",
        some.to_str().unwrap(),
    ]));
    let some = parquet_rows(&some);
    assert_eq!(some.num_columns(), 2);
    assert_eq!(
        some.column(0),
        decoded.column_by_name("sequence").unwrap(),
        "same rows, same order"
    );
}

/// Issue 35: a feature lookup skipped a part on a bloom filter nobody checked. Zeroing the
/// bit set of one part's `feature_id` filter (same size) made `scan --feature-id F`
/// return 6 of F's 7 rows with exit 0. A part is now skipped only on a tail (filters and
/// footer) that hashes to the digest its pointer records: this one is read whole, and
/// its digest names it.
#[test]
fn a_zeroed_bloom_filter_never_hides_a_row() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let path = store.to_str().unwrap();
    let rows: Vec<Value> = (1..=1400)
        .map(|i| {
            let mut e = sample::event(i, "run-a", "EPSG:4326");
            if i % 200 == 100 {
                e["feature_id"] = "parcels:wanted".into();
            }
            e
        })
        .collect();
    let input = dir.path().join("in.ndjson");
    std::fs::write(&input, sample::ndjson(&rows)).unwrap();
    let run = |a: &[&str]| {
        let mut v = vec![a[0], "--store", path];
        v.extend_from_slice(&a[1..]);
        support::lineage(&v, None)
    };
    ok(&run(&[
        "append",
        "--input",
        input.to_str().unwrap(),
        "--batch-rows",
        "200",
    ]));
    ok(&run(&["seal"]));
    let scan = |extra: &[&str]| {
        let out = dir.path().join("f.ndjson");
        let mut a = vec![
            "scan",
            "--feature-id",
            "parcels:wanted",
            "--out",
            out.to_str().unwrap(),
        ];
        a.extend_from_slice(extra);
        let o = run(&a);
        let n = std::fs::read_to_string(&out).map_or(0, |t| t.lines().count());
        (o, n)
    };
    let (o, n) = scan(&[]);
    let (_, err) = support::text(&o);
    assert_eq!((o.status.code(), n), (Some(0), 7), "{err}");
    assert!(err.contains("7 parts read and checked"), "{err}");
    // Zero the bit set of the feature_id filter of the first part holding F.
    let parts: Vec<PathBuf> = walk_parts(&store);
    let holder = parts
        .iter()
        .find(|p| {
            let b = parquet_rows(p);
            let c = b.column(b.schema().index_of("feature_id").unwrap());
            let s = c
                .as_any()
                .downcast_ref::<arrow_array::StringArray>()
                .unwrap();
            s.iter().any(|v| v == Some("parcels:wanted"))
        })
        .unwrap();
    let mut bytes = std::fs::read(holder).unwrap();
    let meta = parquet::file::metadata::ParquetMetaDataReader::new()
        .parse_and_finish(&bytes::Bytes::from(bytes.clone()))
        .unwrap();
    let chunk = meta
        .row_group(0)
        .columns()
        .iter()
        .find(|c| c.column_path().string() == "feature_id")
        .unwrap();
    let off = chunk.bloom_filter_offset().unwrap() as usize;
    let len = chunk.bloom_filter_length().unwrap() as usize;
    let bitset = 1usize << (usize::BITS - 1 - len.leading_zeros()); // the header is < 32 bytes
    assert!(bitset >= 256, "{len}");
    bytes[off + len - bitset..off + len].fill(0);
    std::fs::write(holder, &bytes).unwrap();
    let (o, n) = scan(&[]);
    let (_, err) = support::text(&o);
    let name = holder.file_name().unwrap().to_str().unwrap();
    assert_eq!(o.status.code(), Some(1), "returned {n} rows: {err}");
    assert!(err.contains(name) && err.contains("not as sealed"), "{err}");
}

fn walk_parts(root: &std::path::Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(root).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() && !p.ends_with("_lineage") && !p.ends_with("_delta_log") {
            out.extend(walk_parts(&p));
        } else if p.extension().is_some_and(|x| x == "parquet") {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// Issue 35: parts whose pointers record no tail digest (written before) are never
/// skipped on their footers: a feature lookup reads them whole, and says how many.
#[test]
fn parts_written_before_the_tail_digest_are_read_whole_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    copy_tree(
        std::path::Path::new("tests/fixtures/store-main-cd44522"),
        &store,
    );
    let out = dir.path().join("f.ndjson");
    let o = support::lineage(
        &[
            "scan",
            "--store",
            store.to_str().unwrap(),
            "--feature-id",
            "f-1",
            "--out",
            out.to_str().unwrap(),
        ],
        None,
    );
    let (_, err) = support::text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert_eq!(std::fs::read_to_string(&out).unwrap().lines().count(), 1);
    assert!(err.contains(" 0 skipped by footer statistics"), "{err}");
    let read: u64 = err
        .split(" parts read")
        .next()
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(read > 1, "{err}");
    assert!(
        err.contains(&format!(
            "; {read} of the parts read were read whole because their pointers record no digest"
        )),
        "{err}"
    );
}

fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let dest = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_tree(&p, &dest);
        } else {
            std::fs::copy(&p, &dest).unwrap();
        }
    }
}
