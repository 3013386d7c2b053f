//! Encoder settings (`encode::PartEncoding`): what new parts look like, and that a keyed
//! append retried under a claim of the earlier settings publishes byte-identical parts.

use std::sync::Arc;

use bytes::Bytes;
use lineage_store::internal::claim::Claim;
use lineage_store::internal::encode;
use lineage_store::internal::encode::PartEncoding;
use lineage_store::internal::input::parse_validated;
use lineage_store::internal::keys;
use lineage_store::Format;
use lineage_store::MemoryPublisher;
use lineage_store::Pointer;
use lineage_store::{AtomicPublisher, Writer};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::file::reader::{FileReader, SerializedFileReader};

use crate::support::sample;

fn input(n: i64) -> Vec<arrow_array::RecordBatch> {
    parse_validated(
        Bytes::from(sample::ndjson(&sample::events(n))),
        Format::Ndjson,
    )
    .unwrap()
}

async fn keyed(mem: Arc<MemoryPublisher>, n: i64) -> Vec<Pointer> {
    Writer::new(mem)
        .with_batch_rows(100)
        .with_commit_key(Some("job-1".into()))
        .append(&input(n), |_| {})
        .await
        .unwrap()
}

async fn claim(mem: &MemoryPublisher) -> Claim {
    let raw = mem
        .get(&keys::commit_key_claim_key("job-1"))
        .await
        .unwrap()
        .unwrap();
    serde_json::from_slice(&raw).unwrap()
}

#[tokio::test]
async fn new_parts_skip_dictionaries_of_unique_columns_and_keep_chunk_statistics() {
    let mem = Arc::new(MemoryPublisher::new());
    let ps = keyed(mem.clone(), 300).await;
    assert_eq!(claim(&mem).await.part_encoding, Some(4));
    let bytes = mem.get(&ps[0].part_path).await.unwrap().unwrap();
    let r = SerializedFileReader::new(bytes).unwrap();
    let rg = r.metadata().row_group(0);
    let col = |name: &str| {
        (0..rg.num_columns())
            .map(|i| rg.column(i))
            .find(|c| c.column_path().string() == name)
            .unwrap()
    };
    for name in encode::UNIQUE_COLUMNS {
        assert!(
            col(name).dictionary_page_offset().is_none(),
            "{name} is dictionary-encoded"
        );
    }
    for name in ["run_id", "target_crs", "stage"] {
        assert!(col(name).dictionary_page_offset().is_some(), "{name}");
    }
    for name in ["event_id", "feature_id"] {
        assert!(col(name).statistics().is_none(), "{name} has statistics");
    }
    for name in [
        "run_id",
        "sequence",
        "event_time_utc",
        "target_crs",
        "stage",
    ] {
        let s = col(name).statistics().unwrap_or_else(|| panic!("{name}"));
        assert!(s.min_is_exact() && s.max_is_exact(), "{name}");
    }
    // Chunk statistics only: no page index.
    assert!(col("sequence").column_index_offset().is_none());
    // Footer metadata as before.
    let kv = r.metadata().file_metadata().key_value_metadata().unwrap();
    let get = |k: &str| kv.iter().find(|x| x.key == k).and_then(|x| x.value.clone());
    assert_eq!(
        get("lineage_commit_id").as_deref(),
        Some(ps[0].commit_id.as_str())
    );
    assert!(get("lineage_schema_version").is_some());
    // Encoding 3: the footer names the store the part was written to.
    let id = lineage_store::read_identity(mem.as_ref())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        get("lineage_store_id").as_deref(),
        Some(id.store_id.as_str())
    );
}

/// A job whose first attempt claimed its key under encoding 2 (before parts named their
/// store) and published its parts, then died: the retry publishes the same bytes, with no
/// store id in the footer.
#[tokio::test]
async fn a_claim_of_encoding_2_is_retried_byte_identical_without_a_store_id() {
    let scratch = Arc::new(MemoryPublisher::new());
    let ps = keyed(scratch.clone(), 700).await;
    let mut old = claim(&scratch).await;
    old.part_encoding = Some(2);
    let mem = Arc::new(MemoryPublisher::new());
    mem.put_create(
        &keys::commit_key_claim_key("job-1"),
        Bytes::from(serde_json::to_vec_pretty(&old).unwrap()),
    )
    .await
    .unwrap();
    let mut want = Vec::new();
    for p in &ps {
        let v3 = scratch.get(&p.part_path).await.unwrap().unwrap();
        let rows: Vec<_> = ParquetRecordBatchReaderBuilder::try_new(v3.clone())
            .unwrap()
            .build()
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let batch = arrow_select::concat::concat_batches(&rows[0].schema(), &rows).unwrap();
        let v2 = encode::encode_with(&batch, &p.commit_id, PartEncoding::V2).unwrap();
        assert_ne!(v2.sha256, p.sha256, "the footers differ");
        // Only half the parts landed before the first attempt died.
        if want.len() % 2 == 0 {
            mem.put_create(&p.part_path, v2.bytes.clone())
                .await
                .unwrap();
        }
        want.push((p.commit_id.clone(), v2.sha256));
    }
    let mut got: Vec<_> = keyed(mem.clone(), 700)
        .await
        .into_iter()
        .map(|p| (p.commit_id, p.sha256))
        .collect();
    got.sort();
    want.sort();
    assert_eq!(got, want);
    assert_eq!(claim(&mem).await.part_encoding, Some(2), "the claim stands");
    let part = mem.get(&ps[1].part_path).await.unwrap().unwrap();
    let r = SerializedFileReader::new(part).unwrap();
    let kv = r.metadata().file_metadata().key_value_metadata().unwrap();
    assert!(kv.iter().all(|x| x.key != "lineage_store_id"));
}

