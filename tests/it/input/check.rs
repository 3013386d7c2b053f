//! Issue 22: every error of an input in one run (`--max-errors`), `--json` errors for
//! machines, hints for standard input in another format, and `lineage check` (CLI and
//! library), which validates exactly as `append` does without a store.

use std::path::Path;

use arrow_array::RecordBatch;
use bytes::Bytes;
use serde_json::Value;

use lineage_store::internal::input::{parse, parse_validated};
use lineage_store::{check, check_batches, validate_all, CheckOptions, Format, Input};

use crate::support::bad_input::{self, csv_header, csv_row, line, ABSENT};
use crate::support::sample::snapshot;
use crate::support::{lineage, text};

/// NDJSON of `n` lines, line `i` refused (an empty `stage`) when `bad(i)`.
fn ndjson_with(n: i64, bad: impl Fn(i64) -> bool) -> Vec<u8> {
    (1..=n)
        .map(|i| {
            if bad(i) {
                line(i, &[("stage", "\"\"")]) + "\n"
            } else {
                line(i, &[]) + "\n"
            }
        })
        .collect::<String>()
        .into_bytes()
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p.to_str().unwrap().to_string()
}

/// The `error: ` and `hint: ` lines of a command's stderr.
fn error_lines(err: &str) -> Vec<&str> {
    err.lines()
        .filter(|l| l.starts_with("error: ") || l.starts_with("hint: "))
        .collect()
}

#[test]
fn check_of_a_valid_input_says_what_an_append_would_do_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    // 7 events: run-a/run-b alternate, every third in EPSG:3857 (as a URN).
    let input = write(
        dir.path(),
        "events.ndjson",
        crate::support::sample::ndjson(&crate::support::sample::events(7)).as_bytes(),
    );
    let before = snapshot(dir.path());
    let o = lineage(&["check", "--input", &input, "--batch-rows", "2"], None);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert_eq!(
        out,
        "valid: 7 rows, contract 1.3.0; an append with --batch-rows 2 would make 5 commits in 4 partitions:\n\
         \x20 run_id=run-b target_crs=EPSG:4326: 3 rows, 2 commits\n\
         \x20 run_id=run-a target_crs=EPSG:4326: 2 rows, 1 commit\n\
         \x20 run_id=run-b target_crs=EPSG:3857: 1 row, 1 commit\n\
         \x20 run_id=run-a target_crs=EPSG:3857: 1 row, 1 commit\n"
    );
    let o = lineage(&["check", "--input", &input, "--json"], None);
    let v: Value = serde_json::from_str(text(&o).0.trim()).unwrap();
    assert_eq!(v["valid"], true);
    assert_eq!(v["format"], "ndjson");
    assert_eq!(
        (v["rows"].as_u64(), v["flushes"].as_u64()),
        (Some(7), Some(4))
    );
    assert_eq!(v["batch_rows"], 100_000);
    assert_eq!(v["schema_version"], "1.3.0");
    assert_eq!(v["partitions"][2]["target_crs"], "EPSG:3857");
    assert_eq!(snapshot(dir.path()), before, "check writes nothing");
    // What the append then does is what check said.
    let store = dir.path().join("store");
    let o = lineage(
        &[
            "append",
            "--store",
            store.to_str().unwrap(),
            "--input",
            &input,
            "--batch-rows",
            "2",
        ],
        None,
    );
    assert!(
        text(&o).0.ends_with("5 commits, 7 rows\n"),
        "{:?}",
        text(&o)
    );
    // Empty input: valid, nothing to do.
    let empty = write(dir.path(), "empty.csv", b"");
    let o = lineage(&["check", "--input", &empty], None);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        text(&o).0,
        "valid: the input holds no events (an append would do nothing)\n"
    );
}

/// A CSV with CRLF line ends: a bad CRS on line 2, a bad sequence and a rejection without a
/// reason on line 4.
fn bad_csv() -> Vec<u8> {
    format!(
        "{}\r\n{}\r\n{}\r\n{}\r\n",
        csv_header(),
        csv_row(1, &[("target_crs", "WGS84")]),
        csv_row(2, &[]),
        csv_row(3, &[("sequence", "x"), ("outcome", "\"rejected\"")])
    )
    .into_bytes()
}

