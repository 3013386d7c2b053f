//! Making one compaction: its chunk's rows read through the trusted scan, sorted,
//! encoded and published, then its record (step 3 of [`super`]).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int64Type, TimestampMicrosecondType};
use arrow_array::{RecordBatch, UInt32Array};
use bytes::Bytes;
use futures::TryStreamExt;

use crate::base::clock::{Clock, IdGen};
use crate::base::digest::Check;
use crate::base::error::{Error, Result};
use crate::base::time::{rfc3339, rfc3339_us};
use crate::format::compaction::{CompactionRecord, CompactionSource, COMPACTION_FORMAT};
use crate::format::keys;
use crate::format::pointer::tool_version;
use crate::parts::encode::{encode_compacted, EncodedPart};
use crate::parts::multiset::RowMultiset;
use crate::publish::checked::publish_checked;
use crate::publish::AtomicPublisher;
use crate::read::scan::{scan, ScanOptions};
use crate::read::snapshot::types::SnapshotPart;
use crate::read::snapshot::Snapshot;
use crate::schema::contract::col;

/// Read, sort, encode and publish one chunk, then its record; returns the record and its
/// bytes.
pub(super) async fn compact_chunk(
    store: Arc<dyn AtomicPublisher>,
    clock: &dyn Clock,
    ids: &dyn IdGen,
    snap: &Snapshot,
    chunk: Vec<SnapshotPart>,
    store_id: Option<&str>,
) -> Result<(CompactionRecord, Vec<u8>)> {
    let (id, rows, enc) = read_and_encode(store.clone(), ids, snap, &chunk, store_id).await?;
    let first = &chunk[0].pointer;
    let part_path = keys::compacted_part_key(&first.run_id, &first.target_crs, &id);
    let want = enc.bytes.clone();
    publish_checked(store.as_ref(), &part_path, enc.bytes.clone(), move |have| {
        if have == want.as_ref() {
            Ok(())
        } else {
            Err("holds other bytes than this compaction's part".into())
        }
    })
    .await?;
    let record = CompactionRecord {
        format: COMPACTION_FORMAT.to_string(),
        compaction_id: id.clone(),
        run_id: first.run_id.clone(),
        target_crs: first.target_crs.clone(),
        schema_version: enc.schema_version.clone(),
        part_path,
        size_bytes: enc.bytes.len() as u64,
        sha256: enc.sha256.clone(),
        blake3: enc.blake3.clone(),
        row_count: enc.rows,
        rows_digest: rows.hex(),
        first_sequence: enc.sequence.0,
        last_sequence: enc.sequence.1,
        min_event_time_utc: rfc3339_us(enc.event_time_us.0),
        max_event_time_utc: rfc3339_us(enc.event_time_us.1),
        planned_at_seal: snap.seal.as_ref().map_or(0, |s| s.seq),
        compacted_utc: rfc3339(clock.now()),
        tool_version: tool_version(),
        sources: chunk.iter().map(source_of).collect(),
        tail_offset: Some(enc.tail.0),
        tail_sha256: Some(enc.tail.1.clone()),
    };
    if rows.rows != record.row_count {
        return Err(Error::internal(format!(
            "compaction {id}: read {} rows, encoded {}",
            rows.rows, record.row_count
        )));
    }
    let bytes = record.to_bytes()?;
    publish_record(store.as_ref(), &id, &bytes).await?;
    tracing::info!(compaction = %id, rows = record.row_count, sources = record.sources.len(), "compacted");
    Ok((record, bytes))
}

/// The chunk's rows read through the trusted scan (each part checked against its sealed
/// pointer): a new compaction id, the rows' multiset digest, and the part they encode to,
/// sorted.
async fn read_and_encode(
    store: Arc<dyn AtomicPublisher>,
    ids: &dyn IdGen,
    snap: &Snapshot,
    chunk: &[SnapshotPart],
    store_id: Option<&str>,
) -> Result<(String, RowMultiset, EncodedPart)> {
    let sub = Snapshot {
        seal: snap.seal.clone(),
        parts: chunk.to_vec(),
        sealed_total: snap.sealed_total,
        since: None,
    };
    let scanned = scan(
        store,
        &sub,
        &ScanOptions {
            digest: Check::Fastest,
            ..ScanOptions::default()
        },
    )?;
    let schema = scanned.schema();
    let batches: Vec<RecordBatch> = scanned.into_stream().try_collect().await?;
    let mut rows = RowMultiset::default();
    for b in &batches {
        rows.add_batch(b)?;
    }
    let id = ids.commit_id().to_string();
    let cid = id.clone();
    let sid = store_id.map(str::to_string);
    let enc = crate::base::pool::run(move || -> Result<_> {
        let all = arrow_select::concat::concat_batches(&schema, &batches)?;
        let sorted = sort_rows(&all)?;
        encode_compacted(&sorted, &cid, sid.as_deref())
    })
    .await??;
    Ok((id, rows, enc))
}

/// What a compaction record says of one source commit.
fn source_of(p: &SnapshotPart) -> CompactionSource {
    CompactionSource {
        commit_id: p.pointer.commit_id.clone(),
        pointer_key: p.pointer_key.clone(),
        pointer_sha256: p.pointer_sha256.clone(),
        sealed_by: p.sealed_by.as_ref().map_or(0, |s| s.seq),
        part_path: p.pointer.part_path.clone(),
        size_bytes: p.pointer.size_bytes,
        sha256: p.pointer.sha256.clone(),
        row_count: p.pointer.row_count,
    }
}

/// Publish the record `bytes` of compaction `id`, create-only.
async fn publish_record(store: &dyn AtomicPublisher, id: &str, bytes: &[u8]) -> Result<()> {
    let key = keys::compaction_record_key(id);
    let want = bytes.to_vec();
    publish_checked(store, &key, Bytes::from(bytes.to_vec()), move |have| {
        if have == want.as_slice() {
            Ok(())
        } else {
            Err("holds another compaction record".into())
        }
    })
    .await?;
    Ok(())
}

/// The rows of `batch` ordered by (`event_time_utc`, `sequence`, `event_id`).
fn sort_rows(batch: &RecordBatch) -> Result<RecordBatch> {
    let t = batch
        .column(col::EVENT_TIME_UTC)
        .as_primitive::<TimestampMicrosecondType>();
    let s = batch.column(col::SEQUENCE).as_primitive::<Int64Type>();
    let e = batch.column(col::EVENT_ID).as_string::<i32>();
    let mut idx: Vec<u32> = (0..batch.num_rows() as u32).collect();
    idx.sort_by(|&a, &b| {
        let (a, b) = (a as usize, b as usize);
        (t.value(a), s.value(a), e.value(a)).cmp(&(t.value(b), s.value(b), e.value(b)))
    });
    Ok(arrow_select::take::take_record_batch(
        batch,
        &UInt32Array::from(idx),
    )?)
}
