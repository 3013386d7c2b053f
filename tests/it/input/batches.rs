//! In-memory Arrow batches (what the Python package hands over): representation-only
//! differences are conformed without changing a value, everything else is refused as the
//! CLI refuses it, and rows are numbered across batches.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::TimestampMicrosecondType;
use arrow_array::{
    Array, ArrayRef, Int32Array, LargeStringArray, RecordBatch, StringViewArray,
    TimestampMicrosecondArray, TimestampNanosecondArray,
};
use arrow_schema::{DataType, Field, Schema};
use bytes::Bytes;
use lineage_store::contract::{self, col};
use lineage_store::internal::input;
use lineage_store::internal::input::batches;
use lineage_store::ErrorKind;
use lineage_store::Format;

use crate::support::sample;

/// Contract batches of `n` sample events (as the CLI parses them from NDJSON).
fn sample(n: i64) -> RecordBatch {
    let text = sample::ndjson(&sample::events(n));
    let parsed = input::parse(Bytes::from(text), Format::Ndjson).unwrap();
    assert_eq!(parsed.len(), 1);
    parsed[0].batch.clone()
}

/// `batch` with column `i` replaced (field renamed/retyped to fit).
fn with_column(batch: &RecordBatch, i: usize, c: ArrayRef) -> RecordBatch {
    let mut fields: Vec<Field> = batch
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fields[i] = fields[i].clone().with_data_type(c.data_type().clone());
    let mut cols = batch.columns().to_vec();
    cols[i] = c;
    RecordBatch::try_new(Arc::new(Schema::new(fields)), cols).unwrap()
}

#[test]
fn string_layouts_and_utc_labels_are_conformed_value_for_value() {
    let b = sample(50);
    let ndjson_validated = input::parse_validated(
        Bytes::from(sample::ndjson(&sample::events(50))),
        Format::Ndjson,
    )
    .unwrap();
    let feature = b.column(col::FEATURE_ID).as_string::<i32>();
    let large: LargeStringArray = feature.iter().collect();
    let view: StringViewArray = b.column(col::EVENT_ID).as_string::<i32>().iter().collect();
    let times = b
        .column(col::EVENT_TIME_UTC)
        .as_primitive::<TimestampMicrosecondType>();
    let etc_utc = TimestampMicrosecondArray::new(times.values().clone(), times.nulls().cloned())
        .with_timezone("Etc/UTC");
    let mut odd = with_column(&b, col::FEATURE_ID, Arc::new(large));
    odd = with_column(&odd, col::EVENT_ID, Arc::new(view));
    odd = with_column(&odd, col::EVENT_TIME_UTC, Arc::new(etc_utc));
    assert_eq!(
        odd.schema().field(col::FEATURE_ID).data_type(),
        &DataType::LargeUtf8
    );

    let out = batches::validate_all([odd]).unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].schema(), contract::schema());
    // The same values the CLI validates from NDJSON, column by column.
    assert_eq!(out[0], ndjson_validated[0]);
}

#[test]
fn large_strings_share_the_values_buffer() {
    let b = sample(10);
    let large: LargeStringArray = b
        .column(col::FEATURE_ID)
        .as_string::<i32>()
        .iter()
        .collect();
    let values_ptr = large.values().as_ptr();
    let out = batches::conform(with_column(&b, col::FEATURE_ID, Arc::new(large))).unwrap();
    let narrowed = out.column(col::FEATURE_ID).as_string::<i32>();
    assert_eq!(narrowed.values().as_ptr(), values_ptr, "values were copied");
}

