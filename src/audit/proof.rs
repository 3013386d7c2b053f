//! Inclusion proofs: that one commit's pointer is a leaf of a seal's Merkle tree, checkable
//! offline against a head digest, without access to the store.
//!
//! A proof carries the pointer's exact bytes, the seal's exact bytes and the RFC 9162 audit
//! path. The verifier hashes the seal (it must be the head digest it holds), hashes the
//! pointer into a leaf, and recomputes the seal's root from the path. The pointer then
//! vouches for the part through its sha256, which the verifier can check against a copy of
//! the part file.

use std::path::Path;

use ed25519_dalek::VerifyingKey;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::chain;
use super::merkle;
use super::seal::{key_id, parse_public_key, Seal};
use crate::encode::sha256_hex;
use crate::error::{Error, Result};
use crate::keys::{self, KeyKind};
use crate::pointer::Pointer;
use crate::publish::AtomicPublisher;

/// Format tag of proofs.
pub const PROOF_FORMAT: &str = "lineage-proof/1";

/// An inclusion proof of one commit in one seal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proof {
    /// Always [`PROOF_FORMAT`].
    pub format: String,
    /// The commit proven.
    pub commit_id: String,
    /// Key of its pointer.
    pub pointer_key: String,
    /// The pointer's exact bytes (JSON text).
    pub pointer: String,
    /// Position of the pointer's leaf in the tree.
    pub leaf_index: u64,
    /// Leaves in the tree (the seal's `tree_size`).
    pub tree_size: u64,
    /// Audit path, hex, leaf to root.
    pub path: Vec<String>,
    /// The seal's exact bytes (JSON text); its sha256 is the head digest checked against.
    pub seal: String,
    /// sha256 of `seal` (for people; the verifier recomputes it).
    pub seal_sha256: String,
}

/// Which seal to prove against.
#[derive(Debug, Clone, Default)]
pub enum ProveAgainst {
    /// The newest seal.
    #[default]
    Newest,
    /// The seal with this sequence number.
    Seq(u64),
    /// The seal with this digest (the head an auditor holds).
    Head(String),
}

/// Build an inclusion proof of `commit_id`: from its locator and O(log n) hash tiles when
/// the store has them ([`crate::history::prove`]), else by walking the whole chain.
pub async fn prove(
    store: &dyn AtomicPublisher,
    commit_id: &str,
    against: &ProveAgainst,
) -> Result<Proof> {
    if !keys::is_commit_id(commit_id) {
        return Err(Error::Usage(format!(
            "{commit_id:?} is not a commit id (a lower-case hyphenated UUID)"
        )));
    }
    if let Some(p) = crate::history::prove::prove_from_tiles(store, commit_id, against).await? {
        return Ok(p);
    }
    // A store (or commit) without locators and tiles: walk the whole chain.
    let chain = chain::walk(store, None).await?;
    if let Some(p) = chain.problems.first() {
        return Err(Error::Corrupt {
            what: "seal",
            key: p.key.clone(),
            message: format!(
                "{}; run `lineage verify` (no proof from a broken chain)",
                p.detail
            ),
        });
    }
    let stored = match against {
        ProveAgainst::Newest => chain.seals.last(),
        ProveAgainst::Seq(n) => chain.seals.iter().find(|s| s.key_seq == *n),
        ProveAgainst::Head(d) => {
            let d = d.trim().to_lowercase();
            chain.seals.iter().find(|s| s.digest == d)
        }
    }
    .ok_or_else(|| match against {
        ProveAgainst::Newest => {
            Error::Usage("the store has no seals yet: run `lineage seal`".into())
        }
        _ => Error::NotFound(format!("seal {against:?}")),
    })?;
    let seal = stored.seal.as_ref().map_err(|m| Error::Corrupt {
        what: "seal",
        key: stored.key.clone(),
        message: m.clone(),
    })?;
    let index = chain
        .leaves
        .iter()
        .position(|l| {
            matches!(keys::classify(&l.key), KeyKind::Pointer { commit_id: c, .. } if c == commit_id)
        })
        .ok_or_else(|| {
            Error::NotFound(format!(
                "commit {commit_id} in any seal (a commit is provable after the next `lineage seal`)"
            ))
        })?;
    let leaf = &chain.leaves[index];
    if index as u64 >= seal.tree_size {
        return Err(Error::Usage(format!(
            "commit {commit_id} was sealed by seal {}, after seal {}: prove against a newer seal",
            leaf.seq, stored.key_seq
        )));
    }
    let bytes = store
        .get(&leaf.key)
        .await?
        .ok_or_else(|| Error::NotFound(leaf.key.clone()))?;
    if sha256_hex(&bytes) != leaf.digest {
        return Err(Error::Conflict {
            key: leaf.key.clone(),
            message: "the pointer differs from what was sealed".into(),
        });
    }
    let pointer = String::from_utf8(bytes.to_vec()).map_err(|_| Error::Corrupt {
        what: "pointer",
        key: leaf.key.clone(),
        message: "not UTF-8".into(),
    })?;
    let hashes = chain.leaf_hashes(seal.tree_size as usize);
    let path = merkle::inclusion_path(&hashes, index)
        .ok_or_else(|| Error::Internal("leaf outside the tree".into()))?;
    let seal_text = String::from_utf8(stored.bytes.to_vec()).map_err(|_| Error::Corrupt {
        what: "seal",
        key: stored.key.clone(),
        message: "not UTF-8".into(),
    })?;
    Ok(Proof {
        format: PROOF_FORMAT.to_string(),
        commit_id: commit_id.to_string(),
        pointer_key: leaf.key.clone(),
        pointer,
        leaf_index: index as u64,
        tree_size: seal.tree_size,
        path: path.iter().map(hex::encode).collect(),
        seal: seal_text,
        seal_sha256: stored.digest.clone(),
    })
}

