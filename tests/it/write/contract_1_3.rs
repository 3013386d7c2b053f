//! The released contract 1.3.0 (issue 37): its six nullable columns through every input
//! format (NDJSON, CSV, Arrow), their value rules, the parts' field ids, the Delta log's
//! schema change at the seal that first seals a 1.3.0 part, and 1.2.0 input still taken.

use std::path::Path;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch, StringArray};
use lineage_store::contract;
use serde_json::{json, Value};

use crate::support::{self, lineage, sample};

/// Event `i` with the 1.3.0 fields (`degraded` every third row, grids none on even rows).
fn event_1_3(i: i64) -> Value {
    let mut e = sample::event(i, "run-g", "EPSG:4326");
    let o = e.as_object_mut().unwrap();
    o.insert("operation_code".into(), json!("EPSG:1175"));
    o.insert("operation_name".into(), json!("NAD27 to WGS 84 (6)"));
    o.insert(
        "grids".into(),
        if i % 2 == 0 {
            json!("")
        } else {
            json!("us_noaa_conus.tif")
        },
    );
    o.insert("degraded".into(), json!(i % 3 == 0));
    o.insert("input_dataset".into(), json!("parcels"));
    o.insert("input_version".into(), json!("2026-07-01"));
    e
}

fn ok(o: &std::process::Output) -> String {
    let (out, err) = support::text(o);
    assert_eq!(o.status.code(), Some(0), "{out}\n{err}");
    out
}

fn parts_of(store: &Path) -> Vec<std::path::PathBuf> {
    support::files_below(store)
        .into_iter()
        .filter(|p| {
            p.extension().is_some_and(|e| e == "parquet")
                && !p.starts_with(store.join("_delta_log"))
        })
        .collect()
}

fn read_part(p: &Path) -> (RecordBatch, String, Vec<i32>) {
    let b = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
        std::fs::File::open(p).unwrap(),
    )
    .unwrap();
    let version = b
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .unwrap()
        .iter()
        .find(|kv| kv.key == contract::META_SCHEMA_VERSION)
        .and_then(|kv| kv.value.clone())
        .unwrap();
    let ids = b
        .parquet_schema()
        .root_schema()
        .get_fields()
        .iter()
        .map(|f| f.get_basic_info().id())
        .collect();
    let schema = b.schema().clone();
    let rows: Vec<RecordBatch> = b.build().unwrap().map(|b| b.unwrap()).collect();
    (
        arrow_select::concat::concat_batches(&schema, &rows).unwrap(),
        version,
        ids,
    )
}

#[test]
fn the_registry_releases_1_3_0_with_six_nullable_columns_and_lineage_schema_shows_it() {
    let v = contract::newest();
    assert_eq!(v.version, "1.3.0");
    let names: Vec<&str> = v.columns[15..].iter().map(|c| c.name).collect();
    assert_eq!(
        names,
        [
            "operation_code",
            "operation_name",
            "grids",
            "degraded",
            "input_dataset",
            "input_version"
        ]
    );
    assert!(v.columns[15..].iter().all(|c| !c.required));
    assert_eq!(v.columns[18].kind, contract::Kind::Bool);
    assert_eq!(v.field_ids(), (1..=21).collect::<Vec<i32>>());
    let text = ok(&lineage(&["schema"], None));
    assert!(
        text.starts_with("lineage contract, schema version 1.3.0 (registered: 1.2.0, 1.3.0)"),
        "{text}"
    );
    assert!(text.contains("19 degraded"), "{text}");
    assert!(text.contains("Boolean"), "{text}");
    assert!(
        text.contains("(schema mapping) the data's CRS, unchanged"),
        "{text}"
    );
    assert!(text.contains("not comparable across machines"), "{text}");
    let j: Value = serde_json::from_str(&ok(&lineage(&["schema", "--json"], None))).unwrap();
    assert_eq!(j["schema_version"], "1.3.0");
    assert_eq!(j["fields"].as_array().unwrap().len(), 21);
    let old: Value = serde_json::from_str(&ok(&lineage(
        &["schema", "--json", "--schema-version", "1.2.0"],
        None,
    )))
    .unwrap();
    assert_eq!(old["fields"].as_array().unwrap().len(), 15);
}