#[test]
fn other_type_differences_are_refused_as_the_cli_refuses_them() {
    let b = sample(5);
    let times = b
        .column(col::EVENT_TIME_UTC)
        .as_primitive::<TimestampMicrosecondType>();
    let cases: Vec<(RecordBatch, &str)> = vec![
        (
            with_column(
                &b,
                col::EVENT_TIME_UTC,
                Arc::new(TimestampMicrosecondArray::new(times.values().clone(), None)),
            ),
            "field 4 `event_time_utc` has type Timestamp(µs), the contract expects Timestamp(µs, \"UTC\")",
        ),
        (
            with_column(
                &b,
                col::EVENT_TIME_UTC,
                Arc::new(
                    TimestampNanosecondArray::from(
                        times.values().iter().map(|v| v * 1000).collect::<Vec<_>>(),
                    )
                    .with_timezone("UTC"),
                ),
            ),
            "field 4 `event_time_utc` has type Timestamp(ns, \"UTC\")",
        ),
        (
            with_column(
                &b,
                col::SEQUENCE,
                Arc::new(Int32Array::from(vec![1, 2, 3, 4, 5])),
            ),
            "field 3 `sequence` has type Int32, the contract expects Int64",
        ),
    ];
    for (batch, want) in cases {
        let e = batches::validate_all([batch]).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Input);
        let msg = e.to_string();
        assert!(msg.contains(want), "{msg}");
    }
    // A renamed field is reported with the type it really has.
    let mut fields: Vec<Field> = b
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fields[col::FEATURE_ID] = Field::new("feature", DataType::LargeUtf8, true);
    let large: LargeStringArray = b
        .column(col::FEATURE_ID)
        .as_string::<i32>()
        .iter()
        .collect();
    let mut cols = b.columns().to_vec();
    cols[col::FEATURE_ID] = Arc::new(large);
    let renamed = RecordBatch::try_new(Arc::new(Schema::new(fields)), cols).unwrap();
    let msg = batches::validate_all([renamed]).unwrap_err().to_string();
    assert!(
        msg.contains("field 7 `feature` (LargeUtf8) is not in the contract, which has 15 fields"),
        "{msg}"
    );
    // A zone that is not UTC is refused, as in an Arrow IPC or Parquet file.
    let paris = TimestampMicrosecondArray::new(times.values().clone(), times.nulls().cloned())
        .with_timezone("Europe/Paris");
    let msg = batches::validate_all([with_column(&b, col::EVENT_TIME_UTC, Arc::new(paris))])
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("field 4 `event_time_utc` has type Timestamp(µs, \"Europe/Paris\")"),
        "{msg}"
    );
}

#[test]
fn columns_in_another_order_and_dictionary_strings_are_taken_by_name_as_the_cli_takes_them() {
    let b = sample(20);
    let want = batches::validate_all([b.clone()]).unwrap();
    // Reverse the columns (a table built from a dict in another order) and dictionary-encode
    // one string column (pandas categoricals, Parquet dictionaries read back).
    let schema = b.schema();
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    let mut cols = b.columns().to_vec();
    let dict: arrow_array::DictionaryArray<arrow_array::types::Int32Type> = b
        .column(col::TARGET_CRS)
        .as_string::<i32>()
        .iter()
        .collect();
    fields[col::TARGET_CRS] = fields[col::TARGET_CRS]
        .clone()
        .with_data_type(dict.data_type().clone());
    cols[col::TARGET_CRS] = Arc::new(dict);
    fields.reverse();
    cols.reverse();
    let odd = RecordBatch::try_new(Arc::new(Schema::new(fields)), cols).unwrap();
    assert_eq!(odd.schema().field(0).name(), schema.field(14).name());
    let out = batches::validate_all([odd]).unwrap();
    assert_eq!(out, want, "the same values in the contract's order");
}

#[test]
fn rows_are_numbered_across_batches() {
    let first = sample(10);
    let mut second = sample(10);
    // Row 4 of the second batch: row 14 of the input.
    let crs: arrow_array::StringArray = second
        .column(col::TARGET_CRS)
        .as_string::<i32>()
        .iter()
        .enumerate()
        .map(|(i, v)| if i == 3 { Some("OGC:CRS84") } else { v })
        .collect();
    second = with_column(&second, col::TARGET_CRS, Arc::new(crs));
    let mut v = batches::BatchValidator::new();
    v.validate(first).unwrap();
    assert_eq!(v.rows(), 10);
    let e = v.validate(second).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Input);
    assert!(
        e.to_string()
            .starts_with("row 14, field `target_crs`: `OGC:CRS84` is OGC:CRS84"),
        "{e}"
    );
    assert_eq!(v.rows(), 10, "a refused batch is not counted");
}
