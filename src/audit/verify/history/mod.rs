//! What a full `verify` checks of the history objects, and of the fields a
//! `lineage-seal/2` adds. Every check names the object it is about:
//!
//! - `bad_index_entry`: an index entry that holds bytes, names a pointer that is not in the
//!   store (the pointer was removed after its entry was written), or records another commit
//!   time than its pointer;
//! - `missed_by_seals`: a commit no seal covers that incremental seals will never find (no
//!   index entry, or one older than the newest seal's watermark);
//! - `bad_locator`: a locator that holds bytes or names another leaf than the seals give,
//!   or a missing locator of a sealed commit;
//! - `bad_head_marker`: a marker that holds bytes or marks a seal that does not exist (the
//!   newest seal without a marker is not a problem: `unfinished_seal` in the report);
//! - `bad_tile`: a tile whose hashes are not the tree's, or a tile the tree needs missing;
//! - `bad_checkpoint`: a C2SP checkpoint that is not its seal's or does not verify, of a
//!   seal that does not exist, or missing ([`checkpoints`]);
//! - `bad_cosignature`: a cosigned checkpoint that is not its seal's, not a signed note
//!   with a `cosignature/v1` line, or of a seal that does not exist ([`cosignatures`]);
//! - `bad_timestamp` / `seal_time_unbacked`: the seals' RFC 3161 times ([`timestamps`]);
//! - a seal whose frontier, watermark or `ahead` is wrong: `seal_root_mismatch` /
//!   `seal_corrupt`, reported by the chain walk.

mod checkpoints;
pub(crate) mod context;
mod cosignatures;
pub(crate) mod entries;
pub(crate) mod timestamps;
mod tlog;
mod tree;

use std::collections::HashSet;

use crate::audit::findings::{Problem, ProblemKind};
use crate::base::error::Result;
use crate::format::keys;
use crate::format::keys::history::HistoryKey;
use crate::format::keys::kind::KeyKind;
use crate::history::seal::Seal;
use crate::publish::{AtomicPublisher, ObjectInfo};

pub(crate) use context::Context;
use entries::{check_index_entry, missed};
use tree::{check_heads, check_tiles, missing_locators, tile_within};

/// Check the listed history objects (this shard's) against the chain and the pointers.
pub(crate) async fn check(
    store: &dyn AtomicPublisher,
    cx: &Context<'_>,
    objects: &[&ObjectInfo],
) -> Result<Checked> {
    let mut out = Vec::new();
    let mut listed = Listed::default();
    for o in objects {
        let KeyKind::History(h) = keys::classify(&o.key) else {
            continue;
        };
        if cx.scope.is_some_and(|s| !s.owns_history(&h)) {
            continue;
        }
        match h {
            HistoryKey::Index { .. } => {
                listed.index_keys.extend(keys::canonical_index_key(&o.key));
                if let Some(p) = check_index_entry(store, cx, o, &h).await? {
                    out.push(p);
                }
            }
            HistoryKey::Leaf {
                leaf_index,
                ref commit_id,
                ref run_id,
            } => {
                let pk = keys::pointer_key(run_id, commit_id);
                out.extend(listed.locator(cx, o, leaf_index, &pk));
            }
            HistoryKey::Head(seq) => listed.heads.push((seq, o)),
            HistoryKey::Tile {
                level,
                index,
                width,
            } => listed.tiles.push((level, index, width, o)),
            HistoryKey::Checkpoint(seq) => listed.checkpoints.push((seq, o)),
            HistoryKey::Cosignature { seq, .. } => listed.cosignatures.push((seq, o)),
            HistoryKey::TlogTile {
                level,
                index,
                width,
            } => listed.tlog.tiles.push((level, index, width, o)),
            HistoryKey::EntryBundle { index, width } => listed.tlog.bundles.push((index, width, o)),
            HistoryKey::TimestampQuery(seq) => {
                listed.timestamps.queries.insert(seq, o);
            }
            HistoryKey::TimestampReply(seq) => {
                listed.timestamps.replies.insert(seq, o);
            }
        }
    }
    let later = listed.later(store, cx).await?;
    out.extend(listed.beyond_tree(cx, later.tree_size));
    out.extend(missed(store, cx, &listed.index_keys).await?);
    let complete = complete_size(store, cx).await?;
    out.extend(missing_locators(store, cx, &listed.locators, complete).await?);
    let mut unfinished_seal = None;
    let mut seal_times = Vec::new();
    if cx.first() {
        out.extend(check_whole_tree(store, cx, &listed, complete, &later).await?);
        unfinished_seal = unfinished(cx, &listed.heads);
        let t = timestamps::check(store, cx, &listed.timestamps, later.seq).await?;
        out.extend(t.problems);
        seal_times = t.seal_times;
    }
    Ok(Checked {
        problems: out,
        unfinished_seal,
        seal_times,
    })
}