#[test]
fn ndjson_csv_and_arrow_carry_the_new_columns_and_1_2_0_input_is_still_taken() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let s = store.to_str().unwrap();
    // NDJSON with the 1.3.0 fields: a 1.3.0 part with the values as written.
    let rows: Vec<Value> = (1..=12).map(event_1_3).collect();
    ok(&lineage(
        &["append", "--store", s],
        Some(sample::ndjson(&rows).as_bytes()),
    ));
    let parts = parts_of(&store);
    assert_eq!(parts.len(), 1);
    let (b, version, ids) = read_part(&parts[0]);
    assert_eq!(version, "1.3.0");
    assert_eq!(
        ids,
        (1..=21).collect::<Vec<i32>>(),
        "new columns take ids 16..21"
    );
    let degraded = b.column_by_name("degraded").unwrap().as_boolean();
    let seq = b
        .column_by_name("sequence")
        .unwrap()
        .as_primitive::<arrow_array::types::Int64Type>();
    let grids = b.column_by_name("grids").unwrap().as_string::<i32>();
    for r in 0..b.num_rows() {
        let i = seq.value(r);
        assert_eq!(degraded.value(r), i % 3 == 0, "row {r}");
        assert_eq!(
            grids.value(r),
            if i % 2 == 0 { "" } else { "us_noaa_conus.tif" }
        );
        assert!(
            grids.is_valid(r),
            "an empty grids list is a value, not null"
        );
    }
    // 1.2.0 NDJSON lines (without the new fields): taken, written as the newest with nulls.
    let old2 = tempfile::tempdir().unwrap();
    let s2 = old2.path().join("s");
    let s2 = s2.to_str().unwrap();
    ok(&lineage(
        &["append", "--store", s2],
        Some(sample::ndjson(&sample::events(5)).as_bytes()),
    ));
    for p in parts_of(Path::new(s2)) {
        let (b, version, _) = read_part(&p);
        assert_eq!(version, "1.3.0");
        for c in 15..21 {
            assert_eq!(b.column(c).null_count(), b.num_rows());
        }
    }
    // --schema-version 1.2.0: 1.2.0 lines are written as 1.2.0; lines with new values refused.
    let old3 = tempfile::tempdir().unwrap();
    let s3 = old3.path().join("s");
    let s3 = s3.to_str().unwrap();
    let args = ["append", "--store", s3, "--schema-version", "1.2.0"];
    ok(&lineage(
        &args,
        Some(sample::ndjson(&sample::events(5)).as_bytes()),
    ));
    let o = lineage(&args, Some(sample::ndjson(&rows).as_bytes()));
    assert_eq!(o.status.code(), Some(2));
    let err = support::text(&o).1;
    assert!(err.contains("cannot be written as 1.2.0"), "{err}");
    assert!(err.contains("operation_code"), "{err}");
    for p in parts_of(Path::new(s3)) {
        assert_eq!(read_part(&p).1, "1.2.0");
    }
    // CSV with some of the new columns (any case for booleans), the others null.
    let csv = "event_id,run_id,sequence,event_time_utc,stage,event_type,feature_id,source_crs,target_crs,outcome,strategy_index,accuracy_m,rejection_reason,tool_version,audit_tag,degraded,operation_code\n\
        e1,run-c,1,2026-07-13T06:00:00Z,map,schema_mapping,f1,,EPSG:4326,transformed,,,,v1,,True,\n\
        e2,run-c,2,2026-07-13T06:00:01Z,reproject,crs_transform,f2,EPSG:4267,EPSG:4326,transformed,3,1.0,,v1,,false,EPSG:1175\n";
    let dir4 = tempfile::tempdir().unwrap();
    let s4 = dir4.path().join("s");
    let s4 = s4.to_str().unwrap();
    ok(&lineage(
        &["append", "--store", s4, "--format", "csv"],
        Some(csv.as_bytes()),
    ));
    let (b, version, _) = read_part(&parts_of(Path::new(s4))[0]);
    assert_eq!(version, "1.3.0");
    let d = b.column_by_name("degraded").unwrap().as_boolean();
    assert_eq!(d.iter().collect::<Vec<_>>(), [Some(true), Some(false)]);
    let code = b
        .column_by_name("operation_code")
        .unwrap()
        .as_string::<i32>();
    assert_eq!(code.iter().collect::<Vec<_>>(), [None, Some("EPSG:1175")]);
    assert_eq!(b.column_by_name("grids").unwrap().null_count(), 2);
    // Arrow IPC of 1.3.0 (typed): kept as 1.3.0, values as given.
    let v = contract::version("1.3.0").unwrap();
    let base = contract::version("1.2.0").unwrap();
    let demo = lineage_store::generate_demo_events(10, 1, 5).unwrap();
    let wide = contract::conform(demo, &base, &v).unwrap();
    let b = &wide[0];
    let mut cols: Vec<ArrayRef> = b.columns()[..15].to_vec();
    let n = b.num_rows();
    cols.push(Arc::new(StringArray::from(vec![Some("EPSG:15851"); n])));
    cols.push(Arc::new(StringArray::from(vec![
        Some(
            "NAD27 to WGS 84 (79)"
        );
        n
    ])));
    cols.push(Arc::new(StringArray::from(vec![None::<&str>; n])));
    cols.push(Arc::new(BooleanArray::from(vec![Some(false); n])));
    cols.push(Arc::new(StringArray::from(vec![Some("roads"); n])));
    cols.push(Arc::new(StringArray::from(vec![None::<&str>; n])));
    let typed = RecordBatch::try_new(v.schema(), cols).unwrap();
    let arrow = dir.path().join("in.arrow");
    let mut w = arrow_ipc::writer::FileWriter::try_new(
        std::fs::File::create(&arrow).unwrap(),
        &typed.schema(),
    )
    .unwrap();
    w.write(&typed).unwrap();
    w.finish().unwrap();
    let dir5 = tempfile::tempdir().unwrap();
    let s5 = dir5.path().join("s");
    let s5 = s5.to_str().unwrap();
    ok(&lineage(
        &["append", "--store", s5, "--input", arrow.to_str().unwrap()],
        None,
    ));
    let mut seen = 0;
    for p in parts_of(Path::new(s5)) {
        let (b, version, _) = read_part(&p);
        assert_eq!(version, "1.3.0");
        let d = b.column_by_name("degraded").unwrap().as_boolean();
        assert_eq!(d.true_count() + d.null_count(), 0);
        seen += b.num_rows();
    }
    assert_eq!(seen, 10);
}

