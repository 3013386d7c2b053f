//! A read since a seal ([`super::ReadOptions::since_seal`]): the commits sealed by seals
//! K+1..=N, in O(new seals + log n) requests, whatever the seals before K hold.
//!
//! Only seals K..=N are read (by number; N is the newest, found from the head marker, or
//! the one asked for). Seal K is read for its digest, tree size and frontier (the RFC 9162
//! compact range `lineage-seal/2` records), which must fold to its root; each of K+1..=N is
//! checked as the full walk checks it: its number, `prev_sha256` the digest of the seal
//! before, its signature (if any), and its tree size and root what K's frontier and the
//! entries since give; no entry of K..=N is sealed twice. The seals before K are not
//! re-read: seal K's digest vouches for them (each seal's bytes hold the digest of the one
//! before), which is what an anchor checked against the range binds
//! ([`crate::audit::anchors::Anchors::check_range`]). Not checked here: that an entry of
//! K+1..=N was not sealed before K too (a full read or `verify` checks that).

use std::collections::HashSet;

use futures::{StreamExt, TryStreamExt};

use super::chain::{linked, numbered, push_entries, rooted, Entry};
use super::types::{SealRange, SealRef, SnapshotSeal};
use crate::base::error::{Error, Failed, Result};
use crate::base::param::{text, Param};
use crate::format::keys::seal_key;
use crate::history::frontier::Frontier;
use crate::history::head::{self, read_seal};
use crate::history::pointers::READ_CONCURRENCY;
use crate::history::seal::StoredSeal;
use crate::publish::AtomicPublisher;

/// Seals K..=N read and checked: the snapshot's seal (N), the entries of K+1..=N in leaf
/// order, and the range.
pub(super) struct Since {
    pub(super) seal: SnapshotSeal,
    pub(super) entries: Vec<Entry>,
    pub(super) range: SealRange,
}

/// Read and check seals `since`..=`as_of` (default: the newest seal).
pub(super) async fn chain_since(
    store: &dyn AtomicPublisher,
    since: u64,
    as_of: Option<u64>,
) -> Result<Since> {
    if since == 0 {
        return Err(Error::invalid(
            Param::SinceSeal,
            text!["0: seals are numbered from 1"],
        ));
    }
    let newest = newest_seal(store, as_of).await?;
    let upto = newest.key_seq;
    if since > upto {
        let why = match as_of {
            Some(n) => format!("{since}: after the seal read ({n}, "),
            None => format!("{since}: the store has no seal {since} (the newest is {upto}; "),
        };
        return Err(Error::invalid(
            Param::SinceSeal,
            text![why, Param::SinceSeal, " takes a seal already read)"],
        ));
    }
    let seals = read_range(store, since, newest).await?;
    let first = &seals[0];
    let mut tree = frontier_of(first)?;
    let mut seen: HashSet<&str> = HashSet::new();
    if let Ok(s) = &first.seal {
        seen.extend(s.entries.iter().map(|e| e.key.as_str()));
    }
    let mut entries = Vec::new();
    let seal_k = numbered(first, since)?;
    seal_k
        .check_signature(None)
        .map_err(|e| integrity(first, e.to_string()))?;
    let mut head = rooted(first, seal_k, &tree)?;
    for (i, s) in seals.iter().enumerate().skip(1) {
        let seal = linked(s, since + i as u64, Some(&seals[i - 1]))?;
        let by = SealRef {
            seq: s.key_seq,
            sha256: s.digest.clone(),
        };
        if let Some(e) = seal.entries.iter().find(|e| !seen.insert(e.key.as_str())) {
            return Err(integrity(
                s,
                format!(
                    "seals {} again (sealed by seals {since}-{upto} before)",
                    e.key
                ),
            ));
        }
        push_entries(s, seal, &by, &mut tree, &mut entries)?;
        head = rooted(s, seal, &tree)?;
    }
    Ok(Since {
        seal: head,
        entries,
        range: SealRange {
            from: since,
            to: upto,
            seals,
            newest: as_of.is_none(),
        },
    })
}

