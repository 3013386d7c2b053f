//! RFC 9162 Merkle trees: known roots, and every inclusion proof of small trees.

use lineage_store::audit::merkle::{
    inclusion_path, leaf_hash, root_from_path, root_of_leaf_hashes, Hash,
};

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
