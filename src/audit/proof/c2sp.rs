//! Compact proofs in the open format `c2sp.org/tlog-proof@v1`
//! ([`crate::format::tlog_proof`]): the leaf's index, its RFC 6962 audit path and the
//! seal's C2SP checkpoint, with the commit's pointer as the extra data. A few hundred
//! bytes to a few KB however large the seal, and no other commit is disclosed (the seal
//! itself is not in it). Made for seals that carry a checkpoint (signed seals); checked
//! offline against the trusted seal key, whose signature on the checkpoint stands for the
//! seal, since the log never signs two checkpoints that are not consistent.
//!
//! A row proof of a signed seal is compact too ([`CompactRowProof`],
//! `lineage-row-proof/2`): the commit's tlog proof, the row and the part that holds it.

use std::path::Path;

use ed25519_dalek::VerifyingKey;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::audit::proof::format::{check_part, Proof, ProofSummary};
use crate::audit::proof::row_check::{check_row, RowEvidence};
use crate::base::error::Result;
use crate::format::checkpoint as cp;
use crate::format::pointer::Pointer;
use crate::format::tlog_proof::{self, TlogProof};
use crate::history::checkpoint::check_signature;
use crate::history::merkle;
use crate::history::seal::Seal;
use crate::history::signing::key_id;

/// The proof `proof` (built against a seal) as a tlog proof, or `None` when its seal
/// carries no checkpoint (unsigned, or made before checkpoints).
pub fn to_tlog_proof(proof: &Proof) -> Option<String> {
    let seal = Seal::from_bytes("proof seal", proof.seal.as_bytes()).ok()?;
    let checkpoint = seal.checkpoint?;
    let path = proof
        .path
        .iter()
        .map(|h| merkle::parse_hash(h))
        .collect::<Option<Vec<_>>>()?;
    Some(tlog_proof::render(&TlogProof {
        extra: Some(proof.pointer.as_bytes().to_vec()),
        index: proof.leaf_index,
        path,
        checkpoint,
    }))
}

/// Check a tlog proof offline against the trusted seal key. `Ok(Err(why))` when it does
/// not hold.
pub fn verify_tlog_proof(
    text: &str,
    public_key: &VerifyingKey,
    part_file: Option<&Path>,
) -> Result<std::result::Result<ProofSummary, String>> {
    let (c, pointer) = match checked(text, public_key) {
        Ok(v) => v,
        Err(why) => return Ok(Err(why)),
    };
    let part_file_checked = match check_part(&pointer, part_file)? {
        Ok(b) => b,
        Err(why) => return Ok(Err(why)),
    };
    Ok(Ok(summary(c, pointer, public_key, part_file_checked)))
}

/// The checkpoint (signed by `public_key`) and the pointer the audit path leads from.
fn checked(
    text: &str,
    public_key: &VerifyingKey,
) -> std::result::Result<(cp::Checkpoint, Pointer), String> {
    let p = tlog_proof::parse(text)?;
    let c = cp::parse(&p.checkpoint).map_err(|e| format!("the checkpoint: {e}"))?;
    check_signature(&c, public_key).map_err(|e| format!("the checkpoint: {e}"))?;
    let extra = p
        .extra
        .as_deref()
        .ok_or("no extra data: the commit's pointer")?;
    let pointer = pointer(extra)?;
    let leaf = merkle::leaf_hash(&Sha256::digest(extra));
    let root = merkle::root_from_path(&leaf, p.index, c.tree_size, &p.path);
    if root != Some(c.root) {
        return Err(format!(
            "the audit path does not lead from the pointer (leaf {}) to the checkpoint's root",
            p.index
        ));
    }
    Ok((c, pointer))
}

fn summary(
    c: cp::Checkpoint,
    pointer: Pointer,
    public_key: &VerifyingKey,
    part_file_checked: bool,
) -> ProofSummary {
    ProofSummary {
        commit_id: pointer.commit_id,
        run_id: pointer.run_id,
        target_crs: pointer.target_crs,
        part_path: pointer.part_path,
        part_sha256: pointer.sha256,
        rows: pointer.row_count,
        seal_seq: 0,
        sealed_utc: String::new(),
        signed_by: Some(key_id(public_key).into()),
        part_file_checked,
        tree_size: c.tree_size,
        origin: Some(c.origin),
        row: None,
    }
}

/// Format tag of compact row proofs: the row's commit as a `c2sp.org/tlog-proof@v1` (for a
/// signed seal) instead of a `lineage-proof/1` that embeds the whole seal, and the row.
pub const COMPACT_ROW_PROOF_FORMAT: &str = "lineage-row-proof/2";

/// A compact row proof: the size of the part it carries plus a few KB, whatever the seal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactRowProof {
    /// Always [`COMPACT_ROW_PROOF_FORMAT`].
    pub format: String,
    /// The commit's inclusion, a `c2sp.org/tlog-proof@v1` (its extra data: the pointer).
    pub commit_proof: String,
    /// The row, and the part that holds it.
    pub row: RowEvidence,
}

/// The row proof `proof` in the compact form (JSON), or `None` when it is not a row proof
/// or its seal carries no checkpoint (unsigned, or made before checkpoints).
pub fn to_compact_row_proof(proof: &Proof) -> Option<String> {
    let row = proof.row.clone()?;
    let p = CompactRowProof {
        format: COMPACT_ROW_PROOF_FORMAT.to_string(),
        commit_proof: to_tlog_proof(proof)?,
        row,
    };
    let mut text = serde_json::to_string_pretty(&p).ok()?;
    text.push('\n');
    Some(text)
}

/// Whether `text` is a compact row proof (by its format tag).
pub fn is_compact_row_proof(text: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(text)
        .is_ok_and(|v| v["format"] == COMPACT_ROW_PROOF_FORMAT)
}

/// Check a compact row proof offline against the trusted seal key: the commit's tlog
/// proof, then the row in the part it carries (and `part_file` when given).
/// `Ok(Err(why))` when it does not hold.
pub fn verify_compact_row_proof(
    text: &str,
    public_key: &VerifyingKey,
    part_file: Option<&Path>,
) -> Result<std::result::Result<ProofSummary, String>> {
    let p: CompactRowProof = match serde_json::from_str(text) {
        Ok(p) => p,
        Err(e) => return Ok(Err(format!("not a {COMPACT_ROW_PROOF_FORMAT}: {e}"))),
    };
    if p.format != COMPACT_ROW_PROOF_FORMAT {
        return Ok(Err(format!("unknown proof format {:?}", p.format)));
    }
    let (c, pointer) = match checked(&p.commit_proof, public_key) {
        Ok(v) => v,
        Err(why) => return Ok(Err(format!("the commit's proof: {why}"))),
    };
    let row = match check_row(&p.row, &pointer)? {
        Ok(r) => r,
        Err(why) => return Ok(Err(why)),
    };
    let part_file_checked = match check_part(&pointer, part_file)? {
        Ok(b) => b,
        Err(why) => return Ok(Err(why)),
    };
    Ok(Ok(ProofSummary {
        row: Some(row),
        ..summary(c, pointer, public_key, part_file_checked)
    }))
}

/// The pointer in the extra data.
fn pointer(bytes: &[u8]) -> std::result::Result<Pointer, String> {
    Pointer::from_bytes("the proof's pointer", bytes).map_err(|e| e.to_string())
}
