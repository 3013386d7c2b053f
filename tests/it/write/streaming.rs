//! Streaming appends: the same flushes (and bytes) as grouping the whole input first,
//! refusals in the middle of an input that publish nothing (every format), standard input
//! that fails half-way, spilling, and commit-key claims of both formats.

use std::collections::HashMap;
use std::io::Read;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{RecordBatch, UInt32Array};
use bytes::Bytes;
use lineage_store::contract::{self, col};
use lineage_store::internal::claim as commit_key;
use lineage_store::internal::claim::derived_commit_id;
use lineage_store::internal::claim::Claim;
use lineage_store::internal::claim::ClaimedCommit;
use lineage_store::internal::claim::CLAIM_FORMAT_V1;
use lineage_store::internal::input::parse_validated;
use lineage_store::internal::{encode, keys};
use lineage_store::Format;
use lineage_store::Input;
use lineage_store::MemoryPublisher;
use lineage_store::{AtomicPublisher, BatchSource, ErrorKind, Writer};

use crate::support::sample;

/// The flushes as main cut them before streaming: concatenate the whole input, group by
/// (run_id, target_crs) in order of first appearance, cut each group into chunks.
fn reference_flushes(
    batches: &[RecordBatch],
    batch_rows: usize,
) -> Vec<(String, String, u64, RecordBatch)> {
    let all = arrow_select::concat::concat_batches(&contract::schema(), batches).unwrap();
    let run = all.column(col::RUN_ID).as_string::<i32>();
    let crs = all.column(col::TARGET_CRS).as_string::<i32>();
    let mut order: Vec<(String, String)> = Vec::new();
    let mut rows: HashMap<(String, String), Vec<u32>> = HashMap::new();
    for i in 0..all.num_rows() {
        let k = (run.value(i).to_string(), crs.value(i).to_string());
        if !rows.contains_key(&k) {
            order.push(k.clone());
        }
        rows.entry(k).or_default().push(i as u32);
    }
    let mut out = Vec::new();
    for k in order {
        let idx = rows.remove(&k).unwrap();
        let n = idx.len();
        let g = arrow_select::take::take_record_batch(&all, &UInt32Array::from(idx)).unwrap();
        for (i, s) in (0..n).step_by(batch_rows).enumerate() {
            out.push((
                k.0.clone(),
                k.1.clone(),
                i as u64,
                g.slice(s, batch_rows.min(n - s)),
            ));
        }
    }
    out
}

/// 3,000 events over 2 runs × 2 CRSs, read in several batches.
fn input(n: i64) -> Vec<RecordBatch> {
    let v = parse_validated(
        Bytes::from(sample::ndjson(&sample::events(n))),
        Format::Ndjson,
    )
    .unwrap();
    // Re-cut into uneven batches so partitions straddle batch boundaries.
    let all = arrow_select::concat::concat_batches(&contract::schema(), &v).unwrap();
    let mut out = Vec::new();
    let mut s = 0;
    for len in [7usize, 500, 1, 1200].iter().cycle() {
        if s >= all.num_rows() {
            break;
        }
        let len = (*len).min(all.num_rows() - s);
        out.push(all.slice(s, len));
        s += len;
    }
    out
}

async fn keyed_append(
    mem: Arc<MemoryPublisher>,
    batches: &[RecordBatch],
    batch_rows: usize,
    budget: usize,
) -> Vec<lineage_store::Pointer> {
    Writer::new(mem)
        .with_batch_rows(batch_rows)
        .with_max_buffered_bytes(budget)
        .with_commit_key(Some("job-1".into()))
        .append(batches, |_| {})
        .await
        .unwrap()
}

#[tokio::test]
async fn streamed_flushes_are_the_whole_input_flushes_byte_for_byte() {
    let batches = input(3000);
    for (batch_rows, budget) in [(100, usize::MAX), (100, 0), (7, 10_000), (5000, usize::MAX)] {
        let mem = Arc::new(MemoryPublisher::new());
        let got = keyed_append(mem.clone(), &batches, batch_rows, budget).await;
        let want = reference_flushes(&batches, batch_rows);
        assert_eq!(got.len(), want.len(), "batch_rows {batch_rows}");
        // Parts name the store they were written to.
        let store_id = lineage_store::read_identity(mem.as_ref())
            .await
            .unwrap()
            .unwrap()
            .store_id;
        let by_id: HashMap<String, _> = got.iter().map(|p| (p.commit_id.clone(), p)).collect();
        for (run, crs, i, b) in want {
            let id = derived_commit_id(&run, &crs, "job-1", i).to_string();
            let enc = encode::encode_for_store(&b, &id, encode::PartEncoding::V4, Some(&store_id))
                .unwrap();
            let p = by_id
                .get(&id)
                .unwrap_or_else(|| panic!("no commit {id} ({run} {crs} #{i})"));
            assert_eq!(
                (p.sha256.as_str(), p.row_count),
                (enc.sha256.as_str(), enc.rows),
                "{run} {crs} #{i}, budget {budget}"
            );
        }
    }
}