/// What only one shard checks: head markers, both tile layouts and the checkpoints.
async fn check_whole_tree(
    store: &dyn AtomicPublisher,
    cx: &Context<'_>,
    listed: &Listed<'_>,
    complete: u64,
    later: &Later,
) -> Result<Vec<Problem>> {
    let mut out = check_heads(cx, &listed.heads, later.seq);
    if !cx.chain.broken {
        let levels =
            crate::history::tiles::all_levels(&cx.chain.leaf_hashes(cx.chain.leaves.len()));
        let sizes = (complete, later.tree_size);
        let key_of: tree::TileKey = keys::tile_key;
        out.extend(check_tiles(store, &levels, &listed.tiles, sizes, key_of).await?);
        out.extend(tlog::check_tlog(store, cx, &levels, &listed.tlog, sizes).await?);
    }
    let marked: HashSet<u64> = listed.heads.iter().map(|(s, _)| *s).collect();
    let cps = &listed.checkpoints;
    out.extend(checkpoints::check_checkpoints(store, cx, cps, &marked, later.seq).await?);
    let cosigs = &listed.cosignatures;
    out.extend(cosignatures::check_cosignatures(store, cx, cosigs, later.seq).await?);
    Ok(out)
}

/// The listed history objects, sorted for the checks that need them all.
#[derive(Debug, Default)]
struct Listed<'a> {
    /// Index entries, by canonical key.
    index_keys: HashSet<String>,
    /// Leaves with a locator in the right place.
    locators: HashSet<u64>,
    /// Head markers: (seal, object).
    heads: Vec<(u64, &'a ObjectInfo)>,
    /// Tiles: (level, index, width, object).
    tiles: Vec<(u8, u64, u64, &'a ObjectInfo)>,
    /// C2SP checkpoints: (seal, object).
    checkpoints: Vec<(u64, &'a ObjectInfo)>,
    /// Cosigned checkpoints: (seal, object).
    cosignatures: Vec<(u64, &'a ObjectInfo)>,
    /// The tree in the C2SP layout.
    tlog: tlog::TlogListed<'a>,
    /// The seals' RFC 3161 requests and responses.
    timestamps: timestamps::Listed<'a>,
    /// Locators beyond the walked tree: (leaf, object).
    beyond: Vec<(u64, &'a ObjectInfo)>,
}

impl<'a> Listed<'a> {
    /// Locator `o` of pointer `pk` at `leaf_index`: noted, and its problems.
    fn locator(
        &mut self,
        cx: &Context<'_>,
        o: &'a ObjectInfo,
        leaf_index: u64,
        pk: &str,
    ) -> Vec<Problem> {
        let mut out = Vec::new();
        let misplaced = if cx.chain.broken {
            None
        } else {
            match cx.chain.leaves.get(leaf_index as usize) {
                // Judged below, against seals that landed after the walk.
                None => {
                    self.beyond.push((leaf_index, o));
                    None
                }
                Some(l) if l.key != pk => Some(format!(
                    "places {pk} at leaf {leaf_index}, which the seals give to {}",
                    l.key
                )),
                Some(_) => None,
            }
        };
        match misplaced {
            Some(w) => out.push(Problem::new(ProblemKind::BadLocator, &o.key, w)),
            None => {
                self.locators.insert(leaf_index);
            }
        }
        if o.size != 0 {
            out.push(Problem::new(
                ProblemKind::BadLocator,
                &o.key,
                format!("holds {} bytes; a locator is empty", o.size),
            ));
        }
        out
    }

    /// Locators beyond even the tree of the seals now (`tree_size` leaves).
    fn beyond_tree(&self, cx: &Context<'_>, tree_size: u64) -> Vec<Problem> {
        let walked = cx.chain.leaves.len() as u64;
        self.beyond
            .iter()
            .filter(|(leaf_index, _)| *leaf_index >= tree_size)
            .map(|(leaf_index, o)| {
                Problem::new(
                    ProblemKind::BadLocator,
                    &o.key,
                    format!("names leaf {leaf_index}, but the seals hold {walked} leaves"),
                )
            })
            .collect()
    }

    /// The newest seal and tree size now: read again only when something listed lies
    /// beyond the walked chain.
    async fn later(&self, store: &dyn AtomicPublisher, cx: &Context<'_>) -> Result<Later> {
        let walked = cx.chain.leaves.len() as u64;
        let head_seq = cx.chain.head().map_or(0, |(n, _)| n);
        if !self.beyond.is_empty()
            || self.heads.iter().any(|(seq, _)| *seq > head_seq)
            || self.checkpoints.iter().any(|(seq, _)| *seq > head_seq)
            || self
                .timestamps
                .queries
                .keys()
                .chain(self.timestamps.replies.keys())
                .any(|seq| *seq > head_seq)
            || self
                .tiles
                .iter()
                .chain(&self.tlog.tiles)
                .any(|&(level, index, width, _)| !tile_within(walked, level, index, width))
            || self
                .tlog
                .bundles
                .iter()
                .any(|&(index, width, _)| !tile_within(walked, 0, index, width))
        {
            later_seals(store, cx).await
        } else {
            Ok(Later {
                seq: head_seq,
                tree_size: walked,
            })
        }
    }
}

/// The newest seal and tree size including seals that landed after the chain was walked.
/// The listing is made after the walk (so that every sealed pointer is in it), so it can
/// hold the locators, tiles and head marker of a seal the walk did not see: those are not
/// judged by this verify (the next one walks that seal), while anything beyond even the
/// seals that exist now is a problem.
#[derive(Debug)]
struct Later {
    seq: u64,
    tree_size: u64,
}

/// Read the seals after the walked head (one GET of an absent key when none landed).
async fn later_seals(store: &dyn AtomicPublisher, cx: &Context<'_>) -> Result<Later> {
    let mut later = Later {
        seq: cx.chain.head().map_or(0, |(n, _)| n),
        tree_size: cx.chain.leaves.len() as u64,
    };
    while let Some(s) = crate::history::head::read_seal(store, later.seq + 1).await? {
        later.seq += 1;
        if let Ok(seal) = &s.seal {
            later.tree_size = later.tree_size.max(seal.tree_size);
        }
    }
    Ok(later)
}

/// What the history checks found.
#[derive(Debug, Default)]
pub(crate) struct Checked {
    /// Problems, each naming its object.
    pub problems: Vec<Problem>,
    /// The newest seal, when it has no head marker yet (see [`unfinished`]).
    pub unfinished_seal: Option<u64>,
    /// The seals' RFC 3161 times.
    pub seal_times: Vec<crate::audit::findings::SealTime>,
}

/// The tree size every tile and locator should exist for: that of the newest seal with a
/// head marker, when some seal of the new format completed (0 otherwise).
async fn complete_size(store: &dyn AtomicPublisher, cx: &Context<'_>) -> Result<u64> {
    if !cx
        .chain
        .seals
        .iter()
        .any(|s| s.seal.as_ref().is_ok_and(Seal::is_v2))
    {
        return Ok(0);
    }
    let Some(marked) = crate::history::head::newest_marker(store).await? else {
        return Ok(0);
    };
    Ok(cx
        .chain
        .seals
        .iter()
        .filter(|s| s.key_seq <= marked)
        .filter_map(|s| s.seal.as_ref().ok())
        .map(|s| s.tree_size)
        .max()
        .unwrap_or(0)
        .min(cx.chain.leaves.len() as u64))
}

/// The newest seal, when it has no head marker: a sealer (or a replication) stopped
/// between the seal and its marker. Not a problem (every seal, pointer and part is still
/// checked; what the marker vouches for is checked up to the newest marked seal), but
/// said, since `lineage seal` (or the next `lineage replicate`) finishes it.
fn unfinished(cx: &Context<'_>, heads: &[(u64, &ObjectInfo)]) -> Option<u64> {
    let newest = cx.chain.seals.last()?;
    let marked = heads.iter().any(|(s, _)| *s == newest.key_seq);
    let seal = newest.seal.as_ref().ok()?;
    (seal.is_v2() && !marked).then_some(newest.key_seq)
}
