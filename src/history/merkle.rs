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

/// The consistency proof from the tree of the first `m` of `leaves` to the tree of all of
/// them (RFC 9162 §2.1.4.1), or `None` unless `0 < m <= leaves.len()`.
pub fn consistency_proof(leaves: &[Hash], m: usize) -> Option<Vec<Hash>> {
    if m == 0 || m > leaves.len() {
        return None;
    }
    let mut proof = Vec::new();
    subproof(m, leaves, true, &mut proof);
    Some(proof)
}

fn subproof(m: usize, leaves: &[Hash], whole: bool, proof: &mut Vec<Hash>) {
    let n = leaves.len();
    if m == n {
        if !whole {
            proof.push(root_of_leaf_hashes(leaves));
        }
        return;
    }
    let k = split(n);
    if m <= k {
        subproof(m, &leaves[..k], whole, proof);
        proof.push(root_of_leaf_hashes(&leaves[k..]));
    } else {
        subproof(m - k, &leaves[k..], false, proof);
        proof.push(root_of_leaf_hashes(&leaves[..k]));
    }
}

/// Whether `proof` shows the tree of `n` leaves with root `new` extends the tree of `m`
/// leaves with root `old` (RFC 9162 §2.1.4.2).
pub fn verify_consistency(m: u64, n: u64, old: &Hash, new: &Hash, proof: &[Hash]) -> bool {
    if m == 0 || m > n {
        return false;
    }
    if m == n {
        return proof.is_empty() && old == new;
    }
    let mut path: Vec<Hash> = proof.to_vec();
    if m.is_power_of_two() {
        path.insert(0, *old);
    }
    let Some((first, rest)) = path.split_first() else {
        return false;
    };
    let (mut fnode, mut snode) = (m - 1, n - 1);
    while fnode & 1 == 1 {
        fnode >>= 1;
        snode >>= 1;
    }
    let (mut fr, mut sr) = (*first, *first);
    for c in rest {
        if snode == 0 {
            return false;
        }
        if fnode & 1 == 1 || fnode == snode {
            fr = node_hash(c, &fr);
            sr = node_hash(c, &sr);
            while fnode & 1 == 0 && fnode != 0 {
                fnode >>= 1;
                snode >>= 1;
            }
        } else {
            sr = node_hash(&sr, c);
        }
        fnode >>= 1;
        snode >>= 1;
    }
    snode == 0 && fr == *old && sr == *new
}

/// Parse a lower-case or upper-case hex sha256.
pub fn parse_hash(s: &str) -> Option<Hash> {
    let v = hex::decode(s.trim()).ok()?;
    v.try_into().ok()
}

#[cfg(test)]
mod tests {
    //! RFC 9162 Merkle trees: the Certificate Transparency reference vectors (RFC 6962's
    //! reference implementation), and every inclusion proof of small trees.

    use super::*;

    /// The leaf inputs of the Certificate Transparency reference tests.
    fn ct_leaves() -> Vec<Hash> {
        let inputs: [&[u8]; 8] = [
            b"",
            b"\x00",
            b"\x10",
            b"\x20\x21",
            b"\x30\x31",
            b"\x40\x41\x42\x43",
            b"\x50\x51\x52\x53\x54\x55\x56\x57",
            b"\x60\x61\x62\x63\x64\x65\x66\x67\x68\x69\x6a\x6b\x6c\x6d\x6e\x6f",
        ];
        inputs.iter().map(|d| leaf_hash(d)).collect()
    }

    #[test]
    fn roots_match_the_certificate_transparency_reference_vectors() {
        let want = [
            "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
            "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
            "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
            "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
            "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
            "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
            "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
        ];
        let leaves = ct_leaves();
        for (n, w) in want.iter().enumerate() {
            assert_eq!(
                hex::encode(root_of_leaf_hashes(&leaves[..=n])),
                *w,
                "n={}",
                n + 1
            );
        }
        assert_eq!(
            hex::encode(root_of_leaf_hashes(&[])),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    #[test]
    fn every_consistency_proof_of_trees_up_to_40_leaves_verifies_and_only_there() {
        let leaves: Vec<Hash> = (0u32..40).map(|i| leaf_hash(&i.to_be_bytes())).collect();
        for n in 1..=leaves.len() {
            let new = root_of_leaf_hashes(&leaves[..n]);
            for m in 1..=n {
                let old = root_of_leaf_hashes(&leaves[..m]);
                let p = consistency_proof(&leaves[..n], m).unwrap();
                let (m64, n64) = (m as u64, n as u64);
                assert!(verify_consistency(m64, n64, &old, &new, &p), "{m} {n}");
                let other = leaf_hash(b"other");
                assert!(!verify_consistency(m64, n64, &other, &new, &p));
                assert!(!verify_consistency(m64, n64, &old, &other, &p));
                if let Some(first) = p.first() {
                    let mut bad = p.clone();
                    bad[0] = node_hash(first, first);
                    assert!(!verify_consistency(m64, n64, &old, &new, &bad));
                }
            }
            assert!(consistency_proof(&leaves[..n], 0).is_none());
            assert!(consistency_proof(&leaves[..n], n + 1).is_none());
        }
    }

    #[test]
    fn every_inclusion_proof_of_trees_up_to_40_leaves_verifies_and_only_there() {
        let leaves: Vec<Hash> = (0u32..40).map(|i| leaf_hash(&i.to_be_bytes())).collect();
        for n in 1..=leaves.len() {
            let tree = &leaves[..n];
            let root = root_of_leaf_hashes(tree);
            for m in 0..n {
                let path = inclusion_path(tree, m).unwrap();
                let (m64, n64) = (m as u64, n as u64);
                assert_eq!(root_from_path(&tree[m], m64, n64, &path), Some(root));
                // Wrong leaf, wrong index or an edited path: no longer the root. (The path alone
                // does not pin the tree size, e.g. leaf 0 of 3 and of 4; the seal records it.)
                let other = leaf_hash(b"other");
                assert_ne!(root_from_path(&other, m64, n64, &path), Some(root));
                if n > 1 {
                    let wrong = (m + 1) % n;
                    assert_ne!(
                        root_from_path(&tree[m], wrong as u64, n64, &path),
                        Some(root)
                    );
                    let mut bad = path.clone();
                    bad[0][0] ^= 1;
                    assert_ne!(root_from_path(&tree[m], m64, n64, &bad), Some(root));
                }
            }
            assert!(inclusion_path(tree, n).is_none());
            assert_eq!(root_from_path(&tree[0], n as u64, n as u64, &[]), None);
        }
    }
}
