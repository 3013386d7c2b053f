//! Compact proofs in the open format `c2sp.org/tlog-proof@v1`
//! ([`crate::format::tlog_proof`]): the leaf's index, its RFC 6962 audit path and the
//! seal's C2SP checkpoint, with the commit's pointer as the extra data. A few hundred
//! bytes to a few KB however large the seal, and no other commit is disclosed (the seal
//! itself is not in it). Made for seals that carry a checkpoint (signed seals); checked
//! offline against the trusted seal key, whose signature on the checkpoint stands for the
//! seal, since the log never signs two checkpoints that are not consistent.

use std::path::Path;

use ed25519_dalek::VerifyingKey;
use sha2::{Digest, Sha256};

use crate::audit::proof::format::{check_part, Proof, ProofSummary};
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
    let checked = (|| {
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
    })();
    let (c, pointer) = match checked {
        Ok(v) => v,
        Err(why) => return Ok(Err(why)),
    };
    let part_file_checked = match check_part(&pointer, part_file)? {
        Ok(b) => b,
        Err(why) => return Ok(Err(why)),
    };
    Ok(Ok(ProofSummary {
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
    }))
}

/// The pointer in the extra data.
fn pointer(bytes: &[u8]) -> std::result::Result<Pointer, String> {
    Pointer::from_bytes("the proof's pointer", bytes).map_err(|e| e.to_string())
}
