//! The core write path through the library: contract, keys, CRS, commit protocol, and
//! what each failure leaves behind.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_schema::{DataType, TimeUnit};
use bytes::Bytes;
use chrono::TimeZone;
use lineage_store::contract;
use lineage_store::internal::faulty::Fault;
use lineage_store::internal::faulty::FaultyPublisher;
use lineage_store::internal::input::parse_validated;
use lineage_store::internal::keys;
use lineage_store::verify;
use lineage_store::verify_with;
use lineage_store::AtomicPublisher;
use lineage_store::FixedClock;
use lineage_store::Format;
use lineage_store::MemoryPublisher;
use lineage_store::Outcome;
use lineage_store::PosixPublisher;
use lineage_store::ProblemKind;
use lineage_store::SeqIds;
use lineage_store::VerifyOptions;
use lineage_store::{ErrorKind, Writer};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::file::reader::{FileReader, SerializedFileReader};

use crate::support::sample;

fn batches(n: i64) -> Vec<arrow_array::RecordBatch> {
    parse_validated(
        Bytes::from(sample::ndjson(&sample::events(n))),
        Format::Ndjson,
    )
    .unwrap()
}

fn det_writer(store: Arc<dyn AtomicPublisher>) -> Writer {
    Writer::new(store)
        .with_ids(Arc::new(SeqIds::default()))
        .with_clock(Arc::new(FixedClock(
            chrono::Utc.with_ymd_and_hms(2026, 7, 13, 8, 0, 0).unwrap(),
        )))
}

#[test]
fn contract_is_the_design_notes_schema() {
    let s = contract::schema();
    let want: Vec<(&str, DataType)> = vec![
        ("event_id", DataType::Utf8),
        ("run_id", DataType::Utf8),
        ("sequence", DataType::Int64),
        (
            "event_time_utc",
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        ),
        ("stage", DataType::Utf8),
        ("event_type", DataType::Utf8),
        ("feature_id", DataType::Utf8),
        ("source_crs", DataType::Utf8),
        ("target_crs", DataType::Utf8),
        ("outcome", DataType::Utf8),
        ("strategy_index", DataType::Int32),
        ("accuracy_m", DataType::Float64),
        ("rejection_reason", DataType::Utf8),
        ("tool_version", DataType::Utf8),
        ("audit_tag", DataType::Utf8),
    ];
    let got: Vec<(&str, DataType)> = s
        .fields()
        .iter()
        .map(|f| (f.name().as_str(), f.data_type().clone()))
        .collect();
    assert_eq!(got, want);
    assert!(
        s.fields().iter().all(|f| f.is_nullable()),
        "pa.schema tuples are nullable"
    );
    assert_eq!(contract::SCHEMA_VERSION, "1.2.0");
}

#[test]
fn schema_mismatch_names_first_field_and_both_types() {
    let mut fields: Vec<_> = contract::schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fields[2] = arrow_schema::Field::new("sequence", DataType::Int32, true);
    let e = contract::check_schema(&arrow_schema::Schema::new(fields.clone()))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("`sequence` has type Int32, the contract expects Int64"),
        "{e}"
    );
    fields[2] = arrow_schema::Field::new("seq", DataType::Int64, true);
    let e = contract::check_schema(&arrow_schema::Schema::new(fields.clone()))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("field 3 is `seq` (Int64), the contract expects `sequence` (Int64)"),
        "{e}"
    );
    fields[2] = arrow_schema::Field::new("sequence", DataType::Int64, true);
    fields.truncate(14);
    let e = contract::check_schema(&arrow_schema::Schema::new(fields))
        .unwrap_err()
        .to_string();
    assert!(e.contains("`audit_tag` (Utf8) is missing"), "{e}");
}

