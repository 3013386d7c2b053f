//! Inclusion proofs: that one commit's pointer is a leaf of a seal's Merkle tree, checkable
//! offline against a head digest, without access to the store.
//!
//! A proof carries the pointer's exact bytes, the seal's exact bytes and the RFC 9162 audit
//! path. The verifier hashes the seal (it must be the head digest it holds), hashes the
//! pointer into a leaf, and recomputes the seal's root from the path. The pointer then
//! vouches for the part through its sha256, which the verifier can check against a copy of
//! the part file. A row proof ([`row`]) adds one row of the commit, and the part to check
//! it in.
//! [`c2sp`] writes the same proof in the open `c2sp.org/tlog-proof@v1`
//! format (compact: the seal's checkpoint instead of the seal).

pub(crate) mod c2sp;
pub(crate) mod consistency;
pub(crate) mod format;
pub(crate) mod row;
pub(crate) mod row_check;
pub(crate) mod tiles;
mod walk;

pub use format::{verify_proof, Proof, ProofSummary, ProveAgainst};
pub use row_check::{RowEvidence, RowSummary};

use crate::base::error::{Error, Result};
use crate::format::keys;
use crate::publish::AtomicPublisher;

/// Build an inclusion proof of `commit_id`: from its locator and O(log n) hash tiles when
/// the store has them ([`crate::audit::proof::tiles`]), else by walking the whole chain.
pub async fn prove(
    store: &dyn AtomicPublisher,
    commit_id: &str,
    against: &ProveAgainst,
) -> Result<Proof> {
    if !keys::is_commit_id(commit_id) {
        return Err(Error::usage(format!(
            "{commit_id:?} is not a commit id (a lower-case hyphenated UUID)"
        )));
    }
    crate::publish::require_objects(store).await?;
    if let Some(p) = crate::audit::proof::tiles::prove_from_tiles(store, commit_id, against).await?
    {
        return Ok(p);
    }
    // A store (or commit) without locators and tiles: walk the whole chain.
    walk::prove_by_walking(store, commit_id, against).await
}

/// A row proof of the event `event_id` ([`row`]): the event found among the commits sealed
/// up to the seal `against` names, in the original part of its commit (parts whose
/// `event_id` bloom filter rules it out are not read; every part read is checked against
/// its sealed pointer), then that commit proven against that seal. The first commit, in
/// seal order, that holds it.
pub async fn prove_row(
    store: std::sync::Arc<dyn AtomicPublisher>,
    event_id: &str,
    against: &ProveAgainst,
) -> Result<Proof> {
    let (seq, found) = row::find_row(store.clone(), event_id, against).await?;
    let proof = prove(
        store.as_ref(),
        &found.0.pointer.commit_id,
        &ProveAgainst::Seq(seq),
    )
    .await?;
    Ok(row::attach(proof, event_id, found))
}
