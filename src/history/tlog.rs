//! The tree in the C2SP tlog-tiles layout, under `_lineage/tlog/tile/`: the hash tiles
//! (the same bytes as `_lineage/tiles/`, where a tlog client given the prefix
//! `_lineage/tlog/` reads them) and the entry bundles, whose entries are the leaves
//! themselves ([`crate::format::entries`]). Written create-only as a seal is completed,
//! from the seals alone; a store whose previous tree lacks them (written by earlier
//! versions) gets all of them rebuilt on its next seal ([`crate::history::complete`]).

use std::collections::BTreeMap;

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};

use crate::base::error::{Error, Result};
use crate::format::entries::{bundle, parse_bundle, ENTRY_BYTES};
use crate::format::keys::{self, TILE_WIDTH};
use crate::history::merkle::{self, Hash};
use crate::history::tiles::{all_levels, nodes_at, width_in, Tile};
use crate::publish::checked::publish_checked;
use crate::publish::{exists, AtomicPublisher};

/// Writes in flight at once.
const WRITES: usize = 32;

/// Publish the C2SP copies of `tiles` and the entry bundles that grow when `leaves` are
/// appended to a tree of `old_size` leaves. `NotFound` when the previous tree's objects are
/// not there (the caller rebuilds from every seal).
pub(crate) async fn publish(
    store: &dyn AtomicPublisher,
    old_size: u64,
    leaves: &[Hash],
    tiles: &[Tile],
) -> Result<()> {
    let prior = prior_leaves(store, old_size).await?;
    let mut objects: Vec<(String, Bytes)> = tiles
        .iter()
        .map(|t| {
            let key = keys::tlog_tile_key(t.level, t.index, t.hashes.len() as u64);
            (key, t.to_bytes())
        })
        .collect();
    objects.extend(bundles(old_size, prior, leaves));
    futures::stream::iter(objects)
        .map(|(key, bytes)| async move { publish_one(store, &key, bytes).await })
        .buffer_unordered(WRITES)
        .try_collect::<()>()
        .await
}

/// Publish the partial tiles and bundles at the right edge of each tree size in `sizes`
/// (the seals' sizes), over the tree whose leaves are `digests`: what a store gaining the
/// C2SP layout needs so that a client can check every older checkpoint too.
pub(crate) async fn publish_edges(
    store: &dyn AtomicPublisher,
    sizes: &[u64],
    digests: &[Hash],
) -> Result<()> {
    let hashes: Vec<Hash> = digests.iter().map(|d| merkle::leaf_hash(d)).collect();
    let levels = all_levels(&hashes);
    let mut objects: BTreeMap<String, Bytes> = BTreeMap::new();
    for &n in sizes {
        for (level, nodes) in levels.iter().enumerate() {
            let count = nodes_at(n, level as u8);
            let (index, from) = (count / TILE_WIDTH, count / TILE_WIDTH * TILE_WIDTH);
            if count == from || count as usize > nodes.len() {
                continue;
            }
            let key = keys::tlog_tile_key(level as u8, index, count - from);
            let hashes = &nodes[from as usize..count as usize];
            objects.insert(key, Bytes::from(hashes.concat()));
        }
        let (index, from) = (n / TILE_WIDTH, n / TILE_WIDTH * TILE_WIDTH);
        if n != from && n as usize <= digests.len() {
            let key = keys::entry_bundle_key(index, n - from);
            let leaves = &digests[from as usize..n as usize];
            objects.insert(key, Bytes::from(bundle(leaves)));
        }
    }
    futures::stream::iter(objects)
        .map(|(key, bytes)| async move { publish_one(store, &key, bytes).await })
        .buffer_unordered(WRITES)
        .try_collect::<()>()
        .await
}

/// The bundles from the one at the old right edge to the new right edge.
fn bundles(old_size: u64, mut prior: Vec<Hash>, leaves: &[Hash]) -> Vec<(String, Bytes)> {
    let new_size = old_size + leaves.len() as u64;
    let start = old_size / TILE_WIDTH * TILE_WIDTH;
    prior.extend_from_slice(leaves);
    let mut out = Vec::new();
    for t in start / TILE_WIDTH..new_size.div_ceil(TILE_WIDTH) {
        let from = (t * TILE_WIDTH - start) as usize;
        let to = (((t + 1) * TILE_WIDTH).min(new_size) - start) as usize;
        let width = (to - from) as u64;
        let key = keys::entry_bundle_key(t, width);
        out.push((key, Bytes::from(bundle(&prior[from..to]))));
    }
    out
}

/// The leaves of the old right-edge bundle (none when the old tree ends on a full one),
/// after checking that the previous tree's C2SP objects are there.
async fn prior_leaves(store: &dyn AtomicPublisher, old_size: u64) -> Result<Vec<Hash>> {
    if old_size == 0 {
        return Ok(Vec::new());
    }
    let last = (old_size - 1) / TILE_WIDTH;
    let edge = keys::tlog_tile_key(0, last, width_in(old_size, 0, last));
    if !exists(store, &edge).await? {
        return Err(Error::NotFound(format!(
            "{edge}: the previous tree has no C2SP tiles yet"
        )));
    }
    let width = old_size % TILE_WIDTH;
    if width == 0 {
        return Ok(Vec::new());
    }
    let key = keys::entry_bundle_key(old_size / TILE_WIDTH, width);
    let bytes = store
        .get_at_most(&key, width * ENTRY_BYTES as u64)
        .await?
        .ok_or_else(|| Error::NotFound(format!("{key}: the previous tree's entry bundle")))?;
    parse_bundle(&bytes)
        .filter(|l| l.len() as u64 == width)
        .ok_or_else(|| Error::Corrupt {
            what: "entry bundle",
            key,
            message: "not the tree's leaves; run `lineage verify`".into(),
        })
}

async fn publish_one(store: &dyn AtomicPublisher, key: &str, bytes: Bytes) -> Result<()> {
    let want = bytes.clone();
    publish_checked(store, key, bytes, |have| {
        if have == want.as_ref() {
            Ok(())
        } else {
            Err("holds other bytes than the seals give; run `lineage verify`".into())
        }
    })
    .await
    .map(|_| ())
}
