//! Completing a seal: after a seal object lands, its sealer writes what makes the new tree
//! cheap to read (a locator per new leaf, the hash tiles the tree grows by), the seal's
//! Delta version ([`crate::history::delta`]) and then, last, the seal's head marker. Everything written is a function of the seals alone, so any
//! sealer can complete a seal another one crashed in the middle of, and two completing the
//! same seal write identical objects (create-only: the second finds the first's bytes).

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};

use crate::base::error::{Error, ErrorKind, Result};
use crate::format::keys;
use crate::format::keys::kind::KeyKind;
use crate::history::delta::DeltaConflict;
use crate::history::merkle::{self, Hash};
use crate::history::seal::{read_seals, Seal, StoredSeal};
use crate::history::tiles::{self, Tile};
use crate::history::tlog;
use crate::publish::checked::publish_checked;
use crate::publish::AtomicPublisher;

/// Locator and tile writes in flight at once (small objects; a migration writes one
/// locator per commit ever sealed).
const WRITES: usize = 64;

/// One sealed leaf: its pointer key and the sha256 of the pointer as sealed.
pub type SealedLeaf = (String, String);

/// What completing wrote.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Completed {
    /// Locators written (or found already there).
    pub locators: u64,
    /// Tiles written (or found already there).
    pub tiles: u64,
    /// True when the whole tree was rebuilt (first seal of this format, or missing tiles).
    pub rebuilt: bool,
    /// A Delta version name held by an object not ours: the seal is complete without its
    /// version (the seal chain is the truth; the log is derived from it).
    pub delta_conflict: Option<DeltaConflict>,
}

fn leaf_hashes(leaves: &[SealedLeaf]) -> Result<Vec<Hash>> {
    Ok(leaf_digests(leaves)?
        .iter()
        .map(|d| merkle::leaf_hash(d))
        .collect())
}

/// The leaves themselves: the pointers' sha256 digests.
fn leaf_digests(leaves: &[SealedLeaf]) -> Result<Vec<Hash>> {
    leaves
        .iter()
        .map(|(k, d)| {
            merkle::parse_hash(d).ok_or_else(|| Error::Corrupt {
                what: "seal",
                key: k.clone(),
                message: "an entry without a valid sha256".into(),
            })
        })
        .collect()
}

/// Complete `seal`: from its own entries when the tiles at its predecessor's size are
/// there, else by rebuilding every tile and locator from all seals up to it.
pub async fn complete(store: &dyn AtomicPublisher, seal: &StoredSeal) -> Result<Completed> {
    let s = parsed(seal)?;
    crate::history::checkpoint::publish(store, seal.key_seq, s).await?;
    let old_size = s.tree_size.saturating_sub(s.entries.len() as u64);
    let leaves: Vec<SealedLeaf> = s
        .entries
        .iter()
        .map(|e| (e.key.clone(), e.sha256.to_lowercase()))
        .collect();
    match complete_growth(store, seal.key_seq, old_size, &leaves).await {
        Err(e) if e.kind() == ErrorKind::NotFound && old_size > 0 => {
            tracing::info!(seq = seal.key_seq, error = %e, "tiles of the previous tree missing; rebuilding every tile and locator");
            rebuild(store, seal.key_seq).await
        }
        r => r,
    }
}

fn parsed(seal: &StoredSeal) -> Result<&Seal> {
    seal.seal.as_ref().map_err(|m| Error::Corrupt {
        what: "seal",
        key: seal.key.clone(),
        message: m.clone(),
    })
}

/// Rebuild tiles and locators for the tree of seal `seq` from every seal up to it (O(n):
/// the first seal of this format on an older store, and the repair path).
pub async fn rebuild(store: &dyn AtomicPublisher, seq: u64) -> Result<Completed> {
    let seals = read_seals(store).await?;
    let mut leaves: Vec<SealedLeaf> = Vec::new();
    let mut sizes = Vec::new();
    for s in seals.iter().take_while(|s| s.key_seq <= seq) {
        let s = parsed(s)?;
        sizes.push(s.tree_size);
        leaves.extend(
            s.entries
                .iter()
                .map(|e| (e.key.clone(), e.sha256.to_lowercase())),
        );
    }
    // Every earlier seal's right edge in the C2SP layout, so its checkpoint can be checked.
    tlog::publish_edges(store, &sizes, &leaf_digests(&leaves)?).await?;
    let mut c = complete_growth(store, seq, 0, &leaves).await?;
    c.rebuilt = true;
    Ok(c)
}

