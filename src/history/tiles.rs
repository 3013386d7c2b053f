//! Hash tiles: the nodes of the Merkle tree stored 256 to an object, as tiled transparency
//! logs store them (C2SP tlog-tiles): a tile of level L holds, left to right, the hashes of
//! up to 256 consecutive perfect subtrees of height 8L (level 0: the leaf hashes). A tile
//! that is not full yet is stored under its width (`<N>.p/<W>`); every width is its own
//! create-only object, and a narrower tile is a prefix of a wider one, so nothing is ever
//! rewritten. Any perfect subtree's hash is then one tile read away, and an inclusion proof
//! needs O(log n) tiles (about three at a million commits).

use std::collections::{BTreeSet, HashMap};

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};

use crate::base::error::{Error, Result};
use crate::format::keys;
use crate::format::keys::history::HistoryKey;
use crate::format::keys::kind::KeyKind;
use crate::format::keys::TILE_WIDTH;
use crate::history::merkle::{self, Hash};
use crate::publish::AtomicPublisher;

/// Tile reads in flight at once.
const TILE_READS: usize = 16;

/// One tile: its place and its hashes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tile {
    /// Level (nodes of height 8 × level).
    pub level: u8,
    /// Position within the level.
    pub index: u64,
    /// The hashes, at most 256.
    pub hashes: Vec<Hash>,
}

impl Tile {
    /// Its key (full, or partial at its width).
    pub fn key(&self) -> String {
        keys::tile_key(self.level, self.index, self.hashes.len() as u64)
    }

    /// The stored bytes: the hashes concatenated.
    pub fn to_bytes(&self) -> Bytes {
        Bytes::from(self.hashes.concat())
    }
}

/// Split stored tile bytes into hashes; `None` unless a whole number of hashes.
pub fn parse_tile(bytes: &[u8]) -> Option<Vec<Hash>> {
    if !bytes.len().is_multiple_of(32) {
        return None;
    }
    bytes.chunks(32).map(|c| <Hash>::try_from(c).ok()).collect()
}

/// Nodes at `level` in a tree of `size` leaves (perfect subtrees of height 8 × level).
pub fn nodes_at(size: u64, level: u8) -> u64 {
    size.checked_shr(8 * u32::from(level)).unwrap_or(0)
}

/// The width a tile has in a tree of `size` leaves (0 when it does not exist yet).
pub fn width_in(size: u64, level: u8, index: u64) -> u64 {
    nodes_at(size, level)
        .saturating_sub(index * TILE_WIDTH)
        .min(TILE_WIDTH)
}

/// The tiles a tree that grows from `old_size` to `old_size + new_leaves.len()` leaves
/// adds, per level: the partial tile at the old right edge extended, every tile completed,
/// and the new right-edge partial tile. `prior` gives the old right-edge tile of a level
/// (its first `width` hashes), read from the store by the caller's choice.
pub async fn growth<'a, F, Fut>(
    old_size: u64,
    new_leaves: &[Hash],
    mut prior: F,
) -> Result<Vec<Tile>>
where
    F: FnMut(u8, u64, u64) -> Fut,
    Fut: std::future::Future<Output = Result<Vec<Hash>>> + 'a,
{
    let new_size = old_size + new_leaves.len() as u64;
    let mut out = Vec::new();
    let mut fresh: Vec<Hash> = new_leaves.to_vec();
    let mut level = 0u8;
    loop {
        let (b, e) = (nodes_at(old_size, level), nodes_at(new_size, level));
        if e == 0 || b == e {
            break;
        }
        let s = b / TILE_WIDTH * TILE_WIDTH;
        let mut nodes = if b > s {
            prior(level, b / TILE_WIDTH, b - s).await?
        } else {
            Vec::new()
        };
        nodes.extend(fresh);
        for t in s / TILE_WIDTH..=(e - 1) / TILE_WIDTH {
            let from = (t * TILE_WIDTH - s) as usize;
            let to = ((t + 1) * TILE_WIDTH).min(e) - s;
            out.push(Tile {
                level,
                index: t,
                hashes: nodes[from..to as usize].to_vec(),
            });
        }
        fresh = (b >> 8..e >> 8)
            .map(|k| {
                let from = (k * TILE_WIDTH - s) as usize;
                merkle::root_of_leaf_hashes(&nodes[from..from + TILE_WIDTH as usize])
            })
            .collect();
        level += 1;
    }
    Ok(out)
}