/// The seal read as of: `as_of`, read by number, or the newest (from the head marker).
async fn newest_seal(store: &dyn AtomicPublisher, as_of: Option<u64>) -> Result<StoredSeal> {
    if let Some(n) = as_of {
        return match (n, read_seal(store, n).await?) {
            (1.., Some(s)) => Ok(s),
            _ => Err(Error::invalid(
                Param::AsOfSeal,
                text![format!("{n}: the store has no seal {n}")],
            )),
        };
    }
    let heads = head::find(store).await?;
    heads.newest().cloned().ok_or_else(|| {
        Error::NotFound(format!(
            "{} has no seal: nothing is vouched for (run `lineage seal`)",
            store.describe()
        ))
    })
}

/// Seals `since`..=`newest.key_seq`, in order (`newest` already read); a missing one is an
/// [`Error::Integrity`] naming it.
async fn read_range(
    store: &dyn AtomicPublisher,
    since: u64,
    newest: StoredSeal,
) -> Result<Vec<StoredSeal>> {
    let upto = newest.key_seq;
    let mut seals: Vec<StoredSeal> = futures::stream::iter(since..upto)
        .map(|n| async move {
            read_seal(store, n).await?.ok_or_else(|| {
                Error::Integrity(vec![Failed::new(
                    seal_key(n),
                    format!("is missing: the chain from seal {since} to seal {upto} jumps over it"),
                )])
            })
        })
        .buffered(READ_CONCURRENCY)
        .try_collect()
        .await?;
    seals.push(newest);
    Ok(seals)
}

/// Seal K's tree, from its frontier: refused when it has none (an earlier format) or the
/// frontier does not give its root.
fn frontier_of(s: &StoredSeal) -> Result<Frontier> {
    let seal = s.seal.as_ref().map_err(|m| integrity(s, m.clone()))?;
    let Some(f) = &seal.frontier else {
        return Err(Error::invalid(
            Param::SinceSeal,
            text![
                format!(
                "{}: seal {} records no frontier (it was written before lineage-seal/2), so what \
                 came after it cannot be checked without every seal before it: read without ",
                s.key_seq, s.key_seq
            ),
                Param::SinceSeal,
                ", or since a later seal"
            ],
        ));
    };
    let tree = Frontier::from_hex(seal.tree_size, f).ok_or_else(|| {
        integrity(
            s,
            "its frontier does not fit its tree size: the seal was edited",
        )
    })?;
    if !hex::encode(tree.root()).eq_ignore_ascii_case(&seal.root) {
        return Err(integrity(
            s,
            "its frontier does not give its root: the seal was edited",
        ));
    }
    Ok(tree)
}

/// The integrity error naming seal `s`.
fn integrity(s: &StoredSeal, m: impl Into<crate::base::param::Text>) -> Error {
    Error::Integrity(vec![Failed::new(s.key.clone(), m)])
}

/// The pointer keys of the commits after the newest seal (the range's last: no
/// `as_of_seal`), of run `run_id` if given, not in `covered`, in key order: from the index
/// after its watermark (late entries in its window included). Refused when that seal has
/// no watermark (an earlier format: the whole index would be read).
pub(super) async fn unsealed_keys(
    store: &dyn AtomicPublisher,
    range: &SealRange,
    run_id: Option<&str>,
    covered: &HashSet<&str>,
) -> Result<Vec<String>> {
    let Some(newest) = range.seals.last() else {
        return Ok(Vec::new());
    };
    let seal = newest
        .seal
        .as_ref()
        .map_err(|m| integrity(newest, m.clone()))?;
    if seal.watermark_utc.is_none() {
        return Err(Error::invalid(
            Param::IncludeUnsealed,
            text![
                "with ",
                Param::SinceSeal,
                format!(
                    ": seal {} records no watermark (an earlier format), so the commits after \
                     it are not found from the index: read without ",
                    newest.key_seq
                ),
                Param::SinceSeal
            ],
        ));
    }
    let keys: std::collections::BTreeSet<String> =
        crate::history::window::unsealed_after(store, seal)
            .await?
            .into_iter()
            .filter(|e| run_id.is_none_or(|r| e.run_id == r))
            .map(|e| e.pointer_key)
            .filter(|k| !covered.contains(k.as_str()))
            .collect();
    Ok(keys.into_iter().collect())
}
