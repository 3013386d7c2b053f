//! The tree in the C2SP tlog-tiles layout (issue 36 item 2): a tlog client nobody here wrote
//! (`tlog_tiles`, a port of Go's `sumdb/tlog`), given only the store's `_lineage/tlog/`
//! prefix and a checkpoint, proves and checks inclusion of random leaves and consistency
//! between random seal pairs; entry bundles hold the leaves themselves. A changed tile or
//! entry is refused by it and named by `verify`, as is a missing one; a store without them
//! gains them on its next seal.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use ed25519_dalek::SigningKey;
use lineage_store::internal::keys;
use lineage_store::{
    keygen, read_signing_key, seal_with, AtomicPublisher, MemoryPublisher, ProblemKind,
    SealOptions, SystemClock,
};
use signed_note::{Note, StandardVerifier, VerifierList};
use tlog_tiles::{
    check_record, check_tree, prove_record, prove_tree, record_hash, Checkpoint, Hash,
    TileHashReader, TileReader,
};

use crate::support::audit::{append, of_kind, verify_later};

/// A seeded splitmix64: random leaves and seal pairs, the same every run.
pub(super) struct Rng(pub(super) u64);

impl Rng {
    pub(super) fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) % n
    }
    pub(super) fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below((hi - lo) as u64) as usize
    }
}

/// A tlog client's view of the store: every object under the prefix, read once.
pub(super) struct Prefix(HashMap<String, Vec<u8>>);

impl Prefix {
    pub(super) async fn read(mem: &MemoryPublisher) -> Self {
        let mut all = HashMap::new();
        for o in mem.list(keys::TLOG_PREFIX).await.unwrap() {
            let b = mem.get(&o.key).await.unwrap().unwrap();
            let rel = o.key.strip_prefix(keys::TLOG_PREFIX).unwrap().to_string();
            all.insert(rel, b.to_vec());
        }
        Prefix(all)
    }

    /// A tile's C2SP path: the library's Go-style `tile/<H>/<L>/<N>` without the height.
    fn path(t: &tlog_tiles::Tile) -> String {
        t.path().replacen("tile/8/", "tile/", 1)
    }

    /// The leaf at `i` from its entry bundle, at tree size `size`.
    pub(super) fn entry(&self, i: u64, size: u64) -> Vec<u8> {
        let n = i / 256;
        let width = (size - n * 256).min(256);
        let t = tlog_tiles::Tile::new(8, 0, n, width as u32, false);
        let path = Self::path(&t).replacen("tile/0/", "tile/entries/", 1);
        let b = &self.0[&path];
        let at = (i % 256) as usize * 34;
        assert_eq!(&b[at..at + 2], &[0, 32], "{path}");
        b[at + 2..at + 34].to_vec()
    }
}

impl TileReader for Prefix {
    fn height(&self) -> u8 {
        8
    }
    fn read_tiles(&self, tiles: &[tlog_tiles::Tile]) -> Result<Vec<Vec<u8>>, tlog_tiles::Error> {
        tiles
            .iter()
            .map(|t| {
                self.0
                    .get(&Self::path(t))
                    .cloned()
                    .ok_or(tlog_tiles::Error::InvalidTile)
            })
            .collect()
    }
    fn save_tiles(&self, _: &[tlog_tiles::Tile], _: &[Vec<u8>]) {}
}

/// `seals` signed seals of 40–90 one-row commits each; returns the store and the
/// checkpoints (size, root), each checked with the vkey by `signed_note`.
async fn store(seals: u64) -> (Arc<MemoryPublisher>, Vec<(u64, Hash)>, SigningKey) {
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("k");
    keygen(&prefix).unwrap();
    let key = read_signing_key(&prefix.with_extension("key")).unwrap();
    let mem = Arc::new(MemoryPublisher::new());
    let mut rng = Rng(36);
    let mut vkey = String::new();
    for seed in 1..=seals {
        append(mem.clone(), rng.range(40, 90), 1, seed).await;
        let opts = SealOptions::default();
        let s = seal_with(mem.as_ref(), &SystemClock, Some(&key), &opts).await;
        vkey = s.unwrap().vkey.unwrap();
    }
    let v = VerifierList::new(vec![Box::new(StandardVerifier::new(&vkey).unwrap())]);
    let mut heads = Vec::new();
    for seq in 1..=seals {
        let b = mem.get(&keys::checkpoint_key(seq)).await.unwrap().unwrap();
        let note = Note::from_bytes(&b).unwrap();
        note.verify(&v).unwrap();
        let c = Checkpoint::from_bytes(note.text()).unwrap();
        heads.push((c.size(), *c.hash()));
    }
    (mem, heads, key)
}