#[tokio::test]
async fn append_groups_flushes_and_writes_parts_and_pointers() {
    let mem = Arc::new(MemoryPublisher::new());
    let w = det_writer(mem.clone()).with_batch_rows(4);
    // 20 events: run-a/run-b × EPSG:4326/EPSG:3857 → groups of 7, 3, 7, 3 rows... (see events())
    let pointers = w.append(&batches(20), |_| {}).await.unwrap();
    let rows: u64 = pointers.iter().map(|p| p.row_count).sum();
    assert_eq!(rows, 20);
    assert!(pointers.iter().all(|p| p.row_count <= 4));
    // Group sizes: run-b/4326 = odd i not divisible by 3 → 7, run-a/4326 → 7, run-b/3857 → 3, run-a/3857 → 3
    assert_eq!(pointers.len(), 2 + 2 + 1 + 1);
    let first = &pointers[0];
    assert_eq!(first.commit_id, "019b76da-a800-7000-8000-000000000001");
    assert_eq!(first.run_id, "run-b");
    assert_eq!(first.target_crs, "EPSG:4326");
    assert_eq!(
        first.part_path,
        format!(
            "run_id=run-b/target_crs=EPSG:4326/part-{}.parquet",
            first.commit_id
        )
    );
    assert_eq!(first.committed_utc, "2026-07-13T08:00:00.000000Z");
    assert_eq!((first.first_sequence, first.last_sequence), (1, 11)); // rows 1, 5, 7, 11
    assert_eq!(first.schema_version, "1.2.0");
    assert!(
        pointers.iter().any(|p| p.target_crs == "EPSG:3857"),
        "URN canonicalised"
    );
    // Every part is in the store with the recorded size and digest, and its footer carries
    // the schema version and commit id both as key-value metadata and in the Arrow schema.
    for p in &pointers {
        let bytes = mem.get(&p.part_path).await.unwrap().unwrap();
        assert_eq!(bytes.len() as u64, p.size_bytes);
        assert_eq!(
            lineage_store::internal::encode::sha256_hex(&bytes),
            p.sha256
        );
        let b3 = lineage_store::internal::digest::blake3_hex(&bytes);
        assert_eq!(p.blake3.as_deref(), Some(b3.as_str()));
        let reader = SerializedFileReader::new(bytes.clone()).unwrap();
        let kv: std::collections::HashMap<_, _> = reader
            .metadata()
            .file_metadata()
            .key_value_metadata()
            .unwrap()
            .iter()
            .map(|kv| (kv.key.clone(), kv.value.clone().unwrap_or_default()))
            .collect();
        assert_eq!(
            kv.get("lineage_schema_version").map(String::as_str),
            Some("1.2.0")
        );
        assert_eq!(kv.get("lineage_commit_id"), Some(&p.commit_id));
        let b = ParquetRecordBatchReaderBuilder::try_new(bytes).unwrap();
        assert_eq!(
            b.schema()
                .metadata()
                .get("lineage_schema_version")
                .map(String::as_str),
            Some("1.2.0")
        );
        let batch = b.build().unwrap().next().unwrap().unwrap();
        let run = batch.column(1).as_string::<i32>();
        let crs = batch.column(8).as_string::<i32>();
        assert!(
            (0..batch.num_rows()).all(|i| run.value(i) == p.run_id && crs.value(i) == p.target_crs)
        );
        let ptr = mem
            .get(&keys::pointer_key(&p.run_id, &p.commit_id))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(&lineage_store::Pointer::from_bytes("t", &ptr).unwrap(), p);
    }
    assert!(verify(mem.as_ref()).await.unwrap().is_clean());
}

#[tokio::test]
async fn encoding_is_deterministic_for_the_same_commit() {
    let a = Arc::new(MemoryPublisher::new());
    let b = Arc::new(MemoryPublisher::new());
    // One identity in both: parts name their store.
    let id = lineage_store::StoreIdentity::new("2026-12-01T00:00:00.000000Z".into());
    for s in [&a, &b] {
        s.tamper_put("_lineage/store.json", Bytes::from(id.to_bytes().unwrap()));
    }
    let pa = det_writer(a).append(&batches(9), |_| {}).await.unwrap();
    let pb = det_writer(b).append(&batches(9), |_| {}).await.unwrap();
    assert_eq!(pa, pb);
}

#[tokio::test]
async fn identical_second_append_adds_parts_and_overwrites_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(PosixPublisher::new(dir.path()));
    let w = Writer::new(store.clone());
    w.append(&batches(12), |_| {}).await.unwrap();
    let before = sample::snapshot(dir.path());
    let again = w.append(&batches(12), |_| {}).await.unwrap();
    let after = sample::snapshot(dir.path());
    sample::assert_append_only(&before, &after, again.len());
    assert_eq!(again.len(), 4, "one part per (run, crs) group");
    let report = verify(store.as_ref()).await.unwrap();
    assert!(report.is_clean(), "{:?}", report.problems);
    assert_eq!(report.commits, 8);
    assert_eq!(report.rows, 24);
}

