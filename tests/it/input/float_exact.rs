//! Every `accuracy_m` value round-trips bit for bit, from every input format into the
//! stored part (issue 7, defect 1: NDJSON read `0.011325567542033023` as
//! `0.011325567542033024`, about 12 % of Python-written values were one ulp off).
//!
//! A seeded property test: random bit patterns over the whole finite non-negative range,
//! random subnormals, random "everyday" values in [0, 1000), and the edge values (±0,
//! the smallest subnormal, the smallest normal, the largest finite), each written in the
//! shortest round-trip spelling (Python `repr` style, Rust `{:e}`) and at full
//! positional length, through NDJSON, CSV, Arrow IPC and Parquet input, appended, and
//! read back from the published part. Negative values are refused (the contract's
//! `accuracy_m` is non-negative), naming the exact value.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::RecordBatch;
use bytes::Bytes;
use lineage_store::internal::events::EventBuilder;
use lineage_store::internal::events::EventRow;
use lineage_store::internal::input::parse_validated;
use lineage_store::Format;
use lineage_store::MemoryPublisher;
use lineage_store::{AtomicPublisher, Writer};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde_json::Value;

use crate::support::sample;

/// splitmix64: a tiny seeded generator, so a failure is reproducible from the seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

const SEED: u64 = 0x7a_2026_1130;

/// The doubles to try: edge values, then random ones of three shapes.
fn doubles(n: usize) -> Vec<f64> {
    let mut v = vec![
        0.0,
        -0.0,
        f64::from_bits(1),                     // smallest subnormal, 5e-324
        f64::from_bits(0x000F_FFFF_FFFF_FFFF), // largest subnormal
        f64::MIN_POSITIVE,                     // smallest normal
        f64::MAX,                              // largest finite
        f64::EPSILON,
        1.0,
        0.1,
        1e-5,
        1e16,
        123_456_789_012_345_680.0,
        0.011_325_567_542_033_023, // the value the issue reported
        0.3,
        2.0_f64.powi(-1074) * 3.0,
    ];
    let mut rng = Rng(SEED);
    while v.len() < n {
        let x = match v.len() % 3 {
            // Any finite non-negative bit pattern (every exponent is equally likely).
            0 => f64::from_bits(rng.next() & 0x7FFF_FFFF_FFFF_FFFF),
            // A subnormal.
            1 => f64::from_bits(rng.next() & 0x000F_FFFF_FFFF_FFFF),
            // What a job writes: metres, uniform in [0, 1000) with all 53 bits random.
            _ => (rng.next() >> 11) as f64 / (1u64 << 53) as f64 * 1000.0,
        };
        if x.is_finite() {
            v.push(x);
        }
    }
    v
}

/// Python's `repr(float)`: shortest round-trip digits, positional for exponents in
/// [-4, 16), else `d.ddde±XX`; what `json.dumps` and `csv.writer` write.
fn python_repr(x: f64) -> String {
    let e = format!("{x:e}");
    let (mantissa, exp) = e.split_once('e').unwrap();
    let exp: i32 = exp.parse().unwrap();
    if (-4..16).contains(&exp) {
        let s = format!("{x}");
        if s.contains('.') {
            s
        } else {
            s + ".0"
        }
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    }
}

/// Three spellings of one value, all exact: Python style, Rust `{:e}`, and positional.
fn spelling(x: f64, i: usize) -> String {
    match i % 3 {
        0 => python_repr(x),
        1 => format!("{x:e}"),
        _ => format!("{x}"),
    }
}

/// Event `i` (sequence i+1) carrying accuracy `x`.
fn event_with(i: usize) -> Value {
    let mut e = sample::event(i as i64 + 1, "run-f", "EPSG:4326");
    e["outcome"] = "transformed".into();
    e["rejection_reason"] = Value::Null;
    e["strategy_index"] = 0.into();
    e["accuracy_m"] = Value::Null; // replaced textually below, to keep the exact spelling
    e
}

fn ndjson_input(values: &[f64]) -> Vec<u8> {
    let mut out = String::new();
    for (i, &x) in values.iter().enumerate() {
        let line = event_with(i).to_string();
        let line = line.replace(
            "\"accuracy_m\":null",
            &format!("\"accuracy_m\":{}", spelling(x, i)),
        );
        assert!(line.contains(&spelling(x, i)));
        out.push_str(&line);
        out.push('\n');
    }
    out.into_bytes()
}

fn csv_input(values: &[f64]) -> Vec<u8> {
    let names: Vec<&str> = lineage_store::contract::COLUMNS
        .iter()
        .map(|c| c.name)
        .collect();
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(&names).unwrap();
    for (i, &x) in values.iter().enumerate() {
        let e = event_with(i);
        let row: Vec<String> = names
            .iter()
            .map(|n| match (*n, &e[*n]) {
                ("accuracy_m", _) => spelling(x, i),
                (_, Value::Null) => String::new(),
                (_, Value::String(s)) => s.clone(),
                (_, v) => v.to_string(),
            })
            .collect();
        w.write_record(&row).unwrap();
    }
    w.into_inner().unwrap()
}

