//! Row proofs: that one event (by `event_id`) is a row of a commit a seal covers, checkable
//! offline against the seal's head digest.
//!
//! What is recorded about a part is its size, sha256 and BLAKE3 in its pointer: nothing
//! finer (no digest per row group or page). To tie a row to what the seal covers offline,
//! the proof therefore carries the part that holds it, whole (one flush, not the archive),
//! with the commit's inclusion proof ([`Proof`]) and the row's index and values. The
//! verifier checks the inclusion proof, checks the carried part against the pointer's size
//! and digests, decodes it, and requires the row at the index to have the `event_id` and
//! exactly the values the proof shows. The row is read from the original part of its
//! commit, compacted or not (the originals stay): the commit and seal it names are the
//! ones the row was sealed with.

use std::sync::Arc;

use arrow_array::{Array, RecordBatch, StringArray};
use base64::Engine;
use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use serde::{Deserialize, Serialize};

use crate::audit::proof::format::{Proof, ProveAgainst, ROW_PROOF_FORMAT};
use crate::base::digest::{Check, Hasher, Want};
use crate::base::error::{Error, Result};
use crate::base::param::{text, Param};
use crate::format::pointer::Pointer;
use crate::history::seal::read_seals;
use crate::publish::AtomicPublisher;
use crate::read::prune::{self, Verdict};
use crate::read::scan::{default_concurrency, fetch_checked};
use crate::read::snapshot::{snapshot, ReadOptions, SnapshotPart};
use crate::schema::contract;

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;
/// The largest part a row proof carries (a part is one flush; the writer caps parts well
/// below this).
const MAX_PROOF_PART_BYTES: u64 = 512 * 1024 * 1024;

/// A row proof's row: which event, where in the part, its values, and the part.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RowEvidence {
    /// The event proven.
    pub event_id: String,
    /// Its row's position in the part (from 0).
    pub row_index: u64,
    /// Its values, column by column (JSON as `scan --out F.ndjson` writes a row, nulls
    /// included).
    pub values: serde_json::Value,
    /// The part's bytes (base64): what the pointer's size and digests are checked against.
    pub part_base64: String,
}

/// What a valid row proof establishes about its row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RowSummary {
    /// The event.
    pub event_id: String,
    /// Its row's position in the part.
    pub row_index: u64,
    /// Its values, as decoded from the checked part.
    pub values: serde_json::Value,
}

/// A row proof of the event `event_id`: found among the commits sealed up to the seal
/// `against` names (parts whose `event_id` bloom filter rules it out are not read; every
/// part read is checked against its sealed pointer), then its commit proven against that
/// seal. The first commit, in seal order, that holds it.
pub async fn prove_row(
    store: Arc<dyn AtomicPublisher>,
    event_id: &str,
    against: &ProveAgainst,
) -> Result<Proof> {
    if event_id.is_empty() {
        return Err(Error::invalid(Param::EventId, text!["is empty"]));
    }
    let as_of = seal_seq(store.as_ref(), against).await?;
    let snap = snapshot(
        store.as_ref(),
        &ReadOptions {
            as_of_seal: as_of,
            prefer_compacted: false,
            ..ReadOptions::default()
        },
    )
    .await?;
    let seq = snap.seal.as_ref().map_or(0, |s| s.seq);
    let found = find(store.clone(), snap.parts, event_id).await?;
    let Some((part, row_index, values, bytes)) = found else {
        return Err(Error::NotFound(format!(
            "event {event_id:?} in the {} commits sealed up to seal {seq}",
            snap.sealed_total
        )));
    };
    let mut proof = crate::audit::proof::prove(
        store.as_ref(),
        &part.pointer.commit_id,
        &ProveAgainst::Seq(seq),
    )
    .await?;
    proof.format = ROW_PROOF_FORMAT.to_string();
    proof.row = Some(RowEvidence {
        event_id: event_id.to_string(),
        row_index,
        values,
        part_base64: B64.encode(&bytes),
    });
    Ok(proof)
}

/// The seal number `against` names (`None`: the newest).
async fn seal_seq(store: &dyn AtomicPublisher, against: &ProveAgainst) -> Result<Option<u64>> {
    match against {
        ProveAgainst::Newest => Ok(None),
        ProveAgainst::Seq(n) => Ok(Some(*n)),
        ProveAgainst::Head(h) => {
            let want = h.trim().to_lowercase();
            read_seals(store)
                .await?
                .iter()
                .find(|s| s.digest == want)
                .map(|s| Some(s.key_seq))
                .ok_or_else(|| Error::NotFound(format!("a seal with digest {want}")))
        }
    }
}

type Found = (SnapshotPart, u64, serde_json::Value, Bytes);

/// The first part (in snapshot order) that holds `event_id`, its row index and values, and
/// its checked bytes.
async fn find(
    store: Arc<dyn AtomicPublisher>,
    parts: Vec<SnapshotPart>,
    event_id: &str,
) -> Result<Option<Found>> {
    let mut found = futures::stream::iter(parts)
        .map(|part| {
            let store = store.clone();
            async move { search_part(store.as_ref(), part, event_id).await }
        })
        .buffered(default_concurrency().max(4))
        .try_filter_map(|f| futures::future::ready(Ok(f)))
        .boxed();
    found.try_next().await
}

