//! The bad-input matrix (issue 7, item 6), shared by `input::bad_cli` (through the
//! `lineage` binary, store snapshot before and after) and `input::bad_lib`
//! (through `input::parse_validated` and the writer). One table, so both run every case.
//!
//! Each case is an input in one format and what must happen to it:
//! - `Refused(wants)`: exit 2 / an `Input` error whose text holds every `want` (the line,
//!   row or field, and the reason), nothing published, the store byte-identical;
//! - `SameAs(reference)`: accepted, and the stored rows equal the reference input's
//!   (BOM, CRLF, UTC offsets, reordered columns, re-encoded strings);
//! - `Accepted(rows)`: accepted as is, with that many rows;
//! - `Empty`: no events, a no-op that says so.

use std::sync::Arc;

use arrow_array::builder::LargeStringBuilder;
use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type, TimestampMicrosecondType};
use arrow_array::{
    Array, ArrayRef, DictionaryArray, Float32Array, Int32Array, Int64Array, RecordBatch,
    StringViewArray, TimestampMillisecondArray,
};
use arrow_schema::{Field, Schema};
use bytes::Bytes;
use lineage_store::contract;
use lineage_store::internal::input::parse_validated;
use lineage_store::Format;

/// What must happen to a case.
#[derive(Debug, Clone)]
pub enum Expect {
    /// Refused; the message holds each of these.
    Refused(Vec<String>),
    /// Accepted; stored exactly as this reference input in this format would be.
    SameAs(Vec<u8>, Format),
    /// Accepted with this many rows.
    Accepted(usize),
    /// No events: a no-op.
    Empty,
}

/// One case of the matrix.
#[derive(Debug, Clone)]
pub struct Case {
    /// Names the case in failure messages.
    pub name: String,
    /// The input format.
    pub format: Format,
    /// The input bytes.
    pub input: Vec<u8>,
    /// What must happen.
    pub expect: Expect,
}

fn refused(name: &str, format: Format, input: Vec<u8>, wants: &[&str]) -> Case {
    Case {
        name: name.to_string(),
        format,
        input,
        expect: Expect::Refused(wants.iter().map(|s| s.to_string()).collect()),
    }
}

fn same_as(name: &str, format: Format, input: Vec<u8>, reference: Vec<u8>, rf: Format) -> Case {
    Case {
        name: name.to_string(),
        format,
        input,
        expect: Expect::SameAs(reference, rf),
    }
}

/// File extension of a format, for `--input`.
pub fn ext(f: Format) -> &'static str {
    match f {
        Format::Ndjson => "ndjson",
        Format::Csv => "csv",
        Format::Arrow => "arrow",
        Format::Parquet => "parquet",
        other => panic!("no bad inputs for {other:?} yet"),
    }
}

// ---- NDJSON and CSV text, field by field ----

/// The fields of a valid event as raw JSON, in contract order.
const BASE: [(&str, &str); 15] = [
    ("event_id", "\"e-1\""),
    ("run_id", "\"run-a\""),
    ("sequence", "1"),
    ("event_time_utc", "\"2026-07-13T06:00:00Z\""),
    ("stage", "\"reproject\""),
    ("event_type", "\"crs_transform\""),
    ("feature_id", "\"f-1\""),
    ("source_crs", "\"EPSG:4258\""),
    ("target_crs", "\"EPSG:4326\""),
    ("outcome", "\"transformed\""),
    ("strategy_index", "0"),
    ("accuracy_m", "0.5"),
    ("rejection_reason", "null"),
    ("tool_version", "\"geostd/2.4.1\""),
    ("audit_tag", "null"),
];

/// Marks a field to leave out.
pub const ABSENT: &str = "<absent>";

/// Event `seq` as (name, raw JSON) pairs with `over` applied (a name not in the contract
/// is added; [`ABSENT`] removes a field).
fn fields(seq: i64, over: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = BASE
        .iter()
        .map(|(k, v)| {
            let v = match *k {
                "event_id" => format!("\"e-{seq}\""),
                "sequence" => seq.to_string(),
                "feature_id" => format!("\"f-{seq}\""),
                _ => v.to_string(),
            };
            (k.to_string(), v)
        })
        .collect();
    for (k, v) in over {
        match out.iter_mut().find(|(name, _)| name == k) {
            Some(slot) => slot.1 = v.to_string(),
            None => out.push((k.to_string(), v.to_string())),
        }
    }
    out.retain(|(_, v)| v != ABSENT);
    out
}

/// One NDJSON line (no newline) of event `seq` with `over` applied, values verbatim.
pub fn line(seq: i64, over: &[(&str, &str)]) -> String {
    let body: Vec<String> = fields(seq, over)
        .iter()
        .map(|(k, v)| format!("\"{k}\":{v}"))
        .collect();
    format!("{{{}}}", body.join(","))
}

/// A valid line 1, then `bad` as line 2.
fn second(bad: &str) -> Vec<u8> {
    format!("{}\n{bad}\n", line(1, &[])).into_bytes()
}

/// `n` valid NDJSON lines.
pub fn good_ndjson(n: i64) -> Vec<u8> {
    (1..=n)
        .map(|i| line(i, &[]) + "\n")
        .collect::<String>()
        .into_bytes()
}

/// The CSV header.
pub fn csv_header() -> String {
    BASE.iter().map(|(k, _)| *k).collect::<Vec<_>>().join(",")
}