#[test]
fn check_refuses_exactly_as_append_does_listing_every_error() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let store_s = store.to_str().unwrap();
    let ok = write(dir.path(), "ok.ndjson", &bad_input::good_ndjson(2));
    assert!(
        lineage(&["append", "--store", store_s, "--input", &ok], None)
            .status
            .success()
    );
    let before = snapshot(&store);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("bad.ndjson", ndjson_with(40, |i| i % 3 == 0)),
        ("bad.csv", bad_csv()),
        ("bad.parquet", bad_input::parquet(&drifted())),
    ];
    for (name, bytes) in cases {
        let input = write(dir.path(), name, &bytes);
        let a = lineage(&["append", "--store", store_s, "--input", &input], None);
        let c = lineage(&["check", "--input", &input], None);
        assert_eq!(
            (a.status.code(), c.status.code()),
            (Some(2), Some(2)),
            "{name}"
        );
        let (a_err, c_err) = (text(&a).1, text(&c).1);
        assert!(!error_lines(&a_err).is_empty(), "{name}: {a_err}");
        assert_eq!(error_lines(&a_err), error_lines(&c_err), "{name}");
        assert!(
            text(&c).0.starts_with("invalid: "),
            "{name}: {:?}",
            text(&c)
        );
        // --json: the same errors as objects, on stdout, for both.
        let a = lineage(
            &["append", "--store", store_s, "--input", &input, "--json"],
            None,
        );
        let c = lineage(&["check", "--input", &input, "--json"], None);
        let (aj, cj): (Value, Value) = (
            serde_json::from_str(text(&a).0.trim()).unwrap(),
            serde_json::from_str(text(&c).0.trim()).unwrap(),
        );
        assert_eq!(aj, cj, "{name}");
        assert_eq!(cj["valid"], false);
        assert_eq!(snapshot(&store), before, "{name}: nothing published");
    }
    // The CSV's errors, as objects: physical lines (CRLF), field, value, reason.
    let csv = write(dir.path(), "bad.csv", &bad_csv());
    let c = lineage(&["check", "--input", &csv, "--json"], None);
    let v: Value = serde_json::from_str(text(&c).0.trim()).unwrap();
    let got: Vec<(Value, Value, Value)> = v["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["line"].clone(), e["field"].clone(), e["value"].clone()))
        .collect();
    assert_eq!(
        got,
        [
            (2.into(), "target_crs".into(), "WGS84".into()),
            (4.into(), "sequence".into(), "x".into()),
            (4.into(), "rejection_reason".into(), Value::Null),
        ]
    );
    assert_eq!(v["error_count"], 3);
    assert!(v["errors"][0]["row"].is_null());
    assert!(v["errors"][0]["reason"]
        .as_str()
        .unwrap()
        .contains("is not an EPSG CRS identifier"));
}

/// A table as DuckDB's read_json and pyarrow's from_pylist make it: event_id a UUID
/// (16 bytes), times as text, strategy_index Int64.
fn drifted() -> RecordBatch {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Int32Type, TimestampMicrosecondType};
    use arrow_array::{ArrayRef, FixedSizeBinaryArray, Int64Array, StringArray};
    use std::sync::Arc;
    let good = bad_input::contract_batch(4);
    let time = good
        .column(3)
        .as_primitive::<TimestampMicrosecondType>()
        .clone();
    let strat: Int64Array = good
        .column(10)
        .as_primitive::<Int32Type>()
        .iter()
        .map(|v| v.map(i64::from))
        .collect();
    let text: StringArray = time
        .values()
        .iter()
        .map(|&us| Some(lineage_store::internal::time::rfc3339_us(us)))
        .collect();
    bad_input::batch_of(
        bad_input::named(&good)
            .into_iter()
            .map(|(n, c)| match n {
                "event_id" => (
                    n,
                    Arc::new(
                        FixedSizeBinaryArray::try_from_iter((0..4u8).map(|i| [i; 16])).unwrap(),
                    ) as ArrayRef,
                ),
                "event_time_utc" => (n, Arc::new(text.clone()) as ArrayRef),
                "strategy_index" => (n, Arc::new(strat.clone()) as ArrayRef),
                _ => (n, c),
            })
            .collect(),
    )
}

#[test]
fn max_errors_lists_the_first_n_in_input_order_and_counts_them_all() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let input = write(dir.path(), "bad.ndjson", &ndjson_with(30, |_| true));
    for (cmd, n, listed, more) in [
        (
            "append",
            None,
            20,
            Some("error: … and 10 more errors (30 in all)"),
        ),
        (
            "check",
            Some("5"),
            5,
            Some("error: … and 25 more errors (30 in all)"),
        ),
        ("append", Some("0"), 30, None),
        ("check", Some("30"), 30, None),
    ] {
        let mut args = match cmd {
            "append" => vec!["append", "--store", store.to_str().unwrap()],
            _ => vec!["check"],
        };
        args.extend(["--input", input.as_str()]);
        if let Some(n) = n {
            args.extend(["--max-errors", n]);
        }
        let o = lineage(&args, None);
        let err = text(&o).1;
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let lines: Vec<&str> = err
            .lines()
            .filter(|l| l.starts_with("error: line "))
            .collect();
        assert_eq!(lines.len(), listed, "{args:?}: {err}");
        for (i, l) in lines.iter().enumerate() {
            assert!(
                l.starts_with(&format!(
                    "error: line {}, field `stage`: is an empty string",
                    i + 1
                )),
                "{args:?}: {l}"
            );
        }
        assert_eq!(
            err.lines().find(|l| l.starts_with("error: …")),
            more,
            "{args:?}"
        );
        // --json lists as many, and counts them all.
        args.push("--json");
        let v: Value = serde_json::from_str(text(&lineage(&args, None)).0.trim()).unwrap();
        assert_eq!(v["errors"].as_array().unwrap().len(), listed, "{args:?}");
        assert_eq!(v["error_count"], 30);
    }
    assert!(!store.exists(), "a refused append creates no store");
}

