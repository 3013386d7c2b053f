//! Issue 22, the rest of "a job can fix its input in one round": the writer's own
//! `max_errors` (the library's `--max-errors`), values cut in the CLI's `--json`, the
//! standard-input refusal as JSON, `check` on a file it cannot read, and every
//! normalisation docs/input.md promises (and the ones it promises not to
//! make: no case or Unicode normalisation of strings, in NDJSON and CSV alike).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::Array;
use bytes::Bytes;
use serde_json::Value;

use lineage_store::internal::input::parse_validated;
use lineage_store::{AtomicPublisher, ErrorKind, Format, Input, MemoryPublisher, Writer};

use crate::support::bad_input::{csv_header, csv_row, line};
use crate::support::{lineage, text};

/// NDJSON of `n` lines, every one with an empty `stage`.
fn all_bad(n: i64) -> Vec<u8> {
    (1..=n)
        .map(|i| line(i, &[("stage", "\"\"")]) + "\n")
        .collect::<String>()
        .into_bytes()
}

#[tokio::test]
async fn the_writers_max_errors_lists_the_first_n_and_counts_them_all() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.ndjson");
    std::fs::write(&path, all_bad(30)).unwrap();
    for (max, listed) in [(None, 20), (Some(3), 3), (Some(0), 30), (Some(45), 30)] {
        let mem = Arc::new(MemoryPublisher::new());
        let mut w = Writer::new(mem.clone());
        if let Some(n) = max {
            w = w.with_max_errors(n);
        }
        let src = Arc::new(Input::open(Some(&path), None).unwrap());
        let e = w.append_source(src, true, |_| {}).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Input, "{e}");
        let r = e.rejection().expect("a rejection");
        assert_eq!((r.errors.len(), r.total), (listed, 30), "{max:?}");
        let lines: Vec<Option<u64>> = r.errors.iter().map(|x| x.line()).collect();
        let want: Vec<Option<u64>> = (1..=listed as u64).map(Some).collect();
        assert_eq!(lines, want, "{max:?}: the first ones, in input order");
        assert!(
            mem.list("").await.unwrap().is_empty(),
            "{max:?}: nothing published"
        );
    }
}

#[test]
fn the_clis_json_cuts_a_long_value_as_the_library_does() {
    let dir = tempfile::tempdir().unwrap();
    let long = "x".repeat(500);
    let input = dir.path().join("long.ndjson");
    std::fs::write(
        &input,
        format!("{}\n", line(1, &[("target_crs", &format!("\"{long}\""))])),
    )
    .unwrap();
    let store = dir.path().join("store");
    let cut = format!("{}… (500 bytes)", "x".repeat(64));
    for args in [
        vec!["check", "--json"],
        vec!["append", "--json", "--store", store.to_str().unwrap()],
    ] {
        let mut args = args;
        args.extend(["--input", input.to_str().unwrap()]);
        let o = lineage(&args, None);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let (out, err) = text(&o);
        let v: Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(v["errors"][0]["field"], "target_crs", "{v}");
        assert_eq!(v["errors"][0]["value"], cut.as_str(), "{v}");
        assert!(!out.contains(&long) && !err.contains(&long), "{args:?}");
    }
    assert!(!store.exists());
}

#[test]
fn standard_input_in_another_format_is_one_json_error_without_a_place() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let csv = format!("{}\n{}\n", csv_header(), csv_row(1, &[]));
    for args in [
        vec!["check", "--json"],
        vec!["append", "--json", "--store", store.to_str().unwrap()],
    ] {
        let o = lineage(&args, Some(csv.as_bytes()));
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let v: Value = serde_json::from_str(text(&o).0.trim()).unwrap();
        assert_eq!(
            (v["valid"].clone(), v["error_count"].clone()),
            (false.into(), 1.into()),
            "{v}"
        );
        let e = &v["errors"][0];
        for k in ["line", "row", "field", "value"] {
            assert!(e[k].is_null(), "{k}: {v}");
        }
        let reason = e["reason"].as_str().unwrap();
        assert!(
            reason.starts_with("standard input is read as NDJSON unless --format says otherwise")
                && reason.ends_with("pass --format csv"),
            "{reason}"
        );
    }
    assert!(!store.exists());
}

