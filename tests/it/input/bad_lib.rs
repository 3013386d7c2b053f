//! The bad-input matrix through the library (issue 7, item 6): every case of
//! `tests/it/support/bad_input.rs` through `input::parse_validated` and, when accepted, the
//! writer; plus the library-only decisions (store roots, empty appends, schema matching).

use std::sync::Arc;

use arrow_array::RecordBatch;
use lineage_store::internal::store;
use lineage_store::Format;
use lineage_store::MemoryPublisher;
use lineage_store::{AtomicPublisher, ErrorKind, Writer};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use crate::support::bad_input::{
    self, assert_all_passed, by_sequence, lacks_in_order, validated, Expect,
};

/// Append to a fresh memory store and read every part back, rows by sequence.
async fn stored(b: &RecordBatch) -> RecordBatch {
    let mem = Arc::new(MemoryPublisher::new());
    Writer::new(mem.clone())
        .append(std::slice::from_ref(b), |_| {})
        .await
        .unwrap();
    let mut parts = Vec::new();
    for o in mem.list("run_id=").await.unwrap() {
        let bytes = mem.get(&o.key).await.unwrap().unwrap();
        for r in ParquetRecordBatchReaderBuilder::try_new(bytes)
            .unwrap()
            .build()
            .unwrap()
        {
            parts.push(r.unwrap());
        }
    }
    let parts: Vec<RecordBatch> = parts.iter().map(by_sequence).collect();
    by_sequence(
        &arrow_select::concat::concat_batches(&lineage_store::contract::schema(), &parts).unwrap(),
    )
}

#[tokio::test]
async fn every_case_of_the_matrix_through_the_library() {
    let cases = bad_input::cases();
    let mut failures = Vec::new();
    for c in &cases {
        let got = validated(&c.input, c.format);
        let verdict = match (&c.expect, got) {
            (Expect::Refused(wants), Err(e)) => {
                let msg = e.to_string();
                if e.kind() != ErrorKind::Input {
                    Err(format!("kind {:?}: {msg}", e.kind()))
                } else if let Some(w) = lacks_in_order(&msg, wants) {
                    Err(format!("message lacks {w:?} (in order): {msg}"))
                } else if msg.lines().any(|l| l.len() > 1024) || msg.lines().count() > 22 {
                    Err(format!(
                        "message of {} lines, {} bytes",
                        msg.lines().count(),
                        msg.len()
                    ))
                } else if e
                    .rejection()
                    .is_none_or(|r| r.errors.is_empty() || r.total < r.errors.len() as u64)
                    && !matches!(e, lineage_store::Error::Usage(_))
                {
                    Err(format!("not a rejection listing its errors: {e:?}"))
                } else {
                    Ok(())
                }
            }
            (Expect::Refused(_), Ok(b)) => Err(format!("accepted {} rows", b.num_rows())),
            (_, Err(e)) => Err(format!("refused: {e}")),
            (Expect::Empty, Ok(b)) if b.num_rows() == 0 => {
                let mem = Arc::new(MemoryPublisher::new());
                let p = Writer::new(mem.clone()).append(&[b], |_| {}).await.unwrap();
                if p.is_empty() && mem.list("").await.unwrap().is_empty() {
                    Ok(())
                } else {
                    Err("an empty append wrote something".into())
                }
            }
            (Expect::Empty, Ok(b)) => Err(format!("{} rows, expected none", b.num_rows())),
            (Expect::Accepted(n), Ok(b)) => {
                let s = stored(&b).await;
                if s.num_rows() == *n && s == by_sequence(&b) {
                    Ok(())
                } else {
                    Err(format!("stored {} rows, expected {n}", s.num_rows()))
                }
            }
            (Expect::SameAs(reference, rf), Ok(b)) => {
                let want = by_sequence(&validated(reference, *rf).unwrap());
                if by_sequence(&b) != want {
                    Err("validated rows differ from the reference's".into())
                } else if stored(&b).await != want {
                    Err("stored rows differ from the reference's".into())
                } else {
                    Ok(())
                }
            }
        };
        if let Err(why) = verdict {
            failures.push(format!("{} ({:?}): {why}", c.name, c.format));
        }
    }
    assert_all_passed(&failures, cases.len());
}