#[test]
fn standard_input_in_another_format_is_named_with_the_flag_that_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let batch = bad_input::contract_batch(3);
    let csv = format!("{}\n{}\n", csv_header(), csv_row(1, &[]));
    let quoted_header = format!(
        "\u{feff}{}\r\n{}\r\n",
        csv_header()
            .split(',')
            .map(|c| format!("\"{c}\""))
            .collect::<Vec<_>>()
            .join(","),
        csv_row(1, &[])
    );
    for (input, want) in [
        (
            csv.clone().into_bytes(),
            "its first line looks like a CSV header of the contract's fields: pass --format csv",
        ),
        (quoted_header.into_bytes(), "pass --format csv"),
        (
            bad_input::parquet(&batch),
            "it starts with Parquet's magic bytes `PAR1`: pass --format parquet",
        ),
        (
            bad_input::ipc_file(&batch),
            "Arrow IPC's magic bytes `ARROW1`: pass --format arrow",
        ),
        (
            bad_input::ipc_stream(&batch),
            "it starts like an Arrow IPC stream (0xFFFFFFFF): pass --format arrow",
        ),
    ] {
        for args in [
            vec!["append", "--store", store.to_str().unwrap()],
            vec!["check"],
        ] {
            let o = lineage(&args, Some(&input));
            let err = text(&o).1;
            assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
            assert!(
                err.contains(
                    "error: standard input is read as NDJSON unless --format says otherwise, and "
                ) && err.contains(want),
                "{args:?}: {err}"
            );
        }
    }
    assert!(!store.exists());
    // With --format, the same bytes are read as they are.
    let o = lineage(&["check", "--format", "csv"], Some(csv.as_bytes()));
    assert_eq!(o.status.code(), Some(0), "{:?}", text(&o));
    // NDJSON whose first line is not an object is still read as NDJSON, every line judged.
    let o = lineage(&["check"], Some(b"hello\n{}\n"));
    let err = text(&o).1;
    assert!(err.contains("error: line 1: is not a JSON object"), "{err}");
    assert!(
        err.contains("error: line 2, field `event_id`: is missing"),
        "{err}"
    );
}

#[test]
fn check_help_describes_every_flag() {
    let o = lineage(&["check", "--help"], None);
    let out = text(&o).0;
    for flag in [
        "--input",
        "--format",
        "--schema-version",
        "--max-errors",
        "--batch-rows",
        "--json",
        "without a store",
        "Exit 0 when valid",
    ] {
        assert!(out.contains(flag), "{flag}: {out}");
    }
    let o = lineage(&["append", "--help"], None);
    assert!(text(&o).0.contains("--max-errors"), "{:?}", text(&o));
}

#[test]
fn the_library_check_lists_what_append_refuses_and_counts_partitions() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = ndjson_with(25, |i| i == 4 || i == 17);
    let path = dir.path().join("in.ndjson");
    std::fs::write(&path, &bytes).unwrap();
    let input = Input::open(Some(&path), None).unwrap();
    let all = CheckOptions {
        max_errors: 0,
        ..CheckOptions::default()
    };
    let e = check(&input, &all).unwrap_err();
    let r = e.rejection().unwrap();
    let lines: Vec<Option<u64>> = r.errors.iter().map(|e| e.line()).collect();
    assert_eq!(lines, [Some(4), Some(17)]);
    assert_eq!(r.total, 2);
    assert_eq!(
        e.to_string(),
        parse_validated(Bytes::from(bytes.clone()), Format::Ndjson)
            .unwrap_err()
            .to_string()
    );
    // Batches in memory (the Python package): rows, numbered across batches.
    let good = bad_input::contract_batch(6);
    let crs: arrow_array::StringArray = (1..=6)
        .map(|i| Some(if i == 5 { "WGS84" } else { "EPSG:4326" }))
        .collect();
    let bad = bad_input::with(&good, "target_crs", std::sync::Arc::new(crs));
    let e = check_batches(&good.schema(), vec![good.clone(), bad.clone()], &all).unwrap_err();
    let r = e.rejection().unwrap();
    assert_eq!(
        (r.errors[0].row(), r.errors[0].field.as_deref()),
        (Some(11), Some("target_crs"))
    );
    assert_eq!(r.errors[0].value.as_deref(), Some("WGS84"));
    let v = validate_all([good.clone(), bad]).unwrap_err();
    assert_eq!(v.to_string(), e.to_string(), "append refuses the same");
    let report = check_batches(
        &good.schema(),
        vec![good.clone(), good],
        &CheckOptions {
            batch_rows: 5,
            ..CheckOptions::default()
        },
    )
    .unwrap();
    assert_eq!((report.rows, report.flushes), (12, 3));
    assert_eq!(report.partitions.len(), 1);
    assert_eq!(report.schema_version, "1.2.0");
    // A version that is not registered is not the input's fault.
    let e = check(
        &input,
        &CheckOptions {
            schema_version: Some("9.0.0".into()),
            ..CheckOptions::default()
        },
    )
    .unwrap_err();
    assert!(e.rejection().is_none(), "{e}");
}