#[tokio::test]
async fn posix_create_never_replaces_and_leaves_no_temp() {
    let dir = tempfile::tempdir().unwrap();
    let p = PosixPublisher::new(dir.path());
    let key = "run_id=r/target_crs=EPSG:4326/part-0190b2f3-0000-7000-8000-000000000001.parquet";
    assert_eq!(
        p.put_create(key, Bytes::from_static(b"first"))
            .await
            .unwrap(),
        Outcome::Created
    );
    assert_eq!(
        p.put_create(key, Bytes::from_static(b"second"))
            .await
            .unwrap(),
        Outcome::AlreadyExists
    );
    assert_eq!(
        p.get(key).await.unwrap().unwrap(),
        Bytes::from_static(b"first")
    );
    let snap = sample::snapshot(dir.path());
    assert_eq!(snap.len(), 1, "{snap:?}");
    // Such a key only comes from a hostile store's content: the store is not as recorded,
    // naming it (exit 1), not an internal error.
    for bad in ["../escape", "/abs", "a//b", "a/./b"] {
        let e = p.put_create(bad, Bytes::new()).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Integrity);
        assert!(e.to_string().contains("refusing an unsafe key"), "{e}");
    }
    let e = p.delete_temp(key).await.unwrap_err();
    assert!(e.to_string().contains("only stale temporaries"), "{e}");
    assert!(p.get(key).await.unwrap().is_some());
}

#[tokio::test]
async fn posix_concurrent_creators_of_one_key_have_one_winner() {
    let dir = tempfile::tempdir().unwrap();
    let p = Arc::new(PosixPublisher::new(dir.path()));
    let key = "run_id=r/target_crs=EPSG:4326/part-0190b2f3-0000-7000-8000-000000000002.parquet";
    let tasks: Vec<_> = (0..16u8)
        .map(|i| {
            let p = p.clone();
            tokio::spawn(async move {
                (
                    i,
                    p.put_create(key, Bytes::from(vec![i; 1000])).await.unwrap(),
                )
            })
        })
        .collect();
    let mut winners = Vec::new();
    for t in tasks {
        let (i, o) = t.await.unwrap();
        if o == Outcome::Created {
            winners.push(i);
        }
    }
    assert_eq!(winners.len(), 1);
    assert_eq!(
        p.get(key).await.unwrap().unwrap(),
        Bytes::from(vec![winners[0]; 1000])
    );
    assert_eq!(sample::snapshot(dir.path()).len(), 1, "no temp left");
}

#[tokio::test]
async fn crash_between_part_and_pointer_leaves_an_orphan_that_verify_names() {
    let mem = Arc::new(MemoryPublisher::new());
    let faulty = Arc::new(FaultyPublisher::new(mem.clone()));
    faulty.fail("_lineage/commits/", Fault::Before, 1);
    let e = det_writer(faulty.clone())
        .with_concurrency(1)
        .append(&batches(3), |_| {})
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io);
    // No grace: this orphan is not in flight, its writer has failed.
    let opts = VerifyOptions {
        grace: chrono::Duration::zero(),
        ..VerifyOptions::default()
    };
    let report = verify_with(mem.as_ref(), &opts).await.unwrap();
    let orphans: Vec<_> = report
        .problems
        .iter()
        .filter(|p| p.kind == ProblemKind::OrphanPart)
        .collect();
    assert_eq!(orphans.len(), 1, "{:?}", report.problems);
    assert!(orphans[0]
        .key
        .ends_with("part-019b76da-a800-7000-8000-000000000001.parquet"));
}