/// Write locators and tiles for `leaves` appended to a tree of `old_size` leaves, the Delta
/// versions up to `seq`, then the head marker of seal `seq`.
pub async fn complete_growth(
    store: &dyn AtomicPublisher,
    seq: u64,
    old_size: u64,
    leaves: &[SealedLeaf],
) -> Result<Completed> {
    let hashes = leaf_hashes(leaves)?;
    let new_tiles = tiles::growth(old_size, &hashes, |level, index, width| async move {
        tiles::read_tile(store, level, index, width, width).await
    })
    .await?;
    let locators: Vec<String> = leaves
        .iter()
        .enumerate()
        .filter_map(|(i, (k, _))| match keys::classify(k) {
            KeyKind::Pointer { run_id, commit_id } => {
                Some(keys::leaf_key(&commit_id, old_size + i as u64, &run_id))
            }
            _ => None,
        })
        .collect();
    let mut done = Completed {
        locators: locators.len() as u64,
        tiles: new_tiles.len() as u64,
        ..Completed::default()
    };
    futures::stream::iter(locators)
        .map(|key| async move { store.put_create(&key, Bytes::new()).await.map(|_| ()) })
        .buffer_unordered(WRITES)
        .try_collect::<()>()
        .await?;
    publish_tlog(store, seq, old_size, &leaf_digests(leaves)?, &new_tiles).await?;
    futures::stream::iter(new_tiles)
        .map(|t| async move { publish_tile(store, &t).await })
        .buffer_unordered(WRITES)
        .try_collect::<()>()
        .await?;
    // The seal's Delta version (and any before it the log lacks), before the marker: a
    // marked seal has its version, unless an object not ours holds a version's name (a
    // plant must not stop sealing: the conflict is named, and `verify` names the object).
    done.delta_conflict = delta_log(store, seq).await?;
    store.put_create(&keys::head_key(seq), Bytes::new()).await?;
    tracing::info!(
        seq,
        locators = done.locators,
        tiles = done.tiles,
        "seal complete"
    );
    Ok(done)
}

/// The tree's growth in the C2SP layout ([`tlog`]); when the previous tree has none (a
/// store sealed by earlier versions), first everything before seal `seq`, every older
/// seal's right edge included.
async fn publish_tlog(
    store: &dyn AtomicPublisher,
    seq: u64,
    old_size: u64,
    digests: &[Hash],
    new_tiles: &[Tile],
) -> Result<()> {
    match tlog::publish(store, old_size, digests, new_tiles).await {
        Err(e) if e.kind() == ErrorKind::NotFound && old_size > 0 => {
            tracing::info!(seq, error = %e, "writing the C2SP tiles of the whole history");
            backfill_tlog(store, seq).await?;
            tlog::publish(store, old_size, digests, new_tiles).await
        }
        r => r,
    }
}

/// The C2SP layout of the tree of the seals before `seq`.
async fn backfill_tlog(store: &dyn AtomicPublisher, seq: u64) -> Result<()> {
    let seals = read_seals(store).await?;
    let (mut leaves, mut sizes): (Vec<SealedLeaf>, Vec<u64>) = (Vec::new(), Vec::new());
    for s in seals.iter().take_while(|s| s.key_seq < seq) {
        let s = parsed(s)?;
        sizes.push(s.tree_size);
        leaves.extend(
            s.entries
                .iter()
                .map(|e| (e.key.clone(), e.sha256.to_lowercase())),
        );
    }
    let digests = leaf_digests(&leaves)?;
    let hashes: Vec<Hash> = digests.iter().map(|d| merkle::leaf_hash(d)).collect();
    let old = tiles::growth(0, &hashes, |_, _, _| async { Ok(Vec::new()) }).await?;
    tlog::publish(store, 0, &digests, &old).await?;
    tlog::publish_edges(store, &sizes, &digests).await
}

/// [`crate::history::delta::complete_log`] for seal `seq`; a version not ours is returned
/// (and logged), not an error.
async fn delta_log(store: &dyn AtomicPublisher, seq: u64) -> Result<Option<DeltaConflict>> {
    match crate::history::delta::complete_log(store, seq).await {
        Ok(_) => Ok(None),
        Err(e) => match crate::history::delta::foreign_version(&e) {
            Some(c) => {
                tracing::warn!(seq, version = c.version, reason = %c.reason, "a Delta version name is held by an object not ours: seal {seq} is complete without its Delta version");
                Ok(Some(c))
            }
            None => Err(e),
        },
    }
}

async fn publish_tile(store: &dyn AtomicPublisher, t: &Tile) -> Result<()> {
    let bytes = t.to_bytes();
    let want = bytes.clone();
    publish_checked(store, &t.key(), bytes, |have| {
        if have == want.as_ref() {
            Ok(())
        } else {
            Err("the tile holds other hashes than the seals give; run `lineage verify`".into())
        }
    })
    .await
    .map(|_| ())
}