/// Read the first `min_width` hashes of a tile: the version of width `hint` (what the
/// caller's tree has), else the full tile, else the narrowest stored version wide enough.
pub async fn read_tile(
    store: &dyn AtomicPublisher,
    level: u8,
    index: u64,
    min_width: u64,
    hint: u64,
) -> Result<Vec<Hash>> {
    let mut tried = Vec::new();
    for w in [hint, TILE_WIDTH] {
        if w < min_width || tried.contains(&w) {
            continue;
        }
        tried.push(w);
        let key = keys::tile_key(level, index, w);
        if let Some(bytes) = get_tile(store, &key, w).await? {
            return take_width(&key, &bytes, w, min_width);
        }
    }
    let prefix = keys::tile_partials_prefix(level, index);
    let widths: BTreeSet<u64> = store
        .list(&prefix)
        .await?
        .into_iter()
        .filter_map(|o| match keys::classify(&o.key) {
            KeyKind::History(HistoryKey::Tile { width, .. }) if width >= min_width => Some(width),
            _ => None,
        })
        .collect();
    for w in widths {
        let key = keys::tile_key(level, index, w);
        if let Some(bytes) = get_tile(store, &key, w).await? {
            return take_width(&key, &bytes, w, min_width);
        }
    }
    Err(Error::NotFound(format!(
        "tile {} (level {level}, {min_width} hashes or more); `lineage seal --rescan` writes missing tiles",
        keys::tile_key(level, index, TILE_WIDTH)
    )))
}

/// A tile of `width` hashes is exactly 32 bytes a hash: one larger is refused unread.
async fn get_tile(store: &dyn AtomicPublisher, key: &str, width: u64) -> Result<Option<Bytes>> {
    let max = width.saturating_mul(32);
    store.get_at_most(key, max).await.map_err(|e| match e {
        Error::TooLarge { size, .. } => Error::Corrupt {
            what: "tile",
            key: key.to_string(),
            message: format!("{size} bytes; a tile of {width} hashes is {max} (not read)").into(),
        },
        e => e,
    })
}

fn take_width(key: &str, bytes: &[u8], width: u64, min_width: u64) -> Result<Vec<Hash>> {
    match parse_tile(bytes) {
        Some(mut h) if h.len() as u64 == width => {
            h.truncate(min_width as usize);
            Ok(h)
        }
        _ => Err(Error::Corrupt {
            what: "tile",
            key: key.to_string(),
            message: format!(
                "{} bytes, not {width} hashes of 32 bytes (run `lineage verify`)",
                bytes.len()
            )
            .into(),
        }),
    }
}

/// A perfect subtree: height `h` (2^h leaves), index `k` (its leaves start at k × 2^h).
type Subtree = (u32, u64);

/// The tile a subtree's hash is computed from: (level, index, first node, node count).
fn tile_of(st: Subtree) -> (u8, u64, u64, u64) {
    let (h, k) = st;
    let level = (h / 8) as u8;
    let r = h % 8;
    let first = k << r;
    (level, first / TILE_WIDTH, first % TILE_WIDTH, 1 << r)
}

/// The RFC 9162 audit path of `leaf` in a tree of `size` leaves, with the hashes of
/// perfect subtrees from `hash_of`. Ranges of the recursion are always aligned, so every
/// hash the path needs is a perfect subtree or a fold of perfect subtrees.
fn path_with(leaf: u64, size: u64, hash_of: &mut dyn FnMut(Subtree) -> Hash) -> Vec<Hash> {
    fn walk(
        m: u64,
        lo: u64,
        hi: u64,
        out: &mut Vec<Hash>,
        hash_of: &mut dyn FnMut(Subtree) -> Hash,
    ) {
        let n = hi - lo;
        if n <= 1 {
            return;
        }
        let k = split(n);
        if m < lo + k {
            walk(m, lo, lo + k, out, hash_of);
            out.push(mth(lo + k, hi, hash_of));
        } else {
            walk(m, lo + k, hi, out, hash_of);
            out.push(mth(lo, lo + k, hash_of));
        }
    }
    let mut out = Vec::new();
    walk(leaf, 0, size, &mut out, hash_of);
    out
}

/// The hash of leaves `lo..hi` (an aligned range: a perfect subtree or a fold of them).
fn mth(lo: u64, hi: u64, hash_of: &mut dyn FnMut(Subtree) -> Hash) -> Hash {
    let n = hi - lo;
    if n.is_power_of_two() {
        return hash_of((n.trailing_zeros(), lo / n));
    }
    let k = split(n);
    let left = mth(lo, lo + k, hash_of);
    let right = mth(lo + k, hi, hash_of);
    merkle::node_hash(&left, &right)
}