#[tokio::test]
async fn a_store_root_that_is_a_file_or_another_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("notes.txt");
    std::fs::write(&file, b"not a store").unwrap();
    let e = store::open(file.to_str().unwrap(), &Default::default())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Input);
    assert!(e.to_string().contains("is a file, not a directory"), "{e}");
    let e = store::open(&format!("file://{}", file.display()), &Default::default())
        .await
        .unwrap_err();
    assert!(e.to_string().contains("is a file"), "{e}");

    // The temp dir now holds notes.txt: not a store.
    let e = store::open(dir.path().to_str().unwrap(), &Default::default())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Input);
    assert!(
        e.to_string().contains("not a lineage store") && e.to_string().contains("\"notes.txt\""),
        "{e}"
    );
    // New, empty, hidden files and lost+found only, or a store (even with junk): fine.
    for ok in ["new/deeper", "empty", "hidden", "store"] {
        let p = dir.path().join(ok);
        match ok {
            "empty" => std::fs::create_dir(&p).unwrap(),
            "hidden" => {
                std::fs::create_dir_all(p.join("lost+found")).unwrap();
                std::fs::write(p.join(".DS_Store"), b"").unwrap();
            }
            "store" => {
                std::fs::create_dir_all(p.join("run_id=r")).unwrap();
                std::fs::write(p.join("README"), b"junk verify will name").unwrap();
            }
            _ => {}
        }
        store::open(p.to_str().unwrap(), &Default::default())
            .await
            .unwrap();
    }
}

#[test]
fn run_ids_that_schedulers_make_are_accepted() {
    for ok in [
        "run-2026-07-13-025cc1",
        "scheduled__2026-07-13T06:00:00+00:00",
        "0190a000-0000-7000-8000-00000000beef",
        "nightly.42",
        "job@host~1",
        "a..b".replace("..", ".").as_str(),
    ] {
        assert_eq!(
            lineage_store::internal::keys::run_id_problem(ok),
            None,
            "{ok}"
        );
    }
}

#[test]
fn crs_spaces_around_are_still_ignored() {
    assert_eq!(
        lineage_store::crs::canonicalize("  epsg:4326 ").unwrap(),
        "EPSG:4326"
    );
}

#[test]
fn empty_input_is_recognised_per_format() {
    use lineage_store::internal::conform::is_empty_input;
    assert!(is_empty_input(b"", Format::Ndjson));
    assert!(is_empty_input(b"\xef\xbb\xbf \r\n", Format::Csv));
    assert!(!is_empty_input(b"x", Format::Ndjson));
    assert!(is_empty_input(b"", Format::Parquet));
    assert!(!is_empty_input(b" ", Format::Arrow)); // not a readable file: refused
}

#[tokio::test]
async fn runs_stored_before_the_ascii_only_rule_still_verify_and_list() {
    // A run id an older lineage-store accepted (it was a safe path segment then too).
    let old = "lauf-größe";
    assert!(
        lineage_store::internal::keys::run_id_problem(old).is_some(),
        "refused for new input"
    );
    let b = bad_input::contract_batch(3);
    let runs: arrow_array::StringArray = std::iter::repeat_n(Some(old), 3).collect();
    let b = bad_input::with(&b, "run_id", Arc::new(runs));
    let b = RecordBatch::try_new(lineage_store::contract::schema(), b.columns().to_vec()).unwrap();
    let mem = Arc::new(MemoryPublisher::new());
    Writer::new(mem.clone()).append(&[b], |_| {}).await.unwrap();
    let r = lineage_store::verify(mem.as_ref()).await.unwrap();
    assert!(r.is_clean(), "{:#?}", r.problems);
    assert_eq!((r.commits, r.rows), (1, 3));
    let logged = lineage_store::read_pointers(mem.as_ref(), Some(old))
        .await
        .unwrap();
    assert_eq!(logged.len(), 1);
}