#[test]
fn refused_values_are_cut_in_messages_and_json() {
    let long = "x".repeat(500);
    let bytes = format!(
        "{}\n",
        line(
            1,
            &[
                ("target_crs", &format!("\"{long}\"")),
                ("audit_tag", ABSENT)
            ]
        )
    );
    let e = parse_validated(Bytes::from(bytes), Format::Ndjson).unwrap_err();
    let r = e.rejection().unwrap();
    assert_eq!(r.errors.len(), 2);
    assert_eq!(r.errors[0].field.as_deref(), Some("target_crs"));
    assert_eq!(
        r.errors[0].value.as_deref(),
        Some(format!("{}… (500 bytes)", "x".repeat(64)).as_str())
    );
    assert_eq!(r.errors[1].field.as_deref(), Some("audit_tag"));
    assert_eq!(r.errors[1].value, None);
    assert!(e.to_string().len() < 600, "{e}");
}

#[test]
fn strings_other_than_crs_and_times_are_kept_exactly_as_written() {
    use arrow_array::cast::AsArray;
    let bytes = format!(
        "{}\n",
        line(
            1,
            &[("feature_id", "\" f-1 \""), ("stage", "\"reproject\\t\"")]
        )
    );
    let b = parse_validated(Bytes::from(bytes), Format::Ndjson).unwrap();
    assert_eq!(b[0].column(6).as_string::<i32>().value(0), " f-1 ");
    assert_eq!(b[0].column(4).as_string::<i32>().value(0), "reproject\t");
    // The reader keeps the batches' rows with refused cells null, for the row rules.
    let bytes = format!(
        "{}\n",
        line(1, &[("sequence", "\"one\""), ("outcome", "null")])
    );
    let sb = parse(Bytes::from(bytes), Format::Ndjson).unwrap();
    assert_eq!(sb[0].batch.num_rows(), 1);
    assert!(sb[0].read_errors.reported(0, 2));
    let e = parse_validated(
        Bytes::from(format!(
            "{}\n",
            line(1, &[("sequence", "\"one\""), ("outcome", "null")])
        )),
        Format::Ndjson,
    )
    .unwrap_err();
    let fields: Vec<&str> = e
        .rejection()
        .unwrap()
        .errors
        .iter()
        .filter_map(|e| e.field.as_deref())
        .collect();
    assert_eq!(fields, ["sequence", "outcome"], "{e}");
}

#[test]
fn what_standard_input_looks_like_is_told_by_its_first_bytes() {
    let batch = bad_input::contract_batch(2);
    let sniff = |b: &[u8]| Format::sniff(b).map(|(f, _)| f);
    assert_eq!(sniff(&bad_input::parquet(&batch)), Some(Format::Parquet));
    assert_eq!(sniff(&bad_input::ipc_file(&batch)), Some(Format::Arrow));
    assert_eq!(sniff(&bad_input::ipc_stream(&batch)), Some(Format::Arrow));
    let csv = format!("\n\u{feff}{}\n", csv_header());
    assert_eq!(sniff(csv.as_bytes()), Some(Format::Csv));
    assert_eq!(sniff(b"event_id;run_id;sequence\r\n"), Some(Format::Csv));
    // NDJSON, or something that is neither: read as NDJSON (its lines say what is wrong).
    assert_eq!(sniff(&bad_input::good_ndjson(2)), None);
    assert_eq!(sniff(b"\n\n  {\"event_id\":1}\n"), None);
    assert_eq!(sniff(b"event_id,colour\n"), None);
    assert_eq!(sniff(b"hello"), None);
    assert_eq!(Format::from_flag("csv"), Some(Format::Csv));
    assert_eq!(Format::from_flag("xml"), None);
}