fn write_inputs(
    dir: &std::path::Path,
    rows: &[serde_json::Value],
) -> Vec<(std::path::PathBuf, &'static str)> {
    let nd = dir.join("in.ndjson");
    std::fs::write(&nd, sample::ndjson(rows)).unwrap();
    // CSV with the contract's columns.
    let mut w = csv::Writer::from_path(dir.join("in.csv")).unwrap();
    let names: Vec<&str> = contract::COLUMNS.iter().map(|c| c.name).collect();
    w.write_record(&names).unwrap();
    for r in rows {
        let cells: Vec<String> = names
            .iter()
            .map(|n| match &r[*n] {
                serde_json::Value::Null => String::new(),
                serde_json::Value::String(s) => s.clone(),
                v => v.to_string(),
            })
            .collect();
        w.write_record(&cells).unwrap();
    }
    w.flush().unwrap();
    vec![(nd, "line"), (dir.join("in.csv"), "line")]
}

#[tokio::test]
async fn a_refusal_in_the_middle_of_any_format_publishes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut rows = sample::events(600);
    rows[449]["target_crs"] = serde_json::json!("EPSG:99999");
    let mut files = write_inputs(dir.path(), &rows);
    // Arrow and Parquet: the bad CRS text survives parsing (validation refuses it), so
    // build them from unvalidated batches.
    let raw =
        lineage_store::internal::input::parse(Bytes::from(sample::ndjson(&rows)), Format::Ndjson)
            .unwrap();
    let raw: Vec<RecordBatch> = raw.into_iter().map(|s| s.batch).collect();
    let arrow = dir.path().join("in.arrow");
    {
        let f = std::fs::File::create(&arrow).unwrap();
        let mut w = arrow_ipc::writer::FileWriter::try_new(f, &contract::schema()).unwrap();
        for b in &raw {
            for s in (0..b.num_rows()).step_by(100) {
                w.write(&b.slice(s, 100.min(b.num_rows() - s))).unwrap();
            }
        }
        w.finish().unwrap();
    }
    let pq = dir.path().join("in.parquet");
    {
        let f = std::fs::File::create(&pq).unwrap();
        let props = parquet::file::properties::WriterProperties::builder()
            .set_max_row_group_row_count(Some(100))
            .build();
        let mut w =
            parquet::arrow::ArrowWriter::try_new(f, contract::schema(), Some(props)).unwrap();
        for b in &raw {
            w.write(b).unwrap();
        }
        w.close().unwrap();
    }
    files.push((arrow, "row"));
    files.push((pq, "row"));
    for (path, unit) in files {
        let mem = Arc::new(MemoryPublisher::new());
        let w = Writer::new(mem.clone()).with_batch_rows(10);
        let src = Arc::new(Input::open(Some(&path), None).unwrap());
        let mut seen = 0;
        let e = w.append_source(src, true, |_| seen += 1).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Input, "{path:?}: {e}");
        // CSV line 451 = header + 450th event; NDJSON line 450; binary row 450.
        let at = match (unit, path.extension().unwrap().to_str().unwrap()) {
            (_, "csv") => "line 451",
            ("line", _) => "line 450",
            _ => "row 450",
        };
        assert!(
            e.to_string()
                .starts_with(&format!("{at}, field `target_crs`")),
            "{path:?}: {e}"
        );
        assert_eq!(seen, 0);
        assert!(
            mem.list("").await.unwrap().is_empty(),
            "{path:?} published something"
        );
    }
}

/// A reader that fails after `ok` bytes.
struct Failing {
    data: Vec<u8>,
    pos: usize,
    ok: usize,
}