#[tokio::test]
async fn lost_response_on_create_is_read_back_and_accepted_when_ours() {
    for fault in [Fault::After, Fault::AfterAsExisting] {
        let mem = Arc::new(MemoryPublisher::new());
        let faulty = Arc::new(FaultyPublisher::new(mem.clone()));
        faulty.fail(".parquet", fault.clone(), 1);
        faulty.fail("_lineage/commits/", fault.clone(), 1);
        faulty.fail("_lineage/store.json", fault.clone(), 1);
        let ps = det_writer(faulty.clone())
            .append(&batches(5), |_| {})
            .await
            .unwrap();
        assert_eq!(faulty.fired().len(), 3, "{fault:?}");
        // The store's identity once; a part, a pointer and an index entry per commit,
        // each once.
        assert_eq!(mem.list("").await.unwrap().len(), 1 + 3 * ps.len());
        assert!(verify(mem.as_ref()).await.unwrap().is_clean());
    }
}

#[tokio::test]
async fn a_key_taken_by_other_content_is_a_conflict_naming_both_digests() {
    let mem = Arc::new(MemoryPublisher::new());
    let id = "019b76da-a800-7000-8000-000000000001";
    let key = keys::part_key("run-b", "EPSG:4326", id);
    mem.tamper_put(&key, Bytes::from_static(b"someone else's bytes"));
    let e = det_writer(mem.clone())
        .append(&batches(3), |_| {})
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict);
    let msg = e.to_string();
    let theirs = lineage_store::internal::encode::sha256_hex(b"someone else's bytes");
    assert!(msg.contains(&theirs) && msg.contains("ours"), "{msg}");
    assert_eq!(
        mem.get(&key).await.unwrap().unwrap(),
        Bytes::from_static(b"someone else's bytes")
    );
    assert!(
        mem.get(&keys::pointer_key("run-b", id))
            .await
            .unwrap()
            .is_none(),
        "no pointer for a refused part"
    );
}

#[tokio::test]
async fn a_flush_over_the_single_put_limit_is_refused_before_publishing() {
    let mem = Arc::new(MemoryPublisher::new());
    let e = Writer::new(mem.clone())
        .with_max_part_bytes(100)
        .append(&batches(3), |_| {})
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Input);
    assert!(e.to_string().contains("lower --batch-rows"), "{e}");
    // No part, pointer or index entry: only the store's identity, which every first
    // append creates before encoding (parts carry its id).
    let left: Vec<String> = mem
        .list("")
        .await
        .unwrap()
        .into_iter()
        .map(|o| o.key)
        .collect();
    assert_eq!(left, vec!["_lineage/store.json".to_string()]);
}

#[test]
fn bad_rows_are_named_by_line_and_field() {
    let good = sample::event(1, "run-a", "EPSG:4326");
    type Edit = Box<dyn Fn(&mut serde_json::Value)>;
    let cases: Vec<(Edit, &str)> = vec![
        (
            Box::new(|v| v["sequence"] = "x".into()),
            "line 2, field `sequence`: invalid type: string",
        ),
        (
            Box::new(|v| {
                v.as_object_mut().unwrap().remove("stage");
            }),
            "line 2, field `stage`: is missing",
        ),
        (Box::new(|v| v["extra"] = 1.into()), "unknown field `extra`"),
        (
            Box::new(|v| v["feature_id"] = serde_json::Value::Null),
            "line 2, field `feature_id`: is null",
        ),
        (
            Box::new(|v| v["run_id"] = "../etc".into()),
            "line 2, field `run_id`: run_id \"../etc\" contains `..`",
        ),
        (
            Box::new(|v| v["target_crs"] = "EPSG:99999".into()),
            "line 2, field `target_crs`: `EPSG:99999`",
        ),
        (
            Box::new(|v| v["source_crs"] = "OGC:CRS84".into()),
            "line 2, field `source_crs`: `OGC:CRS84` is OGC:CRS84",
        ),
        (
            Box::new(|v| v["event_time_utc"] = "yesterday".into()),
            "line 2, field `event_time_utc`: `yesterday` is not an RFC 3339",
        ),
        (
            Box::new(|v| {
                v["outcome"] = "rejected".into();
                v["rejection_reason"] = serde_json::Value::Null;
            }),
            "line 2, field `rejection_reason`: is null, but outcome is `rejected`",
        ),
        (
            Box::new(|v| v["accuracy_m"] = (-1.0).into()),
            "line 2, field `accuracy_m`",
        ),
        (
            Box::new(|v| v["strategy_index"] = 3_000_000_000i64.into()),
            "line 2, field `strategy_index`",
        ),
        (
            Box::new(|v| v["event_id"] = "".into()),
            "line 2, field `event_id`: is an empty string",
        ),
    ];
    for (edit, want) in cases {
        let mut bad = good.clone();
        edit(&mut bad);
        let input = format!("{good}\n{bad}\n");
        let e = parse_validated(Bytes::from(input), Format::Ndjson).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Input);
        assert!(e.to_string().contains(want), "want {want:?}, got {e}");
    }
    let e = parse_validated(
        Bytes::from(format!("{good}\n{{\"event_id\": \n")),
        Format::Ndjson,
    )
    .unwrap_err();
    assert!(e.to_string().starts_with("line 2"), "{e}");
    let mut bytes = format!("{good}\n").into_bytes();
    bytes.extend_from_slice(b"{\"event_id\": \"\xff\"}\n");
    let e = parse_validated(Bytes::from(bytes), Format::Ndjson).unwrap_err();
    assert!(e.to_string().contains("line 2: invalid UTF-8"), "{e}");
}