/// A job whose first attempt (before part encodings were recorded) claimed its key and
/// published its parts, then died before the pointers: the retry must publish the same
/// bytes, else every part conflicts at read-back.
#[tokio::test]
async fn a_claim_without_part_encoding_is_retried_with_the_old_encoder() {
    retried_under(None, PartEncoding::V1).await;
}

/// The same for a claim of the encoding before bloom filters (issue 19): its retry
/// publishes parts without them, byte-identical to the first attempt's.
#[tokio::test]
async fn a_claim_of_encoding_2_is_retried_without_bloom_filters() {
    retried_under(Some(2), PartEncoding::V2).await;
}

/// The same for a claim of the encoding before field ids (issue 39): its retry publishes
/// parts without them, byte-identical to the first attempt's.
#[tokio::test]
async fn a_claim_of_encoding_3_is_retried_without_field_ids() {
    retried_under(Some(3), PartEncoding::V3).await;
}

/// The Parquet field ids of a part's columns, by name (none: absent).
fn field_ids(bytes: Bytes) -> Vec<(String, Option<i32>)> {
    let r = SerializedFileReader::new(bytes).unwrap();
    let root = r
        .metadata()
        .file_metadata()
        .schema_descr()
        .root_schema()
        .clone();
    root.get_fields()
        .iter()
        .map(|f| {
            let info = f.get_basic_info();
            (f.name().to_string(), info.has_id().then(|| info.id()))
        })
        .collect()
}

/// New parts (encoding 4) carry `PARQUET:field_id` = the contract's column ids (1..15 for
/// 1.2.0, in contract order) in the Parquet schema; a
/// part of encoding 3 carries none; the rows read back are the same.
#[tokio::test]
async fn new_parts_carry_the_contracts_column_ids_as_parquet_field_ids() {
    use lineage_store::contract;
    let mem = Arc::new(MemoryPublisher::new());
    let ps = keyed(mem.clone(), 300).await;
    let v = contract::version(contract::SCHEMA_VERSION).unwrap();
    assert_eq!(v.field_ids(), (1..=15).collect::<Vec<i32>>());
    let want: Vec<(String, Option<i32>)> = v
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| (c.name.to_string(), Some(i as i32 + 1)))
        .collect();
    let bytes = mem.get(&ps[0].part_path).await.unwrap().unwrap();
    assert_eq!(field_ids(bytes.clone()), want);
    let read = |b: Bytes| -> Vec<arrow_array::RecordBatch> {
        ParquetRecordBatchReaderBuilder::try_new(b)
            .unwrap()
            .build()
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let rows = read(bytes.clone());
    // The embedded Arrow schema is encoding 3's: the ids are in the Parquet schema only
    // (pyarrow and Iceberg readers take them from there), ~30 bytes a part.
    assert_eq!(rows[0].schema().fields(), v.schema().fields());
    let batch = arrow_select::concat::concat_batches(&rows[0].schema(), &rows).unwrap();
    let v3 = encode::encode_with(&batch, &ps[0].commit_id, PartEncoding::V3).unwrap();
    assert!(field_ids(v3.bytes.clone())
        .iter()
        .all(|(_, id)| id.is_none()));
    let again = read(v3.bytes);
    let again = arrow_select::concat::concat_batches(&again[0].schema(), &again).unwrap();
    assert_eq!(again.columns(), batch.columns(), "same rows either way");
}

