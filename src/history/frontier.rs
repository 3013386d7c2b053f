//! The compact range of an append-only RFC 9162 Merkle tree: the roots of the perfect
//! subtrees that `size` leaves decompose into (one per set bit of `size`, largest first).
//! It is all a sealer needs to extend the tree and compute the next root, so a seal never
//! re-reads the leaves of the seals before it.

use sha2::{Digest, Sha256};

use crate::history::merkle::{self, Hash};

/// The right edge of a tree of `size` leaves.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Frontier {
    size: u64,
    /// Subtree roots, leftmost (largest) first.
    hashes: Vec<Hash>,
}

impl Frontier {
    /// The empty tree.
    pub fn new() -> Self {
        Self::default()
    }

    /// The frontier of a tree over these leaf hashes.
    pub fn of_leaves(leaves: &[Hash]) -> Self {
        let mut f = Self::new();
        for l in leaves {
            f.push(*l);
        }
        f
    }

    /// Leaves in the tree.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Append one leaf hash: merge equal-sized subtrees at the right edge, as adding 1 to
    /// a binary counter carries.
    pub fn push(&mut self, leaf: Hash) {
        let mut h = leaf;
        let mut n = self.size;
        while n & 1 == 1 {
            let left = self.hashes.pop().unwrap_or_default();
            h = merkle::node_hash(&left, &h);
            n >>= 1;
        }
        self.hashes.push(h);
        self.size += 1;
    }

    /// The tree's root (RFC 9162 MTH); sha256 of nothing for the empty tree.
    pub fn root(&self) -> Hash {
        let mut it = self.hashes.iter().rev();
        let Some(last) = it.next() else {
            return Sha256::digest([]).into();
        };
        it.fold(*last, |right, left| merkle::node_hash(left, &right))
    }

    /// As stored in a seal: hex, largest subtree first.
    pub fn to_hex(&self) -> Vec<String> {
        self.hashes.iter().map(hex::encode).collect()
    }

    /// Read a stored frontier; `None` unless there is exactly one valid hash per set bit
    /// of `size`.
    pub fn from_hex(size: u64, hashes: &[String]) -> Option<Self> {
        if hashes.len() != size.count_ones() as usize {
            return None;
        }
        let hashes = hashes
            .iter()
            .map(|h| merkle::parse_hash(h))
            .collect::<Option<Vec<_>>>()?;
        Some(Self { size, hashes })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hashes(n: u64) -> Vec<Hash> {
        (0..n)
            .map(|i| merkle::leaf_hash(&i.to_be_bytes()))
            .collect()
    }

    #[test]
    fn the_frontier_gives_the_rfc_root_at_every_size() {
        let h = hashes(600);
        let mut f = Frontier::new();
        assert_eq!(f.root(), merkle::root_of_leaf_hashes(&[]));
        for n in 1..=h.len() {
            f.push(h[n - 1]);
            assert_eq!(f.root(), merkle::root_of_leaf_hashes(&h[..n]), "size {n}");
            assert_eq!(Frontier::from_hex(n as u64, &f.to_hex()).unwrap(), f);
        }
        assert!(Frontier::from_hex(599, &f.to_hex()).is_none());
        assert_eq!(Frontier::of_leaves(&h), f);
    }
}