/// One CSV record of event `seq` with `over` applied; values are CSV cells (a raw JSON
/// string loses its quotes, null becomes an empty cell; anything else is verbatim).
pub fn csv_row(seq: i64, over: &[(&str, &str)]) -> String {
    fields(seq, over)
        .iter()
        .map(|(_, v)| {
            if v == "null" {
                String::new()
            } else if let Some(s) = v.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
                s.to_string()
            } else {
                v.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// A CSV file of header, a valid row (line 2) and `rows` (lines 3...).
fn csv(rows: &[String]) -> Vec<u8> {
    let mut s = format!("{}\n{}\n", csv_header(), csv_row(1, &[]));
    for r in rows {
        s.push_str(r);
        s.push('\n');
    }
    s.into_bytes()
}

// ---- Arrow IPC and Parquet ----

/// `n` valid events as one contract batch (the reference for the binary cases).
pub fn contract_batch(n: i64) -> RecordBatch {
    let b = parse_validated(Bytes::from(good_ndjson(n)), Format::Ndjson).unwrap();
    arrow_select::concat::concat_batches(&contract::schema(), &b).unwrap()
}

/// A batch from named columns (any schema).
pub fn batch_of(cols: Vec<(&str, ArrayRef)>) -> RecordBatch {
    let fields: Vec<Field> = cols
        .iter()
        .map(|(n, a)| Field::new(*n, a.data_type().clone(), true))
        .collect();
    RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        cols.into_iter().map(|(_, a)| a).collect(),
    )
    .unwrap()
}

/// The contract batch's columns by name, to rearrange.
pub fn named(b: &RecordBatch) -> Vec<(&'static str, ArrayRef)> {
    contract::COLUMNS
        .iter()
        .enumerate()
        .map(|(i, c)| (c.name, b.column(i).clone()))
        .collect()
}

/// Replace column `name`.
pub fn with(b: &RecordBatch, name: &str, a: ArrayRef) -> RecordBatch {
    batch_of(
        named(b)
            .into_iter()
            .map(|(n, c)| if n == name { (n, a.clone()) } else { (n, c) })
            .collect(),
    )
}

/// An Arrow IPC file.
pub fn ipc_file(b: &RecordBatch) -> Vec<u8> {
    let mut w = arrow_ipc::writer::FileWriter::try_new(Vec::new(), &b.schema()).unwrap();
    w.write(b).unwrap();
    w.finish().unwrap();
    w.into_inner().unwrap()
}

/// An Arrow IPC stream.
pub fn ipc_stream(b: &RecordBatch) -> Vec<u8> {
    let mut w = arrow_ipc::writer::StreamWriter::try_new(Vec::new(), &b.schema()).unwrap();
    w.write(b).unwrap();
    w.finish().unwrap();
    w.into_inner().unwrap()
}

/// A Parquet file, uncompressed and without dictionaries (so tests can patch value bytes).
pub fn parquet(b: &RecordBatch) -> Vec<u8> {
    let props = parquet::file::properties::WriterProperties::builder()
        .set_dictionary_enabled(false)
        .set_compression(parquet::basic::Compression::UNCOMPRESSED)
        .set_statistics_enabled(parquet::file::properties::EnabledStatistics::None)
        .build();
    let mut w = parquet::arrow::ArrowWriter::try_new(Vec::new(), b.schema(), Some(props)).unwrap();
    w.write(b).unwrap();
    w.into_inner().unwrap()
}

/// Replace every occurrence of `find` in `bytes` by `repl` (same length).
pub fn patch(mut bytes: Vec<u8>, find: &[u8], repl: &[u8]) -> Vec<u8> {
    assert_eq!(find.len(), repl.len());
    let mut hits = 0;
    let mut i = 0;
    while i + find.len() <= bytes.len() {
        if &bytes[i..i + find.len()] == find {
            bytes[i..i + find.len()].copy_from_slice(repl);
            hits += 1;
            i += find.len();
        } else {
            i += 1;
        }
    }
    assert!(hits > 0, "nothing to patch");
    bytes
}

fn binary_cases() -> Vec<Case> {
    let good = contract_batch(6);
    let reference = ipc_file(&good);
    let mut cases = Vec::new();
    // Accepted: the same values in another column order or string encoding.
    let mut reordered = named(&good);
    reordered.reverse();
    let reordered = batch_of(reordered);
    let dict = |name: &str| {
        let s = good
            .column_by_name(name)
            .unwrap()
            .as_string::<i32>()
            .clone();
        Arc::new(s.iter().collect::<DictionaryArray<Int32Type>>()) as ArrayRef
    };
    let large = |name: &str| {
        let s = good
            .column_by_name(name)
            .unwrap()
            .as_string::<i32>()
            .clone();
        let mut b = LargeStringBuilder::new();
        s.iter().for_each(|v| b.append_option(v));
        Arc::new(b.finish()) as ArrayRef
    };
    let view = |name: &str| {
        let s = good
            .column_by_name(name)
            .unwrap()
            .as_string::<i32>()
            .clone();
        Arc::new(s.iter().collect::<StringViewArray>()) as ArrayRef
    };
    let time = good
        .column_by_name("event_time_utc")
        .unwrap()
        .as_primitive::<TimestampMicrosecondType>()
        .clone();
    let dictionary = with(
        &with(&good, "run_id", dict("run_id")),
        "target_crs",
        dict("target_crs"),
    );
    let large_utf8 = with(
        &with(&good, "event_id", large("event_id")),
        "audit_tag",
        large("audit_tag"),
    );
    let utf8_view = with(&good, "feature_id", view("feature_id"));
    let offset_tz = with(
        &good,
        "event_time_utc",
        Arc::new(time.clone().with_timezone("+00:00")),
    );
    for (name, b) in [
        ("reordered columns", &reordered),
        ("dictionary-encoded strings", &dictionary),
        ("large_utf8 strings", &large_utf8),
        ("utf8_view strings", &utf8_view),
        ("timestamp zone +00:00", &offset_tz),
    ] {
        cases.push(same_as(
            &format!("arrow file: {name}"),
            Format::Arrow,
            ipc_file(b),
            reference.clone(),
            Format::Arrow,
        ));
        cases.push(same_as(
            &format!("parquet: {name}"),
            Format::Parquet,
            parquet(b),
            reference.clone(),
            Format::Arrow,
        ));
    }
    cases.push(same_as(
        "arrow stream: reordered columns",
        Format::Arrow,
        ipc_stream(&reordered),
        reference.clone(),
        Format::Arrow,
    ));

    // Refused: columns that are not the contract's, or values a cast could change.
    let mut extra = named(&good);
    extra.push(("colour", Arc::new(Int64Array::from(vec![1; 6])) as ArrayRef));
    let extra = batch_of(extra);
    let missing = batch_of(
        named(&good)
            .into_iter()
            .filter(|(n, _)| *n != "audit_tag")
            .collect(),
    );
    let mut twice = named(&good);
    twice.push(("run_id", good.column(1).clone()));
    let twice = batch_of(twice);
    let seq32 = with(
        &good,
        "sequence",
        Arc::new(
            good.column(2)
                .as_primitive::<Int64Type>()
                .iter()
                .map(|v| v.map(|v| v as i32))
                .collect::<Int32Array>(),
        ),
    );
    let millis = with(
        &good,
        "event_time_utc",
        Arc::new(
            TimestampMillisecondArray::from(
                time.values().iter().map(|v| v / 1000).collect::<Vec<_>>(),
            )
            .with_timezone("UTC"),
        ),
    );
    let naive = with(
        &good,
        "event_time_utc",
        Arc::new(time.clone().with_timezone_opt(None::<&str>)),
    );
    // Any valid zone is the same UTC instants (DuckDB labels TIMESTAMPTZ with its session's
    // zone); a label that is no zone at all is refused.
    let other_tz = with(
        &good,
        "event_time_utc",
        Arc::new(time.clone().with_timezone("Mars/Olympus_Mons")),
    );
    let acc32 = with(
        &good,
        "accuracy_m",
        Arc::new(Float32Array::from(vec![Some(0.5f32); 6])),
    );
    let mut nan = good
        .column(11)
        .as_primitive::<arrow_array::types::Float64Type>()
        .clone()
        .values()
        .to_vec();
    nan[3] = f64::NAN;
    let nan = with(
        &good,
        "accuracy_m",
        Arc::new(arrow_array::Float64Array::from(nan)),
    );
    let early = with(
        &good,
        "event_time_utc",
        Arc::new(
            arrow_array::TimestampMicrosecondArray::from(
                time.values()
                    .iter()
                    .enumerate()
                    .map(|(i, v)| if i == 4 { -1 } else { *v })
                    .collect::<Vec<_>>(),
            )
            .with_timezone("UTC"),
        ),
    );
    for (name, b, wants) in [
        (
            "extra column",
            &extra,
            vec!["field 16 `colour` (Int64) is not in the contract"],
        ),
        ("missing column", &missing, vec!["lacks field `audit_tag`"]),
        (
            "duplicate column",
            &twice,
            vec!["field 16 `run_id` appears twice"],
        ),
        (
            "Int32 sequence",
            &seq32,
            vec!["`sequence` has type Int32, the contract expects Int64"],
        ),
        (
            "millisecond times",
            &millis,
            vec!["`event_time_utc` has type Timestamp(ms"],
        ),
        (
            "times without zone",
            &naive,
            vec!["`event_time_utc` has type Timestamp(µs)"],
        ),
        (
            "times in a zone that is not a zone",
            &other_tz,
            vec!["`event_time_utc` has type Timestamp(µs, \"Mars/Olympus_Mons\")"],
        ),
        (
            "Float32 accuracy",
            &acc32,
            vec!["`accuracy_m` has type Float32"],
        ),
        (
            "NaN accuracy",
            &nan,
            vec!["row 4, field `accuracy_m`: NaN is not a finite"],
        ),
        (
            "time before 1970",
            &early,
            vec!["row 5, field `event_time_utc`", "before 1970"],
        ),
    ] {
        let wants: Vec<&str> = wants;
        cases.push(refused(
            &format!("arrow file: {name}"),
            Format::Arrow,
            ipc_file(b),
            &wants,
        ));
        cases.push(refused(
            &format!("parquet: {name}"),
            Format::Parquet,
            parquet(b),
            &wants,
        ));
    }
    // Every column that differs, in one refusal, with the casts that fix it (issue 22):
    // what DuckDB's read_json, pyarrow's from_pylist and Polars make by default.
    let uuids =
        arrow_array::FixedSizeBinaryArray::try_from_iter((0..6u8).map(|i| [i; 16])).unwrap();
    let times_as_text: arrow_array::StringArray = time
        .values()
        .iter()
        .map(|&us| Some(lineage_store::internal::time::rfc3339_us(us)))
        .collect();
    let strat64 = Arc::new(
        good.column(10)
            .as_primitive::<Int32Type>()
            .iter()
            .map(|v| v.map(i64::from))
            .collect::<Int64Array>(),
    ) as ArrayRef;
    let mut drifted: Vec<(&str, ArrayRef)> = named(&good)
        .into_iter()
        .filter(|(n, _)| *n != "audit_tag")
        .map(|(n, c)| match n {
            "event_id" => (n, Arc::new(uuids.clone()) as ArrayRef),
            "event_time_utc" => (n, Arc::new(times_as_text.clone()) as ArrayRef),
            "strategy_index" => (n, strat64.clone()),
            _ => (n, c),
        })
        .collect();
    drifted.push(("colour", Arc::new(Int64Array::from(vec![1; 6])) as ArrayRef));
    let run_id = good.column_by_name("run_id").unwrap().clone();
    drifted.push(("run_id", run_id));
    let drifted = batch_of(drifted);
    let castable = with(
        &with(&good, "strategy_index", strat64.clone()),
        "event_time_utc",
        Arc::new(
            arrow_array::TimestampNanosecondArray::from(
                time.values().iter().map(|v| v * 1000).collect::<Vec<_>>(),
            )
            .with_timezone("UTC"),
        ),
    );
    for (format, bytes, kind) in [
        (Format::Arrow, ipc_file(&drifted), "arrow file"),
        (Format::Arrow, ipc_stream(&drifted), "arrow stream"),
        (Format::Parquet, parquet(&drifted), "parquet"),
    ] {
        cases.push(refused(
            &format!("{kind}: every drifted column at once"),
            format,
            bytes,
            &[
                "schema mismatch: field 1 `event_id` has type FixedSizeBinary(16), the contract expects Utf8",
                "UUID",
                "field 16 `run_id` appears twice (also field 2)",
                "field 4 `event_time_utc` has type Utf8",
                "parse them",
                "field 11 `strategy_index` has type Int64, the contract expects Int32",
                "pa.int32()",
                "lacks field `audit_tag`",
                "`colour` (Int64) is not in the contract",
                "hint: the contract (15 columns, version 1.2.0)",
            ],
        ));
    }
    cases.push(refused(
        "arrow file: casts conform it, and the hint says how",
        Format::Arrow,
        ipc_file(&castable),
        &[
            "`event_time_utc` has type Timestamp(ns",
            "`strategy_index` has type Int64",
            "hint: ",
            "table.select(lineage_store.SCHEMA.names).cast(lineage_store.SCHEMA)",
            "df.cast({\"event_time_utc\": pl.Datetime(\"us\", \"UTC\"), \"strategy_index\": pl.Int32})",
        ],
    ));
    // Invalid UTF-8 inside a string column, patched into the encoded bytes.
    let marked = with(
        &good,
        "feature_id",
        Arc::new(arrow_array::StringArray::from(vec![
            "f-1", "f-2", "PATCHME", "f-4", "f-5", "f-6",
        ])),
    );
    cases.push(refused(
        "arrow file: invalid UTF-8",
        Format::Arrow,
        patch(ipc_file(&marked), b"PATCHME", b"PATC\xffME"),
        &["Arrow IPC", "utf-8"],
    ));
    cases.push(refused(
        "parquet: invalid UTF-8",
        Format::Parquet,
        patch(parquet(&marked), b"PATCHME", b"PATC\xffME"),
        &["Parquet", "utf-8"],
    ));
    // No rows, or no bytes: no events.
    let none = good.slice(0, 0);
    for (name, format, input) in [
        ("arrow file without rows", Format::Arrow, ipc_file(&none)),
        ("parquet without rows", Format::Parquet, parquet(&none)),
        ("empty arrow file", Format::Arrow, Vec::new()),
        ("empty parquet file", Format::Parquet, Vec::new()),
    ] {
        cases.push(Case {
            name: name.into(),
            format,
            input,
            expect: Expect::Empty,
        });
    }
    // ... but a schema that is not the contract is refused even without rows.
    cases.push(refused(
        "arrow file without rows, Int32 sequence",
        Format::Arrow,
        ipc_file(&seq32.slice(0, 0)),
        &["`sequence` has type Int32"],
    ));
    cases.push(refused(
        "not Arrow at all",
        Format::Arrow,
        b"hello".to_vec(),
        &["not a readable Arrow IPC"],
    ));
    cases.push(refused(
        "not Parquet at all",
        Format::Parquet,
        b"hello".to_vec(),
        &["not a readable Parquet file"],
    ));
    cases
}

fn ndjson_cases() -> Vec<Case> {
    let nd = Format::Ndjson;
    let mut cases = vec![
        // Empty input: no events, a no-op.
        Case {
            name: "no bytes".into(),
            format: nd,
            input: Vec::new(),
            expect: Expect::Empty,
        },
        Case {
            name: "blank lines only".into(),
            format: nd,
            input: b"\n \r\n\t\n".to_vec(),
            expect: Expect::Empty,
        },
        Case {
            name: "BOM only".into(),
            format: nd,
            input: b"\xef\xbb\xbf\n".to_vec(),
            expect: Expect::Empty,
        },
        // Accepted spellings of the same events.
        same_as(
            "UTF-8 BOM before line 1",
            nd,
            [b"\xef\xbb\xbf".as_slice(), &good_ndjson(3)].concat(),
            good_ndjson(3),
            nd,
        ),
        same_as(
            "CRLF line ends",
            nd,
            String::from_utf8(good_ndjson(3))
                .unwrap()
                .replace('\n', "\r\n")
                .into_bytes(),
            good_ndjson(3),
            nd,
        ),
        refused(
            "CRLF line ends, a bad line 2",
            nd,
            String::from_utf8(second(&line(2, &[("stage", "\"\"")])))
                .unwrap()
                .replace('\n', "\r\n")
                .into_bytes(),
            &["line 2, field `stage`: is an empty string"],
        ),
        refused(
            "CRLF line ends, bad lines 2 and 4",
            nd,
            format!(
                "{}\r\n{}\r\n{}\r\n{}\r\n",
                line(1, &[]),
                line(2, &[("stage", "\"\"")]),
                line(3, &[]),
                line(4, &[("target_crs", "\"WGS84\"")])
            )
            .into_bytes(),
            &[
                "line 2, field `stage`: is an empty string",
                "line 4, field `target_crs`: `WGS84`",
            ],
        ),
        same_as(
            "offset +02:00 converted to UTC",
            nd,
            second(&line(
                2,
                &[("event_time_utc", "\"2026-07-13T08:00:00+02:00\"")],
            )),
            good_ndjson(2),
            nd,
        ),
        same_as(
            "lower-case t and z, and -00:00",
            nd,
            format!(
                "{}\n{}\n",
                line(1, &[("event_time_utc", "\"2026-07-13t06:00:00z\"")]),
                line(2, &[("event_time_utc", "\"2026-07-13T06:00:00-00:00\"")])
            )
            .into_bytes(),
            good_ndjson(2),
            nd,
        ),
        Case {
            name: "times at both ends of the range".into(),
            format: nd,
            input: format!(
                "{}\n{}\n",
                line(1, &[("event_time_utc", "\"1970-01-01T00:00:00Z\"")]),
                line(2, &[("event_time_utc", "\"9999-12-31T23:59:59.999999Z\"")])
            )
            .into_bytes(),
            expect: Expect::Accepted(2),
        },
        Case {
            name: "a line of 5 MiB".into(),
            format: nd,
            input: second(&line(
                2,
                &[("rejection_reason", &format!("\"{}\"", "r".repeat(5 << 20)))],
            )),
            expect: Expect::Accepted(2),
        },
        // Refused: every case names line 2 (line 1 is valid) and the field when there is one.
        refused(
            "a 5 MiB run_id",
            nd,
            second(&line(
                2,
                &[("run_id", &format!("\"{}\"", "r".repeat(5 << 20)))],
            )),
            &[
                "line 2, field `run_id`",
                "(5242880 bytes)",
                "longer than 128 bytes",
            ],
        ),
        refused(
            "a 5 MiB line that never ends",
            nd,
            second(&format!("{{\"event_id\":\"{}", "x".repeat(5 << 20))),
            &["line 2, field `event_id`", "EOF while parsing a string"],
        ),
        refused(
            "invalid UTF-8",
            nd,
            [line(1, &[]).as_bytes(), b"\n{\"event_id\":\"caf\xe9\"}\n"].concat(),
            &["line 2: invalid UTF-8 at byte 17"],
        ),
        refused(
            "a BOM before line 2",
            nd,
            second(&format!("\u{feff}{}", line(2, &[]))),
            &["line 2: is not a JSON object"],
        ),
        refused(
            "NaN accuracy",
            nd,
            second(&line(2, &[("accuracy_m", "NaN")])),
            &["line 2, field `accuracy_m`: `NaN` is not a JSON number"],
        ),
        refused(
            "Infinity accuracy",
            nd,
            second(&line(2, &[("accuracy_m", "Infinity")])),
            &["line 2, field `accuracy_m`: `Infinity` is not a JSON number"],
        ),
        refused(
            "-Infinity accuracy",
            nd,
            second(&line(2, &[("accuracy_m", "-Infinity")])),
            &["line 2, field `accuracy_m`: `-Infinity` is not a JSON number"],
        ),
        refused(
            "1e999 accuracy",
            nd,
            second(&line(2, &[("accuracy_m", "1e999")])),
            &["line 2, field `accuracy_m`: number out of range"],
        ),
        refused(
            "negative accuracy",
            nd,
            second(&line(2, &[("accuracy_m", "-0.5")])),
            &["line 2, field `accuracy_m`: -0.5 is not a finite, non-negative"],
        ),
        refused(
            "time without zone",
            nd,
            second(&line(2, &[("event_time_utc", "\"2026-07-13T06:00:00\"")])),
            &["line 2, field `event_time_utc`", "has no UTC offset"],
        ),
        refused(
            "date only",
            nd,
            second(&line(2, &[("event_time_utc", "\"2026-07-13\"")])),
            &[
                "line 2, field `event_time_utc`",
                "is not an RFC 3339 timestamp",
            ],
        ),
        refused(
            "leap second",
            nd,
            second(&line(2, &[("event_time_utc", "\"2016-12-31T23:59:60Z\"")])),
            &["line 2, field `event_time_utc`", "is a leap second"],
        ),
        refused(
            "year 1969",
            nd,
            second(&line(
                2,
                &[("event_time_utc", "\"1969-12-31T23:59:59.999999Z\"")],
            )),
            &[
                "line 2, field `event_time_utc`",
                "before 1970-01-01T00:00:00Z",
            ],
        ),
        refused(
            "year 10000",
            nd,
            second(&line(2, &[("event_time_utc", "\"10000-01-01T00:00:00Z\"")])),
            &[
                "line 2, field `event_time_utc`",
                "not an RFC 3339 timestamp",
            ],
        ),
        refused(
            "nanoseconds",
            nd,
            second(&line(
                2,
                &[("event_time_utc", "\"2026-07-13T06:00:00.123456789Z\"")],
            )),
            &["line 2, field `event_time_utc`", "sub-microsecond"],
        ),
        refused(
            "sequence 2^63",
            nd,
            second(&line(2, &[("sequence", "9223372036854775808")])),
            &["line 2, field `sequence`", "expected i64"],
        ),
        refused(
            "sequence -2^63-1",
            nd,
            second(&line(2, &[("sequence", "-9223372036854775809")])),
            &["line 2, field `sequence`"],
        ),
        refused(
            "sequence 1.5",
            nd,
            second(&line(2, &[("sequence", "1.5")])),
            &["line 2, field `sequence`", "floating point", "whole number"],
        ),
        refused(
            "sequence 2^53+2 as a float",
            nd,
            second(&line(2, &[("sequence", "9007199254740994.0")])),
            &["line 2, field `sequence`", "floating point"],
        ),
        refused(
            "sequence as a string",
            nd,
            second(&line(2, &[("sequence", "\"7\"")])),
            &["line 2, field `sequence`", "invalid type: string"],
        ),
        refused(
            "strategy_index 2^31",
            nd,
            second(&line(2, &[("strategy_index", "2147483648")])),
            &["line 2, field `strategy_index`", "expected i32"],
        ),
        refused(
            "strategy_index 1.5",
            nd,
            second(&line(2, &[("strategy_index", "1.5")])),
            &["line 2, field `strategy_index`"],
        ),
        refused(
            "run_id a number",
            nd,
            second(&line(2, &[("run_id", "5")])),
            &["line 2, field `run_id`", "expected a string"],
        ),
        refused(
            "accuracy as a string",
            nd,
            second(&line(2, &[("accuracy_m", "\"0.5\"")])),
            &["line 2, field `accuracy_m`", "invalid type: string"],
        ),
        refused(
            "time as a number",
            nd,
            second(&line(2, &[("event_time_utc", "1783922400")])),
            &["line 2, field `event_time_utc`", "expected a string"],
        ),
        refused(
            "stage an object",
            nd,
            second(&line(2, &[("stage", "{}")])),
            &["line 2, field `stage`"],
        ),
        refused(
            "duplicate key",
            nd,
            second(&format!(
                "{},\"stage\":\"other\"}}",
                line(2, &[]).trim_end_matches('}')
            )),
            &["line 2", "duplicate field `stage`"],
        ),
        refused(
            "extra key",
            nd,
            second(&line(2, &[("colour", "\"red\"")])),
            &["line 2", "unknown field `colour`"],
        ),
        refused(
            "key in another case",
            nd,
            second(&line(2, &[("run_id", ABSENT), ("Run_ID", "\"run-a\"")])),
            &["line 2", "unknown field `Run_ID`"],
        ),
        refused(
            "missing key",
            nd,
            second(&line(2, &[("audit_tag", ABSENT)])),
            &["line 2, field `audit_tag`: is missing"],
        ),
        refused(
            "required null",
            nd,
            second(&line(2, &[("outcome", "null")])),
            &["line 2, field `outcome`: is null"],
        ),
        refused(
            "an array",
            nd,
            second("[1,2]"),
            &["line 2: is not a JSON object"],
        ),
        refused(
            "a string",
            nd,
            second("\"event\""),
            &["line 2: is not a JSON object"],
        ),
        refused(
            "null",
            nd,
            second("null"),
            &["line 2: is not a JSON object"],
        ),
        refused(
            "two objects on a line",
            nd,
            second(&format!("{} {}", line(2, &[]), line(3, &[]))),
            &["line 2: trailing characters"],
        ),
        refused(
            "a lone surrogate",
            nd,
            second(&line(2, &[("feature_id", "\"\\ud800\"")])),
            &["line 2, field `feature_id`", "hex escape"],
        ),
        refused(
            "NUL in feature_id",
            nd,
            second(&line(2, &[("feature_id", "\"f\\u0000x\"")])),
            &["line 2, field `feature_id`", "contains NUL"],
        ),
        refused(
            "empty string",
            nd,
            second(&line(2, &[("stage", "\"\"")])),
            &["line 2, field `stage`: is an empty string"],
        ),
        refused(
            "rejected without a reason",
            nd,
            second(&line(2, &[("outcome", "\"rejected\"")])),
            &["line 2, field `rejection_reason`"],
        ),
    ];
    // Several errors: every one named, in input order (issue 22).
    cases.push(refused(
        "WGS84 on line 4, a time without zone on line 5",
        nd,
        format!(
            "{}{}\n{}\n",
            String::from_utf8(good_ndjson(3)).unwrap(),
            line(4, &[("target_crs", "\"WGS84\"")]),
            line(5, &[("event_time_utc", "\"2026-07-13T06:10:00\"")])
        )
        .into_bytes(),
        &[
            "line 4, field `target_crs`: `WGS84` is not an EPSG CRS identifier",
            "line 5, field `event_time_utc`",
            "has no UTC offset",
        ],
    ));
    cases.push(refused(
        "an unknown key on line 300, named without serde's position",
        nd,
        format!(
            "{}{}\n",
            String::from_utf8(good_ndjson(299)).unwrap(),
            line(300, &[("target_crs", ABSENT), ("crs", "\"EPSG:4326\"")])
        )
        .into_bytes(),
        &[
            "line 300, field `target_crs`: is missing",
            "line 300, field `crs`: unknown field `crs`",
        ],
    ));
    cases.push(refused(
        "every refused field of one line",
        nd,
        second(&line(
            2,
            &[
                ("sequence", "\"two\""),
                ("stage", ABSENT),
                ("target_crs", "\"WGS84\""),
                ("accuracy_m", "-1"),
                ("colour", "\"red\""),
            ],
        )),
        &[
            "line 2, field `sequence`: invalid type: string \"two\", expected i64",
            "line 2, field `stage`: is missing",
            "line 2, field `target_crs`: `WGS84`",
            "line 2, field `accuracy_m`: -1.0 is not a finite",
            "line 2, field `colour`: unknown field `colour`",
        ],
    ));
    cases.push(refused(
        "a syntax error names its column in characters",
        nd,
        second("{\"event_id\":\"é-2\",\"run_id\" \"run-a\"}"),
        &["line 2: expected `:` (column 28)"],
    ));
    cases.push(refused(
        "30 bad lines: 20 listed, and how many in all",
        nd,
        (1..=30)
            .map(|i| line(i, &[("stage", "\"\"")]) + "\n")
            .collect::<String>()
            .into_bytes(),
        &[
            "line 1, field `stage`: is an empty string",
            "line 20, field `stage`",
            "… and 10 more errors (30 in all)",
        ],
    ));
    // Normalisations (docs/input.md), each decided: spaces around a CRS or a time are
    // ignored, a space or lower-case `t` may separate date and time, zeros below a
    // microsecond are exact; a tab or newline is never trimmed.
    for (name, field, v) in [
        ("a CRS with spaces around", "target_crs", "\" epsg:4326 \""),
        (
            "a CRS with a trailing space",
            "target_crs",
            "\"EPSG:4326 \"",
        ),
        (
            "a space between date and time",
            "event_time_utc",
            "\"2026-07-13 06:00:00Z\"",
        ),
        (
            "spaces around a time",
            "event_time_utc",
            "\" 2026-07-13T06:00:00Z \"",
        ),
        (
            "nanosecond zeros",
            "event_time_utc",
            "\"2026-07-13T06:00:00.000000000Z\"",
        ),
    ] {
        cases.push(same_as(
            name,
            nd,
            second(&line(2, &[(field, v)])),
            good_ndjson(2),
            nd,
        ));
    }
    cases.push(refused(
        "a time with a tab after it",
        nd,
        second(&line(
            2,
            &[("event_time_utc", "\"2026-07-13T06:00:00Z\\t\"")],
        )),
        &[
            "line 2, field `event_time_utc`",
            "is not an RFC 3339 timestamp",
        ],
    ));
    // run_id: traversal, separators, escapes, look-alikes, control characters, length.
    for (name, v, why) in [
        ("../x", "\"../x\"", "contains `..`"),
        ("a/b", "\"a/b\"", "path separator"),
        ("a\\b", "\"a\\\\b\"", "path separator"),
        ("%2e%2e", "\"%2e%2e\"", "contains `%`"),
        ("..%2f", "\"..%2f\"", "contains `..`"),
        ("U+2215 division slash", "\"a\u{2215}b\"", "U+2215"),
        ("U+2044 fraction slash", "\"a\u{2044}b\"", "U+2044"),
        ("U+FF0F full-width solidus", "\"a\u{ff0f}b\"", "U+FF0F"),
        ("U+FF0E full-width dots", "\"\u{ff0e}\u{ff0e}\"", "U+FF0E"),
        ("U+2024 one-dot leader", "\"\u{2024}\u{2024}\"", "U+2024"),
        ("Cyrillic a", "\"run-\u{0430}\"", "U+0430"),
        ("NUL", "\"a\\u0000b\"", "NUL"),
        ("newline", "\"a\\nb\"", "control character"),
        ("space", "\"run a\"", "U+0020"),
        (
            "200 bytes",
            &format!("\"{}\"", "r".repeat(200)),
            "longer than 128 bytes",
        ),
        ("=", "\"a=b\"", "contains `=`"),
        (".", "\".\"", "contains `..`"),
        ("_lineage", "\"_lineage\"", "starts with `_`"),
    ] {
        cases.push(refused(
            &format!("run_id {name}"),
            nd,
            second(&line(2, &[("run_id", v)])),
            &["line 2, field `run_id`", why],
        ));
    }
    // CRS injection, target and source.
    for (name, v, why) in [
        (
            "EPSG:4326/../../x",
            "\"EPSG:4326/../../x\"",
            "not an EPSG CRS identifier",
        ),
        ("EPSG:4326 newline", "\"EPSG:4326\\n\"", "U+000A"),
        ("EPSG:4326 NUL", "\"EPSG:4326\\u0000\"", "contains NUL"),
        ("EPSG:4326 tab", "\"\\tEPSG:4326\"", "U+0009"),
        ("EPSG: 4326", "\"EPSG: 4326\"", "not an EPSG CRS identifier"),
        (
            "full-width digits",
            "\"EPSG:\u{ff14}\u{ff13}\u{ff12}\u{ff16}\"",
            "U+FF14",
        ),
        ("full-width colon", "\"EPSG\u{ff1a}4326\"", "U+FF1A"),
        ("ideographic space", "\"EPSG:4326\u{3000}\"", "U+3000"),
        (
            "EPSG:4326;DROP",
            "\"EPSG:4326;DROP\"",
            "not an EPSG CRS identifier",
        ),
        ("bare number", "\"4326\"", "not an EPSG CRS identifier"),
        (
            "unknown code",
            "\"EPSG:99999\"",
            "not a coordinate reference system",
        ),
    ] {
        cases.push(refused(
            &format!("target_crs {name}"),
            nd,
            second(&line(2, &[("target_crs", v)])),
            &["line 2, field `target_crs`", why],
        ));
    }
    cases.push(refused(
        "source_crs EPSG:4326 newline",
        nd,
        second(&line(2, &[("source_crs", "\"EPSG:4258\\n\"")])),
        &["line 2, field `source_crs`", "U+000A"],
    ));
    cases
}

fn csv_cases() -> Vec<Case> {
    let c = Format::Csv;
    let h = csv_header();
    let good3 = csv(&[csv_row(2, &[]), csv_row(3, &[])]);
    vec![
        Case { name: "csv: no bytes".into(), format: c, input: Vec::new(), expect: Expect::Empty },
        Case { name: "csv: header only".into(), format: c, input: format!("{h}\n").into_bytes(), expect: Expect::Empty },
        same_as("csv: BOM", c, [b"\xef\xbb\xbf".as_slice(), &good3].concat(), good3.clone(), c),
        same_as("csv: CRLF", c, String::from_utf8(good3.clone()).unwrap().replace('\n', "\r\n").into_bytes(), good3.clone(), c),
        refused("csv: CRLF, bad value on line 3", c, String::from_utf8(csv(&[csv_row(2, &[("target_crs", "WGS84")])])).unwrap().replace('\n', "\r\n").into_bytes(), &["line 3, field `target_crs`: `WGS84`"]),
        same_as("csv: lone CR line ends (old Mac)", c, String::from_utf8(good3.clone()).unwrap().replace('\n', "\r").into_bytes(), good3.clone(), c),
        refused("csv: lone CR, bad value on line 3, short row on line 5", c, String::from_utf8(csv(&[
            csv_row(2, &[("target_crs", "WGS84")]),
            csv_row(3, &[]),
            "e-4,run-a,4".into(),
        ])).unwrap().replace('\n', "\r").into_bytes(), &["line 3, field `target_crs`: `WGS84`", "line 5: has 3 fields, the header has 15"]),
        same_as("csv: columns in another order", c, {
            // Reverse every record's cells and the header alike.
            let text = String::from_utf8(good3.clone()).unwrap();
            text.lines().map(|l| l.split(',').rev().collect::<Vec<_>>().join(",") + "\n").collect::<String>().into_bytes()
        }, good3.clone(), c),
        same_as("csv: same events as NDJSON", c, good3.clone(), good_ndjson(3), Format::Ndjson),
        Case {
            name: "csv: quoted newline in a value".into(),
            format: c,
            input: csv(&[csv_row(2, &[("outcome", "\"rejected\""), ("rejection_reason", "\"\"two\nlines, quoted\"\"")])]),
            expect: Expect::Accepted(2),
        },
        refused("csv: a short row after a quoted newline", c, csv(&[
            csv_row(2, &[("outcome", "\"rejected\""), ("rejection_reason", "\"\"two\nlines\"\"")]),
            "e-3,run-a,3".into(),
        ]), &["line 5: has 3 fields, the header has 15"]),
        refused("csv: short row", c, csv(&["e-2,run-a,2".into()]), &["line 3: has 3 fields, the header has 15"]),
        refused("csv: long row", c, csv(&[csv_row(2, &[]) + ",extra"]), &["line 3: has 16 fields, the header has 15"]),
        refused("csv: invalid UTF-8", c, [csv(&[]), b"e-2,run-a,2,2026-07-13T06:00:00Z,reproject,crs_transform,caf\xe9,EPSG:4258,EPSG:4326,transformed,0,0.5,,geostd/2.4.1,\n".to_vec()].concat(), &["line 3, field `feature_id`: invalid UTF-8"]),
        refused("csv: NaN", c, csv(&[csv_row(2, &[("accuracy_m", "NaN")])]), &["line 3, field `accuracy_m`: NaN is not a finite"]),
        refused("csv: inf", c, csv(&[csv_row(2, &[("accuracy_m", "inf")])]), &["line 3, field `accuracy_m`: inf is not a finite"]),
        refused("csv: -infinity", c, csv(&[csv_row(2, &[("accuracy_m", "-infinity")])]), &["line 3, field `accuracy_m`: -inf is not a finite"]),
        refused("csv: sequence 2^63", c, csv(&[csv_row(2, &[("sequence", "9223372036854775808")])]), &["line 3, field `sequence`", "not a 64-bit integer"]),
        refused("csv: sequence 1.0", c, csv(&[csv_row(2, &[("sequence", "1.0")])]), &["line 3, field `sequence`", "not a 64-bit integer"]),
        refused("csv: time without zone", c, csv(&[csv_row(2, &[("event_time_utc", "2026-07-13 06:00:00")])]), &["line 3, field `event_time_utc`", "has no UTC offset"]),
        refused("csv: leap second", c, csv(&[csv_row(2, &[("event_time_utc", "2016-12-31T23:59:60Z")])]), &["line 3, field `event_time_utc`", "leap second"]),
        refused("csv: run_id look-alike", c, csv(&[csv_row(2, &[("run_id", "a\u{2215}b")])]), &["line 3, field `run_id`", "U+2215"]),
        refused("csv: CRS with a quoted newline", c, csv(&[csv_row(2, &[("target_crs", "\"\"EPSG:4326\n\"\"")])]), &["line 3, field `target_crs`", "U+000A"]),
        // Every problem of a header at once, in the contract's column order.
        refused("csv: header lacks fields", c, b"event_id,run_id\ne,r\n".to_vec(), &["line 1, field `sequence`: is missing from the header", "line 1, field `event_time_utc`: is missing", "line 1, field `audit_tag`: is missing"]),
        refused("csv: header has an extra field", c, format!("{h},colour\n").into_bytes(), &["line 1, field `colour`: is not a field of the contract (column 16 of the header)"]),
        refused("csv: header names a field twice", c, format!("{h},run_id\n").into_bytes(), &["line 1, field `run_id`: appears twice in the header (columns 2 and 16)"]),
        refused("csv: header in another case", c, h.replace("run_id", "Run_ID").into_bytes(), &["line 1, field `run_id`: is missing from the header", "line 1, field `Run_ID`: is not a field of the contract (column 2 of the header); did you mean `run_id`?"]),
        refused("csv: header after a blank line", c, format!("\n{h},colour\n").into_bytes(), &["line 2, field `colour`: is not a field"]),
        // Physical lines as an editor counts them, CRLF as LF (issue 22).
        refused("csv: CRLF, bad value on line 3, short row on line 22", c, {
            let mut rows = vec![csv_row(2, &[("event_time_utc", "\"2026-07-13T06:00:00\"")])];
            rows.extend((3..=20).map(|i| csv_row(i, &[])));
            rows.push("e-21,run-a,21".into());
            String::from_utf8(csv(&rows)).unwrap().replace('\n', "\r\n").into_bytes()
        }, &["line 3, field `event_time_utc`", "has no UTC offset", "line 22: has 3 fields, the header has 15"]),
        refused("csv: CRLF, a short row after a quoted newline", c, String::from_utf8(csv(&[
            csv_row(2, &[("outcome", "\"rejected\""), ("rejection_reason", "\"\"two\nlines\"\"")]),
            "e-3,run-a,3".into(),
        ])).unwrap().replace('\n', "\r\n").into_bytes(), &["line 5: has 3 fields, the header has 15"]),
        refused("csv: None in source_crs on line 5, in strategy_index on line 16", c, {
            let rows: Vec<String> = (2..=15).map(|i| match i {
                4 => csv_row(i, &[("source_crs", "None")]),
                15 => csv_row(i, &[("strategy_index", "None")]),
                _ => csv_row(i, &[]),
            }).collect();
            csv(&rows)
        }, &["line 5, field `source_crs`: `None` is not an EPSG CRS identifier", "line 16, field `strategy_index`: `None` is not a 32-bit integer"]),
        refused("csv: every refused cell of a record", c, csv(&[csv_row(2, &[("sequence", "two"), ("event_time_utc", "noon"), ("target_crs", "WGS84"), ("accuracy_m", "-1")])]),
            &["line 3, field `sequence`: `two` is not a 64-bit integer", "line 3, field `event_time_utc`: `noon`", "line 3, field `target_crs`: `WGS84`", "line 3, field `accuracy_m`: -1.0 is not a finite"]),
        // Normalisations (docs/input.md): spaces around numbers and times are ignored,
        // a sign and exponent notation are numbers; nothing else is trimmed.
        same_as("csv: spaces around numbers and times", c, csv(&[csv_row(2, &[("sequence", " 2 "), ("strategy_index", "0 "), ("accuracy_m", " 0.5"), ("event_time_utc", " 2026-07-13T06:00:00Z ")]), csv_row(3, &[])]), good3.clone(), c),
        same_as("csv: a plus sign and exponent notation", c, csv(&[csv_row(2, &[("sequence", "+2"), ("accuracy_m", "5e-1")]), csv_row(3, &[])]), good3.clone(), c),
        refused("csv: a tab before a number", c, csv(&[csv_row(2, &[("sequence", "\t2")])]), &["line 3, field `sequence`", "is not a 64-bit integer"]),
    ]
}

/// Every case of the matrix, and each text case that refuses one bad line again with the
/// same bad line twice (a valid line between): both named, the first first.
pub fn cases() -> Vec<Case> {
    let mut all = ndjson_cases();
    all.extend(csv_cases());
    all.extend(binary_cases());
    let twice: Vec<Case> = all.iter().filter_map(twice).collect();
    // The doubling must keep finding its shapes: a change to a case's layout that made
    // `twice` skip it would otherwise silently shrink the matrix.
    let count = |unit: &str| twice.iter().filter(|c| c.name.ends_with(unit)).count();
    let crlf = twice
        .iter()
        .filter(|c| c.input.windows(2).any(|w| w == b"\r\n"))
        .count();
    assert!(
        count("(the same bad line twice)") >= 50
            && count("(the same bad row twice)") >= 4
            && crlf >= 2,
        "twice() doubled {} line cases ({crlf} CRLF) and {} row cases",
        count("(the same bad line twice)"),
        count("(the same bad row twice)")
    );
    all.extend(twice);
    all
}

/// `c` with its one bad line (NDJSON line 2 after a valid line 1, CSV line 3 after the
/// header and a valid row) written twice, with a valid line between: the wants of the
/// first (`line 2`/`line 3`), then the same wants of the second (`line 4`/`line 5`).
fn twice(c: &Case) -> Option<Case> {
    let Expect::Refused(wants) = &c.expect else {
        return None;
    };
    if c.input.len() > 1 << 20 {
        return None;
    }
    if matches!(c.format, Format::Arrow | Format::Parquet) {
        return twice_binary(c, wants);
    }
    // CRLF files are doubled as LF and written back with CRLF: the lines are the same.
    let crlf = c.input.windows(2).any(|w| w == b"\r\n");
    let text = if crlf {
        String::from_utf8(c.input.clone())
            .ok()?
            .replace("\r\n", "\n")
            .into_bytes()
    } else {
        c.input.clone()
    };
    let lines: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
    let (input, at, again) = match (c.format, lines.as_slice()) {
        (Format::Ndjson, [first, bad, b""]) if *first == line(1, &[]).as_bytes() => (
            [
                *first,
                b"\n",
                bad,
                b"\n",
                line(3, &[]).as_bytes(),
                b"\n",
                bad,
                b"\n",
            ]
            .concat(),
            "line 2",
            "line 4",
        ),
        (Format::Csv, [header, first, bad, b""])
            if *header == csv_header().as_bytes() && *first == csv_row(1, &[]).as_bytes() =>
        {
            let row3 = csv_row(3, &[]);
            (
                [
                    *header,
                    b"\n",
                    first,
                    b"\n",
                    bad,
                    b"\n",
                    row3.as_bytes(),
                    b"\n",
                    bad,
                    b"\n",
                ]
                .concat(),
                "line 3",
                "line 5",
            )
        }
        _ => return None,
    };
    if !wants.iter().any(|w| w.contains(at)) {
        return None;
    }
    let input = if crlf {
        String::from_utf8(input)
            .ok()?
            .replace('\n', "\r\n")
            .into_bytes()
    } else {
        input
    };
    let mut both = wants.clone();
    both.extend(wants.iter().map(|w| w.replace(at, again)));
    Some(Case {
        name: format!("{} (the same bad line twice)", c.name),
        format: c.format,
        input,
        expect: Expect::Refused(both),
    })
}

/// A binary case whose wants name one refused row (`row K`): its rows written twice, one
/// file of both, so row K and row K + n (n its rows) are both named, the first first.
fn twice_binary(c: &Case, wants: &[String]) -> Option<Case> {
    let rows_named: Vec<u64> = wants
        .iter()
        .filter_map(|w| {
            let rest = w.strip_prefix("row ")?;
            rest.split(|ch: char| !ch.is_ascii_digit())
                .next()?
                .parse()
                .ok()
        })
        .collect();
    let k = *rows_named.first()?;
    if rows_named.iter().any(|&r| r != k) {
        return None;
    }
    let batches: Vec<RecordBatch> = match c.format {
        Format::Arrow => {
            arrow_ipc::reader::FileReader::try_new(std::io::Cursor::new(c.input.clone()), None)
                .ok()?
                .collect::<Result<_, _>>()
                .ok()?
        }
        _ => parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(Bytes::from(
            c.input.clone(),
        ))
        .ok()?
        .build()
        .ok()?
        .collect::<Result<_, _>>()
        .ok()?,
    };
    let one = arrow_select::concat::concat_batches(&batches.first()?.schema(), &batches).ok()?;
    let n = one.num_rows() as u64;
    let two = arrow_select::concat::concat_batches(&one.schema(), [&one, &one]).ok()?;
    let input = match c.format {
        Format::Arrow => ipc_file(&two),
        _ => parquet(&two),
    };
    let (at, again) = (format!("row {k}"), format!("row {}", k + n));
    let mut both = wants.to_vec();
    both.extend(wants.iter().map(|w| w.replacen(&at, &again, 1)));
    Some(Case {
        name: format!("{} (the same bad row twice)", c.name),
        format: c.format,
        input,
        expect: Expect::Refused(both),
    })
}

/// The first of `wants` that `text` does not hold in order (each after the one before),
/// or that serde's own position (`at line N column M`, of a one-line buffer) appears.
pub fn lacks_in_order<'a>(text: &str, wants: &'a [String]) -> Option<&'a str> {
    let mut from = 0;
    for w in wants {
        match text[from..].find(w.as_str()) {
            Some(i) => from += i + w.len(),
            None => return Some(w),
        }
    }
    text.contains(" at line ")
        .then_some("(no serde position `at line N column M`)")
}