/// The row of `event_id` in `part`, if its bloom filter does not rule it out and it holds it.
async fn search_part(
    store: &dyn AtomicPublisher,
    part: SnapshotPart,
    event_id: &str,
) -> Result<Option<Found>> {
    if prune::verdict(store, &part.pointer, "event_id", event_id).await? == Verdict::Absent {
        return Ok(None);
    }
    let bytes = fetch_checked(store, &part, Check::Fastest).await?;
    let (b, p, e) = (bytes.clone(), part.pointer.clone(), event_id.to_string());
    let max_page = store.read_limits().max_page_bytes;
    let hit = crate::base::pool::run(move || locate(&p, b, &e, max_page)).await??;
    Ok(hit.map(|(i, v)| (part, i, v, bytes)))
}

/// The index and values of the row of `event_id` in the part `bytes` of pointer `p`.
fn locate(
    p: &Pointer,
    bytes: Bytes,
    event_id: &str,
    max_page: u64,
) -> Result<Option<(u64, serde_json::Value)>> {
    let schema = contract::version(&p.schema_version)?.schema();
    let batches = crate::read::scan::decode(&p.part_path, bytes, &schema, None, max_page)?;
    let mut offset = 0u64;
    for b in &batches {
        let ids = b
            .column_by_name("event_id")
            .and_then(|a| a.as_any().downcast_ref::<StringArray>())
            .ok_or_else(|| Error::internal("event_id is not a string column"))?;
        if let Some(i) = (0..ids.len()).find(|i| ids.is_valid(*i) && ids.value(*i) == event_id) {
            return Ok(Some((offset + i as u64, row_json(&b.slice(i, 1))?)));
        }
        offset += b.num_rows() as u64;
    }
    Ok(None)
}

/// One row as a JSON object, nulls included, timestamps as `scan`'s text formats write them.
fn row_json(one: &RecordBatch) -> Result<serde_json::Value> {
    let one = crate::read::out::utc_as_offset(one)?;
    let mut w = arrow_json::WriterBuilder::new()
        .with_explicit_nulls(true)
        .build::<_, arrow_json::writer::JsonArray>(Vec::new());
    w.write(&one)?;
    w.finish()?;
    let rows: Vec<serde_json::Value> =
        serde_json::from_slice(&w.into_inner()).map_err(Error::internal_from)?;
    rows.into_iter()
        .next()
        .ok_or_else(|| Error::internal("a one-row batch wrote no row"))
}

/// Check a row proof's row offline against its (already proven) pointer: the part it
/// carries has the pointer's size and digests, and its row at `row_index` has the
/// `event_id` and exactly the values shown. `Ok(Err(why))` when it does not hold.
pub(crate) fn check_row(
    row: &RowEvidence,
    pointer: &Pointer,
) -> Result<std::result::Result<RowSummary, String>> {
    let Ok(bytes) = B64.decode(row.part_base64.as_bytes()) else {
        return Ok(Err("the proof's part is not base64".into()));
    };
    if bytes.len() as u64 != pointer.size_bytes || pointer.size_bytes > MAX_PROOF_PART_BYTES {
        return Ok(Err(format!(
            "the proof's part has {} bytes; the commit records {}",
            bytes.len(),
            pointer.size_bytes
        )));
    }
    let got = Hasher::of(
        Want::for_check(Check::All, pointer.blake3.is_some()),
        &bytes,
    );
    let bad = got.mismatches(&pointer.sha256, pointer.blake3.as_deref(), "the commit");
    if !bad.is_empty() {
        return Ok(Err(format!("the proof's part: {}", bad.join("; "))));
    }
    let found = match locate_at(pointer, Bytes::from(bytes), row.row_index) {
        Ok(f) => f,
        Err(e) => return Ok(Err(format!("the proof's part: {e}"))),
    };
    let Some((id, values)) = found else {
        return Ok(Err(format!(
            "the part has {} rows; no row {}",
            pointer.row_count, row.row_index
        )));
    };
    if id.as_deref() != Some(row.event_id.as_str()) {
        return Ok(Err(format!(
            "row {} of the part is event {id:?}, not {:?}",
            row.row_index, row.event_id
        )));
    }
    if values != row.values {
        return Ok(Err(format!(
            "row {} of the part has values {values}, not the {} the proof shows",
            row.row_index, row.values
        )));
    }
    Ok(Ok(RowSummary {
        event_id: row.event_id.clone(),
        row_index: row.row_index,
        values,
    }))
}

/// The `event_id` and values of row `index` of the part `bytes`, if it has that row.
fn locate_at(
    p: &Pointer,
    bytes: Bytes,
    index: u64,
) -> Result<Option<(Option<String>, serde_json::Value)>> {
    let schema = contract::version(&p.schema_version)?.schema();
    let batches = crate::read::scan::decode(
        &p.part_path,
        bytes,
        &schema,
        None,
        crate::base::limits::DEFAULT_MAX_PAGE_BYTES,
    )?;
    let mut offset = 0u64;
    for b in &batches {
        let n = b.num_rows() as u64;
        if index < offset + n {
            let i = (index - offset) as usize;
            let id = b
                .column_by_name("event_id")
                .and_then(|a| a.as_any().downcast_ref::<StringArray>())
                .filter(|a| a.is_valid(i))
                .map(|a| a.value(i).to_string());
            return Ok(Some((id, row_json(&b.slice(i, 1))?)));
        }
        offset += n;
    }
    Ok(None)
}
