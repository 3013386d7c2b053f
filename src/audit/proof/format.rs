//! The inclusion proof format, and checking a proof offline: that one commit's pointer is a leaf of a seal's Merkle tree, checkable
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

use crate::base::digest::sha256_hex;
use crate::base::error::{Error, Result};
use crate::base::param::{text, Param, Text};
use crate::format::keys;
use crate::format::pointer::Pointer;
use crate::history::merkle;
use crate::history::seal::Seal;
use crate::history::signing::{key_id, parse_public_key};

/// Format tag of proofs.
pub(super) const PROOF_FORMAT: &str = "lineage-proof/1";
/// Format tag of row proofs: a [`PROOF_FORMAT`] proof of the row's commit plus the row
/// ([`crate::audit::proof::row_check`]). A verifier that knows only [`PROOF_FORMAT`] refuses it
/// rather than vouch for the commit and ignore the row.
pub(super) const ROW_PROOF_FORMAT: &str = "lineage-row-proof/1";

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
    /// A row proof's row: its values and the part that holds it (format
    /// [`ROW_PROOF_FORMAT`]); absent in a proof of a commit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub row: Option<crate::audit::proof::row_check::RowEvidence>,
}

/// Which seal to prove against.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub enum ProveAgainst {
    /// The newest seal.
    #[default]
    Newest,
    /// The seal with this sequence number.
    Seq(u64),
    /// The seal with this digest (the head an auditor holds).
    Head(String),
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
    pub signed_by: Option<Text>,
    /// True when a part file was given and matched.
    pub part_file_checked: bool,
    /// A row proof's row, found in the part the proof carries (checked against the
    /// commit's size and digests) at the index the proof names.
    pub row: Option<crate::audit::proof::row_check::RowSummary>,
    /// Leaves in the tree proven against.
    pub tree_size: u64,
    /// (a `c2sp.org/tlog-proof@v1`) the checkpoint's origin; its seal's number and time
    /// are not in such a proof (`seal_seq` 0, `sealed_utc` empty).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
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
        return Err(Error::usage(format!(
            "head digest {head:?} is not 64 hex digits"
        )));
    }
    let checked = (|| {
        let seal = proof_seal(proof, &head)?;
        let signed_by = signer(&seal, public_key)?;
        let pointer = proof_pointer(proof)?;
        check_path(proof, &seal)?;
        Ok((seal, signed_by, pointer))
    })();
    let (seal, signed_by, pointer) = match checked {
        Ok(c) => c,
        Err(why) => return Ok(Err(why)),
    };
    let row = match &proof.row {
        Some(r) => match crate::audit::proof::row_check::check_row(r, &pointer)? {
            Ok(summary) => Some(summary),
            Err(why) => return Ok(Err(why)),
        },
        None => None,
    };
    let part_file_checked = match check_part(&pointer, part_file)? {
        Ok(c) => c,
        Err(why) => return Ok(Err(why)),
    };
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
        row,
        tree_size: proof.tree_size,
        origin: None,
    }))
}

/// With a part file: that its size and sha256 are the pointer's (`Ok(Ok(true))`).
pub(super) fn check_part(
    pointer: &Pointer,
    part_file: Option<&Path>,
) -> Result<std::result::Result<bool, String>> {
    let Some(file) = part_file else {
        return Ok(Ok(false));
    };
    let (size, digest) = hash_file(file)?;
    if size != pointer.size_bytes || digest != pointer.sha256 {
        return Ok(Err(format!(
            "{} has {size} bytes and sha256 {digest}; the commit records {} bytes and {}",
            file.display(),
            pointer.size_bytes,
            pointer.sha256
        )));
    }
    Ok(Ok(true))
}

/// The proof's seal, when the proof is of our format, the seal's digest is `head` and it
/// covers the proof's tree.
fn proof_seal(proof: &Proof, head: &str) -> std::result::Result<Seal, String> {
    let want = match proof.row {
        Some(_) => ROW_PROOF_FORMAT,
        None => PROOF_FORMAT,
    };
    if proof.format != want {
        return Err(format!(
            "proof format {:?} with{} a row (a {want} proof is expected)",
            proof.format,
            if proof.row.is_some() { "" } else { "out" }
        ));
    }
    let seal_digest = sha256_hex(proof.seal.as_bytes());
    if seal_digest != head {
        return Err(format!(
            "the proof's seal has sha256 {seal_digest}, not the head digest {head}"
        ));
    }
    let seal = Seal::from_bytes("proof seal", proof.seal.as_bytes()).map_err(|e| e.to_string())?;
    if seal.tree_size != proof.tree_size {
        return Err(format!(
            "the proof is for a tree of {} leaves, the seal covers {}",
            proof.tree_size, seal.tree_size
        ));
    }
    Ok(seal)
}

/// Who signed the seal (checked against `public_key` when given); `None` when unsigned.
fn signer(
    seal: &Seal,
    public_key: Option<&VerifyingKey>,
) -> std::result::Result<Option<Text>, String> {
    match seal.check_signature(public_key) {
        Ok(true) => Ok(Some(match public_key {
            Some(k) => key_id(k).into(),
            None => text![
                format!(
                    "{} (the key the seal names; pass ",
                    seal.public_key
                        .as_deref()
                        .and_then(|k| parse_public_key(k).ok())
                        .map(|k| key_id(&k))
                        .unwrap_or_default()
                ),
                Param::PublicKey,
                " to check it is the trusted one)"
            ],
        })),
        Ok(false) if public_key.is_some() => {
            Err("the seal is not signed, but a public key was given".into())
        }
        Ok(false) => Ok(None),
        Err(e) => Err(format!("seal {}: {e}", seal.seq)),
    }
}

/// The proof's pointer, when it is the commit the proof names, at the key it names.
fn proof_pointer(proof: &Proof) -> std::result::Result<Pointer, String> {
    let pointer = Pointer::from_bytes(&proof.pointer_key, proof.pointer.as_bytes())
        .map_err(|e| e.to_string())?;
    if pointer.commit_id != proof.commit_id
        || keys::pointer_key(&pointer.run_id, &pointer.commit_id) != proof.pointer_key
    {
        return Err(format!(
            "the pointer records commit {} of run {}, not {} at {}",
            pointer.commit_id, pointer.run_id, proof.commit_id, proof.pointer_key
        ));
    }
    Ok(pointer)
}

/// That the audit path leads from the pointer's leaf to the seal's root.
fn check_path(proof: &Proof, seal: &Seal) -> std::result::Result<(), String> {
    let mut path = Vec::new();
    for h in &proof.path {
        match merkle::parse_hash(h) {
            Some(h) => path.push(h),
            None => return Err(format!("path element {h:?} is not a sha256")),
        }
    }
    let leaf = merkle::leaf_hash(&Sha256::digest(proof.pointer.as_bytes()));
    let root = merkle::root_from_path(&leaf, proof.leaf_index, proof.tree_size, &path);
    if root.map(hex::encode).as_deref() != Some(seal.root.to_lowercase().as_str()) {
        return Err(format!(
            "the audit path does not lead from the pointer to the seal's root {}",
            seal.root
        ));
    }
    Ok(())
}

/// `b` as text; bytes that are not UTF-8 make `what` at `key` corrupt.
pub(super) fn utf8(b: &[u8], what: &'static str, key: &str) -> Result<String> {
    String::from_utf8(b.to_vec()).map_err(|_| Error::Corrupt {
        what,
        key: key.to_string(),
        message: "not UTF-8".into(),
    })
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