#[tokio::test]
async fn a_tlog_client_proves_inclusion_and_consistency_from_the_prefix_alone() {
    let (mem, heads, _) = store(21).await;
    let p = Prefix::read(&mem).await;
    let (size, root) = *heads.last().unwrap();
    assert!(size > 512, "{size} leaves: more than two full tiles");
    let mut rng = Rng(7);
    for _ in 0..40 {
        let (t, th) = heads[rng.range(0, heads.len())];
        let i = rng.below(t);
        let r = TileHashReader::new(t, th, &p);
        let proof = prove_record(t, i, &r).unwrap();
        let leaf = record_hash(&p.entry(i, t));
        check_record(&proof, t, th, i, leaf).unwrap();
        // Another leaf at that place does not verify.
        assert!(check_record(&proof, t, th, i, record_hash(b"other")).is_err());
    }
    for _ in 0..30 {
        let a = rng.range(0, heads.len());
        let b = rng.range(a, heads.len());
        let ((n, nh), (t, th)) = (heads[a], heads[b]);
        let r = TileHashReader::new(t, th, &p);
        let proof = prove_tree(t, n, &r).unwrap();
        check_tree(&proof, t, th, n, nh).unwrap();
        if n < t {
            assert!(check_tree(&proof, t, th, n, root_other(nh)).is_err());
        }
    }
    // The newest tree's hash from its tiles alone.
    let r = TileHashReader::new(size, root, &p);
    assert_eq!(tlog_tiles::tree_hash(size, &r).unwrap(), root);
    assert!(verify_later(mem.as_ref()).await.is_clean());
}

pub(super) fn root_other(mut h: Hash) -> Hash {
    h.0[0] ^= 1;
    h
}

#[tokio::test]
async fn a_changed_tile_or_entry_is_refused_by_the_client_and_named_by_verify() {
    let (mem, heads, _) = store(4).await;
    let (size, root) = *heads.last().unwrap();
    let tile = keys::tlog_tile_key(0, 0, 256.min(size));
    let bundle = keys::entry_bundle_key(0, 256.min(size));
    let mut t = mem.get(&tile).await.unwrap().unwrap().to_vec();
    t[40] ^= 1;
    mem.tamper_put(&tile, Bytes::from(t));
    let mut e = mem.get(&bundle).await.unwrap().unwrap().to_vec();
    e[2 + 34 * 3] ^= 1;
    mem.tamper_put(&bundle, Bytes::from(e));
    let p = Prefix::read(&mem).await;
    let r = TileHashReader::new(size, root, &p);
    assert!(
        prove_record(size, 1, &r).is_err(),
        "a changed tile authenticates"
    );
    let ok = TileHashReader::new(size, root, &p);
    let leaf3 = record_hash(&p.entry(3, size));
    let verdict = prove_record(size, 3, &ok).and_then(|pr| check_record(&pr, size, root, 3, leaf3));
    assert!(verdict.is_err(), "a changed entry is included");
    let r = verify_later(mem.as_ref()).await;
    let mut named: Vec<String> = of_kind(&r, ProblemKind::BadTile)
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    named.sort();
    assert_eq!(
        named,
        vec![tile.clone(), bundle.clone()],
        "{:#?}",
        r.problems
    );
    // Missing: named as missing.
    assert!(mem.tamper_remove(&bundle));
    let r = verify_later(mem.as_ref()).await;
    let b = of_kind(&r, ProblemKind::BadTile);
    assert!(
        b.iter()
            .any(|(k, why)| *k == bundle && why.starts_with("missing")),
        "{b:#?}"
    );
}

#[tokio::test]
async fn a_store_without_the_c2sp_tree_gains_it_on_its_next_seal() {
    let (mem, heads, key) = store(3).await;
    let before: Vec<String> = mem
        .list(keys::TLOG_TILES_PREFIX)
        .await
        .unwrap()
        .into_iter()
        .map(|o| o.key)
        .collect();
    assert!(!before.is_empty());
    for k in &before {
        assert!(mem.tamper_remove(k));
    }
    // (As a store sealed by earlier versions: its checkpoints say it should have them.)
    let r = verify_later(mem.as_ref()).await;
    assert!(
        !of_kind(&r, ProblemKind::BadTile).is_empty(),
        "{:#?}",
        r.problems
    );
    append(mem.clone(), 5, 1, 99).await;
    seal_with(
        mem.as_ref(),
        &SystemClock,
        Some(&key),
        &SealOptions::default(),
    )
    .await
    .unwrap();
    for k in &before {
        assert!(mem.get(k).await.unwrap().is_some(), "{k} not written again");
    }
    let r = verify_later(mem.as_ref()).await;
    assert!(r.is_clean(), "{:#?}", r.problems);
    // Every checkpoint, the older ones too, is provable from the prefix again.
    let p = Prefix::read(&mem).await;
    let (n, nh) = heads[0];
    let (t, th) = *heads.last().unwrap();
    let r = TileHashReader::new(t, th, &p);
    check_tree(&prove_tree(t, n, &r).unwrap(), t, th, n, nh).unwrap();
    let r = TileHashReader::new(n, nh, &p);
    let leaf = record_hash(&p.entry(n - 1, n));
    check_record(&prove_record(n, n - 1, &r).unwrap(), n, nh, n - 1, leaf).unwrap();
}