impl Read for Failing {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.pos >= self.ok {
            return Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "pipe broke",
            ));
        }
        let n = buf
            .len()
            .min(self.ok - self.pos)
            .min(self.data.len() - self.pos);
        buf[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

#[test]
fn a_read_error_in_the_middle_of_standard_input_refuses_it_whole() {
    let data = sample::ndjson(&sample::events(200)).into_bytes();
    let e = Input::spool(
        Failing {
            ok: data.len() / 2,
            data,
            pos: 0,
        },
        Format::Ndjson,
    )
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io);
    let msg = e.to_string();
    assert!(
        msg.contains("<stdin>") && msg.contains("after ") && msg.contains("nothing was published"),
        "{msg}"
    );
    // The whole input spools and reads back as it was.
    let data = sample::ndjson(&sample::events(200)).into_bytes();
    let len = data.len();
    let inp = Input::spool(
        Failing {
            ok: usize::MAX,
            data,
            pos: 0,
        },
        Format::Ndjson,
    )
    .unwrap();
    assert_eq!(inp.len(), len as u64);
    let mut rows = 0;
    lineage_store::BatchSource::read_all(&inp, &mut |b| {
        rows += b.batch.num_rows();
        Ok(())
    })
    .unwrap();
    assert_eq!(rows, 200);
}

#[test]
fn a_file_changed_between_the_passes_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("e.ndjson");
    std::fs::write(&p, sample::ndjson(&sample::events(5))).unwrap();
    let inp = Input::open(Some(&p), None).unwrap();
    inp.check_unchanged().unwrap();
    std::fs::write(&p, sample::ndjson(&sample::events(6))).unwrap();
    let e = inp.check_unchanged().unwrap_err();
    assert!(
        e.to_string()
            .contains("changed while it was being appended"),
        "{e}"
    );
}

#[test]
fn ndjson_line_numbers_carry_across_read_blocks() {
    // Over 8 MiB of NDJSON, so the reader cuts it into blocks; the bad line is near the end.
    let mut rows = sample::events(30_000);
    rows[29_990]["sequence"] = serde_json::json!("x");
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("big.ndjson");
    let text = sample::ndjson(&rows);
    assert!(text.len() > 8 << 20);
    std::fs::write(&p, text).unwrap();
    let inp = Input::open(Some(&p), None).unwrap();
    // The reader carries the refused line to the validator (it does not stop there).
    let mut carried = Vec::new();
    inp.read_all(&mut |b| {
        carried.extend(b.read_errors.errors.iter().map(|(_, e)| e.to_string()));
        Ok(())
    })
    .unwrap();
    assert_eq!(
        carried,
        ["line 29991, field `sequence`: invalid type: string \"x\", expected i64"]
    );
    let e = lineage_store::check(&inp, &lineage_store::CheckOptions::default()).unwrap_err();
    assert!(
        e.to_string().starts_with("line 29991, field `sequence`"),
        "{e}"
    );
}

/// Main before streaming: every flush encoded (with the settings of then) and listed in a
/// format-1 claim.
async fn format1_claim(
    mem: &MemoryPublisher,
    key: &str,
    batches: &[RecordBatch],
    batch_rows: usize,
) -> String {
    let commits: Vec<ClaimedCommit> = reference_flushes(batches, batch_rows)
        .into_iter()
        .map(|(run, crs, i, b)| {
            let id = derived_commit_id(&run, &crs, key, i).to_string();
            let e = encode::encode_with(&b, &id, encode::PartEncoding::V1).unwrap();
            ClaimedCommit {
                run_id: run,
                target_crs: crs,
                commit_id: id,
                sha256: e.sha256,
                rows: e.rows,
            }
        })
        .collect();
    let claim = Claim {
        format: CLAIM_FORMAT_V1.into(),
        commit_key: key.into(),
        payload_sha256: commit_key::payload_sha256(&commits),
        flushes: None,
        rows: None,
        part_encoding: None,
        commits,
        claimed_utc: "2026-07-13T06:00:00.000000Z".into(),
    };
    let bytes = serde_json::to_vec_pretty(&claim).unwrap();
    mem.put_create(&keys::commit_key_claim_key(key), Bytes::from(bytes))
        .await
        .unwrap();
    claim.payload_sha256
}