/// The RFC 9162 §2.1.4.1 consistency proof from the tree of the first `m` leaves to the
/// tree of `n` (0 < m <= n), with the hashes of perfect subtrees from `hash_of`: the
/// recursion's ranges are aligned as the audit path's are.
fn consistency_with(m: u64, n: u64, hash_of: &mut dyn FnMut(Subtree) -> Hash) -> Vec<Hash> {
    fn sub(
        m: u64,
        lo: u64,
        hi: u64,
        whole: bool,
        out: &mut Vec<Hash>,
        hash_of: &mut dyn FnMut(Subtree) -> Hash,
    ) {
        let n = hi - lo;
        if m == n {
            if !whole {
                out.push(mth(lo, hi, hash_of));
            }
            return;
        }
        let k = split(n);
        if m <= k {
            sub(m, lo, lo + k, whole, out, hash_of);
            out.push(mth(lo + k, hi, hash_of));
        } else {
            sub(m - k, lo + k, hi, false, out, hash_of);
            out.push(mth(lo, lo + k, hash_of));
        }
    }
    let mut out = Vec::new();
    sub(m, 0, n, true, &mut out, hash_of);
    out
}

/// A consistency proof from the tree of `m` leaves to the tree of `n` from the tiles of
/// the tree of `n` (empty when `m` is 0 or `n`): O(log n) hashes from at most two tiles a level, each read once, all
/// at once (what `prove --consistency` and `verify --trust-expected-head` read).
pub async fn consistency_from_tiles(
    store: &dyn AtomicPublisher,
    m: u64,
    n: u64,
) -> Result<Vec<Hash>> {
    if m > n {
        return Err(Error::internal(format!(
            "a consistency proof from a tree of {m} to one of {n}"
        )));
    }
    if m == 0 || m == n {
        // RFC 9162: the empty tree and the tree itself need no hashes (a witness that has
        // seen nothing yet, or is at this size already).
        return Ok(Vec::new());
    }
    let mut needed: Vec<Subtree> = Vec::new();
    consistency_with(m, n, &mut |st| {
        needed.push(st);
        [0; 32]
    });
    let fetched = fetch(store, n, &needed).await?;
    Ok(consistency_with(m, n, &mut |st| subtree_hash(&fetched, st)))
}

/// Largest power of two strictly below `n` (n >= 2).
fn split(n: u64) -> u64 {
    1 << (63 - (n - 1).leading_zeros())
}

/// An inclusion proof from tiles: the leaf hash stored for `leaf` and its audit path in
/// the tree of `size` leaves. Reads each tile the path needs once, all at once.
pub async fn inclusion_from_tiles(
    store: &dyn AtomicPublisher,
    leaf: u64,
    size: u64,
) -> Result<(Hash, Vec<Hash>)> {
    if leaf >= size {
        return Err(Error::internal(format!(
            "leaf {leaf} outside a tree of {size}"
        )));
    }
    // First pass: which subtrees (hence tiles) the path needs.
    let mut needed: Vec<Subtree> = vec![(0, leaf)];
    path_with(leaf, size, &mut |st| {
        needed.push(st);
        [0; 32]
    });
    let fetched = fetch(store, size, &needed).await?;
    let mut hash_of = |st: Subtree| subtree_hash(&fetched, st);
    let leaf_hash = hash_of((0, leaf));
    Ok((leaf_hash, path_with(leaf, size, &mut hash_of)))
}

/// The frontier of a tree of `size` leaves (its perfect subtrees, largest first), from the
/// tiles: one read per level. What `verify --since-seal` compares with the newest seal.
pub async fn frontier_from_tiles(store: &dyn AtomicPublisher, size: u64) -> Result<Vec<Hash>> {
    let mut needed = Vec::new();
    let mut start = 0u64;
    for h in (0..64u32).rev() {
        if size >> h & 1 == 1 {
            needed.push((h, start >> h));
            start += 1 << h;
        }
    }
    let fetched = fetch(store, size, &needed).await?;
    Ok(needed
        .iter()
        .map(|st| subtree_hash(&fetched, *st))
        .collect())
}

type Fetched = HashMap<(u8, u64), Vec<Hash>>;

/// Read every tile the subtrees need, each once, at once.
async fn fetch(store: &dyn AtomicPublisher, size: u64, needed: &[Subtree]) -> Result<Fetched> {
    let mut tiles: HashMap<(u8, u64), u64> = HashMap::new();
    for st in needed {
        let (level, index, first, count) = tile_of(*st);
        let w = tiles.entry((level, index)).or_insert(0);
        *w = (*w).max(first + count);
    }
    futures::stream::iter(tiles)
        .map(|((level, index), min)| async move {
            let hint = width_in(size, level, index);
            let h = read_tile(store, level, index, min, hint).await?;
            Ok::<_, Error>(((level, index), h))
        })
        .buffer_unordered(TILE_READS)
        .try_collect()
        .await
}

