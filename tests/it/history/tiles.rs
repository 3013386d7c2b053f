//! Hash tiles (the frontier's test is beside it, in src/history/frontier.rs): tiles written as a tree grows in uneven steps give every audit path of every
//! earlier size (a narrower tile is a prefix of a wider one), equal to the path computed
//! from all leaves.

use lineage_store::internal::complete::complete_growth;
use lineage_store::internal::frontier::Frontier;
use lineage_store::internal::keys;
use lineage_store::internal::merkle;
use lineage_store::internal::merkle::Hash;
use lineage_store::internal::tiles::all_levels;
use lineage_store::internal::tiles::inclusion_from_tiles;
use lineage_store::AtomicPublisher;
use lineage_store::MemoryPublisher;

fn leaf(i: u64) -> (String, String) {
    let id = format!("019b76da-a800-7000-8000-{i:012x}");
    (
        keys::pointer_key("run-t", &id),
        hex::encode(merkle::leaf_hash(&i.to_be_bytes())),
    )
}

fn hashes(leaves: &[(String, String)]) -> Vec<Hash> {
    leaves
        .iter()
        .map(|(_, d)| merkle::leaf_hash(&merkle::parse_hash(d).unwrap()))
        .collect()
}

#[tokio::test]
async fn tiles_grown_in_steps_prove_every_size_like_the_full_tree() {
    let mem = MemoryPublisher::new();
    let steps = [1u64, 254, 1, 1, 300, 65_000, 3, 600];
    let total: u64 = steps.iter().sum();
    let leaves: Vec<(String, String)> = (0..total).map(leaf).collect();
    let h = hashes(&leaves);
    let mut size = 0u64;
    let mut sizes = Vec::new();
    for (seq, n) in steps.iter().enumerate() {
        let part = &leaves[size as usize..(size + n) as usize];
        let done = complete_growth(&mem, seq as u64 + 1, size, part)
            .await
            .unwrap();
        assert_eq!(done.locators, *n);
        size += n;
        sizes.push(size);
    }
    // Tiles of the final tree hold exactly the levels computed from all leaves.
    let levels = all_levels(&h);
    assert_eq!(levels.len(), 3, "{total} leaves reach level 2");
    let full0 = mem.get(&keys::tile_key(0, 3, 256)).await.unwrap().unwrap();
    assert_eq!(full0.as_ref(), levels[0][768..1024].concat().as_slice());
    // Every earlier size can still be proven (prefix property), for a spread of leaves.
    let mut f = Frontier::new();
    for &n in &sizes {
        while f.size() < n {
            f.push(h[f.size() as usize]);
        }
        let root = f.root();
        let picks = [0, 1, n / 3, n / 2, n.saturating_sub(2), n - 1];
        for &i in picks.iter().filter(|&&i| i < n) {
            let (leaf_hash, path) = inclusion_from_tiles(&mem, i, n).await.unwrap();
            assert_eq!(leaf_hash, h[i as usize], "leaf {i} of {n}");
            if n < 2_000 {
                let want = merkle::inclusion_path(&h[..n as usize], i as usize).unwrap();
                assert_eq!(path, want, "path of {i} in {n}");
            }
            assert_eq!(
                merkle::root_from_path(&leaf_hash, i, n, &path),
                Some(root),
                "{i} in {n}"
            );
        }
    }
    // A locator per leaf, a head marker per step.
    assert_eq!(
        mem.list(keys::LEAVES_PREFIX).await.unwrap().len() as u64,
        total
    );
    assert_eq!(
        mem.list(keys::HEADS_PREFIX).await.unwrap().len(),
        steps.len()
    );
}
