//! Validation looks each row's run id and CRSs up among the batch's distinct values (a
//! short scan over the first few, a hash map past them) and canonicalises each distinct
//! value once: the canonical columns and every error are what checking each row on its
//! own gives, with few distinct values and with many.

use arrow_array::cast::AsArray;
use arrow_array::{Array, RecordBatch};
use bytes::Bytes;
use lineage_store::crs;
use lineage_store::internal::input::parse_validated;
use lineage_store::{Error, Format, Place};
use serde_json::Value;

use crate::support::sample;

/// One of three spellings of `EPSG:<code>`, by `i`.
fn spelling(code: u32, i: i64) -> String {
    match i % 3 {
        0 => format!("EPSG:{code}"),
        1 => format!("urn:ogc:def:crs:EPSG::{code}"),
        _ => format!("epsg:{code}"),
    }
}

/// `n` events with `runs` run ids and `codes` UTM zones (three spellings each) as target
/// and source CRS, in an order that revisits old values after new ones.
fn events(n: i64, runs: i64, codes: u32) -> Vec<Value> {
    (1..=n)
        .map(|i| {
            let run = format!("run-{}", (i * 7) % runs);
            let target = spelling(32601 + ((i * 13) as u32 % codes), i);
            let mut e = sample::event(i, &run, &target);
            e["source_crs"] = Value::from(spelling(32601 + ((i * 5) as u32 % codes), i + 1));
            e
        })
        .collect()
}

fn column(batches: &[RecordBatch], name: &str) -> Vec<String> {
    batches
        .iter()
        .flat_map(|b| {
            let s = b.column_by_name(name).unwrap().as_string::<i32>();
            (0..s.len())
                .map(|i| s.value(i).to_string())
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn canonical_columns_are_each_rows_own_canonical_form_with_few_or_many_distinct_values() {
    // 2 runs and 4 codes (12 spellings): the scan alone; 40 runs and 50 codes: the map too.
    for (runs, codes) in [(2, 4), (40, 50)] {
        let rows = events(900, runs, codes);
        let batches = parse_validated(Bytes::from(sample::ndjson(&rows)), Format::Ndjson).unwrap();
        let want = |field: &str| -> Vec<String> {
            rows.iter()
                .map(|e| crs::canonicalize(e[field].as_str().unwrap()).unwrap())
                .collect()
        };
        assert_eq!(
            column(&batches, "target_crs"),
            want("target_crs"),
            "{runs}/{codes}"
        );
        assert_eq!(
            column(&batches, "source_crs"),
            want("source_crs"),
            "{runs}/{codes}"
        );
        let runs_in: Vec<String> = rows
            .iter()
            .map(|e| e["run_id"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(column(&batches, "run_id"), runs_in);
    }
}

#[test]
fn every_refused_run_id_and_crs_row_is_named_with_many_distinct_values() {
    let mut rows = events(300, 30, 40);
    let mut want: Vec<(u64, String, String)> = Vec::new();
    for (k, e) in rows.iter_mut().enumerate() {
        let line = k as u64 + 1;
        if k % 53 == 5 {
            // Refused run ids, some repeated: each row is named, not only the first.
            let bad = format!("bad/run-{}", k % 3);
            want.push((
                line,
                "run_id".into(),
                lineage_store::internal::keys::run_id_problem(&bad).unwrap(),
            ));
            e["run_id"] = Value::from(bad);
        }
        if k % 41 == 4 {
            // An unknown code and a non-CRS, each met again after many valid values.
            let bad = if k % 2 == 0 {
                "EPSG:99999"
            } else {
                "not-a-crs"
            };
            want.push((
                line,
                "target_crs".into(),
                crs::canonicalize(bad).unwrap_err(),
            ));
            e["target_crs"] = Value::from(bad);
        }
    }
    let err = parse_validated(Bytes::from(sample::ndjson(&rows)), Format::Ndjson).unwrap_err();
    let Error::Rejected(r) = err else {
        panic!("not refused: {err}")
    };
    let mut got: Vec<(u64, String, String)> = r
        .errors
        .iter()
        .map(|e| {
            let Place::Line(l) = e.place else {
                panic!("{e:?}")
            };
            (l, e.field.clone().unwrap(), e.reason.clone())
        })
        .collect();
    got.sort();
    want.sort();
    assert_eq!(r.total, want.len() as u64);
    assert_eq!(got, want);
}
