//! Consistency proofs (RFC 9162 §2.1.4) between two signed seals, as their C2SP
//! checkpoints ([`crate::format::consistency`]): made from the hash tiles of the newer
//! tree, checked offline against the seal key.

use base64::Engine;
use ed25519_dalek::VerifyingKey;
use serde::Serialize;

use crate::audit::proof::format::ProveAgainst;
use crate::audit::proof::tiles::target;
use crate::base::error::{Error, Result};
use crate::base::param::{text, Param};
use crate::format::checkpoint as cp;
use crate::format::consistency::{ConsistencyProof, CONSISTENCY_FORMAT};
use crate::history::checkpoint::check_signature;
use crate::history::merkle::{self, Hash};
use crate::history::seal::Seal;
use crate::history::tiles::consistency_from_tiles;
use crate::publish::AtomicPublisher;

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// What a valid consistency proof establishes.
#[derive(Debug, Clone, Serialize)]
pub struct ConsistencySummary {
    /// The log's origin.
    pub origin: String,
    /// The older tree's size.
    pub old_size: u64,
    /// The newer tree's size.
    pub new_size: u64,
}

/// The seal with head digest `head` (the newest when `None`), which must carry a checkpoint.
async fn signed_seal(store: &dyn AtomicPublisher, head: Option<&str>, p: Param) -> Result<Seal> {
    let against = head.map_or(ProveAgainst::Newest, |h| ProveAgainst::Head(h.to_string()));
    let s = target(store, &against).await?.ok_or_else(|| {
        Error::NotFound("the seal (a store sealed only by earlier versions)".into())
    })?;
    let seal = s.seal.map_err(|m| Error::Corrupt {
        what: "seal",
        key: s.key.clone(),
        message: m,
    })?;
    if seal.checkpoint.is_none() {
        return Err(Error::invalid(
            p,
            text![format!(
                "seal {} carries no checkpoint (unsigned, or made before checkpoints)",
                seal.seq
            )],
        ));
    }
    Ok(seal)
}

/// Prove that the seal with head `to` (default: the newest) extends the seal with head
/// `from`. Reads O(log n) hash tiles of the newer tree.
pub async fn prove_consistency(
    store: &dyn AtomicPublisher,
    from: &str,
    to: Option<&str>,
) -> Result<ConsistencyProof> {
    let old = signed_seal(store, Some(from), Param::FromHead).await?;
    let new = signed_seal(store, to, Param::ToHead).await?;
    let (m, n) = (old.tree_size, new.tree_size);
    if m == 0 || m > n {
        return Err(Error::invalid(
            Param::FromHead,
            text![format!(
                "seal {} ({m} commits) is not an older, non-empty tree than seal {} ({n})",
                old.seq, new.seq
            )],
        ));
    }
    let proof = consistency_from_tiles(store, m, n).await?;
    Ok(ConsistencyProof {
        format: CONSISTENCY_FORMAT.to_string(),
        old_checkpoint: old.checkpoint.unwrap_or_default(),
        new_checkpoint: new.checkpoint.unwrap_or_default(),
        proof: proof.iter().map(|h| B64.encode(h)).collect(),
    })
}

/// Check a consistency proof offline: both checkpoints signed by `key` under one origin,
/// and the proof leads from the older root to the newer. `Err` says why not.
pub fn verify_consistency_proof(
    p: &ConsistencyProof,
    key: &VerifyingKey,
) -> std::result::Result<ConsistencySummary, String> {
    if p.format != CONSISTENCY_FORMAT {
        return Err(format!("unknown proof format {:?}", p.format));
    }
    let old = cp::parse(&p.old_checkpoint).map_err(|e| format!("the older checkpoint: {e}"))?;
    let new = cp::parse(&p.new_checkpoint).map_err(|e| format!("the newer checkpoint: {e}"))?;
    check_signature(&old, key).map_err(|e| format!("the older checkpoint: {e}"))?;
    check_signature(&new, key).map_err(|e| format!("the newer checkpoint: {e}"))?;
    if old.origin != new.origin {
        return Err(format!(
            "the checkpoints are of two logs: {} and {}",
            old.origin, new.origin
        ));
    }
    let proof = p
        .proof
        .iter()
        .map(|h| B64.decode(h).ok().and_then(|b| <Hash>::try_from(b).ok()))
        .collect::<Option<Vec<Hash>>>()
        .ok_or("a proof hash that is not base64 SHA-256")?;
    if !merkle::verify_consistency(old.tree_size, new.tree_size, &old.root, &new.root, &proof) {
        return Err(format!(
            "the proof does not show the tree of {} commits extends the tree of {}",
            new.tree_size, old.tree_size
        ));
    }
    Ok(ConsistencySummary {
        origin: new.origin,
        old_size: old.tree_size,
        new_size: new.tree_size,
    })
}
