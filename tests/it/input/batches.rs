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
    // Both at once, one line each in the contract's order (columns it lacks by their
    // place, columns it does not have last), then the hint.
    assert_eq!(
        msg,
        "schema mismatch: the input lacks field `feature_id` (Utf8): every one of the 15 fields must be present (all null for no values)\n\
         schema mismatch: field 7 `feature` (LargeUtf8) is not in the contract, which has 15 fields\n\
         hint: the contract (15 columns, version 1.2.0) is what `lineage schema` prints; nothing is cast implicitly"
    );
    // A zone that is not a zone is refused, as in an Arrow IPC or Parquet file.
    let mars = TimestampMicrosecondArray::new(times.values().clone(), times.nulls().cloned())
        .with_timezone("Mars/Olympus_Mons");
    let msg = batches::validate_all([with_column(&b, col::EVENT_TIME_UTC, Arc::new(mars))])
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("field 4 `event_time_utc` has type Timestamp(µs, \"Mars/Olympus_Mons\")"),
        "{msg}"
    );
    // Its fix says what is wrong with it; no cast is offered for the whole table.
    assert!(
        msg.contains(": `Mars/Olympus_Mons` is not a time zone (an IANA name such as `Europe/Berlin`, an offset such as `+05:30`, or `UTC`)"),
        "{msg}"
    );
    assert!(!msg.contains("A pyarrow table conforms"), "{msg}");
}

#[test]
fn every_difference_is_named_at_once() {
    let b = sample(5);
    // pyarrow's Table.from_pylist: strategy_index Int64; DuckDB's 0.02: DECIMAL(3,2).
    let si: arrow_array::Int64Array = (0..5).map(Some).collect();
    let acc = arrow_array::Decimal128Array::from(vec![2i128; 5])
        .with_precision_and_scale(3, 2)
        .unwrap();
    let odd = with_column(
        &with_column(&b, col::STRATEGY_INDEX, Arc::new(si)),
        col::ACCURACY_M,
        Arc::new(acc),
    );
    let e = batches::validate_all([odd.clone()]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Input);
    // One line per field with the cast that fixes it, then the hint for the whole table.
    assert_eq!(
        e.to_string(),
        "schema mismatch: field 11 `strategy_index` has type Int64, the contract expects Int32: cast it; a safe cast refuses values that do not fit (pyarrow `pa.int32()`, Polars `pl.Int32`, SQL `INTEGER`)\n\
         schema mismatch: field 12 `accuracy_m` has type Decimal128(3, 2), the contract expects Float64: cast it (pyarrow `pa.float64()`, Polars `pl.Float64`, SQL `DOUBLE`)\n\
         hint: the contract (15 columns, version 1.2.0) is what `lineage schema` prints; nothing is cast implicitly. A pyarrow table conforms with `table.select(lineage_store.SCHEMA.names).cast(lineage_store.SCHEMA)`, a Polars frame with `df.cast({\"strategy_index\": pl.Int32, \"accuracy_m\": pl.Float64})`"
    );
    let rejection = e.rejection().unwrap();
    let fields: Vec<Option<&str>> = rejection
        .errors
        .iter()
        .map(|x| x.field.as_deref())
        .collect();
    assert_eq!(fields, [Some("strategy_index"), Some("accuracy_m")]);
    let (_, found) = lineage_store::internal::conform::mismatches(odd.schema().as_ref());
    let names: Vec<&str> = found.iter().map(|m| m.field()).collect();
    assert_eq!(names, ["strategy_index", "accuracy_m"]);
    // The explicit, lossless conversion takes both: the same values.
    let plan = lineage_store::internal::lossless::plan(odd.schema().as_ref()).unwrap();
    let changes: Vec<String> = plan.changes().iter().map(ToString::to_string).collect();
    assert_eq!(
        changes,
        [
            "`strategy_index`: Int64 → Int32 (every value fits)",
            "`accuracy_m`: Decimal128(3, 2) → Float64 (every value is exactly the float64 written the same way)",
        ]
    );
    let out = plan.apply(&odd, 1).unwrap();
    let valid = batches::validate_all([out]).unwrap();
    let acc = valid[0]
        .column(col::ACCURACY_M)
        .as_primitive::<arrow_array::types::Float64Type>();
    assert!(acc.values().iter().all(|v| *v == 0.02));
    let si = valid[0]
        .column(col::STRATEGY_INDEX)
        .as_primitive::<arrow_array::types::Int32Type>();
    assert_eq!(si.values().to_vec(), vec![0, 1, 2, 3, 4]);
}