#[test]
fn the_new_columns_rules_name_each_refused_cell_and_publish_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let s = store.to_str().unwrap();
    let mut rows: Vec<Value> = (1..=6).map(event_1_3).collect();
    rows[0]["operation_code"] = json!("1175");
    rows[1]["operation_code"] = json!("PROJ-SHA256:abc");
    rows[2]["grids"] = json!("a.tif  b.tif");
    rows[3]["degraded"] = json!("yes");
    rows[4]["input_dataset"] = json!("");
    rows[5]["event_id"] = rows[0]["event_id"].clone();
    let o = lineage(
        &["append", "--store", s],
        Some(sample::ndjson(&rows).as_bytes()),
    );
    assert_eq!(o.status.code(), Some(2));
    let err = support::text(&o).1;
    for want in [
        "line 1, field `operation_code`: \"1175\" is not AUTHORITY:CODE",
        "line 2, field `operation_code`: \"PROJ-SHA256:abc\" is not PROJ-SHA256: followed by 64 lowercase hex digits",
        "line 3, field `grids`: \"a.tif  b.tif\" has a leading, trailing or doubled space",
        "line 4, field `degraded`: invalid type: string \"yes\", expected a boolean",
        "line 5, field `input_dataset`: is an empty string (use null for no value)",
        "line 6, field `event_id`: duplicates the event_id of line 1",
    ] {
        assert!(err.contains(want), "{want}\n{err}");
    }
    assert!(
        !store.exists() || parts_of(&store).is_empty(),
        "nothing published"
    );
}

#[test]
fn a_duplicate_event_id_in_one_batch_is_refused_naming_both_rows_in_every_format() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s");
    let s = s.to_str().unwrap();
    let mut rows = sample::events(4);
    rows[3]["event_id"] = rows[1]["event_id"].clone();
    let o = lineage(
        &["append", "--store", s],
        Some(sample::ndjson(&rows).as_bytes()),
    );
    assert_eq!(o.status.code(), Some(2));
    let err = support::text(&o).1;
    assert!(
        err.contains("line 4, field `event_id`: duplicates the event_id of line 2"),
        "{err}"
    );
    // Arrow (rows, not lines): the same rule through the typed path.
    let batches = support::batches("run-d", 3, "t");
    let b = &batches[0];
    let mut cols = b.columns().to_vec();
    let ids = b.column(0).as_string::<i32>();
    let dup: StringArray = (0..ids.len()).map(|i| Some(ids.value(i.min(1)))).collect();
    cols[0] = Arc::new(dup);
    let b = RecordBatch::try_new(b.schema(), cols).unwrap();
    let arrow = dir.path().join("dup.arrow");
    let mut w =
        arrow_ipc::writer::FileWriter::try_new(std::fs::File::create(&arrow).unwrap(), &b.schema())
            .unwrap();
    w.write(&b).unwrap();
    w.finish().unwrap();
    let o = lineage(
        &["append", "--store", s, "--input", arrow.to_str().unwrap()],
        None,
    );
    assert_eq!(o.status.code(), Some(2));
    let err = support::text(&o).1;
    assert!(
        err.contains("row 3, field `event_id`: duplicates the event_id of row 2"),
        "{err}"
    );
}

