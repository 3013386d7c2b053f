//! The seal chain a snapshot reads: seals 1..=`as_of`, checked link by link.

use std::collections::HashSet;

use super::types::{SealRef, SnapshotSeal};
use crate::base::error::{Error, Failed, Result};
use crate::base::param::{text, Param};
use crate::format::compaction::CompactionRef;
use crate::format::keys;
use crate::history::frontier::Frontier;
use crate::history::merkle;
use crate::history::seal::{Seal, StoredSeal};

/// One sealed entry: its pointer key, the digest sealed, the seal.
pub(super) struct Entry {
    /// The pointer key.
    pub(super) key: String,
    /// The digest sealed.
    pub(super) sha256: String,
    /// The seal.
    pub(super) by: SealRef,
}

/// The chain of seals 1..=`as_of` (default: the newest), checked link by link; its entries
/// in leaf order; and the pointer keys sealed by the seals after it (never "unsealed").
pub(super) type Chained = (
    Option<SnapshotSeal>,
    Vec<Entry>,
    Vec<String>,
    Vec<(SealRef, CompactionRef)>,
);

pub(super) fn chain_up_to(seals: &[StoredSeal], as_of: Option<u64>) -> Result<Chained> {
    let newest = seals.last().map_or(0, |s| s.key_seq);
    let upto = as_of.unwrap_or(newest);
    if as_of == Some(0) || upto > newest {
        return Err(Error::invalid(
            Param::AsOfSeal,
            text![format!("{upto}: the store's seals are 1..={newest}")],
        ));
    }
    let mut tree = Frontier::new();
    let mut entries = Vec::new();
    let mut later = Vec::new();
    let mut head = None;
    let mut compactions = Vec::new();
    let mut prev: Option<&StoredSeal> = None;
    for (i, s) in seals.iter().enumerate() {
        if s.key_seq > upto {
            // Only their entries matter (what "unsealed" excludes); a broken later seal
            // does not change what seals 1..=upto prove.
            if let Ok(seal) = &s.seal {
                later.extend(seal.entries.iter().map(|e| e.key.clone()));
            }
            continue;
        }
        let seal = linked(s, i as u64 + 1, prev)?;
        let by = SealRef {
            seq: s.key_seq,
            sha256: s.digest.clone(),
        };
        push_entries(s, seal, &by, &mut tree, &mut entries)?;
        for c in seal.compactions.iter().flatten() {
            compactions.push((by.clone(), c.clone()));
        }
        head = Some(rooted(s, seal, &tree)?);
        prev = Some(s);
    }
    let mut seen = HashSet::new();
    if let Some(e) = entries.iter().find(|e| !seen.insert(e.key.as_str())) {
        return Err(Error::Integrity(vec![Failed::new(
            keys::seal_key(e.by.seq),
            format!("seals {} again", e.key),
        )]));
    }
    Ok((head, entries, later, compactions))
}

/// The entries of seal `s` (`seal`, sealed by `by`) appended to `entries`, their leaves to
/// `tree`; a digest that is not one is an [`Error::Integrity`] naming the seal.
pub(super) fn push_entries(
    s: &StoredSeal,
    seal: &Seal,
    by: &SealRef,
    tree: &mut Frontier,
    entries: &mut Vec<Entry>,
) -> Result<()> {
    for e in &seal.entries {
        let d = merkle::parse_hash(&e.sha256)
            .ok_or_else(|| bad(s, format!("entry {} has no valid sha256", e.key)))?;
        tree.push(merkle::leaf_hash(&d));
        entries.push(Entry {
            key: e.key.clone(),
            sha256: e.sha256.to_lowercase(),
            by: by.clone(),
        });
    }
    Ok(())
}

/// The integrity error naming seal `s`.
fn bad(s: &StoredSeal, m: impl Into<crate::base::param::Text>) -> Error {
    Error::Integrity(vec![Failed::new(s.key.clone(), m)])
}

/// Seal `s`, parsed, when it is seal `expect`, records its own number, links to `prev`
/// and carries a valid signature (if any).
pub(super) fn linked<'a>(
    s: &'a StoredSeal,
    expect: u64,
    prev: Option<&StoredSeal>,
) -> Result<&'a Seal> {
    let seal = numbered(s, expect)?;
    let prev_digest = prev.map(|p| p.digest.as_str());
    if seal.prev_sha256.as_deref() != prev_digest {
        return Err(bad(
            s,
            format!(
                "records previous seal {}, but the seal before it{} has sha256 {}",
                seal.prev_sha256.as_deref().unwrap_or("(none)"),
                prev.map_or(String::new(), |p| format!(" ({})", p.key)),
                prev_digest.unwrap_or("(none: it is the first)")
            ),
        ));
    }
    seal.check_signature(None)
        .map_err(|e| bad(s, format!("{e}")))?;
    Ok(seal)
}

/// Seal `s`, parsed, when it is seal `expect` and records its own number (its link to the
/// seal before is not checked: [`linked`] does).
pub(super) fn numbered(s: &StoredSeal, expect: u64) -> Result<&Seal> {
    if s.key_seq != expect {
        return Err(Error::Integrity(vec![Failed::new(
            keys::seal_key(expect),
            format!("is missing: the chain jumps to {}", s.key),
        )]));
    }
    let seal: &Seal = s.seal.as_ref().map_err(|m| bad(s, m.clone()))?;
    if seal.seq != s.key_seq {
        return Err(bad(s, format!("records seq {}", seal.seq)));
    }
    Ok(seal)
}

/// Seal `s` as the snapshot's seal, when its tree size and root are those of `tree` (its
/// entries and those before).
pub(super) fn rooted(s: &StoredSeal, seal: &Seal, tree: &Frontier) -> Result<SnapshotSeal> {
    let root = hex::encode(tree.root());
    if seal.tree_size != tree.size() || !seal.root.eq_ignore_ascii_case(&root) {
        return Err(bad(
            s,
            format!(
                "records tree size {} root {}, but its entries and those before give {} and {root}",
                seal.tree_size,
                seal.root,
                tree.size()
            ),
        ));
    }
    Ok(SnapshotSeal {
        seq: s.key_seq,
        sha256: s.digest.clone(),
        tree_size: seal.tree_size,
        root: seal.root.clone(),
        sealed_utc: seal.sealed_utc.clone(),
    })
}
