//! `verify --expect-head H --trust-expected-head`: what the seal with digest H covers is
//! taken on an earlier verify's word and a proof, not read again.
//!
//! The seal with digest H is found walking back from the newest seal (each seal read is
//! one the since strategy checks anyway, [`super::since`]). An RFC 9162 consistency proof
//! from that seal's tree to the newest seal's, made from the hash tiles (O(log n) hashes
//! from at most two tiles a level), must lead from the one root to the other: the commits
//! H covers are still, unchanged and in order, the first leaves of the newest tree. Then
//! the since strategy checks by reading: the seals from H's seal on (links, frontiers,
//! signatures), the commits sealed after it and those not sealed yet, with their parts.
//! Not read: the commits H covers, their pointers and parts, and the seals before H's
//! seal but the one just before it (a full verify checks them).

use std::collections::BTreeMap;

use crate::audit::findings::{Problem, ProblemKind, Report, TrustedHead};
use crate::base::error::Result;
use crate::format::keys;
use crate::history::head::read_seal;
use crate::history::merkle;
use crate::history::seal::StoredSeal;
use crate::history::tiles::consistency_from_tiles;
use crate::publish::AtomicPublisher;

/// The seal whose digest is `want`, walking back from seal `newest`: its number (`None`
/// when no seal down to seal 1 has it, or the chain has a gap), and every seal read.
pub(crate) async fn find(
    store: &dyn AtomicPublisher,
    newest: u64,
    want: &str,
) -> Result<(Option<u64>, BTreeMap<u64, StoredSeal>)> {
    let want = want.trim().to_lowercase();
    let mut read = BTreeMap::new();
    let mut seq = newest;
    while seq > 0 {
        let Some(s) = read_seal(store, seq).await? else {
            break;
        };
        let found = s.digest == want;
        read.insert(seq, s);
        if found {
            return Ok((Some(seq), read));
        }
        seq -= 1;
    }
    Ok((None, read))
}

/// The consistency proof from the tiles, from the expected head's seal `old` to the
/// newest seal: into `report` (what was taken on proof), and a `bad_tile` problem when it
/// does not lead from the one root to the other.
pub(crate) async fn check(
    store: &dyn AtomicPublisher,
    old: &StoredSeal,
    newest: &StoredSeal,
    report: &mut Report,
) -> Result<()> {
    let (Ok(o), Ok(n)) = (&old.seal, &newest.seal) else {
        return Ok(()); // an unreadable seal is the problem the chain check reports
    };
    let (m, size) = (o.tree_size, n.tree_size);
    let mut trusted = TrustedHead {
        seq: old.key_seq,
        tree_size: m,
        newest_seq: newest.key_seq,
        newest_tree_size: size,
        proof_hashes: 0,
        consistent: false,
    };
    let why = if m == 0 {
        // An empty tree is extended by every tree.
        trusted.consistent = true;
        None
    } else if m > size {
        Some(format!(
            "seal {} records {m} commits, more than the newest seal {} ({size})",
            old.key_seq, newest.key_seq
        ))
    } else {
        match consistency_from_tiles(store, m, size).await {
            Ok(proof) => {
                trusted.proof_hashes = proof.len() as u64;
                let roots = (merkle::parse_hash(&o.root), merkle::parse_hash(&n.root));
                trusted.consistent = match roots {
                    (Some(a), Some(b)) => merkle::verify_consistency(m, size, &a, &b, &proof),
                    _ => false,
                };
                (!trusted.consistent).then(|| format!(
                    "the consistency proof from the hash tiles does not lead from seal {}'s root ({m} commits, the expected head) to seal {}'s ({size}): the tree the expected head covers was changed, or a tile was (a full `verify` names which)",
                    old.key_seq, newest.key_seq
                ))
            }
            Err(e) => Some(format!(
                "no consistency proof from seal {} to seal {} could be made from the hash tiles: {e}",
                old.key_seq, newest.key_seq
            )),
        }
    };
    if let Some(why) = why {
        report.push_problem(Problem::new(ProblemKind::BadTile, keys::TILES_PREFIX, why));
    }
    report.trusted_head = Some(trusted);
    Ok(())
}