fn subtree_hash(fetched: &Fetched, st: Subtree) -> Hash {
    let (level, index, first, count) = tile_of(st);
    fetched
        .get(&(level, index))
        .and_then(|t| t.get(first as usize..(first + count) as usize))
        .map_or([0; 32], merkle::root_of_leaf_hashes)
}

/// Every hash of every level of the tree over `leaves`, as the tiles hold them: level L
/// lists the roots of its perfect subtrees of height 8L, left to right.
pub fn all_levels(leaves: &[Hash]) -> Vec<Vec<Hash>> {
    let mut levels = vec![leaves.to_vec()];
    loop {
        let below = levels.last().map_or(&[][..], |v| v.as_slice());
        if below.len() < TILE_WIDTH as usize {
            break;
        }
        let up: Vec<Hash> = below
            .chunks_exact(TILE_WIDTH as usize)
            .map(merkle::root_of_leaf_hashes)
            .collect();
        levels.push(up);
    }
    levels
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tile_widths_follow_the_tree_size_and_bytes_round_trip() {
        // Level 0 tiles hold leaves, level 1 the roots of 256-leaf subtrees.
        assert_eq!(nodes_at(0, 0), 0);
        assert_eq!(nodes_at(255, 1), 0);
        assert_eq!(nodes_at(256, 1), 1);
        assert_eq!(nodes_at(65_536, 2), 1);
        assert_eq!(nodes_at(u64::MAX, 8), 0, "no level past 2^64");
        assert_eq!(width_in(300, 0, 0), 256);
        assert_eq!(width_in(300, 0, 1), 44);
        assert_eq!(width_in(300, 0, 2), 0);
        assert_eq!(width_in(300, 1, 0), 1);
        let hashes: Vec<Hash> = (0u8..3).map(|i| [i; 32]).collect();
        let t = Tile {
            level: 0,
            index: 1,
            hashes: hashes.clone(),
        };
        assert_eq!(t.key(), keys::tile_key(0, 1, 3));
        assert_eq!(parse_tile(&t.to_bytes()), Some(hashes));
        assert_eq!(parse_tile(&[0u8; 33]), None, "not a whole number of hashes");
    }

    #[test]
    fn consistency_from_perfect_subtrees_is_the_proof_from_the_leaves() {
        let leaves: Vec<Hash> = (0u32..1100)
            .map(|i| merkle::leaf_hash(&i.to_be_bytes()))
            .collect();
        for (m, n) in [
            (1, 1),
            (1, 2),
            (3, 7),
            (256, 257),
            (300, 1100),
            (512, 1024),
            (1099, 1100),
        ] {
            let mut hash_of = |(h, k): Subtree| {
                let w = 1usize << h;
                merkle::root_of_leaf_hashes(&leaves[k as usize * w..(k as usize + 1) * w])
            };
            let got = consistency_with(m, n, &mut hash_of);
            let want = merkle::consistency_proof(&leaves[..n as usize], m as usize).unwrap();
            assert_eq!(got, want, "{m} -> {n}");
            let (old, new) = (
                merkle::root_of_leaf_hashes(&leaves[..m as usize]),
                merkle::root_of_leaf_hashes(&leaves[..n as usize]),
            );
            assert!(merkle::verify_consistency(m, n, &old, &new, &got));
        }
    }

    #[test]
    fn every_level_holds_the_roots_of_its_perfect_subtrees() {
        let leaves: Vec<Hash> = (0u32..600)
            .map(|i| merkle::leaf_hash(&i.to_be_bytes()))
            .collect();
        let levels = all_levels(&leaves);
        assert_eq!(
            levels.len(),
            2,
            "600 leaves: a level 1 of two full subtrees"
        );
        assert_eq!(levels[0], leaves);
        assert_eq!(
            levels[1],
            vec![
                merkle::root_of_leaf_hashes(&leaves[..256]),
                merkle::root_of_leaf_hashes(&leaves[256..512]),
            ]
        );
    }

    /// The consistency proof folded from perfect subtrees is the one computed from the
    /// leaves, for every pair of sizes up to 70 (every shape of both trees' right edges).
    #[test]
    fn consistency_from_subtrees_is_the_proof_from_the_leaves() {
        let leaves: Vec<Hash> = (0u32..70)
            .map(|i| merkle::leaf_hash(&i.to_be_bytes()))
            .collect();
        let mut hash_of = |(h, k): Subtree| {
            let lo = (k << h) as usize;
            merkle::root_of_leaf_hashes(&leaves[lo..lo + (1usize << h)])
        };
        for n in 1..=70u64 {
            for m in 1..n {
                let want = merkle::consistency_proof(&leaves[..n as usize], m as usize).unwrap();
                assert_eq!(consistency_with(m, n, &mut hash_of), want, "{m} -> {n}");
            }
        }
    }
}
