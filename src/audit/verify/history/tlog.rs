//! What a full `verify` checks of the tree in the C2SP tlog-tiles layout
//! (`_lineage/tlog/tile/`): each hash tile as the tree's hashes and each entry bundle as
//! the tree's leaves (`bad_tile`, naming the object), and none missing that the newest
//! complete seal's tree needs, once the store has them at all (a store sealed only by
//! earlier versions gets them on its next seal).

use std::collections::HashMap;

use crate::audit::findings::{Problem, ProblemKind};
use crate::audit::verify::history::context::Context;
use crate::base::error::{Error, Result};
use crate::format::entries::{bundle, ENTRY_BYTES};
use crate::format::keys::{self, TILE_WIDTH};
use crate::history::merkle::{self, Hash};
use crate::history::tiles::width_in;
use crate::publish::{AtomicPublisher, ObjectInfo};

use super::tree::{check_tiles, tile_within};

/// The listed C2SP objects of the tree.
#[derive(Debug, Default)]
pub(super) struct TlogListed<'a> {
    /// Hash tiles: (level, index, width, object).
    pub tiles: Vec<(u8, u64, u64, &'a ObjectInfo)>,
    /// Entry bundles: (index, width, object).
    pub bundles: Vec<(u64, u64, &'a ObjectInfo)>,
}

/// Check them against the tree (`levels`: its hashes per tile level); `required`: whether
/// missing ones are named; `complete`, `later`: tree sizes (see `check_tiles`).
pub(super) async fn check_tlog(
    store: &dyn AtomicPublisher,
    cx: &Context<'_>,
    levels: &[Vec<Hash>],
    listed: &TlogListed<'_>,
    (complete, later): (u64, u64),
) -> Result<Vec<Problem>> {
    let required = !listed.tiles.is_empty()
        || !listed.bundles.is_empty()
        || cx
            .chain
            .seals
            .iter()
            .any(|s| s.seal.as_ref().is_ok_and(|s| s.checkpoint.is_some()));
    let need = if required { complete } else { 0 };
    let mut out = check_tiles(
        store,
        levels,
        &listed.tiles,
        (need, later),
        keys::tlog_tile_key,
    )
    .await?;
    let leaves: Vec<Hash> = cx
        .chain
        .leaves
        .iter()
        .map(|l| merkle::parse_hash(&l.digest).unwrap_or_default())
        .collect();
    let mut widest: HashMap<u64, u64> = HashMap::new();
    for &(index, width, o) in &listed.bundles {
        let w = widest.entry(index).or_insert(0);
        *w = (*w).max(width);
        out.extend(
            judge_bundle(store, &leaves, later, (index, width), &o.key, Some(o.size)).await?,
        );
    }
    for index in 0..need.div_ceil(TILE_WIDTH) {
        let w = width_in(need, 0, index);
        if widest.get(&index).copied().unwrap_or(0) < w {
            let key = keys::entry_bundle_key(index, w);
            out.extend(judge_bundle(store, &leaves, later, (index, w), &key, None).await?);
        }
    }
    Ok(out)
}

/// One entry bundle against the tree's leaves: `size` as listed, `None` when not listed
/// (looked up again: the seal may have been finished after the listing).
async fn judge_bundle(
    store: &dyn AtomicPublisher,
    leaves: &[Hash],
    later: u64,
    (index, width): (u64, u64),
    key: &str,
    size: Option<u64>,
) -> Result<Option<Problem>> {
    let from = (index * TILE_WIDTH) as usize;
    let Some(want) = leaves.get(from..from + width as usize) else {
        if tile_within(later, 0, index, width) {
            return Ok(None);
        }
        let why = "lies beyond the tree the seals give";
        return Ok(Some(Problem::new(ProblemKind::BadTile, key, why)));
    };
    let want = bundle(want);
    let max = width * ENTRY_BYTES as u64;
    let have = match size {
        Some(s) if s != max => Err(s),
        _ => match store.get_at_most(key, max).await {
            Ok(h) => Ok(h),
            Err(Error::TooLarge { size, .. }) => Err(size),
            Err(e) => return Err(e),
        },
    };
    let why = match have {
        Ok(Some(h)) if h.as_ref() == want.as_slice() => return Ok(None),
        Ok(None) => "missing: the newest complete seal's tree needs this entry bundle; `lineage seal --rescan` writes it".to_string(),
        Ok(Some(h)) => changed(h.len() as u64, width),
        Err(s) => changed(s, width),
    };
    Ok(Some(Problem::new(ProblemKind::BadTile, key, why)))
}

fn changed(size: u64, width: u64) -> String {
    format!(
        "an entry bundle of {size} bytes that are not the tree's {width} leaves (it was changed)"
    )
}