/// The validated batches of an input, concatenated (for comparing what is stored).
pub fn validated(input: &[u8], format: Format) -> lineage_store::Result<RecordBatch> {
    let b = parse_validated(Bytes::copy_from_slice(input), format)?;
    Ok(arrow_select::concat::concat_batches(
        &contract::schema(),
        &b,
    )?)
}

/// Rows sorted by `sequence`, schema metadata dropped (parts carry their commit id), in
/// 1.2.0's 15 columns (a 1.3.0 batch's first 15).
pub fn by_sequence(b: &RecordBatch) -> RecordBatch {
    let seq = b.column(2).as_primitive::<Int64Type>();
    let mut idx: Vec<u32> = (0..b.num_rows() as u32).collect();
    idx.sort_by_key(|&i| seq.value(i as usize));
    let b = arrow_select::take::take_record_batch(b, &arrow_array::UInt32Array::from(idx)).unwrap();
    RecordBatch::try_new(contract::schema(), b.columns()[..15].to_vec()).unwrap()
}

/// Fail with every failed case listed (one run shows them all), else say how many passed.
pub fn assert_all_passed(failures: &[String], cases: usize) {
    assert!(
        failures.is_empty(),
        "{} of {cases} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    println!("{cases} cases of the bad-input matrix passed");
}