/// The same events as a contract batch (for the binary formats).
fn batch(values: &[f64]) -> RecordBatch {
    let mut b = EventBuilder::new();
    let ids: Vec<String> = (0..values.len()).map(|i| format!("e{i}")).collect();
    for (i, &x) in values.iter().enumerate() {
        b.push(&EventRow {
            event_id: Some(&ids[i]),
            run_id: Some("run-f"),
            sequence: Some(i as i64 + 1),
            event_time_us: Some(1_780_000_000_000_000 + i as i64),
            stage: Some("reproject"),
            event_type: Some("crs_transform"),
            feature_id: Some(&ids[i]),
            source_crs: Some("EPSG:4258"),
            target_crs: Some("EPSG:4326"),
            outcome: Some("transformed"),
            strategy_index: Some(0),
            accuracy_m: Some(x),
            rejection_reason: None,
            tool_version: Some("geostd/2.4.1"),
            audit_tag: None,
            ..EventRow::default()
        });
    }
    b.finish().unwrap()
}

fn arrow_input(values: &[f64]) -> Vec<u8> {
    let b = batch(values);
    let mut w = arrow_ipc::writer::FileWriter::try_new(Vec::new(), &b.schema()).unwrap();
    w.write(&b).unwrap();
    w.finish().unwrap();
    w.into_inner().unwrap()
}

fn parquet_input(values: &[f64]) -> Vec<u8> {
    let b = batch(values);
    let mut w = parquet::arrow::ArrowWriter::try_new(Vec::new(), b.schema(), None).unwrap();
    w.write(&b).unwrap();
    w.into_inner().unwrap()
}

/// Append `input` to a fresh store and read back (sequence → accuracy bits) from the parts.
async fn stored_bits(input: Vec<u8>, format: Format) -> Vec<(i64, u64)> {
    let batches = parse_validated(Bytes::from(input), format).unwrap();
    let store = Arc::new(MemoryPublisher::new());
    Writer::new(store.clone())
        .with_batch_rows(2_000)
        .append(&batches, |_| {})
        .await
        .unwrap();
    let mut out = Vec::new();
    for o in store.list("run_id=").await.unwrap() {
        let bytes = store.get(&o.key).await.unwrap().unwrap();
        for b in ParquetRecordBatchReaderBuilder::try_new(bytes)
            .unwrap()
            .build()
            .unwrap()
        {
            let b = b.unwrap();
            let seq = b
                .column_by_name("sequence")
                .unwrap()
                .as_primitive::<Int64Type>();
            let acc = b
                .column_by_name("accuracy_m")
                .unwrap()
                .as_primitive::<Float64Type>();
            for i in 0..b.num_rows() {
                out.push((seq.value(i), acc.value(i).to_bits()));
            }
        }
    }
    out.sort();
    out
}

#[tokio::test]
async fn every_double_round_trips_bit_for_bit_through_every_input_format() {
    let values = doubles(6_000);
    let want: Vec<(i64, u64)> = values
        .iter()
        .enumerate()
        .map(|(i, x)| (i as i64 + 1, x.to_bits()))
        .collect();
    for (format, input) in [
        (Format::Ndjson, ndjson_input(&values)),
        (Format::Csv, csv_input(&values)),
        (Format::Arrow, arrow_input(&values)),
        (Format::Parquet, parquet_input(&values)),
    ] {
        let got = stored_bits(input, format).await;
        assert_eq!(got.len(), want.len(), "{format:?}: row count");
        let wrong: Vec<String> = got
            .iter()
            .zip(&want)
            .filter(|(g, w)| g != w)
            .take(5)
            .map(|((s, g), (_, w))| {
                format!(
                    "sequence {s}: stored {:e} ({g:#018x}), input {:e} ({w:#018x})",
                    f64::from_bits(*g),
                    f64::from_bits(*w)
                )
            })
            .collect();
        let n_wrong = got.iter().zip(&want).filter(|(g, w)| g != w).count();
        assert!(
            wrong.is_empty(),
            "{format:?} (seed {SEED:#x}): {n_wrong} of {} values changed, e.g. {wrong:#?}",
            want.len()
        );
    }
}

#[test]
fn the_reported_value_is_stored_as_written() {
    // The exact line the issue quotes, as Python's json.dumps writes it.
    let values = [0.011_325_567_542_033_023_f64];
    let input = ndjson_input(&values);
    assert!(String::from_utf8_lossy(&input).contains("0.011325567542033023"));
    let b = parse_validated(Bytes::from(input), Format::Ndjson).unwrap();
    let acc = b[0].column(11).as_primitive::<Float64Type>().value(0);
    assert_eq!(acc.to_bits(), 0.011_325_567_542_033_023_f64.to_bits());
    assert_eq!(format!("{acc}"), "0.011325567542033023");
}

#[test]
fn negative_and_non_finite_accuracies_are_refused_naming_the_value() {
    for (spelled, format, want) in [
        ("-1e-300", Format::Ndjson, "-1e-300"),
        ("-5e-324", Format::Csv, "-5e-324"),
        (
            "-1.7976931348623157e308",
            Format::Ndjson,
            "-1.7976931348623157e308",
        ),
        ("NaN", Format::Csv, "NaN"),
        ("inf", Format::Csv, "inf"),
        ("-inf", Format::Csv, "-inf"),
    ] {
        let input = match format {
            Format::Ndjson => {
                let line = event_with(0).to_string();
                line.replace("\"accuracy_m\":null", &format!("\"accuracy_m\":{spelled}")) + "\n"
            }
            _ => {
                let csv = String::from_utf8(csv_input(&[1.0])).unwrap();
                csv.replace(",1.0,", &format!(",{spelled},"))
            }
        };
        let e = parse_validated(Bytes::from(input), format).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("field `accuracy_m`") && msg.contains(want),
            "{spelled} ({format:?}): {msg}"
        );
        assert_eq!(e.kind(), lineage_store::ErrorKind::Input);
    }
}