#[test]
fn csv_input_matches_ndjson_input() {
    let rows = sample::events(6);
    let cols: Vec<&str> = contract::COLUMNS.iter().map(|c| c.name).collect();
    let mut csv = cols.join(",") + "\n";
    for r in &rows {
        let cells: Vec<String> = cols
            .iter()
            .map(|c| match &r[*c] {
                serde_json::Value::Null => String::new(),
                serde_json::Value::String(s) => s.clone(),
                v => v.to_string(),
            })
            .collect();
        csv += &(cells.join(",") + "\n");
    }
    let from_csv = parse_validated(Bytes::from(csv.clone()), Format::Csv).unwrap();
    let from_json = parse_validated(Bytes::from(sample::ndjson(&rows)), Format::Ndjson).unwrap();
    assert_eq!(from_csv, from_json);
    let bad = csv.replacen("reproject", "", 1);
    let e = parse_validated(Bytes::from(bad), Format::Csv).unwrap_err();
    assert!(
        e.to_string().contains("line 2, field `stage`: is null"),
        "{e}"
    );
    let bad = csv.replacen(",1,", ",one,", 1);
    let e = parse_validated(Bytes::from(bad), Format::Csv).unwrap_err();
    assert!(
        e.to_string()
            .contains("line 2, field `sequence`: `one` is not a 64-bit integer"),
        "{e}"
    );
}

#[test]
fn arrow_ipc_file_and_stream_inputs_round_trip() {
    let want = batches(10);
    let schema = contract::schema();
    let mut file = Vec::new();
    {
        let mut w = arrow_ipc::writer::FileWriter::try_new(&mut file, &schema).unwrap();
        for b in &want {
            w.write(b).unwrap();
        }
        w.finish().unwrap();
    }
    let mut stream = Vec::new();
    {
        let mut w = arrow_ipc::writer::StreamWriter::try_new(&mut stream, &schema).unwrap();
        for b in &want {
            w.write(b).unwrap();
        }
        w.finish().unwrap();
    }
    for bytes in [file, stream] {
        let got = parse_validated(Bytes::from(bytes), Format::Arrow).unwrap();
        assert_eq!(got, want);
    }
    let e = parse_validated(Bytes::from_static(b"not arrow at all"), Format::Arrow).unwrap_err();
    assert!(e.to_string().contains("not a readable Arrow IPC"), "{e}");
}

#[test]
fn ndjson_tolerates_crlf_bom_and_blank_lines_and_counts_lines_right() {
    let rows = sample::events(2);
    let input = format!("\u{feff}{}\r\n\r\n{}\n\n", rows[0], rows[1]);
    let got = parse_validated(Bytes::from(input), Format::Ndjson).unwrap();
    assert_eq!(got.iter().map(|b| b.num_rows()).sum::<usize>(), 2);
    let mut bad = rows[1].clone();
    bad["sequence"] = serde_json::Value::Null;
    let input = format!("{}\n\n\n{}\n", rows[0], bad);
    let e = parse_validated(Bytes::from(input), Format::Ndjson).unwrap_err();
    assert!(e.to_string().starts_with("line 4, field `sequence`"), "{e}");
}
