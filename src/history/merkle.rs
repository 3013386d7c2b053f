//! RFC 9162 (Certificate Transparency v2) Merkle tree hashes and inclusion proofs.
//!
//! Leaves are the sha256 digests of commit pointers, in the order the seals added them.
//! Domain separation as in the RFC: a leaf hashes `0x00 || data`, an inner node
//! `0x01 || left || right`, so a leaf can never be passed off as a node. The empty tree's
//! hash is sha256 of nothing.

use sha2::{Digest, Sha256};

/// A 32-byte hash.
pub type Hash = [u8; 32];

/// `sha256(0x00 || data)`.
pub fn leaf_hash(data: &[u8]) -> Hash {
    let mut h = Sha256::new();
    h.update([0u8]);
    h.update(data);
    h.finalize().into()
}

/// `sha256(0x01 || left || right)`.
pub fn node_hash(left: &Hash, right: &Hash) -> Hash {
    let mut h = Sha256::new();
    h.update([1u8]);
    h.update(left);
    h.update(right);
    h.finalize().into()
}

/// Largest power of two strictly below `n` (n >= 2).
fn split(n: usize) -> usize {
    let mut k = 1;
    while k * 2 < n {
        k *= 2;
    }
    k
}

/// MTH over already-hashed leaves (RFC 9162 §2.1.1).
pub fn root_of_leaf_hashes(leaves: &[Hash]) -> Hash {
    match leaves.len() {
        0 => Sha256::digest([]).into(),
        1 => leaves[0],
        n => {
            let k = split(n);
            node_hash(
                &root_of_leaf_hashes(&leaves[..k]),
                &root_of_leaf_hashes(&leaves[k..]),
            )
        }
    }
}

/// The audit path of leaf `index` in the tree over `leaves` (RFC 9162 §2.1.3.1), or
/// `None` when the index is outside the tree.
pub fn inclusion_path(leaves: &[Hash], index: usize) -> Option<Vec<Hash>> {
    if index >= leaves.len() {
        return None;
    }
    let mut path = Vec::new();
    build_path(leaves, index, &mut path);
    Some(path)
}

fn build_path(leaves: &[Hash], m: usize, path: &mut Vec<Hash>) {
    let n = leaves.len();
    if n <= 1 {
        return;
    }
    let k = split(n);
    if m < k {
        build_path(&leaves[..k], m, path);
        path.push(root_of_leaf_hashes(&leaves[k..]));
    } else {
        build_path(&leaves[k..], m - k, path);
        path.push(root_of_leaf_hashes(&leaves[..k]));
    }
}

/// Recompute the root from a leaf hash and its audit path (RFC 9162 §2.1.3.2); `None`
/// when the path does not fit a tree of `tree_size` leaves.
pub fn root_from_path(leaf: &Hash, index: u64, tree_size: u64, path: &[Hash]) -> Option<Hash> {
    if index >= tree_size {
        return None;
    }
    let (mut fnode, mut snode) = (index, tree_size - 1);
    let mut r = *leaf;
    for p in path {
        if snode == 0 {
            return None;
        }
        if fnode & 1 == 1 || fnode == snode {
            r = node_hash(p, &r);
            while fnode & 1 == 0 && fnode != 0 {
                fnode >>= 1;
                snode >>= 1;
            }
        } else {
            r = node_hash(&r, p);
        }
        fnode >>= 1;
        snode >>= 1;
    }
    (snode == 0).then_some(r)
}

/// Parse a lower-case or upper-case hex sha256.
pub fn parse_hash(s: &str) -> Option<Hash> {
    let v = hex::decode(s.trim()).ok()?;
    v.try_into().ok()
}
