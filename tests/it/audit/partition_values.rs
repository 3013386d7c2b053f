//! verify reads a part's partition columns (as dictionaries) and names rows whose
//! run_id or target_crs differ from the part's path, even when the pointer's size and
//! sha256 agree with the part (a commit forged whole, or a writer bug).

use std::sync::Arc;

use arrow_array::RecordBatch;
use bytes::Bytes;
use lineage_store::contract;
use lineage_store::internal::input::parse_validated;
use lineage_store::verify;
use lineage_store::Format;
use lineage_store::MemoryPublisher;
use lineage_store::ProblemKind;
use lineage_store::Writer;
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;

use crate::support::sample;

fn rows(run: &str, from: i64, n: i64) -> RecordBatch {
    let v: Vec<_> = (from..from + n)
        .map(|i| sample::event(i, run, "EPSG:4326"))
        .collect();
    let b = parse_validated(Bytes::from(sample::ndjson(&v)), Format::Ndjson).unwrap();
    arrow_select::concat::concat_batches(&contract::schema(), &b).unwrap()
}

/// Replace the part of the only commit by `batch` encoded with `props`, and its pointer
/// by one whose size and sha256 match the new part.
async fn forge(mem: &Arc<MemoryPublisher>, batch: &RecordBatch, props: WriterProperties) {
    let ps = Writer::new(mem.clone())
        .append(&[rows("run-a", 1, 5)], |_| {})
        .await
        .unwrap();
    let p = &ps[0];
    let schema = contract::schema_for_commit(&p.commit_id);
    let mut w = ArrowWriter::try_new(Vec::new(), schema.clone(), Some(props)).unwrap();
    w.write(&RecordBatch::try_new(schema, batch.columns().to_vec()).unwrap())
        .unwrap();
    let bytes = w.into_inner().unwrap();
    let mut q = p.clone();
    q.size_bytes = bytes.len() as u64;
    q.sha256 = lineage_store::internal::encode::sha256_hex(&bytes);
    mem.tamper_put(&p.part_path, Bytes::from(bytes));
    let key = lineage_store::internal::keys::pointer_key(&p.run_id, &p.commit_id);
    mem.tamper_put(&key, Bytes::from(q.to_bytes().unwrap()));
}

fn footer_problems(r: &lineage_store::Report) -> Vec<String> {
    r.problems
        .iter()
        .filter(|p| p.kind == ProblemKind::FooterMismatch)
        .map(|p| p.detail.to_string())
        .collect()
}

#[tokio::test]
async fn rows_of_another_run_under_a_parts_path_are_named() {
    for dictionary in [true, false] {
        let mem = Arc::new(MemoryPublisher::new());
        // Same sequence and times as the real rows, two of them of another run.
        let mut forged = rows("run-a", 1, 3);
        forged = arrow_select::concat::concat_batches(
            &contract::schema(),
            &[forged, rows("run-z", 4, 2)],
        )
        .unwrap();
        let props = WriterProperties::builder()
            .set_dictionary_enabled(dictionary)
            .set_key_value_metadata(None)
            .build();
        forge(&mem, &forged, props).await;
        let r = verify(mem.as_ref()).await.unwrap();
        let msgs = footer_problems(&r);
        assert!(
            msgs.iter().any(|m| m
                .contains(r#"run_id values ["run-a", "run-z"] differ from the path's "run-a""#)),
            "dictionary {dictionary}: {:#?}",
            r.problems
        );
    }
}

#[tokio::test]
async fn a_sequence_range_the_pointer_does_not_record_is_named_with_or_without_statistics() {
    use parquet::file::properties::EnabledStatistics;
    for stats in [EnabledStatistics::Page, EnabledStatistics::None] {
        let mem = Arc::new(MemoryPublisher::new());
        let forged = arrow_select::concat::concat_batches(
            &contract::schema(),
            &[rows("run-a", 1, 4), rows("run-a", 9, 1)],
        )
        .unwrap();
        let props = WriterProperties::builder()
            .set_statistics_enabled(stats)
            .build();
        forge(&mem, &forged, props).await;
        let r = verify(mem.as_ref()).await.unwrap();
        let msgs = footer_problems(&r);
        assert!(
            msgs.iter()
                .any(|m| m.contains("sequence 1..9, pointer") && m.contains("records 1..5")),
            "{stats:?}: {:#?}",
            r.problems
        );
    }
}