/// What a valid proof establishes.
#[derive(Debug, Clone, Serialize)]
pub struct ProofSummary {
    /// The commit.
    pub commit_id: String,
    /// Its partition.
    pub run_id: String,
    /// Its partition.
    pub target_crs: String,
    /// The part's key.
    pub part_path: String,
    /// The part's sha256, as recorded.
    pub part_sha256: String,
    /// Rows recorded.
    pub rows: u64,
    /// The seal proven against.
    pub seal_seq: u64,
    /// When that seal was made.
    pub sealed_utc: String,
    /// Key id of the seal's signature, when signed (and checked).
    pub signed_by: Option<String>,
    /// True when a part file was given and matched.
    pub part_file_checked: bool,
}

/// Check a proof offline. `Ok(Err(why))` when the proof does not hold.
pub fn verify_proof(
    proof: &Proof,
    head: &str,
    public_key: Option<&VerifyingKey>,
    part_file: Option<&Path>,
) -> Result<std::result::Result<ProofSummary, String>> {
    let head = head.trim().to_lowercase();
    if merkle::parse_hash(&head).is_none() {
        return Err(Error::Usage(format!(
            "head digest {head:?} is not 64 hex digits"
        )));
    }
    if proof.format != PROOF_FORMAT {
        return Ok(Err(format!("unknown proof format {:?}", proof.format)));
    }
    let seal_digest = sha256_hex(proof.seal.as_bytes());
    if seal_digest != head {
        return Ok(Err(format!(
            "the proof's seal has sha256 {seal_digest}, not the head digest {head}"
        )));
    }
    let seal = match Seal::from_bytes("proof seal", proof.seal.as_bytes()) {
        Ok(s) => s,
        Err(e) => return Ok(Err(e.to_string())),
    };
    if seal.tree_size != proof.tree_size {
        return Ok(Err(format!(
            "the proof is for a tree of {} leaves, the seal covers {}",
            proof.tree_size, seal.tree_size
        )));
    }
    let signed_by = match seal.check_signature(public_key) {
        Ok(true) => Some(match public_key {
            Some(k) => key_id(k),
            None => format!(
                "{} (the key the seal names; pass --public-key to check it is the trusted one)",
                seal.public_key
                    .as_deref()
                    .and_then(|k| parse_public_key(k).ok())
                    .map(|k| key_id(&k))
                    .unwrap_or_default()
            ),
        }),
        Ok(false) if public_key.is_some() => {
            return Ok(Err(
                "the seal is not signed, but a public key was given".into()
            ))
        }
        Ok(false) => None,
        Err(e) => return Ok(Err(format!("seal {}: {e}", seal.seq))),
    };
    let pointer = match Pointer::from_bytes(&proof.pointer_key, proof.pointer.as_bytes()) {
        Ok(p) => p,
        Err(e) => return Ok(Err(e.to_string())),
    };
    if pointer.commit_id != proof.commit_id
        || keys::pointer_key(&pointer.run_id, &pointer.commit_id) != proof.pointer_key
    {
        return Ok(Err(format!(
            "the pointer records commit {} of run {}, not {} at {}",
            pointer.commit_id, pointer.run_id, proof.commit_id, proof.pointer_key
        )));
    }
    let mut path = Vec::new();
    for h in &proof.path {
        match merkle::parse_hash(h) {
            Some(h) => path.push(h),
            None => return Ok(Err(format!("path element {h:?} is not a sha256"))),
        }
    }
    let leaf = merkle::leaf_hash(&Sha256::digest(proof.pointer.as_bytes()));
    let root = merkle::root_from_path(&leaf, proof.leaf_index, proof.tree_size, &path);
    if root.map(hex::encode).as_deref() != Some(seal.root.to_lowercase().as_str()) {
        return Ok(Err(format!(
            "the audit path does not lead from the pointer to the seal's root {}",
            seal.root
        )));
    }
    let mut part_file_checked = false;
    if let Some(file) = part_file {
        let (size, digest) = hash_file(file)?;
        if size != pointer.size_bytes || digest != pointer.sha256 {
            return Ok(Err(format!(
                "{} has {size} bytes and sha256 {digest}; the commit records {} bytes and {}",
                file.display(),
                pointer.size_bytes,
                pointer.sha256
            )));
        }
        part_file_checked = true;
    }
    Ok(Ok(ProofSummary {
        commit_id: pointer.commit_id,
        run_id: pointer.run_id,
        target_crs: pointer.target_crs,
        part_path: pointer.part_path,
        part_sha256: pointer.sha256,
        rows: pointer.row_count,
        seal_seq: seal.seq,
        sealed_utc: seal.sealed_utc,
        signed_by,
        part_file_checked,
    }))
}

/// Size and sha256 of a local file, streamed.
fn hash_file(path: &Path) -> Result<(u64, String)> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut size = 0u64;
    loop {
        let n = f.read(&mut buf).map_err(|e| Error::io(path, e))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        size += n as u64;
    }
    Ok((size, hex::encode(h.finalize())))
}
