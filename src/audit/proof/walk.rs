//! Proving by walking the whole seal chain: what a store (or a commit) without leaf
//! locators and hash tiles needs; O(n) reads.

use crate::audit::chain;
use crate::audit::proof::format::{utf8, Proof, ProveAgainst, PROOF_FORMAT};
use crate::base::digest::sha256_hex;
use crate::base::error::{Error, Result};
use crate::format::keys;
use crate::format::keys::kind::KeyKind;
use crate::history::merkle;
use crate::history::seal::StoredSeal;
use crate::publish::AtomicPublisher;

/// Why `commit_id` is in no seal: it names a compaction (whose part holds the rows of other
/// commits, each provable), or a commit not sealed yet (or none at all).
fn not_sealed(chain: &chain::Chain, commit_id: &str) -> Error {
    let record = keys::compaction_record_key(commit_id);
    let by = chain.seals.iter().find_map(|s| {
        let seal = s.seal.as_ref().ok()?;
        let refs = seal.compactions.as_ref()?;
        refs.iter().any(|r| r.key == record).then_some(s.key_seq)
    });
    match by {
        Some(seq) => Error::NotFound(format!(
            "commit {commit_id} in any seal: {commit_id} is a compaction (record {record}, put into effect by seal {seq}), not a commit; prove the original commits of its rows (`lineage files --json` lists them under `compaction.commits`)"
        )),
        None => Error::NotFound(format!(
            "commit {commit_id} in any seal (a commit not sealed yet is provable after the next `lineage seal`)"
        )),
    }
}

/// An inclusion proof of `commit_id` against the seal `against` names, from every seal.
pub(crate) async fn prove_by_walking(
    store: &dyn AtomicPublisher,
    commit_id: &str,
    against: &ProveAgainst,
) -> Result<Proof> {
    let chain = chain::walk(store, None).await?;
    if let Some(p) = chain.problems.first() {
        return Err(Error::Corrupt {
            what: "seal",
            key: p.key.clone(),
            message: format!(
                "{}; run `lineage verify` (no proof from a broken chain)",
                p.detail
            )
            .into(),
        });
    }
    let stored = chosen(&chain, against)?;
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
        .ok_or_else(|| not_sealed(&chain, commit_id))?;
    let leaf = &chain.leaves[index];
    if index as u64 >= seal.tree_size {
        return Err(Error::usage(format!(
            "commit {commit_id} was sealed by seal {}, after seal {}: prove against a newer seal",
            leaf.seq, stored.key_seq
        )));
    }
    let pointer = sealed_pointer(store, leaf).await?;
    let hashes = chain.leaf_hashes(seal.tree_size as usize);
    let path = merkle::inclusion_path(&hashes, index)
        .ok_or_else(|| Error::internal("leaf outside the tree"))?;
    let seal_text = utf8(&stored.bytes, "seal", &stored.key)?;
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
        row: None,
    })
}

/// The seal `against` names, in the walked chain.
fn chosen<'c>(chain: &'c chain::Chain, against: &ProveAgainst) -> Result<&'c StoredSeal> {
    match against {
        ProveAgainst::Newest => chain.seals.last(),
        ProveAgainst::Seq(n) => chain.seals.iter().find(|s| s.key_seq == *n),
        ProveAgainst::Head(d) => {
            let d = d.trim().to_lowercase();
            chain.seals.iter().find(|s| s.digest == d)
        }
    }
    .ok_or_else(|| match against {
        ProveAgainst::Newest => Error::usage("the store has no seals yet: run `lineage seal`"),
        _ => Error::NotFound(format!("seal {against:?}")),
    })
}

/// The pointer of `leaf`, read and checked against the digest sealed, as text.
async fn sealed_pointer(store: &dyn AtomicPublisher, leaf: &chain::Leaf) -> Result<String> {
    let bytes = crate::history::pointers::get_pointer(store, &leaf.key)
        .await?
        .ok_or_else(|| Error::NotFound(leaf.key.clone()))?;
    if sha256_hex(&bytes) != leaf.digest {
        return Err(Error::Conflict {
            key: leaf.key.clone(),
            message: "the pointer differs from what was sealed".into(),
        });
    }
    utf8(&bytes, "pointer", &leaf.key)
}