#[tokio::test]
async fn a_job_claimed_by_the_old_format_is_retried_to_the_same_commits() {
    let mem = Arc::new(MemoryPublisher::new());
    let batches = input(700);
    format1_claim(&mem, "job-1", &batches, 100).await;
    let got = keyed_append(mem.clone(), &batches, 100, usize::MAX).await;
    assert_eq!(got.len(), reference_flushes(&batches, 100).len());
    // The old claim is left as it was; a second retry is a no-op of read-backs.
    let again = keyed_append(mem.clone(), &batches, 100, usize::MAX).await;
    let ids = |v: &[lineage_store::Pointer]| {
        let mut v: Vec<_> = v
            .iter()
            .map(|p| (p.commit_id.clone(), p.sha256.clone()))
            .collect();
        v.sort();
        v
    };
    assert_eq!(ids(&got), ids(&again));
    let claim: Claim = serde_json::from_slice(
        &mem.get(&keys::commit_key_claim_key("job-1"))
            .await
            .unwrap()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(claim.format, CLAIM_FORMAT_V1);
    // The retry published the parts the old claim lists (the old encoder's bytes).
    let mut listed: Vec<_> = claim
        .commits
        .iter()
        .map(|c| (c.commit_id.clone(), c.sha256.clone()))
        .collect();
    listed.sort();
    assert_eq!(ids(&got), listed);
}

#[tokio::test]
async fn another_payload_under_an_old_format_claim_publishes_nothing() {
    let mem = Arc::new(MemoryPublisher::new());
    let old = format1_claim(&mem, "job-1", &input(700), 100).await;
    let before = mem.list("").await.unwrap();
    let e = Writer::new(mem.clone())
        .with_batch_rows(100)
        .with_commit_key(Some("job-1".into()))
        .append(&input(701), |_| {})
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
    assert!(
        e.to_string()
            .contains(&format!("existing payload sha256 {old}")),
        "{e}"
    );
    // Nothing at all: the claim refused as a conflict comes before the store's identity
    // (which a store written before identities gets with its next part).
    let after: Vec<String> = mem
        .list("")
        .await
        .unwrap()
        .into_iter()
        .map(|o| o.key)
        .collect();
    let want: Vec<String> = before.into_iter().map(|o| o.key).collect();
    assert_eq!(after, want);
}

#[tokio::test]
async fn claims_are_small_and_bound_to_batch_rows() {
    let mem = Arc::new(MemoryPublisher::new());
    let batches = input(3000);
    keyed_append(mem.clone(), &batches, 10, usize::MAX).await;
    let raw = mem
        .get(&keys::commit_key_claim_key("job-1"))
        .await
        .unwrap()
        .unwrap();
    assert!(
        raw.len() < 1024,
        "a format-2 claim does not list its {} commits",
        300
    );
    let claim: Claim = serde_json::from_slice(&raw).unwrap();
    assert_eq!(
        (claim.format.as_str(), claim.rows, claim.commits.len()),
        (commit_key::CLAIM_FORMAT, Some(3000), 0)
    );
    assert_eq!(
        claim.flushes,
        Some(reference_flushes(&batches, 10).len() as u64)
    );
    // The same rows cut differently are another payload.
    let e = Writer::new(mem.clone())
        .with_batch_rows(11)
        .with_commit_key(Some("job-1".into()))
        .append(&batches, |_| {})
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
}

#[tokio::test]
async fn a_file_read_twice_or_kept_from_the_first_pass_commits_the_same_parts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("in.csv");
    write_inputs(dir.path(), &sample::events(900));
    let mut seen = Vec::new();
    // Budget 0: nothing kept (the file is read again) and every buffered row spills.
    // Both stores have one identity: parts name their store.
    let id = lineage_store::StoreIdentity::new("2026-12-01T00:00:00.000000Z".into());
    for budget in [usize::MAX, 0] {
        let mem = Arc::new(MemoryPublisher::new());
        mem.tamper_put(
            "_lineage/store.json",
            bytes::Bytes::from(id.to_bytes().unwrap()),
        );
        let w = Writer::new(mem.clone())
            .with_batch_rows(50)
            .with_max_buffered_bytes(budget)
            .with_commit_key(Some("k".into()));
        let src = Arc::new(Input::open(Some(&path), None).unwrap());
        let got = w.append_source(src, true, |_| {}).await.unwrap();
        let mut v: Vec<_> = got
            .pointers
            .iter()
            .map(|p| (p.commit_id.clone(), p.sha256.clone(), p.row_count))
            .collect();
        v.sort();
        assert_eq!(got.rows, 900);
        seen.push(v);
    }
    assert_eq!(seen[0], seen[1]);
}
