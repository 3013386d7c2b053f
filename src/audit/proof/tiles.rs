//! Inclusion proofs in O(log n) reads: the commit's locator gives its leaf index and run,
//! the seal to prove against is read by number (or found from the head marker), and the
//! audit path comes from the few hash tiles it crosses. The proof is the same
//! `lineage-proof/1` the full walk builds, checked offline the same way.

use crate::audit::proof::format::{utf8, Proof, ProveAgainst, PROOF_FORMAT};
use crate::base::digest::sha256_hex;
use crate::base::error::{Error, ErrorKind, Result};
use crate::format::keys;
use crate::format::keys::history::HistoryKey;
use crate::format::keys::kind::KeyKind;
use crate::history::head;
use crate::history::merkle::{self, Hash};
use crate::history::seal::{Seal, StoredSeal};
use crate::history::tiles;
use crate::publish::AtomicPublisher;

/// The sealed place of a commit: (leaf index, run id), from its locator (written in this
/// version's layout, or in the older one by an earlier version).
pub(crate) async fn locate(
    store: &dyn AtomicPublisher,
    commit_id: &str,
) -> Result<Option<(u64, String)>> {
    for layout in [keys::Layout::V2, keys::Layout::V1] {
        let mut found: Vec<(u64, String)> = store
            .list(&keys::leaf_prefix_in(layout, commit_id))
            .await?
            .into_iter()
            .filter_map(|o| match keys::classify(&o.key) {
                KeyKind::History(HistoryKey::Leaf {
                    commit_id: c,
                    leaf_index,
                    run_id,
                }) if c == commit_id && o.size == 0 => Some((leaf_index, run_id)),
                _ => None,
            })
            .collect();
        found.sort();
        if let Some(f) = found.into_iter().next() {
            return Ok(Some(f));
        }
    }
    Ok(None)
}

/// The seal to prove against, without listing the seals.
pub(super) async fn target(
    store: &dyn AtomicPublisher,
    against: &ProveAgainst,
) -> Result<Option<StoredSeal>> {
    match against {
        ProveAgainst::Seq(n) => head::read_seal(store, *n)
            .await?
            .map(Some)
            .ok_or_else(|| Error::NotFound(format!("seal {n}"))),
        ProveAgainst::Newest => {
            let heads = head::find(store).await?;
            Ok(match heads.legacy {
                Some(_) => None,
                None => heads.newest().cloned(),
            })
        }
        ProveAgainst::Head(d) => {
            let want = d.trim().to_lowercase();
            let heads = head::find(store).await?;
            if heads.legacy.is_some() {
                return Ok(None);
            }
            // Walk back from the newest seal: the cost is the number of seals made since
            // the head the auditor holds.
            let mut seq = heads.newest().map_or(0, |s| s.key_seq);
            while seq > 0 {
                let Some(s) = head::read_seal(store, seq).await? else {
                    return Ok(None);
                };
                if s.digest == want {
                    return Ok(Some(s));
                }
                seq -= 1;
            }
            Err(Error::NotFound(format!("seal {against:?}")))
        }
    }
}

/// Prove `commit_id` from its locator and the tiles; `None` when the store lacks them (a
/// store sealed only by earlier versions, or a commit sealed before the first seal of this
/// format completed), so the caller walks the whole chain instead.
pub(crate) async fn prove_from_tiles(
    store: &dyn AtomicPublisher,
    commit_id: &str,
    against: &ProveAgainst,
) -> Result<Option<Proof>> {
    let Some((index, run_id)) = locate(store, commit_id).await? else {
        return Ok(None);
    };
    let Some(stored) = target(store, against).await? else {
        return Ok(None);
    };
    let seal = stored.seal.as_ref().map_err(|m| Error::Corrupt {
        what: "seal",
        key: stored.key.clone(),
        message: m.clone(),
    })?;
    if index >= seal.tree_size {
        return Err(Error::usage(format!(
            "commit {commit_id} was sealed after seal {} (leaf {index} of a tree of {}): prove against a newer seal",
            stored.key_seq, seal.tree_size
        )));
    }
    let pointer_key = keys::pointer_key(&run_id, commit_id);
    let bytes = crate::history::pointers::get_pointer(store, &pointer_key)
        .await?
        .ok_or_else(|| Error::NotFound(pointer_key.clone()))?;
    let leaf = merkle::leaf_hash(&merkle::parse_hash(&sha256_hex(&bytes)).unwrap_or_default());
    let (sealed_leaf, path) = match tiles::inclusion_from_tiles(store, index, seal.tree_size).await
    {
        Ok(x) => x,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            tracing::warn!(error = %e, "tiles missing; proving from the whole chain");
            return Ok(None);
        }
        Err(e) => return Err(e),
    };
    if sealed_leaf != leaf {
        return Err(Error::Conflict {
            key: pointer_key,
            message: "the pointer differs from what was sealed".into(),
        });
    }
    check_root(&stored, seal, &leaf, index, &path)?;
    Ok(Some(Proof {
        format: PROOF_FORMAT.to_string(),
        commit_id: commit_id.to_string(),
        pointer: utf8(&bytes, "pointer", &pointer_key)?,
        pointer_key,
        leaf_index: index,
        tree_size: seal.tree_size,
        path: path.iter().map(hex::encode).collect(),
        seal: utf8(&stored.bytes, "seal", &stored.key)?,
        seal_sha256: stored.digest.clone(),
        row: None,
    }))
}

/// That the audit path from the tiles leads from `leaf` (at `index`) to the seal's root.
fn check_root(
    stored: &StoredSeal,
    seal: &Seal,
    leaf: &Hash,
    index: u64,
    path: &[Hash],
) -> Result<()> {
    let root = merkle::root_from_path(leaf, index, seal.tree_size, path);
    if root.map(hex::encode).as_deref() != Some(seal.root.to_lowercase().as_str()) {
        return Err(Error::Corrupt {
            what: "tile",
            key: keys::TILES_PREFIX.to_string(),
            message: format!(
                "the hash tiles do not lead to the root of seal {}; run `lineage verify`",
                stored.key_seq
            )
            .into(),
        });
    }
    Ok(())
}
