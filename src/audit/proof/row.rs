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

use arrow_array::{Array, StringArray};
use base64::Engine;
use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};

use crate::audit::proof::format::{Proof, ProveAgainst, ROW_PROOF_FORMAT};
use crate::audit::proof::row_check::{row_json, RowEvidence, B64};
use crate::base::digest::Check;
use crate::base::error::{Error, Result};
use crate::base::param::{text, Param};
use crate::format::pointer::Pointer;
use crate::history::seal::read_seals;
use crate::publish::AtomicPublisher;
use crate::read::prune::{self, Verdict};
use crate::read::scan::{default_concurrency, fetch_checked};
use crate::read::snapshot::{snapshot, ReadOptions, SnapshotPart};
use crate::schema::contract;

/// The event `event_id` found among the commits sealed up to the seal `against` names
/// (parts whose `event_id` bloom filter rules it out are not read; every part read is
/// checked against its sealed pointer): that seal's number, and the first commit, in seal
/// order, that holds it, with the row.
pub(crate) async fn find_row(
    store: Arc<dyn AtomicPublisher>,
    event_id: &str,
    against: &ProveAgainst,
) -> Result<(u64, Found)> {
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
    match find(store.clone(), snap.parts, event_id).await? {
        Some(found) => Ok((seq, found)),
        None => Err(Error::NotFound(format!(
            "event {event_id:?} in the {} commits sealed up to seal {seq}",
            snap.sealed_total
        ))),
    }
}

/// The commit proof `proof` of the commit that holds `found`, made a row proof.
pub(crate) fn attach(mut proof: Proof, event_id: &str, found: Found) -> Proof {
    let (_, row_index, values, bytes) = found;
    proof.format = ROW_PROOF_FORMAT.to_string();
    proof.row = Some(RowEvidence {
        event_id: event_id.to_string(),
        row_index,
        values,
        part_base64: B64.encode(&bytes),
    });
    proof
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

/// The part that holds a row, the row's index and values, and the part's checked bytes.
pub(crate) type Found = (SnapshotPart, u64, serde_json::Value, Bytes);

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
    let limits = store.read_limits();
    let hit = crate::base::pool::run(move || locate(&p, b, &e, limits)).await??;
    Ok(hit.map(|(i, v)| (part, i, v, bytes)))
}

/// The index and values of the row of `event_id` in the part `bytes` of pointer `p`.
fn locate(
    p: &Pointer,
    bytes: Bytes,
    event_id: &str,
    limits: crate::base::limits::ReadLimits,
) -> Result<Option<(u64, serde_json::Value)>> {
    let schema = contract::version(&p.schema_version)?.schema();
    let (batches, _rows) = crate::read::scan::decode(&p.part_path, bytes, &schema, None, limits)?;
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