async fn retried_under(tag: Option<u32>, encoding: PartEncoding) {
    // The payload's flushes and commit ids, from a run on another store.
    let scratch = Arc::new(MemoryPublisher::new());
    let ps = keyed(scratch.clone(), 700).await;
    let mut old = claim(&scratch).await;
    old.part_encoding = tag;
    let mem = Arc::new(MemoryPublisher::new());
    mem.put_create(
        &keys::commit_key_claim_key("job-1"),
        Bytes::from(serde_json::to_vec_pretty(&old).unwrap()),
    )
    .await
    .unwrap();
    // The first attempt created the store's identity (what encoding 3 names in footers).
    let identity = scratch.get(keys::IDENTITY_KEY).await.unwrap().unwrap();
    mem.put_create(keys::IDENTITY_KEY, identity).await.unwrap();
    let store_id = lineage_store::read_identity(mem.as_ref())
        .await
        .unwrap()
        .unwrap()
        .store_id;
    let mut want = Vec::new();
    for p in &ps {
        let new = scratch.get(&p.part_path).await.unwrap().unwrap();
        let rows: Vec<_> = ParquetRecordBatchReaderBuilder::try_new(new.clone())
            .unwrap()
            .build()
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let batch = arrow_select::concat::concat_batches(&rows[0].schema(), &rows).unwrap();
        let before =
            encode::encode_for_store(&batch, &p.commit_id, encoding, Some(&store_id)).unwrap();
        assert_ne!(before.sha256, p.sha256, "the encodings differ");
        mem.put_create(&p.part_path, before.bytes.clone())
            .await
            .unwrap();
        want.push((p.commit_id.clone(), before.sha256));
    }
    let mut got: Vec<_> = keyed(mem.clone(), 700)
        .await
        .into_iter()
        .map(|p| (p.commit_id, p.sha256))
        .collect();
    got.sort();
    want.sort();
    assert_eq!(got, want);
    assert_eq!(
        claim(&mem).await.part_encoding,
        tag,
        "the claim is left as it was"
    );
}

/// New parts carry a bloom filter on feature_id and event_id, sized for their rows: every
/// value of the part is in it, and values of other parts mostly are not.
#[tokio::test]
async fn new_parts_carry_bloom_filters_sized_for_their_rows() {
    use parquet::bloom_filter::Sbbf;
    let mem = Arc::new(MemoryPublisher::new());
    let ps = keyed(mem.clone(), 600).await;
    let bytes = mem.get(&ps[0].part_path).await.unwrap().unwrap();
    let r = SerializedFileReader::new(bytes.clone()).unwrap();
    let rg = r.metadata().row_group(0);
    for (i, name) in encode::BLOOM_COLUMNS.iter().enumerate() {
        let c = (0..rg.num_columns())
            .map(|i| rg.column(i))
            .find(|c| c.column_path().string() == *name)
            .unwrap();
        let f = Sbbf::read_from_column_chunk(c, &bytes).unwrap().unwrap();
        let rows: Vec<_> = ParquetRecordBatchReaderBuilder::try_new(bytes.clone())
            .unwrap()
            .build()
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let mut inside = 0;
        for b in &rows {
            let a = b
                .column_by_name(name)
                .unwrap()
                .as_any()
                .downcast_ref::<arrow_array::StringArray>()
                .unwrap();
            for v in a.iter().flatten() {
                assert!(f.check(v), "{name} {v} is in the part");
                inside += 1;
            }
        }
        assert_eq!(inside, ps[0].row_count);
        let outside = (0..1000)
            .filter(|k| f.check(format!("elsewhere-{i}-{k}").as_str()))
            .count();
        assert!(outside < 50, "{name}: {outside} of 1000 false positives");
        // Sized for the part's rows, not the writer's default of a million values.
        assert!(
            (c.bloom_filter_length().unwrap() as u64) < 64 * ps[0].row_count + 4096,
            "{name}: {} bytes for {} rows",
            c.bloom_filter_length().unwrap(),
            ps[0].row_count
        );
    }
}

#[test]
fn unknown_part_encodings_are_refused_with_a_reason() {
    let e = PartEncoding::from_tag(Some(9)).unwrap_err();
    assert!(e.to_string().contains("part encoding 9 is newer"), "{e}");
    assert_eq!(PartEncoding::from_tag(None).unwrap(), PartEncoding::V1);
    for e in [PartEncoding::V2, PartEncoding::V3, PartEncoding::V4] {
        assert_eq!(PartEncoding::from_tag(e.tag()).unwrap(), e);
    }
    assert_eq!(PartEncoding::default(), PartEncoding::V4);
}

#[test]
fn the_floor_benchs_encoding_alone_is_the_parts_bytes_and_its_digests_are_over_them() {
    // benches/floor.rs times `parquet_bytes` as the encoding of a part: the same bytes as
    // the part `encode_for_store` makes, whose sha256 and BLAKE3 are of exactly those bytes.
    let batch = &input(250)[0];
    let (id, store) = ("0190f000-0000-7000-8000-000000000001", Some("s-1"));
    let part = encode::encode_for_store(batch, id, PartEncoding::default(), store).unwrap();
    let alone = encode::parquet_bytes(batch, id, PartEncoding::default(), store, None).unwrap();
    assert_eq!(part.bytes.as_ref(), alone.as_slice());
    assert_eq!(
        part.sha256,
        lineage_store::internal::digest::sha256_hex(&alone)
    );
    assert_eq!(
        part.blake3,
        lineage_store::internal::digest::blake3_hex(&alone)
    );
    let plain = encode::parquet_bytes(
        batch,
        id,
        PartEncoding::default(),
        store,
        Some(parquet::basic::Compression::UNCOMPRESSED),
    )
    .unwrap();
    assert!(plain.len() > alone.len(), "{} {}", plain.len(), alone.len());
}