#[test]
fn mismatches_and_the_refusal_list_the_same_fields_in_the_same_order() {
    let b = sample(2);
    // An extra column first, an Int32 sequence, no audit_tag, run_id twice.
    let mut fields = vec![Field::new("colour", DataType::Int64, true)];
    for f in b.schema().fields() {
        match f.name().as_str() {
            "audit_tag" => {}
            "sequence" => fields.push(Field::new("sequence", DataType::Int32, true)),
            _ => fields.push(f.as_ref().clone()),
        }
    }
    fields.push(Field::new("run_id", DataType::Utf8, true));
    let schema = Schema::new(fields);
    let (_, found) = lineage_store::internal::conform::mismatches(&schema);
    let names: Vec<&str> = found.iter().map(|m| m.field()).collect();
    // The contract's order (a duplicate at its field), then what the contract lacks.
    assert_eq!(names, ["run_id", "sequence", "audit_tag", "colour"]);
    let e = batches::check_schema(&schema).unwrap_err();
    let listed: Vec<&str> = e
        .rejection()
        .unwrap()
        .errors
        .iter()
        .filter_map(|x| x.field.as_deref())
        .collect();
    assert_eq!(listed, names);
    let msg = e.to_string();
    assert!(
        msg.starts_with("schema mismatch: field 16 `run_id` appears twice (also field 3)\n"),
        "{msg}"
    );
    // A duplicate and a missing column are not fixed by a cast: the hint offers none.
    assert!(
        msg.ends_with("\nhint: the contract (15 columns, version 1.2.0) is what `lineage schema` prints; nothing is cast implicitly"),
        "{msg}"
    );
}

#[test]
fn any_valid_zone_is_the_same_instants() {
    let b = sample(5);
    let want = batches::validate_all([b.clone()]).unwrap();
    let times = b
        .column(col::EVENT_TIME_UTC)
        .as_primitive::<TimestampMicrosecondType>();
    // DuckDB labels TIMESTAMPTZ with its session's zone; Arrow's values are UTC instants.
    for zone in [
        "Europe/Berlin",
        "America/New_York",
        "+05:30",
        "-08:00",
        "Etc/UTC",
    ] {
        let zoned = TimestampMicrosecondArray::new(times.values().clone(), times.nulls().cloned())
            .with_timezone(zone);
        let out = batches::validate_all([with_column(&b, col::EVENT_TIME_UTC, Arc::new(zoned))])
            .unwrap_or_else(|e| panic!("{zone}: {e}"));
        assert_eq!(out, want, "{zone}: the same instants, labelled UTC");
    }
}

#[test]
fn a_null_typed_column_is_all_null_of_the_contracts_type() {
    let b = sample(5);
    let want_null = |c: usize| {
        batches::validate_all([with_column(&b, c, Arc::new(arrow_array::NullArray::new(5)))])
    };
    // An optional field all None (pyarrow's from_pylist, Polars' pl.lit(None)): taken.
    let out = want_null(col::AUDIT_TAG).unwrap();
    assert_eq!(out[0].column(col::AUDIT_TAG).data_type(), &DataType::Utf8);
    assert_eq!(out[0].column(col::AUDIT_TAG).null_count(), 5);
    let out = want_null(col::STRATEGY_INDEX).unwrap();
    assert_eq!(
        out[0].column(col::STRATEGY_INDEX).data_type(),
        &DataType::Int32
    );
    // A required one: the contract's field message, naming every row.
    let e = want_null(col::FEATURE_ID).unwrap_err();
    let want: Vec<String> = (1..=5)
        .map(|r| format!("row {r}, field `feature_id`: is null, but the contract requires a value"))
        .collect();
    assert_eq!(e.to_string(), want.join("\n"));
}

#[test]
fn a_schema_without_rows_is_checked_all_the_same() {
    let b = sample(1);
    assert!(batches::check_schema(b.schema().as_ref()).is_ok());
    let odd = with_column(&b, col::SEQUENCE, Arc::new(Int32Array::from(vec![1])));
    let e = batches::check_schema(odd.schema().as_ref()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Input);
    assert!(
        e.to_string()
            .contains("field 3 `sequence` has type Int32, the contract expects Int64"),
        "{e}"
    );
    // A batch without rows says the same.
    assert_eq!(
        batches::validate_all([odd.slice(0, 0)])
            .unwrap_err()
            .to_string(),
        e.to_string()
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
