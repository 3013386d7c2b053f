//! What a full `verify` checks of the tree's objects: locators, head markers and tiles.

use std::collections::{HashMap, HashSet};

use futures::StreamExt;

use crate::audit::findings::{Problem, ProblemKind};
use crate::audit::verify::history::context::Context;
use crate::base::error::Result;
use crate::format::keys;
use crate::format::keys::kind::KeyKind;
use crate::format::keys::TILE_WIDTH;
use crate::history::merkle::Hash;
use crate::history::pointers::READ_CONCURRENCY;
use crate::history::tiles::{self, width_in};
use crate::publish::{exists, AtomicPublisher, ObjectInfo};

/// Why a tile's bytes `have` are not the tree's `width` hashes.
fn changed(size: u64, width: u64) -> String {
    format!(
        "{size} bytes that are not the tree's {width} hashes (the tile was changed); proofs from it would fail"
    )
}

/// Whether tile (`level`, `index`) of `width` lies within a tree of `size` leaves.
pub(super) fn tile_within(size: u64, level: u8, index: u64, width: u64) -> bool {
    index * TILE_WIDTH + width <= tiles::nodes_at(size, level)
}

/// Locators the newest complete seal's tree needs that the listing lacks, each looked up
/// again before it is named: the head marker is read after the listing, so a seal finished
/// in between has a marker but locators the listing missed.
pub(super) async fn missing_locators(
    store: &dyn AtomicPublisher,
    cx: &Context<'_>,
    present: &HashSet<u64>,
    complete: u64,
) -> Result<Vec<Problem>> {
    if cx.chain.broken {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for (i, l) in cx.chain.leaves.iter().enumerate().take(complete as usize) {
        if present.contains(&(i as u64)) {
            continue;
        }
        let KeyKind::Pointer { run_id, commit_id } = keys::classify(&l.key) else {
            continue;
        };
        if cx.scope.is_some_and(|s| !s.owns_locator(&commit_id)) {
            continue;
        }
        let key = keys::leaf_key(&commit_id, i as u64, &run_id);
        let v1 = keys::leaf_key_in(keys::Layout::V1, &commit_id, i as u64, &run_id);
        if exists(store, &key).await? || exists(store, &v1).await? {
            continue;
        }
        out.push(Problem::new(
            ProblemKind::BadLocator,
            &key,
            format!(
                "missing: {} is sealed at leaf {i}; `lineage seal --rescan` writes it",
                l.key
            ),
        ));
    }
    Ok(out)
}

/// Head markers: empty, each of a seal that exists (`later`: the newest seal now, which
/// may have landed after the walk).
pub(super) fn check_heads(
    cx: &Context<'_>,
    heads: &[(u64, &ObjectInfo)],
    later: u64,
) -> Vec<Problem> {
    let mut out = Vec::new();
    let seqs: HashSet<u64> = cx.chain.seals.iter().map(|s| s.key_seq).collect();
    for (seq, o) in heads {
        if o.size != 0 {
            out.push(Problem::new(
                ProblemKind::BadHeadMarker,
                &o.key,
                format!("holds {} bytes; a head marker is empty", o.size),
            ));
        } else if !seqs.contains(seq)
            && cx.chain.head().is_none_or(|(n, _)| *seq > n)
            && *seq > later
        {
            // (A missing seal below the newest is named by the chain: seal_missing.)
            out.push(Problem::new(
                ProblemKind::BadHeadMarker,
                &o.key,
                format!("marks seal {seq}, which is not in the store"),
            ));
        }
    }
    out
}

/// The key of a tile (level, index, width) in one of the two layouts.
pub(super) type TileKey = fn(u8, u64, u64) -> String;

/// Tiles: each listed one against the tree's hashes (`levels`), and those the newest
/// complete seal's tree (`complete` leaves) needs that the listing lacks (at `key_of`);
/// `later`: the tree size now.
pub(super) async fn check_tiles(
    store: &dyn AtomicPublisher,
    levels: &[Vec<Hash>],
    listed: &[(u8, u64, u64, &ObjectInfo)],
    (complete, later): (u64, u64),
    key_of: TileKey,
) -> Result<Vec<Problem>> {
    let mut out = Vec::new();
    let read: Vec<Result<Option<Problem>>> = futures::stream::iter(listed)
        .map(|&(level, index, width, o)| judge_tile(store, levels, later, (level, index, width), o))
        .buffer_unordered(READ_CONCURRENCY)
        .collect()
        .await;
    for r in read {
        out.extend(r?);
    }
    out.extend(missing_tiles(store, levels, listed, complete, key_of).await?);
    Ok(out)
}

/// Listed tile `o` at (`level`, `index`, `width`) against the tree's hashes `levels`.
async fn judge_tile(
    store: &dyn AtomicPublisher,
    levels: &[Vec<Hash>],
    later: u64,
    (level, index, width): (u8, u64, u64),
    o: &ObjectInfo,
) -> Result<Option<Problem>> {
    let from = (index * TILE_WIDTH) as usize;
    let want = levels
        .get(level as usize)
        .and_then(|l| l.get(from..from + width as usize));
    let Some(want) = want else {
        // Of a seal that landed after the walk: the next verify judges it.
        if tile_within(later, level, index, width) {
            return Ok(None);
        }
        return Ok(Some(Problem::new(
            ProblemKind::BadTile,
            &o.key,
            "lies beyond the tree the seals give",
        )));
    };
    // Not the size of its width (as listed, or when read): changed, not read.
    let max = width * 32;
    let have = if o.size != max {
        Err(o.size)
    } else {
        match store.get_at_most(&o.key, max).await {
            Ok(have) => Ok(have.unwrap_or_default()),
            Err(crate::base::error::Error::TooLarge { size, .. }) => Err(size),
            Err(e) => return Err(e),
        }
    };
    let size = match &have {
        Ok(h) if tiles::parse_tile(h).as_deref() == Some(want) => return Ok(None),
        Ok(h) => h.len() as u64,
        Err(size) => *size,
    };
    Ok(Some(Problem::new(
        ProblemKind::BadTile,
        &o.key,
        changed(size, width),
    )))
}

/// The tiles a tree of `complete` leaves needs that are not `listed` (widest per place),
/// each looked up again before it is named.
async fn missing_tiles(
    store: &dyn AtomicPublisher,
    levels: &[Vec<Hash>],
    listed: &[(u8, u64, u64, &ObjectInfo)],
    complete: u64,
    key_of: TileKey,
) -> Result<Vec<Problem>> {
    let mut out = Vec::new();
    let mut widest: HashMap<(u8, u64), u64> = HashMap::new();
    for &(level, index, width, _) in listed {
        let w = widest.entry((level, index)).or_insert(0);
        *w = (*w).max(width);
    }
    for (level, nodes) in levels.iter().enumerate() {
        let level = level as u8;
        let n = tiles::nodes_at(complete, level);
        if n == 0 {
            continue;
        }
        for index in 0..n.div_ceil(TILE_WIDTH) {
            let need = width_in(complete, level, index);
            if widest.get(&(level, index)).copied().unwrap_or(0) < need && nodes.len() as u64 >= n {
                // Looked up again: the seal may have been finished after the listing.
                let key = key_of(level, index, need);
                let from = (index * TILE_WIDTH) as usize;
                let want = nodes.get(from..from + need as usize);
                let why = match store.get_at_most(&key, need * 32).await {
                    Ok(None) => "missing: the newest complete seal's tree needs it; `lineage seal --rescan` writes it".to_string(),
                    Ok(Some(have)) if tiles::parse_tile(&have).as_deref() == want => continue,
                    Ok(Some(have)) => changed(have.len() as u64, need),
                    Err(crate::base::error::Error::TooLarge { size, .. }) => changed(size, need),
                    Err(e) => return Err(e),
                };
                out.push(Problem::new(ProblemKind::BadTile, &key, why));
            }
        }
    }
    Ok(out)
}