/// The Delta log (version N = seal N, version 0 creates the table): the seal that first
/// seals a 1.3.0 part carries a `metaData` with the 21-column schema (`degraded` a
/// `boolean`); the versions before and after it do not.
#[test]
fn the_delta_log_records_the_schema_change_at_the_first_seal_of_a_1_3_0_part() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let s = store.to_str().unwrap();
    let old = ["append", "--store", s, "--schema-version", "1.2.0"];
    ok(&lineage(
        &old,
        Some(sample::ndjson(&sample::events(6)).as_bytes()),
    ));
    ok(&lineage(&["seal", "--store", s], None));
    let rows: Vec<Value> = (20..30).map(event_1_3).collect();
    ok(&lineage(
        &["append", "--store", s],
        Some(sample::ndjson(&rows).as_bytes()),
    ));
    ok(&lineage(&["seal", "--store", s], None));
    ok(&lineage(
        &old,
        Some(
            sample::ndjson(
                &sample::events(3)
                    .into_iter()
                    .map(|mut e| {
                        e["event_id"] = json!(format!("{}-late", e["event_id"].as_str().unwrap()));
                        e
                    })
                    .collect::<Vec<_>>(),
            )
            .as_bytes(),
        ),
    ));
    ok(&lineage(&["seal", "--store", s], None));
    let schema_of = |v: u64| -> Option<Value> {
        let text = std::fs::read_to_string(store.join(format!("_delta_log/{v:020}.json"))).unwrap();
        text.lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .find_map(|a| a.get("metaData").cloned())
            .map(|m| serde_json::from_str(m["schemaString"].as_str().unwrap()).unwrap())
    };
    let v0 = schema_of(0).expect("version 0 creates the table");
    assert_eq!(v0["fields"].as_array().unwrap().len(), 15);
    assert!(schema_of(1).is_none(), "seal 1 seals 1.2.0 parts only");
    let v2 = schema_of(2).expect("seal 2 seals 1.3.0 parts: a metaData with the new schema");
    let fields = v2["fields"].as_array().unwrap();
    assert_eq!(fields.len(), 21);
    assert_eq!(
        fields[18],
        json!({"name": "degraded", "type": "boolean", "nullable": true, "metadata": {}})
    );
    assert_eq!(fields[15]["name"], "operation_code");
    assert!(
        schema_of(3).is_none(),
        "a later 1.2.0 part changes no schema"
    );
    let out = ok(&lineage(&["verify", "--store", s], None));
    assert!(out.contains("clean"), "{out}");
}

/// A keyed retry of text input that a binary from before contract 1.3.0 committed as
/// 1.2.0 (text input is written as 1.3.0 now; `--schema-version 1.2.0` writes what that
/// binary wrote): the retry, not pinned, is the same commit, so it is recognised as already
/// committed, neither refused as another payload nor written a second time; `--resume`
/// keeps every flush.
#[test]
fn a_keyed_retry_of_text_an_older_binary_committed_as_1_2_0_is_the_same_commit() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s");
    let s = store.to_str().unwrap();
    let input = sample::ndjson(&sample::events(12));
    let key = ["--commit-key", "nightly-2026-12-06", "--batch-rows", "5"];
    let first = [
        &["append", "--store", s, "--schema-version", "1.2.0"][..],
        &key[..],
    ]
    .concat();
    ok(&lineage(&first, Some(input.as_bytes())));
    let parts = parts_of(&store);
    let files = |root: &Path| -> Vec<(String, Vec<u8>)> {
        let mut v: Vec<(String, Vec<u8>)> = support::files_below(root)
            .into_iter()
            .map(|p| {
                (
                    p.strip_prefix(root).unwrap().display().to_string(),
                    std::fs::read(&p).unwrap(),
                )
            })
            .collect();
        v.sort();
        v
    };
    let before = files(&store);
    for extra in [&[][..], &["--resume"][..]] {
        let retry = [&["append", "--store", s][..], &key[..], extra].concat();
        let out = ok(&lineage(&retry, Some(input.as_bytes())));
        let same = if extra.is_empty() {
            out.lines()
                .filter(|l| l.starts_with("already committed "))
                .count()
                == 4
        } else {
            out.contains("4 kept from an earlier attempt, 0 of them with a different payload")
        };
        assert!(same, "the retry is the same payload: {out}");
        assert!(out.contains("4 commits, 12 rows"), "{out}");
        assert_eq!(parts_of(&store), parts, "no part written twice");
        assert_eq!(files(&store), before, "nothing published by {extra:?}");
    }
    let (batch, version, _) = read_part(&parts[0]);
    assert_eq!((batch.num_columns(), version.as_str()), (15, "1.2.0"));
    let out = ok(&lineage(&["verify", "--store", s], None));
    assert!(out.contains("clean"), "{out}");
}