#[test]
fn check_of_a_file_it_cannot_read_says_not_checked_rather_than_invalid() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.csv");
    let m = missing.to_str().unwrap();
    let o = lineage(&["check", "--input", m], None);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(2));
    assert!(out.starts_with("not checked: ") && out.contains(m), "{out}");
    assert!(!out.contains("invalid"), "{out}");
    assert!(err.contains(m) && err.contains("No such file"), "{err}");
    let o = lineage(&["check", "--input", m, "--json"], None);
    assert_eq!(o.status.code(), Some(2));
    let v: Value = serde_json::from_str(text(&o).0.trim()).unwrap();
    assert_eq!(
        (v["valid"].clone(), v["checked"].clone()),
        (false.into(), false.into()),
        "{v}"
    );
    assert!(
        v["errors"][0]["reason"].as_str().unwrap().contains(m),
        "{v}"
    );
    // An input that was read and found invalid has no `checked: false`.
    let bad = dir.path().join("bad.ndjson");
    std::fs::write(&bad, all_bad(2)).unwrap();
    let o = lineage(&["check", "--input", bad.to_str().unwrap(), "--json"], None);
    let v: Value = serde_json::from_str(text(&o).0.trim()).unwrap();
    assert!(v.get("checked").is_none(), "{v}");
    assert_eq!(v["error_count"], 2);
}

/// Column `name` of the validated events, row by row.
fn strings(input: &[u8], format: Format, name: &str) -> Vec<String> {
    let b = parse_validated(Bytes::copy_from_slice(input), format).unwrap();
    b.iter()
        .flat_map(|b| {
            let c = b.column_by_name(name).unwrap().as_string::<i32>().clone();
            (0..c.len()).map(move |i| c.value(i).to_string())
        })
        .collect()
}

#[test]
fn strings_keep_their_case_and_unicode_form_in_ndjson_and_csv() {
    let nfc = "caf\u{e9}";
    let nfd = "cafe\u{301}";
    let nd = format!(
        "{}\n{}\n{}\n",
        line(
            1,
            &[
                ("feature_id", &format!("\"{nfc}\"")),
                ("stage", "\"Reproject\"")
            ]
        ),
        line(
            2,
            &[
                ("feature_id", &format!("\"{nfd}\"")),
                ("stage", "\"REPROJECT\"")
            ]
        ),
        line(
            3,
            &[("feature_id", "\" f-3 \""), ("stage", "\"reproject\"")]
        ),
    );
    let csv = format!(
        "{}\n{}\n{}\n{}\n",
        csv_header(),
        csv_row(1, &[("feature_id", nfc), ("stage", "Reproject")]),
        csv_row(2, &[("feature_id", nfd), ("stage", "REPROJECT")]),
        csv_row(3, &[("feature_id", " f-3 "), ("stage", "reproject")]),
    );
    for (input, format) in [
        (nd.as_bytes(), Format::Ndjson),
        (csv.as_bytes(), Format::Csv),
    ] {
        assert_eq!(
            strings(input, format, "feature_id"),
            [nfc, nfd, " f-3 "],
            "{format:?}: no Unicode normalisation, no trimming"
        );
        assert_eq!(
            strings(input, format, "stage"),
            ["Reproject", "REPROJECT", "reproject"],
            "{format:?}: no case folding"
        );
    }
}

#[test]
fn spaces_around_a_crs_are_ignored_in_csv_as_in_ndjson_and_other_white_space_is_refused() {
    let csv = format!(
        "{}\n{}\n{}\n",
        csv_header(),
        csv_row(
            1,
            &[("target_crs", " EPSG:4326 "), ("source_crs", "  epsg:4258")]
        ),
        csv_row(2, &[("target_crs", "\"urn:ogc:def:crs:EPSG::4326 \"")]),
    );
    assert_eq!(
        strings(csv.as_bytes(), Format::Csv, "target_crs"),
        ["EPSG:4326", "EPSG:4326"]
    );
    assert_eq!(
        strings(csv.as_bytes(), Format::Csv, "source_crs")[0],
        "EPSG:4258"
    );
    let tab = format!(
        "{}\n{}\n",
        csv_header(),
        csv_row(1, &[("target_crs", "EPSG:4326\t")])
    );
    let e = parse_validated(Bytes::from(tab), Format::Csv).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("line 2, field `target_crs`") && msg.contains("U+0009"),
        "{msg}"
    );
    // A space instead of `T` in a CSV time, as in NDJSON.
    let spaced = format!(
        "{}\n{}\n",
        csv_header(),
        csv_row(1, &[("event_time_utc", "2026-07-13 06:00:00Z")])
    );
    let (a, b) = (
        parse_validated(Bytes::from(spaced), Format::Csv).unwrap(),
        parse_validated(
            Bytes::from(format!("{}\n{}\n", csv_header(), csv_row(1, &[]))),
            Format::Csv,
        )
        .unwrap(),
    );
    assert_eq!(
        a[0].column_by_name("event_time_utc"),
        b[0].column_by_name("event_time_utc")
    );
}
